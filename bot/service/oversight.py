"""What the reviewers' decisions teach the service, the same for every surface: the judge audit,
routing measured against the reviewers, the spot-check sampler, threshold suggestions and the
cut-offs an operator applied, and judge weights from evidence.

Nothing here changes routing by itself: a suggestion is shown with its evidence, and only
`apply` (an operator's explicit, audited action) puts other cut-offs in force. Evidence weights
act only for a preset that opts in (`evidence_weights = true`), bounded so no judge dominates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from engine.characters import require_visible
from engine.core.debate import Prepared
from engine.core.presets import all_presets
from engine.domain import DebateResult
from engine.errors import InvalidRequest, UnknownPreset, validation_message
from engine.money.step_models import step_model
from engine.oversight.family_audit import FamilyAudit, audit_families
from engine.oversight.feedback import PresetFeedback, feedback_by_preset
from engine.oversight.judge_weights import JudgeWeight, WeightPolicy, evidence_weights
from engine.oversight.panel_records import AgreementCount, agreement_counts
from engine.oversight.routing_audit import PresetRouting, needs_spot_check, routing_against_humans
from engine.protocols.judging import judge_key
from engine.settings import EngineSettings, JudgeSpec, PresetSpec, ThresholdSpec
from engine.vocabulary import MAX_WINDOW_DAYS, ResultStatus
from storage import audit, feedback, panels, thresholds, workspace_settings
from storage.db import Database
from storage.journal import lookups_for
from storage.panels import Labelled
from storage.records import AppliedThresholds

log = logging.getLogger("dialectic.oversight")

if TYPE_CHECKING:   # numpy: loaded by the reports that compute with it (`judges`,
    # `thresholds`), not by every process that runs a debate (`dialectic run` starts faster)
    from engine.oversight.judge_audit import AuditPolicy, JudgeAudit
    from engine.oversight.thresholds import (
        SuggestionPolicy,
        ThresholdEvaluation,
        ThresholdSuggestion,
    )

__all__ = ["JudgeReport", "Oversight", "RoutingReport", "Suggestion", "ThresholdsInForce",
           "spot_check_reason"]

#: Reports and evidence weights are read again at most this often (a Home tab opened by many
#: people, a worker starting many debates); judged history moves by the hour, not the second.
CACHE_SECONDS = 60.0
BLANK_APPLY = ("say why you apply these thresholds: the reason goes in the "
               "audit log with them")
WEIGHT_POLICY = WeightPolicy()


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeReport:
    """The judge audit over a window: every judge and model, with the minimums it applied."""

    days: int
    since: datetime
    presets: tuple[str, ...]   # empty: every preset
    debates: int
    labelled: int
    policy: AuditPolicy
    judges: list[JudgeAudit]
    feedback: list[PresetFeedback] = dataclasses.field(default_factory=list)  # readers' thumbs
    # per model family: self-preference and agreement with the panel (family_audit.py)
    families: list[FamilyAudit] = dataclasses.field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdsInForce:
    """A preset's alpha cut-offs routing uses now: its own, or ones an operator applied."""

    preset: str
    thresholds: ThresholdSpec
    source: Literal["preset", "applied"]
    preset_thresholds: ThresholdSpec
    applied: AppliedThresholds | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PresetRoutingReport:
    routing: PresetRouting
    in_force: ThresholdsInForce
    feedback: PresetFeedback   # readers' thumbs on the preset's results (not reviewer labels)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingReport:
    """Routing measured against the reviewers, per preset, with the sampler's rate."""

    days: int
    since: datetime
    spot_check_fraction: float
    presets: list[PresetRoutingReport]


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """Suggested cut-offs for one preset with the evidence behind them (never applied here)."""

    preset: str
    days: int
    since: datetime
    policy: SuggestionPolicy
    in_force: ThresholdsInForce
    suggestion: ThresholdSuggestion


def spot_check_reason(fraction: float) -> str:
    return (f"spot check: a random {fraction:.0%} of published results goes to a reviewer, so "
            "auto-approval precision is measured")


