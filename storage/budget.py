"""The daily budget, reserved in the database so every replica and worker sees the same money.

A debate holds money (its reservation, topped up within a margin while it runs), and each reply
it pays for is charged as it arrives: out of the hold, into the day's spend
(engine/money/spending.py says why the cap then holds for any input).

A day's row is created on first use and locked for each change (SELECT ... FOR UPDATE on
PostgreSQL; `BEGIN IMMEDIATE` already serialises writers on SQLite), so concurrent reservations
can never overshoot the cap; held to the commit, it is the lock all workers' money takes, so
callers move money last in a transaction. Every change is also a ledger row, and the day's totals
are always the ledger's sums:

    reserved_usd = sum(reserve) - sum(release)        spent_usd = sum(settle)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from typing import cast

from sqlalchemy import Table, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import utcnow
from engine.money.cost import Share, within_caps
from storage.arrays import PerDialect, among
from storage.db import dialect_of, ignoring_insert, write
from storage.journal import runs_last
from storage.models import BudgetDayRow, BudgetLedgerRow, DebateRow
from storage.tenancy import Workspace, owned_by
from storage.workspace_settings import daily_cap

RESERVE, RELEASE, SETTLE = "reserve", "release", "settle"
DEFAULT_ALERT_FRACTION = 0.8


@dataclass(frozen=True, slots=True)
class BudgetState:
    day: date
    cap_usd: float
    reserved_usd: float
    spent_usd: float
    remaining_usd: float
    fraction: float          # (reserved + spent) / cap
    alert_due: bool          # past the alert fraction and nobody has alerted yet today
    alerted: bool = False


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    day: date
    debate_id: str
    kind: str
    amount_usd: float
    at: datetime


def _state(
    day: date, cap: float, reserved: float, spent: float, alerted: bool, alert_fraction: float
) -> BudgetState:
    committed = reserved + spent
    if cap > 0:
        fraction = committed / cap
    else:
        fraction = 1.0 if committed > 0 else 0.0
    return BudgetState(
        day=day, cap_usd=cap, reserved_usd=round(reserved, 9), spent_usd=round(spent, 9),
        remaining_usd=round(max(cap - committed, 0.0), 9), fraction=fraction,
        alert_due=fraction >= alert_fraction and not alerted and committed > 0, alerted=alerted,
    )


def _row_state(row: BudgetDayRow, alert_fraction: float) -> BudgetState:
    return _state(row.day, row.cap_usd, row.reserved_usd, row.spent_usd, row.alerted,
                  alert_fraction)


async def _lock_day(session: AsyncSession, day: date, cap_usd: float | None) -> BudgetDayRow:
    """The day's row, created if missing, locked until the transaction ends. The row exists
    but for the first change of a day: it is read (and locked) first, created only if absent."""
    row = await _locked_day(session, day)
    if row is None:
        await write(session, ignoring_insert(session, BudgetDayRow, conflict=("day",)),
                    {"day": day, "cap_usd": cap_usd or 0.0, "reserved_usd": 0.0,
                     "spent_usd": 0.0, "alerted": False})
        row = await _locked_day(session, day)
    if row is None:  # cannot happen: inserted above, or already there
        raise LookupError(f"budget day {day} vanished")
    if cap_usd is not None:
        row.cap_usd = cap_usd  # the configured cap wins, even if it changed today
    return row


async def _locked_day(session: AsyncSession, day: date) -> BudgetDayRow | None:
    return await session.scalar(_LOCKED_DAY, {"day": day})


#: statements built once (their values passed as parameters: docs/benchmarks.md)
_LOCKED_DAY = (select(BudgetDayRow).where(BudgetDayRow.day == bindparam("day"))
               .with_for_update().execution_options(populate_existing=True))


@dataclass(frozen=True, slots=True)
class _DebateLedger:
    outstanding: dict[date, float]   # reserved and not yet released, per day
    settled_usd: float               # spend booked so far, all days
    settled: bool                    # any settle row at all


async def _debate_ledger(session: AsyncSession, debate_id: str) -> _DebateLedger:
    return (await _ledgers(session, {debate_id}))[debate_id]


async def _ledgers(session: AsyncSession, debate_ids: set[str]) -> dict[str, _DebateLedger]:
    """Each debate's holds and spend so far, from its ledger rows (one query for them all)."""
    rows = await write(session, _SUMS(session), {"ids": sorted(debate_ids)})
    held: dict[str, dict[date, float]] = {d: defaultdict(float) for d in debate_ids}
    settled_usd: dict[str, float] = defaultdict(float)
    settled: set[str] = set()
    for debate_id, day, kind, total in rows:
        amount = float(total or 0.0)
        if kind == SETTLE:
            settled_usd[debate_id] += amount
            settled.add(debate_id)
        else:
            held[debate_id][day] += amount if kind == RESERVE else -amount
    return {
        debate_id: _DebateLedger(
            {day: round(v, 9) for day, v in sorted(days.items()) if round(v, 9) > 0},
            round(settled_usd[debate_id], 9), debate_id in settled)
        for debate_id, days in held.items()
    }


