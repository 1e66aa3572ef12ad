"""A digest's signals: what each one is (a title and optional context), how a source's text
becomes signals, and reading a source (a file, or an http(s) URL fetched at firing time).
A bad line or an unreadable source is a problem the digest reports, never dropped silently.

A URL source is fetched from public addresses only (loopback, link-local and private ones are
refused, also when a name resolves to one at connect time) unless the operator sets
`allow_private_sources = true`, and a redirect to another host is never followed: a schedule
cannot be turned into a way to read the service's own network."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from engine.errors import DialecticError
from engine.provider.redaction import public_url

SOURCE_TIMEOUT = 15.0
SOURCE_MAX_BYTES = 1_000_000
MAX_REDIRECTS = 3


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


async def read_source(source: str, *, allow_private: bool = False) -> str:
    """The text of a signal source: an http(s) URL or a file path (relative to the cwd).
    A URL is fetched only from public addresses unless `allow_private`, and never by following
    a redirect to another host. Errors name the source without its credentials."""
    label = public_url(source)
    if source.startswith(("http://", "https://")):
        return await _fetch(source, label, allow_private=allow_private)
    try:
        return await asyncio.to_thread(_read_text, Path(source).expanduser())
    except OSError as exc:
        raise SignalSourceError(f"cannot read {label}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{label} is not UTF-8 text ({exc.reason})") from exc


# --- outbound fetches: public addresses only, no redirect to another host ----------------------


def not_public(address: str) -> str | None:
    """Why `address` may not be fetched by default ("loopback", "private", ...), or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None


class SourceRefused(SignalSourceError):
    """The source's address or redirect is one the operator has not allowed."""


class _PublicResolver(AbstractResolver):
    """Resolves like aiohttp does, then keeps public addresses only: checked when connecting,
    so a name that resolves anew (DNS rebinding) cannot reach a private address either."""

    def __init__(self, label: str) -> None:
        self.inner = DefaultResolver()
        self.label = label

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        found = await self.inner.resolve(host, port, family)
        kept = [r for r in found if not_public(r["host"]) is None]
        if not kept:
            kinds = sorted({str(not_public(r["host"])) for r in found})
            raise SourceRefused(f"refused to fetch {self.label}: {host} resolves to a "
                                f"{'/'.join(kinds)} address; set allow_private_sources = true "
                                "in dialectic.toml to allow it")
        return kept

    async def close(self) -> None:
        await self.inner.close()


def _origin(url: URL) -> tuple[str, str, int | None]:
    return (url.scheme, (url.host or "").lower(), url.port)


def _check_literal(url: URL, label: str) -> None:
    """A host written as an address skips the resolver: check it here."""
    host = url.host or ""
    try:
        kind = not_public(host)
    except ValueError:
        return  # a name: the resolver checks what it resolves to
    if kind is not None:
        raise SourceRefused(f"refused to fetch {label}: {host} is a {kind} address; set "
                            "allow_private_sources = true in dialectic.toml to allow it")


async def _fetch(source: str, label: str, *, allow_private: bool) -> str:
    url = URL(source)
    timeout = aiohttp.ClientTimeout(total=SOURCE_TIMEOUT)
    connector = aiohttp.TCPConnector(resolver=None if allow_private else _PublicResolver(label))
    try:
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            data = await _follow(session, url, label, allow_private=allow_private)
    except SourceRefused:
        raise
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        detail = public_url(f"{type(exc).__name__} {exc}")
        raise SignalSourceError(f"cannot fetch {label}: {detail}") from exc
    if len(data) > SOURCE_MAX_BYTES:
        raise SignalSourceError(f"{label} sent more than {SOURCE_MAX_BYTES // 1000} kB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SignalSourceError(f"{label} did not send UTF-8 text ({exc.reason})") from exc


async def _follow(session: aiohttp.ClientSession, url: URL, label: str, *,
                  allow_private: bool) -> bytes:
    """GET `url`, following redirects by hand: only to the same scheme, host and port."""
    start = _origin(url)
    for _ in range(MAX_REDIRECTS + 1):
        if not allow_private:
            _check_literal(url, label)
        async with session.get(url, allow_redirects=False) as reply:
            if reply.status in (301, 302, 303, 307, 308) and "Location" in reply.headers:
                target = url.join(URL(reply.headers["Location"]))
                if _origin(target) != start:
                    raise SourceRefused(f"refused to follow {label}'s redirect to another host "
                                        f"({public_url(str(target.origin()))})")
                url = target
                continue
            if reply.status >= 400:
                raise SignalSourceError(f"{label} answered HTTP {reply.status} {reply.reason}")
            return await reply.content.read(SOURCE_MAX_BYTES + 1)
    raise SignalSourceError(f"{label} redirected more than {MAX_REDIRECTS} times")
