"""The bot's short notices: help, usage errors, acks, refusals and thread notes.

The debate's own messages (started, status, phases, summary) are in `debate.py`, reviews in
`review.py`; these are the one-liners around them. Any user or model text goes through `escape`;
ids through `mrkdwn.user` / `mrkdwn.channel`, which accept only real Slack ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.slack.mrkdwn import channel, chunk, escape, truncate
from bot.slack.views import common as B
from bot.slack.views.common import note as _note
from bot.slack.views.review import decision_line
from engine.domain import DebateResult, Estimate
from engine.money.cost import ceiling_note, estimate_range, reuse_note
from storage.records import Review

INVITE = "/invite @Dialectic"


def help_text(usage: str) -> B.Message:
    """How to use the bot (usage text is escaped like any other text)."""
    body = [B.section(part) for part in chunk(escape(usage), B.SECTION_TEXT_MAX)]
    return B.message(escape(usage) or "Dialectic help", [B.header("Dialectic")], body, [])


def error(message: str, usage: str | None = None) -> B.Message:
    """What went wrong and what to do: fit for an ephemeral message or `respond()`."""
    head = [B.section(f"⚠ {escape(message)}")]
    body = [B.section(f"*Usage*\n{part}") for part in chunk(escape(usage), 2900)] if usage else []
    return B.message(escape(message), head, body, [])


def _topic(topic: str) -> str:
    return truncate(escape(" ".join(topic.split())), 200)


def starting(topic: str, estimate: Estimate, *, rehearsal: bool) -> B.Message:
    """The slash command's immediate ack: what starts and roughly what it costs."""
    mark = " (rehearsal: placeholder model, no cost)" if rehearsal else ""
    if estimate.cached_from:   # a finished debate answers it: nothing starts
        return _note(f"♻️ *{_topic(topic)}* was debated recently (debate "
                     f"`{escape(estimate.cached_from)}`): its result follows in the thread I am "
                     "opening in this channel, no new calls, $0.")
    return _note(f"⏳ Starting a *{escape(estimate.mode)}* debate{mark}: *{_topic(topic)}*\n"
                 f"Estimate: ~{estimate.calls} calls, {estimate_range(estimate)} "
                 f"({ceiling_note(estimate)}). "
                 "Follow it in the thread I am opening in this channel.")


def estimate_reply(topic: str, estimate: Estimate) -> B.Message:
    """`/debate estimate`: the plan's figures, nothing started."""
    tokens = estimate.prompt_tokens + estimate.completion_tokens
    pairs = [("Mode", escape(estimate.mode)), ("Calls", str(estimate.calls)),
             ("Dependent rounds", str(estimate.depth)), ("Tokens (estimate)", f"{tokens:,}"),
             ("Cost (short to verbose replies)", estimate_range(estimate)),
             ("Ceiling", ceiling_note(estimate).removeprefix("ceiling "))]
    text = f"Estimate for: {_topic(topic)} — {estimate_range(estimate)}"
    head = [B.section(f"*Estimate* for *{_topic(topic)}* (nothing was started)"),
            B.fields(pairs)]
    if reused := reuse_note(estimate):
        head.append(B.context([escape(reused[:1].upper() + reused[1:])]))
    if estimate.rehearsal:
        head.append(B.context([B.REHEARSAL_NOTE]))
    return B.Message(text, head)


def usage_error(message: str, usage: str) -> B.Message:
    return error(message, usage)


def not_in_channel(channel_id: str | None) -> B.Message:
    where = channel(channel_id) if channel_id else "this channel"
    return _note(f"⚠ I cannot post in {where}: I am not a member of it. Invite me with "
                 f"`{INVITE}` there, then try again.")


def not_started(reason: str) -> B.Message:
    return _note(f"⚠ *Debate not started:* {truncate(escape(reason), 2000)}")


def post_failed(error: str) -> B.Message:
    return _note(f"⚠ Slack refused my message ({escape(error)}); nothing was started.")


def cached(debate_id: str, *, awaiting_review: bool = False) -> B.Message:
    """The same question answered by a recent debate's result; one still awaiting a reviewer
    says so (docs/caching-and-replay.md)."""
    waits = ", still awaiting a reviewer's decision" if awaiting_review else ""
    return _note(f"♻️ The same question was debated recently: here is that result "
                 f"(debate `{escape(debate_id)}`{waits}), no new spend.")


