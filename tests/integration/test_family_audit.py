"""The judge audit per model family, from real debates (the real `openai` client against the
fake server) kept through the real storage: self-preference with its counts, agreement with the
panel, and a small sample said to be small."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rich.console import Console

from bot.cli.oversight import print_judges
from bot.service.oversight import Oversight
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, DebateResult
from engine.oversight.family_audit import audit_families
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.settings import PresetSpec
from engine.vocabulary import Side
from storage import debates, panels
from storage.db import Database
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_mixed_panels import MIXED, TOPIC
from tests.support.audit_fixtures import START
from tests.support.storage_fixtures import make_record

DEBATES = 4


async def mixed_debates() -> list[DebateResult]:
    """Pro argued by gpt-4o-mini (openai), con by Claude (anthropic), a gpt, a Claude and a
    Gemini judge on each."""
    found = []
    async with FakeOpenAI(seed=11) as fake:
        settings = gateway_settings(
            fake.base_url, models={"pro": "gpt-4o-mini", "con": "claude-3-5-haiku-latest"},
            presets={"mixed": PresetSpec(judges=MIXED)})
        gateway = OpenAIGateway(settings)
        try:
            for n in range(DEBATES):
                prepared = prepare(settings, DebateRequest(topic=f"{TOPIC} ({n})",
                                                           preset="mixed"))
                found.append(await run_debate(
                    prepared, debate_id=f"fam-{n}", settings=settings, llm=gateway,
                    store=MemoryCheckpointStore(), sink=MemoryEventSink()))
        finally:
            await gateway.aclose()
    return found


@pytest.mark.integration
async def test_the_audit_reports_self_preference_per_family_with_its_counts(db: Database
                                                                            ) -> None:
    results = await mixed_debates()
    async with db.transaction() as session:
        for n, result in enumerate(results):
            assert result.complete
            await debates.create(session, topic_key=f"fam-{n}", record=make_record(
                id=result.id, preset="mixed", created_at=START))
            assert await panels.record(session, result=result,
                                       finished_at=START + timedelta(hours=n),
                                       spot_check=False, fraction=0.0)
    async with db.transaction(readonly=True) as session:
        history = [item.panel for item in
                   await panels.history(session, since=START - timedelta(days=1))]
    assert len(history) == DEBATES
    by_family = {f.family: f for f in audit_families(history, min_n=30)}
    assert set(by_family) == {"anthropic", "google", "openai"}
    # what the audit counts, counted here from the results themselves
    for family, judge, own in (("openai", "gpt", Side.PRO), ("anthropic", "claude", Side.CON)):
        audit = by_family[family]
        named = [r.consensus.winners[judge] for r in results if r.consensus]
        decisive = [w for w in named if w in (Side.PRO, Side.CON)]
        assert audit.own_side.n == len(decisive)
        assert audit.own_side.hits == sum(1 for w in decisive if w is own)
        gemini = [w for r in results if r.consensus
                  if (w := r.consensus.winners["gemini"]) in (Side.PRO, Side.CON)]
        assert audit.others_on_own_side.n == len(gemini)
        assert audit.others_on_own_side.hits == sum(1 for w in gemini if w is own)
        assert audit.excluded == DEBATES and audit.debates == DEBATES
        assert audit.small   # four debates are not thirty
        agreed = sum(1 for r in results if r.consensus and r.winner is not None
                     and r.consensus.winners[judge] == r.winner)
        assert audit.panel_agreement.hits == agreed
    google = by_family["google"]
    assert google.own_side.n == 0 and google.excluded == 0   # it argued neither side

    # the report every surface reads, and the terminal's words
    oversight = Oversight(gateway_settings("http://127.0.0.1:9/v1"), db,
                          spot_check_fraction=0.0, window_days=30,
                          clock=lambda: START + timedelta(days=1))
    report = await oversight.judge_report()
    assert [f.family for f in report.families] == ["anthropic", "google", "openai"]
    console = Console(record=True, width=240)
    print_judges(console, report)
    text = console.export_text()
    assert "Per model family" in text
    openai = by_family["openai"]
    assert (f"names its own family's side      {openai.own_side.hits} of "
            f"{openai.own_side.n}") in text
    assert "small sample (fewer than 30 verdicts): not a finding" in text
    assert f"{DEBATES} verdict(s) kept out of the vote by self-vote exclusion" in text
    assert "google: 1 judge(s)" in text and "self-preference   not measured" in text