async def _relocked(session: AsyncSession, before: dict[str, _DebateLedger]
                    ) -> dict[str, _DebateLedger]:
    """The ledgers read again now that their days are locked (another transaction may have
    changed them in between on PostgreSQL). On SQLite the writer's `BEGIN IMMEDIATE` held the
    database before the first read, so that read stands."""
    if dialect_of(session) == "sqlite":
        return before
    return await _ledgers(session, set(before))


def _record(session: AsyncSession, day: date, debate_id: str, kind: str, amount: float,
            now: datetime | None) -> None:
    session.add(BudgetLedgerRow(day=day, debate_id=debate_id, kind=kind, amount_usd=amount,
                                at=now or utcnow()))


async def reserve(
    session: AsyncSession, *, day: date, cap_usd: float, amount_usd: float, debate_id: str,
    alert_fraction: float = DEFAULT_ALERT_FRACTION, now: datetime | None = None,
    team_id: str | None = None,
) -> BudgetState:
    """Hold `amount_usd` of the day's cap for a debate; BudgetExceeded if it does not fit.
    A debate of workspace `team_id` must also fit that workspace's own cap, if it set one:
    read under the day's lock, which every reservation takes, so neither cap is overshot."""
    row = await _lock_day(session, day, cap_usd)
    within_caps(amount_usd, committed_usd=row.reserved_usd + row.spent_usd, cap_usd=cap_usd,
                workspace=await share(session, day, team_id))
    row.reserved_usd = round(row.reserved_usd + amount_usd, 9)
    _record(session, day, debate_id, RESERVE, amount_usd, now)
    await session.flush()
    return _row_state(row, alert_fraction)


async def held(session: AsyncSession, debate_id: str) -> float:
    """What the debate holds and has not spent, over every day it reserved on."""
    return round(sum((await _debate_ledger(session, debate_id)).outstanding.values()), 9)


async def held_batch(session: AsyncSession, debate_ids: list[str], fresh: bool
                     ) -> tuple[list[float], None]:
    """`held` of many debates in one query (a batch function of `lookups_for`: the debates a
    worker starts at the same moment read their holds together)."""
    ledgers = await _ledgers(session, set(debate_ids))
    return [round(sum(ledgers[d].outstanding.values()), 9) for d in debate_ids], None


async def spent(session: AsyncSession, debate_id: str) -> float:
    """What the debate's replies have been charged so far, over every day."""
    return (await _debate_ledger(session, debate_id)).settled_usd


async def reserved_total(session: AsyncSession, debate_id: str) -> float:
    """Everything ever held for a debate: its reservation and every top-up since, on every
    day and every run (what its per-debate ceiling bounds)."""
    total = await session.scalar(
        select(func.sum(BudgetLedgerRow.amount_usd))
        .where(BudgetLedgerRow.debate_id == debate_id, BudgetLedgerRow.kind == RESERVE))
    return round(float(total or 0.0), 9)


