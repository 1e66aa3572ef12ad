"""Scheduled digests: the one channel message per slot, its thread details, and the
`/debate schedules` listing. Pure functions over the scheduling layer's values.

The digest puts the signals the AI could not settle first ("Focus here"), then the settled ones,
each with its verdict, band, key disagreement and a transcript link; skipped signals, failed
sources and earlier missed slots sit in the tail, which fitting never cuts. Every piece of
signal, model or source text is escaped.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.scheduling.reports import UNSETTLED_STATUSES, DigestReport, ScheduleView, SignalOutcome
from bot.service.results import point_figures
from bot.slack.mrkdwn import channel, date_fmt, escape, link, truncate
from bot.slack.views.common import (
    SECTION_TEXT_MAX,
    Block,
    Message,
    context,
    fit,
    header,
    note,
    rehearsal_banner,
    routing_words,
    section,
    sections,
    usd,
)
from bot.slack.views.debate import band_of, divergence_summary, verdict_words
from bot.slack.views.feedback import feedback_blocks
from engine.domain import DebateResult
from engine.settings import ThresholdSpec
from engine.vocabulary import ROUTED_TO_HUMANS

TAIL_MAX = 2000
TITLE_MAX = 160
ThresholdsOf = Callable[[DebateResult], ThresholdSpec | None]


def key_disagreement(result: DebateResult | None) -> str:
    """The point the judges split on most, escaped, its spread on the 1-10 scale; "" if none."""
    if result is None or not result.divergence.disagreements:
        return ""
    point = result.divergence.disagreements[0]
    spread = point_figures(point).spread_text
    return f"{truncate(escape(point.label or point.item), 200)} ({spread})"


def _signal_line(outcome: SignalOutcome) -> str:
    title = truncate(escape(outcome.title.replace("\n", " ")), TITLE_MAX)
    parts = [f"*{title}*"]
    result = outcome.result
    if result is None:
        parts.append(f"{escape(outcome.status)}: {truncate(escape(outcome.reason), 300)}")
    else:
        parts.append(truncate(verdict_words(result), 240))
        parts.append(band_of(result))
        if result.flagged:
            parts.append("⚠ its material contains text addressed to the AI (a person reviews it)")
        if outcome.status in UNSETTLED_STATUSES or result.routing in ROUTED_TO_HUMANS:
            words = routing_words(result.routing)
            parts.append(escape(outcome.status.replace("_", " ")) + f" ({words})")
        if disagreement := key_disagreement(result):
            parts.append(f"key disagreement: {disagreement}")
    marks = [m for m in (outcome.cached and "cached", outcome.downgraded_from
             and f"downgraded from {escape(outcome.downgraded_from)}") if m]
    if marks:
        parts.append(", ".join(marks))
    if outcome.url:
        parts.append(link(outcome.url, "transcript"))
    return "• " + " · ".join(parts)


def _problem_lines(report: DigestReport) -> list[str]:
    lines = [f"• {truncate(escape(o.title), TITLE_MAX)} — {escape(o.status)}: "
             f"{truncate(escape(o.reason), 300)}" for o in report.not_debated]
    lines += [f"• signal source: {truncate(escape(p), 400)}" for p in report.source_problems]
    lines += [f"• {truncate(escape(p), 300)}" for p in report.earlier_problems]
    return lines


def _tail(report: DigestReport) -> list[Block]:
    tail = []
    problems = _problem_lines(report)
    if problems:
        text = "*Skipped, failed and missed*\n" + "\n".join(problems)
        tail.append(section(truncate(text, TAIL_MAX)))
    debated = sum(1 for o in report.outcomes if o.debated)
    facts = [f"Total cost {usd(report.total_cost)}", f"{debated} debate(s)",
             f"slot {escape(report.slot)}"]
    if debated:
        facts.append("each signal's summary is in the thread")
    tail.append(context([" · ".join(facts)]))
    return tail


def _headline(report: DigestReport) -> str:
    debated = sum(1 for o in report.outcomes if o.debated)
    focus = len(report.focus)
    line = f"*{debated} signal(s) debated* for {date_fmt(report.when)}"
    if focus:
        line += f" · ⚠ *{focus} need(s) a person*"
    elif debated:
        line += " · the judges settled every one"
    if report.source_problems or report.not_debated:
        line += " · some signals were not debated (below)"
    return line


def digest_message(report: DigestReport) -> Message:
    """The one channel message of a digest run."""
    head = [header(f"Digest: {report.schedule_id}")]
    if report.rehearsal:
        head.append(rehearsal_banner())
    head.append(section(_headline(report)))
    body = sections("Focus here", [_signal_line(o) for o in report.focus])
    body += sections("Settled", [_signal_line(o) for o in report.settled])
    if not body:
        body = [context(["No signal was debated in this run."])]
    blocks = fit(head, body, _tail(report), transcript_url=None)
    prefix = "[Rehearsal] " if report.rehearsal else ""
    text = (f"{prefix}Digest {escape(report.schedule_id)}: "
            f"{sum(1 for o in report.outcomes if o.debated)} signal(s), "
            f"{len(report.focus)} to focus on, cost {usd(report.total_cost)}")
    return Message(truncate(text, SECTION_TEXT_MAX), blocks)


def digest_details(report: DigestReport, thresholds: ThresholdsOf | None = None
                   ) -> list[Message]:
    """The thread replies: each debated signal's full summary, focus signals first, each with
    its own feedback buttons (the channel message is an index of one line per signal: a
    reader rates a result where it is shown whole, and 2 blocks per signal would not fit).

    `thresholds` gives each result's alpha cut-offs (its preset's), for the summaries."""
    messages = []
    for outcome in [*report.focus, *report.settled]:
        if outcome.result is not None:
            cuts = thresholds(outcome.result) if thresholds is not None else None
            messages.append(divergence_summary(outcome.result, transcript_url=outcome.url or "",
                                               thresholds=cuts,
                                               actions=feedback_blocks(outcome.result.id)))
            continue
        title = truncate(escape(outcome.title), 600)
        text = f"*{title}*\n{escape(outcome.status)}: {truncate(escape(outcome.reason), 1500)}"
        tail = [context([link(outcome.url, "transcript")])] if outcome.url else []
        messages.append(Message(truncate(f"{outcome.title}: {outcome.status}", 3000),
                                fit([section(text)], [], tail, transcript_url=outcome.url)))
    return messages


def _schedule_line(view: ScheduleView) -> str:
    state = "paused" if view.paused else ("disabled" if not view.enabled else "active")
    upcoming = date_fmt(view.next_fire) if view.next_fire and state == "active" else "—"
    return (f"*{escape(view.id)}* · `{escape(view.cron)}` {escape(view.timezone)} · "
            f"{escape(view.preset)} → {channel(view.channel)} · {state} · next {upcoming}")


def schedule_list(views: list[ScheduleView]) -> Message:
    """`/debate schedules`: each schedule, its state and when it fires next."""
    if not views:
        return note("No schedules are configured (add `[[schedules]]` to dialectic.toml).")
    return Message("Schedules", sections("Schedules", [_schedule_line(v) for v in views]))


__all__ = [
    "digest_details",
    "digest_message",
    "key_disagreement",
    "schedule_list",
]
