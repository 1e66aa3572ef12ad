"""What the engine needs to be traced: a port, and the spans of a debate in GenAI terms.

The engine never imports OpenTelemetry. It opens spans through `Tracer` (bot/service/tracing.py
implements it over the OpenTelemetry SDK when the OTEL_* variables ask for traces); by default
it holds `NO_TRACER`, whose `enabled` is False, and every traced path checks that first, so a
debate without tracing builds no attribute and opens no span.

The names follow the OpenTelemetry GenAI semantic conventions:

    invoke_workflow dialectic          the debate (mode, preset, id, routing, alpha, cost)
      phase {name}                     a phase of the protocol (internal)
        invoke_agent {role}            one step of one role (pro, con, judge/technical, ...)
          chat {model}                 the LLM call (its retries are attributes, not spans)

Prompts and replies are recorded only when the tracer's `capture_content` is on, and then with
every spotlight region shown as its plain text (no marker, no boundary) and secrets redacted.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

from engine.domain import DebateResult, Event, EventKind
from engine.ports import EventSink, emit_all
from engine.provider.llm import CallSpec, LLMClient, Reply, T
from engine.untrusted.spotlight import BEGIN, END, regions

Attributes = Mapping[str, Any]

#: the workflow's name (`gen_ai.workflow.name`; the workflow span is "invoke_workflow dialectic")
WORKFLOW = "dialectic"
EVALUATION_EVENT = "gen_ai.evaluation.result"
#: `gen_ai.provider.name` of the offline model (a custom value: the conventions allow them)
REHEARSAL_PROVIDER = "dialectic.rehearsal"
#: OpenAI-compatible hosts (exact, or a suffix when it starts with a dot) whose provider the
#: conventions name; any other endpoint is "openai", the API the gateway speaks (the
#: conventions' "best knowledge")
PROVIDER_HOSTS = (
    (".openai.azure.com", "azure.ai.openai"), (".cognitiveservices.azure.com", "azure.ai.openai"),
    ("api.deepseek.com", "deepseek"), ("api.groq.com", "groq"), ("api.x.ai", "x_ai"),
    ("api.mistral.ai", "mistral_ai"), ("api.perplexity.ai", "perplexity"),
    ("generativelanguage.googleapis.com", "gcp.gemini"))


class Span(Protocol):
    def set(self, attributes: Attributes) -> None: ...

    def event(self, name: str, attributes: Attributes) -> None: ...

    def fail(self, error_type: str, description: str = "") -> None:
        """Mark the span failed with `error.type` (a short, low-cardinality name)."""
        ...


class Tracer(Protocol):
    @property
    def enabled(self) -> bool: ...

    @property
    def capture_content(self) -> bool: ...

    def span(self, name: str, attributes: Attributes, *, client: bool = False
             ) -> AbstractContextManager[Span]:
        """A child of the current span, current itself inside the `with`."""
        ...

    def redact(self, text: str) -> str:
        """`text` with every secret the process knows of replaced."""
        ...


class NoSpan:
    def set(self, attributes: Attributes) -> None:
        return None

    def event(self, name: str, attributes: Attributes) -> None:
        return None

    def fail(self, error_type: str, description: str = "") -> None:
        return None


class NoTracer:
    """Tracing off: nothing opened, nothing recorded."""

    enabled = False
    capture_content = False

    @contextmanager
    def span(self, name: str, attributes: Attributes, *, client: bool = False
             ) -> Iterator[Span]:
        yield NoSpan()

    def redact(self, text: str) -> str:
        return text


NO_TRACER: Tracer = NoTracer()


def plain(text: str, tracer: Tracer) -> str:
    """`text` as a trace may show it: each spotlight region as its label and plain text, every
    marker (and its secret boundary) elsewhere, as in the rule that quotes them, replaced;
    secrets redacted."""
    pieces: list[str] = []
    done = 0
    for region in regions(text):
        pieces += [text[done:region.start], f"[{region.label}]\n{region.text}"]
        done = region.end
    pieces.append(text[done:])
    joined = "".join(pieces)
    boundaries = {m[1] for m in _MARKER.finditer(joined)}
    joined = _MARKER.sub("[marker]", joined)
    for boundary in boundaries:  # the rule names the boundary on its own too
        joined = joined.replace(boundary, "…")
    return tracer.redact(joined)


_MARKER = re.compile(rf"(?:{re.escape(BEGIN)}|{re.escape(END)})([0-9a-f]{{24}})(?:[^>\n]*>>>)?")


def provider_of(endpoint: str) -> dict[str, Any]:
    """`gen_ai.provider.name`, `server.address` and `server.port` of an OpenAI-compatible
    endpoint (a base URL; its credentials, if any, are never read)."""
    try:
        parts = urlsplit(endpoint)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return {"gen_ai.provider.name": "openai"}
    found: dict[str, Any] = {"gen_ai.provider.name": next(
        (name for known, name in PROVIDER_HOSTS
         if (host.endswith(known) if known.startswith(".") else host == known)), "openai")}
    if host:
        found["server.address"] = host
        found["server.port"] = port or (443 if parts.scheme == "https" else 80)
    return found


def _provider(llm: LLMClient) -> dict[str, Any]:
    if llm.rehearsal:
        return {"gen_ai.provider.name": REHEARSAL_PROVIDER}
    endpoint = getattr(llm, "endpoint", "")  # the gateway's base URL, without credentials
    return provider_of(endpoint) if isinstance(endpoint, str) and endpoint else {
        "gen_ai.provider.name": "openai"}


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}],
                      ensure_ascii=False)


def _request_attributes(spec: CallSpec[Any], *, provider: Attributes, conversation: str,
                        tracer: Tracer) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", **provider, "gen_ai.request.model": spec.model,
        "gen_ai.conversation.id": conversation, "dialectic.step.key": spec.step,
        "gen_ai.output.type": "json"}
    if spec.temperature is not None:
        attrs["gen_ai.request.temperature"] = spec.temperature
    if spec.max_output_tokens is not None:
        attrs["gen_ai.request.max_tokens"] = spec.max_output_tokens
    if tracer.capture_content:
        attrs["gen_ai.system_instructions"] = json.dumps(
            [{"type": "text", "content": plain(spec.prompt.system, tracer)}], ensure_ascii=False)
        attrs["gen_ai.input.messages"] = _messages("user", plain(spec.prompt.user, tracer))
    return attrs


def _reply_attributes(reply: Reply[Any], tracer: Tracer) -> dict[str, Any]:
    usage = reply.usage
    attrs: dict[str, Any] = {
        "gen_ai.response.model": reply.model, "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
        "gen_ai.response.finish_reasons": [reply.finish_reason],
        "dialectic.attempts": reply.attempts, "dialectic.retries": max(reply.attempts - 1, 0),
        "dialectic.billed_calls": reply.calls}
    if tracer.capture_content:
        text = plain(reply.value.model_dump_json(), tracer)
        attrs["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": text}],
              "finish_reason": reply.finish_reason}], ensure_ascii=False)
    return attrs


async def traced_complete(tracer: Tracer, llm: LLMClient, spec: CallSpec[T], *, phase: str,
                          timeout: float, conversation: str = "") -> Reply[T]:
    """`llm.complete(spec)` within `timeout`, as an `invoke_agent {role}` span holding a
    `chat {model}` span when tracing is on; exactly the call when it is off. `conversation`:
    the debate's id (`gen_ai.conversation.id`)."""
    if not tracer.enabled:
        async with asyncio.timeout(timeout):
            return await llm.complete(spec)
    provider = _provider(llm)
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": spec.role,
             "gen_ai.provider.name": provider["gen_ai.provider.name"],
             "gen_ai.request.model": spec.model, "gen_ai.conversation.id": conversation,
             "dialectic.phase": phase, "dialectic.step.key": spec.step}
    request = _request_attributes(spec, provider=provider, conversation=conversation,
                                  tracer=tracer)
    with tracer.span(f"invoke_agent {spec.role}", agent) as agent_span, \
            tracer.span(f"chat {spec.model}", request, client=True) as chat:
        try:
            async with asyncio.timeout(timeout):
                reply = await llm.complete(spec)
        except (Exception, asyncio.CancelledError) as exc:  # recorded, then re-raised
            meter = spec.meter
            if meter is not None and meter.calls:
                chat.set({"gen_ai.usage.input_tokens": meter.usage.prompt_tokens,
                          "gen_ai.usage.output_tokens": meter.usage.completion_tokens,
                          "dialectic.billed_calls": meter.calls})
            chat.fail(type(exc).__name__, tracer.redact(str(exc)))
            agent_span.fail(type(exc).__name__)
            raise
        chat.set(_reply_attributes(reply, tracer))
    return reply


