"""The durable step runner: every LLM call is a keyed step, checkpointed, timed and reported.

`DebateContext.step()` reads a finished step back from the checkpoint store instead of calling the
model again, so re-running a protocol over the same store resumes it. Three nested deadlines apply
to each call: the call's own timeout (in the gateway), the phase's and the whole debate's. A step
that runs out of time, or whose retries are spent, becomes *degraded*: it is marked in the result
and the events and never stored, so a later resume tries it again. A content-filtered step is
stored as *filtered*, and one the model declined as *refused* with its words; the debate goes on.

The context also holds the debate's spotlight (one boundary for all its prompts, rebuilt the same
on every resume) and what its untrusted text addresses to the AI (the request's at once, the
evidence's as it arrives).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engine.core.held_events import HeldEvents
from engine.core.step_outcome import StepOutcome as StepOutcome  # the protocols import it from here
from engine.core.step_outcome import prompt_hash
from engine.domain import (
    DebateRequest,
    Event,
    EventKind,
    Evidence,
    PhaseSummary,
    Plan,
    StepRecord,
    Usage,
)
from engine.errors import LLMAuthError, LLMContentFiltered, LLMError, LLMRefused
from engine.money.cost import price, token_bound
from engine.money.sizing import Forecast, SizeBook
from engine.money.spending import Spending
from engine.money.step_models import plan_models, schema_tokens, step_model
from engine.ports import (
    CheckpointStore,
    EventSink,
    EvidenceSource,
    PanelStatistics,
    Purse,
    SeparateWrites,
    StepCache,
    StepWrites,
)
from engine.provider.llm import CallSpec, LLMClient, Meter, Prompt, Reply
from engine.settings import EngineSettings, JudgeSpec, PresetSpec
from engine.tracing import NO_TRACER, Tracer, traced_complete
from engine.untrusted.injection import Finding
from engine.untrusted.material import (
    POLICY,
    Untrusted,
    of_evidence,
    of_request,
    screen,
    spotlight_for,
)
from engine.untrusted.spotlight import Spotlight
from engine.vocabulary import StepStatus

T = TypeVar("T", bound=BaseModel)

BUDGET_EXHAUSTED = "not made: the debate's budget is exhausted"

_phase: contextvars.ContextVar[tuple[str, float] | None] = contextvars.ContextVar(
    "dialectic_phase", default=None
)


class DebateContext:
    """What a protocol runs against: `step()`, `phase()`, events, evidence and configuration."""

    def __init__(
        self,
        *,
        debate_id: str,
        request: DebateRequest,
        preset: PresetSpec,
        judges: Sequence[JudgeSpec],
        settings: EngineSettings,
        llm: LLMClient,
        store: CheckpointStore,
        sink: EventSink,
        evidence: EvidenceSource,
        statistics: PanelStatistics,
        clock: Callable[[], float] = time.monotonic,
        judge_history: dict[str, list[float]] | None = None,
        step_cache: StepCache | None = None,
        purse: Purse | None = None,
        plan: Plan | None = None,
        sizes: SizeBook | None = None,
        judging_phases: frozenset[str] = frozenset(),
        tracer: Tracer = NO_TRACER,
        writes: StepWrites | None = None,
    ) -> None:
        self.debate_id = debate_id
        self.tracer = tracer
        self.request = request
        self.preset = preset
        self.judges = list(judges)
        self.settings = settings
        self.llm = llm
        self.store = store
        self.events = HeldEvents(sink)   # a phase's end goes with the next event
        self.evidence_source = evidence
        self.statistics = statistics
        self.clock = clock
        self.judge_history = judge_history or {}
        self.step_cache = step_cache
        self.started = clock()
        self.deadline = self.started + settings.debate_timeout
        self.records: dict[str, StepRecord] = {}
        self.reused = 0
        self.phases: list[PhaseSummary] = []
        self.evidence: list[Evidence] = []
        self.spending = Spending(purse)
        self.writes = writes or SeparateWrites(store, purse, sink, step_cache)
        plan = plan or Plan(mode=request.mode, calls=())
        # not a bound method: the context and its forecast would be a cycle, kept till a full gc
        def forecast_cost(usage: Usage, model: str) -> float:
            return price(usage, settings.price_for("rehearsal" if llm.rehearsal else model))
        self.forecast = Forecast(plan, models=plan_models(settings, request.options, plan),
                                 sizes=replace(sizes or SizeBook(), effort_for=settings.effort_for),
                                 cost=forecast_cost, priced=settings.priced_model,
                                 judging=judging_phases)
        self.spotlight: Spotlight = spotlight_for(request, debate_id)
        self._findings: dict[Finding, None] = {}  # an ordered set
        self.flag(screen(of_request(request)))

    @property
    def rehearsal(self) -> bool:
        return self.llm.rehearsal

    @property
    def policy(self) -> str:
        """The policy text judged against: the request's (a workspace's appeal policy) or the
        preset's."""
        return self.request.options.policy_or(self.preset.policy)

    @property
    def policy_material(self) -> Untrusted:
        """The policy as prompts carry it: spotlighted, whether the request or a preset gave it
        (a request's policy may come from anyone who can call the API)."""
        return Untrusted(POLICY, self.policy)

    @property
    def findings(self) -> list[Finding]:
        """Text addressed to the AI found so far: in the request, the evidence, the outputs."""
        return list(self._findings)

    def flag(self, findings: Sequence[Finding]) -> None:
        """Keep findings (once each: a resumed debate finds the same ones again)."""
        self._findings.update(dict.fromkeys(findings))

    @property
    def timed_out(self) -> bool:
        return self.clock() >= self.deadline

    async def emit(self, kind: EventKind, **data: Any) -> None:
        await self.events.emit(self._event(kind, **data))  # a step's own: `_commit`

    def _event(self, kind: EventKind, **data: Any) -> Event:
        return Event(kind=kind, debate_id=self.debate_id, data=data, rehearsal=self.rehearsal)

    async def _commit(self, record: StepRecord, event: Event, *, stored: bool = True,
                      cached_as: str | None = None) -> StepRecord:
        """A step's checkpoint (unless not `stored`), bill, event, cache entry: one write."""
        await self.events.flush()
        kept = await self.writes.commit(self.debate_id, record=record if stored else None,
                                        charge_usd=self.spending.owed(record.key), event=event,
                                        cached_as=cached_as)
        return kept or record

    @asynccontextmanager
    async def phase(self, name: str) -> AsyncIterator[PhaseSummary]:
        """A phase: its own deadline (capped by the debate's), start/finish events, new evidence."""
        await self._refresh_evidence(name)
        summary = PhaseSummary(name=name)
        deadline = min(self.clock() + self.settings.phase_timeout, self.deadline)
        token = _phase.set((name, deadline))
        started = self.clock()
        await self.emit(EventKind.PHASE_STARTED, phase=name)
        try:
            with self.tracer.span(f"phase {name}", {"dialectic.phase": name}):
                yield summary
        finally:
            _phase.reset(token)
            summary.elapsed_seconds = round(self.clock() - started, 3)
            self.phases.append(summary)
        await self.emit(
            EventKind.PHASE_FINISHED,
            phase=name,
            highlights=summary.highlights,
            degraded=summary.degraded,
            filtered=summary.filtered,
            refused=summary.refused,
            elapsed_seconds=summary.elapsed_seconds,
        )

    async def _refresh_evidence(self, phase: str) -> None:
        items = list(await self.evidence_source.evidence(self.debate_id))
        fresh = items[len(self.evidence):]
        self.evidence = items
        self.flag(screen(of_evidence(fresh)))
        for item in fresh:
            await self.emit(
                EventKind.EVIDENCE_ADDED, author=item.author, text=item.text, before_phase=phase
            )

    def evidence_material(self) -> tuple[Untrusted, ...]:
        """Human evidence so far, each item labelled with its author, for spotlighting."""
        return of_evidence(self.evidence)

    async def step(
        self,
        key: str,
        *,
        role: str,
        prompt: Prompt,
        schema: type[T],
        temperature: float | None = None,
        model: str | None = None,
        cache_key: str | None = None,
    ) -> StepOutcome[T]:
        """Run one LLM call as a durable step, or read it back if it already finished.
        With `cache_key`, an identical call from another debate is reused (no call, no cost)."""
        phase_name, phase_deadline = _phase.get() or ("", self.deadline)
        stored = await self.store.get(self.debate_id, key)
        if stored is not None and stored.status is not StepStatus.DEGRADED:
            return await self._reuse(stored, schema)
        model = step_model(self.settings, self.request.options, key, role, model)
        if cache_key is not None:
            cache_key = f"{cache_key}:{model}"
            hit = await self._from_cache(cache_key, key, role, phase_name, model, prompt, schema)
            if hit is not None:
                return hit
        remaining = min(phase_deadline, self.deadline) - self.clock()
        if remaining <= 0:
            reason = "the phase ran out of time before this call started"
            return await self._degrade(key, role, phase_name, model, prompt, reason, Meter(),
                                       attempts=0)
        predicted, reply_cap = self._predicted_cost(key, role, phase_name, model, prompt, schema)
        if not await self._admitted(key, predicted, phase_name):
            return await self._degrade(key, role, phase_name, model, prompt, BUDGET_EXHAUSTED,
                                       Meter(), attempts=0)
        meter = Meter()
        spec = CallSpec(
            model=model, prompt=prompt, schema=schema, role=role,
            temperature=self._temperature(temperature),
            timeout=min(self.settings.call_timeout, remaining),
            on_retry=self._retry_reporter(key), meter=meter, step=key,
            reasoning_effort=self.settings.effort_for(role), max_output_tokens=reply_cap,
        )
        started = self.clock()
        try:
            reply = await self._paid_call(spec, predicted, remaining)
        except TimeoutError:
            reason = f"ran out of {'phase' if phase_deadline < self.deadline else 'debate'} time"
            return await self._degrade(key, role, phase_name, model, prompt, reason, meter)
        except LLMAuthError:
            raise
        except LLMContentFiltered as exc:
            return await self._withheld(StepStatus.FILTERED, key, role, phase_name, model,
                                        prompt, str(exc), meter)
        except LLMRefused as exc:  # the model's own words, kept: never asked again
            return await self._withheld(StepStatus.REFUSED, key, role, phase_name, model,
                                        prompt, exc.refusal, meter)
        except LLMError as exc:
            return await self._degrade(key, role, phase_name, model, prompt, str(exc), meter)
        record = await self._store_reply(key, role, phase_name, prompt, reply, started, cache_key)
        return StepOutcome(key, StepStatus.OK, schema.model_validate(record.output), record)

    async def _paid_call(self, spec: CallSpec[T], predicted: float,
                         remaining: float) -> Reply[T]:
        """The provider call, charged however it ends: every billed reply is money spent."""
        reply: Reply[T] | None = None
        alone = False   # the step writes nothing after this: the bill is booked on its own
        try:
            reply = await traced_complete(self.tracer, self.llm, spec, timeout=remaining,
                                          phase=(_phase.get() or ("",))[0],
                                          conversation=self.debate_id)
            return reply
        except (TimeoutError, LLMError) as exc:   # the step degrades or withholds: `_commit`
            alone = isinstance(exc, LLMAuthError)
            raise
        except BaseException:   # cancelled, or a bug
            alone = True
            raise
        finally:
            meter = spec.meter or Meter()
            billed = (self._cost(reply.usage, reply.model) if reply is not None
                      else self._cost(meter.usage, meter.model or spec.model))
            if reply is not None:  # what this debate's replies are like predicts its rest
                self.forecast.observe(spec.step, spec.model, spec.role, "", reply.usage,
                                      reply.calls, effort=spec.reasoning_effort)
            self.spending.settled(spec.step, predicted, billed)
            if alone:
                await self.spending.book(spec.step)

    async def _store_reply(self, key: str, role: str, phase: str, prompt: Prompt,
                           reply: Reply[Any], started: float, cached_as: str | None
                           ) -> StepRecord:
        record = StepRecord(
            key=key, role=role, phase=phase, model=reply.model, status=StepStatus.OK,
            output=reply.value.model_dump(mode="json"), prompt_hash=prompt_hash(prompt),
            usage=reply.usage, cost_usd=self._cost(reply.usage, reply.model),
            latency_s=round(self.clock() - started, 4), attempts=reply.attempts,
            calls=reply.calls, rehearsal=self.rehearsal,
        )
        record = await self._commit(record, self._event(
            EventKind.STEP_FINISHED,
            key=key, role=role, phase=phase, model=record.model,
            cost_usd=record.cost_usd, prompt_tokens=record.usage.prompt_tokens,
            completion_tokens=record.usage.completion_tokens,
            cached_tokens=record.usage.cached_tokens,
            reasoning_tokens=record.usage.reasoning_tokens, attempts=record.attempts,
        ), cached_as=cached_as)
        self.records[key] = record
        return record

    async def _from_cache(self, cache_key: str, key: str, role: str, phase: str, model: str,
                          prompt: Prompt, schema: type[T]) -> StepOutcome[T] | None:
        if self.step_cache is None:
            return None
        output = await self.step_cache.get(cache_key)
        if output is None:
            return None
        try:
            value = schema.model_validate(output)
        except ValidationError:
            return None  # written by an older schema: call the model instead
        record = StepRecord(key=key, role=role, phase=phase, model=model, status=StepStatus.OK,
                            output=output, prompt_hash=prompt_hash(prompt), attempts=0,
                            calls=0, rehearsal=self.rehearsal)
        self.forecast.start(key)
        record = await self._commit(record, self._event(
            EventKind.STEP_REUSED, key=key, role=role, phase=phase, cached=True))
        self.records[key] = record
        self.reused += 1
        return StepOutcome(key, StepStatus.OK, value, record, reused=True)

    def _temperature(self, requested: float | None) -> float | None:
        if requested is not None:
            return requested
        if self.preset.temperature is not None:
            return self.preset.temperature
        return self.settings.temperature

    async def _reuse(self, stored: StepRecord, schema: type[T]) -> StepOutcome[T]:
        self.records[stored.key] = stored
        self.reused += 1
        self.forecast.start(stored.key)
        await self.emit(EventKind.STEP_REUSED, key=stored.key, role=stored.role, phase=stored.phase)
        if stored.status in (StepStatus.FILTERED, StepStatus.REFUSED) or stored.output is None:
            return StepOutcome(stored.key, stored.status, None, stored, reused=True)
        try:
            value = schema.model_validate(stored.output)
        except ValidationError as exc:  # a schema changed since it was stored: say so, go on
            error = (f"stored output no longer fits {schema.__name__}: {exc.error_count()} "
                     "errors")
            record = stored.model_copy(update={"status": StepStatus.DEGRADED, "error": error})
            self.records[stored.key] = record
            return StepOutcome(stored.key, StepStatus.DEGRADED, None, record, reused=True)
        return StepOutcome(stored.key, StepStatus.OK, value, stored, reused=True)

    def _retry_reporter(self, key: str) -> Callable[[int, str, float], Any]:
        async def report(attempt: int, reason: str, delay: float) -> None:
            await self.emit(EventKind.STEP_RETRY, key=key, attempt=attempt, reason=reason,
                            delay_seconds=round(delay, 3))

        return report

    def _cost(self, usage: Usage, model: str) -> float:
        return price(usage, self.settings.price_for(model))

    def _predicted_cost(self, key: str, role: str, phase: str, model: str, prompt: Prompt,
                        schema: type[T]) -> tuple[float, int]:
        """What a call may cost before it is made (its real prompt and schema, a conservative
        bound; its kind's high reply size, engine/money/sizing.py), and its output cap."""
        prompt_tokens = (token_bound(prompt.system) + token_bound(prompt.user)
                         + schema_tokens(schema))
        usage = self.forecast.call_usage(key, model, role, phase, prompt_tokens)
        cap = self.forecast.output_cap(key, model, role, phase, self.settings.effort_for(role),
                                       usage.completion_tokens)
        if self.spending.purse is None:  # no budget to keep: no price needed before the reply
            return 0.0, cap
        return self.forecast.cost(usage, self.settings.priced_model(model)), cap

    async def _admitted(self, key: str, predicted: float, phase: str) -> bool:
        """Whether the debate's money covers the call and the rest of its plan (judging
        included); the first refusal is reported once."""
        after = self.phases[-1].name if self.phases else None
        first = self.spending.exhausted is None
        rest = self.forecast.rest_usd(key, phase) if self.spending.purse is not None else 0.0
        self.forecast.start(key)
        if await self.spending.admit(predicted, rest=rest, phase=phase, after=after,
                                     judging=self.forecast.is_judging(phase)):
            return True
        if first and self.spending.exhausted is not None:
            await self.emit(EventKind.BUDGET_EXHAUSTED, phase=phase, after_phase=after,
                            spent_usd=round(self.spending.spent, 6))
        return False

    def _billed(self, model: str, meter: Meter) -> dict[str, Any]:
        """A failed step's record fields for what the provider billed before it failed: a reply
        that was invalid and re-asked, or filtered, is cost and a call all the same."""
        billed_model = meter.model or model
        return {"model": billed_model, "usage": meter.usage, "calls": meter.calls,
                "cost_usd": self._cost(meter.usage, billed_model)}

    async def _degrade(
        self, key: str, role: str, phase: str, model: str, prompt: Prompt, reason: str,
        meter: Meter, *, attempts: int = 1,
    ) -> StepOutcome[Any]:
        record = StepRecord(
            key=key, role=role, phase=phase, status=StepStatus.DEGRADED,
            prompt_hash=prompt_hash(prompt), attempts=max(meter.calls, attempts),
            error=reason, rehearsal=self.rehearsal, **self._billed(model, meter),
        )
        self.records[key] = record  # not stored: a resumed debate tries this step again
        await self._commit(record, self._event(
            EventKind.STEP_DEGRADED, key=key, role=role, phase=phase, reason=reason,
            cost_usd=record.cost_usd, calls=record.calls), stored=False)
        return StepOutcome(key, StepStatus.DEGRADED, None, record)

    async def _withheld(
        self, status: StepStatus, key: str, role: str, phase: str, model: str, prompt: Prompt,
        reason: str, meter: Meter,
    ) -> StepOutcome[Any]:
        """A step the provider answered without an output: its content filter withheld it, or
        the model refused (`reason` is then its own words). Stored, so it is not paid again."""
        record = StepRecord(
            key=key, role=role, phase=phase, status=status,
            prompt_hash=prompt_hash(prompt), attempts=max(meter.calls, 1), error=reason,
            rehearsal=self.rehearsal, **self._billed(model, meter),
        )
        kind = EventKind.STEP_FILTERED if status is StepStatus.FILTERED else EventKind.STEP_REFUSED
        record = await self._commit(record, self._event(
            kind, key=key, role=role, phase=phase, reason=reason, cost_usd=record.cost_usd,
            calls=record.calls))
        self.records[key] = record
        return StepOutcome(key, status, None, record)
