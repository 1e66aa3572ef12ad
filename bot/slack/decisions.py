"""Reviews decided outside Slack (the web console, the API, the CLI), told in Slack: the review
request loses its buttons and shows the decision, and the debate's thread hears it, as when a
reviewer presses a button (bot/slack/listeners/actions.py)."""

from __future__ import annotations

import logging

from bot.service.reviews import DecidedHook, Decision
from bot.slack.notifier import SLACK_ERRORS, SlackNotifier, slack_error, thread_of
from bot.slack.views import notices
from bot.slack.views import review as R

log = logging.getLogger("dialectic.slack.decisions")
SURFACE = "slack"   # what the review desk is told a decision made by a Slack button came from


def told_in_slack(notifier: SlackNotifier) -> DecidedHook:
    """The review desk's hook for `notifier`'s workspace."""

    async def hook(decision: Decision, surface: str) -> None:
        if surface == SURFACE:     # the button's own handler has told Slack already
            return
        review, record = decision.review, decision.record
        if review.channel_id and review.message_ts and record.result is not None:
            message = R.review_decided(review, record.result,
                                       transcript_url=notifier.url(record.id),
                                       thresholds=notifier.thresholds(record.result))
            try:
                await notifier.update(review.channel_id, review.message_ts, message)
            except SLACK_ERRORS as exc:
                log.warning("could not update review request %s: %s", review.id,
                            slack_error(exc))
        thread = thread_of(record)
        if thread is not None:
            notifier.post_soon(thread.channel_id, notices.decision(review), thread_ts=thread.ts,
                               what="the decision notice")

    return hook


__all__ = ["SURFACE", "told_in_slack"]