async def extend(
    session: AsyncSession, *, day: date, cap_usd: float, amount_usd: float, debate_id: str,
    now: datetime | None = None,
) -> float:
    """Hold up to `amount_usd` more for a running debate, as far as `day`'s cap has room;
    returns what was granted (0 when the day is full)."""
    row = await _lock_day(session, day, cap_usd)
    room = cap_usd - row.reserved_usd - row.spent_usd
    own = await share(session, day, await _team_of(session, debate_id))
    if own is not None:
        room = min(room, own.remaining_usd)
    granted = round(min(amount_usd, max(room, 0.0)), 9)
    if granted <= 0:
        return 0.0
    row.reserved_usd = round(row.reserved_usd + granted, 9)
    _record(session, day, debate_id, RESERVE, granted, now)
    await session.flush()
    return granted


@dataclass(frozen=True, slots=True)
class Charge:
    """A reply's cost to book: out of `debate_id`'s holds; what they do not cover, on `day`."""

    day: date
    debate_id: str
    amount_usd: float


async def charge(
    session: AsyncSession, *, day: date, debate_id: str, amount_usd: float,
    now: datetime | None = None,
) -> None:
    """Book a reply's cost as spent, out of what the debate holds (its oldest holds first, each
    day's spend where its hold was); what no hold covers is spent on `day`."""
    await charge_many(session, [Charge(day, debate_id, amount_usd)], now=now)


async def charge_many(session: AsyncSession, charges: list[Charge], *,
                      now: datetime | None = None) -> None:
    """`charge` for many replies at once (the journal's group commit, storage/journal.py): the
    debates' ledgers read in one query, the days changed once each, the ledger rows in one
    INSERT. On PostgreSQL the days are locked before the ledgers are read again under the lock;
    on SQLite `BEGIN IMMEDIATE` already holds the database, so each day is one UPDATE, unread."""
    totals: dict[tuple[str, date], float] = defaultdict(float)
    for item in charges:
        if item.amount_usd > 0:
            totals[(item.debate_id, item.day)] += item.amount_usd
    if not totals:
        return
    before = await _ledgers(session, {debate_id for debate_id, _ in totals})
    days = {day for _, day in totals} | {d for led in before.values() for d in led.outstanding}
    rows = await _lock_days(session, days) if dialect_of(session) != "sqlite" else None
    ledgers = await _relocked(session, before)
    at = now or utcnow()
    entries: list[dict[str, object]] = []
    moved: dict[date, list[float]] = defaultdict(lambda: [0.0, 0.0])  # day: [released, spent]
    for (debate_id, day), amount in totals.items():
        outstanding = ledgers[debate_id].outstanding
        left = round(amount, 9)
        for hold_day in sorted(outstanding):
            if left <= 0:
                break
            used = round(min(outstanding[hold_day], left), 9)
            outstanding[hold_day] = round(outstanding[hold_day] - used, 9)
            moved[hold_day][0] += used
            moved[hold_day][1] += used
            entries += [_entry(hold_day, debate_id, RELEASE, used, at),
                        _entry(hold_day, debate_id, SETTLE, used, at)]
            left = round(left - used, 9)
        if left > 0:
            moved[day][1] += left
            entries.append(_entry(day, debate_id, SETTLE, left, at))
    for day in sorted(moved):   # date order: no two transactions wait on each other in a circle
        released, spent = (round(v, 9) for v in moved[day])
        row = rows[day] if rows is not None else await _moved_unread(session, day, released,
                                                                      spent)
        if row is not None:
            row.reserved_usd = round(max(row.reserved_usd - released, 0.0), 9)
            row.spent_usd = round(row.spent_usd + spent, 9)
    await session.execute(insert(cast(Table, BudgetLedgerRow.__table__)), entries)  # Core
    await session.flush()


async def _moved_unread(session: AsyncSession, day: date, released: float, spent: float
                        ) -> BudgetDayRow | None:
    """SQLite: move money on `day`'s row in one UPDATE; the row to change in Python instead,
    locked and created, when it does not exist yet."""
    changed = await session.execute(_MOVE, {"on": day, "released": released, "spent": spent})
    return None if changed.rowcount else await _lock_day(session, day, None)   # type: ignore[attr-defined]


