"""Reading a debate's result the same way on every surface: whether it is complete, its stored
status in words, how to print alpha so it cannot contradict its band, judges' scores on the
scale they were given in, and the words of the flag on a debate whose untrusted text addresses
the AI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.domain import DebateResult, DivergencePoint
from engine.headline import NOT_AVAILABLE, alpha_text, cutoffs
from engine.outcomes import RedTeamOutcome
from engine.presets import all_presets
from engine.schemas.procon import RubricScores
from engine.settings import EngineSettings, ThresholdSpec
from engine.vocabulary import Band, ResultStatus, Routing
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus, Origin

APPEAL_PRESET = "appeal"  # the preset content appeals run under
FLAG_MEANING = ("The models see it only as quoted material, and a person reviews the result "
                "whatever the judges' agreement.")


def flag_headline(preset: str | None) -> str:
    """"This appeal contains text addressed to the AI." (or "This debate's material ...")."""
    subject = "This appeal" if preset == APPEAL_PRESET else "This debate's material"
    return f"{subject} contains text addressed to the AI."


def is_incomplete(result: DebateResult) -> bool:
    """True when anything is missing: a partial result must never look complete."""
    return (not result.complete or bool(result.missing)
            or result.status in (ResultStatus.FAILED, ResultStatus.TIMED_OUT))


FLAG_MARK = "addressed to the AI"
EVALUATION_MARK = "evaluation"


def to_reviewers(result: DebateResult, origin: Origin) -> bool:
    """Whether a settled result waits for a person: routed to review or escalation, finished,
    and its debate counts in oversight (an evaluation's does not, unless `eval --review`)."""
    return (origin.in_oversight and result.routing in (Routing.HUMAN_REVIEW, Routing.ESCALATE)
            and result.status in (ResultStatus.COMPLETED, ResultStatus.TIMED_OUT))


def evaluation_of(record: DebateRecord) -> str | None:
    """"evaluation 3f2a…" for a debate `dialectic eval` ran (its run's id when known), else
    None: every surface labels such a debate with it."""
    if record.origin.surface != "eval":
        return None
    run = record.origin.evaluation_id
    return f"{EVALUATION_MARK} {run}" if run else EVALUATION_MARK


@dataclass(frozen=True, slots=True)
class Mark:
    """One thing a reader must know before trusting a debate, beyond its status: its words, how
    loud ("bad", "warn", "info") and the debate it points to (the parent, the cached one)."""

    text: str
    tone: str
    points_to: str | None = None


def marks(record: DebateRecord, *, rehearsal: bool = False) -> list[Mark]:
    """The console's badges and the CLI list's notes, in the order they matter. `rehearsal`
    stands for a debate without a result yet (the process's model decides it)."""
    out = []
    if record.flagged:
        out.append(Mark(FLAG_MARK, "bad"))
    if (evaluation := evaluation_of(record)) is not None:
        out.append(Mark(evaluation, "info"))
    result = record.result
    if result is not None and is_incomplete(result):
        out.append(Mark("incomplete", "bad"))
    if result.rehearsal if result is not None else rehearsal:
        out.append(Mark("rehearsal", "warn"))
    if record.downgraded_from:
        out.append(Mark(f"asked {record.downgraded_from}, ran {record.mode}: budget", "warn"))
    if record.parent_id:
        replay = bool(record.reused_steps) or record.origin.surface == "replay"
        out.append(Mark(f"{'replay of' if replay else 're-run of'} {record.parent_id}", "info",
                        record.parent_id))
    if record.cached_from:
        out.append(Mark(f"cached result of {record.cached_from}", "info", record.cached_from))
    return out


def settled(record: DebateRecord) -> bool:
    """Whether a debate has stopped moving on its own: finished, or waiting for a person."""
    return record.status in TERMINAL_STATUSES or record.status is DebateStatus.AWAITING_REVIEW


def missing_count(result: DebateResult | None) -> int:
    """How many parts of a finished debate are missing (0 while it has no result)."""
    return len(result.missing) if result is not None else 0


def status_words(status: DebateStatus | str, result: DebateResult | None) -> str:
    """The stored status as lists and summaries say it (`awaiting review`), with `incomplete`
    added when the debate finished with parts missing (`completed, incomplete`): a partial
    result must not pass for a whole one in a list either."""
    status = DebateStatus(status)
    words = status.value.replace("_", " ")
    failed = status in (DebateStatus.FAILED, DebateStatus.TIMED_OUT)
    if result is not None and is_incomplete(result) and not failed:
        words += ", incomplete"
    return words


# --------------------------------------------------------------------------------------------
# alpha against its band


def thresholds_for(settings: EngineSettings, preset: str | None) -> ThresholdSpec | None:
    """The alpha cut-offs the result's preset routed by; None when the preset is unknown."""
    found = all_presets(settings).get(preset or "default")
    return found.thresholds if found is not None else None


def routed_by(settings: EngineSettings, result: DebateResult) -> ThresholdSpec | None:
    """The alpha cut-offs the result was routed by: the ones it recorded (an operator may have
    applied others than the preset's), else its preset's today."""
    c = result.consensus
    if c is not None and c.thresholds is not None:
        return c.thresholds
    return thresholds_for(settings, result.preset)


def review_reason(result: DebateResult, thresholds: ThresholdSpec | None) -> str:
    """Why a result waits for a person, in one line: a flag, alpha against its band, a split
    panel, no consensus, what is missing."""
    parts = []
    if result.injection:
        parts.append("contains text addressed to the AI")
    c = result.consensus
    if c is not None:
        parts.append(f"alpha {alpha_text(c.alpha, thresholds)} ({c.band})")
        if c.irreconcilable:
            parts.append("the panel splits on the winner (irreconcilable)")
    if isinstance(result.outcome, RedTeamOutcome) and result.outcome.consensus_reached is False:
        parts.append("the synthesizer reports no consensus")
    if not result.complete:
        parts.append("incomplete: " + "; ".join(result.missing[:3]))
    return "; ".join(parts) or "routed for review"


def _cut_text(cut: float) -> str:
    two = f"{cut:.2f}"
    return two if float(two) == cut else f"{cut:g}"


def band_rule(band: Band | str, thresholds: ThresholdSpec) -> str:
    """The band's rule in alpha: "α ≥ 0.80", "0.67 ≤ α < 0.80", "α < 0.50"."""
    high, tentative, escalate = (_cut_text(c) for c in cutoffs(thresholds))
    rules: dict[str, str] = {
        Band.HIGH: f"α ≥ {high}", Band.TENTATIVE: f"{tentative} ≤ α < {high}",
        Band.REVIEW: f"{escalate} ≤ α < {tentative}", Band.CONTENTIOUS: f"α < {escalate}"}
    return rules.get(str(band), "")


# --------------------------------------------------------------------------------------------
# scores on the judges' scale


def _scale() -> tuple[float, float]:
    """The rubric's range (1-10), read from the schema the judges fill in."""
    meta = RubricScores.model_fields["logic"].metadata
    low = next(float(m.ge) for m in meta if getattr(m, "ge", None) is not None)
    high = next(float(m.le) for m in meta if getattr(m, "le", None) is not None)
    return low, high


SCORE_MIN, SCORE_MAX = _scale()


def on_scale(score: float) -> float:
    """A calibrated score put back on the judges' 1-10 scale (calibration can stretch past it)."""
    return min(SCORE_MAX, max(SCORE_MIN, score))


@dataclass(frozen=True, slots=True)
class PointFigures:
    """A divergence point as summaries show it: mean, spread and ratings on the 1-10 scale."""

    mean: float
    spread: float
    ratings: dict[str, float]


def point_figures(point: DivergencePoint) -> PointFigures:
    """The point's figures on the 1-10 scale: when calibration stretched a rating past it, mean
    and spread are recomputed from the ratings put back on the scale."""
    ratings = {judge: on_scale(value) for judge, value in point.ratings.items()}
    if len(ratings) >= 2 and ratings != point.ratings:
        values = list(ratings.values())
        return PointFigures(sum(values) / len(values), max(values) - min(values), ratings)
    return PointFigures(on_scale(point.mean), min(point.spread, SCORE_MAX - SCORE_MIN), ratings)


def side_means(weighted: Mapping[str, float | None]) -> dict[str, float | None]:
    """The mean of each side's weighted scores ("pro.*", "con.*") on the 1-10 scale; None when
    a side has none."""
    means: dict[str, float | None] = {}
    for side in ("pro", "con"):
        values = [on_scale(v) for k, v in weighted.items()
                  if k.startswith(f"{side}.") and v is not None]
        means[side] = sum(values) / len(values) if values else None
    return means


__all__ = [
    "NOT_AVAILABLE",
    "SCORE_MAX",
    "SCORE_MIN",
    "PointFigures",
    "alpha_text",
    "band_rule",
    "evaluation_of",
    "is_incomplete",
    "on_scale",
    "point_figures",
    "review_reason",
    "routed_by",
    "side_means",
    "thresholds_for",
    "to_reviewers",
]
