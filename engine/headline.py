"""The verdict's headline, one rule stated once and shown by every surface (Slack, console, CLI,
API, digests, briefs): the headline follows the judges' votes, and the rubric means stand beside
it, so what a person reads never contradicts the numbers next to it.

    a panel (consensus and its presets)
      contested   the panel is irreconcilable, its alpha is below the escalate cut-off, or no
                  side has a weighted majority of the votes: "Contested: the judges split
                  2–1–1 (for–against–tie; alpha 0.05); the rubric means lean against: …"
      a tie       a weighted majority voted tie, or the votes for and against weigh the same
      a winner    a weighted majority of the votes names it: "For the proposition wins: 3 of 4
                  judges (3–1 for–against); rubric means 6.8 for vs 6.3 against."
    one judge (structured)
      the judge's call is the headline; when its rubric means lean the other way, it says so
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from engine.settings import ThresholdSpec
from engine.vocabulary import Side

#: Rubric means closer than this are level (the 1-10 scale's judges disagree by more).
LEVEL = 0.25
NOT_AVAILABLE = "n/a"
_NAMES = {Side.PRO: "for", Side.CON: "against", Side.TIE: "tie"}


@dataclass(frozen=True, slots=True)
class Headline:
    """The side that won (None: contested, or no verdict) and the sentence that says so."""

    winner: Side | None
    text: str


def means_text(means: Mapping[Side, float], how: str = "rubric means") -> str:
    return f"{how} {means[Side.PRO]:.1f} for vs {means[Side.CON]:.1f} against"


def lean(means: Mapping[Side, float]) -> Side:
    """The side the rubric means favour (TIE when they are level)."""
    diff = means[Side.PRO] - means[Side.CON]
    if abs(diff) < LEVEL:
        return Side.TIE
    return Side.PRO if diff > 0 else Side.CON


def _leaning(means: Mapping[Side, float]) -> str:
    side = lean(means)
    return "are level" if side is Side.TIE else f"lean {_NAMES[side]}"


def vote_split(votes: Mapping[str, Side]) -> str:
    """"3–1 for–against", "2–1–1 for–against–tie": the judges' votes, by count."""
    sides = [s for s in (Side.PRO, Side.CON, Side.TIE) if s is not Side.TIE
             or any(v is Side.TIE for v in votes.values())]
    counts = "–".join(str(sum(1 for v in votes.values() if v is s)) for s in sides)
    return f"{counts} {'–'.join(_NAMES[s] for s in sides)}"


def panel_headline(votes: Mapping[str, Side | None], means: Mapping[Side, float] | None, *,
                   weights: Mapping[str, float] | None = None, alpha: float | None = None,
                   split: bool = False, thresholds: ThresholdSpec | None = None) -> Headline:
    """The headline of a panel: `votes` each judge's named winner (None: it gave none),
    `means` the weighted rubric means per side, `split` whether the statistics found the panel
    contentious or irreconcilable (engine/verdicts.py); alpha is printed on its own side of
    `thresholds`' cut-offs."""
    cast = {judge: side for judge, side in votes.items() if side is not None}
    if not cast or means is None:
        return Headline(None, "No verdict: the judges' scores are missing.")
    weight = {j: (weights or {}).get(j, 1.0) for j in cast}
    total = sum(weight.values())
    by_side = {s: sum(w for j, w in weight.items() if cast[j] is s) for s in Side}
    numbers = means_text(means)
    said = f"; alpha {alpha_text(alpha, thresholds)}" if alpha is not None else ""
    majority = next((s for s in (Side.PRO, Side.CON, Side.TIE) if by_side[s] > total / 2),
                    None)
    level = by_side[Side.PRO] == by_side[Side.CON] and majority is None
    if split or (majority is None and not level):
        return Headline(None, f"Contested: the judges split {vote_split(cast)}{said}; "
                              f"the rubric means {_leaning(means)}: {numbers}.")
    if majority is None or majority is Side.TIE:
        return Headline(Side.TIE, f"Tie: the judges split {vote_split(cast)}; {numbers}.")
    count = sum(1 for side in cast.values() if side is majority)
    return Headline(majority, f"{_NAMES[majority].capitalize()} the proposition wins: {count} "
                              f"of {len(cast)} judges ({vote_split(cast)}); {numbers}.")


def judge_headline(call: Side, means: Mapping[Side, float]) -> Headline:
    """One judge's verdict: its call, with its own rubric means; a call the means do not bear
    out says so, so the numbers beside it never contradict it unexplained."""
    numbers = means_text(means)
    leaning = lean(means)
    if call is Side.TIE:
        note = "" if leaning is Side.TIE else f", though its rubric means {_leaning(means)}"
        return Headline(Side.TIE, f"Too close to call (the judge's call{note}): {numbers}.")
    side = _NAMES[call].capitalize()
    if leaning is call:
        return Headline(call, f"{side} the proposition wins (the judge's call): {numbers}.")
    return Headline(call, f"{side} the proposition wins by the judge's call, though its rubric "
                          f"means {_leaning(means)}: {numbers}.")


# --------------------------------------------------------------------------------------------
# alpha printed on its own side of every cut-off


def cutoffs(thresholds: ThresholdSpec) -> tuple[float, ...]:
    return thresholds.high, thresholds.tentative, thresholds.escalate


def _floor(value: float, digits: int) -> float:
    scale = 10.0 ** digits
    return math.floor(round(value * scale, 6)) / scale  # round(): 0.29 * 100 is 28.999...


def _consistent(shown: float, alpha: float, thresholds: ThresholdSpec | None) -> bool:
    """The printed value sits on the same side of every cut-off as alpha itself. Without the
    cut-offs, any hundredth may be one: the printed value must not be rounded up."""
    if thresholds is None:
        return shown <= alpha
    return all((shown >= cut) == (alpha >= cut) for cut in cutoffs(thresholds))


def alpha_text(alpha: float | None, thresholds: ThresholdSpec | None = None) -> str:
    """Alpha with two decimals; near a cut-off, with as many more (rounded toward alpha's own
    side) as it takes not to cross it: 0.79978 prints "0.799", never "0.80", under a 0.80 cut."""
    if alpha is None or math.isnan(alpha):
        return NOT_AVAILABLE
    two = float(f"{alpha:.2f}")
    if _consistent(two, alpha, thresholds):
        return f"{alpha:.2f}"
    for digits in (3, 4, 5, 6):
        shown = _floor(alpha, digits)
        if _consistent(shown, alpha, thresholds):
            return f"{shown:.{digits}f}"
    return f"{_floor(alpha, 6):.6f}"
