"""Judge audit: per judge and model, position bias, verbosity bias, leniency, drift and agreement
with the reviewers, each with its sample size, interval and test, or "not enough data".

Merit is never observed, so every bias is measured against the rest of the panel on the same
debates, through a reference one odd judge cannot move: the position expectation comes from a
model that fits the other judges' own position effects, and the score reference is the *median*
of the other judges after each one's own habit (relative to the median judge) is taken out. So a
judge that always picks Position A, or loves length, or scores low, does not make its fair
neighbours look biased the other way. Pure functions; the caller chooses the window of records.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from statistics import median

import numpy as np
import numpy.typing as npt

from engine.oversight.inference import (
    SPEARMAN_VARIANCE,
    Figure,
    fisher_interval,
    holm,
    mean_interval,
    normal_p_value,
    not_enough_data,
    poisson_binomial_test,
    spearman,
    wilson_interval,
    z_for,
)
from engine.oversight.panel_records import (
    SIDES,
    AgreementCount,
    JudgeKey,
    JudgeVerdict,
    PanelRecord,
    agreement_counts,
)

__all__ = [
    "AuditPolicy",
    "JudgeAudit",
    "audit_judges",
    "drift",
    "leniency",
    "position_bias",
    "reviewer_agreement",
    "verbosity_bias",
]

FloatArray = npt.NDArray[np.float64]

#: Prior standard deviations (log-odds) of the position model: a debate's merit, and a judge's
#: position effect. They keep estimates finite when every vote on a debate, or every vote of a
#: judge, goes one way; 1.5 lets a unanimous panel of three put ~0.9 on its side.
_MERIT_SD = 1.5
_POSITION_SD = 2.0
_FIT_ITERATIONS = 200
_FIT_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditPolicy:
    """Minimum sample sizes, the family-wise significance level (Holm over every test in the
    report) and the smallest effect worth a flag, per figure."""

    confidence: float = 0.95
    significance: float = 0.05
    min_verdicts: int = 30  # decisive verdicts, for position bias
    min_debates: int = 30  # scored debates with another judge, for verbosity and leniency
    drift_recent: int = 30  # the last N debates compared with every earlier one ...
    drift_baseline: int = 30  # ... of which there must be at least this many
    min_labels: int = 20  # reviewer-labelled verdicts, for agreement
    min_position_effect: float = 0.10  # share of verdicts: observed minus expected A-wins
    min_verbosity_effect: float = 0.50  # rubric points per doubling of the length ratio
    min_leniency_effect: float = 0.50  # rubric points
    min_drift_effect: float = 0.50  # rubric points

    def min_effect(self, figure: str) -> float:
        return {"position_bias": self.min_position_effect,
                "verbosity_bias": self.min_verbosity_effect,
                "leniency": self.min_leniency_effect,
                "drift": self.min_drift_effect}[figure]


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeAudit:
    """Every figure of one judge on one model over the window."""

    judge: str
    model: str
    debates: int
    position_bias: Figure
    verbosity_bias: Figure
    leniency: Figure
    drift: Figure
    reviewer_agreement: Figure

    @property
    def figures(self) -> tuple[Figure, ...]:
        return (self.position_bias, self.verbosity_bias, self.leniency, self.drift,
                self.reviewer_agreement)

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.figures if f.flagged)


# --------------------------------------------------------------------------- records


def _scored(verdict: JudgeVerdict) -> bool:
    return all(side in verdict.scores for side in SIDES)


def _find(panel: PanelRecord, key: JudgeKey) -> JudgeVerdict | None:
    return next((v for v in panel.verdicts if v.key == key), None)


def _chronological(panels: Iterable[PanelRecord]) -> list[PanelRecord]:
    return sorted(panels, key=lambda p: (p.finished_at, p.debate_id))


# --------------------------------------------------------------------------- position


def _expit(x: FloatArray) -> FloatArray:
    return np.asarray(np.exp(-np.logaddexp(0.0, -x)), dtype=np.float64)


def _merits(debate: npt.NDArray[np.intp], judge: npt.NDArray[np.intp], pro_first: FloatArray,
            picked_pro: FloatArray, n_debates: int) -> FloatArray:
    """Each debate's merit (log-odds that a judge without position bias picks pro) from the
    votes given, fitting every judge's position effect alongside: logit P(pro) = merit_d +
    position_j * (+1 if pro was shown first else -1), Gaussian priors, alternating Newton steps.
    """
    n_judges = int(judge.max()) + 1 if judge.size else 0
    merit = np.zeros(n_debates)
    position = np.zeros(n_judges)
    for _ in range(_FIT_ITERATIONS):
        p = _expit(merit[debate] + position[judge] * pro_first)
        gradient = np.bincount(debate, picked_pro - p, n_debates) - merit / _MERIT_SD**2
        curvature = np.bincount(debate, p * (1 - p), n_debates) + 1 / _MERIT_SD**2
        merit_step = np.clip(gradient / curvature, -2.0, 2.0)
        merit += merit_step
        p = _expit(merit[debate] + position[judge] * pro_first)
        gradient = (np.bincount(judge, (picked_pro - p) * pro_first, n_judges)
                    - position / _POSITION_SD**2)
        curvature = np.bincount(judge, p * (1 - p), n_judges) + 1 / _POSITION_SD**2
        position_step = np.clip(gradient / curvature, -2.0, 2.0)
        position += position_step
        if max(np.abs(merit_step).max(initial=0.0),
               np.abs(position_step).max(initial=0.0)) < _FIT_TOLERANCE:
            break
    return merit


def position_bias(panels: Sequence[PanelRecord], key: JudgeKey, *, min_n: int = 30,
                  confidence: float = 0.95) -> Figure:
    """How often the judge's winner was the side it saw as "Position A", against what its
    fellow judges' verdicts predict for those debates.

    Expectation per verdict: P(a judge without position bias picks the side this judge saw
    first), from the merit the *other* judges' decisive verdicts imply once their own position
    effects are fitted (see ``_merits``); 0.5 where no other judge was decisive. Ties are
    excluded. Test: exact Poisson-binomial, two-sided. Interval: Wilson, on the observed rate.
    """
    keys = sorted({v.key for p in panels for v in p.verdicts if v.winner in SIDES})
    index = {k: i for i, k in enumerate(keys)}
    rows = [(d, index[v.key], 1.0 if v.shown_first == "pro" else -1.0,
             1.0 if v.winner == "pro" else 0.0)
            for d, p in enumerate(panels) for v in p.verdicts if v.winner in SIDES]
    ties = sum(1 for p in panels for v in p.verdicts if v.key == key and v.winner == "tie")
    mine = [r for r in rows if keys[r[1]] == key]
    if len(mine) < min_n:
        return not_enough_data("position_bias", len(mine), min_n)
    others = [r for r in rows if keys[r[1]] != key]
    merit = _merits(np.array([r[0] for r in others], dtype=np.intp),
                    np.array([r[1] for r in others], dtype=np.intp),
                    np.array([r[2] for r in others]), np.array([r[3] for r in others]),
                    len(panels))
    pro_first = np.array([r[2] for r in mine])
    p_pro = _expit(merit[np.array([r[0] for r in mine], dtype=np.intp)])
    expected = np.where(pro_first > 0, p_pro, 1.0 - p_pro)
    first_won = int(sum(1 for r in mine if (r[3] == 1.0) == (r[2] > 0)))
    n = len(mine)
    return Figure(
        name="position_bias", status="ok", n=n, min_n=min_n, estimate=first_won / n,
        interval=wilson_interval(first_won, n, confidence), confidence=confidence,
        expected=float(expected.mean()),
        p_value=poisson_binomial_test(first_won, [float(x) for x in expected]),
        detail={"first_wins": first_won, "expected_first_wins": float(expected.sum()),
                "ties": ties},
        note="share of decisive verdicts won by the side shown as Position A")


# --------------------------------------------------------------------------- scores


def _mean_score(verdict: JudgeVerdict) -> float:
    return (verdict.scores["pro"] + verdict.scores["con"]) / 2.0


def _preference(verdict: JudgeVerdict) -> float:
    return verdict.scores["pro"] - verdict.scores["con"]


def _log_ratio(panel: PanelRecord) -> float | None:
    pro, con = panel.lengths.get("pro", 0), panel.lengths.get("con", 0)
    return math.log2(pro / con) if pro > 0 and con > 0 else None


def _unit(panel: PanelRecord) -> float:
    return 1.0


def _beyond_median_judge(per_judge: dict[JudgeKey, float]) -> dict[JudgeKey, float]:
    centre = median(per_judge.values()) if per_judge else 0.0
    return {key: value - centre for key, value in per_judge.items()}


def _level_habits(panels: Sequence[PanelRecord]) -> dict[JudgeKey, float]:
    """Each judge's mean offset from the per-debate median score, beyond the median judge's."""
    offsets: dict[JudgeKey, list[float]] = defaultdict(list)
    for panel in panels:
        scored = [v for v in panel.verdicts if _scored(v)]
        if len(scored) >= 2:
            centre = median(_mean_score(v) for v in scored)
            for verdict in scored:
                offsets[verdict.key].append(_mean_score(verdict) - centre)
    return _beyond_median_judge({k: sum(v) / len(v) for k, v in offsets.items()})


def _length_habits(panels: Sequence[PanelRecord]) -> dict[JudgeKey, float]:
    """Each judge's least-squares slope of its preference for pro on log2(length ratio),
    beyond the median judge's (the common slope is the panel rewarding fuller arguments)."""
    points: dict[JudgeKey, list[tuple[float, float]]] = defaultdict(list)
    for panel in panels:
        x = _log_ratio(panel)
        for verdict in panel.verdicts:
            if x is not None and _scored(verdict):
                points[verdict.key].append((x, _preference(verdict)))
    slopes = {key: slope for key, pairs in points.items()
              if (slope := _slope([x for x, _ in pairs], [y for _, y in pairs])) is not None}
    return _beyond_median_judge(slopes)


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    spread = float(((x - x.mean()) ** 2).sum()) if x.size >= 3 else 0.0
    return float(((x - x.mean()) * (y - y.mean())).sum()) / spread if spread > 0 else None


