"""No call whose answer cannot be used: a panel whose every panelist failed does not pay for a
reflection on no answers or a synthesis of none; the skipped phases are named in the result, and
the terminal says why the panel stopped."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures

PANELIST = "sitting on a panel of experts"   # every panelist's prompt, answers and reflections
# the provider fails at once: no retry, not even the wait an overloaded provider (503) gets


async def test_a_panel_with_no_answers_skips_reflection_and_synthesis(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        fake.fail(PANELIST, 503, times=None)
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url,
               "DIALECTIC_MAX_RETRIES": "0",
               "DIALECTIC_OVERLOAD_WAIT": "0"}
        done = await asyncio.to_thread(cli, "run", "Adopt an event bus?", "--mode", "panel",
                                       "--rounds", "2", "--json", env=env)
        steps = [r.step for r in fake.requests]
        words = await asyncio.to_thread(cli, "run", "Adopt an event bus?", "--mode", "panel",
                                        "--rounds", "1", env=env)
    result = json.loads(done.stdout)
    assert steps and all("/answer/0/" in step for step in steps), steps   # round 0 only
    assert not any("synth" in step for step in steps)
    assert result["outcome"]["stopped_because"] == "no_answers"
    assert "skipped, as no panelist answered: reflection 1, reflection 2, synthesis" in (
        result["missing"])
    assert result["verdict"].startswith("No synthesis: no panelist answered")
    assert "no panelist answered" in " ".join(words.stdout.split())


@pytest.mark.parametrize(("mode", "skipped"), [
    ("simple", "rebuttal 1, verdict"),
    ("structured", "cross-examination, closing, judging"),
    ("consensus", "cross-examination, closing, judging"),
])
async def test_when_neither_side_argues_nothing_else_is_paid_for(cli: Cli, mode: str,
                                                                  skipped: str) -> None:
    async with FakeOpenAI() as fake:
        fake.fail(lambda body: True, 503, times=None)   # the provider is down
        done = await asyncio.to_thread(cli, "run", "Adopt an event bus?", "--mode", mode,
                                       "--rounds", "1", "--json", env={
                                           "OPENAI_API_KEY": "k", "OPENAI_BASE_URL":
                                           fake.base_url, "DIALECTIC_MAX_RETRIES": "0",
               "DIALECTIC_OVERLOAD_WAIT": "0"})
        steps = [r.step for r in fake.requests]
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["status"] == "failed"
    assert len(steps) == 2 and all("/opening/" in step for step in steps), steps
    assert f"skipped, as neither side made an argument: {skipped}" in result["missing"]


async def test_a_critique_without_a_proposal_critiques_nothing(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        fake.fail(lambda body: True, 503, times=None)
        done = await asyncio.to_thread(cli, "run", "Adopt an event bus?", "--mode", "critique",
                                       "--rounds", "2", "--json", env={
                                           "OPENAI_API_KEY": "k", "OPENAI_BASE_URL":
                                           fake.base_url, "DIALECTIC_MAX_RETRIES": "0",
               "DIALECTIC_OVERLOAD_WAIT": "0"})
        steps = [r.step for r in fake.requests]
    result = json.loads(done.stdout)
    assert len(steps) == 1 and "proposal" in steps[0], steps
    assert result["outcome"]["stopped_because"] == "no_proposal"
    assert ("skipped, as the proposer never answered: critique 1, revision 1, critique 2, "
            "revision 2, final") in result["missing"]


async def test_a_redteam_without_a_proposal_challenges_nothing(cli: Cli) -> None:
    async with FakeOpenAI() as fake:
        fake.fail("who turns analysis into action", 503, times=None)   # the strategist
        done = await asyncio.to_thread(cli, "run", "Adopt an event bus?", "--mode", "redteam",
                                       "--json", env={
                                           "OPENAI_API_KEY": "k", "OPENAI_BASE_URL":
                                           fake.base_url, "DIALECTIC_MAX_RETRIES": "0",
               "DIALECTIC_OVERLOAD_WAIT": "0"})
        steps = [r.step for r in fake.requests]
    result = json.loads(done.stdout)
    assert [s.rsplit("/", 1)[-1] for s in steps] == ["analysis", "proposal"], steps
    assert result["outcome"]["analysis"] is not None and result["outcome"]["proposal"] is None
    assert ("skipped, as there was no proposal to challenge: challenge, revision, synthesis"
            in result["missing"])
