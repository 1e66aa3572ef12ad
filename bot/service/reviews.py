"""Reviews: who may decide them, and the decisions themselves, the same for every surface.

A debate the judges could not settle waits for a human. Only configured reviewers decide:
`DIALECTIC_REVIEWERS` lists user ids (`U…`, `W…`) and user-group ids (`S…`); group members come
from a `GroupDirectory` (Slack's user groups when Slack is configured). Anyone else is refused,
and the refusal is audited. A decision is applied once (a conditional UPDATE): a double click,
a second replica or a second surface learns it lost (`AlreadyDecided`). Escalating needs a
reason. A re-run is a new debate with the same request, linked to the one reviewed.

Slack's buttons, the web console and the REST API all call `ReviewDesk`; none decides itself.
A decision made on one surface is told to the others through `decided_hooks` (Slack updates its
review request when the console or the CLI decided).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from bot.service.debates import DebateService, Submission
from bot.service.results import is_incomplete
from engine.characters import require_visible, unstorable, visible
from engine.errors import DialecticError, InvalidRequest
from engine.oversight.panel_records import Side as PanelSide
from storage import audit, debates, reviews, workspace_settings
from storage.errors import NotFound
from storage.records import (
    DebateRecord,
    DebateStatus,
    DecisionAbout,
    Origin,
    Review,
    ReviewStatus,
)
from storage.tenancy import Workspace, may_review

log = logging.getLogger("dialectic.reviews")

DECISION_TARGET = {ReviewStatus.APPROVED: DebateStatus.APPROVED,
                   ReviewStatus.ESCALATED: DebateStatus.ESCALATED,
                   ReviewStatus.RERUN: DebateStatus.ESCALATED}
MAX_NOTE = 2000
BLANK_ESCALATION = "say why you escalate: the reason goes with the escalation"


class NotReviewer(DialecticError):
    """The person is not a configured reviewer (the refusal was audited)."""


class AlreadyDecided(DialecticError):
    """Someone decided this review first; `review` is how it stands."""

    def __init__(self, review: Review) -> None:
        who = f" by {review.decided_by}" if review.decided_by else ""
        super().__init__(f"already decided ({review.status.value}{who})")
        self.review = review


class GroupDirectory(Protocol):
    """Who belongs to a user group (Slack's `usergroups.users.list`, cached)."""

    async def members(self, group: str) -> frozenset[str]: ...


def split_reviewers(entries: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(user ids, group ids) from the configured entries; anything else is ignored and logged."""
    users: set[str] = set()
    groups: list[str] = []
    for entry in (e.strip() for e in entries):
        if entry[:1] in ("U", "W") and entry[1:].isalnum():
            users.add(entry)
        elif entry[:1] == "S" and entry[1:].isalnum():
            groups.append(entry)
        elif entry:
            log.warning("ignoring reviewer %r: give Slack user ids (U…) or user-group ids (S…)",
                        entry)
    return frozenset(users), tuple(groups)


class Reviewers:
    """Answers "may this person decide reviews?" from the settings and group membership."""

    def __init__(self, entries: Iterable[str], groups: GroupDirectory | None = None) -> None:
        self.users, self.groups = split_reviewers(entries)
        self.directory = groups

    @property
    def configured(self) -> bool:
        return bool(self.users or self.groups)

    async def is_reviewer(self, user_id: str) -> bool:
        if user_id in self.users:
            return True
        if self.directory is None:
            return False
        for group in self.groups:
            if user_id in await self.directory.members(group):
                return True
        return False


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision that took effect: the review as decided, and the debate after it."""

    review: Review
    record: DebateRecord


DecidedHook = Callable[[Decision, str], Awaitable[None]]   # (the decision, its surface)


class ReviewDesk:
    """The review operations every surface calls."""

    def __init__(self, service: DebateService, reviewers: Reviewers) -> None:
        self.service = service
        self.reviewers = reviewers
        self.decided_hooks: list[DecidedHook] = []

    async def get(self, review_id: str) -> Review:
        async with self.service.db.transaction(readonly=True) as session:
            return await reviews.get(session, review_id)

    async def for_debate(self, debate_id: str) -> Review | None:
        """The debate's review, if it was routed to one."""
        async with self.service.db.transaction(readonly=True) as session:
            return await reviews.get_by_debate(session, debate_id)

    async def pending(self, *, limit: int = 100) -> list[Review]:
        async with self.service.db.transaction(readonly=True) as session:
            return await reviews.list_pending(session, limit=limit)

    async def authorize(self, review_id: str, user: str, *,
                        workspace: Workspace | None = None) -> Review:
        """The pending review `user` may decide; NotReviewer (audited), NotFound, or
        AlreadyDecided otherwise. `workspace`: the Slack workspace the press came from, which
        decides only the reviews it may (storage/tenancy.py); another's are NotFound."""
        if not await (await self.reviewers_of(review_id)).is_reviewer(user):
            await self._refused(review_id, user)
            raise NotReviewer("only configured reviewers can decide reviews")
        review = await self.get(review_id)
        if workspace is not None:
            async with self.service.db.transaction(readonly=True) as session:
                record = await debates.get(session, review.debate_id)
            if not may_review(workspace, record.origin):
                raise NotFound("review", review_id)
        if review.status is not ReviewStatus.PENDING:
            raise AlreadyDecided(review)
        return review

    async def reviewers_of(self, review_id: str) -> Reviewers:
        """Who decides this review: the reviewers the debate's workspace set, if it set any
        (bot/service/workspace_settings.py), else the operator's (DIALECTIC_REVIEWERS)."""
        async with self.service.db.transaction(readonly=True) as session:
            try:
                review = await reviews.get(session, review_id)
                team = (await debates.get(session, review.debate_id)).origin.team_id
            except NotFound:
                return self.reviewers
        return await self.reviewers_of_team(team)

    async def reviewers_of_team(self, team_id: str | None) -> Reviewers:
        """The reviewers workspace `team_id` set, if it set any, else the operator's."""
        if not team_id:
            return self.reviewers
        async with self.service.db.transaction(readonly=True) as session:
            own = (await workspace_settings.get(session, team_id)).reviewers
        return self.reviewers if own is None else Reviewers(own, self.reviewers.directory)

    async def decide(self, review_id: str, decision: ReviewStatus, *, by: str,
                     note: str = "", surface: str = "", about: DecisionAbout | None = None,
                     winner: PanelSide | None = None, workspace: Workspace | None = None
                     ) -> Decision:
        """Apply a reviewer's decision once, audited. Escalating needs a reason. `surface`
        (slack, web, cli) is where it was made; the hooks tell the others.

        The decision is a label for the judge and routing audits: `about` says whether it is
        about the verdict or the run itself (default: the run, for a re-run or escalation of an
        incomplete result; else the verdict); `winner` is the side the reviewer says should win
        (an appeal's outcome: "pro" overturns the moderation decision, "con" keeps it)."""
        if decision is ReviewStatus.PENDING:
            raise InvalidRequest("decide approve, escalate or rerun")
        await self.authorize(review_id, by, workspace=workspace)
        note = decision_note(note, decision)
        service = self.service
        async with service.db.transaction() as session:
            current = await reviews.get(session, review_id)
            about = about or _about(decision, await debates.get(session, current.debate_id))
            review = await reviews.decide(session, review_id=review_id, status=decision, by=by,
                                          note=note, now=service.clock(), about=about,
                                          named_winner=winner)
            if review is None:
                raise AlreadyDecided(await reviews.get(session, review_id))
            record = await debates.transition(
                session, review.debate_id, DECISION_TARGET[decision], actor=by,
                reason=f"review {decision.value}: {note}"[:500])
            await audit.append(session, debate_id=record.id, kind="review_decided", actor=by,
                               data={"review_id": review_id, "decision": decision.value,
                                     "note": note, "surface": surface, "about": about.value,
                                     "winner": winner, "spot_check": review.spot_check})
        decided = Decision(review, record)
        for hook in self.decided_hooks:
            try:
                await hook(decided, surface)
            except Exception:  # telling another surface must not undo a stored decision
                log.exception("decided-hook failed for review %s", review_id)
        return decided

    async def rerun(self, decision: Decision, *, origin: Origin) -> Submission:
        """The re-run a RERUN decision asked for: the same request as a new debate, linked to
        the reviewed one; submitting twice returns the same debate."""
        if decision.review.status is not ReviewStatus.RERUN:
            raise InvalidRequest("only a re-run decision starts a re-run")
        record = decision.record
        request = record.request.model_copy(update={
            "requested_by": decision.review.decided_by or record.request.requested_by})
        return await self.service.submit(request, origin=origin,
                                         idempotency_key=f"rerun:{decision.review.id}",
                                         parent_id=record.id)

    async def _refused(self, review_id: str, user: str) -> None:
        async with self.service.db.transaction() as session:
            try:
                review = await reviews.get(session, review_id)
            except NotFound:
                log.warning("refused press on unknown review %s by %s", review_id, user)
                return
            await audit.append(session, debate_id=review.debate_id, kind="review_refused",
                               actor=user, data={"review_id": review_id,
                                                 "reason": "not a configured reviewer"})


def escalation_reason(text: str) -> str:
    """The reason an escalation needs (engine/characters.py: visible text); InvalidRequest
    saying so otherwise. The Slack form asks this before it closes."""
    return require_visible(text, BLANK_ESCALATION)[:MAX_NOTE]


def decision_note(note: str, decision: ReviewStatus) -> str:
    """The note kept with a decision: required (and visible) to escalate, optional otherwise,
    never a text that cannot be stored."""
    if decision is ReviewStatus.ESCALATED:
        return escalation_reason(note)
    problem = unstorable(note)
    if problem is not None:
        raise InvalidRequest(f"nothing was kept: {problem}")
    return note.strip()[:MAX_NOTE] if visible(note) else ""


def _about(decision: ReviewStatus, record: DebateRecord) -> DecisionAbout:
    """What a decision is about when the reviewer did not say: sending back or escalating a
    result with steps missing is about the run; anything else about the verdict."""
    incomplete = record.result is None or is_incomplete(record.result)
    if decision is not ReviewStatus.APPROVED and incomplete:
        return DecisionAbout.PROCESS
    return DecisionAbout.VERDICT
