"""`dialectic estimate` and `presets`: what a debate would be, without running one.

They read the engine's planning (engine/planning.py) and the presets only: no provider client
and no statistics are loaded for them (`run`, in bot/cli/debate.py, loads both)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_OK
from bot.cli.progress import print_estimate
from engine.domain import DebateRequest
from engine.planning import estimate_for, prepare
from engine.presets import all_presets, judges_for


def request_of(args: argparse.Namespace) -> DebateRequest:
    fields: dict[str, object] = {"topic": args.topic, "requested_by": "cli",
                                 "context": args.context}
    for name in ("mode", "preset", "rounds", "judges"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return DebateRequest.model_validate(fields)


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
