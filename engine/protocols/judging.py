"""Judging the pro/con family: one rubric judge, or a panel in parallel, under neutral labels.

Each judge sees the positions as A and B in an order drawn per judge (position bias is real), and
scores both on the rubric and every claim. Scores are mapped back to pro/con before any statistic.
Judges score the debaters' arguments: the untrusted material (the request's context, the policy)
reaches them only spotlighted beside the transcript, and human evidence only through what the
debaters made of it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.core import prompts
from engine.core.prompts import PROMPT_VERSION
from engine.core.runner import DebateContext, StepOutcome
from engine.domain import (
    ConsensusSummary,
    DivergencePoint,
    DivergenceSummary,
    EventKind,
    TraceRow,
    canonical_json,
    sha256,
)
from engine.money.step_models import step_model
from engine.protocols.procon import SIDE_NAME, SIDES, Transcript, background, id_relabel
from engine.protocols.self_vote import (
    argued_by,
    counted_row,
    item_sides,
    self_vote,
    side_families,
    side_steps,
)
from engine.provider.families import UNKNOWN
from engine.provider.llm import Prompt
from engine.reading.figures import point_fields
from engine.reading.headline import PanelScores, panel_headline, weighted_means
from engine.schemas.procon import DIMENSIONS, Label, Scorecard
from engine.settings import JudgeSpec, ThresholdSpec
from engine.untrusted.material import section
from engine.vocabulary import Band, Side

if TYPE_CHECKING:  # the statistics are the context's (engine/ports.py PanelStatistics)
    from engine.reading.verdicts import ItemSpread

#: Judges' roles, and panel judges' step keys: this prefix and the judge's name.
JUDGE_FAMILY = "judge/"

JUDGE_TASK = (
    "Score position A and position B from 1 to 10 on each rubric dimension (logic, evidence, "
    "rebuttal, clarity, relevance). Then assess every numbered claim (ids like A1, B2): its "
    "strength 1-10, whether it was rebutted, and its standing at the end (stands, weakened, "
    "refuted). Name the winner (A, B or tie) and give a rationale under 150 words."
)


@dataclass(slots=True)
class JudgeRun:
    """One judge's scorecard, mapped back from neutral labels to pro/con and real claim ids."""

    judge: JudgeSpec
    order: tuple[Side, Side]
    step: StepOutcome[Scorecard]
    rubric: dict[Side, dict[str, int]]
    claims: dict[str, tuple[int, bool, str]]   # real id -> (strength, rebutted, standing)
    winner: Side | None

    @property
    def ok(self) -> bool:
        return self.step.value is not None


def judge_order(debate_id: str, index: int) -> tuple[Side, Side]:
    """Alternate the order across the panel, starting from a side drawn from the debate id."""
    flip = (int(sha256(debate_id)[:8], 16) + index) % 2
    return (Side.CON, Side.PRO) if flip else SIDES


def judge_key(judge: JudgeSpec) -> str:
    """A judge's role, which is also its step key on a panel."""
    return JUDGE_FAMILY + judge.name


def neutral_labels(order: tuple[Side, Side]) -> dict[Side, str]:
    """Side -> the label a judge sees it under: the first shown is A."""
    return {order[0]: "A", order[1]: "B"}


def side_of(label: Label, labels: dict[Side, str]) -> Side:
    """A judge's call (A, B or tie) as a side."""
    return Side.TIE if label == "tie" else {v: k for k, v in labels.items()}[label]


async def run_judge(ctx: DebateContext, t: Transcript, judge: JudgeSpec, index: int,
                    key: str, shown: dict[tuple[Side, Side], str] | None = None) -> JudgeRun:
    """One judge's call. `shown` holds the user turn for each order already rendered (a panel's):
    judges who see the same order share one string instead of each rendering, and holding while
    its call is out, its own copy of the whole transcript."""
    order = judge_order(ctx.debate_id, index)
    label = neutral_labels(order)
    neutral_ids = _neutral_ids(t, label)
    shown = {} if shown is None else shown
    user = shown.get(order)
    if user is None:
        user = shown[order] = prompts.judge_user(ctx.spotlight, t.topic,
                                                 t.render(label=label, order=order), JUDGE_TASK,
                                                 judge_material(ctx))
    prompt = Prompt(system=prompts.judge_system(ctx.spotlight, judge.expertise), user=user)
    step = await ctx.step(key, role=judge_key(judge), prompt=prompt, schema=Scorecard,
                          model=judge.model or None, temperature=0.2,
                          cache_key=judge_cache_key(prompt, judge, ctx.spotlight.boundary))
    return _map_back(judge, order, label, neutral_ids, step)


def judge_material(ctx: DebateContext) -> str:
    """What a judge sees beside the transcript: the request's context and the policy to judge
    against, both spotlighted."""
    policy = section(ctx.spotlight, "Policy text to judge against:", [ctx.policy_material])
    return "\n\n".join(p for p in (background(ctx), policy) if p)


