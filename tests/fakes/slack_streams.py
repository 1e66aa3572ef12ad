"""The fake Slack's streamed messages: chat.startStream, chat.appendStream, chat.stopStream, as
Slack documents them (docs.slack.dev/reference/methods/chat.startStream and its siblings).

What is enforced, as documented: `markdown_text` (the argument or a chunk's text) at most 12,000
characters (`msg_too_long`); chunks of the four known types only, a task_update with an id, a
title and one of the four statuses, its details and output short (`invalid_chunks`); a stream
into a channel (not a DM) names `recipient_team_id` and `recipient_user_id`
(`invalid_arguments`); appending to or stopping a stream that was stopped is
`message_not_in_streaming_state`; the stop's blocks pass the same checks as a message's.
Every stream keeps its chunks in order; `render_stream` shows the message as a person sees it.
`streaming_unavailable("unknown_method")` makes the three methods answer that error (a
workspace, or an older Slack, without streaming).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack_requests import Args, Reply, blocks_problem, err, ok
from tests.fakes.slack_state import SlackWorkspace

MARKDOWN_MAX = 12_000
TASK_TEXT_MAX = 256
CHUNK_TYPES = ("markdown_text", "plan_update", "task_update", "blocks")
TASK_STATUSES = ("pending", "in_progress", "complete", "error")
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")
MARKS = {"pending": "○", "in_progress": "◐", "complete": "✓", "error": "✗"}


@dataclass
class Stream:
    """One streamed message: where, for whom, every chunk in order, and how it ended."""

    channel: str
    ts: str
    thread_ts: str
    start_args: Args
    chunks: list[dict[str, Any]] = field(default_factory=list)
    appends: int = 0
    stopped: bool = False
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def tasks(self) -> dict[str, dict[str, Any]]:
        """Each task as it stands: later updates of an id overwrite the fields they carry."""
        out: dict[str, dict[str, Any]] = {}
        for chunk in self.chunks:
            if chunk.get("type") == "task_update":
                out[chunk["id"]] = {**out.get(chunk["id"], {}), **chunk}
        return out

    def history(self, task_id: str) -> list[str]:
        """The statuses a task went through, in order, repeats collapsed."""
        seen: list[str] = []
        for chunk in self.chunks:
            if chunk.get("type") == "task_update" and chunk.get("id") == task_id:
                if not seen or seen[-1] != chunk["status"]:
                    seen.append(chunk["status"])
        return seen

    def titles(self) -> list[str]:
        return [c["title"] for c in self.chunks if c.get("type") == "plan_update"]

    def text(self) -> str:
        return "".join(c.get("text", "") for c in self.chunks if c.get("type") == "markdown_text")


def chunk_problem(chunk: Any) -> str | None:
    """Why Slack would refuse this chunk, else None."""
    if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
        return f"unknown chunk type {chunk.get('type') if isinstance(chunk, dict) else chunk!r}"
    kind = chunk["type"]
    if kind == "markdown_text" and len(str(chunk.get("text") or "")) > MARKDOWN_MAX:
        return f"markdown_text over {MARKDOWN_MAX} characters"
    if kind == "plan_update" and not str(chunk.get("title") or "").strip():
        return "plan_update needs a title"
    if kind == "task_update":
        if not chunk.get("id") or not str(chunk.get("title") or "").strip():
            return "task_update needs an id and a title"
        if chunk.get("status") not in TASK_STATUSES:
            return f"task_update status {chunk.get('status')!r}"
        for key in ("details", "output"):
            if len(str(chunk.get(key) or "")) > TASK_TEXT_MAX:
                return f"task_update {key} over {TASK_TEXT_MAX} characters"
    if kind == "blocks" and blocks_problem(chunk.get("blocks")) is not None:
        return "blocks chunk with invalid blocks"
    return None


class SlackStreams(SlackWorkspace):
    """chat.*Stream on top of the workspace's messages."""

    def init_streams(self) -> None:
        self.streams: dict[str, Stream] = {}
        self._stream_error = ""

    def stream_handlers(self) -> dict[str, Callable[[Args], Reply]]:
        return {"chat.startStream": self._start_stream, "chat.appendStream": self._append_stream,
                "chat.stopStream": self._stop_stream}

    def streaming_unavailable(self, error: str = "unknown_method") -> None:
        """From now on the three streaming methods answer `error` ("" to allow them again)."""
        self._stream_error = error

    def streams_in(self, channel: str, thread_ts: str | None = None) -> list[Stream]:
        return [s for s in self.streams.values()
                if s.channel == channel and (thread_ts is None or s.thread_ts == thread_ts)]

    # --- methods ---

    def _start_stream(self, args: Args) -> Reply:
        channel, thread_ts = str(args.get("channel") or ""), str(args.get("thread_ts") or "")
        bad = self._stream_refusal(channel) or self._chunks_problem(args)
        if bad:
            return bad
        if not thread_ts:
            return err("invalid_arguments",
                       response_metadata={"messages": ["[ERROR] missing required field: "
                                                       "thread_ts"]})
        if not channel.startswith("D"):
            missing = [k for k in ("recipient_team_id", "recipient_user_id") if not args.get(k)]
            if missing:
                return err("invalid_arguments", response_metadata={"messages": [
                    f"[ERROR] {k} is required when streaming to a channel" for k in missing]})
        ts = self._next_ts()
        stream = Stream(channel, ts, thread_ts, dict(args))
        self.streams[ts] = stream
        message = {"type": "message", "channel": channel, "ts": ts, "user": self.bot_user_id,
                   "bot_id": self.bot_id, "thread_ts": thread_ts, "text": "", "blocks": [],
                   "streaming": True}
        parent = self._messages.get(channel, {}).get(thread_ts)
        if parent is not None:
            parent["reply_count"] = parent.get("reply_count", 0) + 1
            parent.setdefault("thread_ts", parent["ts"])
        self._messages.setdefault(channel, {})[ts] = message
        self._take_chunks(stream, args)
        self.app_replied(channel, thread_ts)   # a new message from the app in the thread
        return ok(channel=channel, ts=ts)

    def _append_stream(self, args: Args) -> Reply:
        stream, bad = self._open_stream(args)
        if stream is None or bad:
            return bad or err("message_not_found")
        if not args.get("markdown_text") and not args.get("chunks"):
            return err("no_text")
        stream.appends += 1
        self._take_chunks(stream, args)
        return ok(channel=stream.channel, ts=stream.ts)

    def _stop_stream(self, args: Args) -> Reply:
        stream, bad = self._open_stream(args)
        if stream is None or bad:
            return bad or err("message_not_found")
        blocks = args.get("blocks")
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if blocks:
            problem = blocks_problem(blocks)
            if problem is not None:
                self.invalid_blocks.append(problem[1])
                return err(problem[0], errors=[problem[1]])
        self._take_chunks(stream, args)
        stream.stopped, stream.blocks = True, list(blocks or [])
        message = self._messages[stream.channel][stream.ts]
        message.update(streaming=False, blocks=stream.blocks, text=stream.text())
        return ok(channel=stream.channel, ts=stream.ts,
                  message={"ts": stream.ts, "text": stream.text(), "blocks": stream.blocks})

    # --- helpers ---

    def _stream_refusal(self, channel: str) -> Reply | None:
        if self._stream_error:
            return err(self._stream_error)
        problem = self._channel_problem(channel)
        return err(problem) if problem else None

    def _open_stream(self, args: Args) -> tuple[Stream | None, Reply | None]:
        refused = self._stream_refusal(str(args.get("channel") or ""))
        if refused:
            return None, refused
        stream = self.streams.get(str(args.get("ts") or ""))
        if stream is None or stream.channel != args.get("channel"):
            return None, err("message_not_found")
        if stream.stopped:
            return None, err("message_not_in_streaming_state")
        return stream, self._chunks_problem(args)

    def _chunks_problem(self, args: Args) -> Reply | None:
        if len(str(args.get("markdown_text") or "")) > MARKDOWN_MAX:
            return err("msg_too_long")
        chunks = _chunks_of(args)
        if not isinstance(chunks, list):
            return err("invalid_chunks", errors=["chunks must be a list"])
        for index, chunk in enumerate(chunks):
            problem = chunk_problem(chunk)
            if problem:
                self.invalid_blocks.append(f"chunk {index}: {problem}")
                return err("invalid_chunks", errors=[f"chunk {index}: {problem}"])
        return None

    def _take_chunks(self, stream: Stream, args: Args) -> None:
        if args.get("markdown_text"):
            stream.chunks.append({"type": "markdown_text", "text": str(args["markdown_text"])})
        stream.chunks.extend(_chunks_of(args))
        self._messages[stream.channel][stream.ts]["text"] = stream.text()

    # --- as a person sees it ---

    def render_stream(self, ts: str) -> str:
        """The streamed message as text: its words, the plan (title, each task's mark, title,
        details and output) where it first appeared, then the blocks it ended with."""
        stream = self.streams[ts]
        parts: list[str] = []
        plan_at: int | None = None
        for chunk in stream.chunks:
            if chunk["type"] == "markdown_text":
                parts.append(chunk["text"])
            elif plan_at is None and chunk["type"] in ("plan_update", "task_update"):
                plan_at = len(parts)
                parts.append("")
        if plan_at is not None:
            parts[plan_at] = _plan_text(stream)
        body = "\n".join(p.strip("\n") for p in parts if p.strip())
        blocks = blocks_text(stream.blocks)
        return body + ("\n" + "─" * 40 + "\n" + blocks if blocks else "")


