"""Schedule sources are fetched from public addresses only, unless the operator allows private
ones, and never through a redirect to another host; the digest says why a source was refused,
naming it without its credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.scheduling.config import ScheduleConfig
from bot.scheduling.digests import Digests
from bot.scheduling.signals import SignalSourceError, SourceRefused, not_public, read_source
from bot.settings import load_settings
from engine.errors import ConfigurationError
from tests.support.service_fixtures import rehearsal_settings, runtime
from tests.support.storage_fixtures import migrated_database

SIGNALS = "Copper breaks out\nBrent crude falls\n"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[str, str]]:
    """Two loopback servers (two hosts, as a URL counts them): the first redirects."""
    async def intranet(request: web.Request) -> web.Response:
        return web.Response(text="Secret intranet\n")

    async def signals(request: web.Request) -> web.Response:
        return web.Response(text=SIGNALS)

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    other = web.Application()
    other.router.add_get("/signals.txt", intranet)
    first = web.Application()
    first.router.add_get("/signals.txt", signals)
    first.router.add_get("/moved", moved)
    runners = [web.AppRunner(app) for app in (first, other)]
    urls = []
    for runner in runners:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        urls.append(f"http://127.0.0.1:{runner.addresses[0][1]}")
    yield urls[0], urls[1]
    for runner in runners:
        await runner.cleanup()


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("169.254.169.254", "link-local"),
    ("10.1.2.3", "private"), ("192.168.0.1", "private"), ("172.16.0.1", "private"),
    ("fd00::1", "private"), ("::ffff:127.0.0.1", "loopback"), ("0.0.0.0", "private"),
    ("93.184.216.34", None), ("2606:4700::1111", None),
])
def test_which_addresses_are_not_public(address: str, kind: str | None) -> None:
    assert not_public(address) == kind


async def test_a_loopback_source_is_refused_by_default(servers: tuple[str, str]) -> None:
    first, _ = servers
    for url in (f"{first}/signals.txt", first.replace("127.0.0.1", "localhost") + "/x"):
        with pytest.raises(SourceRefused, match="loopback address; set allow_private_sources"):
            await read_source(url)


async def test_the_operator_may_allow_private_sources(servers: tuple[str, str]) -> None:
    first, _ = servers
    assert await read_source(f"{first}/signals.txt", allow_private=True) == SIGNALS
    same_host = f"{first}/moved?to=/signals.txt"
    assert await read_source(same_host, allow_private=True) == SIGNALS


async def test_a_redirect_to_another_host_is_not_followed(servers: tuple[str, str]) -> None:
    first, other = servers
    with pytest.raises(SourceRefused, match="redirect to another host"):
        await read_source(f"{first}/moved?to={other}/signals.txt", allow_private=True)


async def test_the_digest_reports_the_refusal_without_credentials(
        servers: tuple[str, str], tmp_path: Path) -> None:
    first, _ = servers
    source = first.replace("http://", "http://feed:pa55word@") + "/signals.txt"
    config = ScheduleConfig(id="s", cron="0 8 * * 1-5", channel="C0123ABC", source=source)
    async with migrated_database("sqlite", tmp_path) as db:
        rt = runtime(db, rehearsal_settings())
        refused, problems = await Digests(rt, publisher=None, clock=rt.service.clock
                                          ).read_signals(config)
        allowed, none = await Digests(rt, publisher=None, clock=rt.service.clock,
                                      allow_private_sources=True).read_signals(config)
        await rt.close()
    assert refused == [] and len(problems) == 1
    assert "refused to fetch http://***@127.0.0.1" in problems[0]
    assert "pa55word" not in problems[0]
    assert [s.title for s in allowed] == ["Copper breaks out", "Brent crude falls"] and not none


async def test_an_unreadable_source_names_itself_without_credentials() -> None:
    with pytest.raises(SignalSourceError) as caught:
        await read_source("http://feed:pa55word@127.0.0.1:9/x", allow_private=True)
    assert "pa55word" not in str(caught.value) and "http://***@127.0.0.1:9/x" in str(caught.value)


def test_allowing_private_sources_is_a_setting() -> None:
    env = {"DIALECTIC_CONFIG": "/dev/null"}
    assert load_settings(env).scheduling.allow_private_sources is False
    assert load_settings({**env, "DIALECTIC_ALLOW_PRIVATE_SOURCES": "true"}
                         ).scheduling.allow_private_sources
    with pytest.raises(ConfigurationError):
        load_settings({**env, "DIALECTIC_ALLOW_PRIVATE_SOURCES": "maybe"})
