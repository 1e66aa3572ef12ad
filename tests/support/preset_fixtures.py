"""Scripted debaters and judges for the presets' surfaces
(tests/integration/test_preset_surfaces.py): the openings carry a marker per side, so a judge
can tell which side it sees as "Position A"; an agreeing panel scores the same side high
whatever the order it was shown (alpha 1.00); a lopsided panel always scores Position A high, so
with the order alternating across the panel the judges split on every item and on the winner
(alpha far below 0.50)."""
from __future__ import annotations

from typing import Any

from engine.core.presets import BUILTIN_PRESETS
from tests.fakes.openai_server import FakeOpenAI, last_text

DIMENSIONS = ("logic", "evidence", "rebuttal", "clarity", "relevance")
PRO_PERSONAS = {p.pro_persona for p in BUILTIN_PRESETS.values()}
MARK = {"FOR": "ZQFORSIDE", "AGAINST": "ZQAGAINSTSIDE"}
#: a claim of each side, with text that must be escaped on every surface
CLAIM = {"FOR": "Kafka keeps <b>ordering</b> & replay", "AGAINST": "Ops cost <script>x</script>"}


def is_opening(body: dict[str, Any]) -> bool:
    return "Task: Give your opening" in last_text(body, "user")


def is_judge(body: dict[str, Any]) -> bool:
    return "impartial debate judge" in last_text(body, "system")


def opening(body: dict[str, Any]) -> dict[str, Any]:
    system = last_text(body, "system")
    side = "FOR" if any(p in system for p in PRO_PERSONAS) else "AGAINST"
    return {"summary": f"{MARK[side]} opening", "claims": [
        {"claim": f"{CLAIM[side]} ({n})", "evidence": f"evidence {n}"} for n in (1, 2)]}


def _a_is_for(body: dict[str, Any]) -> bool:
    text = last_text(body, "user")
    shown = text[text.index("Position A — opening"):]
    return shown.find(MARK["FOR"]) < shown.find(MARK["AGAINST"]) or MARK["AGAINST"] not in shown


def agreeing(body: dict[str, Any]) -> dict[str, Any]:
    """Every judge: the side arguing for scores 8, the other 4; it names the side for."""
    high, low = dict.fromkeys(DIMENSIONS, 8), dict.fromkeys(DIMENSIONS, 4)
    a_for = _a_is_for(body)
    return {"position_a": high if a_for else low, "position_b": low if a_for else high,
            "claims": [], "winner": "A" if a_for else "B", "rationale": "For is stronger."}


LOPSIDED = {"position_a": dict.fromkeys(DIMENSIONS, 9), "position_b": dict.fromkeys(DIMENSIONS, 2),
            "claims": [], "winner": "A", "rationale": "A is far stronger."}


def script(fake: FakeOpenAI, panel: str) -> None:
    """Openings with markers; judges that agree ("agree") or split ("split")."""
    fake.script(is_opening, opening)
    fake.script(is_judge, agreeing if panel == "agree" else LOPSIDED)


__all__ = ["CLAIM", "LOPSIDED", "agreeing", "is_judge", "is_opening", "opening", "script"]