def evaluations(event: Event) -> list[dict[str, Any]]:
    """A judge's scores as `gen_ai.evaluation.result` attributes: one per side it scored (the
    mean of its rubric for that side, labelled with whether that side won)."""
    rubric = event.data.get("rubric") or {}
    judge, winner = str(event.data.get("judge", "")), event.data.get("winner")
    found: list[dict[str, Any]] = []
    for side, scores in sorted(rubric.items()):
        values = [float(v) for v in dict(scores).values()]
        if not values:
            continue
        label = "tie" if winner is None else ("wins" if str(winner) == str(side) else "loses")
        found.append({
            "gen_ai.evaluation.name": f"{judge}: {side}", "dialectic.judge": judge,
            "dialectic.side": str(side),
            "gen_ai.evaluation.score.value": round(sum(values) / len(values), 4),
            "gen_ai.evaluation.score.label": label,
            "gen_ai.evaluation.explanation": ", ".join(
                f"{k}={v}" for k, v in sorted(dict(scores).items()))})
    return found


class EvaluationSink:
    """Passes every event on, and records each judge's scores on the workflow span.

    The conventions parent a `gen_ai.evaluation.result` to "the GenAI operation span being
    evaluated": a judge scores each side's whole case (every argument of the debate), so the
    evaluated operation is the debate, the workflow span; the judge's own `invoke_agent` span
    is the evaluator's call, not what it evaluated."""

    def __init__(self, sink: EventSink, span: Span) -> None:
        self.sink = sink
        self.span = span

    async def emit(self, event: Event) -> None:
        await self.emit_all((event,))

    async def emit_all(self, events: Sequence[Event]) -> None:
        for event in events:
            if event.kind is EventKind.JUDGE_SCORED:
                for attributes in evaluations(event):
                    self.span.event(EVALUATION_EVENT, attributes)
        await emit_all(self.sink, events)


def workflow_attributes(debate_id: str, *, mode: str, preset: str, topic_chars: int
                        ) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": WORKFLOW,
            "gen_ai.conversation.id": debate_id, "dialectic.debate.id": debate_id,
            "dialectic.mode": mode, "dialectic.preset": preset,
            "dialectic.topic.chars": topic_chars}


def result_attributes(result: DebateResult) -> dict[str, Any]:
    """What the debate came to, on its workflow span (a partial result says so: `complete`)."""
    attrs: dict[str, Any] = {
        "dialectic.status": str(result.status), "dialectic.complete": result.complete,
        "dialectic.routing": str(result.routing), "dialectic.cost_usd": result.cost.usd,
        "dialectic.rehearsal": result.rehearsal, "dialectic.mode": str(result.mode),
        "gen_ai.usage.input_tokens": result.cost.prompt_tokens,
        "gen_ai.usage.output_tokens": result.cost.completion_tokens}
    consensus = result.consensus
    if consensus is not None and consensus.alpha is not None:
        attrs["dialectic.alpha"] = consensus.alpha
    if consensus is not None and consensus.kappa is not None:
        attrs["dialectic.kappa"] = consensus.kappa
    return attrs