def awaiting_review(review_channel: str) -> B.Message:
    return _note(f"👀 The judges did not agree enough: this result awaits a reviewer in "
                 f"{channel(review_channel)}.")


def no_review_channel() -> B.Message:
    return _note("👀 This result needs a reviewer, but no review channel is configured "
                 "(set DIALECTIC_REVIEW_CHANNEL).")


def decision(review: Review) -> B.Message:
    return _note(decision_line(review))


def rerun_started(debate_id: str, channel_id: str) -> B.Message:
    return _note(f"🔁 Re-run started in {channel(channel_id)}: debate `{escape(debate_id)}`.")


def not_reviewer() -> B.Message:
    return _note("⛔ Only the configured reviewers can decide reviews; nothing was changed. "
                 "Ask an admin to add you to DIALECTIC_REVIEWERS.")


def already_decided(review: Review) -> B.Message:
    return _note(f"This review was already decided: {decision_line(review)}")


def unknown_review() -> B.Message:
    return _note("⚠ I cannot find this review any more; nothing was changed.")


def no_policy() -> B.Message:
    return _note("⚠ No appeal policy is configured for this workspace, so there is nothing to "
                 "judge the appeal against. Set DIALECTIC_APPEAL_POLICY (or "
                 "`workspace_policies` in dialectic.toml) and try again.")


def evidence_addressed_to_ai() -> B.Message:
    """A thread reply taken as evidence holds text addressed to the AI."""
    return _note("⚠ This reply contains text addressed to the AI. The debaters see it only as "
                 "quoted material, and a person will review the result.")


def not_kept(problem: str) -> B.Message:
    """Slack text that cannot be stored (a lone surrogate, NUL): nothing was kept or started."""
    return _note(f"⚠ *I kept nothing and started nothing:* {escape(problem)}.")


def mention_help() -> B.Message:
    return _note("Say `@Dialectic debate [question]` in a thread to debate it; without a "
                 "question I debate the thread's first message.")


def no_topic() -> B.Message:
    return _note("⚠ I have not seen this thread's first message, so I do not know what to "
                 "debate. Say `@Dialectic debate <question>`.")


def not_found(debate_id: str) -> B.Message:
    return _note(f"⚠ No debate `{escape(debate_id)}`. `/debate status` lists this channel's.")


def no_debates() -> B.Message:
    return _note("No debates in this channel yet: start one with `/debate TOPIC`.")


def stacked(messages: Sequence[B.Message], *, transcript_url: str | None = None) -> B.Message:
    """Several messages as one (e.g. the status of each recent debate), fitted to the limits."""
    body: list[B.Block] = []
    for i, message in enumerate(messages):
        if i:
            body.append(B.divider())
        body += message.blocks
    text = " · ".join(m.text for m in messages) or "Nothing to show"
    return B.Message(truncate(text, B.TEXT_MAX), B.fit([], body, [], transcript_url=transcript_url))


def resolved(summary: B.Message, result: DebateResult, *, transcript_url: str,
             actions: Sequence[B.Block] = ()) -> B.Message:
    """An appeal the panel settled: the divergence summary opened by "Resolved automatically".

    `actions` (the feedback buttons) close the message and are never cut: pass them here, not
    inside `summary`, whose blocks are re-fitted below the new line."""
    side = B.side_name(result.winner) if result.winner else "no side"
    verdict = truncate(escape(result.verdict), 1500) if result.verdict else "see the verdict"
    line = f"✅ *Resolved automatically:* the panel agrees ({side}) — {verdict}"
    blocks = B.fit([B.section(line)], summary.blocks, list(actions),
                   transcript_url=transcript_url)
    return B.Message(truncate(f"Resolved automatically: {summary.text}", B.TEXT_MAX), blocks)


__all__ = [
    "INVITE",
    "already_decided",
    "awaiting_review",
    "cached",
    "decision",
    "error",
    "estimate_reply",
    "evidence_addressed_to_ai",
    "help_text",
    "mention_help",
    "no_debates",
    "no_policy",
    "no_review_channel",
    "no_topic",
    "not_found",
    "not_in_channel",
    "not_reviewer",
    "not_started",
    "post_failed",
    "rerun_started",
    "resolved",
    "stacked",
    "starting",
    "unknown_review",
    "usage_error",
]