def _against_panel(panels: Sequence[PanelRecord], key: JudgeKey,
                   value: Callable[[JudgeVerdict], float], habits: dict[JudgeKey, float],
                   covariate: Callable[[PanelRecord], float | None]
                   ) -> list[tuple[float, float]]:
    """Per debate where this judge and another scored both sides, in the order given:
    (covariate, the judge's value minus the reference). The reference is the median of the
    other judges' values, each with its own habit (habit x covariate) taken out first, so the
    reference is the panel's typical judge and one odd judge cannot move it."""
    found = []
    for panel in panels:
        mine = _find(panel, key)
        others = [v for v in panel.verdicts if v.key != key and _scored(v)]
        x = covariate(panel)
        if mine is None or not _scored(mine) or not others or x is None:
            continue
        reference = median(value(v) - habits.get(v.key, 0.0) * x for v in others)
        found.append((x, value(mine) - reference))
    return found


def verbosity_bias(panels: Sequence[PanelRecord], key: JudgeKey, *, min_n: int = 30,
                   confidence: float = 0.95) -> Figure:
    """Does the judge reward length more than its panel does?

    Per debate: x = log2(pro length / con length), y = the judge's preference for pro (pro score
    minus con score) minus the panel's typical preference (``_against_panel``). One point per
    debate, so the judge's overall leniency cancels, and a panel that rightly rewards the longer,
    fuller argument does not count against the judge. Spearman's rho, Fisher-z interval (variance
    1.06 / (n - 3)); ``detail["points_per_doubling"]`` is the least-squares slope of y on x.
    """
    pairs = _against_panel(panels, key, _preference, _length_habits(panels), _log_ratio)
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    if len(xs) < max(min_n, 4):
        return not_enough_data("verbosity_bias", len(xs), max(min_n, 4))
    rho = spearman(xs, ys)
    if rho is None:
        return not_enough_data("verbosity_bias", len(xs), min_n,
                               "argument lengths (or relative scores) never varied")
    interval, p_value = fisher_interval(rho, len(xs), confidence, variance=SPEARMAN_VARIANCE)
    slope = _slope(xs, ys)
    return Figure(name="verbosity_bias", status="ok", n=len(xs), min_n=min_n, estimate=rho,
                  interval=interval, confidence=confidence, expected=0.0, p_value=p_value,
                  detail={"points_per_doubling": slope or 0.0},
                  note="rank correlation of relative length with the judge's preference "
                       "beyond the panel median")


