"""Typed mode outcomes: one model per mode, and results stored before they were typed still load.

tests/data/legacy_outcomes.json holds the `outcome` of one rehearsal run of every mode as the
engine stored it before outcomes were typed (no `mode` tag; `{}` for consensus), written by that
engine's own code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError
from sqlalchemy import update

from engine.domain import DebateResult
from engine.reading.outcomes import (
    ConsensusOutcome,
    CritiqueOutcome,
    ModeOutcome,
    PanelOutcome,
    RedTeamOutcome,
    SimpleOutcome,
    StructuredOutcome,
)
from engine.schemas.panel import PanelReflection
from engine.vocabulary import Mode
from storage import debates
from storage.db import Database
from storage.models import DebateRow
from tests.support.storage_fixtures import add_debate

LEGACY: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data" / "legacy_outcomes.json").read_text())
TYPES: dict[Mode, type[Any]] = {
    Mode.SIMPLE: SimpleOutcome, Mode.STRUCTURED: StructuredOutcome,
    Mode.CONSENSUS: ConsensusOutcome, Mode.PANEL: PanelOutcome, Mode.CRITIQUE: CritiqueOutcome,
    Mode.REDTEAM: RedTeamOutcome,
}


def stored(mode: str, outcome: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    """A result row's JSON as the old engine wrote it."""
    return {"id": f"old-{mode}", "status": status, "mode": mode, "topic": "Legacy?",
            "outcome": outcome}


def test_the_union_has_one_outcome_per_mode() -> None:
    members = get_args(get_args(ModeOutcome)[0])
    assert {m.model_fields["mode"].default for m in members} == set(Mode)
    assert set(TYPES.values()) == set(members)


@pytest.mark.parametrize("mode", list(Mode))
def test_a_legacy_outcome_loads_typed_and_lists_as_before(mode: Mode) -> None:
    legacy = LEGACY[mode]
    result = DebateResult.model_validate(stored(mode, legacy))
    if legacy:
        assert isinstance(result.outcome, TYPES[mode]) and result.outcome.mode is mode
    else:
        assert result.outcome is None
    assert result.outcome_details() == legacy      # surfaces show what they showed before


@pytest.mark.parametrize("mode", list(Mode))
def test_a_failed_legacy_debate_has_no_outcome(mode: Mode) -> None:
    result = DebateResult.model_validate(stored(mode, {}, status="failed"))
    assert result.outcome is None and result.outcome_details() == {}


@pytest.mark.parametrize("mode", list(Mode))
def test_a_loaded_outcome_saves_tagged_and_loads_back_equal(mode: Mode) -> None:
    result = DebateResult.model_validate(stored(mode, LEGACY[mode]))
    saved = json.loads(result.model_dump_json())
    assert saved["outcome"] is None or saved["outcome"]["mode"] == mode
    assert DebateResult.model_validate(saved) == result


def test_a_panelists_reflection_keeps_its_critique() -> None:
    result = DebateResult.model_validate(stored("panel", LEGACY["panel"]))
    assert isinstance(result.outcome, PanelOutcome)
    finals = [p.final for p in result.outcome.panelists]
    assert finals and all(isinstance(f, PanelReflection) and f.critique for f in finals)


def test_redteam_outcome_reads_its_decision() -> None:
    result = DebateResult.model_validate(stored("redteam", LEGACY["redteam"]))
    assert isinstance(result.outcome, RedTeamOutcome) and result.outcome.synthesis is not None
    assert result.outcome.mitigations == LEGACY["redteam"]["synthesis"]["mitigation_steps"]
    assert result.outcome.consensus_reached is LEGACY["redteam"]["consensus_reached"]


def test_an_outcome_must_belong_to_the_results_mode() -> None:
    with pytest.raises(ValidationError, match="cannot hold"):
        DebateResult(id="x", status="completed", mode="panel", topic="t",
                     outcome=SimpleOutcome(confidence=0.5))


@pytest.mark.parametrize("mode", ["critique", "consensus"])
async def test_storage_reads_a_legacy_result_row(db: Database, mode: str) -> None:
    record = await add_debate(db)
    async with db.transaction() as session:
        await session.execute(update(DebateRow).where(DebateRow.id == record.id)
                              .values(result=stored(mode, LEGACY[mode])))
    async with db.transaction(readonly=True) as session:
        loaded = await debates.get(session, record.id)
    assert loaded.result is not None
    assert loaded.result.outcome_details() == LEGACY[mode]
    assert (loaded.result.outcome is None) == (mode == "consensus")
