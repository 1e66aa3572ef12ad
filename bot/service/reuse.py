"""When a finished debate may answer a new request (the cache, `DIALECTIC_CACHE_TTL_SECONDS`):
only when it is the same question asked of the same machinery. The key holds the request's own
content (topic, context, mode, preset, rounds, judges, options) and its scope: the provider's
endpoint, every model the plan calls with its reasoning effort, the preset's definition, the
prompt version, and whether it runs on the offline rehearsal model. A rehearsal is never served
to a real request, nor another model's answer as this one's."""

from __future__ import annotations

from engine.core.planning import Prepared
from engine.core.prompts import PROMPT_VERSION
from engine.domain import canonical_json, sha256
from engine.money.step_models import plan_models
from engine.settings import EngineSettings
from storage import debates


def cache_key(settings: EngineSettings, prepared: Prepared) -> str:
    """The key under which `prepared`'s result is stored and looked up."""
    request = prepared.request
    models = plan_models(settings, request.options, prepared.plan)
    calls = sorted({(c.role, "rehearsal" if settings.is_rehearsal else models[c.key],
                     settings.effort_for(c.role) or "") for c in prepared.plan.calls})
    scope = sha256(canonical_json({
        "endpoint": settings.endpoint(), "rehearsal": settings.is_rehearsal, "calls": calls,
        "prompts": PROMPT_VERSION, "preset": prepared.preset.model_dump(mode="json"),
        "options": request.options.model_dump(mode="json"),
    }))
    return debates.topic_key(request, prepared.preset.name, scope=scope)
