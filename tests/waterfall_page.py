"""A trace as a Jaeger-style waterfall page: one self-contained HTML file (no script, no fetch),
drawn from the SDK's finished spans, for `make screenshots` to photograph
(docs/screenshots/trace-waterfall.png, docs/tracing.md).

Each span is a row in tree order (tests/waterfall.py `tree`): its name indented under its parent,
a bar placed by its start and end on the trace's time axis, its duration beside the bar. A
`chat` span's caption is its GenAI attributes (model, tokens, retries); the workflow's is the
debate's mode and outcome, saying "partial" when the result is not complete and "rehearsal" when
the offline model answered. A span with an error status is red and says its `error.type`. Every
span name and attribute is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from engine.tracing import REHEARSAL_PROVIDER
from tests.waterfall import tree

STEPS = (1, 2, 2.5, 5)   # a tick's step is one of these times a power of ten, in seconds

STYLE = """
:root { --name: 40%; --ink: #1f2328; --muted: #57606a; --line: #d0d7de; --grid: #eaeef2;
  font: 14px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); }
body { margin: 0; padding: 20px 24px; background: #fff; }
h1 { font-size: 18px; margin: 0 0 2px; }
.summary { color: var(--muted); margin: 0 0 14px; }
.summary b { color: var(--ink); font-weight: 600; }
.row { display: grid; grid-template-columns: var(--name) 1fr; align-items: center;
  border-bottom: 1px solid var(--grid); min-height: 30px; }
.axis { border-bottom: 1px solid var(--line); min-height: 24px; color: var(--muted);
  font-size: 12px; }
.label { padding: 3px 8px 3px calc(4px + var(--depth) * 16px); min-width: 0;
  border-left: 3px solid transparent; }
.name { font-weight: 600; overflow-wrap: anywhere; }
.caption { display: block; color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
.track { position: relative; height: 30px; border-left: 1px solid var(--line);
  background: repeating-linear-gradient(to right, transparent 0,
    transparent calc(var(--step) - 1px), var(--grid) calc(var(--step) - 1px),
    var(--grid) var(--step)); }
.axis .track { background: none; height: 24px; }
.tick { position: absolute; top: 4px; transform: translateX(-50%); white-space: nowrap; }
.tick.first { transform: none; padding-left: 4px; }
.tick.last { transform: translateX(-100%); padding-right: 4px; }
.dur.inside { color: #fff; z-index: 1; }
.bar { position: absolute; top: 8px; height: 14px; min-width: 2px; border-radius: 2px; }
.dur { position: absolute; top: 6px; font-size: 12px; color: var(--muted); white-space: nowrap;
  font-variant-numeric: tabular-nums; }
.workflow .bar { background: #6e40c9; } .workflow .label { border-left-color: #6e40c9; }
.phase .bar { background: #8c959f; } .phase .label { border-left-color: #8c959f; }
.agent .bar { background: #218bff; } .agent .label { border-left-color: #218bff; }
.chat .bar { background: #1a7f37; } .chat .label { border-left-color: #1a7f37; }
.other .bar { background: #bf8700; } .other .label { border-left-color: #bf8700; }
.row.error .bar { background: #cf222e; } .row.error .label { border-left-color: #cf222e; }
.row.error { background: #ffebe9; }
.row.error .name, .row.error .caption .err { color: #a40e26; }
.legend { margin: 14px 0 0; color: var(--muted); font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin: 0 4px 0 12px; vertical-align: -1px; }
@media (max-width: 600px) {
  body { padding: 12px; }
  .row { grid-template-columns: 1fr; border-bottom: 0; }
  .axis .label { display: none; }
  .label { padding-bottom: 0; }
  .track { height: 26px; }
  .row + .row { border-top: 1px solid var(--grid); }
}
"""


def page(spans: list[ReadableSpan], *, title: str = "Trace", source: str = "") -> str:
    """The waterfall page of `spans` (one trace); `source` says where the trace came from."""
    if not spans:
        raise ValueError("a waterfall needs at least one span")
    start = min(s.start_time or 0 for s in spans)
    total = max((s.end_time or 0) - start for s in spans) or 1
    rows = tree(spans)
    errors = sum(1 for s, _ in rows if _failed(s))
    trace_id = format(rows[0][0].context.trace_id, "032x")
    summary = (f"trace <b>{trace_id}</b> · <b>{len(rows)}</b> spans · "
               f"<b>{_seconds(total)}</b>" + (f" · <b>{errors}</b> with an error" if errors else "")
               + (f" · {escape(source)}" if source else ""))
    body = "\n".join(_row(span, depth, start, total) for span, depth in rows)
    step = _step(total)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body><main>"
            f'<h1>{escape(title)}</h1><p class="summary">{summary}</p>'
            f'<div class="spans" role="list" style="--step:{step / total * 100:.3f}%">'
            f"{_axis(total, step)}\n{body}</div>"
            f"{_legend()}</main></body></html>\n")


def _step(total: int) -> float:
    """The time between ticks, in nanoseconds: a round number giving three to five ticks."""
    scale = 10.0 ** math.floor(math.log10(total / 4 / 1e9))
    return float(next(k * scale for k in (*STEPS, 10) if k * scale * 1e9 * 5 >= total) * 1e9)


def _axis(total: int, step: float) -> str:
    ticks = []
    for i in range(int(total // step) + 1):
        at = i * step / total * 100
        edge = " first" if i == 0 else " last" if at > 92 else ""
        ticks.append(f'<span class="tick{edge}" style="left:{at:.2f}%">'
                     f"{_seconds(round(i * step))}</span>")
    return ('<div class="row axis" style="--depth:0" aria-hidden="true">'
            f'<div class="label">span</div><div class="track">{"".join(ticks)}</div></div>')


def _row(span: ReadableSpan, depth: int, start: int, total: int) -> str:
    begin = (span.start_time or 0) - start
    length = max((span.end_time or 0) - (span.start_time or 0), 0)
    left, width = begin / total * 100, length / total * 100
    # the duration reads beside the bar: after it, before it when the bar reaches the right
    # edge, inside it when it spans nearly the whole trace
    if left + width <= 82:
        where, at = "dur", f"left:{left + width:.2f}%;padding-left:6px"
    elif left >= 12:
        where, at = "dur", f"right:{100 - left:.2f}%;padding-right:6px"
    else:
        where, at = "dur inside", f"right:{100 - left - width:.2f}%;padding-right:6px"
    attrs = span.attributes or {}
    caption = _caption(span.name, attrs)
    failed = _failed(span)
    if failed:
        kind = str(attrs.get("error.type") or span.status.description or "error")
        caption = f'<span class="err">✕ {escape(kind)}</span>' + (
            f" · {caption}" if caption else "")
    classes = f"row {_kind(span.name)}" + (" error" if failed else "")
    return (f'<div class="{classes}" role="listitem" style="--depth:{depth}" '
            f'data-span-id="{span.context.span_id:016x}" '
            f'data-parent-id="{_parent_id(span)}" data-depth="{depth}">'
            f'<div class="label"><span class="name">{escape(span.name)}</span>'
            + (f'<span class="caption">{caption}</span>' if caption else "")
            + f'</div><div class="track"><span class="bar" style="left:{left:.2f}%;'
            f'width:{width:.2f}%"></span><span class="{where}" style="{at}">'
            f"{_seconds(length)}</span></div></div>")


def _caption(name: str, attrs: Mapping[str, Any]) -> str:
    """The attributes worth reading at a glance, escaped: a chat's model and tokens, the
    workflow's mode and outcome."""
    parts: list[str] = []
    if name.startswith("chat "):
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
        if model:
            parts.append(str(model))
        tokens_in, tokens_out = (attrs.get("gen_ai.usage.input_tokens"),
                                 attrs.get("gen_ai.usage.output_tokens"))
        if tokens_in is not None or tokens_out is not None:
            parts.append(f"{_count(tokens_in)} in → {_count(tokens_out)} out tokens")
        cached = attrs.get("gen_ai.usage.cache_read.input_tokens")
        if isinstance(cached, int) and cached:
            parts.append(f"{cached:,} cached")
        retries = attrs.get("dialectic.retries")
        if isinstance(retries, int) and retries:
            parts.append(f"{retries} {'retry' if retries == 1 else 'retries'}")
    elif name.startswith("invoke_workflow"):
        parts += [f"{key.removeprefix('dialectic.')} {attrs[key]}"
                  for key in ("dialectic.mode", "dialectic.status") if key in attrs]
        if attrs.get("dialectic.complete") is False:
            parts.append("partial result")
    if attrs.get("dialectic.rehearsal") is True or (
            attrs.get("gen_ai.provider.name") == REHEARSAL_PROVIDER):
        parts.append("rehearsal (offline model)")
    return " · ".join(escape(p) for p in parts)


def _kind(name: str) -> str:
    for prefix, kind in (("invoke_workflow", "workflow"), ("phase ", "phase"),
                         ("invoke_agent", "agent"), ("chat ", "chat")):
        if name.startswith(prefix):
            return kind
    return "other"


def _legend() -> str:
    keys = (("#6e40c9", "workflow"), ("#8c959f", "phase"), ("#218bff", "agent"),
            ("#1a7f37", "LLM call"), ("#cf222e", "error"))
    return '<p class="legend">' + "".join(
        f'<i style="background:{colour}"></i>{label}' for colour, label in keys) + "</p>"


def _failed(span: ReadableSpan) -> bool:
    return span.status.status_code is StatusCode.ERROR


def _parent_id(span: ReadableSpan) -> str:
    return f"{span.parent.span_id:016x}" if span.parent else ""


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def _seconds(nanoseconds: int) -> str:
    return f"{nanoseconds / 1e9:.2f} s"
