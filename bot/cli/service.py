"""`dialectic serve`, `worker`, `mcp`, `db upgrade`, `list`, `audit verify` and `replay`: the
service's commands. Serving, working and MCP are the composition root's (the `Host`); the rest
talk to the database."""

from __future__ import annotations

import argparse
import asyncio

from bot.cli.debate import exit_code
from bot.cli.host import CliContext, require_database
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.progress import print_estimate, print_summary
from bot.service.results import marks, routed_by, status_words
from engine.errors import InvalidRequest
from engine.money.cost import estimate_range
from storage import audit, debates
from storage.db import Database
from storage.records import DebateRecord

REPLAY_POLL = 0.2
TOPIC_SHOWN = 70
MAX_LISTED = 500


async def serve(ctx: CliContext, args: argparse.Namespace) -> int:
    ctx.host.setup_logging(ctx.settings)
    await ctx.host.serve(ctx.settings, host=args.host, port=args.port)
    return EXIT_OK


async def work(ctx: CliContext, args: argparse.Namespace) -> int:
    ctx.host.setup_logging(ctx.settings)
    await ctx.host.work(ctx.settings, concurrency=args.concurrency)
    return EXIT_OK


async def mcp(ctx: CliContext, args: argparse.Namespace) -> int:
    ctx.host.setup_logging(ctx.settings)
    await ctx.host.mcp(ctx.settings, workers=args.workers)
    return EXIT_OK


async def db(ctx: CliContext, args: argparse.Namespace) -> int:
    ctx.host.setup_logging(ctx.settings)
    database = Database(ctx.settings.storage.database_url)
    try:
        await database.upgrade()
    finally:
        await database.dispose()
    ctx.console.print("database is at the latest migration")
    return EXIT_OK


async def list_debates(ctx: CliContext, args: argparse.Namespace) -> int:
    """One line a debate, newest first; a finished debate with parts missing says so."""
    require_database(ctx.settings.storage)
    database = Database(ctx.settings.storage.database_url)
    try:
        async with database.transaction(readonly=True) as session:
            records = await debates.list_recent(session, status=args.status,
                                                limit=min(max(args.limit, 1), MAX_LISTED))
    finally:
        await database.dispose()
    if not records:
        ctx.console.print("no debates" + (f" {args.status}" if args.status else "") +
                          f" in the database {database.where}", markup=False)
    rehearsal = ctx.settings.engine.is_rehearsal
    rows = [_list_row(r, rehearsal=rehearsal) for r in records]
    header = ("id", "status", "mode", "cost", "topic  [what to know]")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for n, row in enumerate([header, *rows] if rows else []):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        ctx.console.print("  ".join([*cells, row[-1]]), markup=False, soft_wrap=True,
                          style="bold" if n == 0 else None)
    return EXIT_OK


def _list_row(r: DebateRecord, *, rehearsal: bool) -> tuple[str, ...]:
    """`list`'s cells for one debate; the columns are as wide as their longest cell."""
    topic = r.request.topic if len(r.request.topic) <= TOPIC_SHOWN else (
        r.request.topic[:TOPIC_SHOWN - 1] + "…")
    notes = "; ".join(m.text for m in marks(r, rehearsal=rehearsal))
    return (r.id, status_words(r.status, r.result), r.mode, f"${r.cost_usd:.4f}",
            topic + (f"  [{notes}]" if notes else ""))


async def audit_command(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    database = Database(ctx.settings.storage.database_url)
    try:
        async with database.transaction() as session:
            if args.debate_id is not None and not await debates.exists(session, args.debate_id):
                raise InvalidRequest(f"no debate {args.debate_id!r} in the database "
                                     f"{database.where}")
            report = await audit.verify(session, args.debate_id)
    finally:
        await database.dispose()
    if report.ok:
        chains = "1 chain" if report.chains_checked == 1 else f"{report.chains_checked} chains"
        events = "1 event" if report.events_checked == 1 else f"{report.events_checked} events"
        ctx.console.print(f"audit chain intact: {chains}, {events}")
        return EXIT_OK
    assert report.first_broken is not None
    chain, seq, reason = report.first_broken
    ctx.console.print(f"audit chain BROKEN: chain {chain}, event {seq}: {reason}", markup=False)
    return EXIT_NOT_COMPLETED


async def replay(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    async with ctx.host.hosted(ctx.settings, workers=1 if args.wait else 0) as hosted:
        service = hosted.rt.service
        sub = await service.replay(args.debate_id, more_rounds=args.rounds,
                                   synthesizer=args.synthesizer, actor="cli",
                                   no_cache=args.no_cache)
        if sub.cached:
            ctx.console.print(f"the same replay of {args.debate_id} finished within the cache "
                              f"window: replay {sub.record.id} answers it "
                              f"({status_words(sub.record.status, sub.record.result)}), "
                              "0 new calls, $0 (--no-cache replays anew)", markup=False)
        else:
            ctx.console.print(f"replay {sub.record.id} of {args.debate_id} queued: "
                              f"{sub.estimate.reused} steps read from the source, "
                              f"{sub.estimate.calls} new calls (estimate "
                              f"{estimate_range(sub.estimate)})", markup=False)
        print_estimate(ctx.console, sub.estimate)
        if not args.wait and not sub.cached:
            ctx.console.print("a running `dialectic serve` or `dialectic worker` will run it")
            return EXIT_OK
        hosted.rt.notify_workers()
        while (record := await service.get(sub.record.id)).result is None:
            await asyncio.sleep(REPLAY_POLL)
    assert record.result is not None
    print_summary(ctx.console, record.result, routed_by(ctx.settings.engine, record.result),
                  stored=status_words(record.status, record.result))
    return exit_code(record.result.status, complete=record.result.complete)
