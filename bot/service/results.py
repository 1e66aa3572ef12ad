"""Reading a debate's result the same way on every surface: whether it is complete, its stored
status in words, how to print alpha so it cannot contradict its band, judges' scores on the
scale they were given in, and the words of the flag on a debate whose untrusted text addresses
the AI."""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.presets import all_presets
from engine.domain import ConsensusSummary, DebateResult, DivergencePoint
from engine.reading.figures import SCALE, SCORE_MAX, SCORE_MIN, on_scale, side_means
from engine.reading.headline import NOT_AVAILABLE, alpha_text, cutoffs
from engine.reading.outcomes import RedTeamOutcome
from engine.settings import EngineSettings, ThresholdSpec
from engine.vocabulary import Band, ResultStatus, Routing, Side
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
    reused = _reused(record)
    if record.parent_id:
        replay = bool(record.reused_steps) or record.origin.surface == "replay"
        text = f"{'replay of' if replay else 're-run of'} {record.parent_id}"
        out.append(Mark(text + (f", {reused}" if reused else ""), "info", record.parent_id))
    elif reused:
        out.append(Mark(f"{reused}, not paid again", "info"))
    if record.cached_from:
        out.append(Mark(f"cached result of {record.cached_from}", "info", record.cached_from))
    if record.origin.surface in DOORS_SAID:
        out.append(Mark(DOORS_SAID[record.origin.surface], "info"))
    return out


def _reused(record: DebateRecord) -> str:
    """"6 steps reused": the steps a debate read instead of calling (a replay's from its
    source, judge verdicts from the judge cache); a replay not yet run: the steps it will read."""
    done = record.result is not None
    n = record.result.cost.reused_calls if record.result is not None else len(record.reused_steps)
    return f"{n} step{'' if n == 1 else 's'} {'reused' if done else 'to reuse'}" if n else ""


#: Doors a reader should know a debate came in by (the others say so where it shows: a Slack
#: thread, a schedule's digest, an evaluation's mark).
DOORS_SAID = {"terminal": "from the terminal", "mcp": "from an AI assistant (MCP)"}


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


#: What a routing means for the result, in the words every surface uses: Slack's and the
#: terminal's "Routing: …" line, the console's routing story (as a sentence).
ROUTING_WORDS: dict[str, str] = {
    Routing.AUTO_APPROVE: "published automatically: the judges agree",
    Routing.TENTATIVE: "published as tentative: the judges mostly agree",
    Routing.HUMAN_REVIEW: "sent to a reviewer before it counts",
    Routing.ESCALATE: "escalated to a human reviewer: the judges disagree too much to publish",
    Routing.NONE: "no review routing for this mode: it has no judge panel",
}


def routing_sentence(routing: Routing | str) -> str:
    """"Sent to a reviewer before it counts." (an unknown routing as "Routing: x.")."""
    words = ROUTING_WORDS.get(str(routing))
    return f"{words[0].upper()}{words[1:]}." if words else f"Routing: {routing}."


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


@dataclass(frozen=True, slots=True)
class PointFigures:
    """A divergence point as every surface shows it (engine/reading/figures.py): `mean`, `spread`
    and `ratings` on the 1-10 scale, as the judges scored (`as_scored`) or, for a point stored
    before the two were kept apart, calibrated and put back on the scale; the calibrated mean
    and spread beside them when the point has both."""

    mean: float
    spread: float
    ratings: dict[str, float]
    as_scored: bool = True
    calibrated_mean: float | None = None
    calibrated_spread: float | None = None

    @property
    def text(self) -> str:
        """"mean 6.5, spread 9.0; calibrated mean 7.4, spread 8.0" (each figure named)."""
        figures = f"mean {self.mean:.1f}, spread {self.spread:.1f}"
        if not self.as_scored:
            return f"calibrated {figures}"
        if self.calibrated_mean is None or self.calibrated_spread is None:
            return figures
        return (f"{figures}; calibrated mean {self.calibrated_mean:.1f}, "
                f"spread {self.calibrated_spread:.1f}")

    @property
    def spread_text(self) -> str:
        """"spread 9.0, calibrated 8.0" ("calibrated spread 8.0" for an older point)."""
        if not self.as_scored:
            return f"calibrated spread {self.spread:.1f}"
        if self.calibrated_spread is None:
            return f"spread {self.spread:.1f}"
        return f"spread {self.spread:.1f}, calibrated {self.calibrated_spread:.1f}"


def point_figures(point: DivergencePoint) -> PointFigures:
    """The point's figures on the 1-10 scale. A point built since the judges' own ratings were
    kept is read as stored; an older one holds calibrated figures only: when calibration
    stretched a rating past the scale, mean and spread are recomputed on it."""
    if point.calibrated_mean is not None:
        if point.calibrated == point.ratings:   # no history to calibrate by: one set of figures
            return PointFigures(point.mean, point.spread, dict(point.ratings))
        return PointFigures(point.mean, point.spread, dict(point.ratings), True,
                            point.calibrated_mean, point.calibrated_spread)
    ratings = {judge: on_scale(value) for judge, value in point.ratings.items()}
    if len(ratings) >= 2 and ratings != point.ratings:
        values = list(ratings.values())
        return PointFigures(sum(values) / len(values), max(values) - min(values), ratings,
                            as_scored=False)
    return PointFigures(on_scale(point.mean), min(point.spread, SCORE_MAX - SCORE_MIN), ratings,
                        as_scored=False)


def point_text(point: DivergencePoint) -> str:
    return point_figures(point).text


@dataclass(frozen=True, slots=True)
class RubricMeans:
    """Each side's rubric mean beside a panel's verdict, and what it is ("rubric mean": the
    judges' own scores, which the headline states; "calibrated score" for a result stored before
    those were kept)."""

    name: str
    pro: float | None
    con: float | None


def rubric_means(consensus: ConsensusSummary) -> RubricMeans:
    if consensus.means:
        return RubricMeans("rubric mean", consensus.means.get(Side.PRO),
                           consensus.means.get(Side.CON))
    old = side_means(consensus.weighted_scores)
    return RubricMeans("calibrated score", old["pro"], old["con"])


__all__ = [
    "NOT_AVAILABLE",
    "ROUTING_WORDS",
    "SCALE",
    "SCORE_MAX",
    "SCORE_MIN",
    "PointFigures",
    "RubricMeans",
    "alpha_text",
    "band_rule",
    "evaluation_of",
    "is_incomplete",
    "on_scale",
    "point_figures",
    "point_text",
    "review_reason",
    "routed_by",
    "routing_sentence",
    "rubric_means",
    "side_means",
    "thresholds_for",
    "to_reviewers",
]
