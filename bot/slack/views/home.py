"""The App Home tab: how to start a debate, today's budget, the reviews waiting (for
reviewers), and recent debates with their transcripts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.models.views import View

from bot.service.figures import TITLES, figure_parts
from bot.service.oversight import JudgeReport
from bot.service.results import is_incomplete
from bot.slack.mrkdwn import channel, date_fmt, escape, link, truncate
from bot.slack.views.budget import budget_blocks
from bot.slack.views.common import (
    HOME_MAX_BLOCKS,
    STATUS_WORDS,
    Block,
    context,
    divider,
    fit,
    header,
    section,
    usd,
)
from storage.records import DebateRecord, Review

REVIEWS_SHOWN = 20
HOME_MAX_CHARS = 100_000


def _recent_line(record: DebateRecord, url: str) -> Block:
    emoji, word = STATUS_WORDS.get(record.status, ("•", escape(str(record.status))))
    marks = []
    if record.result is not None and record.result.rehearsal:
        marks.append("🧪 rehearsal")
    if record.result is not None and is_incomplete(record.result):
        marks.append("⚠ incomplete")
    facts = [f"{emoji} {word}", escape(record.mode), escape(record.preset),
             usd(record.cost_usd), date_fmt(record.created_at), *marks]
    topic = truncate(escape(record.request.topic.replace("\n", " ")), 200)
    return section(f"*{topic}*\n" + " · ".join(facts) + f" · {link(url, 'transcript')}")


def _review_line(review: Review, topics: Mapping[str, str], url: str) -> Block:
    topic = topics.get(review.debate_id, f"debate {review.debate_id}")
    where = f" in {channel(review.channel_id)}" if review.channel_id else ""
    reason = truncate(escape(review.reason), 300) if review.reason else "routed for review"
    return section(f"*{truncate(escape(topic), 200)}*{where}\n{reason} · {link(url, 'transcript')}")


def judge_audit_line(report: JudgeReport | None, judges_url: str) -> Block:
    """One line of the judge audit: what is flagged (with n), or that nothing is, or that there
    is not enough yet; linking the console's Judges page."""
    more = link(judges_url, "judges") if judges_url else "the console's Judges page"
    if report is None or not report.judges:
        return context([f"⚖ Judge audit: no judged debates in the last "
                        f"{report.days if report else 90} days yet · {more}"])
    flagged = [(a, f) for a in report.judges for f in a.figures if f.flagged]
    if not flagged:
        return context([f"⚖ Judge audit, last {report.days} days ({report.debates} debates): "
                        f"no judge flagged · {more}"])
    parts = [f"{escape(a.judge)} ({escape(a.model)}): {TITLES[f.name].lower()} "
             f"{figure_parts(f)[0]} (n={f.n})" for a, f in flagged[:4]]
    rest = f"; and {len(flagged) - 4} more" if len(flagged) > 4 else ""
    return section(truncate(f"⚖ *Judge audit, last {report.days} days* ({report.debates} "
                            f"debates): ⚑ {'; '.join(parts)}{rest} · {more}", 2900))


def app_home(recent: list[DebateRecord], budget: Mapping[str, Any],
             pending_reviews: list[Review], *, is_reviewer: bool, public_url: str,
             transcript_path: str = "/debates/{id}", judges: JudgeReport | None = None,
             settings: list[Block] | None = None) -> dict[str, Any]:
    """The Home tab: how to start, today's budget, the judge audit in a line, reviews waiting
    (for reviewers), recent debates.

    `transcript_path` is joined to `public_url` with the debate id to link each transcript.
    """
    def url(debate_id: str) -> str:
        return public_url.rstrip("/") + transcript_path.format(id=debate_id)

    console = link(public_url, "web console") if public_url else "web console"
    head = [header("Dialectic"),
            section(f"Start a debate with `/debate` in any channel, or from the {console}."),
            divider(), header("Today's budget"), *budget_blocks(budget),
            judge_audit_line(judges, public_url.rstrip("/") + "/judges" if public_url else "")]
    reviews: list[Block] = []
    if is_reviewer and pending_reviews:
        topics = {r.id: r.request.topic for r in recent}
        reviews = [divider(), header(f"Waiting for review ({len(pending_reviews)})")]
        reviews += [_review_line(r, topics, url(r.debate_id))
                    for r in pending_reviews[:REVIEWS_SHOWN]]
    elif pending_reviews:
        reviews = [context([f"{len(pending_reviews)} debate(s) wait for a reviewer."])]
    recents = [divider(), header("Recent debates")]
    recents += [_recent_line(r, url(r.id)) for r in recent] or [
        context(["No debates yet: try `/debate`."])]
    head += settings or []   # the workspace's settings (views/workspace_settings.py)
    blocks = fit(head, [*reviews, *recents], [], transcript_url=public_url,
                 max_blocks=HOME_MAX_BLOCKS, max_chars=HOME_MAX_CHARS)
    return View(type="home", blocks=blocks).to_dict()


__all__ = ["app_home", "judge_audit_line"]
