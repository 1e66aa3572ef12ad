"""Evaluation runs in storage, on SQLite and PostgreSQL: an item's outcome is stored once (a
second writer's is ignored and not counted twice in the run's cost), an unfinished run is found
by its fingerprint, and a baseline call's checkpoint keeps its first writer's record."""

from __future__ import annotations

from engine.domain import StepRecord, Usage, utcnow
from engine.evaluation.report import ItemOutcome
from engine.vocabulary import StepStatus
from storage import evaluations
from storage.db import Database
from storage.evaluations import FINISHED, EvalCheckpointStore, EvaluationRun


def _run(run_id: str = "r1") -> EvaluationRun:
    now = utcnow()
    return EvaluationRun(id=run_id, fingerprint="f" * 64, dataset="arithmetic",
                         source="builtin:arithmetic seed=0 n=2", spec={"modes": ["single"],
                         "items": [{"id": "1"}, {"id": "2"}]}, status="running",
                         rehearsal=False, estimate_low_usd=0.01, estimate_high_usd=0.02,
                         created_at=now, updated_at=now)


def _outcome(answer: str, cost: float) -> ItemOutcome:
    return ItemOutcome(item_id="1", answer=answer, correct=answer == "42", tie=False,
                       cost_usd=cost, calls=1, tokens=300, seconds=0.5)


async def test_an_outcome_is_stored_once_and_the_run_found_until_it_finishes(db: Database
                                                                             ) -> None:
    async with db.transaction() as session:
        await evaluations.create(session, run=_run())
        first = await evaluations.put_outcome(session, run_id="r1", mode="single",
                                              outcome=_outcome("42", 0.25), debate_id=None,
                                              now=utcnow())
        again = await evaluations.put_outcome(session, run_id="r1", mode="single",
                                              outcome=_outcome("41", 0.5), debate_id=None,
                                              now=utcnow())
    async with db.transaction() as session:
        found = await evaluations.unfinished(session, "f" * 64)
        stored = await evaluations.outcomes(session, "r1")
    assert (first, again) == (True, False)
    assert found is not None and found.id == "r1" and found.done == {"single": 1}
    assert found.answered_usd == 0.25 and stored["single"][0].answer == "42"
    assert found.cost_usd == 0.0   # what the budget's ledger booked for it: nothing here
    async with db.transaction() as session:
        done = await evaluations.finish(session, "r1", status=FINISHED, report={"x": 1},
                                        now=utcnow())
        assert await evaluations.unfinished(session, "f" * 64) is None
        assert [r.id for r in await evaluations.recent(session, limit=5)] == ["r1"]
    assert done.status == FINISHED and done.report == {"x": 1} and done.finished_at


async def test_a_baseline_checkpoint_keeps_its_first_record(db: Database) -> None:
    store = EvalCheckpointStore(db, clock=utcnow)

    def record(cost: float) -> StepRecord:
        return StepRecord(key="eval/single", role="answerer", phase="answer", model="m",
                          status=StepStatus.OK, output={"answer": "42", "reasoning": "r"},
                          prompt_hash="h", usage=Usage(prompt_tokens=10, completion_tokens=5),
                          cost_usd=cost)

    assert await store.get("ev-r1-single-0", "eval/single") is None
    assert (await store.put("ev-r1-single-0", record(0.1))).cost_usd == 0.1
    assert (await store.put("ev-r1-single-0", record(0.9))).cost_usd == 0.1
    got = await store.get("ev-r1-single-0", "eval/single")
    assert got is not None and got.output == {"answer": "42", "reasoning": "r"}
