"""The offline rehearsal model: schema-valid, topic-aware content, deterministic, free, and labelled
*rehearsal* in every output. `make run` works with no key; nobody mistakes it for a real debate.

Values are generated from the JSON schema of the requested pydantic model, seeded by the prompt
(its random spotlight boundary masked), so the same prompt always gets the same reply. Judges find
which neutral label is the "for" side and score it from a topic-seeded base plus a judge-specific
wobble, so panels mostly agree, as real ones do, without the figures being fixed.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from engine.domain import Usage, sha256
from engine.provider.llm import CallSpec, Prompt, Reply, T
from engine.untrusted.material import QUESTION, TOPIC
from engine.untrusted.spotlight import regions
from engine.vocabulary import Side

MARK = "[rehearsal]"
_SIDE_WORD: dict[str, str] = {Side.PRO: "FOR", Side.CON: "AGAINST"}


class RehearsalModel:
    """An `LLMClient` that never leaves the process. `latency` simulates a provider's delay."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency

    @property
    def rehearsal(self) -> bool:
        return True

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        if self.latency:
            await asyncio.sleep(self.latency)
        seed = int(sha256(spec.role + _without_boundaries(spec.prompt))[:12], 16)
        gen = _Generator(spec, random.Random(seed))
        schema = spec.schema.model_json_schema()
        value = spec.schema.model_validate(gen.value(schema, schema, ""))
        words = len(spec.prompt.system.split()) + len(spec.prompt.user.split())
        usage = Usage(prompt_tokens=int(words * 1.3),
                      completion_tokens=len(value.model_dump_json()) // 4)
        if spec.meter is not None:
            spec.meter.bill(usage, "rehearsal")
        return Reply(value=value, usage=usage, model="rehearsal", attempts=1)

    async def aclose(self) -> None:
        return None


class _Generator:
    def __init__(self, spec: CallSpec[Any], rng: random.Random) -> None:
        self.spec = spec
        self.rng = rng
        self.topic = _topic(spec.prompt.user)[:80]
        self.role = spec.role
        self.for_label = _for_label(spec.prompt.user)
        self.last_ref = ""
        self.claim_ids = re.findall(r"^([AB]\d+)\. ", spec.prompt.user, re.M)

    def value(self, node: dict[str, Any], root: dict[str, Any], path: str) -> Any:
        if "$ref" in node:
            return self.value(root["$defs"][node["$ref"].split("/")[-1]], root, path)
        if "anyOf" in node:
            return self.value(node["anyOf"][0], root, path)
        if "enum" in node:
            return self._enum(node["enum"], path)
        if "const" in node:
            return node["const"]
        kind = node.get("type")
        if kind == "object":
            return {k: self.value(v, root, f"{path}.{k}" if path else k)
                    for k, v in node.get("properties", {}).items()}
        if kind == "array":
            low, high = node.get("minItems", 0), min(node.get("maxItems", 3), 3)
            count = max(low, min(high, 2 + self.rng.randint(0, 1)))
            if path == "claims" and self.claim_ids:
                count = min(len(self.claim_ids), node.get("maxItems", 20))
            return [self.value(node["items"], root, f"{path}[{i}]") for i in range(count)]
        if kind == "integer":
            return self._int(node, path)
        if kind == "number":
            low, high = node.get("minimum", 0.0), node.get("maximum", 1.0)
            return round(low + (high - low) * (0.55 + 0.35 * self.rng.random()), 3)
        if kind == "boolean":
            return self._bool(path)
        return self._text(node, path)

    def _text(self, node: dict[str, Any], path: str) -> str:
        leaf = re.sub(r"\[\d+\]", "", path).split(".")[-1]
        idx = re.findall(r"\[(\d+)\]", path)
        n = int(idx[-1]) + 1 if idx else 1
        if leaf in {"target", "claim", "id"} and self._is_reference(path):
            self.last_ref = self._reference(n)
            return self.last_ref
        side = _SIDE_WORD.get(self.role, self.role)
        text = f"{MARK} {side} — {leaf.replace('_', ' ')} {n} on “{self.topic}”"
        return text[: node.get("maxLength", 600)]

    @staticmethod
    def _is_reference(path: str) -> bool:
        """Fields that name a claim by id rather than state one."""
        shape = re.sub(r"\[\d+\]", "[]", path)
        return shape in {"challenges[].target", "responses[].target", "answers[].claim",
                         "claims[].id"}

    def _reference(self, n: int) -> str:
        """Ids of claims this step refers to: the other side's, its own, or neutral ones."""
        if self.role.startswith("judge"):
            return self.claim_ids[n - 1] if n <= len(self.claim_ids) else f"A{n}"
        if "closing" in self.spec.prompt.user.lower() and "answer each challenge" in \
                self.spec.prompt.user:
            return f"{'P' if self.role == Side.PRO else 'C'}{n}"
        return f"{'C' if self.role == Side.PRO else 'P'}{n}"

    def _int(self, node: dict[str, Any], path: str) -> int:
        low, high = int(node.get("minimum", 1)), int(node.get("maximum", 10))
        item = self._item(path)
        if item is None:
            return low + self.rng.randint(0, high - low)
        base = 4 + int(sha256(f"{self.topic}|{item}")[:4], 16) % 5          # 4..8 per item
        wobble = self.rng.choice((-1, 0, 0, 0, 1))                          # per judge
        return max(low, min(high, base + wobble))

    def _item(self, path: str) -> str | None:
        """The real item a judge's score is about ("pro.logic", "claim.P2"), seen through labels."""
        if not self.for_label:
            return None
        if path.startswith(("position_a.", "position_b.")):
            label = "A" if path.startswith("position_a") else "B"
            return f"{self._side(label)}.{path.split('.', 1)[1]}"
        if path.endswith(".strength") and self.last_ref:
            label, number = self.last_ref[0], self.last_ref[1:]
            return f"claim.{'P' if self._side(label) is Side.PRO else 'C'}{number}"
        return None

    def _side(self, label: str) -> Side:
        return Side.PRO if label == self.for_label else Side.CON

    def _enum(self, options: list[Any], path: str) -> Any:
        if set(options) >= {"A", "B"} and self.for_label:
            topic_lean = int(sha256(self.topic)[:2], 16) % 3 - 1
            other = "B" if self.for_label == "A" else "A"
            return {1: self.for_label, -1: other}.get(topic_lean, "tie")
        return options[0] if self.rng.random() < 0.7 else self.rng.choice(options)

    def _bool(self, path: str) -> bool:
        if path.endswith("conceded") or path.endswith("rebutted"):
            return self.rng.random() < 0.25
        return self.rng.random() < 0.6


def _without_boundaries(prompt: Prompt) -> str:
    """The prompt with its spotlight boundaries masked: the same debate asked again (a new
    random boundary) gets the same rehearsal replies."""
    text = prompt.system + prompt.user
    for boundary in {r.boundary for r in regions(text)}:
        text = text.replace(boundary, "<boundary>")
    return text


def _topic(user: str) -> str:
    """The proposition or question, read from its spotlighted region (as text, datamarks gone)."""
    found = next((r.text for r in regions(user) if r.label in (TOPIC, QUESTION)), "")
    return " ".join(found.split()) or "the question"


def _for_label(user: str) -> str | None:
    """Which neutral label ('A' or 'B') carries the FOR side in a judge's transcript, if any."""
    match = re.search(r"## Position ([AB]) — opening\n(.*)", user)
    if not match:
        return None
    label, first_line = match.group(1), match.group(2)
    if "FOR" in first_line:
        return label
    return "B" if label == "A" else "A"