def judge_cache_key(prompt: Prompt, judge: JudgeSpec, boundary: str) -> str:
    """(the transcript as this judge saw it, labels and order included; the judge's
    configuration and the prompt version). The debate's spotlight boundary is masked: another
    debate with the same transcript gets the same scores. The model is appended by the runner."""
    seen = (prompt.system + "\n" + prompt.user).replace(boundary, "<boundary>")
    transcript = sha256(seen)
    # The vote weight is left out: it changes no scorecard (and evidence weights move it).
    config = sha256(canonical_json({"judge": judge.model_dump(mode="json", exclude={"weight"}),
                                    "prompts": PROMPT_VERSION}))
    return f"judge:{transcript[:32]}:{config[:16]}"


def _neutral_ids(t: Transcript, label: dict[Side, str]) -> dict[str, str]:
    """neutral id (A1) -> real id (P1)."""
    return {v: k for k, v in id_relabel(t, label).items()}


def _map_back(judge: JudgeSpec, order: tuple[Side, Side], label: dict[Side, str],
              neutral_ids: dict[str, str], step: StepOutcome[Scorecard]) -> JudgeRun:
    card = step.value
    if card is None:
        return JudgeRun(judge, order, step, {}, {}, None)
    by_label = {"A": card.position_a, "B": card.position_b}
    rubric: dict[Side, dict[str, int]] = {
        side: {d: int(getattr(by_label[label[side]], d)) for d in DIMENSIONS} for side in SIDES}
    claims: dict[str, tuple[int, bool, str]] = {
        neutral_ids[c.id.strip().upper()]: (c.strength, c.rebutted, str(c.standing))
        for c in card.claims if c.id.strip().upper() in neutral_ids
    }
    return JudgeRun(judge, order, step, rubric, claims, side_of(card.winner, label))


async def run_panel(ctx: DebateContext, t: Transcript, judges: list[JudgeSpec]) -> list[JudgeRun]:
    """Every judge in parallel; each result reported as it lands."""
    shown: dict[tuple[Side, Side], str] = {}

    async def one(i: int, judge: JudgeSpec) -> JudgeRun:
        run = await run_judge(ctx, t, judge, i, judge_key(judge), shown)
        if run.ok:
            await ctx.emit(EventKind.JUDGE_SCORED, judge=run.judge.name, winner=run.winner,
                           rubric=run.rubric, order=list(run.order))
        return run

    return list(await asyncio.gather(*(one(i, j) for i, j in enumerate(judges))))


def items_for(t: Transcript) -> list[str]:
    dims = [f"{side}.{dim}" for side in SIDES for dim in DIMENSIONS]
    return dims + [f"claim.{cid}" for side in SIDES for cid, _ in t.claims(side)]


def _row(run: JudgeRun, items: list[str]) -> list[float | None]:
    row: list[float | None] = []
    for item in items:
        kind, _, name = item.partition(".")
        if kind == "claim":
            found = run.claims.get(name)
            row.append(float(found[0]) if found else None)
        else:
            row.append(float(run.rubric[Side(kind)][name]) if run.rubric else None)
    return row


def _dimension_calls(run: JudgeRun) -> list[Side | None]:
    if not run.rubric:
        return [None] * len(DIMENSIONS)
    calls: list[Side | None] = []
    for dim in DIMENSIONS:
        a, b = run.rubric[Side.PRO][dim], run.rubric[Side.CON][dim]
        calls.append(Side.PRO if a > b else Side.CON if b > a else Side.TIE)
    return calls


@dataclass(slots=True)
class PanelResult:
    consensus: ConsensusSummary
    divergence: DivergenceSummary
    winner: Side | None
    verdict: str
    rationale: str
    trace: list[TraceRow]


