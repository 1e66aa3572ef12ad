"""`dialectic judges report` and `dialectic thresholds show|suggest|apply`: the judge audit, routing
measured against the reviewers, suggested alpha cut-offs with the data behind them, and the one
way to put other cut-offs in force (an operator's explicit action, audited)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from bot.cli.host import CliContext, require_database
from bot.cli.parser import EXIT_OK
from bot.service.figures import (
    FIGURE_NAMES,
    TITLES,
    as_json,
    cutoffs_text,
    evaluation_summary,
    family_lines,
    feedback_text,
    figure_text,
    in_force_text,
    share,
)
from bot.service.oversight import JudgeReport, Oversight, RoutingReport, Suggestion
from bot.service.words import counted
from engine.errors import InvalidRequest
from engine.oversight.inference import Figure
from engine.oversight.judge_audit import AuditPolicy
from engine.oversight.thresholds import SuggestionPolicy, ThresholdEvaluation
from engine.settings import ThresholdSpec


def _say(console: Console, text: str = "") -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _print_json(value: Any) -> None:
    print(json.dumps(as_json(value), indent=2))


# --------------------------------------------------------------------------- judges


async def judges_report(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        report = await hosted.rt.service.oversight.judge_report(days=args.days,
                                                                preset=args.preset)
    if args.json:
        _print_json(report)
    else:
        print_judges(ctx.console, report)
    return EXIT_OK


def _minimums(policy: AuditPolicy) -> str:
    return (f"minimums: {policy.min_verdicts} decisive verdicts (position), "
            f"{policy.min_debates} debates scored with another judge (verbosity, leniency), "
            f"the last {policy.drift_recent} against {policy.drift_baseline} earlier (drift), "
            f"{policy.min_labels} reviewer labels (agreement)")


def print_judges(console: Console, report: JudgeReport) -> None:
    scope = f"preset {', '.join(report.presets)}" if report.presets else "every preset"
    _say(console, f"Judge audit, last {report.days} days ({scope}): {report.debates} judged "
                  f"debates, {report.labelled} with a reviewer's label")
    _say(console, _minimums(report.policy))
    _say(console, f"⚑ flagged: Holm-adjusted p < {report.policy.significance:g} over every test "
                  "here, and an effect at least the policy's minimum")
    if not report.judges:
        _say(console, "\nno judged debates in the window yet: rehearsals and results routed "
                      "nowhere are left out")
    print_feedback(console, report)
    if report.families:
        _say(console, "\nPer model family (self-preference: verdicts naming the side the judge's "
                      "own family argued, against judges of families that argued neither side):")
        for family in report.families:
            for line in family_lines(family):
                _say(console, line)
    for audit in report.judges:
        flags = ", ".join(TITLES[f].lower() for f in audit.flags) or "nothing flagged"
        debates = counted(audit.debates, "debate")
        _say(console, f"\n{audit.judge} ({audit.model}) — {debates} — {flags}")
        for name in FIGURE_NAMES:
            figure: Figure = getattr(audit, name)
            _say(console, f"  {TITLES[name]:<22} {figure_text(figure)}")


def print_feedback(console: Console, report: JudgeReport) -> None:
    """Readers' 👍 / 👎 per preset: user feedback, counted apart from the reviewers' labels."""
    if not report.feedback:
        _say(console, "readers' feedback: none in the window")
        return
    _say(console, "readers' feedback (not reviewer labels):")
    for counts in report.feedback:
        _say(console, f"  {counts.preset:<12} {feedback_text(counts)}")


# --------------------------------------------------------------------------- thresholds


def _policy(args: argparse.Namespace) -> SuggestionPolicy:
    tentative = args.tentative_target if args.tentative_target is not None else min(
        0.90, args.target)
    try:
        return SuggestionPolicy(target=args.target, tentative_target=tentative,
                                criterion=args.criterion)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None


async def show(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        oversight = hosted.rt.service.oversight
        report = await oversight.routing_report(days=args.days)
        in_force = await oversight.in_force()
    if args.json:
        _print_json({"in_force": in_force, "routing": report})
        return EXIT_OK
    _say(ctx.console, "Alpha cut-offs routing uses now:")
    for name, force in in_force.items():
        _say(ctx.console, f"  {name:<12} {in_force_text(force)}")
    print_routing(ctx.console, report)
    return EXIT_OK


def print_routing(console: Console, report: RoutingReport) -> None:
    _say(console, f"\nRouting measured against the reviewers, last {report.days} days "
                  f"(spot checks: {share(report.spot_check_fraction)} of published results)")
    if not report.presets:
        _say(console, "  no judged results in the window yet")
    for item in report.presets:
        r = item.routing
        counts = ", ".join(f"{routing} {n}" for routing, n in r.results.items() if n)
        _say(console, f"\n{r.preset}: {counts or 'no results'}; {r.pending} waiting for a "
                      "reviewer")
        _say(console, "  published, overturned when spot-checked: "
                      f"{figure_text(r.overturned['published'])}")
        _say(console, "  routed, approved unchanged by the reviewer: "
                      f"{figure_text(r.approved_unchanged['routed'])}")
        _say(console, f"  readers' feedback: {feedback_text(item.feedback)}")


async def suggest(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    policy = _policy(args)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        found = await hosted.rt.service.oversight.suggest(args.preset, policy=policy,
                                                          days=args.days)
    if args.json:
        _print_json(found)
    else:
        print_suggestion(ctx.console, found)
    return EXIT_OK


def _rate(figure: Figure) -> str:
    if figure.status != "ok" or figure.estimate is None or figure.interval is None:
        return f"not enough data ({counted(figure.n, 'label')})"
    low, high = figure.interval
    return f"{share(figure.estimate)} ({share(low)}–{share(high)}, {counted(figure.n, 'label')})"


def _evaluation_rows(current: ThresholdEvaluation, suggested: ThresholdEvaluation | None
                     ) -> list[tuple[str, str, str]]:
    def both(name: str) -> tuple[str, str]:
        now = _rate(getattr(current, name))
        return now, _rate(getattr(suggested, name)) if suggested else "—"

    def review(e: ThresholdEvaluation | None) -> str:
        return "—" if e is None or e.review_share is None else share(e.review_share)

    return [("auto-approved upheld", *both("auto_approved_upheld")),
            ("published upheld", *both("published_upheld")),
            ("escalated overturned", *both("escalated_overturned")),
            ("sent to review", review(current), review(suggested))]


def print_suggestion(console: Console, found: Suggestion) -> None:
    s, policy = found.suggestion, found.policy
    _say(console, f"Thresholds for preset {found.preset}, last {found.days} days: "
                  f"{counted(sum(b.results for b in s.current.bands.values()), 'judged result')}, "
                  f"{s.labelled} labelled ({s.effective_labels:.1f} effective labels)")
    _say(console, f"In force: {in_force_text(found.in_force)}")
    judged = ("the estimate itself" if policy.criterion == "point"
              else f"the lower bound of its {share(policy.confidence)} interval")
    _say(console, f"Target: at least {share(policy.target)} of auto-approved and "
                  f"{share(policy.tentative_target)} of published results upheld by reviewers, "
                  f"judged by {judged}")
    if s.suggested is not None:
        _say(console, f"\nSuggested: {cutoffs_text(s.suggested.thresholds)} ({s.reason})")
    else:
        _say(console, f"\nNo suggestion: {s.reason}")
    _say(console, f"\n  {'':<22} {'in force':<32} suggested")
    for label, now, new in _evaluation_rows(s.current, s.suggested):
        _say(console, f"  {label:<22} {now:<32} {new}")
    _say(console, "\nPer band under the cut-offs in force (results / labelled / upheld / "
                  "overturned):")
    for band, count in s.current.bands.items():
        _say(console, f"  {band:<12} {count.results:>5} {count.labelled:>5} {count.upheld:>5} "
                      f"{count.overturned:>5}")
    _say(console, "\nNothing was applied. Routing keeps the cut-offs in force until an operator "
                  f"runs: dialectic thresholds apply --preset {found.preset} --suggested "
                  f"--target {policy.target:g} --as NAME --reason WHY")


async def apply(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        oversight = hosted.rt.service.oversight
        in_force = await oversight.in_force_for(args.preset)
        cutoffs, evidence = await _chosen(oversight, args, in_force.thresholds)
        applied = await oversight.apply(args.preset, cutoffs, by=args.by, note=args.reason,
                                        evidence=evidence)
    if cutoffs is None:
        _say(ctx.console, f"preset {applied.preset} routes by its own cut-offs again "
                          f"({cutoffs_text(in_force.preset_thresholds)}); audited as "
                          f"thresholds_applied by {applied.applied_by}")
        return EXIT_OK
    _say(ctx.console, f"applied to preset {applied.preset} by {applied.applied_by}: "
                      f"{cutoffs_text(cutoffs)} (was {cutoffs_text(in_force.thresholds)}); "
                      f"routing uses these over the preset's own "
                      f"({cutoffs_text(in_force.preset_thresholds)}) from the next debate; "
                      "audited as thresholds_applied")
    return EXIT_OK


async def _chosen(oversight: Oversight, args: argparse.Namespace, current: ThresholdSpec
                  ) -> tuple[ThresholdSpec | None, dict[str, Any]]:
    """The cut-offs the operator chose, and the evidence kept with them."""
    if args.reset:
        return None, {}
    if args.suggested:
        found = await oversight.suggest(args.preset, policy=_policy(args), days=args.days)
        s = found.suggestion
        if s.suggested is None:
            raise InvalidRequest(f"no suggestion to apply: {s.reason}")
        return s.suggested.thresholds, {
            "source": "suggestion", "days": found.days, "reason": s.reason,
            "target": found.policy.target, "tentative_target": found.policy.tentative_target,
            "criterion": found.policy.criterion, "labelled": s.labelled,
            "effective_labels": s.effective_labels,
            "current": evaluation_summary(s.current),
            "suggested": evaluation_summary(s.suggested)}
    given = {name: getattr(args, name) for name in ("high", "tentative", "escalate")
             if getattr(args, name) is not None}
    if not given:
        raise InvalidRequest("say which cut-offs: --high/--tentative/--escalate, --suggested "
                             "or --reset")
    cutoffs = current.model_copy(update=given)
    ThresholdSpec.model_validate(cutoffs.model_dump())   # escalate <= tentative <= high
    evaluation = await oversight.evaluate(args.preset, cutoffs, days=args.days)
    return cutoffs, {"source": "operator", "days": args.days,
                     "evaluation": evaluation_summary(evaluation)}
