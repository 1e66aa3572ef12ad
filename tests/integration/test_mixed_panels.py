"""Panels that mix model families, through the real `openai` client against the fake server:
a judge does not score a side argued by its own family when another family sits on the panel,
and a panel of one family scores it and says so."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from bot.cli.progress import print_summary
from bot.http.pages import TEMPLATES
from bot.http.views import judge_rows
from bot.slack.views.debate import divergence_summary
from bot.slack.views.review import review_request
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, DebateResult
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.settings import JudgeSpec, PresetSpec
from engine.vocabulary import Side
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.slack_view_fixtures import review_for

TOPIC = "Should we move billing to PostgreSQL?"
MIXED = (JudgeSpec(name="gpt", expertise="engineering", model="gpt-4o-mini"),
         JudgeSpec(name="claude", expertise="business", model="claude-3-5-haiku-latest"),
         JudgeSpec(name="gemini", expertise="risk", model="gemini-2.0-flash"))
SAME = (JudgeSpec(name="one", expertise="engineering", model="gpt-4o-mini"),
        JudgeSpec(name="two", expertise="business", model="gpt-4.1-mini"))


async def debate(fake: FakeOpenAI, judges: tuple[JudgeSpec, ...], **models: str
                 ) -> DebateResult:
    settings = gateway_settings(
        fake.base_url, models=models,
        presets={"mixed": PresetSpec(judges=judges)})
    prepared = prepare(settings, DebateRequest(topic=TOPIC, preset="mixed"))
    gateway = OpenAIGateway(settings)
    try:
        return await run_debate(prepared, debate_id="d-mixed", settings=settings, llm=gateway,
                                store=MemoryCheckpointStore(), sink=MemoryEventSink())
    finally:
        await gateway.aclose()


@pytest.mark.integration
async def test_a_judge_of_the_debaters_family_scores_neither_side_when_others_can() -> None:
    async with FakeOpenAI(seed=5) as fake:
        result = await debate(fake, MIXED, pro="gpt-4o-mini", con="gpt-4o-mini")
    c = result.consensus
    assert result.complete and c is not None
    asked = {r.body["model"] for r in fake.requests if "model" in r.body}
    assert {"claude-3-5-haiku-latest", "gemini-2.0-flash"} <= asked   # the panel was mixed
    assert c.families == {"gpt": "openai", "claude": "anthropic", "gemini": "google"}
    assert c.side_families == {"pro": ["openai"], "con": ["openai"]}
    assert c.excluded == {"gpt": [Side.PRO, Side.CON]}
    # its scorecard is kept as given (the audit reads it), and counts nowhere
    assert any(v is not None for v in c.ratings["gpt"])
    assert all(v is None for v in c.calibrated["gpt"])
    assert "gpt" not in c.calls and set(c.calls) == {"claude", "gemini"}
    assert c.winners["gpt"] is not None
    assert len(c.exclusion_notes) == 2
    assert all(n.startswith("self-vote exclusion: gpt (openai)") for n in c.exclusion_notes)
    assert "claude, gemini (anthropic, google) did" in c.exclusion_notes[0]
    # the headline counts the two judges that voted
    assert "both voted" in result.verdict or "of 2 judges" in result.verdict, result.verdict


@pytest.mark.integration
async def test_sides_of_two_families_each_lose_their_own_judge() -> None:
    async with FakeOpenAI(seed=6) as fake:
        result = await debate(fake, MIXED, pro="gpt-4o-mini", con="claude-3-5-haiku-latest")
    c = result.consensus
    assert c is not None and result.complete
    assert c.excluded == {"claude": [Side.CON], "gpt": [Side.PRO]}
    pro_items = [i for i, item in enumerate(c.items) if item.startswith("pro.")]
    con_items = [i for i, item in enumerate(c.items) if item.startswith("con.")]
    assert all(c.calibrated["gpt"][i] is None for i in pro_items)
    assert any(c.calibrated["gpt"][i] is not None for i in con_items)   # it scored the other
    assert all(c.calibrated["claude"][i] is None for i in con_items)
    assert set(c.calls) == {"gemini"}   # only a judge that scored both sides gives a verdict


@pytest.mark.integration
async def test_a_panel_of_the_debaters_family_scores_it_and_says_so() -> None:
    async with FakeOpenAI(seed=7) as fake:
        result = await debate(fake, SAME, pro="gpt-4o-mini", con="gpt-4o-mini")
    c = result.consensus
    assert c is not None and result.complete
    assert c.excluded == {}
    assert set(c.calls) == {"one", "two"} and c.alpha is not None
    assert len(c.exclusion_notes) == 2
    assert all(n.startswith("no self-vote exclusion possible: every judge that scored is openai")
               for n in c.exclusion_notes)


@pytest.mark.integration
async def test_an_azure_deployment_is_of_the_family_it_answers_as() -> None:
    """The deployment's name says nothing; the reply's `model` (o4-mini) does."""
    async with FakeOpenAI(seed=8, deployments={"prod-debater": "o4-mini"}) as fake:
        result = await debate(fake, MIXED, pro="prod-debater", con="prod-debater")
    c = result.consensus
    assert c is not None and result.complete
    assert c.side_families["pro"] == ["openai"]
    assert c.excluded == {"gpt": [Side.PRO, Side.CON]}


@pytest.mark.integration
async def test_every_surface_that_shows_the_panel_says_who_did_not_score_what() -> None:
    async with FakeOpenAI(seed=5) as fake:
        result = await debate(fake, MIXED, pro="gpt-4o-mini", con="gpt-4o-mini")
    note = "self-vote exclusion: gpt (openai) did not score the FOR side"
    message = divergence_summary(result, transcript_url="https://x.example/d")
    assert note in json.dumps(message.blocks)
    console = Console(record=True, width=200)
    print_summary(console, result)
    assert "Panel: " + note in console.export_text()
    review = review_request(review_for(), result, transcript_url="https://x.example/d",
                            thread_link="https://slack.example/t")
    assert note in json.dumps(review.blocks)
    rows = {r.name: r for r in judge_rows(result, None)}
    assert rows["gpt"].model.endswith("(openai) · did not score pro, con")
    assert rows["claude"].model.endswith("(anthropic)")
    page = TEMPLATES.get_template("partials/judges.html").render(
        r=result, judges=list(rows.values()), thresholds=None, record=None,
        **{k: v for k, v in TEMPLATES.globals.items()})
    assert note in page
