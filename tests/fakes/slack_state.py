"""The fake Slack's workspace as it stands: channels (and whether the bot is in them), users,
user groups, messages with their threads and reactions, views and Home tabs, ephemerals; the
checks a message's channel and content pass before it is stored."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from tests.fakes.slack_requests import MAX_TEXT, Args, Reply, blocks_problem, err

FIRST_TS_MICROS = 1_700_000_000_000_100


def ts_key(ts: str) -> tuple[int, int]:
    seconds, _, micros = ts.partition(".")
    return int(seconds or 0), int(micros or 0)


class SlackWorkspace:
    """What Slack would show a user: seeded by tests, changed by the Web API methods."""

    def __init__(self, *, team_id: str, bot_user_id: str, bot_id: str) -> None:
        self.team_id, self.bot_user_id, self.bot_id = team_id, bot_user_id, bot_id
        # an Enterprise Grid workspace's organisation, and whether the install is org-wide
        # (what auth.test says of the bot token)
        self.enterprise_id: str | None = None
        self.enterprise_install = False
        self.invalid_blocks: list[str] = []
        self.warnings: list[str] = []
        self.views: dict[str, dict[str, Any]] = {}
        self.home_views: dict[str, dict[str, Any]] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}
        self._channels: dict[str, dict[str, Any]] = {}
        self._not_member: set[str] = set()
        self._channel_errors: dict[str, str] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._usergroups: dict[str, list[str]] = {}
        self._ts = itertools.count()
        self._view_ids = itertools.count(1)

    # --- seeded by tests ---

    def add_channel(self, channel_id: str, name: str | None = None, *, is_private: bool = False,
                    is_member: bool = True) -> None:
        """A channel conversations.info knows; unknown C/G/D ids are made up on the fly."""
        self._channels[channel_id] = {"id": channel_id, "name": name or channel_id.lower(),
                                      "is_channel": not is_private, "is_private": is_private}
        if not is_member:
            self._not_member.add(channel_id)

    def not_in_channel(self, channel_id: str) -> None:
        """The bot is not a member: posting fails with not_in_channel until conversations.join."""
        self._not_member.add(channel_id)

    def invited(self, channel_id: str) -> None:
        """Someone invited the bot: posting there works again."""
        self._not_member.discard(channel_id)

    def channel_error(self, channel_id: str, error: str) -> None:
        """Posting to the channel fails with `error` (e.g. "channel_not_found", "is_archived")."""
        self._channel_errors[channel_id] = error

    def add_user(self, user_id: str, name: str | None = None, **profile: Any) -> None:
        """A user users.info returns (unknown U/W ids get a made-up profile)."""
        flags = {k: profile.pop(k) for k in ("is_admin", "is_owner", "is_primary_owner",
                                             "deleted") if k in profile}
        self._users[user_id] = {"id": user_id, "team_id": profile.pop("team_id", self.team_id),
                                "name": name or user_id.lower(),
                                "real_name": profile.pop("real_name", name or user_id),
                                "is_bot": profile.pop("is_bot", False),
                                "tz": profile.pop("tz", "UTC"), **flags, "profile": profile}

    def set_usergroup(self, group_id: str, members: list[str]) -> None:
        """The members usergroups.users.list returns for `group_id`."""
        self._usergroups[group_id] = list(members)

    def add_message(self, channel: str, text: str, *, user: str = "UHUMAN01",
                    thread_ts: str | None = None) -> str:
        """Seed a message as if a person had posted it; returns its ts."""
        ts = self._next_ts()
        message = {"type": "message", "channel": channel, "ts": ts, "user": user, "text": text,
                   "blocks": []}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self._messages.setdefault(channel, {})[ts] = message
        return ts

    # --- as it stands ---

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """The channel's messages (thread replies included) as they stand now, oldest first."""
        stored = self._messages.get(channel, {})
        return [json.loads(json.dumps(stored[ts])) for ts in sorted(stored, key=ts_key)]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        found = self._messages.get(channel, {}).get(ts)
        return json.loads(json.dumps(found)) if found else None

    def replies(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The replies in one thread (not its root), oldest first."""
        return [m for m in self.messages(channel)
                if m.get("thread_ts") == thread_ts and m["ts"] != thread_ts]

    # --- helpers for the methods ---

    def app_replied(self, channel: str, thread_ts: str) -> None:
        """The app sent a new message into a thread (the AI-app threads clear its status)."""

    def _next_ts(self) -> str:
        micros = FIRST_TS_MICROS + 100 * next(self._ts)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _channel_problem(self, channel: str) -> str | None:
        if not channel:
            return "channel_not_found"
        if channel in self._channel_errors:
            return self._channel_errors[channel]
        return "not_in_channel" if channel in self._not_member else None

    def _content_problem(self, method: str, args: Args) -> Reply | None:
        text, blocks = args.get("text"), args.get("blocks")
        if not text and not blocks and not args.get("attachments"):
            return err("no_text")
        if text and len(str(text)) > MAX_TEXT:
            return err("msg_too_long")
        if blocks is not None:
            problem = blocks_problem(blocks)
            if problem is not None:
                code, detail = problem
                self.invalid_blocks.append(detail)
                return err(code, errors=[detail],
                           response_metadata={"messages": [f"[ERROR] {detail}"]})
        if blocks and not text:
            self.warnings.append(f"{method}: missing_text_or_fallback_or_attachments")
        return None

    def _stored(self, args: Args, ts_key: str = "ts") -> dict[str, Any] | None:
        return self._messages.get(str(args.get("channel") or ""), {}).get(
            str(args.get(ts_key) or ""))

    def _channel_info(self, channel: str) -> dict[str, Any] | None:
        info = self._channels.get(channel)
        if info is None and channel[:1] in ("C", "G", "D") and channel[1:].isalnum():
            info = {"id": channel, "name": channel.lower(), "is_channel": channel[0] == "C",
                    "is_private": channel[0] == "G"}
        if info is None:
            return None
        return {**info, "is_member": channel not in self._not_member,
                "is_archived": self._channel_errors.get(channel) == "is_archived"}

    def _store_view(self, view: dict[str, Any], view_id: str | None = None) -> dict[str, Any]:
        view_id = view_id or f"V{next(self._view_ids):08d}"
        stored = {**view, "id": view_id, "team_id": self.team_id, "app_id": "A0FAKE",
                  "bot_id": self.bot_id, "hash": f"{time.time():.6f}.{view_id}",
                  "state": {"values": {}}, "root_view_id": view_id}
        self.views[view_id] = stored
        return stored
