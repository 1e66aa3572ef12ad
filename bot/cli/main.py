"""The `dialectic` command line: run and estimate debates, serve, work, migrate, audit, replay."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Callable, Sequence

from pydantic import ValidationError
from rich.console import Console

from bot.scheduling import calendar as schedules
from engine.debate import estimate_for, prepare, run_debate
from engine.domain import MODES, DebateRequest
from engine.errors import ConfigurationError, DialecticError, InvalidRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.settings import Settings
from storage.errors import NotFound

EXIT_OK, EXIT_NOT_COMPLETED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def _debate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", help="the proposition or question to debate")
    p.add_argument("--mode", choices=MODES, default=None,
                   help="debate pattern (default: the preset's, usually consensus)")
    p.add_argument("--preset", default=None, help="named preset (see `dialectic presets`)")
    p.add_argument("--rounds", type=int, default=None, help="rebuttal/reflection rounds (0-5)")
    p.add_argument("--judges", type=int, default=None, help="panel size (1-8)")
    p.add_argument("--context", default="", help="background text the debaters should see")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialectic", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one debate in this terminal (nothing stored); exit 0 "
                         "if it completed, 3 if completed with steps missing, 1 if it failed")
    _debate_args(run)
    run.add_argument("--json", action="store_true", help="print one JSON object, no progress")
    est = sub.add_parser("estimate", help="planned calls and estimated cost, without running")
    _debate_args(est)
    est.add_argument("--json", action="store_true")
    sub.add_parser("presets", help="list presets and their settings")
    srv = sub.add_parser("serve", help="HTTP server (API, console, Slack) plus workers")
    srv.add_argument("--host", default=None)
    srv.add_argument("--port", type=int, default=None)
    wrk = sub.add_parser("worker", help="workers only: claim and run queued debates")
    wrk.add_argument("--concurrency", type=int, default=None)
    db = sub.add_parser("db", help="database maintenance")
    db.add_argument("action", choices=["upgrade"], help="upgrade: apply migrations")
    rep = sub.add_parser("replay", help="a new debate from a stored one (source unchanged)")
    rep.add_argument("debate_id")
    rep.add_argument("--rounds", type=int, default=None, help="continue with N more rounds")
    rep.add_argument("--synthesizer", default=None, help="re-synthesise with this model")
    rep.add_argument("--wait", action="store_true", help="run it here and print the summary")
    aud = sub.add_parser("audit", help="the tamper-evident audit log")
    aud.add_argument("action", choices=["verify"])
    aud.add_argument("debate_id", nargs="?", default=None)
    for extra in _EXTRA_COMMANDS:
        extra[0](sub)
    return parser


def _request(args: argparse.Namespace) -> DebateRequest:
    fields: dict[str, object] = {"topic": args.topic, "requested_by": "cli",
                                 "context": args.context}
    for name in ("mode", "preset", "rounds", "judges"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return DebateRequest.model_validate(fields)


async def _run(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    from bot.cli.progress import print_summary, run_with_progress
    from bot.service.providers import describe, make_llm

    prepared = prepare(settings, _request(args))
    llm = make_llm(settings)
    sink = MemoryEventSink()
    queue = sink.queue()
    debate_id = uuid.uuid4().hex[:12]
    work = run_debate(prepared, debate_id=debate_id, settings=settings, llm=llm,
                      store=MemoryCheckpointStore(), sink=sink)
    try:
        if args.json:
            result = await work
        else:
            console.print(describe(settings), style="dim")
            result = await run_with_progress(console, queue, work, len(prepared.plan.calls),
                                             settings.is_rehearsal)
    finally:
        await llm.aclose()
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print_summary(console, result)
    return exit_code(result.status, complete=result.complete)


def exit_code(status: str, *, complete: bool) -> int:
    """0: completed with nothing missing; 3: completed but degraded or filtered steps are
    missing; 1: failed or timed out."""
    if status != "completed":
        return EXIT_NOT_COMPLETED
    return EXIT_OK if complete else EXIT_INCOMPLETE


def _estimate(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    from bot.cli.progress import print_estimate

    estimate = estimate_for(settings, prepare(settings, _request(args)))
    if args.json:
        print(estimate.model_dump_json(indent=2))
    else:
        print_estimate(console, estimate)
    return EXIT_OK


def _presets(settings: Settings, console: Console) -> int:
    from engine.presets import all_presets, judges_for

    for name, preset in sorted(all_presets(settings).items()):
        judges = ", ".join(j.name for j in judges_for(settings, preset, None))
        t = preset.thresholds
        console.print(f"{name} — {preset.description}", markup=False, style="bold")
        downgrade = "yes" if preset.allow_downgrade else "no"
        console.print(f"    mode {preset.mode}, rounds {preset.rounds}, judges {judges}; "
                      f"thresholds high>={t.high} tentative>={t.tentative} "
                      f"escalate<{t.escalate}; downgrade {downgrade}", markup=False)
    return EXIT_OK


async def _service_command(settings: Settings, args: argparse.Namespace,
                           console: Console) -> int:
    from bot.http import server
    from bot.service.logs import setup_logging

    setup_logging(settings.log_level, settings.secrets())
    if args.command == "serve":
        await server.serve(settings, host=args.host, port=args.port)
        return EXIT_OK
    if args.command == "worker":
        await server.work(settings, concurrency=args.concurrency)
        return EXIT_OK
    if args.command == "replay":
        return await _replay(settings, args, console)
    from storage.db import Database

    db = Database(settings.database_url)
    try:
        if args.command == "db":
            await db.upgrade()
            console.print("database is at the latest migration")
            return EXIT_OK
        return await _verify(db, args.debate_id, console)
    finally:
        await db.dispose()


async def _replay(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    from bot.cli.progress import print_summary
    from bot.service.runtime import build_runtime
    from bot.service.worker import Worker

    rt = await build_runtime(settings)
    try:
        sub = await rt.service.replay(args.debate_id, more_rounds=args.rounds,
                                      synthesizer=args.synthesizer, actor="cli")
        console.print(f"replay {sub.record.id} of {args.debate_id} queued "
                      f"(estimate ${sub.estimate.usd:.4f})", markup=False)
        if not args.wait:
            console.print("a running `dialectic serve` or `dialectic worker` will run it")
            return EXIT_OK
        stop = asyncio.Event()
        worker = Worker(rt.service, concurrency=1)
        task = asyncio.create_task(worker.run(stop))
        while (record := await rt.service.get(sub.record.id)).result is None:
            await asyncio.sleep(0.2)
        stop.set()
        await task
        print_summary(console, record.result)
        return exit_code(record.result.status, complete=record.result.complete)
    finally:
        await rt.close()


async def _verify(db: object, debate_id: str | None, console: Console) -> int:
    from storage import audit

    async with db.transaction() as session:  # type: ignore[attr-defined]
        report = await audit.verify(session, debate_id)
    if report.ok:
        console.print(f"audit chain intact: {report.chains_checked} chains, "
                      f"{report.events_checked} events")
        return EXIT_OK
    chain, seq, reason = report.first_broken  # type: ignore[misc]
    console.print(f"audit chain BROKEN: chain {chain}, event {seq}: {reason}", markup=False)
    return EXIT_NOT_COMPLETED


# Further commands register here as (add_parser(sub), handler(settings, args, console) -> int).
_EXTRA_COMMANDS: list[tuple[Callable[[argparse._SubParsersAction], None],  # type: ignore[type-arg]
                            Callable[[Settings, argparse.Namespace, Console], int]]] = []
_EXTRA_COMMANDS.append((schedules.add_cli, schedules.handle))  # type: ignore[arg-type]


def _dispatch(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    if args.command == "run":
        return asyncio.run(_run(settings, args, console))
    if args.command == "estimate":
        return _estimate(settings, args, console)
    if args.command == "presets":
        return _presets(settings, console)
    if args.command in ("serve", "worker", "db", "audit", "replay"):
        return asyncio.run(_service_command(settings, args, console))
    for _, handler in _EXTRA_COMMANDS:
        code = handler(settings, args, console)
        if code is not None:
            return code
    raise InvalidRequest(f"unknown command {args.command}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(stderr=bool(getattr(args, "json", False)))
    try:
        settings = Settings()
        return _dispatch(settings, args, console)
    except (InvalidRequest, ConfigurationError, NotFound) as exc:
        console.print(f"error: {exc}", markup=False, style="red")
        return EXIT_USAGE
    except DialecticError as exc:  # budget, storage, provider: said plainly, no traceback
        console.print(f"error: {exc}", markup=False, style="red")
        return EXIT_NOT_COMPLETED
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        console.print(f"[red]error:[/red] invalid input or settings — {problems}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
