"""Readers' feedback in storage, on SQLite and PostgreSQL: one row per reader and debate, a
second press replacing the first (thumb kept when only a reason comes, reason kept when only a
thumb comes), read back as labels of the window; the reviews table untouched; a debate is
visible only to its own workspace."""

from __future__ import annotations

from datetime import timedelta

from engine.domain import utcnow
from engine.oversight.feedback import FeedbackLabel
from engine.vocabulary import Routing
from storage import debates, feedback, reviews
from storage.db import Database
from storage.records import Origin
from storage.tenancy import Workspace
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)


async def test_a_second_press_replaces_the_first_and_parts_are_kept(db: Database) -> None:
    debate = await add_debate(db)
    now = utcnow()
    common = {"debate_id": debate.id, "team_id": "T1", "preset": "decision",
              "routing": Routing.HUMAN_REVIEW, "rehearsal": False}
    async with db.transaction() as session:
        first = await feedback.put(session, user_id="U1", rating="up", now=now, **common)
        await feedback.put(session, user_id="U2", rating="down", now=now, **common)
    async with db.transaction() as session:
        later = now + timedelta(minutes=1)
        replaced = await feedback.put(session, user_id="U1", rating="down", now=later, **common)
        reasoned = await feedback.put(session, user_id="U1", reason="stale sources",
                                      now=later, **common)
        thumbed = await feedback.put(session, user_id="U1", rating="up", now=later, **common)
        found = await feedback.labels(session, since=now - timedelta(seconds=1))
        none = await feedback.labels(session, since=later + timedelta(seconds=1))
        other = await feedback.labels(session, since=now, presets=("market",))
        assert await reviews.get_by_debate(session, debate.id) is None
    assert (first.rating, first.reason) == ("up", "")
    assert (replaced.rating, reasoned.rating, reasoned.reason) == ("down", "down",
                                                                   "stale sources")
    assert (thumbed.rating, thumbed.reason, thumbed.created_at) == ("up", "stale sources",
                                                                    first.created_at)
    assert found == [
        FeedbackLabel(debate_id=debate.id, preset="decision", routing=Routing.HUMAN_REVIEW,
                      rating="up", rehearsal=False),
        FeedbackLabel(debate_id=debate.id, preset="decision", routing=Routing.HUMAN_REVIEW,
                      rating="down", rehearsal=False)]
    assert none == [] and other == []


async def test_a_debate_is_visible_to_its_own_workspace_only(db: Database) -> None:
    added = await add_debate(db)
    operator = await add_debate(db)          # started by the API: the operator's
    async with db.transaction() as session:
        mine = await debates.update_origin(session, added.id,
                                           Origin(surface="slack", team_id="T1"))
    t1, t2 = Workspace("T1", home=True), Workspace("T2")
    async with db.transaction(readonly=True) as session:
        assert (await debates.visible(session, mine.id, t1)) == mine
        assert await debates.visible(session, mine.id, None) is None      # no workspace: nothing
        assert await debates.visible(session, mine.id, t2) is None
        assert await debates.visible(session, operator.id, t1) is None    # never the operator's
        assert await debates.visible(session, operator.id, None) is None
        assert (await debates.visible(session, operator.id, None, operator=True)) is not None
        assert await debates.visible(session, "no-such-debate", t1) is None
        assert await debates.visible(session, "x" * 65, t1) is None
        assert await debates.visible(session, "", t1) is None
        assert [d.id for d in await debates.list_recent(session, workspace=t1)] == [mine.id]
        assert await debates.list_recent(session, workspace=t2) == []


async def test_feedback_on_an_evaluations_debate_is_no_label_unless_its_run_asked(
        db: Database) -> None:
    """An evaluation keeps its own books (docs/evaluation.md): readers' thumbs on its debates do
    not enter feedback agreement, unless the run counted in oversight (`eval --review`)."""
    origins = {"real": Origin(surface="api"),
               "own": Origin(surface="eval", evaluation_id="r1"),
               "asked": Origin(surface="eval", evaluation_id="r2", evaluation_review=True)}
    ids = {}
    now = utcnow()
    for name, origin in origins.items():
        added = await add_debate(db)
        async with db.transaction() as session:
            await debates.update_origin(session, added.id, origin)
            await feedback.put(session, debate_id=added.id, user_id="U1", team_id=None,
                               preset="decision", routing=Routing.AUTO_APPROVE,
                               rehearsal=False, now=now, rating="up")
        ids[added.id] = name
    async with db.transaction(readonly=True) as session:
        found = await feedback.labels(session, since=now - timedelta(seconds=1))
    assert sorted(ids[label.debate_id] for label in found) == ["asked", "real"]
