"""The Web API methods the fake Slack answers, each as Slack documents it (the errors word for
word): chat.*, reactions.add, views.*, conversations.info/join/history/replies,
usergroups.users.list, users.info, auth.test. Each takes the decoded arguments and returns the
reply."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.slack_requests import Args, Reply, err, ok, view_problem
from tests.fakes.slack_state import SlackWorkspace


class SlackMethods(SlackWorkspace):
    """The workspace, changed through the Web API."""

    def handlers(self) -> dict[str, Callable[[Args], Reply]]:
        """Each method's name as the client sends it, and its handler."""
        return {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.getPermalink": self._permalink,
            "reactions.add": self._reactions_add,
            "views.open": self._views_open,
            "views.publish": self._views_publish,
            "views.update": self._views_update,
            "conversations.info": self._conversations_info,
            "conversations.history": self._history,
            "conversations.replies": self._replies,
            "conversations.join": self._conversations_join,
            "usergroups.users.list": self._usergroup_users,
            "users.info": self._users_info,
        }

    def _auth_test(self, args: Args) -> Reply:
        org = {"enterprise_id": self.enterprise_id} if self.enterprise_id else {}
        return ok(url="https://fake.slack.com/", team="Fake Workspace", user="dialectic",
                  team_id=self.team_id, user_id=self.bot_user_id, bot_id=self.bot_id,
                  is_enterprise_install=self.enterprise_install, **org)

    def _post_message(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        problem = self._channel_problem(channel)
        if problem:
            return err(problem)
        bad = self._content_problem("chat.postMessage", args)
        if bad:
            return bad
        ts = self._next_ts()
        message: dict[str, Any] = {
            "type": "message", "channel": channel, "ts": ts, "user": self.bot_user_id,
            "bot_id": self.bot_id, "text": args.get("text") or "",
            "blocks": args.get("blocks") or []}
        for key in ("thread_ts", "reply_broadcast", "metadata", "unfurl_links", "unfurl_media"):
            if args.get(key) not in (None, ""):
                message[key] = args[key]
        parent = self._messages.get(channel, {}).get(str(args.get("thread_ts") or ""))
        if parent is not None:
            parent["reply_count"] = parent.get("reply_count", 0) + 1
            parent.setdefault("thread_ts", parent["ts"])
        self._messages.setdefault(channel, {})[ts] = message
        return ok(channel=channel, ts=ts, message=dict(message))

    def _update(self, args: Args) -> Reply:
        message = self._stored(args)
        if message is None:
            return err("message_not_found")
        if "text" not in args and "blocks" not in args and "attachments" not in args:
            return err("no_text")
        bad = self._content_problem("chat.update", {**message, **args})
        if bad:
            return bad
        for key in ("text", "blocks", "attachments", "metadata"):
            if key in args:
                message[key] = args[key]
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return ok(channel=message["channel"], ts=message["ts"], text=message.get("text", ""),
                  message=dict(message))

    def _post_ephemeral(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        problem = self._channel_problem(channel)
        if problem:
            return err(problem)
        if not args.get("user"):
            return err("user_not_found")
        bad = self._content_problem("chat.postEphemeral", args)
        if bad:
            return bad
        ts = self._next_ts()
        self.ephemerals.append({"channel": channel, "user": args["user"], "message_ts": ts,
                                "text": args.get("text") or "", "blocks": args.get("blocks") or [],
                                "thread_ts": args.get("thread_ts")})
        return ok(message_ts=ts)

    def _permalink(self, args: Args) -> Reply:
        message = self._stored(args, "message_ts")
        if message is None:
            return err("message_not_found")
        channel, ts = message["channel"], message["ts"]
        url = f"https://fake.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        if message.get("thread_ts") and message["thread_ts"] != ts:
            url += f"?thread_ts={message['thread_ts']}&cid={channel}"
        return ok(channel=channel, permalink=url)

    def _reactions_add(self, args: Args) -> Reply:
        message = self._stored(args, "timestamp")
        name = str(args.get("name") or "")
        if message is None:
            return err("message_not_found")
        if not name:
            return err("invalid_name")
        reactions = message.setdefault("reactions", [])
        if any(r["name"] == name for r in reactions):
            return err("already_reacted")
        reactions.append({"name": name, "users": [self.bot_user_id], "count": 1})
        return ok()

    def _views_open(self, args: Args) -> Reply:
        if not args.get("trigger_id"):
            return err("invalid_arguments")
        problem = view_problem(args.get("view"))
        if problem:
            return err("invalid_arguments", response_metadata={"messages": [problem]})
        return ok(view=self._store_view(args["view"]))

    def _views_publish(self, args: Args) -> Reply:
        view, user_id = args.get("view"), str(args.get("user_id") or "")
        if not user_id:
            return err("invalid_arguments")
        problem = view_problem(view)
        if problem or not isinstance(view, dict) or view.get("type") != "home":
            return err("invalid_arguments",
                       response_metadata={"messages": [problem or "view type must be home"]})
        previous = self.home_views.get(user_id)
        stored = self._store_view(view, previous["id"] if previous else None)
        self.home_views[user_id] = stored
        return ok(view=stored)

    def _views_update(self, args: Args) -> Reply:
        view_id = str(args.get("view_id") or "")
        if not view_id and args.get("external_id"):
            view_id = next((k for k, v in self.views.items()
                            if v.get("external_id") == args["external_id"]), "")
        current = self.views.get(view_id)
        if current is None:
            return err("not_found")
        if args.get("hash") and args["hash"] != current["hash"]:
            return err("hash_conflict")
        problem = view_problem(args.get("view"))
        if problem:
            return err("invalid_arguments", response_metadata={"messages": [problem]})
        return ok(view=self._store_view(args["view"], view_id))

    def _history(self, args: Args) -> Reply:
        """The channel's newest messages first (thread replies only when broadcast); metadata
        only with include_all_metadata, as Slack does."""
        channel = str(args.get("channel") or "")
        if self._channel_info(channel) is None and channel not in self._messages:
            return err("channel_not_found")
        found = [m for m in self.messages(channel)
                 if not m.get("thread_ts") or m["thread_ts"] == m["ts"]
                 or m.get("reply_broadcast")]
        return ok(messages=self._listed(reversed(found), args), has_more=False)

    def _replies(self, args: Args) -> Reply:
        """A thread: its root, then its replies, oldest first."""
        channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
        root = self.message(channel, ts)
        if root is None:
            return err("thread_not_found")
        return ok(messages=self._listed([root, *self.replies(channel, ts)], args),
                  has_more=False)

    @staticmethod
    def _listed(messages: Any, args: Args) -> list[dict[str, Any]]:
        limit = int(args.get("limit") or 100)
        keep = str(args.get("include_all_metadata")).lower() in ("1", "true")
        out = []
        for message in list(messages)[:limit]:
            if not keep:
                message = {k: v for k, v in message.items() if k != "metadata"}
            out.append(message)
        return out

    def _conversations_info(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        info = self._channel_info(channel)
        if self._channel_errors.get(channel) == "channel_not_found":
            info = None
        return ok(channel=info) if info else err("channel_not_found")

    def _conversations_join(self, args: Args) -> Reply:
        channel = str(args.get("channel") or "")
        info = self._channel_info(channel)
        if info is None:
            return err("channel_not_found")
        if info.get("is_private"):
            return err("method_not_supported_for_channel_type")
        self._not_member.discard(channel)
        return ok(channel={**info, "is_member": True})

    def _usergroup_users(self, args: Args) -> Reply:
        group = str(args.get("usergroup") or "")
        if group not in self._usergroups:
            return err("no_such_subteam")
        return ok(users=list(self._usergroups[group]))

    def _users_info(self, args: Args) -> Reply:
        user_id = str(args.get("user") or "")
        if user_id not in self._users:
            if not (user_id[:1] in ("U", "W") and user_id[1:].isalnum()):
                return err("user_not_found")
            self.add_user(user_id)
        return ok(user=json.loads(json.dumps(self._users[user_id])))
