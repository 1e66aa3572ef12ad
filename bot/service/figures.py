"""How every surface writes what the audits measured: a figure with its sample size and interval
(or "not enough data" with the minimum), a judge's flags, alpha cut-offs and where they come
from. Pure functions, so the terminal, Slack and the console say the same thing."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from bot.service.oversight import JudgeReport, ThresholdsInForce
from engine.oversight.family_audit import Count, FamilyAudit
from engine.oversight.feedback import PresetFeedback
from engine.oversight.inference import Figure
from engine.oversight.judge_audit import JudgeAudit
from engine.oversight.thresholds import ThresholdEvaluation
from engine.settings import ThresholdSpec

__all__ = ["FIGURE_NAMES", "TITLES", "as_json", "cutoffs_text", "evaluation_summary",
           "family_lines", "feedback_text", "figure_parts", "figure_text", "flag_lines",
           "in_force_text", "interval_text", "share"]

TITLES = {"position_bias": "Position bias", "verbosity_bias": "Verbosity bias",
          "leniency": "Leniency", "drift": "Drift", "reviewer_agreement": "Agrees with reviewers"}
FIGURE_NAMES = tuple(TITLES)
SHARES = frozenset({"position_bias", "reviewer_agreement", "overturned", "approved_unchanged",
                    "auto_approved_upheld", "published_upheld", "escalated_overturned"})


def share(value: float) -> str:
    """A share as a percentage: whole when it is one ("100%"), else with a decimal."""
    whole = abs(value * 100 - round(value * 100)) < 1e-9
    return f"{value:.0%}" if whole else f"{value:.1%}"


def _signed(value: float) -> str:
    """+0.42, -1.50; and 0.00 for what rounds to nothing (never "-0.00")."""
    return "0.00" if abs(value) < 0.005 else f"{value:+.2f}"


def _number(name: str, value: float) -> str:
    if name in SHARES:
        return share(value)
    if name == "verbosity_bias":
        return f"ρ {_signed(value)}"
    return f"{_signed(value)} pts"


def _p(value: float) -> str:
    return "<1e-15" if value < 1e-15 else f"={value:.2g}"


def interval_text(figure: Figure) -> str:
    """"62%–79%", "-1.62 to -1.38 pts": the figure's interval in its own unit."""
    if figure.interval is None:
        return ""
    low, high = figure.interval
    if figure.name in SHARES:
        return f"{share(low)}–{share(high)}"
    if figure.name == "verbosity_bias":
        return f"{_signed(low)} to {_signed(high)}"
    return f"{_signed(low)} to {_signed(high)} pts"


def figure_parts(figure: Figure) -> tuple[str, str]:
    """(headline, evidence): "100% vs 50.0% expected" and "95% CI 98.1%–100%, n=200, p<1e-15
    Holm"; or ("not enough data", "12 of the 30 needed") below the minimum."""
    if figure.status != "ok" or figure.estimate is None:
        return "not enough data", (f"{figure.n} of the {figure.min_n} needed"
                                   if not figure.note or figure.note.startswith("not enough")
                                   else figure.note)
    headline = _number(figure.name, figure.estimate)
    if figure.expected is not None and figure.name == "position_bias":
        headline += f" vs {share(figure.expected)} expected"
    if figure.name == "verbosity_bias":
        headline += f", {_signed(figure.detail.get('points_per_doubling', 0.0))} pts per doubling"
    evidence = f"{figure.confidence:.0%} CI {interval_text(figure)}, n={figure.n}"
    if figure.adjusted_p is not None:
        evidence += f", p{_p(figure.adjusted_p)} Holm"
    return headline, evidence


def figure_text(figure: Figure) -> str:
    """One line: the estimate, what no bias predicts, the interval, n and the adjusted p; or
    "not enough data: 12 of the 30 needed"."""
    headline, evidence = figure_parts(figure)
    if figure.status != "ok" or figure.estimate is None:
        return f"{headline}: {evidence}"
    return f"{headline} ({evidence})" + (" ⚑" if figure.flagged else "")


def flag_lines(report: JudgeReport) -> list[str]:
    """One line per flagged figure: "risk (gpt-4o-mini): position bias 100% vs 52% expected"."""
    lines = []
    for audit in report.judges:
        for figure in _flagged(audit):
            lines.append(f"{audit.judge} ({audit.model}): {TITLES[figure.name].lower()} "
                         f"{figure_text(figure).removesuffix(' ⚑')}")
    return lines


def _flagged(audit: JudgeAudit) -> list[Figure]:
    return [f for f in audit.figures if f.flagged]


