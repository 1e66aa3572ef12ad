"""`dialectic run`: a debate in this terminal, stored and audited like any other (bot/service/
terminal.py): the same admission, hold, purse and ledger as every door, so the daily cap and
DIALECTIC_MAX_DEBATE_USD hold here too. (`estimate` and `presets` are bot/cli/plans.py and
presets.py: they load neither the provider client nor the statistics.)"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_INCOMPLETE, EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.request import request_of
from bot.service.providers import describe
from bot.service.results import status_words
from bot.service.terminal import run_here, terminal_service, terminal_worker
from bot.service.tracing import setup_tracing
from engine.core.planning import prepare
from engine.domain import DebateResult
from engine.ports import MemoryEventSink
from engine.vocabulary import ResultStatus
from storage.records import DebateRecord, Origin


def exit_code(status: str, *, complete: bool) -> int:
    """0: completed with nothing missing; 3: completed but degraded or filtered steps are
    missing (a debate the budget stopped, too); 1: failed or timed out."""
    if status != ResultStatus.COMPLETED:
        return EXIT_NOT_COMPLETED
    return EXIT_OK if complete else EXIT_INCOMPLETE


async def run(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    # a run asks for a new debate, never a recent one's result
    request = request_of(args).model_copy(update={"no_cache": True})
    traces = setup_tracing(ctx.settings.service, ctx.settings.secrets())
    worker = terminal_worker()
    try:
        async with terminal_service(settings, ctx.settings.service, ctx.settings.storage,
                                    slack=ctx.settings.slack_enabled) as service:
            sub = await service.submit(request, origin=Origin(surface="terminal"), claim=worker)
            sink = MemoryEventSink()
            work = run_here(service, sub.record, worker_id=worker, sink=sink)
            if args.json:
                record = await work
            else:
                from bot.cli.progress import run_with_progress  # lazy: rich, for the terminal

                ctx.console.print(describe(settings), style="dim")
                if sub.downgraded_from is not None:
                    ctx.console.print(f"downgraded from {sub.downgraded_from} to "
                                      f"{sub.record.mode}: the verbose estimate of "
                                      f"{sub.downgraded_from} does not fit", style="yellow")
                plan = prepare(settings, sub.record.request).plan
                shown = await run_with_progress(
                    ctx.console, sink.queue(), _result_of(work), topic=sub.record.request.topic,
                    plan=plan, rehearsal=settings.is_rehearsal)
                record = await service.get(shown.id)
    finally:
        traces.shutdown()  # exported before the process exits
    result = record.result
    assert result is not None  # a finished debate has its result
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        from bot.cli.progress import print_summary  # lazy, as above: `--json` never loads rich

        print_summary(ctx.console, result, prepare(settings, record.request).preset.thresholds,
                      stored=status_words(record.status, result))
        ctx.console.print(f"stored as debate {record.id} (`dialectic show {record.id}`)",
                          style="dim", markup=False)
    return exit_code(result.status, complete=result.complete)


async def _result_of(work: Awaitable[DebateRecord]) -> DebateResult:
    record = await work
    assert record.result is not None  # a finished debate has its result
    return record.result
