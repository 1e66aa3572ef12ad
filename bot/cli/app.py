"""Running a parsed `dialectic` command: load the settings, call the command's handler, and turn
every error a person can cause into one line and an exit status (never a traceback). Parsing is
the entry point's (bot/main.py), before any of this is loaded."""

from __future__ import annotations

import argparse
import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import cast

from pydantic import ValidationError

from bot.cli.host import CliContext, Host, Loaded, terminal
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_USAGE
from bot.service import memory
from engine.errors import (
    ConfigurationError,
    DialecticError,
    InvalidRequest,
    UnknownPreset,
    validation_message,
)
from storage.exceptions import NotFound

Handler = Callable[[CliContext, argparse.Namespace], int | Awaitable[int]]


def run(args: argparse.Namespace, host: Host) -> int:
    stderr = bool(getattr(args, "json", False))
    ctx: CliContext | None = None
    try:
        loaded = host.load_settings()
        ctx = CliContext(host=host, settings=loaded.settings, stderr=stderr,
                         sources=loaded.sources)
        _before(loaded, verbose=bool(getattr(args, "verbose", False)))
        handler = cast(Handler, args.func)
        outcome = handler(ctx, args)
        if inspect.isawaitable(outcome):
            memory.started()  # the command's modules are loaded: its work begins
            return asyncio.run(_awaited(outcome))
        return outcome
    except UnknownPreset as exc:  # the presets come from a file: say which, or where we looked
        _say(ctx, stderr, f"error: {exc} ({loaded.looked_at})", style="red")
        return EXIT_USAGE
    except (InvalidRequest, ConfigurationError, NotFound) as exc:
        _say(ctx, stderr, f"error: {exc}", style="red")
        return EXIT_USAGE
    except DialecticError as exc:  # budget, storage, provider: said plainly, no traceback
        _say(ctx, stderr, f"error: {exc}", style="red")
        return EXIT_NOT_COMPLETED
    except ValidationError as exc:
        _say(ctx, stderr, f"error: {validation_message(exc)}", style="red")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say(ctx, stderr, "interrupted")
        return 130


def _before(loaded: Loaded, *, verbose: bool) -> None:
    """On stderr, before the command's own output: the warnings every command gives alike, and
    under `--verbose` the files the settings came from."""
    if not (loaded.warnings or verbose):
        return
    console = terminal(stderr=True)
    for line in loaded.warnings:
        console.print(f"warning: {line}", markup=False, style="yellow", highlight=False)
    for line in loaded.sources if verbose else ():
        console.print(line, markup=False, style="dim", highlight=False)


def _say(ctx: CliContext | None, stderr: bool, text: str, *, style: str | None = None) -> None:
    """One line on the command's terminal (a new one when the settings did not load)."""
    console = ctx.console if ctx is not None else terminal(stderr=stderr)
    console.print(text, markup=False, style=style)


async def _awaited(outcome: Awaitable[int]) -> int:
    return await outcome
