"""Replay: a new debate built from a stored one — re-synthesised with another model, or continued
with more rounds. The source is never changed.

What more rounds are depends on the mode (`DebateProtocol.rounds`): simple's rebuttal rounds,
structured's and consensus's cross-examination rounds, panel's reflection rounds, critique's
critique rounds; redteam is one fixed chain and has none, so a replay asking for more is refused.
The new rounds continue the stored transcript, then everything after them runs again (the closing,
the judges, the synthesis, the final answer). Steps a replay does not change are read from the
source's checkpoints, at no cost to it (the source already paid for them): a step is unchanged
when the replay's plan has it at the same dependent round as the source's (a step after a new
round reads that round, so it moves later). Another model for the final stage (`--synthesizer`)
runs the mode's final steps (`DebateProtocol.final_steps`) again with that model.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from engine.domain import DebateRequest, Plan, StepRecord, Usage
from engine.errors import InvalidRequest, validation_message
from engine.options import DebateOptions
from engine.ports import CheckpointStore
from engine.protocols import DebateProtocol, FinalSteps
from engine.reading.outcomes import (
    CritiqueOutcome,
    CritiqueStop,
    ModeOutcome,
    PanelOutcome,
    PanelStop,
)
from engine.settings import PresetSpec
from engine.vocabulary import MAX_REPLAY_ROUNDS, StepStatus

#: Roles whose model a replay's `--synthesizer` replaces, beside the final steps themselves.
FINAL_ROLES = ("synthesizer", "judge")
_STOPPED = {CritiqueStop.CRITIC_SATISFIED: "the critic was satisfied",
            CritiqueStop.CONVERGED: "the convergence judge found it had converged",
            CritiqueStop.NO_PROPOSAL: "the proposer never answered",
            PanelStop.ALL_APPROVED: "every panelist approved",
            PanelStop.NO_ANSWERS: "no panelist answered"}


def replay_request(source: DebateRequest, *, protocol: DebateProtocol, preset: PresetSpec,
                   more_rounds: int | None = None, synthesizer: str | None = None,
                   outcome: ModeOutcome | None = None) -> DebateRequest:
    """The replay's request: more rounds and/or another model for the final stage. `protocol` is
    the source's mode, `preset` its preset, `outcome` what it concluded (an exchange that
    stopped early has no rounds left to continue). The new model goes through the request's
    `role_models`, so it is checked against the configured models and priced like any other.
    Raises InvalidRequest, in one line, for a change the mode cannot make."""
    if not more_rounds and not synthesizer:
        raise InvalidRequest("say what to change: --rounds N (more rounds) and/or "
                             "--synthesizer MODEL")
    rounds = source.rounds
    if more_rounds is not None:
        rounds = _more_rounds(source, protocol, preset, more_rounds, outcome)
    options = source.options
    if synthesizer:
        models = dict(options.role_models)
        models.update(dict.fromkeys((*FINAL_ROLES, *sorted(protocol.final_steps.keys)),
                                    synthesizer))
        try:
            options = DebateOptions.model_validate({**options.model_dump(),
                                                    "role_models": models})
        except ValidationError as exc:
            raise InvalidRequest(validation_message(exc, prefix="synthesizer ")) from None
    return source.model_copy(update={"options": options, "rounds": rounds, "no_cache": True})


def _more_rounds(source: DebateRequest, protocol: DebateProtocol, preset: PresetSpec,
                 more: int, outcome: ModeOutcome | None) -> int:
    """The replay's rounds: the source's as its mode ran them, plus `more`; or why not."""
    if not 1 <= more <= MAX_REPLAY_ROUNDS:
        raise InvalidRequest(f"--rounds adds 1 to {MAX_REPLAY_ROUNDS} rounds")
    mode, rule = protocol.mode.value, protocol.rounds
    if rule is None:
        raise InvalidRequest(f"a {mode} debate is one fixed chain of steps with no rounds to "
                             "add; replay it with --synthesizer MODEL instead")
    stopped = _stopped_early(outcome)
    if stopped:
        raise InvalidRequest(f"this {mode} debate stopped before its round limit because "
                             f"{stopped}: more rounds would stop at the same place")
    now = rule.count(source.rounds, preset)
    if now + more > rule.most:
        room = (f"--rounds may add at most {rule.most - now}" if now < rule.most
                else "it has none left to add")
        raise InvalidRequest(f"this {mode} debate ran {now} {rule.noun} and runs at most "
                             f"{rule.most}: {room}")
    return now + more


def _stopped_early(outcome: ModeOutcome | None) -> str:
    """Why an exchange ended before its round limit ("" when it ran them all)."""
    if isinstance(outcome, CritiqueOutcome | PanelOutcome):
        return _STOPPED.get(outcome.stopped_because, "")
    return ""


def reused_steps(source_plan: Plan, replay_plan: Plan, source_keys: Iterable[str], *,
                 rerun: FinalSteps | None = None) -> tuple[str, ...]:
    """The source's steps the replay reads instead of calling: those its plan has at the same
    dependent round as the source's plan, but `rerun` (the final steps, when a new model makes
    them)."""
    before = {c.key: c.depth for c in source_plan.calls}
    after = {c.key: c.depth for c in replay_plan.calls}
    return tuple(sorted(k for k in set(source_keys) if k in before and after.get(k) == before[k]
                        and (rerun is None or k not in rerun)))


class ReplayStore:
    """A checkpoint store that falls back to the source debate's steps for the reusable keys."""

    def __init__(self, inner: CheckpointStore, *, source_id: str, reuse: Iterable[str]) -> None:
        self.inner = inner
        self.source_id = source_id
        self.reuse = frozenset(reuse)

    async def get(self, debate_id: str, key: str) -> StepRecord | None:
        own = await self.inner.get(debate_id, key)
        if own is not None or key not in self.reuse:
            return own
        found = await self.inner.get(self.source_id, key)
        if found is None or found.status is StepStatus.DEGRADED:
            return None
        # the source paid for it: the replay reuses it for free
        return found.model_copy(update={"cost_usd": 0.0, "usage": Usage(), "attempts": 0,
                                        "calls": 0})

    async def put(self, debate_id: str, record: StepRecord) -> StepRecord:
        return await self.inner.put(debate_id, record)
