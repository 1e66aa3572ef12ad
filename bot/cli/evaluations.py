"""`dialectic eval`: accuracy and cost per mode on questions with known answers, against a single
call and a majority vote; `eval show ID` reprints a stored run's report, `eval list` the runs.

Before anything is spent it says the estimate ("this evaluation will cost about $X–$Y;
continue?") and asks; `--yes` answers for scripts, and without a terminal to ask on it refuses
in one line. Progress per mode (items done of all, spend so far) goes to stderr while it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from bot.cli.eval_juries import print_juries
from bot.cli.eval_report import check_plot, print_report, write_plot
from bot.cli.host import CliContext, require_database
from bot.cli.outcomes import print_line
from bot.cli.parser import EXIT_INCOMPLETE, EXIT_NOT_COMPLETED, EXIT_OK
from bot.service.evaluations import (
    REHEARSAL_NOTE,
    EvalSpec,
    Evaluations,
    Finished,
    run_json,
    spec_of,
)
from engine.errors import InvalidRequest
from engine.evaluation.builtin import arithmetic, decisions
from engine.evaluation.dataset import Dataset, DatasetError, load_jsonl
from engine.evaluation.juries import parse_panel
from engine.evaluation.limits import BUILTIN_SETS, DEFAULT_ARITHMETIC_ITEMS, DEFAULT_MODES
from engine.money.cost import usd
from storage.evaluations import FINISHED, EvaluationRun


def dataset_of(args: argparse.Namespace) -> Dataset:
    """The dataset named: a JSON lines file or a built-in set (one, not both)."""
    if args.builtin and args.dataset:
        raise InvalidRequest("name a dataset file or --builtin, not both")
    if args.builtin == "arithmetic":
        return arithmetic(args.n or DEFAULT_ARITHMETIC_ITEMS, args.seed)
    if args.builtin == "decisions":
        found = decisions()
        return found if args.n is None else replace(found, items=found.items[:args.n])
    if not args.dataset:
        raise InvalidRequest("name a dataset (DATASET.jsonl) or a built-in set: --builtin "
                             + " or --builtin ".join(BUILTIN_SETS))
    try:
        return load_jsonl(Path(args.dataset), limit=args.n)
    except DatasetError as exc:
        raise InvalidRequest(str(exc)) from None


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


async def evaluate(ctx: CliContext, args: argparse.Namespace) -> int:
    if args.dataset == "show":
        return await show(ctx, args)
    if args.dataset == "list":
        return await list_runs(ctx, args)
    if args.run_id is not None:
        raise InvalidRequest(f"unexpected {args.run_id!r}: `dialectic eval DATASET`, "
                             "`eval show ID` or `eval list`")
    if args.plot:   # refused now, not after the evaluation was paid for
        check_plot(Path(args.plot), force=args.force)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    err = Console(stderr=True, highlight=False)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        evals = Evaluations(hosted.rt.service)
        if args.resume:
            found = await evals.show(args.resume)
            spec = replace(spec_of(found.run), review=args.review)
        else:
            panels = tuple(parse_panel(p) for p in args.panels or ())
            spec = EvalSpec(dataset=dataset_of(args),
                            modes=_names(args.modes) or (() if panels else DEFAULT_MODES),
                            samples=args.samples,
                            models=_names(args.models), concurrency=args.concurrency,
                            seed=args.seed, requested_by="cli", review=args.review,
                            panels=panels)
        spec = evals.check(spec)
        pre = await evals.preflight(spec, resume_id=args.resume)
        if pre.resumes is not None:   # a resumed run keeps the --review it started with
            spec = replace(spec, review=spec.review or bool(pre.resumes.spec.get("review")))
        if pre.resumes is not None and pre.todo == 0 and pre.resumes.status == FINISHED:
            ctx.console.print(f"evaluation {pre.resumes.id} has finished; its report:",
                              markup=False)
            finished = await evals.show(pre.resumes.id)
            return _report(ctx, finished, args)
        refusal = evals.refusal(pre)
        if refusal is not None:
            raise InvalidRequest(refusal)
        if not _agreed(err, pre.question(), yes=args.yes):
            return EXIT_NOT_COMPLETED
        run = await evals.start(spec, pre)
        err.print(f"evaluation {run.id}: {len(spec.dataset.items)} items × "
                  f"{', '.join(spec.modes)}", markup=False)
        if run.rehearsal:
            err.print(REHEARSAL_NOTE, style="bold yellow", markup=False)
        finished = await _with_progress(err, evals, run, spec)
    return _report(ctx, finished, args)


def _agreed(err: Console, question: str, *, yes: bool) -> bool:
    if yes:
        err.print(question.removesuffix("; continue?") + " (--yes)", markup=False)
        return True
    if not sys.stdin.isatty():
        raise InvalidRequest(question.removesuffix("; continue?") + "; nothing was run: "
                             "there is no terminal to ask on, pass --yes to go ahead")
    answer = err.input(question + " [y/N] ", markup=False)
    if answer.strip().casefold() in ("y", "yes"):
        return True
    err.print("nothing was run", markup=False)
    return False


async def _with_progress(err: Console, evals: Evaluations, run: EvaluationRun,
                         spec: EvalSpec) -> Finished:
    with Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("total spent {task.fields[spent]}"), console=err,
                  transient=False) as bar:
        tasks: dict[str, TaskID] = {
            m: bar.add_task(m, total=len(spec.dataset.items), spent=usd(0.0))
            for m in spec.modes}

        def progress(mode: str, done: int, total: int, spent: float) -> None:
            bar.update(tasks[mode], completed=done, total=total, spent=usd(spent))
            for other in tasks.values():
                bar.update(other, spent=usd(spent))

        return await evals.execute(run, spec, progress=progress)


def _report(ctx: CliContext, finished: Finished, args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps(finished.as_json(), indent=2))
    else:
        run = finished.run
        ctx.console.print(f"evaluation {run.id} ({run.status}, {run.created_at:%Y-%m-%d %H:%M} "
                          f"UTC, spent {usd(run.cost_usd)})", markup=False)
        unanswered = run.cost_usd - run.answered_usd
        # the ledger books each reply to the 9th decimal, an outcome its cost to the 6th
        if unanswered > 1e-6 * (1 + sum(run.done.values())):
            ctx.console.print(f"{usd(unanswered)} of it went to items without an outcome "
                              "(debates that failed, items a stop cut short)", markup=False)
        if run.rehearsal:   # wrapped at words, as the report's own lines are
            print_line(ctx.console, REHEARSAL_NOTE, style="bold yellow")
        print_report(finished.report, ctx.console)
        print_juries(ctx.console, finished.juries, finished.report.modes,
                     rehearsal=run.rehearsal)
        if run.rehearsal:   # said again under the figures it concerns
            print_line(ctx.console, REHEARSAL_NOTE, style="bold yellow")
    if args.plot:
        try:
            write_plot(finished.report, Path(args.plot), force=args.force)
        except RuntimeError as exc:
            raise InvalidRequest(str(exc)) from None
        except OSError as exc:
            raise InvalidRequest(f"cannot write the plot to {args.plot}: "
                                 f"{exc.strerror or exc}") from None
        Console(stderr=True).print(f"plot written to {args.plot}", markup=False)
    return EXIT_OK if finished.report.complete else EXIT_INCOMPLETE


async def show(ctx: CliContext, args: argparse.Namespace) -> int:
    if not args.run_id:
        raise InvalidRequest("say which evaluation: `dialectic eval show ID` (see `eval list`)")
    if args.plot:
        check_plot(Path(args.plot), force=args.force)
    require_database(ctx.settings.storage)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        finished = await Evaluations(hosted.rt.service).show(args.run_id)
    return _report(ctx, finished, args)


async def list_runs(ctx: CliContext, args: argparse.Namespace) -> int:
    require_database(ctx.settings.storage)
    ctx.host.setup_logging(ctx.settings, quiet=True)
    async with ctx.host.hosted(ctx.settings, workers=0) as hosted:
        runs = await Evaluations(hosted.rt.service).recent(limit=args.limit)
    if args.json:
        print(json.dumps([{"id": r.id, "dataset": r.dataset, "status": r.status,
                           "rehearsal": r.rehearsal, "modes": r.spec.get("modes", []),
                           "items": len(r.spec.get("items", [])), "done": r.done,
                           "cost_usd": r.cost_usd, "created_at": r.created_at.isoformat()}
                          for r in runs], indent=2))
        return EXIT_OK
    if not runs:
        ctx.console.print("no evaluations stored", markup=False)
    for r in runs:
        items = len(r.spec.get("items", []))
        done = ", ".join(f"{m} {r.done.get(m, 0)}/{items}" for m in r.spec.get("modes", []))
        label = " [rehearsal]" if r.rehearsal else ""
        ctx.console.print(f"{r.id}  {r.status:<8}  {r.created_at:%Y-%m-%d %H:%M}  "
                          f"{usd(r.cost_usd):>8}  {r.dataset}: {done}{label}",
                          markup=False, soft_wrap=True)
    return EXIT_OK


__all__ = ["evaluate", "run_json"]
