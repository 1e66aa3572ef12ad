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
from rich.console import Console

from bot.cli.host import CliContext, Host
from bot.cli.parser import EXIT_NOT_COMPLETED, EXIT_USAGE
from bot.service import memory
from engine.errors import ConfigurationError, DialecticError, InvalidRequest, validation_message
from storage.exceptions import NotFound

Handler = Callable[[CliContext, argparse.Namespace], int | Awaitable[int]]


def run(args: argparse.Namespace, host: Host) -> int:
    console = Console(stderr=bool(getattr(args, "json", False)), soft_wrap=True)
    try:
        ctx = CliContext(host=host, settings=host.load_settings(), console=console)
        handler = cast(Handler, args.func)
        outcome = handler(ctx, args)
        if inspect.isawaitable(outcome):
            memory.started()  # the command's modules are loaded: its work begins
            return asyncio.run(_awaited(outcome))
        return outcome
    except (InvalidRequest, ConfigurationError, NotFound) as exc:
        console.print(f"error: {exc}", markup=False, style="red")
        return EXIT_USAGE
    except DialecticError as exc:  # budget, storage, provider: said plainly, no traceback
        console.print(f"error: {exc}", markup=False, style="red")
        return EXIT_NOT_COMPLETED
    except ValidationError as exc:
        console.print(f"error: {validation_message(exc)}", markup=False, style="red")
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130


async def _awaited(outcome: Awaitable[int]) -> int:
    return await outcome
