"""The process that runs a parsed `dialectic` command (the composition root's half that bot/main.py
loads after parsing): its settings, its logging, and the `Host` the command line runs on
(bot/cli/host.py).

It loads only what a command uses. Settings and logging are light; the wiring of whole processes
(the database, the workers, the scheduler, Slack, the HTTP server: bot/assembly.py) is imported by
the host methods that build one (the MCP server, bot/mcp, by `mcp` alone), so `run`, `estimate`
and `presets` never load it. Those
imports sit inside the methods for start-up time, not to dodge a cycle: they point down the layers
like any other (import-linter checks them; bot.assembly imports nothing of this module).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import AsyncIterator

from bot.cli import app as cli
from bot.cli.host import CliSettings, Hosted, Loaded
from bot.service.logs import setup_logging
from bot.service.tracing import setup_tracing, tracing
from bot.settings import Settings, load_setup
from engine.errors import ConfigurationError

log = logging.getLogger("dialectic.server")
MCP_SDK = ("mcp", "mcp_types")   # the `mcp` extra's packages
MCP_MISSING = ("`dialectic mcp` needs the mcp extra: pip install -e '.[mcp]' in the checkout "
               "(make install includes it)")


class Processes:
    """The `Host` the command line runs on (bot/cli/host.py)."""

    def load_settings(self) -> Loaded:
        setup = load_setup()
        for name, value in setup.sources.environ.items():
            os.environ.setdefault(name, value)  # `.env`'s, for what reads the environment
        return Loaded(setup.settings, setup.sources.described(), setup.sources.looked_at(),
                      setup.warnings)

    def setup_logging(self, settings: CliSettings, *, quiet: bool = False) -> None:
        assert isinstance(settings, Settings)
        level = settings.service.log_level
        if quiet and "log_level" not in settings.service.model_fields_set:
            level = "WARNING"  # a command's own output, not the service's INFO lines
        setup_logging(level, settings.secrets())
        setup_tracing(settings.service, settings.secrets())  # after: its log filter joins

    async def serve(self, settings: CliSettings, *, host: str | None, port: int | None) -> None:
        from bot.assembly import serve  # a whole process: loaded only for this command

        assert isinstance(settings, Settings)
        try:
            await serve(settings.listening_on(host, port), host=host, port=port)
        finally:
            tracing().shutdown()  # the last spans exported before the process exits

    async def work(self, settings: CliSettings, *, concurrency: int | None) -> None:
        from bot.assembly import work  # a whole process: loaded only for this command

        assert isinstance(settings, Settings)
        try:
            await work(settings, concurrency=concurrency)
        finally:
            tracing().shutdown()

    async def mcp(self, settings: CliSettings, *, workers: int | None) -> None:
        # a whole process, and the `mcp` extra: loaded only for this command
        from bot.assembly import assembled, delivering, running_workers

        try:
            from bot.mcp.server import serve_stdio
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.split(".")[0] not in MCP_SDK:
                raise
            raise ConfigurationError(MCP_MISSING) from None

        assert isinstance(settings, Settings)
        try:
            async with assembled(settings) as parts:
                if workers == 0:
                    await serve_stdio(parts.rt)
                    return
                # its debates' results are delivered to Slack from here too (the outbox)
                async with delivering(parts.notifier), running_workers(parts.rt, workers):
                    await serve_stdio(parts.rt)
        finally:
            tracing().shutdown()

    @contextlib.asynccontextmanager
    async def hosted(self, settings: CliSettings, *, workers: int) -> AsyncIterator[Hosted]:
        from bot.assembly import assembled, running_workers  # loaded only for these commands

        assert isinstance(settings, Settings)
        async with assembled(settings) as parts:
            if not workers:
                yield Hosted(parts.rt, parts.scheduler)
                return
            async with running_workers(parts.rt, workers):
                yield Hosted(parts.rt, parts.scheduler)


def run(args: argparse.Namespace) -> int:
    """Run the command `args` (parsed by bot/main.py) in this process."""
    return cli.run(args, Processes())


__all__ = ["Processes", "run"]
