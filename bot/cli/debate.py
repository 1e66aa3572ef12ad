"""`dialectic run`: a debate in this terminal, nothing stored (`estimate` and `presets` are
bot/cli/plans.py and presets.py: they load neither the provider client nor the statistics)."""

from __future__ import annotations

import argparse
import json
import uuid

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_INCOMPLETE, EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.request import request_of
from bot.service.providers import describe, make_llm
from bot.service.tracing import setup_tracing
from engine.debate import run_debate
from engine.planning import prepare
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.untrusted.material import with_nonce
from engine.vocabulary import ResultStatus


def exit_code(status: str, *, complete: bool) -> int:
    """0: completed with nothing missing; 3: completed but degraded or filtered steps are
    missing; 1: failed or timed out."""
    if status != ResultStatus.COMPLETED:
        return EXIT_NOT_COMPLETED
    return EXIT_OK if complete else EXIT_INCOMPLETE


async def run(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    prepared = prepare(settings, with_nonce(request_of(args)))
    traces = setup_tracing(ctx.settings.service, ctx.settings.secrets())
    llm = make_llm(settings)
    sink = MemoryEventSink()
    queue = sink.queue()
    work = run_debate(prepared, debate_id=uuid.uuid4().hex[:12], settings=settings, llm=llm,
                      store=MemoryCheckpointStore(), sink=sink, tracer=traces.tracer)
    try:
        if args.json:
            result = await work
        else:
            from bot.cli.progress import run_with_progress  # lazy: rich, for the terminal only

            ctx.console.print(describe(settings), style="dim")
            result = await run_with_progress(ctx.console, queue, work,
                                             topic=prepared.request.topic, plan=prepared.plan,
                                             rehearsal=settings.is_rehearsal)
    finally:
        await llm.aclose()
        traces.shutdown()  # exported before the process exits
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        from bot.cli.progress import print_summary  # lazy, as above: `--json` never loads rich

        print_summary(ctx.console, result, prepared.preset.thresholds)
    return exit_code(result.status, complete=result.complete)
