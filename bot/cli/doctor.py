"""`dialectic doctor [--forget]`: checks the configured provider and models with one tiny call each
and prints one line per model (the checks themselves live in bot/service/doctor.py). What the
endpoint's 400s taught is read from, and kept in, the database when there is one; `--forget`
drops it first."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_OK
from bot.service.doctor import ModelCheck, ProviderCheck, by_provider, check, forget
from storage.db import Database
from storage.errors import DATABASE_ERRORS
from storage.lessons import DbLessonBook
from storage.permissions import exposed_database
from storage.settings import StorageSettings


async def doctor(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    say = ctx.console.print
    for source in ctx.sources:   # what the checks below were configured by
        say(source, markup=False, highlight=False)
    for warning in exposed_database(ctx.settings.storage):
        say(f"Warning: {warning}", markup=False, soft_wrap=True)
    if settings.is_rehearsal:
        say("No provider configured: debates run on the offline rehearsal model. Set "
            "OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) and run `dialectic doctor` "
            "again.", markup=False)
        return EXIT_NOT_COMPLETED
    if not settings.providers:
        say(f"Endpoint: {settings.endpoint()}", markup=False)
    async with lesson_book(ctx.settings.storage) as book:
        if getattr(args, "forget", False):
            gone = await forget(settings, book)
            which = "the endpoints" if settings.providers else "the endpoint"
            say(f"Forgot what {which} taught about {gone} model(s)"
                f"{'' if book else ' (no database: nothing was kept)'}.", markup=False)
        results = await check(settings, lessons=book)
    if settings.providers:   # several at once: a line per provider, then its models'
        for summary in by_provider(settings, results):
            say(provider_line(summary), markup=False, highlight=False)
    for result in results:
        say(line(result), markup=False, highlight=False)
    failed = sum(1 for r in results if not r.ok)
    if failed:
        say(f"{failed} of {len(results)} models failed the check.", markup=False)
        return EXIT_NOT_COMPLETED
    say("The model answered." if len(results) == 1 else f"All {len(results)} models answered.",
        markup=False)
    return EXIT_OK


@asynccontextmanager
async def lesson_book(storage: StorageSettings) -> AsyncIterator[DbLessonBook | None]:
    """The database's lessons, when there is a database (migrated to hold them); None without
    one, or when it cannot be reached: doctor then checks the provider all the same."""
    path = storage.sqlite_file()
    if path is not None and not path.exists():
        yield None
        return
    database = Database(storage.database_url)
    try:
        try:
            await database.upgrade()
        except DATABASE_ERRORS:
            yield None
        else:
            yield DbLessonBook(database)
    finally:
        await database.dispose()


def line(result: ModelCheck) -> str:
    """`gpt-5-mini: ok · json_schema · temperature dropped · price known … · 1.2 s`."""
    if not result.ok:   # a name that never answered is still priced, pessimistically
        price = f" · {result.price}" if result.stand_in else ""
        return f"{result.model}: FAILED: {result.problem}{price}"
    kind = _KINDS.get(result.provider, result.provider)
    via = f"via {kind}" if kind else ""
    to = f"→ provider {result.route}" if result.route else ""
    parts = [f"{result.model}: ok", to, via, _mode(result.mode), *result.adapted, result.window,
             result.price, f"{result.latency_s:.1f} s"]
    if result.answered_as and result.answered_as != result.model:
        parts.insert(1, f"answered as {result.answered_as}")
    return " · ".join(p for p in parts if p)


def provider_line(summary: ProviderCheck) -> str:
    """`Provider anthropic (https://…, Anthropic's OpenAI compatibility): reachable · 2 of 2
    models answer · plain text (the schema in the prompt) · prices known`."""
    name = f"Provider {summary.name}" if summary.name else "Default endpoint (OPENAI_BASE_URL)"
    kind = _KINDS.get(summary.kind, summary.kind)
    where = f"{summary.endpoint}, {kind}" if kind else summary.endpoint
    if not summary.reachable:
        return f"{name} ({where}): UNREACHABLE · {summary.models[0].problem}"
    unpriced = summary.unpriced
    parts = [f"{name} ({where}): reachable",
             f"{summary.answered} of {len(summary.models)} models answer",
             *(_mode(mode) for mode in summary.modes),
             f"price unknown for {', '.join(unpriced)}" if unpriced else "prices known"]
    return " · ".join(parts)


def _mode(mode: str) -> str:
    return {"json_schema": "structured outputs (strict JSON schema)",
            "json_object": "JSON mode (the schema in the prompt)",
            "prompt": "plain text (the schema in the prompt)"}.get(mode, mode)


_KINDS = {"openai": "", "other": "", "azure": "Azure OpenAI",
          "anthropic": "Anthropic's OpenAI compatibility",
          "gemini": "Gemini's OpenAI compatibility", "deepseek": "DeepSeek",
          "gateway": "a gateway", "local": "a local server"}
