"""`dialectic doctor`: checks the configured provider and models with one tiny call each and
prints one line per model (the checks themselves live in bot/service/doctor.py)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_OK
from bot.service.doctor import ModelCheck, check


async def doctor(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    say = ctx.console.print
    for source in ctx.sources:   # what the checks below were configured by
        say(source, markup=False, highlight=False)
    if settings.is_rehearsal:
        say("No provider configured: debates run on the offline rehearsal model. Set "
            "OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) and run `dialectic doctor` "
            "again.", markup=False)
        return EXIT_NOT_COMPLETED
    say(f"Endpoint: {settings.endpoint()}", markup=False)
    results = await check(settings)
    for result in results:
        say(line(result), markup=False, highlight=False)
    failed = sum(1 for r in results if not r.ok)
    if failed:
        say(f"{failed} of {len(results)} models failed the check.", markup=False)
        return EXIT_NOT_COMPLETED
    say("The model answered." if len(results) == 1 else f"All {len(results)} models answered.",
        markup=False)
    return EXIT_OK


def line(result: ModelCheck) -> str:
    """`gpt-5-mini: ok · json_schema · temperature dropped · price known … · 1.2 s`."""
    if not result.ok:
        return f"{result.model}: FAILED: {result.problem}"
    parts = [f"{result.model}: ok", _mode(result.mode), *result.adapted, result.price,
             f"{result.latency_s:.1f} s"]
    if result.answered_as and result.answered_as != result.model:
        parts.insert(1, f"answered as {result.answered_as}")
    return " · ".join(p for p in parts if p)


def _mode(mode: str) -> str:
    return {"json_schema": "structured outputs (strict JSON schema)",
            "json_object": "JSON mode (the schema in the prompt)",
            "prompt": "plain text (the schema in the prompt)"}.get(mode, mode)
