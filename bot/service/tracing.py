"""Traces over OpenTelemetry, when asked: the engine's `Tracer` (engine/tracing.py) on the SDK,
W3C trace context across the queue, the trace id in the logs.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER` is set (and not "none"): then
nothing of OpenTelemetry is imported and `tracing()` is `OFF`, whose every method costs nothing.
On, the SDK configures itself from the standard variables: `Resource.create()` reads
OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, `TracerProvider()` OTEL_TRACES_SAMPLER(_ARG),
the exporter (named by OTEL_TRACES_EXPORTER, "otlp" by default, whose protocol is
OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL, http/protobuf by default) its endpoint, headers, timeout.

A debate's trace: the surface's span (the API request, the Slack ack, the cron slot) stores its
context with the queued debate (`Origin.traceparent`); the worker's `claim debate` span continues
it, and stores its own context (`Origin.attempt_traceparent`) so a later attempt (the worker died)
links to the attempt it resumes.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from bot.service.logs import redact
from engine.tracing import NO_TRACER, Attributes, NoSpan, Span, Tracer

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from bot.service.settings import ServiceSettings

log = logging.getLogger("dialectic.tracing")

SCOPE = "dialectic"
#: OTEL_EXPORTER_OTLP_PROTOCOL values -> the SDK's exporter entry points
PROTOCOLS = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}


SDK_MODULE = "opentelemetry.sdk.trace"
INSTALL = "pip install 'dialectic[otel]' (or `make run OTEL=1`)"


def installed() -> bool:
    """Whether the OpenTelemetry SDK (the `otel` extra) is installed, asked of the package's
    metadata: nothing of OpenTelemetry is imported to find out (tracing may be off)."""
    if SDK_MODULE in sys.modules:   # imported already (or blocked, as None)
        return sys.modules[SDK_MODULE] is not None
    try:
        importlib.metadata.distribution("opentelemetry-sdk")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def missing_extra(environ: Mapping[str, str]) -> str | None:
    """One line when an `OTEL_*` variable asks for something the `otel` extra would do and the
    extra is not installed (checked only then: otherwise nothing of OpenTelemetry is touched)."""
    names = [n for n, v in sorted(environ.items()) if n.startswith("OTEL_") and v.strip()]
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none" or not names:
        return None
    if installed():
        return None
    return (f"{', '.join(names)} set, but OpenTelemetry is not installed, so nothing is traced: "
            f"{INSTALL}")


def wanted(settings: ServiceSettings) -> bool:
    """Whether the settings ask for traces."""
    exporter = settings.otel_traces_exporter.strip().lower()
    if exporter:
        return exporter != "none"
    return bool(settings.otel_exporter_otlp_endpoint.strip())


class _OtelSpan:
    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(dict(attributes))

    def event(self, name: str, attributes: Attributes) -> None:
        self._span.add_event(name, dict(attributes))

    def fail(self, error_type: str, description: str = "") -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description[:500] or None))


class Tracing:
    """The process's traces: the engine's `Tracer`, and what the service adds around a debate."""

    def __init__(self, provider: TracerProvider | None = None, *, capture_content: bool = False,
                 secrets: tuple[str, ...] = ()) -> None:
        self.provider = provider
        self.capture_content = capture_content and provider is not None
        self._secrets = secrets
        self._tracer = provider.get_tracer(SCOPE) if provider is not None else None

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @property
    def tracer(self) -> Tracer:
        return self if self.enabled else NO_TRACER

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    @contextmanager
    def span(self, name: str, attributes: Attributes, *, client: bool = False,
             kind: str | None = None, parent: str | None = None,
             links: tuple[str, ...] = ()) -> Iterator[Span]:
        """A span, current inside the `with`; `parent` (a traceparent) continues another
        process's trace, `links` points at other spans (a crashed attempt)."""
        if self._tracer is None:
            yield NoSpan()
            return
        from opentelemetry import trace

        context = _extract(parent) if parent else None
        span_kind = trace.SpanKind[(kind or ("client" if client else "internal")).upper()]
        span_links = [trace.Link(c) for c in (_span_context(p) for p in links) if c is not None]
        with self._tracer.start_as_current_span(name, context=context, kind=span_kind,
                                                attributes=dict(attributes),
                                                links=span_links) as span:
            yield _OtelSpan(span)

    def traceparent(self) -> str | None:
        """The current span's W3C traceparent, or None (tracing off, or no span)."""
        if self._tracer is None:
            return None
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier)
        return carrier.get("traceparent")

    def trace_id(self) -> str | None:
        if self._tracer is None:
            return None
        from opentelemetry import trace

        context = trace.get_current_span().get_span_context()
        return f"{context.trace_id:032x}" if context.is_valid else None

    def shutdown(self) -> None:
        """Export what is left and stop (before the process exits)."""
        if self.provider is not None:
            self.provider.force_flush()
            self.provider.shutdown()