def _offsets(panels: Sequence[PanelRecord], key: JudgeKey) -> list[float]:
    """Per debate, in the order given: the judge's mean score minus the panel's typical judge."""
    return [y for _, y in _against_panel(panels, key, _mean_score, _level_habits(panels), _unit)]


def leniency(panels: Sequence[PanelRecord], key: JudgeKey, *, min_n: int = 30,
             confidence: float = 0.95) -> Figure:
    """Mean offset, in rubric points, of the judge's scores from the other judges' median on
    the same debates (negative: harsh). One offset per debate; normal interval and z-test."""
    offsets = _offsets(panels, key)
    if len(offsets) < max(min_n, 2):
        return not_enough_data("leniency", len(offsets), max(min_n, 2))
    mean, se, interval = mean_interval(offsets, confidence)
    p_value = normal_p_value(mean / se) if se > 0 else (0.0 if mean != 0 else 1.0)
    return Figure(name="leniency", status="ok", n=len(offsets), min_n=min_n, estimate=mean,
                  interval=interval, confidence=confidence, expected=0.0, p_value=p_value,
                  note="mean rubric points above the other judges' median")


def drift(panels: Sequence[PanelRecord], key: JudgeKey, *, recent: int = 30,
          min_baseline: int = 30, confidence: float = 0.95) -> Figure:
    """Has the judge's offset from the panel moved? The last ``recent`` debates against every
    earlier one in the window: difference of means, Welch standard error, z = diff / se (the
    two-sigma rule is |z| >= 2; the report applies Holm's correction over all its tests)."""
    offsets = _offsets(_chronological(panels), key)
    needed = recent + max(min_baseline, 2)
    if recent < 2 or len(offsets) < needed:
        return not_enough_data("drift", len(offsets), needed)
    last, before = np.asarray(offsets[-recent:]), np.asarray(offsets[:-recent])
    diff = float(last.mean() - before.mean())
    se = math.sqrt(float(last.var(ddof=1)) / last.size + float(before.var(ddof=1)) / before.size)
    z = diff / se if se > 0 else (math.inf if diff else 0.0)
    half = z_for(confidence) * se
    return Figure(name="drift", status="ok", n=len(offsets), min_n=needed, estimate=diff,
                  interval=(diff - half, diff + half), confidence=confidence, expected=0.0,
                  p_value=normal_p_value(z),
                  detail={"z": z, "recent_mean": float(last.mean()),
                          "baseline_mean": float(before.mean()), "recent_n": int(last.size),
                          "baseline_n": int(before.size)},
                  note="change of the offset from the panel: last debates minus earlier ones")


