"""The verdict's headline, one rule stated once and shown by every surface (Slack, console, CLI,
API, digests, briefs): the headline follows the judges' votes, the rubric means stand beside it,
and a sentence a person can read aloud says when the two point different ways, and why.

    a panel (consensus and its presets)
      contested   no side has a weighted majority ("the judges split 2–1–1 …, no side has a
                  majority"), or the statistics found the scoring contentious (alpha below the
                  escalate cut-off) or irreconcilable. "split" only ever describes a divided
                  vote: a unanimous vote with low alpha reads "The judges agree on the winner
                  but not on the scores: all 3 voted for the proposition; alpha -0.10 (below
                  0.50) …", and no winner is declared until a person decides.
      a tie       a weighted majority voted tie, or the votes for and against weigh the same
      a winner    a weighted majority names it: "For the proposition wins: 3 of 4 judges
                  (3–1 for–against); rubric means 6.8 for vs 6.3 against."
      a winner (or a tie) whose means lean the other way says so and why: "…, though their
      rubric means lean against: 5.8 for vs 6.5 against, because 2 of the 3 judges' votes do
      not follow their own rubric scores" (or: the other side's voters scored by wider margins).
    one judge (structured)
      the judge's call is the headline; when its rubric means lean the other way, it says so

The rubric means are the judges' own scores (the 1–10 scale, weighted by the judges' vote
weights), never calibrated ones: calibration serves the statistics (alpha, the divergence).
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
_NUMBERS = {1: "one", 2: "both"}


@dataclass(frozen=True, slots=True)
class Headline:
    """The side that won (None: contested, or no verdict) and the sentence that says so."""

    winner: Side | None
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PanelScores:
    """What a panel's headline reads besides the votes: `means` each side's weighted rubric
    mean (1–10, as the judges scored), `own` each judge's own rubric mean per side (the why of
    a vote the means do not bear out), `alpha` and the statistics' findings."""

    means: Mapping[Side, float] | None
    own: Mapping[str, Mapping[Side, float]] | None = None
    weights: Mapping[str, float] | None = None
    alpha: float | None = None
    contentious: bool = False      # alpha below the escalate cut-off
    irreconcilable: bool = False   # the calls split and the widest spread is past its limit
    thresholds: ThresholdSpec | None = None


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


def weighted_means(own: Mapping[str, Mapping[Side, float]],
                   weights: Mapping[str, float] | None = None) -> dict[Side, float] | None:
    """Each side's rubric mean over the judges, weighted by their vote weights (None: no judge
    scored, or the weights are all zero)."""
    weight = {j: (weights or {}).get(j, 1.0) for j in own}
    total = sum(weight.values())
    if not own or total <= 0:
        return None
    return {side: sum(weight[j] * own[j][side] for j in own) / total
            for side in (Side.PRO, Side.CON)}


def _voted(side: Side) -> str:
    """"voted for the proposition", "called it a tie"."""
    if side is Side.TIE:
        return "called it a tie"
    return f"voted {_NAMES[side]} the proposition"


def _all(count: int) -> str:
    return _NUMBERS.get(count, f"all {count}")


def _alpha_clause(scores: PanelScores) -> str:
    """"alpha -0.10 (below 0.50)": the figure on its own side of the cut-off."""
    shown = alpha_text(scores.alpha, scores.thresholds)
    if scores.thresholds is None or scores.alpha is None or math.isnan(scores.alpha):
        return f"alpha {shown}"
    cut = scores.thresholds.escalate
    return f"alpha {shown} (below {cut:.2f})" if scores.alpha < cut else f"alpha {shown}"


def _figures(means: Mapping[Side, float]) -> str:
    return f"{means[Side.PRO]:.1f} for vs {means[Side.CON]:.1f} against"


