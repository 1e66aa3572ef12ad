"""What every protocol (mode) provides: a plan for estimates, an async `run` over the context, and
the names the rest of the system reads instead of matching strings: the phases in which the
debate is being judged, the final steps a replay with another model runs again, and what the
mode's rounds are (which a replay with more rounds continues)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from engine.core.runner import DebateContext
from engine.domain import ConsensusSummary, DivergenceSummary, Plan, TraceRow
from engine.money.cost import token_bound
from engine.options import DebateOptions
from engine.reading.outcomes import ModeOutcome
from engine.settings import JudgeSpec, PresetSpec
from engine.untrusted.material import TOPIC
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import Mode, Side

_PLANNED_SPOT = Spotlight.from_seed("plan")  # every boundary has the same length


@dataclass(slots=True)
class Outcome:
    """What a protocol concluded. Fields a mode does not produce stay empty."""

    verdict: str = ""
    winner: Side | None = None
    rationale: str = ""
    consensus: ConsensusSummary | None = None
    divergence: DivergenceSummary = field(default_factory=DivergenceSummary)
    trace_table: list[TraceRow] = field(default_factory=list)
    outcome: ModeOutcome | None = None
    needs_review: bool = False          # e.g. redteam's consensus_reached == False
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlanInput:
    """What a plan is made from: the resolved request, and the text it sends with every call."""

    rounds: int
    judges: tuple[JudgeSpec, ...]
    preset: PresetSpec
    options: DebateOptions = field(default_factory=DebateOptions)
    judges_requested: int | None = None   # request.judges, as asked (None: the preset's panel)
    topic: str = ""
    context: str = ""

    @property
    def policy(self) -> str:
        return self.options.policy_or(self.preset.policy)

    def carried(self, *texts: str, untrusted: tuple[str, ...] = (),
                context: bool = True) -> int:
        """Tokens (a conservative bound) of the request's own text in one prompt, as the prompt
        carries it: the spotlight's rule, the topic, the policy, the context unless left out and
        `untrusted` texts (a panelist's perspective) spotlighted (datamarks cost more than
        spaces), and `texts` (a persona, a judge's lens) as they are. A plan adds it to every
        call whose prompt carries it."""
        spotlit = (self.topic, self.policy, *untrusted) + ((self.context,) if context else ())
        return _spotlit_bound(spotlit) + sum(_bound(text) for text in texts)


@lru_cache(maxsize=1024)
def _spotlit_bound(texts: tuple[str, ...]) -> int:
    """The spotlight's rule and `texts` wrapped: the same for every call of a plan, so computed
    once (wrapping and bounding a long policy for each planned call was most of an estimate)."""
    wrapped = (_PLANNED_SPOT.wrap(text, label=TOPIC) for text in texts if text.strip())
    return token_bound(_PLANNED_SPOT.rule) + sum(token_bound(w) for w in wrapped)


@lru_cache(maxsize=1024)
def _bound(text: str) -> int:
    return token_bound(text)


@dataclass(frozen=True, slots=True)
class FinalSteps:
    """The step keys of a mode's final stage (verdict, judges, synthesis, grade, final answer):
    exact keys, and key families that end in a name (`judge/` + each judge's name)."""

    keys: frozenset[str] = frozenset()
    families: tuple[str, ...] = ()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self.keys or key.startswith(self.families))


@dataclass(frozen=True, slots=True)
class Rounds:
    """What a mode's rounds are, which a request's `rounds` sets and a replay's `--rounds N`
    continues: their name ("rebuttal rounds"), how many the mode runs for a request's resolved
    `rounds` and its preset (`count`), and the most it runs."""

    noun: str
    most: int
    count: Callable[[int | None, PresetSpec], int]


class DebateProtocol(Protocol):
    """A mode. Its phase names are the same in its plan and its run, so progress counts them."""

    @property
    def mode(self) -> Mode: ...

    @property
    def judging_phases(self) -> frozenset[str]:
        """Phases in which the debate is being judged (the debate's status becomes `judging`)."""
        ...

    @property
    def panel_statistics(self) -> bool:
        """Whether it computes a panel's statistics (alpha, kappa: numpy), so a debate loads them
        while its first calls wait on the provider; a mode without loads none."""
        ...

    @property
    def final_steps(self) -> FinalSteps:
        """Steps a replay always runs again (with the replay's model), never reuses."""
        ...

    @property
    def rounds(self) -> Rounds | None:
        """The mode's rounds; None: a fixed shape, with no rounds to add."""
        ...

    def plan(self, spec: PlanInput) -> Plan: ...

    async def run(self, ctx: DebateContext) -> Outcome: ...
