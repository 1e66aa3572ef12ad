"""Which model each step of a debate asks for (the request's override, the protocol's named
model, the settings' for the role), and the token bound of the schema sent with a call: shared
by the runner, the estimate and the service, so a plan is priced with the models it will use."""

from __future__ import annotations

import json

from pydantic import BaseModel

from engine.domain import Plan
from engine.money.cost import token_bound
from engine.options import DebateOptions
from engine.settings import EngineSettings


def schema_tokens(schema: type[BaseModel]) -> int:
    """The token bound of the JSON schema sent with a call (computed once per schema)."""
    found = _SCHEMA_TOKENS.get(schema)
    if found is None:
        found = _SCHEMA_TOKENS[schema] = token_bound(json.dumps(schema.model_json_schema()))
    return found


_SCHEMA_TOKENS: dict[type[BaseModel], int] = {}


def plan_models(settings: EngineSettings, options: DebateOptions, plan: Plan) -> dict[str, str]:
    """The model each planned call will use ("rehearsal" for all on the rehearsal model)."""
    return {c.key: "rehearsal" if settings.is_rehearsal
            else step_model(settings, options, c.key, c.role, c.model) for c in plan.calls}


def step_model(settings: EngineSettings, options: DebateOptions, key: str, role: str,
               named: str | None) -> str:
    """The model a step asks for: the request's override (a replay's new synthesizer) by step
    key, role or family; else the one the protocol names (a judge's); else the settings' for the
    role. Estimates price each planned call with the same choice."""
    return options.model_for_step(key, role) or named or settings.model_for(role)
