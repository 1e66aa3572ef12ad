"""A debate streamed as a plan (chat.startStream / appendStream / stopStream): the plan's title
with the running cost, one task per phase of the debate's own plan, each side's strongest point
as a task's output, the judges' verdicts as they arrive. Pure functions over values.

Task text is escaped like every mrkdwn text (a model that writes `<!channel>` pings nobody) and
bounded: a task's details and output are short by Slack's rules (`TASK_TEXT_MAX`), the transcript
keeps the whole of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from slack_sdk.models.messages.chunk import MarkdownTextChunk, PlanUpdateChunk, TaskUpdateChunk

from bot.service.progress import PhaseState, PhaseView, Progress
from bot.service.results import is_incomplete
from bot.slack.mrkdwn import escape, truncate
from bot.slack.views.common import REHEARSAL_NOTE, STATUS_WORDS, side_name, usd
from storage.records import DebateRecord, DebateStatus

TaskStatus = Literal["pending", "in_progress", "complete", "error"]
#: A task's details and output: Slack shows a line or two, so each is kept under 256 characters.
TASK_TEXT_MAX = 256
TITLE_MAX = 150
#: The judges named in a judging task's output, at most.
JUDGES_SHOWN = 8

STATES: dict[PhaseState, TaskStatus] = {
    PhaseState.PENDING: "pending", PhaseState.RUNNING: "in_progress",
    PhaseState.DONE: "complete", PhaseState.PARTIAL: "error", PhaseState.FAILED: "error"}
WHY_WORDS = {"refused": "refused by the model", "degraded": "degraded",
             "filtered": "withheld by the content filter"}


@dataclass(slots=True)
class PhaseNotes:
    """What a phase's task shows beyond its state: the sides' strongest points, why steps
    gave nothing, the judges' calls as they arrive."""

    highlights: dict[str, str] = field(default_factory=dict)
    why: list[str] = field(default_factory=list)
    judges: list[tuple[str, str | None]] = field(default_factory=list)


def task_id(phase: str) -> str:
    """A stable task id for a phase name ("cross-examination 2" -> "phase-cross-examination-2")."""
    return "phase-" + (re.sub(r"[^a-z0-9]+", "-", phase.lower()).strip("-") or "unnamed")


def why_line(how: str, key: str, reason: str) -> str:
    """"refused by the model: structured/opening/con (I can't help with that)"."""
    said = f" ({' '.join(reason.split())})" if reason.strip() else ""
    return f"{WHY_WORDS.get(how, how)}: {key}{said}"


def _bounded(text: str) -> str:
    return truncate(escape(" ".join(text.split())), TASK_TEXT_MAX)


def _details(view: PhaseView, notes: PhaseNotes, judging: bool, planned: int) -> str | None:
    if view.state in (PhaseState.PARTIAL, PhaseState.FAILED):
        why = "; ".join(notes.why) if notes.why else view.detail
        return _bounded(f"{view.detail}: {why}" if notes.why and view.detail else why)
    if judging and notes.judges:
        of = f" of {planned}" if planned else ""
        return f"{len(notes.judges)}{of} judge(s) scored"
    return None


