"""`dialectic workspaces purge TEAM_ID --reason "..."`: erase a workspace's data (the path an
uninstall with DIALECTIC_UNINSTALL_DATA=purge takes: bot/service/uninstalls.py)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext, require_database
from bot.service import uninstalls
from engine.domain import utcnow
from storage.db import Database


async def purge(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    database = Database(ctx.settings.storage.database_url)
    try:
        if args.dry_run:
            installed, counts = await uninstalls.survey(database, args.team_id, clock=utcnow)
            state = "installed" if installed else "not installed"
            listed = ", ".join(f"{n} {what}" for what, n in counts.items())
            ctx.console.print(f"dry run, nothing erased: workspace {args.team_id} ({state}) "
                              f"has {listed}", markup=False)
            return 0
        report = await uninstalls.request_purge(database, args.team_id, reason=args.reason,
                                                actor="cli", clock=utcnow, force=args.force)
    finally:
        await database.dispose()
    erased = ", ".join(f"{n} {table}" for table, n in sorted(report.counts.items()) if n)
    if report.done:
        ctx.console.print(f"workspace {report.team_id} purged: {erased or 'nothing stored'}",
                          markup=False)
    else:
        ctx.console.print(f"workspace {report.team_id}: {erased or 'nothing'} erased so far; "
                          f"{report.waiting} debate(s) still running: the purge finishes once "
                          f"their workers stop them (any `serve` or `worker` finishes it, or "
                          f"run this again)", markup=False)
    return 0
