"""An evaluation's pages and API name its dataset, never the server path it was read from:
a run read from a file keeps the file's name, and a run stored with an absolute path (as older
versions kept it) is shown by the name alone."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from bot.service.evaluations import EvalSpec, Evaluations
from engine.evaluation.dataset import Dataset, load_jsonl
from storage.db import Database
from tests.support.http_fixtures import call, served
from tests.support.service_fixtures import rehearsal_settings

SECRET_PLACE = "/srv/acme-legal/confidential"


async def _run(evals: Evaluations, dataset: Dataset) -> str:
    spec = evals.check(EvalSpec(dataset=dataset, modes=("single",), samples=1, concurrency=2))
    run = await evals.start(spec, await evals.preflight(spec))
    return (await evals.execute(run, spec)).run.id


async def test_pages_and_the_api_show_the_datasets_name_not_a_server_path(
        db: Database, tmp_path: Path) -> None:
    folder = tmp_path / "private-folder"
    folder.mkdir()
    (folder / "questions.jsonl").write_text('{"question": "2+2?", "answer": 4}\n')
    read = load_jsonl(folder / "questions.jsonl")
    stored_old = Dataset(name="legacy", items=read.items,
                         source=f"{SECRET_PLACE}/legacy.jsonl")
    async with served(db, rehearsal_settings(), workers=0) as (base, rt, _), \
            aiohttp.ClientSession() as session:
        evals = Evaluations(rt.service)
        run_ids = [await _run(evals, read), await _run(evals, stored_old)]
        _, listed = await call(session, "GET", f"{base}/api/evaluations")
        seen = [await call(session, "GET", f"{base}/api/evaluations/{i}") for i in run_ids]
        pages = []
        for run_id in run_ids:
            async with session.get(f"{base}/evaluations/{run_id}") as resp:
                pages.append(await resp.text())
        async with session.get(f"{base}/evaluations") as resp:
            pages.append(await resp.text())
    shown = {r["id"]: r["source"] for r in listed["evaluations"]}
    assert shown == {run_ids[0]: "questions.jsonl", run_ids[1]: "legacy.jsonl"}
    assert [report["source"] for _, report in seen] == ["questions.jsonl", "legacy.jsonl"]
    everything = " ".join(pages) + str(listed) + str(seen)
    assert str(folder) not in everything and SECRET_PLACE not in everything
    assert "questions.jsonl" in pages[0] and "legacy.jsonl" in pages[1]