class Oversight:
    def __init__(self, engine: EngineSettings, db: Database, *, spot_check_fraction: float,
                 window_days: int, clock: Callable[[], datetime]) -> None:
        self.engine = engine
        self.db = db
        self.spot_check_fraction = spot_check_fraction
        self.window_days = window_days
        self.clock = clock
        self._weights: dict[str, tuple[datetime, dict[str, AgreementCount]]] = {}
        self._reports: dict[tuple[int, tuple[str, ...], AuditPolicy],
                            tuple[datetime, JudgeReport]] = {}
        self._lock = asyncio.Lock()

    # --- reading the labelled history ---

    def since(self, days: int | None) -> tuple[int, datetime]:
        days = self.window_days if days is None else days
        if not 1 <= days <= MAX_WINDOW_DAYS:
            raise InvalidRequest(f"the window is 1 to {MAX_WINDOW_DAYS} days, not {days}")
        return days, self.clock() - timedelta(days=days)

    async def labelled(self, since: datetime, presets: Sequence[str] = ()) -> list[Labelled]:
        async with self.db.transaction(readonly=True) as session:
            return await panels.history(session, since=since, presets=presets)

    async def feedback(self, since: datetime, presets: Sequence[str] = ()
                       ) -> dict[str, PresetFeedback]:
        """Readers' feedback counts and agreement per preset (kept apart from the labels)."""
        async with self.db.transaction(readonly=True) as session:
            return feedback_by_preset(await feedback.labels(session, since=since,
                                                            presets=presets))

    def preset(self, name: str) -> PresetSpec:
        found = all_presets(self.engine).get(name)
        if found is None:
            names = ", ".join(sorted(all_presets(self.engine)))
            raise UnknownPreset(f"unknown preset {name!r}; choose one of: {names}")
        return found

    # --- the judge audit ---

    async def judge_report(self, *, days: int | None = None, preset: str | None = None,
                           policy: AuditPolicy | None = None) -> JudgeReport:
        """Position bias, verbosity bias, leniency, drift and agreement with the reviewers, per
        judge and model, over the last `days` (of one preset, or all); computed at most once a
        minute for the same question."""
        from engine.oversight.judge_audit import AuditPolicy, audit_judges  # numpy: see above

        policy = policy or AuditPolicy()
        presets = (self.preset(preset).name,) if preset else ()
        days, since = self.since(days)
        key = (days, presets, policy)
        cached = self._reports.get(key)
        if cached is not None and (self.clock() - cached[0]).total_seconds() < CACHE_SECONDS:
            return cached[1]
        history = [item.panel for item in await self.labelled(since, presets)]
        report = JudgeReport(days=days, since=since, presets=presets, debates=len(history),
                             labelled=sum(1 for p in history if p.review is not None),
                             policy=policy, judges=audit_judges(history, policy),
                             feedback=list((await self.feedback(since, presets)).values()),
                             families=audit_families(history, min_n=policy.min_verdicts,
                                                     confidence=policy.confidence,
                                                     family_of=self.engine.family_of))
        self._reports = {key: (self.clock(), report)}   # the newest only: it is what is asked
        return report

    # --- thresholds: in force, measured, suggested, applied ---

    async def in_force(self) -> dict[str, ThresholdsInForce]:
        """Every preset's cut-offs as routing uses them now."""
        async with self.db.transaction(readonly=True) as session:
            applied = await thresholds.in_force(session)
        return {name: _in_force(spec, applied.get(name))
                for name, spec in sorted(all_presets(self.engine).items())}

    async def in_force_for(self, preset: str) -> ThresholdsInForce:
        spec = self.preset(preset)
        found: dict[str, AppliedThresholds] = await lookups_for(self.db).read(
            thresholds.in_force_batch, None)
        return _in_force(spec, found.get(spec.name))

    async def routing_report(self, *, days: int | None = None, min_n: int = 20
                             ) -> RoutingReport:
        """Per preset: results by routing, how many published ones a spot check overturned,
        how many routed ones a reviewer approved unchanged."""
        days, since = self.since(days)
        outcomes = [i.outcome for i in await self.labelled(since) if i.outcome is not None]
        thumbs = await self.feedback(since)   # a preset with feedback shows, judged or not
        measured = routing_against_humans(outcomes, min_n=min_n, presets=thumbs)
        forces = await self.in_force()
        return RoutingReport(days=days, since=since,
                             spot_check_fraction=self.spot_check_fraction,
                             presets=[PresetRoutingReport(
                                 routing=measured[name], in_force=forces[name],
                                 feedback=thumbs.get(name) or PresetFeedback(preset=name))
                                 for name in measured if name in forces])

    async def suggest(self, preset: str, *, policy: SuggestionPolicy | None = None,
                      days: int | None = None) -> Suggestion:
        """Cut-offs that keep what is published upheld at the target with the fewest results
        sent to review, from the reviewers' decisions on this preset; compared with the ones
        in force. A suggestion only."""
        from engine.oversight.thresholds import SuggestionPolicy, suggest_thresholds

        policy = policy or SuggestionPolicy()
        in_force = await self.in_force_for(preset)
        days, since = self.since(days)
        outcomes = [i.outcome for i in await self.labelled(since, (in_force.preset,))
                    if i.outcome is not None]
        return Suggestion(preset=in_force.preset, days=days, since=since, policy=policy,
                          in_force=in_force,
                          suggestion=suggest_thresholds(outcomes, in_force.thresholds, policy))

    async def evaluate(self, preset: str, cutoffs: ThresholdSpec, *,
                       policy: SuggestionPolicy | None = None, days: int | None = None
                       ) -> ThresholdEvaluation:
        """What these cut-offs would have done to the preset's labelled history."""
        from engine.oversight.thresholds import SuggestionPolicy, evaluate_thresholds

        policy = policy or SuggestionPolicy()
        name = self.preset(preset).name
        _, since = self.since(days)
        outcomes = [i.outcome for i in await self.labelled(since, (name,))
                    if i.outcome is not None]
        return evaluate_thresholds(outcomes, cutoffs, policy)

    async def apply(self, preset: str, cutoffs: ThresholdSpec | None, *, by: str,
                    note: str = "", evidence: dict[str, Any] | None = None
                    ) -> AppliedThresholds:
        """Put these cut-offs in force for the preset (None: its own again); audited on the
        global chain with who, why and the evidence shown."""
        spec = self.preset(preset)
        by = require_visible(by, "say who applies the thresholds: it goes in the audit log")
        note = require_visible(note, BLANK_APPLY)
        async with self.db.transaction() as session:
            applied = await thresholds.apply(session, preset=spec.name, thresholds=cutoffs,
                                             by=by, at=self.clock(), note=note,
                                             evidence=evidence)
            await audit.append(session, debate_id=None, kind="thresholds_applied",
                               actor=by, data={
                                   "preset": spec.name, "note": note,
                                   "thresholds": None if cutoffs is None
                                   else cutoffs.model_dump(mode="json"),
                                   "preset_thresholds": spec.thresholds.model_dump(mode="json"),
                                   "evidence": evidence or {}})
        return applied

    # --- what a run and its settling use ---

    def spot_check(self, result: DebateResult) -> bool:
        """Whether this published result goes to a reviewer anyway, as a spot check: only
        complete results argued by a model (rehearsals measure nothing)."""
        return (result.status is ResultStatus.COMPLETED and result.complete
                and not result.rehearsal and result.consensus is not None
                and needs_spot_check(result.id, result.routing, self.spot_check_fraction))

    async def for_run(self, prepared: Prepared, *, team_id: str | None = None
                      ) -> tuple[Prepared, dict[str, JudgeWeight]]:
        """The prepared debate with the cut-offs in force (a workspace's own over the
        operator's, for its debates) and, for a preset that opted in, judges weighted from
        evidence (returned too, with each weight's reason)."""
        in_force = await self.in_force_for(prepared.preset.name)
        preset = prepared.preset
        if in_force.source == "applied":
            preset = preset.model_copy(update={"thresholds": in_force.thresholds})
        own = await workspace_cutoffs(self.db, team_id, preset.name, preset.thresholds)
        if own is not None:
            preset = preset.model_copy(update={"thresholds": own})
        weights: dict[str, JudgeWeight] = {}
        judges = prepared.judges
        if preset.evidence_weights and len(judges) >= 2:
            weights = await self.weights(preset.name, judges, prepared)
            judges = tuple(j.model_copy(update={"weight": weights[j.name].weight})
                           for j in judges)
        return dataclasses.replace(prepared, preset=preset, judges=judges), weights

    async def prepare_run(self, debate_id: str, prepared: Prepared, *,
                          team_id: str | None = None) -> Prepared:
        """`for_run`, with each evidence weight's reason audited in the debate's chain (the
        weights themselves are recorded in its result)."""
        prepared, weights = await self.for_run(prepared, team_id=team_id)
        if weights:
            async with self.db.transaction() as session:
                await audit.append(session, debate_id=debate_id, kind="judge_weights",
                                   actor="oversight", data={
                                       j: {"weight": w.weight, "configured": w.configured,
                                           "share": w.share, "reason": w.reason}
                                       for j, w in weights.items()})
        return prepared

    async def weights(self, preset: str, judges: Sequence[JudgeSpec], prepared: Prepared,
                      policy: WeightPolicy = WEIGHT_POLICY) -> dict[str, JudgeWeight]:
        """Evidence weights for these judges: agreement with the reviewers on this preset's
        debates, counted for the model each judge uses now."""
        counts = await self._agreement(preset)
        options = prepared.request.options
        agreement = {}
        for judge in judges:
            key = judge_key(judge)
            model = step_model(self.engine, options, key, key, judge.model)
            if (found := counts.get(f"{judge.name}\n{model}")) is not None:
                agreement[judge.name] = found
        return evidence_weights({j.name: j.weight for j in judges}, agreement, policy)

    async def _agreement(self, preset: str) -> dict[str, AgreementCount]:
        """Agreement counts keyed "judge\\nmodel", read at most once a minute per preset."""
        async with self._lock:
            now = self.clock()
            cached = self._weights.get(preset)
            if cached is not None and (now - cached[0]).total_seconds() < CACHE_SECONDS:
                return cached[1]
            _, since = self.since(None)
            history = [i.panel for i in await self.labelled(since, (preset,))]
            counts = {f"{judge}\n{model}": count
                      for (judge, model), count in agreement_counts(history).items()}
            self._weights[preset] = (now, counts)
            return counts


