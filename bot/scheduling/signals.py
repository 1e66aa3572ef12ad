"""A digest's signals: what each one is (a title and optional context), how a source's text
becomes signals, and reading a source (a file, or an http(s) URL fetched at firing time).
A bad line or an unreadable source is a problem the digest reports, never dropped silently."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from engine.errors import DialecticError

SOURCE_TIMEOUT = 15.0
SOURCE_MAX_BYTES = 1_000_000


class SignalSourceError(DialecticError):
    """A digest's signal source could not be read; the digest reports it."""


@dataclass(frozen=True, slots=True)
class Signal:
    """One thing a digest debates: a title (the proposition) and optional context."""

    title: str
    context: str = ""


def _json_signal(line: str) -> Signal:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("a JSON line must be an object with a title")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ValueError("the JSON object has no non-empty `title`")
    context = data.get("context", "")
    if not isinstance(context, str):
        context = json.dumps(context, ensure_ascii=False)
    return Signal(title=title.strip(), context=context.strip())


def parse_signals(text: str, *, origin: str) -> tuple[list[Signal], list[str]]:
    """Signals from a source's text: one per line, or JSON lines `{"title": .., "context": ..}`.

    Blank lines and `#` comments are ignored. A bad line is a problem ("<origin> line 3: ...")
    reported alongside the good signals, never dropped silently."""
    signals: list[Signal] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("{"):
            signals.append(Signal(title=line))
            continue
        try:
            signals.append(_json_signal(line))
        except ValueError as exc:
            problems.append(f"{origin} line {number}: {exc}")
    return signals, problems


def _read_text(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(SOURCE_MAX_BYTES + 1)
    if len(data) > SOURCE_MAX_BYTES:
        raise SignalSourceError(f"{path} is larger than {SOURCE_MAX_BYTES // 1000} kB")
    return data.decode("utf-8")


async def read_source(source: str) -> str:
    """The text of a signal source: an http(s) URL or a file path (relative to the cwd)."""
    if source.startswith(("http://", "https://")):
        return await _fetch(source)
    try:
        return await asyncio.to_thread(_read_text, Path(source).expanduser())
    except OSError as exc:
        raise SignalSourceError(f"cannot read {source}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{source} is not UTF-8 text ({exc.reason})") from exc


async def _fetch(url: str) -> str:
    timeout = aiohttp.ClientTimeout(total=SOURCE_TIMEOUT)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as reply:
            if reply.status >= 400:
                raise SignalSourceError(f"{url} answered HTTP {reply.status} {reply.reason}")
            data = await reply.content.read(SOURCE_MAX_BYTES + 1)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise SignalSourceError(f"cannot fetch {url}: {type(exc).__name__} {exc}") from exc
    if len(data) > SOURCE_MAX_BYTES:
        raise SignalSourceError(f"{url} sent more than {SOURCE_MAX_BYTES // 1000} kB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{url} did not send UTF-8 text ({exc.reason})") from exc