def feedback_text(counts: PresetFeedback) -> str:
    """Readers' thumbs on a preset, as every surface says them (definitions in
    engine/oversight/feedback.py): "👍 3 · 👎 1 · readers agree with the routing on 2 of 3
    rated results (67%)", and the rehearsal presses left out."""
    parts = [f"👍 {counts.up} · 👎 {counts.down}"]
    if counts.agreement is None and counts.unrouted:
        parts.append(f"no routing to agree with ({counts.unrouted} result(s) of a mode "
                     "without a judge panel)")
    elif counts.agreement is None:
        parts.append("no result with a majority of thumbs yet")
    else:
        parts.append(f"readers agree with the routing on {counts.agreeing} of {counts.rated} "
                     f"rated results ({share(counts.agreement)})")
        if counts.unrouted:
            parts.append(f"{counts.unrouted} result(s) without a panel have no routing")
    if counts.rehearsal:
        parts.append(f"{counts.rehearsal} on rehearsals, not counted")
    return " · ".join(parts)


def cutoffs_text(thresholds: ThresholdSpec) -> str:
    return (f"high {thresholds.high:g} · tentative {thresholds.tentative:g} · "
            f"escalate {thresholds.escalate:g}")


def in_force_text(in_force: ThresholdsInForce) -> str:
    """Which cut-offs routing uses for the preset, and where they come from."""
    text = cutoffs_text(in_force.thresholds)
    applied = in_force.applied
    if in_force.source == "applied" and applied is not None:
        when = applied.applied_at.strftime("%Y-%m-%d %H:%M")
        text += (f" — applied by {applied.applied_by} on {when} UTC; routing uses these over "
                 f"the preset's own ({cutoffs_text(in_force.preset_thresholds)})")
    elif applied is not None and applied.invalid:
        when = applied.applied_at.strftime("%Y-%m-%d %H:%M")
        text += (f" — the preset's own: the cut-offs {applied.applied_by} applied on {when} UTC "
                 f"were set aside ({applied.invalid}); apply valid ones or --reset")
    else:
        text += " — the preset's own"
    return text


def evaluation_summary(evaluation: ThresholdEvaluation) -> dict[str, Any]:
    """What a set of cut-offs would have done to the history, as plain data for the audit."""
    def rate(figure: Figure) -> dict[str, Any]:
        return {"estimate": figure.estimate, "interval": figure.interval, "n": figure.n,
                "status": figure.status}
    return {"thresholds": evaluation.thresholds.model_dump(mode="json"),
            "auto_approved_upheld": rate(evaluation.auto_approved_upheld),
            "published_upheld": rate(evaluation.published_upheld),
            "escalated_overturned": rate(evaluation.escalated_overturned),
            "review_share": evaluation.review_share}


def count_text(count: Count) -> str:
    """"7 of 9 (78%, 95% CI 45%–94%)", or "none" when nothing was counted."""
    if count.n == 0 or count.rate is None or count.interval is None:
        return "none"
    low, high = count.interval
    return (f"{count.hits} of {count.n} ({share(count.rate)}, {count.confidence:.0%} CI "
            f"{share(low)}–{share(high)})")


def family_lines(audit: FamilyAudit) -> list[str]:
    """A model family's lines in the judge audit, every figure with its counts, a small sample
    said to be small."""
    head = (f"{audit.family}: {len(audit.judges)} judge(s) ({', '.join(audit.judges)}), "
            f"{audit.debates} debate(s)")
    if audit.excluded:
        head += f", {audit.excluded} verdict(s) kept out of the vote by self-vote exclusion"
    lines = [head, f"  agrees with the panel's winner   {count_text(audit.panel_agreement)}"]
    if audit.own_side.n == 0:
        lines.append("  self-preference   not measured: no debate had exactly one side argued "
                     "by this family")
        return lines
    lines.append(f"  names its own family's side      {count_text(audit.own_side)}")
    lines.append(f"  other families, the same side    {count_text(audit.others_on_own_side)}")
    preference = audit.self_preference
    if preference is not None:
        small = (f" — small sample (fewer than {audit.min_n} verdicts): not a finding"
                 if audit.small else "")
        lines.append(f"  self-preference   {preference * 100:+.0f} points{small}")
    return lines


def as_json(value: Any) -> Any:
    """A report (dataclasses, pydantic models, figures) as JSON data, the API's form too."""
    return _ANY.dump_python(value, mode="json")


_ANY: TypeAdapter[Any] = TypeAdapter(Any)
