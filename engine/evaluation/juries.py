"""`dialectic eval --panels`: consensus debates judged by panels of named models, compared on the
same yes/no items. Each panel is an evaluation mode of its own (`jury1`, `jury2`, ...), so its
accuracy and the paired comparisons come from the report as any mode's; this module adds what a
panel is (its models, its families) and, from its debates' results, how much its judges agreed
and how much they preferred their own family's text.

    "gpt-4o-mini,claude-3-5-haiku-latest,gemini-2.0-flash"    three judges, one each
    "gpt-4o-mini x3"                                          three judges of one model

Self-preference, per panel: on debates argued by one family (both sides), the rubric points by
which that family's judges scored the debate above the panel's judges of other families, as
each gave its scores (self-vote exclusion keeps those scores out of the verdict, not out of this
measure); "not measured" when no judge shared the debaters' family or none differed from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from engine.core.presets import judges_for, resolve_preset
from engine.domain import DebateRequest, DebateResult
from engine.errors import InvalidRequest
from engine.evaluation.dataset import Item
from engine.evaluation.run import debate_request, question_text
from engine.options import DebateOptions
from engine.oversight.panel_records import side_means
from engine.protocols.judging import judge_key
from engine.provider.families import UNKNOWN
from engine.settings import EngineSettings
from engine.vocabulary import MAX_JUDGES, Mode

JURY = "jury"
_REPEAT = re.compile(r"^(?P<model>.+?)\s+[x×]\s*(?P<n>\d+)$")


def jury_mode(index: int) -> str:
    """The mode name of the index-th panel (0-based): jury1, jury2, ..."""
    return f"{JURY}{index + 1}"


def is_jury(mode: str) -> bool:
    return mode.startswith(JURY) and mode[len(JURY):].isdigit()


def parse_panel(text: str) -> tuple[str, ...]:
    """"a,b,c" or "a x3" (or a mix, "a x2, b") -> the judges' models; InvalidRequest naming the
    mistake otherwise."""
    models: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        found = _REPEAT.match(part)
        if found is not None:
            models += [found.group("model").strip()] * int(found.group("n"))
        else:
            models.append(part)
    if not 2 <= len(models) <= MAX_JUDGES:
        raise InvalidRequest(f"a panel has 2 to {MAX_JUDGES} judges, not {len(models)}: "
                             f"{text!r} (write \"a,b,c\" or \"a x3\")")
    return tuple(models)


def eval_request(settings: EngineSettings, item: Item, mode: str,
                 models: Sequence[str]) -> DebateRequest:
    """The debate an item is put to in `mode`: a panel's (`models` its judges') or a mode's
    (`models` as `--models` gives them)."""
    return jury_request(settings, item, models) if is_jury(mode) else debate_request(
        item, mode, models)


def jury_request(settings: EngineSettings, item: Item, models: Sequence[str]) -> DebateRequest:
    """A consensus debate on the item whose judges ask the panel's models in order."""
    judges = judges_for(settings, resolve_preset(settings, None), len(models))
    options = DebateOptions(role_models={judge_key(j): m for j, m in
                                         zip(judges, models, strict=True)})
    return DebateRequest(topic=question_text(item), mode=Mode.CONSENSUS, judges=len(models),
                         options=options, requested_by="eval", no_cache=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class JuryFigures:
    """What a panel's debates showed beyond accuracy."""

    mode: str
    models: tuple[str, ...]
    families: tuple[str, ...]
    debates: int                       # debates with a panel result
    alpha_mean: float | None           # mean Krippendorff's alpha over debates that had one
    alpha_n: int
    unanimous: int                     # debates whose voting judges all named one winner
    excluded: int                      # debates where self-vote exclusion left a judge out
    unexcludable: int                  # debates a side was scored by its own family only
    self_preference: float | None      # rubric points (see the module docstring)
    self_preference_n: int             # debates it was measured on


def jury_figures(mode: str, models: Sequence[str], families: Sequence[str],
                 results: Sequence[DebateResult]) -> JuryFigures:
    alphas: list[float] = []
    offsets: list[float] = []
    unanimous = excluded = unexcludable = debates = 0
    for result in results:
        c = result.consensus
        if c is None:
            continue
        debates += 1
        if c.alpha is not None:
            alphas.append(c.alpha)
        voted = {c.winners.get(j) for j in c.judges if not c.excluded.get(j)} - {None}
        unanimous += int(len(voted) == 1)
        excluded += int(bool(c.excluded))
        unexcludable += int(any(n.startswith("no self-vote") for n in c.exclusion_notes))
        offset = _own_family_offset(result)
        if offset is not None:
            offsets.append(offset)
    return JuryFigures(
        mode=mode, models=tuple(models), families=tuple(families), debates=debates,
        alpha_mean=fmean(alphas) if alphas else None, alpha_n=len(alphas), unanimous=unanimous,
        excluded=excluded, unexcludable=unexcludable,
        self_preference=fmean(offsets) if offsets else None, self_preference_n=len(offsets))


def _own_family_offset(result: DebateResult) -> float | None:
    """Own-family judges' mean rubric score minus the other families' on a debate both of whose
    sides one (known) family argued; None when there is no such pair to compare."""
    c = result.consensus
    if c is None:
        return None
    argued = {f for side in ("pro", "con") for f in c.side_families.get(side, [])}
    both = set(c.side_families.get("pro", [])) & set(c.side_families.get("con", []))
    if len(argued) != 1 or not both or UNKNOWN in both:
        return None
    family = next(iter(both))

    def mean_of(judge: str) -> float | None:
        means = side_means(c.items, c.ratings.get(judge, [])) if len(
            c.ratings.get(judge, [])) == len(c.items) else {}
        return fmean(means.values()) if len(means) == 2 else None

    own = [m for j in c.judges if c.families.get(j) == family and (m := mean_of(j)) is not None]
    others = [m for j in c.judges if c.families.get(j) not in (family, UNKNOWN, None)
              and (m := mean_of(j)) is not None]
    if not own or not others:
        return None
    return fmean(own) - fmean(others)


__all__ = ["JURY", "JuryFigures", "eval_request", "is_jury", "jury_figures", "jury_mode",
           "jury_request", "parse_panel"]
