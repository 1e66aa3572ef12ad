"""Review buttons (Approve, Escalate, Re-run), the escalate reason modal, the `/debate` modal.

A press is acked at once. Non-reviewers get an ephemeral refusal and an audit event, and nothing
changes. A decision is applied once by the service (a conditional UPDATE): a double click or a
second replica learns it lost and says "already decided" instead of deciding twice.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from bot.service.debates import Submission
from bot.service.reviews import AlreadyDecided, Decision, NotReviewer, escalation_reason
from bot.service.tracing import tracing
from bot.service.workspaces import Workspace
from bot.slack.context import SlackContext
from bot.slack.decisions import SURFACE
from bot.slack.gate import workspace_of
from bot.slack.notifier import SLACK_ERRORS, slack_error, thread_of
from bot.slack.parsing import ModalError, parse_modal
from bot.slack.starter import NotInChannel, Place, open_debate, start_debate, submit_opening
from bot.slack.views import notices
from bot.slack.views import review as R
from bot.slack.views.common import Message
from bot.slack.views.modals import DEBATE_MODAL, MODAL_IDS, TOPIC_BLOCK
from engine.errors import InvalidRequest
from storage.errors import NotFound
from storage.records import DebateRecord, DecisionAbout, Origin, Review, ReviewStatus

log = logging.getLogger("dialectic.slack.actions")


def register(app: AsyncApp, ctx: SlackContext) -> None:
    async def on_approve(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await ctx.track(press_button(ctx, body, ReviewStatus.APPROVED, workspace_of(context)))

    async def on_rerun(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await ack()
        await ctx.track(press_button(ctx, body, ReviewStatus.RERUN, workspace_of(context)))

    async def on_escalate(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
                          ) -> None:
        await ack()
        await ctx.track(press_button(ctx, body, ReviewStatus.ESCALATED, workspace_of(context)))

    async def on_escalate_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                                 context: AsyncBoltContext) -> None:
        await submit_escalation(ctx, ack, body, view, workspace_of(context))

    async def on_debate_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                               context: AsyncBoltContext) -> None:
        await submit_debate_modal(ctx, ack, body, view, workspace_of(context))

    app.action(R.APPROVE_ACTION)(on_approve)
    app.action(R.RERUN_ACTION)(on_rerun)
    app.action(R.ESCALATE_ACTION)(on_escalate)
    app.view(R.ESCALATE_MODAL)(on_escalate_submit)
    app.view(DEBATE_MODAL)(on_debate_submit)


async def press_button(ctx: SlackContext, body: dict[str, Any], status: ReviewStatus,
                       workspace: Workspace) -> None:
    """Reviewers decide (Escalate first asks why, in a modal); anyone else is refused, and a
    review the workspace may not decide (tenancy.py) is "unknown"."""
    press = press_of(body)
    if status is not ReviewStatus.ESCALATED:
        await decide(ctx, press, status, workspace=workspace)
        return
    try:
        await ctx.reviews.authorize(press["review_id"], press["user"], workspace=workspace)
    except (NotReviewer, AlreadyDecided, NotFound) as exc:
        await _tell(ctx, press, _refusal(exc))
        return
    try:
        await ctx.client.views_open(trigger_id=press["trigger_id"],
                                    view=R.escalate_modal(press["review_id"]))
    except SLACK_ERRORS as exc:
        log.warning("could not open the escalate form: %s", slack_error(exc))


def press_of(body: dict[str, Any]) -> dict[str, Any]:
    """The parts of a button press we use: review id, presser, where the request is."""
    action = (body.get("actions") or [{}])[0]
    container = body.get("container") or {}
    return {"review_id": str(action.get("value") or ""),
            "user": str((body.get("user") or {}).get("id") or ""),
            "channel": container.get("channel_id") or (body.get("channel") or {}).get("id"),
            "message_ts": container.get("message_ts") or (body.get("message") or {}).get("ts"),
            "trigger_id": body.get("trigger_id")}


def modal_text(view: dict[str, Any], block_id: str, action_id: str) -> str:
    values = (view.get("state") or {}).get("values") or {}
    return str(((values.get(block_id) or {}).get(action_id) or {}).get("value") or "").strip()


ABOUTS = frozenset(a.value for a in DecisionAbout)


def _sentence(exc: Exception) -> str:
    """The service's refusal as the sentence a form shows under its field."""
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}."[:150]


