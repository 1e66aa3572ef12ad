"""`dialectic estimate`: what a debate would be and cost, without running one, and whether the
server would admit it now (bot/service/admission.py: the rule submitting applies). It prices a
new run, as `dialectic run` makes one (never from the cache), and says when a finished debate
answers the same question at the other doors (docs/caching-and-replay.md).

It reads what the database has learned (reply sizes, the models that answer for the names asked,
today's budget) when there is a database; without one, the priors and a fresh day. It loads no
provider client and no statistics (`run`, in bot/cli/debate.py, loads both)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.progress import print_estimate
from bot.cli.request import request_of
from bot.service import admission
from engine.core.planning import Prepared, estimate_for, prepare
from engine.domain import Estimate


async def estimate(ctx: CliContext, args: argparse.Namespace) -> int:
    found, cached = await _quoted(ctx, args)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print_estimate(ctx.console, found)
        if cached is not None:
            ctx.console.print(f"Debate {cached}, finished within the cache window, answers this "
                              "same question at /debate, the API and the console (no new "
                              "calls, $0); `dialectic run` asks anew", markup=False)
    return EXIT_NOT_COMPLETED if found.admitted is False else EXIT_OK


async def _quoted(ctx: CliContext, args: argparse.Namespace) -> tuple[Estimate, str | None]:
    """The estimate of a new run, and the finished debate the cache answers it with, if any."""
    settings = ctx.settings
    request = request_of(args)
    if _has_database(ctx):
        from bot.service.debates import DebateService  # the database's: SQLAlchemy
        from bot.service.providers import make_llm
        from storage.db import Database

        db = Database(settings.storage.database_url)
        try:
            service = DebateService(engine=settings.engine, settings=settings.service, db=db,
                                    llm_factory=make_llm)
            found = await service.estimate(request.model_copy(update={"no_cache": True}))
            hit = await service.cached(prepare(settings.engine, request))
            return found, hit.id if hit is not None else None
        finally:
            await db.dispose()

    async def priors(prepared: Prepared) -> Estimate:
        return estimate_for(settings.engine, prepared,
                            max_debate_usd=settings.service.max_debate_usd)

    return await admission.quote(settings.engine, prepare(settings.engine, request), priors,
                                 admission.Day(settings.service.daily_budget_usd, 0.0)), None


def _has_database(ctx: CliContext) -> bool:
    """A database to learn from: a server's (any URL but a SQLite file that is not there)."""
    path = ctx.settings.storage.sqlite_file()
    return path is None or path.exists()
