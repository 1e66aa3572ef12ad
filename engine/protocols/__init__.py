"""The registry of debate protocols, one per mode (engine.vocabulary.Mode), by name.

May import: the basics at the top of engine/ (domain, settings, outcomes, options, headline,
verdicts, prompts), the runner, engine.schemas, engine.untrusted, engine.money and the LLM
interface (engine.provider.llm). Never oversight, a provider implementation (gateway,
rehearsal...), planning, the debate or replay (pyproject.toml import-linter contracts).
"""

from __future__ import annotations

from engine.errors import InvalidRequest
from engine.protocols.base import DebateProtocol, FinalSteps, Outcome, PlanInput, Rounds
from engine.protocols.consensus import ConsensusProtocol
from engine.protocols.critique import CritiqueProtocol
from engine.protocols.panel import PanelProtocol
from engine.protocols.redteam import RedTeamProtocol
from engine.protocols.simple import SimpleProtocol
from engine.protocols.structured import StructuredProtocol

PROTOCOLS: dict[str, DebateProtocol] = {
    p.mode: p
    for p in (
        SimpleProtocol(), StructuredProtocol(), ConsensusProtocol(),
        PanelProtocol(), CritiqueProtocol(), RedTeamProtocol(),
    )
}


def get_protocol(mode: str) -> DebateProtocol:
    try:
        return PROTOCOLS[mode]
    except KeyError:
        known = ", ".join(sorted(PROTOCOLS))
        raise InvalidRequest(f"unknown mode {mode!r}; choose one of: {known}") from None


__all__ = ["PROTOCOLS", "DebateProtocol", "FinalSteps", "Outcome", "PlanInput", "Rounds",
           "get_protocol"]
