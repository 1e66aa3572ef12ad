"""What becomes of a workspace's data when it uninstalls the app (or revokes the bot token), and
the operator's purge (`dialectic workspaces purge`): one path for both.

Always, in one transaction with a `workspace_uninstalled` link on the global audit chain: its
queued and running debates are cancelled, their holds given back to the day; what its debates
still owe Slack is closed undelivered; its Slack starts not yet through are ended. Then, with
DIALECTIC_UNINSTALL_DATA=purge (or the operator's command), everything written for it is erased
in batches (storage/purges.py). Each batch is one transaction that also deletes the batch's
debates' audit chains and appends to the global chain a `workspace_purge_batch` link naming the
workspace, the rows erased and each deleted chain's length and final hash, so `dialectic audit
verify` still checks every chain that remains and the erasure itself is attested. A purge is
recorded before its first batch (`workspace_purges`): a restart (housekeeping, at start and
hourly) finishes a purge a crash cut short, and running a finished one again erases what came
since. A running debate is erased once its lease has run out (its worker has stopped it). The
budget ledger is kept: a purge erases content, not money.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

from engine.characters import require_visible
from engine.errors import InvalidRequest
from storage import audit, purges
from storage.db import Database
from storage.purges import Stopped as Stopped

log = logging.getLogger("dialectic.workspaces")

UninstallData = Literal["keep", "purge"]
UNINSTALL_DATA: tuple[str, ...] = get_args(UninstallData)
BATCH = 50
UNINSTALLED = "the workspace uninstalled the app"
PURGED = "the operator purges the workspace's data"
BLANK_REASON = "say why the workspace's data is purged (--reason with visible text)"
Clock = Callable[[], datetime]
TEAM_ID = re.compile(r"[TE][A-Z0-9]{1,31}")
MAX_REASON = 1000   # characters of a purge's reason kept


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """Where a purge stands: `done`, or `waiting` debates still running (their leases not yet
    over); `counts`: rows erased so far, by table."""

    team_id: str
    done: bool
    waiting: int = 0
    counts: dict[str, int] = field(default_factory=dict)


async def uninstalled(db: Database, *, team_id: str, enterprise_id: str | None,
                      data: UninstallData, clock: Clock, actor: str = "slack",
                      lease_seconds: float = 0.0) -> Stopped:
    """The workspace uninstalled the app (its tokens are gone already): stop its work and, if
    configured, purge its data: now, and once more after `lease_seconds` if a debate was still
    running (its worker has stopped it by then); housekeeping finishes anything left."""
    now = clock()
    async with db.transaction() as session:
        stopped = await purges.stop(session, team_id, why=UNINSTALLED, actor=actor, now=now)
        await audit.append(session, debate_id=None, kind="workspace_uninstalled", actor=actor,
                           data={"team_id": team_id, "enterprise_id": enterprise_id,
                                 "data": data, "cancelled": list(stopped.cancelled),
                                 "released_usd": stopped.released_usd,
                                 "deliveries_dropped": stopped.deliveries,
                                 "starts_dropped": stopped.starts}, at=now)
        if data == "purge":
            await purges.begin(session, team_id=team_id, requested_by=actor, now=now,
                               reason=f"{UNINSTALLED} (DIALECTIC_UNINSTALL_DATA=purge)")
    log.info("workspace %s uninstalled: %d debates cancelled (%.4f USD of holds released), "
             "%d deliveries and %d Slack starts dropped; its data is %s", team_id,
             len(stopped.cancelled), stopped.released_usd, stopped.deliveries, stopped.starts,
             "being purged" if data == "purge" else "kept")
    if data == "purge":
        report = await purge(db, team_id, clock=clock)
        if not report.done and lease_seconds > 0:
            await asyncio.sleep(lease_seconds)
            await purge(db, team_id, clock=clock)
    return stopped


async def request_purge(db: Database, team_id: str, *, reason: str, actor: str, clock: Clock,
                        force: bool = False) -> PurgeReport:
    """The operator's purge: refused for an installed workspace unless `force`d; its unfinished
    work stopped first (as an uninstall does), then erased."""
    team_id = checked_team(team_id)
    why = require_visible(reason, BLANK_REASON)[:MAX_REASON]
    now = clock()
    async with db.transaction() as session:
        installed = await purges.installed(session, team_id)
        if installed and not force:
            raise InvalidRequest(f"workspace {team_id} is installed: uninstall the app there "
                                 f"first, or pass --force to purge its data while it stays "
                                 f"installed")
        stopped = await purges.stop(session, team_id, why=PURGED, actor=actor, now=now)
        await audit.append(session, debate_id=None, kind="workspace_purge_requested",
                           actor=actor, data={"team_id": team_id, "reason": why,
                                              "installed": installed,
                                              "cancelled": list(stopped.cancelled),
                                              "released_usd": stopped.released_usd}, at=now)
        await purges.begin(session, team_id=team_id, reason=why, requested_by=actor, now=now)
    return await purge(db, team_id, clock=clock)


def checked_team(team_id: str) -> str:
    """A Slack team id (T…, or E… for an organisation), or InvalidRequest saying so."""
    if not TEAM_ID.fullmatch(team_id):
        raise InvalidRequest(f"{team_id[:40]!r} is not a Slack team id (such as T0123ABC)")
    return team_id


async def survey(db: Database, team_id: str, *, clock: Clock) -> tuple[bool, dict[str, int]]:
    """Whether the workspace is installed, and what a purge would erase now (a dry run:
    nothing changes)."""
    team_id = checked_team(team_id)
    async with db.transaction(readonly=True) as session:
        return (await purges.installed(session, team_id),
                await purges.census(session, team_id, now=clock()))


async def purge_batch(db: Database, team_id: str, *, clock: Clock, limit: int = BATCH
                      ) -> int:
    """Erase the next `limit` settled debates of the workspace, their chains attested in the
    global one, in one transaction; how many were erased (0: none left to erase now)."""
    async with db.transaction() as session:
        ids = await purges.erasable(session, team_id, now=clock(), limit=limit)
        if not ids:
            return 0
        ends = await audit.erase_chains(session, ids)
        counts = await purges.erase_debates(session, ids)
        counts["audit_events"] = sum(end.seq for end in ends.values())
        await purges.add_counts(session, team_id, counts)
        await audit.append(session, debate_id=None, kind="workspace_purge_batch",
                           actor="purge", data={
                               "team_id": team_id, "rows": counts,
                               "chains": {d: {"links": e.seq, "last_hash": e.hash}
                                          for d, e in sorted(ends.items())}})
    return len(ids)


async def purge(db: Database, team_id: str, *, clock: Clock, limit: int = BATCH
                ) -> PurgeReport:
    """Run the workspace's purge as far as it can go now: every settled debate in batches,
    then (nothing left running) the workspace's own rows, and the purge marked done."""
    while await purge_batch(db, team_id, clock=clock, limit=limit):
        pass
    async with db.transaction() as session:
        waiting = await purges.remaining(session, team_id)
        if waiting:
            found = await purges.get(session, team_id)
            return PurgeReport(team_id, False, waiting, found.counts if found else {})
        rows = await purges.erase_workspace_rows(session, team_id)
        await purges.add_counts(session, team_id, rows)
        found = await purges.get(session, team_id)
        counts = found.counts if found else rows
        await purges.finish(session, team_id, now=clock())
        await audit.append(session, debate_id=None, kind="workspace_purged", actor="purge",
                           data={"team_id": team_id, "rows": counts,
                                 "reason": found.reason if found else "",
                                 "requested_by": found.requested_by if found else ""})
    log.info("workspace %s purged: %s", team_id,
             ", ".join(f"{n} {table}" for table, n in sorted(counts.items()) if n) or "nothing")
    return PurgeReport(team_id, True, 0, counts)


async def resume(db: Database, *, clock: Clock) -> dict[str, int]:
    """Finish the purges a crash (or a still-running debate) left unfinished: what a restart,
    and hourly housekeeping, does. Rows erased, by kind, for the housekeeping log."""
    async with db.transaction(readonly=True) as session:
        unfinished = await purges.running(session)
    erased: dict[str, int] = {}
    for job in unfinished:
        before = sum(job.counts.values())
        report = await purge(db, job.team_id, clock=clock)
        erased[f"rows of purged workspace {job.team_id}"] = sum(report.counts.values()) - before
    return erased
