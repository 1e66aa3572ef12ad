"""Reviews over HTTP: the pending queue, and a reviewer's decision (`POST
/api/reviews/{id}/decision`), which the console's Approve / Escalate / Re-run buttons call too.

The reviewer is whoever the signed session or a reviewer token names (auth.reviewer_of); the API
token alone names nobody and cannot decide. The decision goes through the same `ReviewDesk` as
Slack's buttons: configured reviewers and user groups only (a refusal is audited), a reason to
escalate, decided once.
"""

from __future__ import annotations

from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from bot.http import errors as err
from bot.http import scoping
from bot.http.auth import reviewer_of, workspace_of
from bot.http.routes import Reply, Route, json_reply, route, route_with_body
from bot.http.state import RUNTIME
from bot.service.reviews import MAX_NOTE
from storage.errors import NotFound
from storage.records import DebateStatus, DecisionAbout, Origin, Review, ReviewStatus

DECISIONS: dict[str, ReviewStatus] = {"approve": ReviewStatus.APPROVED,
                                      "escalate": ReviewStatus.ESCALATED,
                                      "rerun": ReviewStatus.RERUN}


class DecisionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decision: Literal["approve", "escalate", "rerun"]
    reason: str = Field(default="", max_length=MAX_NOTE,
                        description="why (needed to escalate); kept with the decision")
    about: DecisionAbout | None = Field(
        default=None, description="what the decision is about: the verdict (a label for the "
        "judge and routing audits) or the run itself (a degraded step: no label); default: "
        "the run for a re-run or escalation of an incomplete result, else the verdict")
    winner: Literal["pro", "con"] | None = Field(
        default=None, description="the side that should have won, when the reviewer names one "
        "(an appeal: pro overturns the moderation decision, con keeps it)")


class DecisionOut(BaseModel):
    review: Review
    debate_id: str
    status: DebateStatus = Field(description="the reviewed debate's status after the decision")
    rerun_id: str | None = Field(description="the re-run debate, when the decision was rerun")


class ReviewsOut(BaseModel):
    reviews: list[Review]


async def decide_review(request: web.Request, body: DecisionIn) -> web.Response:
    """Approve, escalate (with a reason) or re-run a pending review, as the signed-in reviewer
    (the console's session, or a reviewer token as the bearer)."""
    reviewer = reviewer_of(request)
    if reviewer is None:
        return err.error(403, "deciding needs a reviewer's identity: sign in to the console "
                              "as a reviewer, or send a reviewer token (dialectic reviewers "
                              "link) as the bearer")
    rt = request.app[RUNTIME]
    review_id, workspace = request.match_info["id"], workspace_of(request)
    if workspace is not None:   # another workspace's review (or the operator's): no such one
        try:
            await scoping.debate(request, (await rt.reviews.get(review_id)).debate_id)
        except NotFound:
            raise NotFound("review", review_id) from None
    decision = await rt.reviews.decide(review_id, DECISIONS[body.decision],
                                       by=reviewer, note=body.reason, surface="web",
                                       about=body.about, winner=body.winner,
                                       workspace=workspace)
    rerun_id = None
    if decision.review.status is ReviewStatus.RERUN:   # the re-run is the workspace's too
        origin = Origin(surface="api", user_id=reviewer,
                        team_id=workspace.team_id if workspace is not None else None)
        sub = await rt.reviews.rerun(decision, origin=origin)
        rt.notify_workers()
        rerun_id = sub.record.id
    out = DecisionOut(review=decision.review, debate_id=decision.record.id,
                      status=decision.record.status, rerun_id=rerun_id)
    return json_reply(out)


async def list_reviews(request: web.Request) -> web.Response:
    """The reviews waiting for a decision, oldest first."""
    return json_reply(ReviewsOut(reviews=await scoping.pending_reviews(request)))


ROUTES: tuple[Route, ...] = (
    route("GET", "/api/reviews", list_reviews, summary="Pending reviews",
          replies={200: Reply(description="the pending reviews", schema=ReviewsOut)}),
    route_with_body("/api/reviews/{id}/decision", DecisionIn, decide_review,
                    summary="Decide a review",
                    replies={200: Reply(description="decided", schema=DecisionOut),
                             400: err.BAD_INPUT, 403: err.NOT_REVIEWER, 404: err.NO_REVIEW,
                             409: err.DECIDED, 402: err.OVER_BUDGET}),
)
