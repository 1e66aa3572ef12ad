"""`dialectic schedule list` and `dialectic schedule run ID`."""

from __future__ import annotations

import argparse
from datetime import UTC

from rich.console import Console

from bot.cli.host import CliContext, require_database
from bot.scheduling.reports import ScheduleView
from engine.errors import InvalidRequest
from storage.records import RunStatus


async def list_schedules(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        print_views(ctx.console, await hosted.scheduler.views())
    return 0


async def run_schedule(ctx: CliContext, args: argparse.Namespace) -> int:
    known = {c.id for c in ctx.settings.scheduling.schedules}
    if args.schedule_id not in known:  # before starting anything
        listed = ", ".join(sorted(known)) or "none configured"
        raise InvalidRequest(f"unknown schedule {args.schedule_id!r} (known: {listed})")
    ctx.host.setup_logging(ctx.settings, quiet=True)
    workers = 0 if args.no_worker else ctx.settings.service.worker_concurrency
    async with ctx.host.hosted(ctx.settings, workers=workers) as hosted:
        report = await hosted.scheduler.run_now(args.schedule_id)
    ctx.console.print(f"{report.schedule_id} {report.slot}: {report.status}, "
                      f"{len(report.debate_ids)} debate(s)" +
                      (f", posted ts {report.message_ts}" if report.message_ts else "") +
                      (f" — {report.error}" if report.error else ""), markup=False)
    return 0 if report.status == RunStatus.DONE else 1


def print_views(console: Console, views: list[ScheduleView]) -> None:
    if not views:
        console.print("no schedules configured ([[schedules]] in dialectic.toml)")
    for v in views:
        state = "disabled" if not v.enabled else "paused" if v.paused else "active"
        when = v.next_fire.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if v.next_fire else "-"
        console.print(f"{v.id}  {v.cron} ({v.timezone})  {state}  next {when}  -> {v.channel} "
                      f"[{v.preset}]", markup=False)
