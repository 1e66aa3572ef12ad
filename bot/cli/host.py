"""What the command line needs from the process that runs it, as interfaces.

The CLI is a surface: it does not wire Slack or the HTTP server itself (the surfaces do not
import each other). The composition root (bot/processes.py) implements `Host` and hands it in."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # types only: `dialectic run` must not load the scheduler and the database
    from rich.console import Console

    from bot.scheduling.scheduler import Scheduler
    from bot.scheduling.settings import SchedulingSettings
    from bot.service.runtime import Runtime
    from bot.service.settings import ServiceSettings
    from engine.settings import EngineSettings
    from storage.settings import StorageSettings


def require_database(storage: StorageSettings) -> None:
    """For commands that read or change what a server stored: a SQLite file that is not there is
    the wrong database (another directory, another DATABASE_URL), never one to create empty."""
    from engine.errors import InvalidRequest

    path = storage.sqlite_file()
    if path is None or path.exists():
        return
    if storage.is_default_database:
        whose = "the default, as DATABASE_URL is unset"
        stray = Path.cwd() / "dialectic.db"
        fix = (f"move it there, or set DATABASE_URL=sqlite+aiosqlite:///{stray}" if
               stray.exists() else "set DATABASE_URL to the database `dialectic serve` uses")
        fix = (f"found {stray} (where earlier versions kept it): " + fix if stray.exists() else
               fix)
    else:
        whose = "from DATABASE_URL"
        fix = "check the path: it is relative to the current directory unless it starts with /"
    raise InvalidRequest(f"no database at {path} ({whose}); {fix}. Nothing was created "
                         "(`dialectic serve` or `dialectic db upgrade` creates a new one)")


class CliSettings(Protocol):
    """The parts of the process's settings the commands read."""

    @property
    def engine(self) -> EngineSettings: ...

    @property
    def storage(self) -> StorageSettings: ...

    @property
    def service(self) -> ServiceSettings: ...

    @property
    def scheduling(self) -> SchedulingSettings: ...

    @property
    def slack_enabled(self) -> bool: ...

    @property
    def multi_workspace(self) -> bool: ...

    def secrets(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Loaded:
    """The settings as the one loader read them (bot/settings.py `load_setup`), what it read
    them from, and what to warn of before the command starts."""

    settings: CliSettings
    sources: tuple[str, ...] = ()   # one line per file read, for `--verbose` and `doctor`
    looked_at: str = ""             # the settings file, or where one was looked for
    warnings: tuple[str, ...] = ()  # unknown DIALECTIC_* names, OTEL_* without the extra


@dataclass(frozen=True, slots=True)
class Hosted:
    """A runtime with its scheduler (and Slack, when configured) for a command's lifetime."""

    rt: Runtime
    scheduler: Scheduler


class Host(Protocol):
    def load_settings(self) -> Loaded:
        """The process's settings and their sources (ConfigurationError: one line saying what
        is wrong)."""
        ...

    def setup_logging(self, settings: CliSettings, *, quiet: bool = False) -> None:
        """Logging for the process; `quiet`: a one-shot command whose output is the point logs
        warnings and errors only, unless DIALECTIC_LOG_LEVEL says otherwise."""
        ...

    async def serve(self, settings: CliSettings, *, host: str | None, port: int | None) -> None:
        """The HTTP server (API, console, Slack) with workers and the scheduler, until SIGTERM."""
        ...

    async def work(self, settings: CliSettings, *, concurrency: int | None) -> None:
        """Workers only (and the scheduler), until SIGTERM."""
        ...

    async def mcp(self, settings: CliSettings, *, workers: int | None) -> None:
        """An MCP server on stdin/stdout (bot/mcp) with `workers` slots running debates here
        (None: the settings'; 0: leave them to other processes), until the client closes it."""
        ...

    def hosted(self, settings: CliSettings, *, workers: int) -> AbstractAsyncContextManager[
            Hosted]:
        """The runtime, its scheduler and Slack posting, with `workers` slots running debates
        here (0: leave them to other processes)."""
        ...


@dataclass(slots=True)
class CliContext:
    """What a command is given: the host, the settings and the terminal. The terminal (rich) is
    built at its first use, so a command that prints plain JSON (`run --json`) never loads rich."""

    host: Host
    settings: CliSettings
    stderr: bool = False   # the terminal writes to stderr: stdout carries the command's JSON
    sources: tuple[str, ...] = ()   # which files the settings came from (`Loaded.sources`)
    _console: Console | None = field(default=None, init=False, repr=False)

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = terminal(stderr=self.stderr)
        return self._console


def terminal(*, stderr: bool) -> Console:
    """A rich console for a command's output (imported here, on first use: see CliContext)."""
    from rich.console import Console

    return Console(stderr=stderr, soft_wrap=True)


Command = Callable[..., object]
