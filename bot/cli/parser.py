"""The `dialectic` command line's grammar. Each command names its handler with
`set_defaults(func=...)`; handlers are imported only when their command runs, so `--help` and
the light commands start fast."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.cli.bounds import Real, Whole
from engine.evaluation.limits import (
    BUILTIN_SETS,
    DEFAULT_MODES,
    EVAL_MODES,
    MAX_CONCURRENCY,
    MAX_EVAL_ITEMS,
    MAX_SAMPLES,
)
from engine.vocabulary import (
    MAX_JUDGES,
    MAX_LINK_DAYS,
    MAX_LISTED,
    MAX_REPLAY_ROUNDS,
    MAX_ROUNDS,
    MAX_WINDOW_DAYS,
    MAX_WORKERS,
    Mode,
    choices,
)
from storage.lifecycle import DebateStatus

if TYPE_CHECKING:
    from bot.cli.host import CliContext

DESCRIPTION = """Adversarial multi-agent LLM debates, judged by a panel, from the terminal.

Without OPENAI_API_KEY or OPENAI_BASE_URL every debate runs on the offline REHEARSAL model,
whose arguments are placeholders (said wherever a result is shown).
"""
EPILOG = """environment:
  OPENAI_API_KEY, OPENAI_BASE_URL   the LLM provider (any OpenAI-compatible endpoint)
  DATABASE_URL                      postgresql+asyncpg://user@host/db or a SQLite file;
                                    default: dialectic.db in DIALECTIC_DATA_DIR
                                    (~/.local/share/dialectic)
  SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN   Slack (serve, worker)
  DIALECTIC_API_TOKEN               protects the API and console (needed off loopback)
  DIALECTIC_CONFIG                  the settings file (default ./dialectic.toml, else
                                    $XDG_CONFIG_HOME/dialectic/dialectic.toml); a .env in
                                    the current directory is read too (-v says which)
  DIALECTIC_<SETTING>               any other setting, e.g. DIALECTIC_DAILY_BUDGET_USD=5