# --------------------------------------------------------------------------- reviewers


def reviewer_agreement(panels: Sequence[PanelRecord], key: JudgeKey, *, min_n: int = 20,
                       confidence: float = 0.95) -> Figure:
    """Share of the judge's reviewer-labelled verdicts that agreed with the decision."""
    count = agreement_counts(panels).get(key, AgreementCount(agreed=0, labels=0))
    if count.labels < max(min_n, 1):
        return not_enough_data("reviewer_agreement", count.labels, max(min_n, 1))
    return Figure(name="reviewer_agreement", status="ok", n=count.labels, min_n=min_n,
                  estimate=count.agreed / count.labels,
                  interval=wilson_interval(count.agreed, count.labels, confidence),
                  confidence=confidence, detail={"agreed": count.agreed},
                  note="share of labelled verdicts agreeing with the reviewer")


# --------------------------------------------------------------------------- report


_TESTED = ("position_bias", "verbosity_bias", "leniency", "drift")


def _figures(panels: Sequence[PanelRecord], key: JudgeKey, policy: AuditPolicy
             ) -> dict[str, Figure]:
    c = policy.confidence
    return {
        "position_bias": position_bias(panels, key, min_n=policy.min_verdicts, confidence=c),
        "verbosity_bias": verbosity_bias(panels, key, min_n=policy.min_debates, confidence=c),
        "leniency": leniency(panels, key, min_n=policy.min_debates, confidence=c),
        "drift": drift(panels, key, recent=policy.drift_recent,
                       min_baseline=policy.drift_baseline, confidence=c),
        "reviewer_agreement": reviewer_agreement(panels, key, min_n=policy.min_labels,
                                                 confidence=c),
    }


def _effect(figure: Figure) -> float:
    """The size a flag needs, in the figure's practical unit: rubric points per doubling for
    verbosity (a correlation says how consistent, not how large), else estimate - expected."""
    if figure.name == "verbosity_bias":
        return abs(figure.detail.get("points_per_doubling", 0.0))
    return abs((figure.estimate or 0.0) - (figure.expected or 0.0))


def _flag(figure: Figure, adjusted_p: float, policy: AuditPolicy) -> Figure:
    effect = _effect(figure)
    flagged = adjusted_p < policy.significance and effect >= policy.min_effect(figure.name)
    return replace(figure, adjusted_p=adjusted_p, flagged=flagged)


def audit_judges(panels: Sequence[PanelRecord], policy: AuditPolicy = AuditPolicy()
                 ) -> list[JudgeAudit]:
    """The audit of every judge and model in the window, sorted by (judge, model).

    A figure is flagged when its Holm-adjusted p-value (over every test in the report) is below
    ``policy.significance`` *and* its effect reaches the policy's minimum, so a large window
    does not flag a bias too small to matter. Agreement is reported, never flagged.
    """
    ordered = _chronological(panels)
    keys = sorted({v.key for p in ordered for v in p.verdicts})
    figures = {key: _figures(ordered, key, policy) for key in keys}
    tests = [(key, name) for key in keys for name in _TESTED
             if figures[key][name].p_value is not None]
    adjusted = holm([p for key, name in tests if (p := figures[key][name].p_value) is not None])
    for (key, name), p_adjusted in zip(tests, adjusted, strict=True):
        figures[key][name] = _flag(figures[key][name], p_adjusted, policy)
    return [JudgeAudit(judge=key[0], model=key[1],
                       debates=sum(1 for p in ordered if _find(p, key) is not None),
                       position_bias=figures[key]["position_bias"],
                       verbosity_bias=figures[key]["verbosity_bias"],
                       leniency=figures[key]["leniency"], drift=figures[key]["drift"],
                       reviewer_agreement=figures[key]["reviewer_agreement"])
            for key in keys]
