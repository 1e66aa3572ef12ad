"""`dialectic presets`: each preset's settings, read from the settings alone (no planning, no
provider client, no statistics)."""

from __future__ import annotations

import argparse

from bot.cli.host import CliContext
from bot.cli.parser import EXIT_OK
from engine.core.presets import all_presets, judges_for


def presets(ctx: CliContext, args: argparse.Namespace) -> int:
    settings = ctx.settings.engine
    for name, preset in sorted(all_presets(settings).items()):
        judges = ", ".join(j.name for j in judges_for(settings, preset, None))
        t = preset.thresholds
        ctx.console.print(f"{name} — {preset.description}", markup=False, style="bold")
        downgrade = "yes" if preset.allow_downgrade else "no"
        ctx.console.print(f"    mode {preset.mode}, rounds {preset.rounds}, judges {judges}; "
                          f"thresholds high>={t.high} tentative>={t.tentative} "
                          f"escalate<{t.escalate}; downgrade {downgrade}", markup=False)
    return EXIT_OK