exit status: 0 done; 1 the debate failed or timed out (or a command failed);
  2 bad input or settings; 3 the debate completed with steps missing."""
EXIT_OK, EXIT_NOT_COMPLETED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
SHARE = Real(0, 1, open_low=True, open_high=True)   # a target share of results upheld
CUTOFF = Real(0, 1)                                  # an alpha cut-off


@dataclass(frozen=True, slots=True)
class Lazy:
    """A handler `module:function`, imported when its command runs."""

    module: str
    function: str

    def __call__(self, ctx: CliContext, args: argparse.Namespace) -> int | Awaitable[int]:
        handler = getattr(importlib.import_module(self.module), self.function)
        result: int | Awaitable[int] = handler(ctx, args)
        return result


def _debate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", help="the proposition or question to debate")
    p.add_argument("--mode", choices=choices(Mode), default=None,
                   help="debate pattern (default: the preset's, usually consensus)")
    p.add_argument("--preset", default=None, help="named preset (see `dialectic presets`)")
    p.add_argument("--rounds", type=Whole(0, MAX_ROUNDS), default=None,
                   help=f"the mode's rounds: rebuttal, cross-examination, reflection or "
                        f"critique (0-{MAX_ROUNDS})")
    p.add_argument("--judges", type=Whole(1, MAX_JUDGES), default=None,
                   help=f"panel size (1-{MAX_JUDGES})")
    p.add_argument("--context", default="", help="background text the debaters should see")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (progress and messages go to stderr)")


def _debates(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run one debate in this terminal, stored and within the "
                         "day's budget like any other; exit 0 if it completed, 3 if completed "
                         "with steps missing (or stopped by its budget), 1 if it failed or was "
                         "refused")
    _debate_args(run)
    run.set_defaults(func=Lazy("bot.cli.debate", "run"))
    est = sub.add_parser("estimate", help="planned calls and estimated cost, without running, "
                         "and whether the server would admit it now (exit 1 if not)")
    _debate_args(est)
    est.set_defaults(func=Lazy("bot.cli.plans", "estimate"))
    presets = sub.add_parser("presets", help="list presets and their settings")
    presets.set_defaults(func=Lazy("bot.cli.presets", "presets"))
    doc = sub.add_parser("doctor", help="check the provider before the first debate: one tiny "
                         "call per configured model (reachable, key, structured outputs, "
                         "parameters dropped, price, latency); exit 1 if any fails")
    doc.add_argument("--forget", action="store_true",
                     help="first forget what the endpoint's 400s taught (parameters left out, "
                          "output mode, context window), kept in the database, and learn anew")
    doc.set_defaults(func=Lazy("bot.cli.doctor", "doctor"))


def _service(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    srv = sub.add_parser("serve", help="HTTP server (API, console, Slack) plus workers and "
                         "the scheduler")
    srv.add_argument("--host", default=None, help="address to listen on (DIALECTIC_HOST)")
    srv.add_argument("--port", type=Whole(0, 65535), default=None,
                     help="port, 0-65535 (DIALECTIC_PORT)")
    srv.set_defaults(func=Lazy("bot.cli.service", "serve"))
    wrk = sub.add_parser("worker", help="workers only: claim and run queued debates")
    wrk.add_argument("--concurrency", type=Whole(1, MAX_WORKERS), default=None,
                     help=f"debates run at once, 1-{MAX_WORKERS} "
                          "(DIALECTIC_WORKER_CONCURRENCY)")
    wrk.set_defaults(func=Lazy("bot.cli.service", "work"))
    mcp = sub.add_parser("mcp", help="serve AI assistants over MCP on stdin/stdout (the `mcp` "
                         "extra): tools to estimate, start, follow and read debates, with "
                         "workers running them here (docs/mcp.md)")
    mcp.add_argument("--workers", type=Whole(0, MAX_WORKERS), default=None,
                     help=f"debates run at once in this process, 0-{MAX_WORKERS} (default "
                          "DIALECTIC_WORKER_CONCURRENCY; 0: a `dialectic serve` or `worker` "
                          "on the same database runs them)")
    # stdout carries the protocol: the command's own messages go to stderr, as with --json
    mcp.set_defaults(func=Lazy("bot.cli.service", "mcp"), json=True)
    db = sub.add_parser("db", help="database maintenance")
    db.add_argument("action", choices=["upgrade"], help="upgrade: apply migrations")
    db.set_defaults(func=Lazy("bot.cli.service", "db"))
    rep = sub.add_parser("replay", help="a new debate from a stored one (source unchanged)")
    rep.add_argument("debate_id", help="the stored debate to replay")
    rep.add_argument("--rounds", type=Whole(1, MAX_REPLAY_ROUNDS), default=None,
                     help=f"continue with N more rounds (1-{MAX_REPLAY_ROUNDS}): rebuttal "
                          "(simple), cross-examination (structured, consensus), reflection "
                          "(panel) or critique rounds; redteam has none")
    rep.add_argument("--synthesizer", default=None,
                     help="run the final steps (verdict, judges, synthesis, final answer) "
                          "again with this model")
    rep.add_argument("--no-cache", action="store_true",
                     help="replay anew even when the same replay of this debate finished "
                          "within the cache window (DIALECTIC_CACHE_TTL_SECONDS)")
    rep.add_argument("--wait", action="store_true", help="run it here and print the summary")
    rep.set_defaults(func=Lazy("bot.cli.service", "replay"))
    lst = sub.add_parser("list", help="recent debates, newest first: status (a debate that "
                         "finished with parts missing says incomplete), mode, cost, topic")
    lst.add_argument("--status", choices=choices(DebateStatus), default=None,
                     help="only debates in this state")
    lst.add_argument("--limit", type=Whole(1, MAX_LISTED), default=20,
                     help=f"how many, 1-{MAX_LISTED} (default 20)")
    lst.set_defaults(func=Lazy("bot.cli.service", "list_debates"))
    shw = sub.add_parser("show", help="a stored debate's result as `run` prints it (with its "
                         "preset's discussion flag or brief), or --json: its record")
    shw.add_argument("debate_id")
    shw.add_argument("--json", action="store_true", help="the record as the API returns it")
    shw.set_defaults(func=Lazy("bot.cli.show", "show"))
    aud = sub.add_parser("audit", help="the tamper-evident audit log")
    aud.add_argument("action", choices=["verify"], help="verify: check the hash chains")
    aud.add_argument("debate_id", nargs="?", default=None,
                     help="one debate's chain (default: every chain)")
    aud.set_defaults(func=Lazy("bot.cli.service", "audit_command"))


def _schedules(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("schedule", help="scheduled digests: list them, or fire one now")
    actions = _actions(parser, "schedule_action")
    listing = actions.add_parser("list", help="schedules, their next firing and pause state")
    listing.set_defaults(func=Lazy("bot.cli.schedule", "list_schedules"))
    run = actions.add_parser("run", help="fire a schedule now and wait for its digest")
    run.add_argument("schedule_id", help="the schedule's id in dialectic.toml")
    run.add_argument("--no-worker", action="store_true",
                     help="do not run debates here: leave them to `dialectic worker` processes")
    run.set_defaults(func=Lazy("bot.cli.schedule", "run_schedule"))


def _workspaces(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("workspaces", help="Slack workspaces' data: purge a workspace's")
    actions = _actions(parser, "workspaces_action")
    purge = actions.add_parser("purge", help="erase everything stored for a workspace (its "
                               "debates, reviews, feedback, settings; the spend stays counted)")
    purge.add_argument("team_id", help="the workspace's team id, e.g. T0123ABC")
    purge.add_argument("--reason", default="", help="why (required, kept in the audit log)")
    purge.add_argument("--force", action="store_true",
                       help="purge even though the workspace is still installed")
    purge.add_argument("--dry-run", action="store_true",
                       help="only count what would be erased")
    purge.set_defaults(func=Lazy("bot.cli.workspaces", "purge"))


def _reviews(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("reviews", help="the review queue: list it, or decide a review")
    actions = _actions(parser, "reviews_action")
    listing = actions.add_parser("list", help="reviews waiting for a decision, oldest first")
    listing.set_defaults(func=Lazy("bot.cli.reviews", "list_reviews"))
    dec = actions.add_parser("decide", help="approve, escalate (with --reason) or re-run, as "
                             "a configured reviewer")
    dec.add_argument("review_id", help="the review (see `dialectic reviews list`)")
    dec.add_argument("decision", choices=["approve", "escalate", "rerun"])
    dec.add_argument("--as", dest="reviewer", required=True, metavar="USER",
                     help="the reviewer deciding: a Slack user id listed in DIALECTIC_REVIEWERS "
                          "(or a member of a listed user group)")
    dec.add_argument("--reason", default="", help="why (needed to escalate)")
    dec.add_argument("--about", choices=["verdict", "process"], default=None,
                     help="what the decision is about: the verdict (a label for the judge and "
                          "routing audits) or the run itself, e.g. a degraded step (no label); "
                          "default: the run when re-running or escalating an incomplete "
                          "result, else the verdict")
    dec.add_argument("--winner", choices=["pro", "con"], default=None,
                     help="the side that should have won, if you name one (an appeal: pro "
                          "overturns the moderation decision, con keeps it)")
    dec.set_defaults(func=Lazy("bot.cli.reviews", "decide"))
    people = sub.add_parser("reviewers", help="reviewer sign-in for the web console")
    acts = _actions(people, "reviewers_action")
    link = acts.add_parser("link", help="a signed link (and token) that signs a reviewer in to "
                           "the console; needs DIALECTIC_API_TOKEN")
    link.add_argument("user", help="the reviewer's user id, e.g. U0123ABC")
    link.add_argument("--days", type=Real(0, MAX_LINK_DAYS, open_low=True), default=7.0,
                      help=f"how long it works, at most {MAX_LINK_DAYS} days (default 7)")
    link.add_argument("--team", default=None, metavar="T0123ABC",
                      help="the Slack workspace the link opens (its team id); required when "
                           "the service is installed in many workspaces, where the user must "
                           "be a reviewer of that workspace")
    link.add_argument("--enterprise", default=None, metavar="E0123ABC",
                      help="the workspace's Enterprise Grid organisation, for an org-wide "
                           "install")
    link.set_defaults(func=Lazy("bot.cli.reviews", "link"))


def _window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--days", type=Whole(1, MAX_WINDOW_DAYS), default=None,
                   help=f"the window read back, 1-{MAX_WINDOW_DAYS} days (default "
                        "DIALECTIC_AUDIT_WINDOW_DAYS, 90)")


def _target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", type=SHARE, default=0.95,
                   help="share of auto-approved results reviewers must uphold, between 0 and "
                        "1 (default 0.95)")
    p.add_argument("--tentative-target", type=SHARE, default=None,
                   help="share of everything published (tentative too) that must be upheld "
                        "(default 0.90, or --target when lower)")
    p.add_argument("--criterion", choices=["lower_bound", "point"], default="lower_bound",
                   help="lower_bound: the interval's lower bound must reach the target "
                        "(default); point: the estimate itself")


def _oversight(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    judges = sub.add_parser("judges", help="the judge audit: bias, drift and agreement with "
                            "reviewers, per judge and model")
    acts = _actions(judges, "judges_action")
    report = acts.add_parser("report", help="position bias, verbosity bias, leniency, drift and "
                             "agreement with the reviewers, with sample sizes and intervals")
    _window(report)
    report.add_argument("--preset", default=None, help="one preset's debates (default: all)")
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.set_defaults(func=Lazy("bot.cli.oversight", "judges_report"))
    cutoffs = sub.add_parser("thresholds", help="alpha cut-offs: in force, measured against the "
                             "reviewers, suggested, applied")
    acts = _actions(cutoffs, "thresholds_action")
    show = acts.add_parser("show", help="the cut-offs in force per preset and how routing fared "
                           "against the reviewers")
    _window(show)
    show.add_argument("--json", action="store_true", help="print it as JSON")
    show.set_defaults(func=Lazy("bot.cli.oversight", "show"))
    sug = acts.add_parser("suggest", help="cut-offs that meet a target with the fewest results "
                          "sent to review, with the data behind them (nothing is applied)")
    sug.add_argument("--preset", required=True, help="the preset to suggest for")
    _target(sug)
    _window(sug)
    sug.add_argument("--json", action="store_true", help="print it as JSON")
    sug.set_defaults(func=Lazy("bot.cli.oversight", "suggest"))
    app = acts.add_parser("apply", help="put cut-offs in force for a preset (audited); routing "
                          "uses them over the preset's own")
    app.add_argument("--preset", required=True, help="the preset they apply to")
    for name in ("high", "tentative", "escalate"):
        app.add_argument(f"--{name}", type=CUTOFF, default=None,
                         help=f"the {name} alpha cut-off, 0-1 (others keep the values in "
                              "force; escalate <= tentative <= high)")
    app.add_argument("--suggested", action="store_true",
                     help="apply what `thresholds suggest` proposes now (with --target ...)")
    app.add_argument("--reset", action="store_true", help="back to the preset's own cut-offs")
    _target(app)
    _window(app)
    app.add_argument("--as", dest="by", required=True, metavar="NAME",
                     help="who applies them (recorded in the audit log)")
    app.add_argument("--reason", default="", help="why (required; recorded in the audit log)")
    app.set_defaults(func=Lazy("bot.cli.oversight", "apply"))


def _evaluations(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser("eval", help="is debating worth it on your questions? accuracy and cost "
                        "per mode against a single call and a majority vote; `eval show ID` "
                        "reprints a stored run, `eval list` lists them",
                        description="dialectic eval DATASET.jsonl | --builtin NAME  "
                        "(or: eval show ID, eval list)")
    ev.add_argument("dataset", nargs="?", default=None,
                    help="a JSON lines file of {\"question\", \"answer\"} (optional id, "
                         "choices, tolerance); or `show`, `list`")
    ev.add_argument("run_id", nargs="?", default=None, help="with show: the evaluation's id")
    ev.add_argument("--builtin", choices=BUILTIN_SETS, default=None,
                    help="a built-in set: arithmetic (Du et al.'s a+b*c+d-e*f) or decisions "
                         "(yes/no, for consensus)")
    ev.add_argument("--n", type=Whole(1, MAX_EVAL_ITEMS), default=None,
                    help=f"items: how many to generate, or the first N of the file "
                         f"(1-{MAX_EVAL_ITEMS}; arithmetic default 100)")
    ev.add_argument("--seed", type=Whole(0, 2**31 - 1), default=0,
                    help="seed of the generated set and of a vote's tie-breaks (default 0)")
    ev.add_argument("--modes", default=None, help="comma-separated, from "
                    f"{', '.join(EVAL_MODES)} (default {','.join(DEFAULT_MODES)})")
    ev.add_argument("--samples", type=Whole(1, MAX_SAMPLES), default=5,
                    help=f"the vote's samples, 1-{MAX_SAMPLES} (default 5)")
    ev.add_argument("--models", default=None,
                    help="comma-separated configured models: single uses the first, the "
                         "vote's samples and panel's panelists take them in turn")
    ev.add_argument("--panels", nargs="+", default=None, metavar="PANEL",
                    help="compare judge panels on consensus debates (yes/no items): each "
                         "PANEL the judges' models, \"a,b,c\" or \"a x3\"; run as modes "
                         "jury1, jury2, ... with accuracy, agreement and self-preference")
    ev.add_argument("--concurrency", type=Whole(1, MAX_CONCURRENCY), default=4,
                    help=f"items run at once, 1-{MAX_CONCURRENCY} (default 4)")
    ev.add_argument("--resume", default=None, metavar="ID",
                    help="resume a stored run (rerunning the same evaluation resumes its "
                         "newest unfinished run by itself)")
    ev.add_argument("--review", action="store_true",
                    help="count its debates in oversight as any debate: reviews, the judge "
                         "audit, routing statistics (by default an evaluation keeps its own "
                         "books: docs/evaluation.md)")
    ev.add_argument("--json", action="store_true",
                    help="print the report as one JSON object (progress goes to stderr)")
    ev.add_argument("--plot", default=None, metavar="PATH",
                    help="write accuracy against cost per question to a new .png, .svg or "
                         ".pdf file (checked before anything runs)")
    ev.add_argument("--force", action="store_true",
                    help="with --plot: replace an existing file")
    ev.add_argument("--yes", action="store_true",
                    help="start without asking (needed without a terminal)")
    ev.add_argument("--limit", type=Whole(1, MAX_LISTED), default=20,
                    help=f"with list: how many, 1-{MAX_LISTED} (default 20)")
    ev.set_defaults(func=Lazy("bot.cli.evaluations", "evaluate"))


def _actions(parser: argparse.ArgumentParser, dest: str
             ) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """A command made of actions (`judges report`): named bare, it prints its help, as git
    does, rather than argparse's "the following arguments are required"."""
    parser.set_defaults(func=None, help_of=parser)
    return parser.add_subparsers(dest=dest, metavar="ACTION")


def _verbose(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="also say which settings file and .env were read (on stderr)")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _verbose(child, default=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dialectic", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _debates(sub)
    _service(sub)
    _schedules(sub)
    _reviews(sub)
    _workspaces(sub)
    _oversight(sub)
    _evaluations(sub)
    _verbose(parser, default=False)   # before or after the command: `dialectic run -v ...`
    return parser
