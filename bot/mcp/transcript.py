"""A debate's transcript as plain text (Markdown), for an assistant to read: the debate's
status and marks, each phase with what every call in it argued (its checkpointed output, field by
field), then the verdict. The text the models wrote is quoted as it was stored: it is material
to weigh, not instructions (docs/mcp.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.mcp.views import DebateOut
from engine.domain import StepRecord

MAX_FIELD_CHARS = 4000   # one field of one call's output; the result JSON has everything


def transcript_text(debate: DebateOut, calls: Iterable[StepRecord]) -> str:
    lines = [f"# {debate.topic}", "",
             f"Debate {debate.id} · {debate.mode} · preset {debate.preset} · "
             f"{debate.status_text} · {debate.calls} · cost ${debate.cost_usd:.4f}"]
    if debate.marks:
        lines.append(f"What to know: {'; '.join(debate.marks)}")
    if debate.flag:
        lines.append(debate.flag)
    by_phase: dict[str, list[StepRecord]] = {}
    for step in sorted(calls, key=lambda s: s.created_at):
        by_phase.setdefault(step.phase, []).append(step)
    names = [p.name for p in debate.phases]
    names += [name for name in by_phase if name not in names]
    states = {p.name: (p.state + (f", {p.detail}" if p.detail else "")) for p in debate.phases}
    for name in names:
        lines += ["", f"## {name} ({states.get(name, 'done')})"]
        for step in by_phase.get(name, []):
            lines += ["", f"### {step.role} ({step.model}, {step.status})"]
            lines += _output_lines(step)
    lines += _verdict_lines(debate)
    return "\n".join(lines) + "\n"


def _output_lines(step: StepRecord) -> list[str]:
    if step.output is None:
        return [f"(no output: {step.error or step.status})"]
    return [line for key, value in step.output.items() for line in _field(key, value)]


def _field(key: str, value: Any) -> list[str]:
    if isinstance(value, list):
        return [f"{key}:"] + [f"- {_short(_flat(item))}" for item in value]
    return [f"{key}: {_short(_flat(value))}"]


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value)
    return str(value)


def _short(text: str) -> str:
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


def _verdict_lines(debate: DebateOut) -> list[str]:
    result = debate.result
    if result is None:
        return ["", f"No result yet ({debate.status_text})." + (
            f" {debate.error}" if debate.error else "")]
    lines = ["", "## Verdict", "", result.headline or "none"]
    if result.rationale:
        lines.append(f"Rationale: {result.rationale}")
    if result.alpha is not None:
        lines.append(f"Alpha {result.alpha} ({result.band})")
    if result.review_reason:
        lines.append(f"Waits for a person: {result.review_reason}")
    for title, points in (("Agreements", result.agreements),
                          ("Disagreements", result.disagreements)):
        if points:
            lines.append(f"{title}: " + "; ".join(
                f"{p.label} (mean {p.mean:.1f}, spread {p.spread:.1f})" for p in points))
    if result.missing:
        lines.append("Missing: " + "; ".join(result.missing))
    return lines


__all__ = ["transcript_text"]