def panel_consensus(ctx: DebateContext, t: Transcript, runs: list[JudgeRun],
                    trace: list[TraceRow], thresholds: ThresholdSpec) -> PanelResult:
    """Alpha, kappa, calibration, weighted vote and divergence over the panel's scorecards, each
    judge's ratings of a side argued by its own family left out when another family sits on the
    panel (engine/protocols/self_vote.py)."""
    ok = [r for r in runs if r.ok]
    items = items_for(t)
    given = {r.judge.name: _row(r, items) for r in ok}
    families = {r.judge.name: judge_family(ctx, r) for r in ok}
    argued = argued_by(t)
    sides = side_families(argued, ctx.settings.family_of)
    vote = self_vote(families, sides)
    where = item_sides(t, items)
    scores = {j: counted_row(j, row, items, where, vote) for j, row in given.items()}
    voting = [r for r in ok if vote.votes(r.judge.name)]
    winners = {r.judge.name: r.winner for r in voting}
    calls = {r.judge.name: _dimension_calls(r) for r in voting}
    weights = {r.judge.name: r.judge.weight for r in ok}
    summary, div, weighted = ctx.statistics.summarise(
        items, scores, winners, [calls[j] for j in sorted(calls)],
        weights=weights, history=ctx.judge_history or None,
        thresholds=thresholds,
        seed=int(sha256(ctx.debate_id)[:8], 16),
    )
    if len(weighted) != len(items):  # no judge finished: nothing to weigh
        weighted = [None] * len(items)
    weighted_map = dict(zip(items, weighted, strict=True))
    own = {r.judge.name: own_means(r) for r in voting if r.rubric}
    means = weighted_means(own, weights)
    headline = panel_headline(winners, PanelScores(
        means=means, own=own, weights=weights, alpha=summary.alpha,
        contentious=summary.band is Band.CONTENTIOUS, irreconcilable=summary.irreconcilable,
        thresholds=thresholds))
    winner, verdict = headline.winner, headline.text
    consensus = ConsensusSummary(
        alpha=summary.alpha, alpha_interval=summary.alpha_interval, kappa=summary.kappa,
        band=summary.band, routing=summary.routing, irreconcilable=summary.irreconcilable,
        judges=sorted(scores), items=items, ratings={j: given[j] for j in sorted(given)},
        calls={j: calls[j] for j in sorted(calls)}, weighted_scores=weighted_map, weights=weights,
        calibrated=ctx.statistics.calibrate({j: scores[j] for j in sorted(scores)},
                                      ctx.judge_history or None),
        winners={r.judge.name: r.winner for r in ok},
        shown_first={r.judge.name: r.order[0] for r in ok},
        models={r.judge.name: r.step.record.model for r in ok}, lengths=argued_lengths(t),
        thresholds=thresholds, means=means or {},
        families=families, side_models={str(s): m for s, m in argued.items()},
        side_families={str(s): f for s, f in sides.items()},
        excluded={j: list(s) for j, s in sorted(vote.excluded.items())},
        exclusion_notes=vote.notes,
    )
    labels, rows = _labels(t), {j: dict(zip(items, scores[j], strict=True)) for j in scores}
    divergence = DivergenceSummary(
        agreements=[_point(p, labels, rows) for p in div.agreements],
        disagreements=[_point(p, labels, rows) for p in div.disagreements],
    )
    rationale = _rationale(voting, winner)
    return PanelResult(consensus, divergence, winner, verdict, rationale,
                       judged_trace(trace, voting))


def judge_family(ctx: DebateContext, run: JudgeRun) -> str:
    """The family of the model that answered for the judge, else of the one it asked for."""
    found = ctx.settings.family_of(run.step.record.model)
    if found == UNKNOWN:   # the rehearsal model, a name nobody knows: the model asked for
        found = ctx.settings.family_of(step_model(
            ctx.settings, ctx.request.options, run.step.record.key, judge_key(run.judge),
            run.judge.model or None))
    return found


def argued_lengths(t: Transcript) -> dict[str, int]:
    """Characters each side argued over every phase (the text of its outputs), which the judge
    audit correlates with each judge's scores."""
    return {str(side): sum(_characters(s.value.model_dump()) for s in steps if s.value)
            for side, steps in side_steps(t).items()}


def _characters(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_characters(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_characters(v) for v in value)
    return 0


def own_means(run: JudgeRun) -> dict[Side, float]:
    """A judge's own rubric mean per side, as it scored (1-10)."""
    return {side: sum(run.rubric[side].values()) / len(run.rubric[side]) for side in SIDES}


def _rationale(runs: list[JudgeRun], winner: Side | None) -> str:
    agreeing = [r for r in runs if r.winner == winner] or runs
    if not agreeing:
        return ""
    best = max(agreeing, key=lambda r: r.judge.weight)
    card = best.step.value
    return f"{best.judge.name}: {card.rationale}" if card else ""


def _labels(t: Transcript) -> dict[str, str]:
    labels = {f"{s}.{d}": f"{SIDE_NAME[s]} · {d}" for s in SIDES for d in DIMENSIONS}
    for side in SIDES:
        for cid, claim in t.claims(side):
            text = claim.claim if len(claim.claim) <= 90 else claim.claim[:89] + "…"
            labels[f"claim.{cid}"] = f"{cid} ({SIDE_NAME[side]}): {text}"
    return labels


def _point(p: ItemSpread, labels: dict[str, str],
           rows: dict[str, dict[str, float | None]]) -> DivergencePoint:
    """The point as the statistics chose it (by calibrated spread), with the judges' own
    ratings beside the calibrated ones (engine/reading/figures.py)."""
    raw = {j: v for j in p.ratings if (v := rows.get(j, {}).get(p.item)) is not None}
    return DivergencePoint(**point_fields(p.item, labels.get(p.item, p.item), raw, p.ratings))


def judged_trace(trace: list[TraceRow], runs: list[JudgeRun]) -> list[TraceRow]:
    """Fill each claim's strength, rebutted flag and standing from the judges (majority, mean)."""
    out = []
    for row in trace:
        found = [r.claims[row.id] for r in runs if row.id in r.claims]
        if not found:
            out.append(row)
            continue
        strength = sum(f[0] for f in found) / len(found)
        rebutted = sum(1 for f in found if f[1]) * 2 > len(found)
        standing = Counter(f[2] for f in found).most_common(1)[0][0]
        out.append(row.model_copy(update={
            "strength": round(strength, 2), "rebutted": rebutted, "standing": standing}))
    return out
