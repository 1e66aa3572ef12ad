"""`dialectic reviews list|decide` and `dialectic reviewers link`: the review desk's rules from
the terminal, and links that sign a reviewer in to the console."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.service.grants import Purpose, Scope, key_of, unseal
from bot.service.runtime import Runtime
from bot.settings import Settings
from storage.db import Database
from storage.records import Review
from tests.fakes.slack_server import FakeSlack
from tests.integration.test_api_reviews import awaiting_review
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.service_fixtures import rehearsal_settings, runtime

__all__ = ["clean_env", "cli"]  # fixtures


async def pending_review(tmp_path: Path) -> tuple[str, Database, Runtime, Review]:
    """A migrated SQLite file with one debate waiting for reviewer UREV, and its review."""
    url = f"sqlite+aiosqlite:///{tmp_path}/reviews.db"
    db = Database(url)
    await db.upgrade()
    rt = runtime(db, rehearsal_settings(database_url=url, reviewers="UREV"))
    review = await rt.reviews.for_debate(await awaiting_review(rt))
    assert review is not None
    return url, db, rt, review


async def test_decide_from_the_terminal(cli: Cli, tmp_path: Path) -> None:
    url, db, _, review = await pending_review(tmp_path)
    await db.dispose()
    env = {"DATABASE_URL": url, "DIALECTIC_REVIEWERS": "UREV"}

    def run(*args: str) -> tuple[int, str]:
        done = cli(*args, env=env)
        return done.returncode, done.stdout + done.stderr

    code, out = await asyncio.to_thread(run, "reviews", "list")
    assert code == 0 and review.id in out and "synthesizer reports no consensus" in out
    code, out = await asyncio.to_thread(run, "reviews", "decide", review.id, "approve",
                                        "--as", "UOUT")
    assert code == 1 and "only configured reviewers can decide reviews" in out
    code, out = await asyncio.to_thread(run, "reviews", "decide", review.id, "escalate",
                                        "--as", "UREV")
    assert code == 2 and "say why you escalate" in out
    code, out = await asyncio.to_thread(run, "reviews", "decide", review.id, "escalate",
                                        "--as", "UREV", "--reason", "\u200b\u2060 ")
    assert code == 2 and "say why you escalate" in out and "Traceback" not in out
    code, out = await asyncio.to_thread(run, "reviews", "decide", review.id, "escalate",
                                        "--as", "UREV", "--reason", "needs legal")
    assert code == 0 and f"review {review.id} escalated by UREV" in out
    assert "INFO" not in out, "a one-shot command prints its answer, not the service's log"
    code, out = await asyncio.to_thread(run, "reviews", "decide", review.id, "approve",
                                        "--as", "UREV")
    assert code == 1 and "already decided (escalated by UREV)" in out
    code, out = await asyncio.to_thread(run, "reviews", "list")
    assert code == 0 and "nothing waits for a reviewer" in out
    code, out = await asyncio.to_thread(run, "list")
    header, first = out.splitlines()[:2]
    assert header.split()[:5] == ["id", "status", "mode", "cost", "topic"]
    assert first.startswith(review.debate_id)
    code, out = await asyncio.to_thread(run, "audit", "verify", review.debate_id)
    assert code == 0 and out.startswith("audit chain intact: 1 chain, ") and "events" in out


def test_a_reviewer_link_needs_the_token_and_names_its_reviewer(cli: Cli) -> None:
    done = cli("reviewers", "link", "U0123ABC")
    assert done.returncode == 2 and "DIALECTIC_API_TOKEN" in done.stdout + done.stderr
    env = {"DIALECTIC_API_TOKEN": "link-token", "DIALECTIC_PUBLIC_URL": "https://d.example",
           "DIALECTIC_REVIEWERS": "U0123ABC"}
    done = cli("reviewers", "link", "U0123ABC", "--days", "2", env=env)
    assert done.returncode == 0, done.stderr
    link = next(line for line in done.stdout.splitlines() if "/signin/link?grant=" in line)
    assert link.startswith("https://d.example/signin/link?grant=")
    key = key_of(Settings(api_token="link-token").service)
    assert key is not None
    identity = unseal(key, Purpose.REVIEWER, link.split("grant=", 1)[1])
    assert identity is not None and identity.user == "U0123ABC"
    assert identity.scope is Scope.REVIEW
    assert unseal(key, Purpose.SESSION, link.split("grant=", 1)[1]) is None  # not a session


async def _migrated(url: str) -> None:
    db = Database(url)
    await db.upgrade()
    await db.dispose()


@pytest.mark.parametrize(("user", "reviewers", "why"), [
    ("UOUT", "U0123ABC", "UOUT is not a configured reviewer: DIALECTIC_REVIEWERS must list them"),
    ("UOUT", "U0123ABC,S0GROUP", "user groups can be checked only where Slack is configured"),
    ("", "U0123ABC", "a reviewer link names a reviewer"),
    ("  ", "U0123ABC", "a reviewer link names a reviewer"),
])
def test_no_link_for_someone_not_a_reviewer(cli: Cli, tmp_path: Path, user: str,
                                            reviewers: str, why: str) -> None:
    db = tmp_path / "links.db"
    env = {"DIALECTIC_API_TOKEN": "link-token", "DIALECTIC_REVIEWERS": reviewers,
           "DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    asyncio.run(_migrated(env["DATABASE_URL"]))
    done = cli("reviewers", "link", user, env=env)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and why in out and "grant=" not in out, out
    assert len([line for line in out.splitlines() if line.strip()]) == 1, out


async def test_a_decision_from_the_terminal_can_say_it_is_about_the_run(
        cli: Cli, tmp_path: Path) -> None:
    url, db, rt, review = await pending_review(tmp_path)
    done = await asyncio.to_thread(
        cli, "reviews", "decide", review.id, "rerun", "--as", "UREV", "--about", "process",
        "--winner", "pro", env={"DATABASE_URL": url, "DIALECTIC_REVIEWERS": "UREV"})
    assert done.returncode == 0, done.stdout + done.stderr
    decided = await rt.reviews.get(review.id)
    await db.dispose()
    assert (decided.about, decided.named_winner) == ("process", "pro")


async def test_a_link_for_a_member_of_a_reviewer_group_asks_slack(cli: Cli,
                                                                   tmp_path: Path) -> None:
    """`S…` entries are resolved as the review buttons resolve them: usergroups.users.list."""
    await _migrated(url := f"sqlite+aiosqlite:///{tmp_path}/groups.db")
    async with FakeSlack() as slack:
        slack.set_usergroup("S0GROUP", ["UGROUPIE"])
        env = {"DIALECTIC_API_TOKEN": "link-token", "DIALECTIC_REVIEWERS": "U0123ABC,S0GROUP",
               "DATABASE_URL": url, "SLACK_BOT_TOKEN": "xoxb-test",
               "SLACK_SIGNING_SECRET": "signing-secret", "SLACK_API_URL": slack.base_url}
        member = await asyncio.to_thread(cli, "reviewers", "link", "UGROUPIE", env=env)
        outsider = await asyncio.to_thread(cli, "reviewers", "link", "UOUT", env=env)
        asked = [c.args.get("usergroup") for c in slack.calls_to("usergroups.users.list")]
    assert member.returncode == 0 and "/signin/link?grant=" in member.stdout, member.stderr
    out = outsider.stdout + outsider.stderr
    assert outsider.returncode != 0 and "grant=" not in out
    assert "UOUT is not a configured reviewer" in out and "member of a listed user group" in out
    assert asked == ["S0GROUP", "S0GROUP"]
