"""Built-in presets, and how a request picks its preset, mode and judges.

A preset in `dialectic.toml` (`[presets.NAME]`) overrides a built-in of the same name or adds one.
"""

from __future__ import annotations

from engine.errors import UnknownPreset
from engine.settings import DEFAULT_JUDGES, EngineSettings, JudgeSpec, PresetSpec, ThresholdSpec
from engine.vocabulary import Mode

_J = {j.name: j for j in DEFAULT_JUDGES}

BUILTIN_PRESETS: dict[str, PresetSpec] = {
    "default": PresetSpec(name="default", description="A general consensus debate.",
                          mode=Mode.CONSENSUS),
    "market": PresetSpec(
        name="market", mode=Mode.CONSENSUS, rounds=1,
        description="Bull against bear on a market signal; technical, business and risk judges.",
        pro_persona="a bullish market analyst arguing the signal is a buy",
        con_persona="a bearish market analyst arguing the signal is a sell or a trap",
        judges=(_J["technical"], _J["business"], _J["risk"]), temperature=0.5,
    ),
    "decision": PresetSpec(
        name="decision", mode=Mode.CONSENSUS,
        description="A technical decision review before a meeting; alpha below 0.50 flags "
                    "'needs human discussion' with the three core divergence points.",
        pro_persona="a senior engineer arguing for adopting the proposal",
        con_persona="a senior engineer arguing against adopting the proposal",
        judges=(_J["technical"], _J["business"], _J["general"]), discussion=True,
    ),
    "compliance": PresetSpec(
        name="compliance", mode=Mode.CONSENSUS, allow_downgrade=False,
        description="Checks a proposal against a policy text; risk, technical and general "
                    "judges; everything audited, never downgraded.",
        pro_persona="a compliance analyst arguing the proposal complies with the policy",
        con_persona="a compliance analyst arguing the proposal breaches the policy",
        judges=(_J["risk"], _J["technical"], _J["general"]),
    ),
    "appeal": PresetSpec(
        name="appeal", mode=Mode.CONSENSUS, allow_downgrade=False,
        description="A content appeal: the platform-policy agent against the user's advocate; "
                    "auto-resolves at alpha >= 0.80, a human reviews below 0.50.",
        pro_persona="the user's advocate, interpreting the content in the user's favour and "
                    "arguing the moderation decision should be overturned",
        con_persona="the platform-policy agent, defending the original moderation decision "
                    "against the policy text",
        judges=(
            JudgeSpec(name="policy", expertise="faithful reading of the platform policy"),
            JudgeSpec(name="context", expertise="context, intent and harm of the content"),
            JudgeSpec(name="fairness", expertise="fairness and consistency to the user"),
        ),
        thresholds=ThresholdSpec(high=0.80, tentative=0.50, escalate=0.50),
    ),
    "brief": PresetSpec(
        name="brief", mode=Mode.CONSENSUS,
        description="A one-page pre-meeting decision brief: the arguments map, the agreements, "
                    "the points to discuss.",
        judges=(_J["technical"], _J["business"], _J["general"]), brief=True,
    ),
}


def all_presets(settings: EngineSettings) -> dict[str, PresetSpec]:
    merged = dict(BUILTIN_PRESETS)
    for name, preset in settings.presets.items():
        merged[name] = preset.model_copy(update={"name": name})
    return merged


def resolve_preset(settings: EngineSettings, name: str | None) -> PresetSpec:
    presets = all_presets(settings)
    key = name or "default"
    if key not in presets:
        raise UnknownPreset(f"unknown preset {key!r}; choose one of: {', '.join(sorted(presets))}")
    return presets[key]


def judges_for(settings: EngineSettings, preset: PresetSpec,
               count: int | None) -> tuple[JudgeSpec, ...]:
    """The preset's judges (or the configured panel), cut or extended to `count`."""
    base = preset.judges or settings.judges
    if count is None:
        return tuple(base)
    judges = list(base[:count])
    while len(judges) < count:
        n = len(judges) + 1
        judges.append(JudgeSpec(name=f"general-{n}",
                                expertise="overall reasoning quality, a second opinion"))
    return tuple(judges)
