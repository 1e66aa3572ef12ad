"""A request's options: the typed, bounded knobs a caller may turn beyond mode, rounds and judges.

Known keys only, every size capped, strict types (`"3"` is not a number, `"yes"` not a flag): the
options reach every prompt and the bill, so nothing unbounded gets in. A model named here must
have a known price (configured, or known to the genai-prices library) or be one the operator
already runs (`check_models`): a request may not pick a model billed at a guessed price.
Bookkeeping (what a replay reuses) is not an option: it lives on the debate's record, where no
request body reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints

from engine.errors import InvalidRequest
from engine.money.prices import PriceQuote
from engine.vocabulary import (
    MAX_JUDGES,
    MAX_MODEL_NAME_CHARS,
    MAX_OPTION_TEXT_CHARS,
    MAX_POLICY_CHARS,
    MAX_ROLE_MODELS,
)

ModelName = Annotated[str, StringConstraints(strict=True, min_length=1,
                                             max_length=MAX_MODEL_NAME_CHARS)]
#: A step key, a role or a role family (`panel/synthesis`, `judge/risk`, `synthesizer`).
StepName = Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z0-9][a-z0-9/_.-]{0,63}$")]
Perspective = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]
OptionText = Annotated[str, StringConstraints(strict=True, max_length=MAX_OPTION_TEXT_CHARS)]
PanelModel = Annotated[str, StringConstraints(strict=True, max_length=MAX_MODEL_NAME_CHARS)]


class DebateOptions(BaseModel):
    """What `options` may hold; anything else is refused with the field's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: Annotated[str, StringConstraints(strict=True, max_length=MAX_POLICY_CHARS)] = Field(
        default="", description="policy text judged against (else the preset's)")
    role_models: dict[StepName, ModelName] = Field(
        default_factory=dict, max_length=MAX_ROLE_MODELS,
        description="a configured model per step key, role or role family")
    panelists: StrictInt | None = Field(default=None, ge=2, le=MAX_JUDGES,
                                        description="panel: how many panelists")
    perspectives: tuple[Perspective, ...] = Field(
        default=(), max_length=MAX_JUDGES, description="panel: the panelists' perspectives")
    contexts: tuple[OptionText, ...] = Field(
        default=(), max_length=MAX_JUDGES, description="panel: context given to each panelist")
    models: tuple[PanelModel, ...] = Field(
        default=(), max_length=MAX_JUDGES,
        description="panel: a configured model per panelist ('' for the default)")
    stop_when_all_approve: StrictBool | None = Field(
        default=None, description="panel: stop reflecting once every panelist approves")
    ground_truth: OptionText = Field(default="",
                                     description="panel: a reference answer to grade against")
    convergence_judge: StrictBool = Field(
        default=False, description="critique: a judge may stop the exchange once it converges")

    def policy_or(self, preset_policy: str) -> str:
        """The policy text judged against: the request's (a workspace's appeal policy), or the
        preset's when the request gives none."""
        return self.policy if self.policy.strip() else preset_policy

    def model_for_step(self, key: str, role: str) -> str | None:
        """The model asked for this step: by step key, role, or role family, in that order."""
        for name in (key, role, role.split("/", 1)[0]):
            if name in self.role_models:
                return self.role_models[name]
        return None

    def named_models(self) -> Iterator[str]:
        """Every model these options name."""
        yield from self.role_models.values()
        yield from (m for m in self.models if m)

    @classmethod
    def stored(cls, raw: Any) -> DebateOptions:
        """Options as a debate stored before they were typed or bounded: the known keys whose
        values validate, the rest left out (reading history never fails on an old request)."""
        if not isinstance(raw, Mapping):
            return cls()
        kept: dict[str, Any] = {}
        for name in cls.model_fields:
            if name in raw:
                try:
                    cls.model_validate({name: raw[name]})
                except ValueError:
                    value = raw[name]
                    if name == "policy" and isinstance(value, str):
                        kept[name] = value  # longer than today's cap: it ran with it, keep it
                    continue
                kept[name] = raw[name]
        valid = cls.model_validate({k: v for k, v in kept.items() if k != "policy"})
        return valid.model_copy(update={"policy": kept.get("policy", "")})


def check_models(options: DebateOptions, quote: Callable[[str], PriceQuote],
                 operator_models: Iterable[str],
                 problem: Callable[[str], str | None] = lambda model: None) -> None:
    """InvalidRequest when a model cannot be asked (`problem` says why: a provider prefix
    nobody configured, no endpoint for a bare name), or unless every model the options name has
    a known price (configured or from the library) or is one the operator's settings already run
    (priced as they are)."""
    chosen = set(operator_models)
    for model in sorted(set(options.named_models())):
        said = problem(model)
        if said is not None:
            raise InvalidRequest(said)
    unknown = sorted({m for m in options.named_models()
                      if m not in chosen and not quote(m).known})
    if unknown:
        known = ", ".join(sorted(chosen - {"rehearsal"}))
        raise InvalidRequest(
            f"options name model(s) {', '.join(map(repr, unknown))} whose price is unknown "
            "(neither configured under [prices] in dialectic.toml nor known to genai-prices); "
            f"name a known model, or one of the configured: {known}")
