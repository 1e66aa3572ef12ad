"""The fake Slack's links, Work Objects and feedback buttons: `chat.unfurl` (with Work Object
`metadata`), `entity.presentDetails`, and the payloads a person's actions send the app
(`link_shared`, `entity_details_requested`, a `feedback_buttons` press), built from what the
workspace holds, as Slack builds them.

The documented rules are enforced: `chat.unfurl` takes `channel` and `ts` together or
`unfurl_id` and `source` together, needs `unfurls` or `metadata`, and unfurls only URLs that
were shared in that message (`cannot_unfurl_url`); malformed Work Object metadata is accepted
with a `warning` (`invalid_metadata_format`), as Slack does, and recorded in `warnings`.
`entity.presentDetails` needs a trigger id Slack issued (`invalid_trigger_id`) for the same
entity (`entity_metadata_does_not_match_trigger`) and `metadata` or `error`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from slack_sdk.models.metadata import CustomFieldType, EntityType

from tests.fakes.slack_requests import Args, Reply, err, ok


class SlackEntities:
    """Link sharing, unfurls, flexpanes and feedback presses; mixed into FakeSlack."""

    team_id: str
    warnings: list[str]
    _messages: dict[str, dict[str, dict[str, Any]]]
    add_message: Callable[..., str]

    def init_entities(self) -> None:
        self.unfurls: list[dict[str, Any]] = []      # each accepted chat.unfurl's arguments
        self.flexpanes: list[dict[str, Any]] = []    # each accepted entity.presentDetails'
        self._shared: dict[tuple[str, str], list[str]] = {}   # (channel, ts) -> links
        self._composing: dict[str, list[str]] = {}            # unfurl_id -> links
        self._entity_triggers: dict[str, str] = {}            # trigger id -> entity id
        self._serial = itertools.count(1)

    def entity_handlers(self) -> dict[str, Callable[[Args], Reply]]:
        return {"chat.unfurl": self._unfurl, "entity.presentDetails": self._present_details}

    # --- what people do ---

    def share_link(self, channel: str, *urls: str, user: str = "UHUMAN01") -> dict[str, Any]:
        """A person posts `urls` in one message in `channel`: the message is stored and the
        `link_shared` event Slack sends the app is returned."""
        ts = self.add_message(channel, "see " + " ".join(f"<{u}>" for u in urls), user=user)
        self._shared[(channel, ts)] = list(urls)
        unfurl_id = f"C{next(self._serial):04d}-{ts}"
        self._composing[unfurl_id] = list(urls)
        return {"type": "link_shared", "channel": channel, "is_bot_user_member": True,
                "user": user, "message_ts": ts, "unfurl_id": unfurl_id,
                "source": "conversations_history", "event_ts": ts,
                "links": [{"domain": urlsplit(u).hostname or "", "url": u} for u in urls]}

    def open_entity(self, entity: dict[str, Any], *, user: str, channel: str = "",
                    message_ts: str = "") -> dict[str, Any]:
        """A person clicks an unfurled entity: the `entity_details_requested` event."""
        trigger = f"{next(self._serial)}.{int(time.time())}.entity"
        ref = dict(entity.get("external_ref") or {})
        self._entity_triggers[trigger] = str(ref.get("id") or "")
        url = str(entity.get("url") or "")
        return {"type": "entity_details_requested", "user": user, "external_ref": ref,
                "entity_url": url, "app_unfurl_url": entity.get("app_unfurl_url") or url,
                "link": {"url": url, "domain": urlsplit(url).hostname or ""},
                "event_ts": f"{time.time():.6f}", "trigger_id": trigger, "user_locale": "en-US",
                "channel": channel, "message_ts": message_ts}

    def feedback_press(self, channel: str, ts: str, rating: str, *,
                       user: str) -> dict[str, Any]:
        """The `block_actions` payload of pressing 👍 ("up") or 👎 ("down") on the message's
        feedback buttons (KeyError when the message has none)."""
        message = self._messages[channel][ts]
        for block in message.get("blocks") or []:
            for element in block.get("elements") or []:
                if block.get("type") == "context_actions" and \
                        element.get("type") == "feedback_buttons":
                    button = element["positive_button" if rating == "up" else "negative_button"]
                    return {"type": "block_actions", "user": {"id": user, "team_id": self.team_id},
                            "trigger_id": f"{next(self._serial)}.feedback",
                            "container": {"type": "message", "channel_id": channel,
                                          "message_ts": ts, "is_ephemeral": False},
                            "channel": {"id": channel}, "message": dict(message),
                            "actions": [{"type": "feedback_buttons",
                                         "action_id": element.get("action_id"),
                                         "block_id": block.get("block_id"),
                                         "value": button["value"], "text": button["text"],
                                         "action_ts": f"{time.time():.6f}"}]}
        raise KeyError(f"no feedback buttons in {channel}/{ts}")

    # --- the methods ---

    def _unfurl(self, args: Args) -> Reply:
        by_message = args.get("channel") or args.get("ts")
        by_composer = args.get("unfurl_id") or args.get("source")
        if by_message and not (args.get("channel") and args.get("ts")):
            return err("invalid_arguments")  # channel and ts must be given together
        if by_composer and not (args.get("unfurl_id") and args.get("source")):
            return err("invalid_arguments")  # unfurl_id and source must be given together
        if bool(by_message) == bool(by_composer):
            return err("invalid_arguments")
        if not args.get("unfurls") and not args.get("metadata"):
            return err("invalid_arguments")  # either unfurls or metadata must be provided
        links = (self._shared.get((str(args["channel"]), str(args["ts"])))
                 if by_message else self._composing.get(str(args["unfurl_id"])))
        if links is None:
            return err("cannot_find_message" if by_message else "cannot_unfurl_message")
        metadata = args.get("metadata")
        entities = metadata.get("entities") if isinstance(metadata, dict) else None
        urls = set(args.get("unfurls") or {}) | {
            str(e.get("app_unfurl_url") or "") for e in entities or [] if isinstance(e, dict)}
        if not urls <= set(links):
            return err("cannot_unfurl_url")
        problem = metadata_problem(metadata, unfurl=True) if metadata is not None else None
        if problem is not None:
            self.warnings.append(f"chat.unfurl: {problem}")
            return ok(warning="invalid_metadata_format",
                      response_metadata={"messages": [problem]})
        self.unfurls.append(dict(args))
        return ok()

    def _present_details(self, args: Args) -> Reply:
        trigger = str(args.get("trigger_id") or "")
        if trigger not in self._entity_triggers:
            return err("invalid_trigger_id")
        metadata, error = args.get("metadata"), args.get("error")
        if metadata is None and error is None:
            return err("invalid_arguments")
        if metadata is not None:
            problem = entity_problem(metadata, unfurl=False)
            if problem is not None:
                return err("invalid_metadata", response_metadata={"messages": [problem]})
            if str((metadata.get("external_ref") or {}).get("id")) != \
                    self._entity_triggers[trigger]:
                return err("entity_metadata_does_not_match_trigger")
        self.flexpanes.append(dict(args))
        return ok()


def metadata_problem(metadata: Any, *, unfurl: bool) -> str | None:
    """Why Slack would drop this Work Object metadata, else None."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get("entities"), list) \
            or not metadata["entities"]:
        return "metadata.entities must be a non-empty list"
    for index, entity in enumerate(metadata["entities"]):
        problem = entity_problem(entity, unfurl=unfurl)
        if problem is not None:
            return f"entities/{index}: {problem}"
    return None


def entity_problem(entity: Any, *, unfurl: bool) -> str | None:
    """The documented required fields of one entity, its type and its custom fields."""
    if not isinstance(entity, dict):
        return "an entity must be an object"
    if entity.get("entity_type") not in EntityType:
        return f"unsupported entity_type {entity.get('entity_type')!r}"
    if not entity.get("url") or not (entity.get("external_ref") or {}).get("id"):
        return "missing required field: url or external_ref.id"
    if unfurl and not entity.get("app_unfurl_url"):
        return "missing required field: app_unfurl_url"
    payload = entity.get("entity_payload") or {}
    if not ((payload.get("attributes") or {}).get("title") or {}).get("text"):
        return "missing required field: entity_payload.attributes.title.text"
    keys = []
    for field in payload.get("custom_fields") or []:
        if not field.get("key") or not field.get("label") or field.get("type") not in \
                CustomFieldType:
            return f"custom field {field!r}: key, label and a known type are required"
        keys.append(field["key"])
    unknown = set(payload.get("display_order") or []) - set(keys) - set(
        payload.get("fields") or {})
    return f"display_order names unknown fields {sorted(unknown)}" if unknown else None


__all__ = ["SlackEntities", "entity_problem", "metadata_problem"]