def modal_choice(view: dict[str, Any], block_id: str, action_id: str) -> str:
    """The value of the option chosen in a radio or select input ("" when none was)."""
    values = (view.get("state") or {}).get("values") or {}
    chosen = ((values.get(block_id) or {}).get(action_id) or {}).get("selected_option") or {}
    return str(chosen.get("value") or "")


def _refusal(exc: Exception) -> Message:
    """What the presser is told when the service refuses the decision."""
    if isinstance(exc, NotReviewer):
        return notices.not_reviewer()
    if isinstance(exc, AlreadyDecided):
        return notices.already_decided(exc.review)
    return notices.unknown_review()


async def _tell(ctx: SlackContext, press: dict[str, Any], message: Message) -> None:
    if not press.get("channel"):
        return
    try:
        await ctx.client.chat_postEphemeral(channel=press["channel"], user=press["user"],
                                            **message.kwargs())
    except SLACK_ERRORS as exc:
        log.warning("could not answer %s: %s", press["user"], slack_error(exc))


async def decide(ctx: SlackContext, press: dict[str, Any], status: ReviewStatus, *,
                 workspace: Workspace, note: str = "", about: DecisionAbout | None = None
                 ) -> None:
    """Apply the decision once (the service's rules); update the request in place; tell the
    debate's thread."""
    try:
        decision = await ctx.reviews.decide(press["review_id"], status, by=press["user"],
                                            note=note, surface=SURFACE, about=about,
                                            workspace=workspace)
    except (NotReviewer, AlreadyDecided, NotFound) as exc:
        await _tell(ctx, press, _refusal(exc))
        return
    except InvalidRequest as exc:   # the forms check first; said, never raised in a task
        log.warning("review %s not decided: %s", press["review_id"], exc)
        return
    await _update_request(ctx, decision.review, decision.record, press)
    thread = thread_of(decision.record)
    if status is ReviewStatus.RERUN:
        await _rerun(ctx, decision)
    elif thread is not None:
        ctx.notifier.post_soon(thread.channel_id, notices.decision(decision.review),
                               thread_ts=thread.ts, what="the decision notice")


async def _update_request(ctx: SlackContext, review: Review, record: DebateRecord,
                          press: dict[str, Any]) -> None:
    channel = review.channel_id or press.get("channel")
    ts = review.message_ts or press.get("message_ts")
    if not channel or not ts or record.result is None:
        return
    message = R.review_decided(review, record.result, transcript_url=ctx.notifier.url(record.id),
                               thresholds=ctx.notifier.thresholds(record.result))
    try:
        await ctx.notifier.update(channel, ts, message)
    except SLACK_ERRORS as exc:
        log.warning("could not update review request %s: %s", review.id, slack_error(exc))


async def _rerun(ctx: SlackContext, decision: Decision) -> None:
    """The re-run, shown in the original channel (or the review channel)."""
    record, review = decision.record, decision.review
    channel = record.origin.channel_id or ctx.settings.review_channel
    if not channel:
        log.warning("re-run of %s: no channel to post it in", record.id)
        return
    place = Place(channel_id=channel, user_id=review.decided_by or "",
                  team_id=record.origin.team_id)

    async def submit(origin: Origin) -> Submission:
        return await ctx.reviews.rerun(decision, origin=origin)

    try:
        started = await start_debate(ctx, record.request, place,
                                     idempotency_key=f"rerun:{review.id}", submit=submit,
                                     traced_as="rerun")
    except (NotInChannel, InvalidRequest, *SLACK_ERRORS) as exc:
        log.warning("re-run of %s could not start: %s", record.id, exc)
        return
    thread = thread_of(record)
    if thread is not None and started.submission is not None:
        notice = notices.rerun_started(started.submission.record.id, channel)
        ctx.notifier.post_soon(thread.channel_id, notice, thread_ts=thread.ts,
                               what="the re-run notice")


