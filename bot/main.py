"""The `dialectic` command's entry point: it parses the command line with the grammar alone
(bot/cli/parser.py: argparse and the vocabulary), so `--help` and usage errors load nothing else.

The process that runs a parsed command (settings, logging, the host: bot/processes.py) is named by
its dotted path, like the parser's handlers, and loaded only once there is a command to run: its
settings models (pydantic), the terminal (rich) and each command's own code are not part of
`--help`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import cast

from bot.cli.parser import EXIT_USAGE, build_parser
from bot.service import memory

#: The module whose `run(args)` runs a parsed command (the rest of the composition root).
PROCESS = "bot.processes"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "func", True) is None:   # `dialectic judges`: the command's help
        args.help_of.print_help()
        return EXIT_USAGE
    run = cast(Callable[[argparse.Namespace], int], importlib.import_module(PROCESS).run)
    return run(args)


def command() -> int:
    """The `dialectic` command (and `python -m bot`): `main` in a process of its own, whose
    garbage collector waits out start-up and which ends without taking apart what it built
    (bot/service/memory.py)."""
    memory.starting()
    return memory.ending(main())


__all__ = ["PROCESS", "command", "main"]
