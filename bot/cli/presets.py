"""`dialectic presets`: each preset's settings, read from the settings alone (no planning, no
provider client, no statistics)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_OK
from engine.core.presets import all_presets, judges_for
from engine.settings import EngineSettings, JudgeSpec


def presets(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    for name, preset in sorted(all_presets(settings).items()):
        panel = judges_for(settings, preset, None)
        judges = ", ".join(_judge(settings, j) for j in panel)
        families = {settings.family_of(j.model) for j in panel if j.model} - {"unknown"}
        if len(families) > 1:
            judges += f" (mixed families: {', '.join(sorted(families))}; self-vote exclusion)"
        t = preset.thresholds
        ctx.console.print(f"{name} — {preset.description}", markup=False, style="bold")
        downgrade = "yes" if preset.allow_downgrade else "no"
        ctx.console.print(f"    mode {preset.mode}, rounds {preset.rounds}, judges {judges}; "
                          f"thresholds high>={t.high} tentative>={t.tentative} "
                          f"escalate<{t.escalate}; downgrade {downgrade}", markup=False)
    return EXIT_OK


def _judge(settings: EngineSettings, judge: JudgeSpec) -> str:
    """"technical", or "gpt (gpt-4o-mini, openai)" for a judge that names its model."""
    if not judge.model:
        return judge.name
    return f"{judge.name} ({judge.model}, {settings.family_of(judge.model)})"
