"""What `dialectic eval --panels` adds to a run's report: per panel (mode jury1, jury2, ...) its
models and families, how much its judges agreed and how much they preferred their own family,
read from the debates its items ran as (engine/evaluation/juries.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from bot.service.debates import DebateService
from engine.domain import DebateResult
from engine.evaluation.juries import JuryFigures, is_jury, jury_figures, jury_mode
from storage import debates, evaluations


async def jury_report(service: DebateService, run_id: str,
                      panels: Sequence[Sequence[str]]) -> list[JuryFigures]:
    """Each panel's figures over the debates stored for the run so far."""
    if not panels:
        return []
    modes = [jury_mode(i) for i in range(len(panels))]
    async with service.db.transaction(readonly=True) as session:
        ids = await evaluations.debate_ids(session, run_id, modes)
        results: dict[str, list[DebateResult]] = {}
        for mode, found in ids.items():
            records = [await debates.get(session, debate_id) for debate_id in found]
            results[mode] = [r.result for r in records if r.result is not None]
    engine = service.engine
    return [jury_figures(mode, models, [engine.family_of(m) for m in models],
                         results.get(mode, []))
            for mode, models in zip(modes, panels, strict=True)]


def juries_json(juries: Sequence[JuryFigures]) -> list[dict[str, Any]]:
    return [asdict(j) for j in juries]


__all__ = ["is_jury", "juries_json", "jury_report"]
