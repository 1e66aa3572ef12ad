"""The `evaluate` tool: is debating worth it on a small labelled set? The same evaluation
`dialectic eval` runs (bot/service/evaluations.py: checked, estimated against today's budget,
stored, resumable, its debates kept out of oversight), with the cost asked first: a call without
`confirm_cost` only answers what it would cost; the same call with it runs the evaluation,
reporting progress (items done of all), and answers its report."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from bot.mcp.tools import Ctx, client_actor, one_line
from bot.service.evaluations import EvalSpec, Evaluations, Preflight
from bot.service.runtime import Runtime
from engine.errors import InvalidRequest
from engine.evaluation.builtin import BUILTINS
from engine.evaluation.dataset import Dataset, parse_lines
from engine.evaluation.limits import DEFAULT_MODES, EVAL_MODES, MAX_SAMPLES
from storage.evaluations import FINISHED

#: what one call may evaluate: "a small labelled set" (`dialectic eval` takes up to 10,000)
MAX_ITEMS = 50


class LabelledItem(BaseModel):
    question: str = Field(min_length=1)
    answer: str | int | float | bool = Field(description="the right answer")
    choices: list[str] | None = Field(default=None, description="the answer is one of these")
    id: str | None = None


class EvaluationOut(BaseModel):
    cost_question: str = Field(description="what it costs against today's budget, asked before "
                                           "anything runs")
    started: bool = Field(description="false: nothing ran; call again with confirm_cost")
    id: str | None = Field(description="the evaluation run (`dialectic eval show ID`)")
    report: dict[str, Any] | None = Field(description="accuracy and cost per mode, as "
                                                      "`dialectic eval --json` gives it")


def dataset_of(items: list[LabelledItem] | None, builtin: str | None, n: int) -> Dataset:
    if (items is None) == (builtin is None):
        raise InvalidRequest("give the labelled items or a built-in set (arithmetic, "
                             "decisions), one of the two")
    if builtin is not None:
        return BUILTINS[builtin](n, 0)
    assert items is not None
    if len(items) > MAX_ITEMS:
        raise InvalidRequest(f"{len(items)} items; an assistant may evaluate at most "
                             f"{MAX_ITEMS} at once (`dialectic eval` takes more)")
    lines = [json.dumps(item.model_dump(exclude_none=True)) for item in items]
    return parse_lines(lines, origin="items", name="assistant", source="mcp")


class EvaluateTool:
    def __init__(self, rt: Runtime) -> None:
        self.evals = Evaluations(rt.service)

    async def evaluate(
            self, ctx: Ctx,
            items: Annotated[list[LabelledItem] | None, Field(
                description=f"the questions with their answers (at most {MAX_ITEMS})")] = None,
            builtin: Annotated[Literal["arithmetic", "decisions"] | None, Field(
                description="a built-in set instead of items")] = None,
            n: Annotated[int, Field(ge=1, le=MAX_ITEMS, description="items of the built-in "
                                                                     "set")] = 10,
            modes: Annotated[list[str] | None, Field(
                description=f"what to compare, of {', '.join(EVAL_MODES)} (default "
                            f"{', '.join(DEFAULT_MODES)})")] = None,
            samples: Annotated[int, Field(ge=1, le=MAX_SAMPLES, description="answers a vote "
                                                                             "takes")] = 5,
            confirm_cost: Annotated[bool, Field(description="run it: first call without, to "
                                                           "hear the cost")] = False,
    ) -> EvaluationOut:
        """Is a debate mode worth it on your questions? Accuracy and cost per mode (a single
        answer, a majority vote, debate modes) on a small labelled set. Call without
        confirm_cost to hear what it costs; call again with it to run it (progress: items done).
        An interrupted run resumes where it stopped when called again."""
        with one_line():
            spec = self.evals.check(EvalSpec(
                dataset=dataset_of(items, builtin, n), modes=tuple(modes or DEFAULT_MODES),
                samples=samples, requested_by=client_actor(ctx)))
            pre = await self.evals.preflight(spec)
            if pre.resumes is not None and pre.todo == 0 and pre.resumes.status == FINISHED:
                done = await self.evals.show(pre.resumes.id)
                return EvaluationOut(cost_question="it has run already: its report",
                                     started=False, id=done.run.id, report=done.as_json())
            if (refusal := self.evals.refusal(pre)) is not None:
                raise InvalidRequest(refusal)
            if not confirm_cost:
                return EvaluationOut(cost_question=pre.question(), started=False, id=None,
                                     report=None)
            return await self._run(ctx, spec, pre)

    async def _run(self, ctx: Ctx, spec: EvalSpec, pre: Preflight) -> EvaluationOut:
        run = await self.evals.start(spec, pre)
        total = len(spec.modes) * len(spec.dataset.items)
        counts: dict[str, int] = {}
        sent: set[asyncio.Task[None]] = set()

        def progress(mode: str, done: int, _: int, spent: float) -> None:
            counts[mode] = done
            task = asyncio.ensure_future(ctx.report_progress(
                sum(counts.values()), total, f"{mode}: {done} done; ${spent:.4f} spent"))
            sent.add(task)
            task.add_done_callback(sent.discard)

        finished = await self.evals.execute(run, spec, progress=progress)
        await asyncio.gather(*sent)
        return EvaluationOut(cost_question=pre.question(), started=True, id=finished.run.id,
                             report=finished.as_json())


__all__ = ["MAX_ITEMS", "EvaluateTool", "EvaluationOut", "LabelledItem", "dataset_of"]
