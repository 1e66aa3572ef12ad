"""Debates: create, idempotency, the lifecycle and its audit trail, the result cache."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import func, select

from engine.domain import DebateResult, utcnow
from storage import audit, debates
from storage.db import Database
from storage.errors import AlreadyExists, IllegalTransition, NotFound
from storage.journal import journal_for
from storage.models import AuditEventRow
from storage.records import DebateStatus, Origin
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate, make_record

db = fx.db  # fixture (until conftest.py imports it)


async def test_create_and_get_round_trip(db: Database) -> None:
    record = make_record(parent_id="p1", downgraded_from="consensus")
    async with db.transaction() as session:
        created = await debates.create(session, record=record, topic_key="k1")
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
    assert stored == created
    assert stored.model_dump() == record.model_dump()


async def test_create_starts_the_audit_chain(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction(readonly=True) as session:
        chain = await audit.events(session, record.id)
    assert [(e.seq, e.kind, e.actor) for e in chain] == [(1, "debate_created", "U123")]
    assert chain[0].data["status"] == "queued"


async def test_get_unknown_raises_not_found(db: Database) -> None:
    async with db.transaction(readonly=True) as session:
        with pytest.raises(NotFound, match="debate nope not found"):
            await debates.get(session, "nope")


async def test_duplicate_idempotency_key_names_the_existing_debate(db: Database) -> None:
    async with db.transaction() as session:
        first = await debates.create(session, record=make_record(), topic_key="k",
                                     idempotency_key="slack:T1:abc")
    async with db.transaction() as session:
        with pytest.raises(AlreadyExists) as caught:
            await debates.create(session, record=make_record(), topic_key="k",
                                 idempotency_key="slack:T1:abc")
        # the savepoint kept the caller's transaction usable, on PostgreSQL too
        assert len(await debates.list_recent(session)) == 1
    assert caught.value.existing_id == first.id
    assert caught.value.constraint == "uq_debates_idempotency_key"


async def test_concurrent_creates_with_one_idempotency_key_make_one_debate(db: Database) -> None:
    async def submit() -> str:
        try:
            async with db.transaction() as session:
                created = await debates.create(session, record=make_record(), topic_key="k",
                                               idempotency_key="api:retry-me")
        except AlreadyExists as exc:
            assert exc.existing_id is not None
            return "dup:" + exc.existing_id
        return created.id

    outcomes = await asyncio.gather(*(submit() for _ in range(5)))
    winners = [o for o in outcomes if not o.startswith("dup:")]
    assert len(winners) == 1
    assert {o.removeprefix("dup:") for o in outcomes} == set(winners)


async def test_duplicate_id_is_already_exists(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        with pytest.raises(AlreadyExists) as caught:
            await debates.create(session, record=record, topic_key="k")
    assert caught.value.existing_id == record.id


async def test_list_recent_filters_and_orders_newest_first(db: Database) -> None:
    old = await add_debate(db, "old", seconds_ago=60, requested_by="U1")
    mid = await add_debate(db, "mid", seconds_ago=30, requested_by="U2")
    new = await add_debate(db, "new", requested_by="U1")
    async with db.transaction() as session:
        await debates.transition(session, mid.id, DebateStatus.FAILED, actor="t", error="boom")
        everything = await debates.list_recent(session)
        failed = await debates.list_recent(session, status="failed")
        mine = await debates.list_recent(session, requested_by="U1", limit=1)
    assert [r.id for r in everything] == [new.id, mid.id, old.id]
    assert [r.id for r in failed] == [mid.id]
    assert [r.id for r in mine] == [new.id]


async def test_legal_path_is_applied_and_audited(db: Database) -> None:
    record = await add_debate(db)
    result = DebateResult(id=record.id, status="completed", mode="simple", topic="t",
                          verdict="pro wins")
    path = [DebateStatus.DEBATING, DebateStatus.JUDGING, DebateStatus.COMPLETED,
            DebateStatus.AWAITING_REVIEW, DebateStatus.APPROVED]
    async with db.transaction() as session:
        await debates.transition(session, record.id, path[0], actor="w1", started_at=utcnow())
        await debates.transition(session, record.id, path[1], actor="w1")
        await debates.transition(session, record.id, path[2], actor="w1", result=result,
                                 cost_usd=0.042, reason="done")
        await debates.transition(session, record.id, path[3], actor="service")
        final = await debates.transition(session, record.id, path[4], actor="U9", reason="ok")
    assert final.status is DebateStatus.APPROVED
    assert final.result == result and final.cost_usd == 0.042
    assert final.finished_at is not None and final.started_at is not None
    async with db.transaction(readonly=True) as session:
        chain = await audit.events(session, record.id)
        report = await audit.verify(session, record.id)
    changes = [(e.data["from"], e.data["to"], e.actor) for e in chain if e.kind == "status_changed"]
    assert changes == [
        ("queued", "debating", "w1"), ("debating", "judging", "w1"),
        ("judging", "completed", "w1"), ("completed", "awaiting_review", "service"),
        ("awaiting_review", "approved", "U9"),
    ]
    assert chain[3].data["reason"] == "done"
    assert report.ok and report.events_checked == 6


async def test_illegal_transition_is_refused_and_changes_nothing(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction(readonly=True) as session:
        before = await debates.get(session, record.id)
        links = await session.scalar(select(func.count()).select_from(AuditEventRow))
    with pytest.raises(IllegalTransition, match="queued -> approved") as caught:
        async with db.transaction() as session:
            await debates.transition(session, record.id, DebateStatus.APPROVED, actor="U1",
                                     error="should not stick")
    assert (caught.value.current, caught.value.target) == ("queued", "approved")
    async with db.transaction(readonly=True) as session:
        assert await debates.get(session, record.id) == before
        assert await session.scalar(select(func.count()).select_from(AuditEventRow)) == links


async def test_transition_refuses_unknown_fields(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        with pytest.raises(TypeError, match="topic"):
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w",
                                     topic="rewritten")


async def test_requeue_clears_the_lease_and_finish(db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w",
                                 lease_owner="w", lease_expires_at=utcnow())
        failed = await debates.transition(session, record.id, DebateStatus.FAILED, actor="w")
        again = await debates.transition(session, record.id, DebateStatus.QUEUED, actor="U1")
    assert failed.finished_at is not None and failed.lease_owner is None
    assert again.finished_at is None and again.lease_expires_at is None


async def test_update_origin(db: Database) -> None:
    record = await add_debate(db)
    origin = Origin(surface="slack", channel_id="C9", thread_ts="2.0", status_ts="3.0")
    async with db.transaction() as session:
        await debates.update_origin(session, record.id, origin)
    async with db.transaction(readonly=True) as session:
        assert (await debates.get(session, record.id)).origin == origin


async def test_find_cached_returns_the_newest_usable_result(db: Database) -> None:
    since = utcnow() - timedelta(minutes=5)
    stale = await add_debate(db, topic_key="tk", seconds_ago=600)
    older = await add_debate(db, topic_key="tk", seconds_ago=120)
    newer = await add_debate(db, topic_key="tk", seconds_ago=60)
    failed = await add_debate(db, topic_key="tk", seconds_ago=1)
    other = await add_debate(db, topic_key="other", seconds_ago=1)
    async with db.transaction() as session:
        for record in (stale, older, newer, other):
            result = DebateResult(id=record.id, status="completed", mode="simple", topic="t")
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w")
            await debates.transition(session, record.id, DebateStatus.COMPLETED, actor="w",
                                     result=result)
        await debates.transition(session, failed.id, DebateStatus.FAILED, actor="w")
    async with db.transaction(readonly=True) as session:
        hit = await debates.find_cached(session, topic_key="tk", since=since)
        miss = await debates.find_cached(session, topic_key="none", since=since)
    assert hit is not None and hit.id == newer.id
    assert miss is None


def test_topic_key_normalises_case_space_and_punctuation() -> None:
    from engine.domain import DebateRequest

    a = DebateRequest(topic="Should we  move billing to PostgreSQL?", mode="simple")
    b = DebateRequest(topic="should we move billing to postgresql", mode="simple")
    c = DebateRequest(topic="should we move billing to postgresql", mode="consensus")
    assert debates.topic_key(a, "default") == debates.topic_key(b, "default")
    assert debates.topic_key(a, "default") != debates.topic_key(c, "default")
    assert debates.topic_key(a, "default") != debates.topic_key(a, "market")


async def test_advance_moves_only_from_its_source_status_and_audits_as_transition(
        db: Database) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:   # queued, not debating: nothing happens
        moved = await debates.advance(session, record.id, DebateStatus.DEBATING,
                                      DebateStatus.JUDGING, actor="engine", reason="r")
    assert moved is False
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w1")
    async with db.transaction() as session:
        moved = await debates.advance(session, record.id, DebateStatus.DEBATING,
                                      DebateStatus.JUDGING, actor="engine",
                                      reason="judging started")
        again = await debates.advance(session, record.id, DebateStatus.DEBATING,
                                      DebateStatus.JUDGING, actor="engine")
        unknown = await debates.advance(session, "no-such-debate", DebateStatus.DEBATING,
                                        DebateStatus.JUDGING, actor="engine")
    assert (moved, again, unknown) == (True, False, False)
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
        chain = await audit.events(session, record.id)
        report = await audit.verify(session, record.id)
    assert stored.status is DebateStatus.JUDGING and stored.updated_at >= record.updated_at
    last = chain[-1]
    assert (last.kind, last.actor, last.data) == (
        "status_changed", "engine", {"from": "debating", "to": "judging",
                                     "reason": "judging started"})
    assert report.ok and len(chain) == 3


async def test_advance_soon_moves_debates_advancing_at_once_in_one_transaction(
        db: Database) -> None:
    """Debates reaching their judging together are moved in one of the journal's transactions,
    each audited as `advance` audits; one no longer in its source is left as it is, and a move
    the lifecycle forbids is refused before anything is submitted."""
    records = [await add_debate(db) for _ in range(5)]
    async with db.transaction() as session:
        for record in records[:4]:
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w1")
    journal = journal_for(db)
    before = journal.transactions
    moved = await asyncio.gather(*(
        debates.advance_soon(db, record.id, DebateStatus.DEBATING, DebateStatus.JUDGING,
                             actor="engine", reason="judging started") for record in records))
    assert moved == [True, True, True, True, False]
    assert journal.transactions == before + 1
    with pytest.raises(IllegalTransition):
        await debates.advance_soon(db, records[0].id, DebateStatus.JUDGING,
                                   DebateStatus.COMPLETED, actor="engine")
    assert journal.transactions == before + 1
    async with db.transaction(readonly=True) as session:
        for record, was_moved in zip(records, moved, strict=True):
            stored = await debates.get(session, record.id)
            chain = await audit.events(session, record.id)
            assert (await audit.verify(session, record.id)).ok
            if not was_moved:
                assert stored.status is DebateStatus.QUEUED
                continue
            assert stored.status is DebateStatus.JUDGING
            assert (chain[-1].kind, chain[-1].actor, chain[-1].data) == (
                "status_changed", "engine", {"from": "debating", "to": "judging",
                                             "reason": "judging started"})


async def test_a_transition_then_another_is_one_update_audited_as_two(db: Database) -> None:
    """A finish routed to its reviewers: completed, then awaiting review, written to the row
    once and audited as the two transitions it was made of; a second move the lifecycle
    forbids writes neither, and only a finished status may follow a finished one."""
    record = await add_debate(db)
    async with db.transaction() as session:
        await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w1",
                                 lease_owner="w1")
    with pytest.raises(IllegalTransition):
        async with db.transaction() as session:
            await debates.transition_then(session, record.id, DebateStatus.COMPLETED,
                                          DebateStatus.QUEUED, actor="w1", then_reason="again")
    with pytest.raises(ValueError):
        async with db.transaction() as session:
            await debates.transition_then(session, record.id, DebateStatus.TIMED_OUT,
                                          DebateStatus.QUEUED, actor="w1", then_reason="again")
    updates: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("UPDATE DEBATES"):
            updates.append(statement)

    sa_event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with db.transaction() as session:
            moved = await debates.transition_then(
                session, record.id, DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW,
                actor="w1", reason="done", then_reason="judges split", cost_usd=0.25)
    finally:
        sa_event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    assert len(updates) == 1
    async with db.transaction(readonly=True) as session:
        stored = await debates.get(session, record.id)
        chain = await audit.events(session, record.id)
        assert (await audit.verify(session, record.id)).ok
    assert moved == stored
    assert stored.status is DebateStatus.AWAITING_REVIEW and stored.cost_usd == 0.25
    assert stored.lease_owner is None and stored.finished_at is not None
    assert [(e.kind, e.data) for e in chain[-2:]] == [
        ("status_changed", {"from": "debating", "to": "completed", "reason": "done"}),
        ("status_changed", {"from": "completed", "to": "awaiting_review",
                            "reason": "judges split"})]


@pytest.mark.parametrize("source,to", [(DebateStatus.DEBATING, DebateStatus.COMPLETED),
                                       (DebateStatus.JUDGING, DebateStatus.QUEUED),
                                       (DebateStatus.QUEUED, DebateStatus.JUDGING)])
async def test_advance_refuses_what_stamps_more_than_a_status(
        db: Database, source: DebateStatus, to: DebateStatus) -> None:
    record = await add_debate(db)
    with pytest.raises(IllegalTransition):
        async with db.transaction() as session:
            await debates.advance(session, record.id, source, to, actor="engine")


async def test_judge_ratings_read_what_the_records_say_for_calibration(db: Database) -> None:
    """Judge calibration's history read from the stored results (storage/debates.py
    `judge_ratings`) is what the whole records say: the newest `limit` debates, then only those
    in oversight (an evaluation's unless it asked for review), with a panel, no rehearsal."""
    from engine.domain import ConsensusSummary

    def panel(ratings: dict[str, list[float | None]]) -> ConsensusSummary:
        return ConsensusSummary(alpha=0.5, ratings=ratings, judges=list(ratings))

    cases = [   # oldest first: (origin, consensus, rehearsal)
        (Origin(surface="slack"), panel({"tech": [8, 7], "risk": [6, None]}), False),
        (Origin(surface="eval", evaluation_id="e1"), panel({"tech": [1, 1]}), False),
        (Origin(surface="eval", evaluation_id="e2", evaluation_review=True),
         panel({"tech": [9.5, 2], "cost": [4, 4]}), False),
        (Origin(surface="api"), panel({"risk": [3, 3]}), True),
        (Origin(surface="terminal"), None, False),
        (Origin(surface="terminal"), panel({"risk": [7, 5]}), False),
    ]
    for age, (origin, consensus, rehearsal) in enumerate(reversed(cases)):
        record = make_record(created_at=utcnow() - timedelta(seconds=age)).model_copy(
            update={"origin": origin})
        async with db.transaction() as session:
            await debates.create(session, record=record, topic_key="k")
        result = DebateResult(id=record.id, status="completed", mode="consensus", topic="t",
                              consensus=consensus, rehearsal=rehearsal)
        async with db.transaction() as session:
            await debates.transition(session, record.id, DebateStatus.DEBATING, actor="w")
            await debates.transition(session, record.id, DebateStatus.COMPLETED, actor="w",
                                     result=result)
    for limit in (50, 4, 1):
        async with db.transaction(readonly=True) as session:
            found = await debates.judge_ratings(session, limit=limit)
            records = await debates.list_recent(session, limit=limit)
        expected = [r.result.consensus.ratings for r in records
                    if r.result is not None and r.result.consensus is not None
                    and not r.result.rehearsal and r.origin.in_oversight]
        assert found == expected
    assert found == [{"risk": [7, 5]}]
    async with db.transaction(readonly=True) as session:
        assert await debates.judge_ratings(session) == [
            {"risk": [7, 5]}, {"tech": [9.5, 2], "cost": [4, 4]},
            {"tech": [8, 7], "risk": [6, None]}]
