"""The console's server-drawn pictures and its live fold: the heatmap has a cell per judge and
criterion, darker for higher, escaped labels; the band scale names alpha as alpha_text does (so
it cannot contradict its band); the timeline folds what a live page shows from the audit chain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.http.charts import alpha_scale_svg, cell_colour, columns, heatmap_svg
from bot.service.timeline import timeline_of
from engine.domain import ConsensusSummary, DebateRequest
from engine.settings import EngineSettings, ThresholdSpec
from storage.records import AuditEvent, DebateRecord, DebateStatus

ITEMS = ["pro.logic", "pro.evidence", "con.logic", "con.evidence", "claim.P1"]


def _consensus(**fields: object) -> ConsensusSummary:
    values: dict[str, object] = {
        "alpha": 0.7, "judges": ["ada", "<b>bob</b>"], "items": ITEMS,
        "ratings": {"ada": [7, 8, 3, None, 6], "<b>bob</b>": [6, 9, 4, 5, 12.5]}}
    values.update(fields)
    return ConsensusSummary.model_validate(values)


def test_the_heatmap_has_a_cell_per_judge_and_criterion() -> None:
    svg = str(heatmap_svg(_consensus()))
    assert svg.count("<rect") == 2 * len(ITEMS)
    assert svg.count('class="hm-none"') == 1                     # ada never scored con.evidence
    assert "&lt;b&gt;bob&lt;/b&gt;" in svg and "<b>bob" not in svg
    assert ">10.0<" in svg and "12.5" not in svg                 # kept on the 1-10 scale
    assert "raw scores" in svg


def test_calibrated_scores_win_over_raw_ones() -> None:
    svg = str(heatmap_svg(_consensus(calibrated={"ada": [1, 1, 1, 1, 1],
                                                 "<b>bob</b>": [2, 2, 2, 2, 2]})))
    assert "calibrated scores" in svg and ">7.0<" not in svg


def test_no_scores_no_picture() -> None:
    assert str(heatmap_svg(_consensus(judges=[], ratings={}))) == ""


def test_columns_group_by_side_and_claims() -> None:
    assert [(c.group, c.label) for c in columns(ITEMS)] == [
        ("pro", "logic"), ("pro", "evidence"), ("con", "logic"), ("con", "evidence"),
        ("claims", "P1")]


def test_higher_scores_are_darker() -> None:
    def darkness(score: float) -> int:
        fill = cell_colour(score)[0]
        return -sum(int(fill[i:i + 2], 16) for i in (1, 3, 5))
    shades = [darkness(s) for s in range(1, 11)]
    assert shades == sorted(shades) and len(set(shades)) == 10
    assert cell_colour(10)[1] == "#ffffff" and cell_colour(1)[1] == "#111111"


@pytest.mark.parametrize(("alpha", "shown"), [
    (0.79978, "0.799"),      # never "0.80" under a 0.80 cut-off
    (0.81, "0.81"), (None, "n/a"), (-0.2, "-0.20"),
])
def test_the_band_scale_names_alpha_as_alpha_text_does(alpha: float | None, shown: str) -> None:
    svg = str(alpha_scale_svg(alpha, (0.6, 0.9), ThresholdSpec()))
    assert f'aria-label="Krippendorff&#39;s alpha {shown} on the band scale"' in svg
    assert ("<circle" in svg) is (alpha is not None)
    for band in ("contentious", "review", "tentative", "high"):
        assert f">{band}<" in svg


def test_a_band_the_preset_closes_is_not_drawn() -> None:
    svg = str(alpha_scale_svg(0.6, None, ThresholdSpec(high=0.8, tentative=0.5, escalate=0.5)))
    assert ">review<" not in svg and ">tentative<" in svg


def _event(seq: int, kind: str, **data: object) -> AuditEvent:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seq)
    return AuditEvent(seq=seq, debate_id="d1", kind=kind, actor="engine", data=data, at=at,
                      prev_hash="", hash="")


def test_the_timeline_folds_what_a_live_page_shows() -> None:
    engine = EngineSettings()
    record = DebateRecord(id="d1", request=DebateRequest(topic="t", mode="consensus"),
                          mode="consensus", preset="default", status=DebateStatus.DEBATING)
    events = [
        _event(1, "debate_submitted"),
        _event(2, "debate_started", topic="t", mode="consensus"),
        _event(3, "phase_started", phase="opening"),
        _event(4, "step_finished", key="opening/pro", phase="opening", cost_usd=0.001),
        _event(5, "phase_finished", phase="opening", highlights={"pro": "cheaper"},
               elapsed_seconds=1.5),
        _event(6, "judge_scored", judge="ada", winner="pro",
               rubric={"pro": {"logic": 8}, "con": {"logic": 5}}),
        _event(7, "evidence_added", author="U1", text="we tried it"),
        _event(9, "consensus_computed", alpha=0.7, band="tentative"),
    ]
    timeline = timeline_of(engine, record, events, {"judge/ada": "gpt-x"})
    said = dict((view.name, s) for view, s in timeline.phases())
    assert said["opening"] is not None and said["opening"].highlights == {"pro": "cheaper"}
    assert timeline.judges["ada"].winner == "pro" and timeline.judge_model("ada") == "gpt-x"
    assert timeline.evidence == [("U1", "we tried it")]
    assert timeline.consensus == {"alpha": 0.7, "band": "tentative"}
    assert timeline.elapsed_seconds == 7.0 and timeline.last_seq == 9
    assert timeline.progress.cost_usd == pytest.approx(0.001)