def _chunks_of(args: Args) -> Any:
    chunks = args.get("chunks") or []
    return json.loads(chunks) if isinstance(chunks, str) else chunks


def _plan_text(stream: Stream) -> str:
    titles = stream.titles()
    lines = [f"▣ {titles[-1]}" if titles else "▣ Plan"]
    for task in stream.tasks().values():
        lines.append(f"  {MARKS.get(task['status'], '?')} {task['title']}")
        if task.get("details"):
            lines.append(f"      {task['details']}")
        if task.get("output"):
            lines.append(f"      ↳ {task['output']}")
    return "\n".join(lines)


def blocks_text(blocks: list[dict[str, Any]]) -> str:
    """Blocks as the text a person reads: headers, sections and their fields, context lines,
    buttons in brackets."""
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            lines.append(f"# {block['text']['text']}")
        elif kind == "section":
            if block.get("text"):
                lines.append(block["text"]["text"])
            lines += [f"  {f['text']}".replace("\n", ": ", 1) for f in block.get("fields") or []]
        elif kind == "context":
            lines.append(" · ".join(e.get("text", e.get("alt_text", ""))
                                    for e in block.get("elements") or []))
        elif kind in ("actions", "context_actions"):
            lines.append(" ".join(f"[{_label(e)}]" for e in block.get("elements") or []))
        elif kind == "divider":
            lines.append("─" * 20)
    return _LINK.sub(lambda m: m.group(2), "\n".join(lines))


_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]+)>")


def _label(element: dict[str, Any]) -> str:
    if element.get("type") == "feedback_buttons":   # two icon buttons: their texts
        return "] [".join(str(element.get(k, {}).get("text", {}).get("text", "?"))
                          for k in ("positive_button", "negative_button"))
    text = element.get("text")
    if isinstance(text, dict):
        return str(text.get("text", ""))
    return str(element.get("type", "?"))
