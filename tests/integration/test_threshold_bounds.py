"""Alpha cut-offs are bounded and finite wherever they come from: stored ones that are not (an
older version's `--high inf`, a manual edit) are refused when read back, the preset routes by its
own with a logged warning and its debates finish; the API's JSON never holds Infinity or NaN;
a settings file's bad cut-offs are one configuration line at start."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import text

from bot.http.routes import dumps
from bot.service.figures import cutoffs_text, in_force_text
from bot.settings import Settings
from engine.core.presets import BUILTIN_PRESETS
from engine.domain import DebateRequest
from engine.reading.verdicts import band_for
from storage.db import Database
from storage.records import DebateStatus, Origin
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.http_fixtures import served
from tests.support.service_fixtures import rehearsal_settings, running_worker, runtime, wait_done

__all__ = ["clean_env", "cli"]  # fixtures

TOKEN = "bounds-token-bounds-token-bounds-token"
INFINITE = '{"high": Infinity, "tentative": 0.67, "escalate": 0.5, "irreconcilable_spread": 3.0}'
OUT_OF_ORDER = '{"high": 0.5, "tentative": 0.9, "escalate": 0.95, "irreconcilable_spread": 3.0}'
BEYOND = '{"high": 1.5, "tentative": 0.67, "escalate": -0.5, "irreconcilable_spread": 3.0}'


async def _store(db: Database, cutoffs: str, preset: str = "decision") -> None:
    """Cut-offs written straight into the table, as an older version or a hand edit left them."""
    async with db.transaction() as session:
        await session.execute(text(
            "INSERT INTO applied_thresholds (preset, thresholds, applied_by, applied_at, note) "
            "VALUES (:preset, :thresholds, 'old-version', CURRENT_TIMESTAMP, 'by hand')"),
            {"preset": preset, "thresholds": cutoffs})


def _strict(body: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(body, parse_constant=refuse)


async def _debate_finishes_by_its_own_cutoffs(db: Database, caplog: pytest.LogCaptureFixture
                                              ) -> None:
    own = BUILTIN_PRESETS["decision"].thresholds
    async with FakeOpenAI() as fake:
        rt = runtime(db, Settings(**{**gateway_settings(fake.base_url).model_dump(),
                                     "spot_check_fraction": 0.0}))
        in_force = await rt.service.oversight.in_force_for("decision")
        with caplog.at_level(logging.WARNING, logger="storage.thresholds"):
            sub = await rt.service.submit(DebateRequest(topic="Adopt PostgreSQL?",
                                                        preset="decision"),
                                          origin=Origin(surface="api"))
            async with running_worker(rt.service):
                record = await wait_done(rt.service, sub.record.id)
        await rt.service.aclose()
    assert in_force.source == "preset" and in_force.thresholds == own
    shown = in_force_text(in_force)   # what `thresholds show` and the Judges page print
    assert shown.startswith(f"{cutoffs_text(own)} — the preset's own: the cut-offs old-version "
                            "applied on ") and "were set aside (" in shown
    assert record.status is not DebateStatus.JUDGING and record.result is not None
    assert record.status in (DebateStatus.COMPLETED, DebateStatus.AWAITING_REVIEW)
    consensus = record.result.consensus
    assert consensus is not None and consensus.thresholds == own
    assert consensus.band == band_for(consensus.alpha, own)
    warned = [r.getMessage() for r in caplog.records if r.name == "storage.thresholds"]
    assert warned and "preset decision by old-version are not valid" in warned[0]
    assert "thresholds apply --preset decision" in warned[0]


async def test_infinite_stored_cutoffs_fall_back_and_the_debate_finishes(
        sqlite_db: Database, caplog: pytest.LogCaptureFixture) -> None:
    await _store(sqlite_db, INFINITE)
    await _debate_finishes_by_its_own_cutoffs(sqlite_db, caplog)


@pytest.mark.parametrize("cutoffs", [OUT_OF_ORDER, BEYOND], ids=["out-of-order", "beyond-0-1"])
async def test_invalid_stored_cutoffs_fall_back_and_the_debate_finishes(
        db: Database, caplog: pytest.LogCaptureFixture, cutoffs: str) -> None:
    await _store(db, cutoffs)
    await _debate_finishes_by_its_own_cutoffs(db, caplog)


async def test_the_routing_api_is_strict_json_over_bad_stored_cutoffs(
        sqlite_db: Database) -> None:
    await _store(sqlite_db, INFINITE)
    await _store(sqlite_db, BEYOND, preset="market")
    settings = rehearsal_settings(api_token=TOKEN)
    async with served(sqlite_db, settings, workers=0) as (base, _, _), \
            aiohttp.ClientSession() as s:
        async with s.get(f"{base.rstrip('/')}/api/routing",
                         headers={"Authorization": f"Bearer {TOKEN}"}) as reply:
            status, body = reply.status, await reply.text()
    assert status == 200, body
    found = _strict(body)
    for preset in ("decision", "market"):
        in_force = found["in_force"][preset]
        assert in_force["source"] == "preset"
        assert in_force["thresholds"] == in_force["preset_thresholds"]


def test_the_api_encoder_writes_non_finite_numbers_as_null() -> None:
    value = {"alpha": math.nan, "interval": (-math.inf, 0.5), "nested": [{"x": math.inf}],
             "n": 3, "ok": 0.25}
    assert _strict(dumps(value)) == {"alpha": None, "interval": [None, 0.5],
                                     "nested": [{"x": None}], "n": 3, "ok": 0.25}


@pytest.mark.parametrize(("table", "said"), [
    ("high = inf", "presets.hot.thresholds.high: an alpha cut-off is a number from 0 to 1"),
    ("escalate = nan", "presets.hot.thresholds.escalate: an alpha cut-off is a number from 0"),
    ("high = 1.2", "presets.hot.thresholds.high: an alpha cut-off is a number from 0 to 1"),
    ("escalate = -0.1", "presets.hot.thresholds.escalate: an alpha cut-off is a number"),
    ("high = 0.5\ntentative = 0.7", "presets.hot.thresholds: thresholds must satisfy 0 <= "
                                    "escalate <= tentative <= high <= 1, got escalate 0.5, "
                                    "tentative 0.7, high 0.5"),
    ("irreconcilable_spread = inf", "presets.hot.thresholds.irreconcilable_spread: Input "
                                    "should be a finite number"),
])
def test_a_settings_file_with_bad_cutoffs_is_one_line_at_start(
        cli: Cli, tmp_path: Path, table: str, said: str) -> None:
    config = tmp_path / "dialectic.toml"
    config.write_text(f'[presets.hot]\nmode = "consensus"\n[presets.hot.thresholds]\n{table}\n')
    done = cli("presets", env={"DIALECTIC_CONFIG": str(config)})
    assert done.returncode == 2
    [line] = (done.stdout + done.stderr).strip().splitlines()
    assert line.startswith(f"error: {config}: {said}"), line


@pytest.mark.parametrize("flags", [
    ["--high", "0.6", "--tentative", "0.7"],
    ["--escalate", "0.9"],
])
def test_applying_cutoffs_out_of_order_is_one_line_and_stores_nothing(
        cli: Cli, tmp_path: Path, flags: list[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/apply.db"
    done = cli("db", "upgrade", env={"DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    done = cli("thresholds", "apply", "--preset", "decision", *flags, "--as", "ops",
               env={"DATABASE_URL": url})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stdout.strip().splitlines()   # stderr: the rehearsal notice, logged
    assert line.startswith("error: ") and "escalate <= tentative <= high" in line, line
    shown = cli("thresholds", "show", "--json", env={"DATABASE_URL": url})
    assert _strict(shown.stdout)["in_force"]["decision"]["source"] == "preset"