_DAYS = cast(Table, BudgetDayRow.__table__)
_MOVE = update(_DAYS).where(_DAYS.c.day == bindparam("on")).values(
    reserved_usd=func.round(func.max(_DAYS.c.reserved_usd - bindparam("released"), 0.0), 9),
    spent_usd=func.round(_DAYS.c.spent_usd + bindparam("spent"), 9))
_LEDGER = cast(Table, BudgetLedgerRow.__table__)
_BY = (_LEDGER.c.debate_id, _LEDGER.c.day, _LEDGER.c.kind)
_SUMS = PerDialect(lambda dialect: select(*_BY, func.sum(_LEDGER.c.amount_usd))
                   .where(among(_LEDGER.c.debate_id, "ids", dialect)).group_by(*_BY))


def _entry(day: date, debate_id: str, kind: str, amount: float, at: datetime
           ) -> dict[str, object]:
    return {"day": day, "debate_id": debate_id, "kind": kind, "amount_usd": amount, "at": at}


@runs_last   # the day's lock: after the batch's other writes
async def charge_batch(session: AsyncSession, charges: list[Charge], fresh: bool
                       ) -> tuple[list[None], None]:
    """`charge_many` as the journal's batch function."""
    await charge_many(session, charges)
    return [None] * len(charges), None


async def _lock_days(session: AsyncSession, days: set[date]) -> dict[date, BudgetDayRow]:
    """Lock day rows in date order, so two transactions never wait on each other in a circle."""
    return {day: await _lock_day(session, day, None) for day in sorted(days)}


async def _release_all(
    session: AsyncSession, rows: dict[date, BudgetDayRow], debate_id: str,
    outstanding: dict[date, float], now: datetime | None,
) -> None:
    for day, amount in outstanding.items():
        row = rows.get(day) or await _lock_day(session, day, None)
        row.reserved_usd = round(max(row.reserved_usd - amount, 0.0), 9)
        _record(session, day, debate_id, RELEASE, amount, now)


async def settle(
    session: AsyncSession, *, day: date, debate_id: str, actual_usd: float,
    alert_fraction: float = DEFAULT_ALERT_FRACTION, now: datetime | None = None,
) -> BudgetState:
    """Release the debate's reservations (whatever day they were made on) and book its spend
    on `day`. `actual_usd` is the debate's total cost to date (a resumed debate's result counts
    its reused steps too): only what was not booked before is added, so settling twice, or
    again after a retry, never counts a dollar twice."""
    before = await _debate_ledger(session, debate_id)
    rows = await _lock_days(session, {day, *before.outstanding})
    ledger = (await _relocked(session, {debate_id: before}))[debate_id]
    await _release_all(session, rows, debate_id, ledger.outstanding, now)
    extra = round(actual_usd - ledger.settled_usd, 9)
    if extra > 0 or not ledger.settled:
        rows[day].spent_usd = round(rows[day].spent_usd + max(extra, 0.0), 9)
        _record(session, day, debate_id, SETTLE, max(extra, 0.0), now)
    await session.flush()
    return _row_state(rows[day], alert_fraction)


async def release(
    session: AsyncSession, *, day: date, debate_id: str,
    alert_fraction: float = DEFAULT_ALERT_FRACTION, now: datetime | None = None,
) -> BudgetState:
    """Give back what the debate still holds (refused, or failed before starting), on every day
    it reserved on; returns `day`'s state. Releasing twice changes nothing."""
    before = await _debate_ledger(session, debate_id)
    rows = await _lock_days(session, {day, *before.outstanding})
    ledger = (await _relocked(session, {debate_id: before}))[debate_id]
    await _release_all(session, rows, debate_id, ledger.outstanding, now)
    await session.flush()
    return _row_state(rows[day], alert_fraction)


async def state(
    session: AsyncSession, day: date, *, cap_usd: float | None = None,
    alert_fraction: float = DEFAULT_ALERT_FRACTION,
) -> BudgetState:
    """The day's figures; `cap_usd` overrides the stored cap (e.g. before the first debate)."""
    row = await session.scalar(
        select(BudgetDayRow).where(BudgetDayRow.day == day)
        .execution_options(populate_existing=True)
    )
    if row is None:
        return _state(day, cap_usd or 0.0, 0.0, 0.0, False, alert_fraction)
    cap = row.cap_usd if cap_usd is None else cap_usd
    return _state(day, cap, row.reserved_usd, row.spent_usd, row.alerted, alert_fraction)


