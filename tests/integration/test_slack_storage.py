"""storage/slack.py and migration 0002, on SQLite and (under make test) PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import inspect

from engine.domain import utcnow
from storage import slack as store
from storage.db import Database
from tests.support import storage_fixtures as fx
from tests.support.storage_fixtures import add_debate

database = fx.db  # a migrated database per backend


def seen(ts: str, text: str, thread_ts: str | None = None, channel: str = "C1"
         ) -> store.SeenMessage:
    return store.SeenMessage(channel_id=channel, ts=ts, thread_ts=thread_ts, user_id="U1",
                             text=text)


async def test_migration_creates_the_tables(database: Database) -> None:
    async with database.engine.connect() as connection:
        tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    assert {"slack_messages", "slack_threads"} <= tables


async def test_thread_messages_are_the_root_and_its_replies_in_order(database: Database) -> None:
    async with database.transaction() as session:
        for message in (seen("1700000002.000100", "reply 2", "1700000000.000100"),
                        seen("1700000000.000100", "root"),
                        seen("1700000001.000100", "reply 1", "1700000000.000100"),
                        seen("1700000001.000200", "other thread", "1700000000.999999"),
                        seen("1700000001.000300", "other channel", "1700000000.000100", "C2")):
            await store.remember_message(session, message)
        await store.remember_message(session, seen("1700000001.000100", "reply 1 (edited)",
                                                   "1700000000.000100"))
    async with database.transaction(readonly=True) as session:
        thread = await store.thread_messages(session, channel_id="C1",
                                             thread_ts="1700000000.000100")
    assert [m.text for m in thread] == ["root", "reply 1 (edited)", "reply 2"]


async def test_threads_map_to_their_debates(database: Database) -> None:
    first, second = await add_debate(database), await add_debate(database)
    now = utcnow()
    async with database.transaction() as session:
        await store.link_thread(session, channel_id="C1", thread_ts="1.1", debate_id=first.id,
                                now=now)
        await store.link_thread(session, channel_id="C1", thread_ts="1.1", debate_id=first.id)
        await store.link_thread(session, channel_id="C1", thread_ts="1.1", debate_id=second.id,
                                now=now + timedelta(seconds=1))
    async with database.transaction(readonly=True) as session:
        ids = await store.debates_in_thread(session, channel_id="C1", thread_ts="1.1")
        recent = await store.recent_in_channel(session, channel_id="C1")
        elsewhere = await store.recent_in_channel(session, channel_id="C2")
    assert ids == [second.id, first.id]
    assert [r.id for r in recent] == [second.id, first.id] and elsewhere == []


async def test_old_messages_can_be_forgotten(database: Database) -> None:
    async with database.transaction() as session:
        await store.remember_message(session, seen("1.1", "old"),
                                     now=utcnow() - timedelta(days=40))
        await store.remember_message(session, seen("1.2", "new"))
        assert await store.forget_messages(session, before=utcnow() - timedelta(days=30)) == 1


async def test_a_workspaces_refusal_to_stream_is_kept_moved_and_forgotten(
        database: Database) -> None:
    """Migration 0013: one row per team; a later refusal moves its time; allowing drops it."""
    learnt = utcnow() - timedelta(hours=3)
    async with database.transaction() as session:
        assert await store.streaming_refusal(session, "T1") is None
        await store.refuse_streaming(session, team_id="T1", error="not_allowed", now=learnt)
        await store.refuse_streaming(session, team_id="", error="unknown_method", now=learnt)
    async with database.transaction() as session:
        found = await store.streaming_refusal(session, "T1")
        assert found == store.StreamingRefusal("T1", "not_allowed", learnt)
        later = learnt + timedelta(hours=1)
        await store.refuse_streaming(session, team_id="T1", error="feature_not_enabled",
                                     now=later)
    async with database.transaction() as session:
        assert await store.streaming_refusal(session, "T1") == store.StreamingRefusal(
            "T1", "feature_not_enabled", later)
        await store.allow_streaming(session, "T1")
    async with database.transaction(readonly=True) as session:
        assert await store.streaming_refusal(session, "T1") is None
        assert (await store.streaming_refusal(session, "")) is not None   # others untouched