OFF = Tracing()
_current: Tracing = OFF


def tracing() -> Tracing:
    """The process's tracing (`OFF` until `setup_tracing` turned it on)."""
    return _current


def setup_tracing(settings: ServiceSettings, secrets: tuple[str, ...] = (), *,
                  exporter: SpanExporter | None = None,
                  environ: Mapping[str, str] = os.environ) -> Tracing:
    """Turn tracing on when the settings ask (once per process); `exporter` replaces the one
    the variables name (the tests' in-memory exporter)."""
    global _current
    if _current.enabled or not (exporter is not None or wanted(settings)):
        return _current
    if not installed():  # said once, before the command started (bot/settings.py)
        log.debug("tracing asked for, but OpenTelemetry is not installed: %s", INSTALL)
        return _current
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    named = "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    defaults = {} if environ.get("OTEL_SERVICE_NAME") or named else {"service.name": SCOPE}
    provider = TracerProvider(resource=Resource.create(defaults))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporters = _exporters(settings, environ) if wanted(settings) else []
    for made in exporters:
        provider.add_span_processor(BatchSpanProcessor(made))
    _current = Tracing(provider, capture_content=settings.otel_capture_message_content,
                       secrets=secrets)
    _add_trace_ids_to_logs()
    log.info("tracing on: spans exported by %s", ", ".join(
        type(e).__name__ for e in [exporter, *exporters] if e is not None))
    return _current


def reset_tracing() -> None:
    """Back to `OFF`, exporting what is left first (tests; a process ends with `shutdown`)."""
    global _current
    _current.shutdown()
    _current = OFF


def _exporters(settings: ServiceSettings, environ: Mapping[str, str]) -> list[Any]:
    """The exporters OTEL_TRACES_EXPORTER names, each built by the SDK's entry point with no
    arguments (so it reads its own OTEL_EXPORTER_* variables)."""
    from importlib.metadata import entry_points

    names = [n.strip() for n in (settings.otel_traces_exporter or "otlp").split(",")
             if n.strip() and n.strip().lower() != "none"]
    made: list[Any] = []
    for name in names:
        if name == "otlp":
            protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
            name = PROTOCOLS.get(protocol.strip(), "otlp_proto_http")
        found = entry_points(group="opentelemetry_traces_exporter", name=name)
        if not found:
            log.warning("OTEL_TRACES_EXPORTER names %r, which no installed package provides; "
                        "no span goes there", name)
            continue
        exporter_class = next(iter(found)).load()
        # stdout is the command's own output (`run --json` is one JSON object): spans a person
        # asked to see in the terminal go to stderr, with the logs
        made.append(exporter_class(out=sys.stderr) if name == "console" else exporter_class())
    return made


def _extract(traceparent: str) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})


def _span_context(traceparent: str) -> Any:
    from opentelemetry import trace

    context = trace.get_current_span(_extract(traceparent)).get_span_context()
    return context if context.is_valid else None


class TraceIdFilter(logging.Filter):
    """Ends each log line written inside a span with ` trace_id=<32 hex digits>` (nothing when
    no span is current), so a line leads to its trace."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = _current.trace_id()
        if trace_id is not None:
            record.msg = f"{record.getMessage()} trace_id={trace_id}"
            record.args = ()
        return True


def _add_trace_ids_to_logs() -> None:
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, TraceIdFilter) for f in handler.filters):
            handler.addFilter(TraceIdFilter())