async def workspace_cutoffs(db: Database, team_id: str | None, preset: str,
                            spec: ThresholdSpec) -> ThresholdSpec | None:
    """The cut-offs workspace `team_id` set for `preset` over `spec`; None when it set none
    (or ones no longer valid over `spec`: the operator's then, with a warning)."""
    if not team_id:
        return None
    async with db.transaction(readonly=True) as session:
        own = ((await workspace_settings.get(session, team_id)).thresholds or {}).get(preset)
    if not own:
        return None
    try:
        return ThresholdSpec.model_validate({**spec.model_dump(), **own})
    except ValidationError as exc:
        log.warning("workspace %s's cut-offs for %s are not valid over the operator's (%s); "
                    "it routes by the operator's", team_id, preset, validation_message(exc))
        return None


def _in_force(spec: PresetSpec, applied: AppliedThresholds | None) -> ThresholdsInForce:
    if applied is None or applied.thresholds is None:   # set aside when invalid: say so
        return ThresholdsInForce(preset=spec.name, thresholds=spec.thresholds, source="preset",
                                 preset_thresholds=spec.thresholds,
                                 applied=applied if applied is not None and applied.invalid
                                 else None)
    return ThresholdsInForce(preset=spec.name, thresholds=applied.thresholds, source="applied",
                             preset_thresholds=spec.thresholds, applied=applied)
