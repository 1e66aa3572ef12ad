"""Replay (engine/core/replay.py, docs/caching-and-replay.md): a new debate from a stored one, its
unchanged steps read from the source, submitted through the service like any other; or, when the
same change was made to the same debate within the cache window, that replay's result."""

from __future__ import annotations

from typing import Protocol

from bot.service.reuse import answered_by
from bot.service.submission import Submission
from engine.core.planning import Prepared, prepare
from engine.core.replay import replay_request, reused_steps
from engine.domain import DebateRequest, Estimate
from engine.errors import InvalidRequest
from engine.settings import EngineSettings
from engine.vocabulary import StepStatus
from storage import debates, steps
from storage.db import Database
from storage.records import DebateRecord, Origin


class Replaying(Protocol):
    """What a replay needs of the service (bot/service/debates.py DebateService)."""

    engine: EngineSettings
    db: Database

    async def cached(self, prepared: Prepared, replay_of: str | None = None
                     ) -> DebateRecord | None: ...

    async def priced(self, prepared: Prepared, reused: tuple[str, ...] = ()) -> Estimate: ...

    async def submit(self, request: DebateRequest, *, origin: Origin,
                     idempotency_key: str | None = None, parent_id: str | None = None,
                     reused_steps: tuple[str, ...] = (), claim: str | None = None
                     ) -> Submission: ...


async def replay(service: Replaying, source_id: str, *, more_rounds: int | None,
                 synthesizer: str | None, actor: str, origin: Origin | None,
                 no_cache: bool) -> Submission:
    """The source is untouched, its unchanged steps reused; an identical replay of it within
    the cache window is answered by the first (unless `no_cache`). A change the mode cannot
    make is refused (InvalidRequest) before anything is stored or reserved."""
    async with service.db.transaction() as session:
        source = await debates.get(session, source_id)
        # a degraded step is called again (engine/core/replay.py ReplayStore): not reused
        keys = [s.key for s in await steps.list_steps(session, source_id)
                if s.status is not StepStatus.DEGRADED]
    if source.result is None:
        raise InvalidRequest(f"debate {source_id} has no result yet; replay a finished one")
    before = prepare(service.engine, source.request)
    request = replay_request(source.request, protocol=before.protocol, preset=before.preset,
                             more_rounds=more_rounds, synthesizer=synthesizer,
                             outcome=source.result.outcome)
    after = prepare(service.engine, request)
    reuse = reused_steps(before.plan, after.plan, keys,
                         rerun=before.protocol.final_steps if synthesizer else None)
    if not no_cache and reuse and (hit := await service.cached(after, source_id)):
        return Submission(hit, answered_by(await service.priced(after, reuse), hit),
                          cached=True)
    return await service.submit(request.model_copy(update={"requested_by": actor}),
                                origin=origin or Origin(surface="replay"),
                                parent_id=source_id, reused_steps=reuse)
