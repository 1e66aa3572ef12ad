"""When a finished debate may answer a new request (the cache, `DIALECTIC_CACHE_TTL_SECONDS`;
docs/caching-and-replay.md): only when it is the same question asked of the same machinery. The
key holds the request's own content (topic, context, mode, preset, rounds, judges, options) and
its scope: the provider's endpoint (each named provider's too), every model the plan calls with
its reasoning effort, the preset's definition, the prompt version, and whether it runs on the
offline rehearsal model. A rehearsal is never served to a real request, nor another model's
answer as this one's.

A replay's key also holds its source: an identical replay of the same debate is answered by the
first one, and a replay never answers a fresh request (its early steps are another debate's).
Reused: results completed, approved or awaiting review (returned as they stand, so every surface
shows them awaiting review); never failed, timed-out or escalated ones."""

from __future__ import annotations

from datetime import datetime, timedelta

from engine.core.planning import Prepared
from engine.core.prompts import PROMPT_VERSION
from engine.domain import Estimate, canonical_json, sha256
from engine.money.step_models import plan_models
from engine.settings import EngineSettings
from storage import debates
from storage.db import Database
from storage.journal import lookups_for
from storage.records import DebateRecord


def cache_key(settings: EngineSettings, prepared: Prepared, *,
              replay_of: str | None = None) -> str:
    """The key under which `prepared`'s result is stored and looked up; `replay_of`: the
    source debate of a replay."""
    request = prepared.request
    models = plan_models(settings, request.options, prepared.plan)
    calls = sorted({(c.role, "rehearsal" if settings.is_rehearsal else models[c.key],
                     settings.effort_for(c.role) or "") for c in prepared.plan.calls})
    scope = {"endpoint": settings.endpoint(), "rehearsal": settings.is_rehearsal, "calls": calls,
             "prompts": PROMPT_VERSION, "preset": prepared.preset.model_dump(mode="json"),
             "options": request.options.model_dump(mode="json")}
    if settings.providers:   # `NAME:model` is asked where NAME points today
        scope["providers"] = {name: settings.for_provider(name).endpoint()
                              for name in sorted(settings.providers)}
    if replay_of is not None:
        scope["replay_of"] = replay_of
    return debates.topic_key(request, prepared.preset.name, scope=sha256(canonical_json(scope)))


def replay_source(parent_id: str | None, reused_steps: tuple[str, ...]) -> str | None:
    """The source a debate's key names: a replay's (it reads steps of `parent_id`); a re-run
    (a parent, nothing read from it) is a new run of the same request, keyed as one."""
    return parent_id if reused_steps else None


async def cached(db: Database, settings: EngineSettings, prepared: Prepared, *, now: datetime,
                 ttl_seconds: int, replay_of: str | None = None) -> DebateRecord | None:
    """The finished debate that answers `prepared` within the cache window, if any (the
    caller has checked that the request does not ask anew, `no_cache`)."""
    if ttl_seconds <= 0:
        return None
    key = cache_key(settings, prepared, replay_of=replay_of)
    hit: DebateRecord | None = await lookups_for(db).read(
        debates.find_cached_many, (key, now - timedelta(seconds=ttl_seconds)))
    return hit


def answered_by(estimate: Estimate, hit: DebateRecord) -> Estimate:
    """`estimate` (of no reused steps) as the cache answers it: every step reused, nothing to
    pay, hold or wait for."""
    return estimate.model_copy(update={
        "calls": 0, "depth": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "completion_tokens_high": 0, "usd": 0.0, "usd_low": 0.0, "usd_high": 0.0,
        "calls_per_role": {}, "reused": estimate.calls + estimate.reused,
        "cached_from": hit.id, "admitted": True, "admission": ""})
