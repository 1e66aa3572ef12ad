"""audit_families on hand-built panels: what counts as own side, who is the neutral baseline."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from engine.oversight.family_audit import audit_families
from engine.oversight.panel_records import (
    AgreementCount,
    JudgeVerdict,
    PanelRecord,
    Side,
    Winner,
    agreement_counts,
)
from engine.provider.families import family_of

AT = datetime(2026, 1, 1, tzinfo=UTC)


def verdict(judge: str, model: str, winner: Winner | None, *, own: tuple[Side, ...] = (),
            family: str = "") -> JudgeVerdict:
    return JudgeVerdict(judge=judge, model=model, shown_first="pro", winner=winner,
                        scores={"pro": 6.0, "con": 5.0}, family=family or family_of(model),
                        own_sides=own,
                        excluded=own)


def panel(n: int, *verdicts: JudgeVerdict, winner: Winner = "con") -> PanelRecord:
    return PanelRecord(debate_id=f"d{n}", finished_at=AT, lengths={"pro": 1, "con": 1},
                       verdicts=verdicts, panel_winner=winner)


def test_own_side_against_judges_of_families_that_argued_neither_side() -> None:
    panels = [panel(n,
                    verdict("gpt", "gpt-4o-mini", "pro", own=("pro",)),       # openai argued pro
                    verdict("claude", "claude-3-5-haiku", "con", own=("con",)),
                    verdict("gemini", "gemini-2.0-flash", "pro" if n == 0 else "con"),
                    verdict("odd", "prod-x", "pro"))                          # unknown family
              for n in range(3)]
    found = {f.family: f for f in audit_families(panels, min_n=2)}
    openai = found["openai"]
    assert (openai.own_side.hits, openai.own_side.n) == (3, 3)
    # the baseline is gemini alone: claude argued a side, `odd` is of no known family
    assert (openai.others_on_own_side.hits, openai.others_on_own_side.n) == (1, 3)
    assert openai.self_preference == pytest.approx(2 / 3)
    assert not openai.small and openai.excluded == 3
    assert (openai.panel_agreement.hits, openai.panel_agreement.n) == (0, 3)
    assert found["anthropic"].others_on_own_side.hits == 2
    assert list(found)[-1] == "unknown" and found["unknown"].own_side.n == 0


def test_both_sides_of_one_family_show_no_preference_to_measure() -> None:
    panels = [panel(0, verdict("gpt", "gpt-4o", "pro", own=("pro", "con")),
                    verdict("gemini", "gemini-2.0-flash", "pro"))]
    openai = {f.family: f for f in audit_families(panels)}["openai"]
    assert openai.own_side.n == 0 and openai.self_preference is None and openai.small


def test_a_record_kept_before_families_is_read_by_its_model_name() -> None:
    before = [replace(verdict("a", "claude-3-5-haiku", "con"), family=""),
              replace(verdict("b", "gpt-4o", "pro"), family="")]
    panels = [panel(0, *before)]
    assert [f.family for f in audit_families(panels, family_of=family_of)] == [
        "anthropic", "openai"]
    assert [f.family for f in audit_families(panels)] == ["unknown"]


def test_an_excluded_verdict_teaches_the_evidence_weights_nothing() -> None:
    """It decided nothing, and its own family argued a side: the reviewers' agreement (and so
    the judge's evidence weight) is read from the verdicts that counted."""
    labelled = [replace(panel(n, verdict("gpt", "gpt-4o", "pro", own=("pro",)),
                              verdict("gemini", "gemini-2.0-flash", "con")), review="approved")
                for n in range(3)]
    counts = agreement_counts(labelled)
    assert ("gpt", "gpt-4o") not in counts
    assert counts[("gemini", "gemini-2.0-flash")] == AgreementCount(agreed=3, labels=3)