def _output(notes: PhaseNotes, judging: bool) -> str | None:
    if judging and notes.judges:
        calls = [f"{escape(name)} → {side_name(winner) if winner else 'no call'}"
                 for name, winner in notes.judges[:JUDGES_SHOWN]]
        return truncate("; ".join(calls), TASK_TEXT_MAX)
    said = [f"{side_name(side)}: {' '.join(text.split())}"
            for side, text in _ordered(notes.highlights) if text.strip()]
    if not said:
        return None
    share = max(40, TASK_TEXT_MAX // len(said) - 3)
    return truncate(" · ".join(truncate(escape(s), share) for s in said), TASK_TEXT_MAX)


def _ordered(highlights: Mapping[str, str]) -> list[tuple[str, str]]:
    known = [s for s in ("pro", "con") if s in highlights]
    return [(s, highlights[s]) for s in known + [s for s in highlights if s not in known]]


def task_chunk(view: PhaseView, notes: PhaseNotes | None, *, judging: bool,
               planned: int = 0) -> dict[str, Any]:
    """One phase as a task_update chunk."""
    notes = notes or PhaseNotes()
    title = truncate(escape(view.name[:1].upper() + view.name[1:]), TITLE_MAX) or "Phase"
    if judging:
        title = f"{title} (the judges)" if "judg" not in view.name.lower() else title
    chunk = TaskUpdateChunk(id=task_id(view.name), title=title, status=STATES[view.state],
                            details=_details(view, notes, judging, planned),
                            output=_output(notes, judging) if view.state is not
                            PhaseState.PENDING else None)
    return dict(chunk.to_dict())


def task_chunks(progress: Progress, notes: Mapping[str, PhaseNotes],
                planned: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Every phase of the plan (then any other phase the debate went through) as a task."""
    return [task_chunk(view, notes.get(view.name), judging=view.name in progress.judging,
                       planned=(planned or {}).get(view.name, 0))
            for view in progress.phases()]


STATUS_TITLES = {DebateStatus.QUEUED: "Debate queued", DebateStatus.DEBATING: "Debating",
                 DebateStatus.JUDGING: "The judges are scoring"}


def plan_title(progress: Progress, *, rehearsal: bool, record: DebateRecord | None = None
               ) -> str:
    """"Debating · $0.0042 so far"; at the end, the record's own status and cost (and that the
    result is incomplete, when it is)."""
    prefix = "[Rehearsal] " if rehearsal else ""
    if record is not None:
        emoji, word = STATUS_WORDS.get(record.status, ("", escape(str(record.status))))
        partial = " (incomplete)" if record.result and is_incomplete(record.result) else ""
        cost = record.cost_usd or progress.cost_usd
        return f"{prefix}{emoji} Debate {word.lower()}{partial} · cost {usd(cost)}".strip()
    words = STATUS_TITLES.get(progress.status or DebateStatus.QUEUED, "Debating")
    return f"{prefix}{words} · {usd(progress.cost_usd)} so far"


def plan_chunk(title: str) -> dict[str, Any]:
    return dict(PlanUpdateChunk(title=truncate(title, TITLE_MAX)).to_dict())


def text_chunk(text: str) -> dict[str, Any]:
    return dict(MarkdownTextChunk(text=text).to_dict())


CONTINUED = ("⚠ This plan stopped updating: the debate continued below as a status message, "
             "with a reply per phase and the result.")


def opening_text(*, rehearsal: bool) -> str:
    """The stream's first words: what it is, and the rehearsal label when it is one."""
    if rehearsal:
        return f"🧪 **{REHEARSAL_NOTE}.** Nothing here came from a real model.\n"
    return ""


def ending_text(record: DebateRecord, *, with_result: bool) -> str:
    """What the stream says as it stops when no result blocks follow (a failed debate), or a
    one-line pointer to the result below."""
    if with_result:
        return "\nThe result is below."
    reason = f": {truncate(escape(' '.join(record.error.split())), 600)}" if record.error else ""
    return f"\n⚠ The debate ended without a result ({record.status.value}){reason}"


NOT_RUN = "not run: the debate stopped first"
NOT_NEEDED = "not needed"


def ended(tasks: Sequence[dict[str, Any]], record: DebateRecord) -> list[dict[str, Any]]:
    """The tasks as the finished debate leaves them: none stays pending or in progress. A phase
    the plan allowed for but the debate did not need (a critique that converged early) is
    complete; one a failed or cut-short debate never reached is an error, saying so."""
    stopped = record.status in (DebateStatus.FAILED, DebateStatus.TIMED_OUT) or bool(
        record.result and is_incomplete(record.result))
    out = []
    for task in tasks:
        if task.get("status") in ("pending", "in_progress"):
            task = {**task, "status": "error" if stopped else "complete",
                    "details": NOT_RUN if stopped else NOT_NEEDED}
        out.append(task)
    return out


def changed(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """The chunks of `after` that differ from what `before` showed for the same task id."""
    shown = {c.get("id"): c for c in before}
    return [c for c in after if shown.get(c.get("id")) != c]


__all__ = [
    "TASK_TEXT_MAX",
    "PhaseNotes",
    "changed",
    "ended",
    "ending_text",
    "opening_text",
    "plan_chunk",
    "plan_title",
    "task_chunk",
    "task_chunks",
    "task_id",
    "text_chunk",
    "why_line",
]
