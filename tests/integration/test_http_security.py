"""The HTTP surface as a hostile or clumsy client meets it: strict types, no 5xx for any input
(on SQLite and PostgreSQL), idempotency keys that cannot be reused for another request, the
browser rules (JSON only, same origin, known Host), /metrics behind the token, a signed and
expiring console session, signed and expiring transcript links, Slack's unreadable headers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import aiohttp
import pytest

from bot.http.auth import guard_refusal
from bot.http.session import COOKIE
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

TOPIC = "Should we move billing to PostgreSQL?"
TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def raw(session: aiohttp.ClientSession, method: str, url: str, **kw: Any
              ) -> tuple[int, str]:
    async with session.request(method, url, **kw) as resp:
        return resp.status, await resp.text()


@pytest.mark.parametrize("value", ['"3"', "true", "2.0", '"simple"'])
async def test_types_are_strict(db: Database, value: str) -> None:
    async with served(db, rehearsal_settings()) as (base, _, _), aiohttp.ClientSession() as s:
        status, body = await call(s, "POST", f"{base}/api/debates",
                                  data=f'{{"topic": "t", "rounds": {value}}}',
                                  headers={"Content-Type": "application/json"})
    assert status == 400 and "rounds" in body["error"]


HOSTILE_BODIES = [
    '{"topic": "t", "rounds": ' + "9" * 5000 + "}",
    "[" * 5000 + "]" * 5000,
    '{"topic": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}",
    '{"topic": "nul \\u0000 here"}',
    '{"topic": "t", "requested_by": "a\\u0000b"}',
    '{"topic": "t", "idempotency_key": "k\\u0000"}',
    '{"topic": "t", "options": {"policy": "\\u0000"}}',
    '{"topic": "\\ud800"}',
    "",
    "nul",
]


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
async def test_hostile_bodies_are_refused_never_a_server_error(db: Database, body: str) -> None:
    async with served(db, rehearsal_settings()) as (base, _, _), aiohttp.ClientSession() as s:
        for path in ("/api/debates", "/api/estimate"):
            status, text = await raw(s, "POST", f"{base}{path}", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
            assert 400 <= status < 500, (path, status, text[:200])


@pytest.mark.parametrize(("path", "headers"), [
    ("/api/debates/x/events?after=abc", {}), ("/api/debates/x/events", {"Last-Event-ID": "x"}),
    ("/api/debates/a%00b", {}), ("/api/debates/a%00b/events", {}),
    ("/debates/a%00b", {}), ("/api/debates?status=%00", {}), ("/api/debates?limit=9e99", {}),
    ("/api/debates?limit=" + "9" * 5000, {}),
])
async def test_hostile_reads_are_refused_never_a_server_error(
        db: Database, path: str, headers: dict[str, str]) -> None:
    async with served(db, rehearsal_settings()) as (base, _, _), aiohttp.ClientSession() as s:
        status, text = await raw(s, "GET", f"{base}{path}", headers=headers)
    assert 400 <= status < 500, (status, text[:200])


async def test_a_reused_idempotency_key_needs_the_same_request(db: Database) -> None:
    async with served(db, rehearsal_settings()) as (base, _, _), aiohttp.ClientSession() as s:
        first = {"topic": TOPIC, "mode": "simple", "idempotency_key": "k-1"}
        status, created = await call(s, "POST", f"{base}/api/debates", json=first)
        assert status == 202
        status, again = await call(s, "POST", f"{base}/api/debates", json=first)
        assert status == 200 and again["duplicate"] and again["id"] == created["id"]
        other = {**first, "topic": "Something else entirely?"}
        status, refused = await call(s, "POST", f"{base}/api/debates", json=other)
    assert status == 409 and refused["debate_id"] == created["id"]
    assert created["id"] in refused["error"]


@pytest.mark.parametrize(("method", "path", "headers", "status"), [
    ("POST", "/api/debates", {"content-type": "text/plain"}, 415),
    ("POST", "/api/debates", {"content-type": "application/x-www-form-urlencoded"}, 415),
    ("POST", "/api/debates", {"content-type": "application/json",
                              "origin": "https://evil.example"}, 403),
    ("POST", "/api/debates", {"content-type": "application/json", "origin": "null"}, 403),
    ("POST", "/api/debates", {"content-type": "application/json",
                              "host": "evil.example"}, 421),
    ("GET", "/api/debates", {"host": "rebound.example:3000"}, 421),
    ("GET", "/", {"host": "rebound.example"}, 421),
    ("POST", "/api/debates", {"content-type": "application/json"}, None),
    ("POST", "/api/debates", {"content-type": "application/json; charset=utf-8",
                              "origin": "http://127.0.0.1:3000"}, None),
    ("POST", "/api/debates", {"content-type": "application/json",
                              "origin": "https://dialectic.example"}, None),
    ("GET", "/healthz", {"host": "10.0.0.7:3000"}, None),
    ("POST", "/slack/events", {"host": "anything", "content-type": "text/plain"}, None),
])
def test_the_browser_guard(method: str, path: str, headers: dict[str, str],
                           status: int | None) -> None:
    hosts = frozenset({"127.0.0.1", "localhost", "::1", "dialectic.example"})
    headers = {"host": "127.0.0.1:3000", **headers}
    refused = guard_refusal(method, path, headers, hosts, "https://dialectic.example")
    assert (refused[0] if refused else None) == status


async def test_a_cross_site_form_cannot_start_a_debate(db: Database) -> None:
    async with served(db, rehearsal_settings()) as (base, rt, _), aiohttp.ClientSession() as s:
        status, _ = await raw(s, "POST", f"{base}/api/debates", data="topic=pwned",
                              headers={"Content-Type": "application/x-www-form-urlencoded",
                                       "Origin": "https://evil.example"})
        assert status in (403, 415)
        status, _ = await raw(s, "POST", f"{base}/api/debates", data=b'{"topic": "x"}',
                              headers={"Content-Type": "text/plain"})
        assert status == 415
        assert await rt.service.recent() == []


async def test_metrics_need_the_token_when_one_is_set(db: Database) -> None:
    async with served(db, rehearsal_settings(api_token=TOKEN)) as (base, _, _), \
            aiohttp.ClientSession() as s:
        assert (await raw(s, "GET", f"{base}/metrics"))[0] == 401
        status, text = await raw(s, "GET", f"{base}/metrics", headers=AUTH)
    assert status == 200 and "# HELP" in text


async def test_the_console_session_is_signed_and_expires(db: Database) -> None:
    async with served(db, rehearsal_settings(api_token=TOKEN)) as (base, rt, _):
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as s:
            async with s.get(f"{base}/?token={TOKEN}", allow_redirects=False) as resp:
                assert resp.status == 200          # a page that continues to the console
                session = resp.cookies[COOKIE]
            assert TOKEN not in session.value and session["max-age"] and session["httponly"]
            assert (await raw(s, "GET", f"{base}/api/debates"))[0] == 200
            real = rt.service.clock
            rt.service.clock = lambda: real() + timedelta(hours=13)
            assert (await raw(s, "GET", f"{base}/api/debates"))[0] == 401
            rt.service.clock = real
        for forged in (TOKEN, "9999999999.0000", "abc.def", "é"):
            async with aiohttp.ClientSession(cookies={COOKIE: forged}) as s:
                assert (await raw(s, "GET", f"{base}/api/debates"))[0] == 401


@pytest.mark.parametrize("bad", ["é", "\u2603" * 10, "x" * 5000])
async def test_non_ascii_secrets_are_refused_not_a_server_error(db: Database, bad: str) -> None:
    async with served(db, rehearsal_settings(api_token=TOKEN)) as (base, _, _), \
            aiohttp.ClientSession() as s:
        for url, headers in ((f"{base}/?token={bad}", {}),
                             (f"{base}/debates/x?sig={bad}&exp={bad}", {})):
            assert (await raw(s, "GET", url, headers=headers))[0] in (200, 400, 403)
        status, _ = await raw(s, "GET", f"{base}/api/debates",
                              headers={"Authorization": f"Bearer {bad}".encode().decode(
                                  "latin-1")})
        assert status == 401


async def test_a_transcript_link_is_signed_and_expires(db: Database) -> None:
    async with served(db, rehearsal_settings(api_token=TOKEN)) as (base, rt, _), \
            aiohttp.ClientSession() as s:
        _, body = await call(s, "POST", f"{base}/api/debates", json={"topic": TOPIC},
                             headers=AUTH)
        link = body["links"]["transcript"]
        assert "exp=" in link and "sig=" in link
        path = "/" + link.split("://", 1)[1].split("/", 1)[1]
        assert (await raw(s, "GET", f"{base}{path}"))[0] == 200
        later = int(path.split("exp=")[1].split("&")[0]) + 1
        assert (await raw(s, "GET", f"{base}{path.replace('exp=', f'exp={later}#')}"))[0] == 403
        real = rt.service.clock
        rt.service.clock = lambda: real() + timedelta(days=31)
        assert (await raw(s, "GET", f"{base}{path}"))[0] == 403
        rt.service.clock = real
        other = path.replace(body["id"], "0" * 16)
        assert (await raw(s, "GET", f"{base}{other}"))[0] == 403
