"""Issue 22 over real HTTP: no open redirect after signing in, however the target is disguised
(read as a browser reads URLs), and the security headers on every response, `Secure` cookies
behind an https public URL. The browser halves (following the redirect, framing) are in
test_http_hardening_browser.py."""

from __future__ import annotations

import re

import aiohttp
import pytest
from yarl import URL

from bot.http.redirects import same_origin_path
from bot.service.grants import reviewer_grant
from storage.db import Database
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings

TOKEN = "hardening-test-token"
REVIEWER = "UREVIEWER"
ORIGIN = URL("http://127.0.0.1:3000")

#: (as the query string's `to` holds it once decoded, where the browser is sent)
TARGETS = [
    ("/\t/evil.example", "/"), ("/\n/evil.example", "/"), ("/\r\n/evil.example", "/"),
    ("\\/evil.example", "/"), ("/\\evil.example", "/"), ("\\\\evil.example", "/"),
    ("https:evil.example", "/"), ("http:evil.example", "/"), ("http:\\\\evil.example", "/"),
    ("//evil.example", "/"), (" //evil.example", "/"), ("\x00//evil.example", "/"),
    ("/\x00/evil.example", "/"), ("\t/\t/evil.example", "/"), ("javascript:alert(1)", "/"),
    (" javascript:alert(1)", "/"), ("JaVaScRiPt:alert(1)", "/"), ("data:text/html,hi", "/"),
    ("evil.example", "/"), ("", "/"),
    # percent-encoded once more: the browser does not decode a path, so these stay here
    ("/%09/evil.example", "/%09/evil.example"), ("/%5Cevil.example", "/%5Cevil.example"),
    ("/%2F/evil.example", "/%2F/evil.example"),
    # plain paths of this site, kept as given
    ("/ /evil.example", "/ /evil.example"), ("/reviews", "/reviews"),
    ("/debates/abc?x=1#top", "/debates/abc?x=1#top"), ("  /reviews\t", "/reviews"),
]


@pytest.mark.parametrize(("to", "expected"), TARGETS, ids=range(len(TARGETS)))
def test_a_redirect_target_is_a_path_of_this_site_as_a_browser_reads_it(
        to: str, expected: str) -> None:
    target = same_origin_path(to, ORIGIN)
    assert target == expected
    assert ORIGIN.join(URL(target)).origin() == ORIGIN


def _continue_to(page: str) -> tuple[str, str]:
    """Where the signed-in page sends the browser: its refresh and its Continue link."""
    refresh = re.search(r'http-equiv="refresh" content="1;url=([^"]*)"', page)
    link = re.search(r'id="continue" href="([^"]*)"', page)
    assert refresh is not None and link is not None, page[:500]
    return refresh[1], link[1]


async def test_signing_in_never_continues_off_site(sqlite_db: Database) -> None:
    settings = rehearsal_settings(api_token=TOKEN, reviewers=REVIEWER)
    grant = reviewer_grant(settings.service, REVIEWER)
    async with served(sqlite_db, settings) as (base, _, _):
        for to, expected in TARGETS:
            async with aiohttp.ClientSession() as s, \
                    s.post(f"{base}/signin/link", data={"grant": grant, "to": to}) as resp:
                assert resp.status == 200
                refresh, link = _continue_to(await resp.text())
            assert (refresh, link) == (_html(expected), _html(expected)), to


def _html(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&#34;").replace("<", "&lt;")
            .replace(">", "&gt;").replace("'", "&#39;"))


SECURITY = {
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


async def test_every_response_carries_the_security_headers(sqlite_db: Database) -> None:
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        async with s.post(f"{base}/api/debates", json={"topic": "t", "mode": "simple"}) as r:
            debate_id = (await r.json())["id"]
        paths = ["/", "/healthz", "/api/debates", f"/debates/{debate_id}", "/no-such-page",
                 "/api/debates/nope", "/static/console.js", "/signin", "/openapi.json"]
        for path in paths:
            async with s.get(f"{base}{path}") as resp:
                _assert_hardened(resp, path)
        async with s.post(f"{base}/signout", allow_redirects=False) as moved:
            _assert_hardened(moved, "/signout")
        async with s.get(f"{base}/api/debates/{debate_id}/events") as stream:
            _assert_hardened(stream, "events")


def _assert_hardened(resp: aiohttp.ClientResponse, what: str) -> None:
    for name, value in SECURITY.items():
        assert resp.headers.get(name) == value, (what, name, resp.status)
    policy = resp.headers.get("Content-Security-Policy", "")
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'",
                      "frame-ancestors 'none'"):
        assert directive in policy, (what, policy)
    assert "unsafe-inline" not in policy


@pytest.mark.parametrize("public_url", ["https://dialectic.example", "http://127.0.0.1:3000"])
async def test_cookies_are_secure_behind_an_https_public_url(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch, public_url: str) -> None:
    monkeypatch.setenv("DIALECTIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("DIALECTIC_PUBLIC_URL", public_url)
    async with served(sqlite_db, rehearsal_settings(), workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        async with s.get(f"{base}/", params={"token": TOKEN}, allow_redirects=False) as signed:
            cookies = signed.headers.getall("Set-Cookie", [])
        async with s.post(f"{base}/signout", allow_redirects=False) as out:
            cookies += out.headers.getall("Set-Cookie", [])
    assert len(cookies) == 2, cookies
    for cookie in cookies:
        assert ("; Secure" in cookie) is public_url.startswith("https://"), cookie
