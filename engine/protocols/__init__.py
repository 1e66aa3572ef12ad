"""The registry of debate protocols, one per mode (engine.vocabulary.Mode), by name.

Each protocol is named by the dotted path of its class and imported the first time its mode is
asked for (`get_protocol`, or `PROTOCOLS[mode]`): a process loads the protocol of the mode it runs
and no other. `PROTOCOLS` lists every mode (iteration, `in`, `len`) without importing any.

May import: the basics at the top of engine/ (domain, settings, outcomes, options, headline,
verdicts, prompts), the runner, engine.schemas, engine.untrusted, engine.money and the LLM
interface (engine.provider.llm). Never oversight, a provider implementation (gateway,
rehearsal...), planning, the debate or replay (pyproject.toml import-linter contracts).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from engine.errors import InvalidRequest
from engine.protocols.base import DebateProtocol, FinalSteps, Outcome, PlanInput, Rounds
from engine.vocabulary import Mode

#: Each mode's protocol class, by dotted path ("module:Class"), imported on first use.
PATHS: dict[str, str] = {
    Mode.SIMPLE: "engine.protocols.simple:SimpleProtocol",
    Mode.STRUCTURED: "engine.protocols.structured:StructuredProtocol",
    Mode.CONSENSUS: "engine.protocols.consensus:ConsensusProtocol",
    Mode.PANEL: "engine.protocols.panel:PanelProtocol",
    Mode.CRITIQUE: "engine.protocols.critique:CritiqueProtocol",
    Mode.REDTEAM: "engine.protocols.redteam:RedTeamProtocol",
}


class Protocols(Mapping[str, DebateProtocol]):
    """Every mode's protocol by name; a protocol's module is imported when it is first looked
    up, and its one instance kept."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)
        self._loaded: dict[str, DebateProtocol] = {}

    def __getitem__(self, mode: str) -> DebateProtocol:
        found = self._loaded.get(mode)
        if found is None:
            module, _, name = self._paths[mode].partition(":")   # KeyError: an unknown mode
            found = getattr(importlib.import_module(module), name)()
            self._loaded[mode] = found
        return found

    def __contains__(self, mode: object) -> bool:
        return mode in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


PROTOCOLS = Protocols(PATHS)


def get_protocol(mode: str) -> DebateProtocol:
    try:
        return PROTOCOLS[mode]
    except KeyError:
        known = ", ".join(sorted(PROTOCOLS))
        raise InvalidRequest(f"unknown mode {mode!r}; choose one of: {known}") from None


__all__ = ["PATHS", "PROTOCOLS", "DebateProtocol", "FinalSteps", "Outcome", "PlanInput",
           "Protocols", "Rounds", "get_protocol"]
