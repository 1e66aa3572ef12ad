"""Judge weights from evidence: each judge's vote weight moved from its configured value by how
often it agreed with the reviewers, shrunk toward the configured weight while evidence is thin,
and bounded so that no judge ever dominates the panel.

The rule, whose steps each weight's ``reason`` records:

1. Rates: a judge's agreement ``agreed / labels``
   (``engine.oversight.panel_records.agrees_with_reviewer``) and the pooled rate p of the panel.
2. Fewer than ``min_labels`` labels, or p not above 1/2 (reviewers do not back the typical
   judge, so agreement cannot tell who is right): the configured weight, factor 1.
3. Otherwise the rate shrunk toward the panel, (agreed + k p) / (labels + k) with
   k = ``prior_strength``, and factor = logit(shrunk rate) / logit(p): the log-odds of being
   right is the optimal vote weight of independent voters (Nitzan and Paroush, 1982), taken
   relative to the panel's typical judge so a judge as good as the panel keeps its weight.
4. Bounds: the factor is clipped to [1 / max_factor, max_factor] (default [0.5, 2]); then no
   judge's share of the panel's total weight may exceed ``max_share`` (default 0.5: one judge
   never outweighs all the others together; with n judges the cap is at least 1/n), the excess
   going to the others in proportion to their weights. Weights are relative (the consensus
   divides by their sum), so a judge without evidence keeps exactly its configured weight
   unless the cap moves it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from engine.oversight.panel_records import AgreementCount

__all__ = ["JudgeWeight", "WeightPolicy", "evidence_weights"]

_SLACK = 1e-12


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightPolicy:
    """How much evidence moves a weight, and the bounds every weight stays within."""

    min_labels: int = 30
    prior_strength: float = 20.0
    max_factor: float = 2.0
    max_share: float = 0.5

    def __post_init__(self) -> None:
        if self.min_labels < 0 or self.prior_strength < 0:
            raise ValueError("min_labels and prior_strength must not be negative")
        if self.max_factor < 1.0:
            raise ValueError("max_factor must be at least 1")
        if not 0.0 < self.max_share <= 1.0:
            raise ValueError("max_share must lie in (0, 1]")


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeWeight:
    """One judge's weight, with the evidence and the reason for it."""

    judge: str
    configured: float
    weight: float
    share: float  # of the panel's total weight
    factor: float  # weight from evidence / configured weight, before the share cap
    agreement: float | None  # raw agreement rate; None without labels
    labels: int
    reason: str


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _factor(count: AgreementCount | None, pooled: float | None, policy: WeightPolicy
            ) -> tuple[float, str]:
    labels = count.labels if count is not None else 0
    if count is None or labels < max(policy.min_labels, 1):
        return 1.0, f"configured weight: {labels} reviewer labels of the {policy.min_labels} needed"
    if pooled is None or pooled <= 0.5:
        return 1.0, "configured weight: the reviewers do not back the panel's typical judge"
    k = policy.prior_strength
    shrunk = min(max((count.agreed + k * pooled) / (labels + k), 1e-6), 1 - 1e-6)
    raw = _logit(shrunk) / _logit(pooled)
    factor = min(max(raw, 1.0 / policy.max_factor), policy.max_factor)
    reason = (f"agreed with reviewers {count.agreed}/{labels} vs panel {pooled:.0%}: "
              f"factor {factor:.2f}")
    if factor != raw:
        reason += f" (bounded from {raw:.2f})"
    return factor, reason


def _cap_shares(weights: dict[str, float], max_share: float) -> tuple[dict[str, float], set[str]]:
    """Water-filling: cap shares at max_share (at least 1/n), redistribute the excess."""
    total = sum(weights.values())
    cap = max(max_share, 1.0 / len(weights))
    capped: set[str] = set()
    shares = {judge: w / total for judge, w in weights.items()}
    while True:
        over = {j for j, s in shares.items() if j not in capped and s > cap + _SLACK}
        rest = sum(w for j, w in weights.items() if j not in capped | over)
        if not over or rest <= 0:
            break
        capped |= over
        free = 1.0 - cap * len(capped)
        shares = {j: cap if j in capped else free * w / rest for j, w in weights.items()}
    return {judge: share * total for judge, share in shares.items()}, capped


def evidence_weights(configured: Mapping[str, float], agreement: Mapping[str, AgreementCount],
                     policy: WeightPolicy = WeightPolicy()) -> dict[str, JudgeWeight]:
    """Weights for the configured judges (sorted by name) from their agreement with reviewers;
    ``agreement`` is keyed by judge name (the counts of the model each judge now uses)."""
    if not configured:
        return {}
    if any(w <= 0 for w in configured.values()):
        raise ValueError("configured weights must be positive")
    counted = [agreement[j] for j in configured if j in agreement]
    labels = sum(c.labels for c in counted)
    pooled = sum(c.agreed for c in counted) / labels if labels else None
    factors = {j: _factor(agreement.get(j), pooled, policy) for j in sorted(configured)}
    weights, capped = _cap_shares({j: configured[j] * factors[j][0] for j in factors},
                                  policy.max_share)
    total = sum(weights.values())
    result = {}
    for judge, (factor, reason) in factors.items():
        count = agreement.get(judge)
        if judge in capped:
            reason += f"; capped at {max(policy.max_share, 1 / len(weights)):.0%} of the panel"
        result[judge] = JudgeWeight(
            judge=judge, configured=configured[judge], weight=weights[judge],
            share=weights[judge] / total, factor=factor,
            agreement=count.agreed / count.labels if count and count.labels else None,
            labels=count.labels if count else 0, reason=reason)
    return result
