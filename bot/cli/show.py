"""`dialectic show ID [--json]`: a stored debate's result as `run` prints it (verdict, agreement,
what its preset promises: the discussion flag, the brief), or its record as the API's JSON."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext, require_database
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_OK
from bot.cli.progress import print_summary
from bot.service.results import marks, routed_by, status_words
from storage import debates
from storage.db import Database


async def show(ctx: CliContext, args: argparse.Namespace) -> int:
    """0 when the debate has a result; 1 (and its status in words) while it has none."""
    require_database(ctx.settings.storage)
    database = Database(ctx.settings.storage.database_url)
    try:
        async with database.transaction(readonly=True) as session:
            record = await debates.get(session, args.debate_id)
    finally:
        await database.dispose()
    if args.json:
        print(record.model_dump_json(indent=2))
        return EXIT_OK if record.result is not None else EXIT_NOT_COMPLETED
    notes = "; ".join(m.text for m in marks(record, rehearsal=ctx.settings.engine.is_rehearsal))
    if record.result is None:
        ctx.console.print(f"{record.id} is {status_words(record.status, None)}: no result yet"
                          + (f"  [{notes}]" if notes else ""), markup=False)
        return EXIT_NOT_COMPLETED
    print_summary(ctx.console, record.result, routed_by(ctx.settings.engine, record.result),
                  stored=status_words(record.status, record.result))
    if notes:   # what `list` says of it too: an evaluation's, a re-run, a downgrade...
        ctx.console.print(f"What to know: {notes}", markup=False, soft_wrap=True)
    return EXIT_OK