def _why(cast: Mapping[str, Side], side: Side, scores: PanelScores) -> str:
    """Why a vote for `side` (for a tie: the side the means do not lean to) and rubric means
    leaning the other way are both true: votes that do not follow the judges' own scores, or
    the other side's voters scoring by wider margins."""
    own = {j: m for j, m in (scores.own or {}).items() if j in cast}
    if not own:
        return ("the vote counts each judge's named winner, the means average every score "
                "they gave")
    astray = [j for j, voted in cast.items() if j in own and lean(own[j]) is not voted]
    if len(astray) == len(cast):
        return "no judge's vote follows its own rubric scores"
    if astray:
        return (f"{len(astray)} of the {len(cast)} judges' votes do not follow their own "
                f"rubric scores")
    other = Side.CON if side is Side.PRO else Side.PRO

    def margin(judges: list[str], ahead: Side) -> float:
        behind = Side.CON if ahead is Side.PRO else Side.PRO
        return sum(own[j][ahead] - own[j][behind] for j in judges) / len(judges)

    won = [j for j in own if cast[j] is side]
    lost = [j for j in own if cast[j] is other]
    if not won or not lost:
        return "the judges' vote weights differ from their scores' weight"
    return (f"the {len(lost)} voting {_NAMES[other]} scored that side ahead by "
            f"{margin(lost, other):.1f} points on average, the {len(won)} voting "
            f"{_NAMES[side]} theirs by only {margin(won, side):.1f}")


def _means_part(cast: Mapping[str, Side], side: Side | None, scores: PanelScores,
                means: Mapping[Side, float]) -> str:
    """"; rubric means 6.8 for vs 6.3 against", or, when they lean away from the side the
    votes favour, ", though their rubric means lean against: 5.8 for vs 6.5 against, because
    …"."""
    leaning = lean(means)
    if side is None or leaning in (side, Side.TIE):
        return f"; {means_text(means)}"
    short = Side.CON if leaning is Side.PRO else Side.PRO   # the side with the narrower margins
    return (f", though their rubric means lean {_NAMES[leaning]}: {_figures(means)}, because "
            f"{_why(cast, short if side is Side.TIE else side, scores)}")


def _contested(cast: Mapping[str, Side], scores: PanelScores,
               means: Mapping[Side, float]) -> Headline:
    sides = set(cast.values())
    alpha = f"; {_alpha_clause(scores)}" if scores.alpha is not None else ""
    if len(sides) == 1:   # one side named by all: what is contested is the scoring
        side = next(iter(sides))
        agree = "it is a tie" if side is Side.TIE else "on the winner"
        return Headline(None, f"The judges agree {agree} but not on the scores: "
                              f"{_all(len(cast))} {_voted(side)}{alpha}, so a "
                              f"person decides{_means_part(cast, side, scores, means)}.")
    if scores.irreconcilable:
        why = " and score some points far apart (irreconcilable)"
    elif scores.contentious:
        why = " and their scores disagree"
    else:
        why = " and no side has a majority"
    return Headline(None, f"Contested: the judges split {vote_split(cast)}{why}{alpha}; the "
                          f"rubric means {_leaning(means)}: {_figures(means)}.")


def panel_headline(votes: Mapping[str, Side | None], scores: PanelScores) -> Headline:
    """The headline of a panel: `votes` each judge's named winner (None: it gave none);
    `scores` the rubric means beside them and what the statistics found
    (engine/reading/verdicts.py)."""
    cast = {judge: side for judge, side in votes.items() if side is not None}
    means = scores.means
    if not cast or means is None:
        return Headline(None, "No verdict: the judges' scores are missing.")
    weight = {j: (scores.weights or {}).get(j, 1.0) for j in cast}
    total = sum(weight.values())
    by_side = {s: sum(w for j, w in weight.items() if cast[j] is s) for s in Side}
    majority = next((s for s in (Side.PRO, Side.CON, Side.TIE) if by_side[s] > total / 2),
                    None)
    level = by_side[Side.PRO] == by_side[Side.CON] and majority is None
    if scores.contentious or scores.irreconcilable or (majority is None and not level):
        return _contested(cast, scores, means)
    if majority is None or majority is Side.TIE:
        said = (f"{_all(len(cast))} judges called it a tie" if len(set(cast.values())) == 1
                else f"the judges split {vote_split(cast)}")
        return Headline(Side.TIE, f"Tie: {said}{_means_part(cast, Side.TIE, scores, means)}.")
    count = sum(1 for side in cast.values() if side is majority)
    return Headline(majority, f"{_NAMES[majority].capitalize()} the proposition wins: {count} "
                              f"of {len(cast)} judges ({vote_split(cast)})"
                              f"{_means_part(cast, majority, scores, means)}.")


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
