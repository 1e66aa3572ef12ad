"""Replay: a new debate built from a stored one — re-synthesised with another model, or continued
with more rounds. The source is never changed. Steps the change does not touch are read from the
source's checkpoints (at no cost to the replay: the source already paid for them); the mode's
final steps (`DebateProtocol.final_steps`: verdict, judges, synthesis, grade, final answer) always
run again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from engine.domain import DebateRequest, StepRecord, Usage
from engine.errors import InvalidRequest, validation_message
from engine.options import DebateOptions
from engine.ports import CheckpointStore
from engine.protocols import DebateProtocol
from engine.vocabulary import MAX_REPLAY_ROUNDS, MAX_ROUNDS, StepStatus

#: Roles whose model a replay's `--synthesizer` replaces, beside the final steps themselves.
FINAL_ROLES = ("synthesizer", "judge")


@dataclass(frozen=True, slots=True)
class Replay:
    """A replay to submit: its request, and the source's steps it reads instead of calling
    (bookkeeping the service keeps on the debate's record, never in the request's options)."""

    request: DebateRequest
    reuse: tuple[str, ...]


def replay_request(source: DebateRequest, *, protocol: DebateProtocol,
                   source_keys: Iterable[str], default_rounds: int,
                   more_rounds: int | None = None, synthesizer: str | None = None) -> Replay:
    """The replay: more rounds and/or another model for the final stage. `protocol` is the
    source's mode, which says which steps are final. The new model goes through the request's
    `role_models`, so it is checked against the configured models and priced like any other."""
    if not more_rounds and not synthesizer:
        raise InvalidRequest("say what to change: --rounds N (more rounds) and/or "
                             "--synthesizer MODEL")
    if more_rounds is not None and not 1 <= more_rounds <= MAX_REPLAY_ROUNDS:
        raise InvalidRequest(f"--rounds adds 1 to {MAX_REPLAY_ROUNDS} rounds")
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
    reuse = tuple(sorted(k for k in source_keys if k not in protocol.final_steps))
    rounds = source.rounds if source.rounds is not None else default_rounds
    if more_rounds:
        rounds = min(rounds + more_rounds, MAX_ROUNDS)
    request = source.model_copy(update={"options": options, "rounds": rounds, "no_cache": True})
    return Replay(request, reuse)


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
