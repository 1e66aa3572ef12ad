"""What a preset promises beyond the panel's figures, computed once when the result is built so
every surface (Slack, the API, the console, the CLI) reads the same value:

* ``discussion_for`` — `decision`: alpha below the escalate cut-off the panel was routed by
  (0.50 unless the preset or an operator set another) flags "needs human discussion", with the
  three core divergence points (the widest splits between the judges);
* ``brief_for`` — `brief`: the one-page pre-meeting brief: the points to discuss, the
  agreements, the arguments map (each side's strongest claims with their standing).

The flag uses the same cut-off as the band, so a flagged panel is always in the contentious band
and its headline never declares a winner ("Contested: …", or "The judges agree on the winner but
not on the scores: …" for a unanimous vote; engine/reading/headline.py): the two never contradict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from engine.domain import (
    Brief,
    ConsensusSummary,
    DebateResult,
    Discussion,
    DivergenceSummary,
    TraceRow,
)
from engine.reading.headline import alpha_text
from engine.settings import PresetSpec, ThresholdSpec

#: "the three core divergence points"
CORE_POINTS = 3
AGREEMENTS_SHOWN = 5
CLAIMS_PER_SIDE = 5

__all__ = ["AGREEMENTS_SHOWN", "CLAIMS_PER_SIDE", "CORE_POINTS", "arguments_map", "brief_for",
           "brief_of", "discussion_for"]


def _cut_text(cut: float) -> str:
    two = f"{cut:.2f}"
    return two if float(two) == cut else f"{cut:g}"


def discussion_for(preset: PresetSpec, consensus: ConsensusSummary | None,
                   divergence: DivergenceSummary) -> Discussion | None:
    """The "needs human discussion" flag of a preset that promises it; None for other presets
    and for a debate that ran without a panel (a downgraded one)."""
    if not preset.discussion or consensus is None:
        return None
    thresholds = consensus.thresholds or preset.thresholds
    cutoff = thresholds.escalate
    alpha = consensus.alpha
    shown = alpha_text(alpha, _with_cut(thresholds, cutoff))
    if alpha is None or math.isnan(alpha):
        return Discussion(needed=False, reason="alpha n/a: the judges' agreement could not be "
                                               "measured", alpha=None, cutoff=cutoff)
    if alpha >= cutoff:
        return Discussion(needed=False, reason=f"alpha {shown} ≥ {_cut_text(cutoff)}",
                          alpha=alpha, cutoff=cutoff)
    return Discussion(needed=True, reason=f"alpha {shown} < {_cut_text(cutoff)}", alpha=alpha,
                      cutoff=cutoff, points=list(divergence.disagreements[:CORE_POINTS]))


def _with_cut(thresholds: ThresholdSpec, cutoff: float) -> ThresholdSpec:
    """The thresholds alpha is printed against (the escalate cut-off among them)."""
    return thresholds if thresholds.escalate == cutoff else thresholds.model_copy(
        update={"escalate": cutoff})


def arguments_map(trace: Sequence[TraceRow], *, per_side: int = CLAIMS_PER_SIDE
                  ) -> list[TraceRow]:
    """The trace table condensed: each side's strongest claims (by the judges' strength, the
    unjudged last), sides in the order they argued."""
    rows: list[TraceRow] = []
    for side in dict.fromkeys(row.side for row in trace):
        mine = sorted((r for r in trace if r.side == side), key=lambda r: -(r.strength or 0.0))
        rows += mine[:per_side]
    return rows


def _brief(consensus: ConsensusSummary | None, divergence: DivergenceSummary,
           trace: Sequence[TraceRow]) -> Brief:
    return Brief(points=list(divergence.disagreements[:CORE_POINTS]),
                 split_on_winner=consensus is not None and consensus.irreconcilable,
                 agreements=list(divergence.agreements[:AGREEMENTS_SHOWN]),
                 arguments=arguments_map(trace))


def brief_for(preset: PresetSpec, consensus: ConsensusSummary | None,
              divergence: DivergenceSummary, trace: Sequence[TraceRow]) -> Brief | None:
    """The one-page brief of a preset that promises it (None for the others)."""
    return _brief(consensus, divergence, trace) if preset.brief else None


def brief_of(result: DebateResult) -> Brief:
    """The brief a result carries, or the same selection made from a result stored before
    results carried one (a scheduled brief of an older debate)."""
    if result.brief is not None:
        return result.brief
    return _brief(result.consensus, result.divergence, result.trace_table)
