"""`dialectic run`, `estimate` and `presets`: debates in this terminal, nothing stored."""

from __future__ import annotations

import argparse
import json
import uuid

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_INCOMPLETE, EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.progress import print_estimate, print_summary, run_with_progress
from bot.service.providers import describe, make_llm
from engine.debate import estimate_for, prepare, run_debate
from engine.domain import DebateRequest
from engine.material import with_nonce
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.presets import all_presets, judges_for
from engine.vocabulary import ResultStatus


def request_of(args: argparse.Namespace) -> DebateRequest:
    fields: dict[str, object] = {"topic": args.topic, "requested_by": "cli",
                                 "context": args.context}
    for name in ("mode", "preset", "rounds", "judges"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return DebateRequest.model_validate(fields)


def exit_code(status: str, *, complete: bool) -> int:
    """0: completed with nothing missing; 3: completed but degraded or filtered steps are
    missing; 1: failed or timed out."""
    if status != ResultStatus.COMPLETED:
        return EXIT_NOT_COMPLETED
    return EXIT_OK if complete else EXIT_INCOMPLETE


async def run(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    prepared = prepare(settings, with_nonce(request_of(args)))
    llm = make_llm(settings)
    sink = MemoryEventSink()
    queue = sink.queue()
    work = run_debate(prepared, debate_id=uuid.uuid4().hex[:12], settings=settings, llm=llm,
                      store=MemoryCheckpointStore(), sink=sink)
    try:
        if args.json:
            result = await work
        else:
            ctx.console.print(describe(settings), style="dim")
            result = await run_with_progress(ctx.console, queue, work,
                                             topic=prepared.request.topic, plan=prepared.plan,
                                             rehearsal=settings.is_rehearsal)
    finally:
        await llm.aclose()
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print_summary(ctx.console, result, prepared.preset.thresholds)
    return exit_code(result.status, complete=result.complete)


def estimate(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    found = estimate_for(settings, prepare(settings, request_of(args)))
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print_estimate(ctx.console, found)
    return EXIT_OK


def presets(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    for name, preset in sorted(all_presets(settings).items()):
        judges = ", ".join(j.name for j in judges_for(settings, preset, None))
        t = preset.thresholds
        ctx.console.print(f"{name} — {preset.description}", markup=False, style="bold")
        downgrade = "yes" if preset.allow_downgrade else "no"
        ctx.console.print(f"    mode {preset.mode}, rounds {preset.rounds}, judges {judges}; "
                          f"thresholds high>={t.high} tentative>={t.tentative} "
                          f"escalate<{t.escalate}; downgrade {downgrade}", markup=False)
    return EXIT_OK
