"""The fake Slack's AI-app thread methods, as Slack documents them: `assistant.threads.setStatus`,
`assistant.threads.setSuggestedPrompts` and `assistant.threads.setTitle`.

Documented rules enforced (docs.slack.dev/reference/methods/assistant.threads.*):
- setStatus: `channel_id`, `thread_ts` and `status` are required (an empty status clears it);
  at most 10 `loading_messages`. "The status will be automatically cleared when the app sends a
  reply": a new message from the app in the thread clears it here, a `chat.postMessage` or a
  `chat.startStream` (which sends the streamed message; its appends and stop send none, so they
  leave the status as it is). "A two minute timeout applies, which will cause the status to be
  removed if no message has been sent": `status_ttl` (seconds; None, the default, never expires
  it) models that, so `status()` reads "" once a status is older than that.
- setSuggestedPrompts: `channel_id` and `prompts` required; up to four prompts, each with a
  `title` and a `message`; `thread_ts` optional.
- setTitle: `channel_id`, `thread_ts` and `title` required.
A `thread_ts` that names no message in the channel is `invalid_thread_ts`. Every status a thread
went through is kept in order (`statuses`), so tests read the status line's history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.fakes.slack_methods import SlackMethods
from tests.fakes.slack_requests import Args, Reply, err, ok

MAX_PROMPTS = 4
MAX_LOADING_MESSAGES = 10
Thread = tuple[str, str]


class SlackAssistant(SlackMethods):
    """The workspace's AI-app threads: status history, suggested prompts and titles."""

    def __init__(self, **ids: Any) -> None:
        super().__init__(**ids)
        self.statuses: dict[Thread, list[str]] = {}
        self.prompts: dict[Thread, dict[str, Any]] = {}   # thread_ts "" when none was given
        self.titles: dict[Thread, str] = {}
        self.status_ttl: float | None = None
        self._status_set_at: dict[Thread, float] = {}

    def handlers(self) -> dict[str, Callable[[Args], Reply]]:
        return {**super().handlers(),
                "assistant.threads.setStatus": self._set_status,
                "assistant.threads.setSuggestedPrompts": self._set_suggested_prompts,
                "assistant.threads.setTitle": self._set_title}

    # --- as it stands ---

    def status(self, channel: str, thread_ts: str) -> str:
        """The thread's status line now ("" when none shows)."""
        thread = (channel, thread_ts)
        at = self._status_set_at.get(thread)
        if self.status_ttl is not None and at is not None and \
                time.monotonic() - at > self.status_ttl:
            return ""
        return (self.statuses.get(thread) or [""])[-1]

    # --- the methods ---

    def app_replied(self, channel: str, thread_ts: str) -> None:
        thread = (channel, thread_ts)
        if self.status(*thread):
            self.statuses[thread].append("")   # Slack clears the status when the app replies

    def _post_message(self, args: Args) -> Reply:
        reply = super()._post_message(args)
        thread_ts = str(args.get("thread_ts") or "")
        if reply.get("ok") and thread_ts:
            self.app_replied(str(args.get("channel") or ""), thread_ts)
        return reply

    def _thread_problem(self, args: Args, *, thread_required: bool = True) -> Reply | None:
        channel, thread_ts = str(args.get("channel_id") or ""), str(args.get("thread_ts") or "")
        if not channel or (thread_required and not thread_ts):
            return err("invalid_arguments")
        if self._channel_problem(channel) is not None:
            return err("channel_not_found")
        if thread_ts and thread_ts not in self._messages.get(channel, {}):
            return err("invalid_thread_ts")
        return None

    def _set_status(self, args: Args) -> Reply:
        problem = self._thread_problem(args)
        if problem is not None:
            return problem
        if "status" not in args or not isinstance(args["status"], str):
            return err("invalid_arguments")
        loading = args.get("loading_messages")
        if loading is not None and (not isinstance(loading, list)
                                    or len(loading) > MAX_LOADING_MESSAGES):
            return err("invalid_arguments")
        thread = (str(args["channel_id"]), str(args["thread_ts"]))
        history = self.statuses.setdefault(thread, [])
        if not history or self.status(*thread) != args["status"]:
            history.append(args["status"])
        self._status_set_at[thread] = time.monotonic()
        return ok()

    def _set_suggested_prompts(self, args: Args) -> Reply:
        problem = self._thread_problem(args, thread_required=False)
        if problem is not None:
            return problem
        prompts = args.get("prompts")
        if not isinstance(prompts, list) or not 0 < len(prompts) <= MAX_PROMPTS:
            return err("invalid_arguments")
        if not all(isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts):
            return err("invalid_arguments")
        thread = (str(args["channel_id"]), str(args.get("thread_ts") or ""))
        self.prompts[thread] = {"title": args.get("title"), "prompts": prompts}
        return ok()

    def _set_title(self, args: Args) -> Reply:
        problem = self._thread_problem(args)
        if problem is not None:
            return problem
        if not isinstance(args.get("title"), str) or not args["title"]:
            return err("invalid_arguments")
        self.titles[(str(args["channel_id"]), str(args["thread_ts"]))] = args["title"]
        return ok()
