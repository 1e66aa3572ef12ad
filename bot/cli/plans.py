"""`dialectic estimate`: what a debate would be and cost, without running one.

It reads the engine's planning (engine/planning.py) only: no provider client and no statistics
are loaded for it (`run`, in bot/cli/debate.py, loads both)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_OK
from bot.cli.progress import print_estimate
from bot.cli.request import request_of
from engine.planning import estimate_for, prepare


def estimate(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    found = estimate_for(settings, prepare(settings, request_of(args)),
                         max_debate_usd=ctx.settings.service.max_debate_usd)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print_estimate(ctx.console, found)
    return EXIT_OK
