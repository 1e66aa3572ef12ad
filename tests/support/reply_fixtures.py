"""Replies as long as real models write them, and results built from them, for the tests that
check no reply is refused for its length and that every surface shows such a result.

`long_value(Model)` fills every string of a reply schema with 5,000 characters (hostile markup
included, each text opening with `START-<path>` and closing with `END-<path>` so a test can tell
whether it is shown whole) and every list with 12 items; `long_result(mode)` is a finished debate
of that mode whose every text and list is that long.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, TypeVar

from pydantic import BaseModel

from engine.domain import (
    ConsensusSummary,
    CostBreakdown,
    DebateResult,
    DivergencePoint,
    DivergenceSummary,
    PhaseSummary,
    TraceRow,
)
from engine.reading.outcomes import (
    ConsensusOutcome,
    CritiqueOutcome,
    CritiqueRound,
    CritiqueStop,
    ModeOutcome,
    PanelistFinal,
    PanelOutcome,
    PanelStop,
    RedTeamOutcome,
    RoundAgreement,
    SimpleOutcome,
    StructuredOutcome,
)
from engine.schemas import critique, panel, procon, redteam
from engine.schemas.base import StrictReply
from engine.vocabulary import Mode, Side

M = TypeVar("M", bound=BaseModel)
CHARS = 5000
ITEMS = 12
HOSTILE = "<!channel> <@U123> & <https://evil|click> <script>x</script>"
FILLER = f" {HOSTILE} the argument goes on, & on; "


def _schemas(module: ModuleType) -> list[type[StrictReply]]:
    return [c for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, StrictReply) and c.__module__ == module.__name__]


#: Every reply schema of every mode (nested ones too: each is a strict model of its own).
REPLY_SCHEMAS: tuple[type[StrictReply], ...] = tuple(
    s for m in (procon, panel, critique, redteam) for s in _schemas(m))


def long_text(tag: str, chars: int = CHARS) -> str:
    """`chars` characters: START-tag, filler with hostile markup, END-tag."""
    head, tail = f"START-{tag}", f" END-{tag}"
    body = (FILLER * (chars // len(FILLER) + 1))[: chars - len(head) - len(tail)]
    return head + body + tail


class _Filler:
    def __init__(self, chars: int, items: int) -> None:
        self.chars, self.items = chars, items

    def value(self, node: dict[str, Any], root: dict[str, Any], path: str) -> Any:
        if "$ref" in node:
            return self.value(root["$defs"][node["$ref"].split("/")[-1]], root, path)
        if "enum" in node:
            return node["enum"][0]
        kind = node.get("type")
        if kind == "object":
            return {k: self.value(v, root, f"{path}.{k}" if path else k)
                    for k, v in node["properties"].items()}
        if kind == "array":
            return [self.value(node["items"], root, f"{path}[{i}]") for i in range(self.items)]
        if kind == "integer":
            return (node["minimum"] + node["maximum"]) // 2
        if kind == "number":
            return (node["minimum"] + node["maximum"]) / 2
        if kind == "boolean":
            return True
        return long_text(path, self.chars)


def long_value(model: type[BaseModel], *, chars: int = CHARS, items: int = ITEMS) -> dict[str, Any]:
    """A reply to `model` with every string `chars` long and every list `items` long."""
    schema = model.model_json_schema()
    value: dict[str, Any] = _Filler(chars, items).value(schema, schema, "")
    return value


def long_reply(model: type[M], **kw: Any) -> M:
    return model.model_validate(long_value(model, **kw))


def _outcome(mode: Mode) -> ModeOutcome:
    if mode is Mode.SIMPLE:
        return SimpleOutcome(confidence=0.5)
    if mode is Mode.STRUCTURED:
        scores = long_reply(procon.RubricScores)
        return StructuredOutcome(rubric={Side.PRO: scores, Side.CON: scores})
    if mode is Mode.CONSENSUS:
        return ConsensusOutcome()
    if mode is Mode.PANEL:
        finals = [PanelistFinal(name=f"panelist-{i}", persona=long_text(f"persona{i}"),
                                final=long_reply(panel.PanelReflection)) for i in range(ITEMS)]
        rounds = [RoundAgreement(round=r, agreement=0.5, mean_stance=5.5, stance_spread=2,
                                 approvals=6, answered=ITEMS, all_approve=False)
                  for r in range(ITEMS)]
        return PanelOutcome(panelists=finals, agreement_by_round=rounds, rounds_run=ITEMS - 1,
                            stopped_because=PanelStop.ROUND_LIMIT,
                            synthesis=long_reply(panel.PanelSynthesis),
                            grade=long_reply(panel.PanelGrade))
    if mode is Mode.CRITIQUE:
        rounds = [CritiqueRound(round=r, satisfied=False, severity="high", objections=ITEMS,
                                converged=False) for r in range(1, ITEMS + 1)]
        return CritiqueOutcome(stopped_because=CritiqueStop.ROUND_LIMIT, rounds_run=ITEMS,
                               round_limit=ITEMS, rounds=rounds,
                               final=long_reply(critique.FinalAnswer),
                               latest_proposal=long_reply(critique.Proposal))
    return RedTeamOutcome(analysis=long_reply(redteam.Analysis),
                          proposal=long_reply(redteam.StrategyProposal),
                          challenge=long_reply(redteam.RedTeamChallenge),
                          revision=long_reply(redteam.Revision),
                          synthesis=long_reply(redteam.Decision), severity="high",
                          consensus_reached=False)


def long_result(mode: Mode | str = Mode.CONSENSUS) -> DebateResult:
    """A finished debate of `mode` whose every text is 5,000 characters and whose lists hold 12
    items (per side: 12 claims, 12 judges, 12 points of agreement and of divergence)."""
    mode = Mode(mode)
    judges = [f"judge-{j}" for j in range(ITEMS)]
    rows = [TraceRow(id=f"{'P' if side is Side.PRO else 'C'}{i}", side=side,
                     claim=long_text(f"claim-{side}{i}"), evidence=long_text(f"evidence-{side}{i}"),
                     challenged_by=Side.CON if side is Side.PRO else Side.PRO,
                     challenge=long_text(f"challenge-{side}{i}"),
                     response=long_text(f"response-{side}{i}"), strength=6.5)
            for side in (Side.PRO, Side.CON) for i in range(1, ITEMS + 1)]
    items = [f"claim.{r.id}" for r in rows]
    points = [DivergencePoint(item=item, label=long_text(f"label-{item}"), mean=6.0, spread=2.5,
                              ratings={j: 5.0 + k % 3 for k, j in enumerate(judges)})
              for item in items[:ITEMS]]
    consensus = ConsensusSummary(
        alpha=0.42, alpha_interval=(0.2, 0.6), kappa=0.3, band="review", routing="human_review",
        irreconcilable=True, judges=judges, items=items,
        weighted_scores={item: 6.0 for item in items},
        weights=dict.fromkeys(judges, 1.0))
    roles = ([str(Side.PRO), str(Side.CON)] if mode in (Mode.SIMPLE, Mode.STRUCTURED,
                                                         Mode.CONSENSUS)
             else [f"panelist-{i}" for i in range(ITEMS)])
    phases = [PhaseSummary(name=f"phase {n}",
                           highlights={r: long_text(f"highlight-{n}-{r}") for r in roles})
              for n in range(4)]
    return DebateResult(
        id="d-long", status="completed", mode=mode.value, topic=long_text("topic"),
        preset="default", verdict=long_text("verdict"), winner="pro",
        rationale=long_text("rationale"),
        consensus=consensus if mode is Mode.CONSENSUS else None,
        divergence=DivergenceSummary(agreements=points, disagreements=points),
        trace_table=rows if mode in (Mode.SIMPLE, Mode.STRUCTURED, Mode.CONSENSUS) else [],
        phases=phases, outcome=_outcome(mode), routing="human_review",
        cost=CostBreakdown(usd=0.5, prompt_tokens=90_000, completion_tokens=40_000, calls=40),
        elapsed_seconds=120.0)
