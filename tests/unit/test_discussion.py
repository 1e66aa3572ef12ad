"""What presets promise beyond the panel's figures, computed once (engine/reading/discussion.py):
`decision` flags "needs human discussion" below the escalate cut-off it was routed by, with the
three core divergence points; `brief` carries the one-page brief; other presets carry neither."""

from __future__ import annotations

import pytest

from engine.core.presets import BUILTIN_PRESETS
from engine.domain import (
    ConsensusSummary,
    DebateResult,
    DivergencePoint,
    DivergenceSummary,
    TraceRow,
)
from engine.reading.discussion import arguments_map, brief_for, brief_of, discussion_for
from engine.reading.headline import PanelScores, alpha_text, panel_headline
from engine.reading.verdicts import band_for
from engine.settings import PresetSpec, ThresholdSpec
from engine.vocabulary import Band, Side

DECISION = BUILTIN_PRESETS["decision"]
WIDE = [DivergencePoint(item=f"pro.d{i}", label=f"split {i}", mean=5.0, spread=7.0 - i)
        for i in range(5)]
NARROW = [DivergencePoint(item=f"con.d{i}", label=f"agree {i}", mean=6.0, spread=0.5)
          for i in range(7)]
SPLIT = DivergenceSummary(agreements=NARROW, disagreements=WIDE[:3])


def panel(alpha: float | None, thresholds: ThresholdSpec | None = None,
          irreconcilable: bool = False) -> ConsensusSummary:
    return ConsensusSummary(alpha=alpha, thresholds=thresholds, irreconcilable=irreconcilable)


@pytest.mark.parametrize(("preset", "alpha", "recorded", "needed", "reason"), [
    (DECISION, 0.31, None, True, "alpha 0.31 < 0.50"),
    (DECISION, -0.4, None, True, "alpha -0.40 < 0.50"),
    (DECISION, 0.4996, None, True, "alpha 0.499 < 0.50"),     # never printed as 0.50 < 0.50
    (DECISION, 0.50, None, False, "alpha 0.50 ≥ 0.50"),
    (DECISION, 0.93, None, False, "alpha 0.93 ≥ 0.50"),
    # the cut-off the panel was routed by: an operator's or the preset's own
    (DECISION, 0.55, ThresholdSpec(high=0.9, tentative=0.75, escalate=0.6), True,
     "alpha 0.55 < 0.60"),
    (DECISION, 0.45, ThresholdSpec(high=0.9, tentative=0.75, escalate=0.4), False,
     "alpha 0.45 ≥ 0.40"),
    (PresetSpec(name="adr", discussion=True,
                thresholds=ThresholdSpec(high=0.85, tentative=0.7, escalate=0.65)),
     0.62, None, True, "alpha 0.62 < 0.65"),
    (DECISION, None, None, False, "alpha n/a: the judges' agreement could not be measured"),
    (DECISION, float("nan"), None, False,
     "alpha n/a: the judges' agreement could not be measured"),
])
def test_decision_flags_discussion_below_its_cutoff(
        preset: PresetSpec, alpha: float | None, recorded: ThresholdSpec | None, needed: bool,
        reason: str) -> None:
    flag = discussion_for(preset, panel(alpha, recorded), SPLIT)
    assert flag is not None
    assert (flag.needed, flag.reason) == (needed, reason)
    assert flag.cutoff == (recorded or preset.thresholds).escalate
    assert flag.points == (WIDE[:3] if needed else [])


@pytest.mark.parametrize("name", ["default", "market", "compliance", "appeal", "brief"])
def test_only_a_preset_that_promises_it_flags_discussion(name: str) -> None:
    assert discussion_for(BUILTIN_PRESETS[name], panel(0.1), SPLIT) is None


def test_no_panel_no_flag() -> None:
    """A decision downgraded to a mode without judges has nothing to flag."""
    assert discussion_for(DECISION, None, SPLIT) is None


def test_fewer_splits_than_three_are_all_listed() -> None:
    flag = discussion_for(DECISION, panel(0.2), DivergenceSummary(disagreements=WIDE[:2]))
    assert flag is not None and flag.needed and flag.points == WIDE[:2]


@pytest.mark.parametrize("alpha", [-0.3, 0.0, 0.2, 0.49, 0.4999])
def test_a_flagged_panel_is_contentious_and_its_headline_contested(alpha: float) -> None:
    """The flag and the headline read the same cut-off: flagged is never "settled"."""
    flag = discussion_for(DECISION, panel(alpha), SPLIT)
    assert flag is not None and flag.needed
    band = band_for(alpha, DECISION.thresholds)
    assert band is Band.CONTENTIOUS
    votes = {"a": Side.PRO, "b": Side.PRO, "c": Side.PRO}
    said = panel_headline(votes, PanelScores(means={Side.PRO: 7.0, Side.CON: 4.0}, alpha=alpha,
                                             contentious=band is Band.CONTENTIOUS,
                                             thresholds=DECISION.thresholds))
    assert said.winner is None   # a unanimous vote, contested scores: never settled
    assert said.text.startswith("The judges agree on the winner but not on the scores")
    shown = alpha_text(alpha, DECISION.thresholds)
    assert f"alpha {shown} (below 0.50)" in said.text and shown != "0.50"


def row(rid: str, side: Side, strength: float | None) -> TraceRow:
    return TraceRow(id=rid, side=side, claim=f"claim {rid}", strength=strength)


TRACE = [row("A1", Side.PRO, 3), row("A2", Side.PRO, 9), row("A3", Side.PRO, None),
         *(row(f"A{i}", Side.PRO, i) for i in range(4, 9)),
         row("B1", Side.CON, 8), row("B2", Side.CON, 2)]


@pytest.mark.parametrize(("per_side", "ids"), [
    (5, ["A2", "A8", "A7", "A6", "A5", "B1", "B2"]),
    (2, ["A2", "A8", "B1", "B2"]),
    (20, ["A2", "A8", "A7", "A6", "A5", "A4", "A1", "A3", "B1", "B2"]),
])
def test_the_arguments_map_keeps_each_sides_strongest(per_side: int, ids: list[str]) -> None:
    assert [r.id for r in arguments_map(TRACE, per_side=per_side)] == ids


@pytest.mark.parametrize(("name", "irreconcilable", "has_brief"), [
    ("brief", False, True), ("brief", True, True), ("decision", True, False),
    ("market", False, False), ("default", False, False),
])
def test_the_brief_preset_carries_its_one_page_brief(name: str, irreconcilable: bool,
                                                      has_brief: bool) -> None:
    brief = brief_for(BUILTIN_PRESETS[name], panel(0.3, irreconcilable=irreconcilable), SPLIT,
                      TRACE)
    if not has_brief:
        assert brief is None
        return
    assert brief is not None
    assert brief.points == WIDE[:3] and brief.agreements == NARROW[:5]
    assert brief.split_on_winner is irreconcilable
    assert [r.id for r in brief.arguments] == ["A2", "A8", "A7", "A6", "A5", "B1", "B2"]


def test_a_result_without_a_stored_brief_gets_the_same_selection() -> None:
    result = DebateResult(id="d", status="completed", mode="consensus", topic="t",
                          preset="brief", consensus=panel(0.3), divergence=SPLIT,
                          trace_table=TRACE)
    stored = brief_for(BUILTIN_PRESETS["brief"], result.consensus, SPLIT, TRACE)
    assert brief_of(result) == stored
    assert brief_of(result.model_copy(update={"brief": stored})) is stored
