"""Every link the service gives out starts at its one public address: `DIALECTIC_PUBLIC_URL`,
else the host and port the server listens on (`DIALECTIC_PORT`, `serve --port`), as the API,
`reviews list` and `reviewers link` give them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bot.settings import load_settings
from storage.db import Database
from tests.integration.test_cli_reviews import pending_review
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import call, served
from tests.support.pg_server import free_port
from tests.support.service_fixtures import rehearsal_settings

__all__ = ["clean_env", "cli"]  # fixtures


async def test_the_api_reply_links_to_the_port_the_server_listens_on(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.delenv("DIALECTIC_PUBLIC_URL", raising=False)
    monkeypatch.setenv("DIALECTIC_PORT", str(port))
    async with served(db, rehearsal_settings(), port=port) as (base, _, _app):
        assert base.startswith(f"http://127.0.0.1:{port}")
        async with aiohttp.ClientSession() as s:
            status, body = await call(s, "POST", f"{base}/api/debates",
                                      json={"topic": "Should we?", "mode": "simple"})
    assert status == 202, body
    assert body["links"]["transcript"] == f"http://127.0.0.1:{port}/debates/{body['id']}"


async def test_reviews_list_and_reviewer_links_follow_the_port(cli: Cli, tmp_path: Path) -> None:
    url, db, _, review = await pending_review(tmp_path)
    await db.dispose()
    env = {"DATABASE_URL": url, "DIALECTIC_REVIEWERS": "UREV", "DIALECTIC_PORT": "54333",
           "DIALECTIC_API_TOKEN": "t" * 40}
    listed = await asyncio.to_thread(cli, "reviews", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"http://127.0.0.1:54333/debates/{review.debate_id}?" in listed.stdout
    linked = await asyncio.to_thread(cli, "reviewers", "link", "UREV", env=env)
    assert linked.returncode == 0, linked.stderr
    assert "http://127.0.0.1:54333/signin/link?grant=" in linked.stdout
    assert ":3000" not in listed.stdout + linked.stdout


def test_the_public_url_wins_over_the_listening_address(cli: Cli) -> None:
    env = {"DIALECTIC_PORT": "54333", "DIALECTIC_PUBLIC_URL": "https://d.example",
           "DIALECTIC_API_TOKEN": "t" * 40, "DIALECTIC_REVIEWERS": "UREV"}
    linked = cli("reviewers", "link", "UREV", env=env)
    assert linked.returncode == 0, linked.stderr
    assert "https://d.example/signin/link?grant=" in linked.stdout


@pytest.mark.parametrize(("env", "host", "port", "expected"), [
    ({}, None, None, "http://127.0.0.1:3000"),
    ({"DIALECTIC_PORT": "8080"}, None, None, "http://127.0.0.1:8080"),
    ({"DIALECTIC_HOST": "0.0.0.0", "DIALECTIC_PORT": "8080"}, None, None,
     "http://127.0.0.1:8080"),
    ({"DIALECTIC_HOST": "::1"}, None, 9000, "http://[::1]:9000"),
    ({}, "localhost", 54333, "http://localhost:54333"),              # serve --host --port
    ({"DIALECTIC_PUBLIC_URL": "https://d.example"}, None, 54333, "https://d.example"),
])
def test_the_public_address_is_where_the_server_listens_unless_set(
        clean_env: None, monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
        host: str | None, port: int | None, expected: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings().listening_on(host, port)
    assert settings.service.public_url == expected