async def committed_many(session: AsyncSession, asked: list[tuple[date, float, str | None]],
                         fresh: bool = False) -> tuple[list[tuple[float, Share | None]], None]:
    """For each (day, cap, workspace): what is held and spent that day, and the workspace's own
    cap and share (None without one); storage/journal.py's batch-read shape, each distinct day
    and workspace read once (the estimates of a burst of /debate acks share one read)."""
    states: dict[tuple[date, float], BudgetState] = {}
    shares: dict[tuple[date, str | None], Share | None] = {}
    found: list[tuple[float, Share | None]] = []
    for day, cap_usd, team_id in asked:
        if (day, cap_usd) not in states:
            states[day, cap_usd] = await state(session, day, cap_usd=cap_usd)
        if (day, team_id) not in shares:
            shares[day, team_id] = await share(session, day, team_id)
        held = states[day, cap_usd]
        found.append((held.reserved_usd + held.spent_usd, shares[day, team_id]))
    return found, None


@dataclass(frozen=True, slots=True)
class WorkspaceSpend:
    """What one workspace's own debates hold and spent on a day (the ledger's sums over them)."""

    day: date
    reserved_usd: float
    spent_usd: float


async def workspace_spend(session: AsyncSession, day: date, workspace: Workspace
                          ) -> WorkspaceSpend:
    """The day's reservations and spend of the debates `workspace` may see, nobody else's."""
    rows = await session.execute(
        select(BudgetLedgerRow.kind, func.coalesce(func.sum(BudgetLedgerRow.amount_usd), 0.0))
        .join(DebateRow, DebateRow.id == BudgetLedgerRow.debate_id)
        .where(BudgetLedgerRow.day == day, owned_by(workspace))
        .group_by(BudgetLedgerRow.kind))
    sums = {str(kind): float(total) for kind, total in rows}
    reserved = sums.get(RESERVE, 0.0) - sums.get(RELEASE, 0.0)
    return WorkspaceSpend(day, round(max(reserved, 0.0), 9), round(sums.get(SETTLE, 0.0), 9))


async def share(session: AsyncSession, day: date, team_id: str | None) -> Share | None:
    """Workspace `team_id`'s own cap and what its debates hold and spent on `day`; None when
    it set no cap of its own (the operator's over everything is then its only one)."""
    cap = await daily_cap(session, team_id)
    if cap is None or not team_id:
        return None
    spend = await workspace_spend(session, day, Workspace(team_id))
    return Share(cap, round(spend.reserved_usd + spend.spent_usd, 9))


async def _team_of(session: AsyncSession, debate_id: str) -> str | None:
    team = await session.scalar(select(DebateRow.origin["team_id"].as_string())
                                .where(DebateRow.id == debate_id))
    return str(team) if team else None


async def mark_alerted(session: AsyncSession, day: date) -> bool:
    """Record that today's alert went out; False if another replica already did."""
    result = await session.execute(
        update(BudgetDayRow).where(BudgetDayRow.day == day, BudgetDayRow.alerted.is_(False))
        .values(alerted=True).returning(BudgetDayRow.day)
        .execution_options(synchronize_session=False)
    )
    return result.scalar_one_or_none() is not None


async def ledger(
    session: AsyncSession, *, day: date, debate_id: str | None = None
) -> list[LedgerEntry]:
    stmt = select(BudgetLedgerRow).where(BudgetLedgerRow.day == day)
    if debate_id is not None:
        stmt = stmt.where(BudgetLedgerRow.debate_id == debate_id)
    rows = await session.scalars(stmt.order_by(BudgetLedgerRow.id))
    return [LedgerEntry(day=r.day, debate_id=r.debate_id, kind=r.kind, amount_usd=r.amount_usd,
                        at=r.at) for r in rows]
