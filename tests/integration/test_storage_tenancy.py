"""Whose a record is, in storage, on SQLite and PostgreSQL: a workspace lists its own debates,
its own pending reviews, its own threads and its own day's spend; never another workspace's nor
the operator's, except the operator's scheduled posts in the home workspace's channels."""

from __future__ import annotations

from engine.domain import utcnow
from storage import budget, debates, reviews
from storage import slack as slack_store
from storage.db import Database
from storage.records import Origin
from storage.tenancy import Workspace
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

db = fx.db  # fixture (until conftest.py imports it)

HOME = Workspace("T1", home=True)
OTHER = Workspace("T2")
ORIGINS = {
    "home": Origin(surface="slack", team_id="T1", channel_id="C1"),
    "other": Origin(surface="slack", team_id="T2", channel_id="C1"),   # a shared channel
    "api": Origin(surface="api"),
    "digest": Origin(surface="schedule", schedule_id="morning", channel_id="C1"),
    "eval": Origin(surface="eval"),
}


async def _seed(db: Database) -> dict[str, str]:
    ids = {}
    for n, (name, origin) in enumerate(ORIGINS.items()):
        added = await add_debate(db, f"Topic {name}?", seconds_ago=100 - n)
        async with db.transaction() as session:
            await debates.update_origin(session, added.id, origin)
            await slack_store.link_thread(session, channel_id="C1", thread_ts="1.0",
                                          debate_id=added.id)
            await reviews.create(session, debate_id=added.id, reason="split panel")
        ids[name] = added.id
    return ids


async def test_each_workspace_lists_its_own_records_only(db: Database) -> None:
    ids = await _seed(db)
    async with db.transaction(readonly=True) as session:
        def names(found: list[str]) -> set[str]:
            return {name for name, i in ids.items() if i in found}

        assert names([d.id for d in await debates.list_recent(session, workspace=HOME)]) == {
            "home", "digest"}
        assert names([d.id for d in await debates.list_recent(session, workspace=OTHER)]) == {
            "other"}
        assert len(await debates.list_recent(session)) == len(ORIGINS)   # the operator's view
        for workspace, expected in ((HOME, {"home", "digest"}), (OTHER, {"other"})):
            pending = await reviews.list_pending(session, workspace=workspace)
            assert names([r.debate_id for r in pending]) == expected
            threads = await slack_store.debates_in_thread(session, channel_id="C1",
                                                          thread_ts="1.0", workspace=workspace)
            assert names(threads) == expected
            listed = await slack_store.recent_in_channel(session, channel_id="C1",
                                                         workspace=workspace)
            assert names([d.id for d in listed]) == expected
            for name, debate_id in ids.items():
                seen = await debates.visible(session, debate_id, workspace)
                assert (seen is not None) == (name in expected), (workspace, name)


async def test_a_workspace_spend_is_its_own_debates_only(db: Database) -> None:
    ids = await _seed(db)
    day = utcnow().date()
    async with db.transaction() as session:
        for name, amount in (("home", 0.30), ("other", 5.0), ("api", 7.0), ("digest", 0.05)):
            await budget.reserve(session, day=day, cap_usd=100.0, amount_usd=amount,
                                 debate_id=ids[name])
        await budget.charge(session, day=day, debate_id=ids["home"], amount_usd=0.10)
        await budget.charge(session, day=day, debate_id=ids["api"], amount_usd=3.0)
    async with db.transaction(readonly=True) as session:
        home = await budget.workspace_spend(session, day, HOME)
        other = await budget.workspace_spend(session, day, OTHER)
        total = await budget.state(session, day)
    assert (round(home.spent_usd, 6), round(home.reserved_usd, 6)) == (0.10, 0.25)  # 0.20 + digest
    assert (round(other.spent_usd, 6), round(other.reserved_usd, 6)) == (0.0, 5.0)
    assert round(total.spent_usd, 6) == 3.10   # the operator's day holds everyone's