async def submit_escalation(ctx: SlackContext, ack: AsyncAck, body: dict[str, Any],
                            view: dict[str, Any], workspace: Workspace) -> None:
    """The escalate form: a blank reason, refusals and "already decided" are shown in the form
    itself, and nothing changes."""
    user = str((body.get("user") or {}).get("id") or "")
    review_id = str(view.get("private_metadata") or "")
    try:
        reason = escalation_reason(modal_text(view, R.REASON_BLOCK, R.REASON_ACTION))
    except InvalidRequest as exc:
        await ack(response_action="errors", errors={R.REASON_BLOCK: _sentence(exc)})
        return
    try:
        await ctx.reviews.authorize(review_id, user, workspace=workspace)
    except NotReviewer:
        await ack(response_action="errors", errors={R.REASON_BLOCK: "Only reviewers can escalate."})
        return
    except NotFound:
        await ack(response_action="errors", errors={R.REASON_BLOCK: "This review is gone."})
        return
    except AlreadyDecided as exc:
        await ack(response_action="errors", errors={R.REASON_BLOCK: f"{str(exc).capitalize()}."})
        return
    await ack()
    press = {"review_id": review_id, "user": user, "channel": None, "message_ts": None}
    about = modal_choice(view, R.ABOUT_BLOCK, R.ABOUT_ACTION)
    await ctx.track(decide(ctx, press, ReviewStatus.ESCALATED, workspace=workspace, note=reason,
                           about=DecisionAbout(about) if about in ABOUTS else None))


async def submit_debate_modal(ctx: SlackContext, ack: AsyncAck, body: dict[str, Any],
                              view: dict[str, Any], workspace: Workspace) -> None:
    """The `/debate` form: validate (errors shown in the form), then start in its channel."""
    user = str((body.get("user") or {}).get("id") or "")
    values = (view.get("state") or {}).get("values") or {}
    try:
        command = parse_modal(values, ids=MODAL_IDS)
        request = command.request(requested_by=user)
        await ctx.service.estimate(request)
    except ModalError as exc:
        await ack(response_action="errors", errors={exc.block_id: str(exc)})
        return
    except (InvalidRequest, ValueError) as exc:
        await ack(response_action="errors", errors={TOPIC_BLOCK: str(exc)[:150]})
        return
    channel = str(view.get("private_metadata") or "")
    place = Place(channel_id=channel, user_id=user, team_id=workspace.team_id)
    try:
        with tracing().span("slack /debate form", {"dialectic.surface": "slack",
                                                   "dialectic.slack.action": "form"},
                            kind="server"):  # the ack and the submission: the trace's start
            await _start_from_modal(ctx, ack, request, place, body)
    except SLACK_ERRORS as exc:
        log.warning("could not start a debate from the form: %s", slack_error(exc))
        await ack(response_action="errors",  # harmless when the form was already closed
                  errors={TOPIC_BLOCK: f"Slack refused my message ({slack_error(exc)})."})


async def _start_from_modal(ctx: SlackContext, ack: AsyncAck, request: Any, place: Place,
                            body: dict[str, Any]) -> None:
    """Dedupe on the submission's trigger id; post before acking, so a bot outside the channel
    is reported inside the form (a fixed resubmission has a new trigger id)."""
    trigger = str(body.get("trigger_id") or "")
    if not await ctx.first_time("view", trigger):
        await ack()
        return
    try:
        opening = await open_debate(ctx, request, place)
    except NotInChannel:
        text = f"I am not in that channel: {notices.INVITE} there, then submit again."
        await ack(response_action="errors", errors={TOPIC_BLOCK: text})
        return
    await ack()
    await ctx.track(submit_opening(ctx, opening,
                                   idempotency_key=f"slack:{trigger}" if trigger else None))
