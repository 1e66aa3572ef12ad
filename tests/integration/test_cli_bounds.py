"""Every numeric flag of every `dialectic` command, found by walking the parser (a new flag is
covered without touching this file): huge, negative, NaN and infinite values are a one-line
usage error naming the range (exit 2), never a traceback; values at the ends of the range are
taken."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bot.cli.bounds import Real, Whole
from bot.cli.parser import build_parser
from tests.support.cli_fixtures import Cli, clean_env, cli

__all__ = ["clean_env", "cli"]  # fixtures


@dataclass(frozen=True)
class Flag:
    command: tuple[str, ...]   # the words before the flag, with placeholders for what is needed
    option: str
    kind: Any   # Whole or Real (bot/cli/bounds.py), as the test below demands

    def __str__(self) -> str:
        return f"{' '.join(self.command)} {self.option}"


def _placeholder(action: argparse.Action) -> list[str]:
    value = str(next(iter(action.choices))) if action.choices else "x"
    return [value] if not action.option_strings else [action.option_strings[0], value]


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> Iterator[Flag]:
    needed = [w for a in parser._actions if a.required or not a.option_strings
              if not isinstance(a, argparse._SubParsersAction) for w in _placeholder(a)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*words, name))
        elif action.type is not None and action.option_strings:
            yield Flag((*words, *needed), action.option_strings[0], action.type)


FLAGS = list(_walk(build_parser(), ()))
BAD = ["1000000000", "1e400", "-5", "-1e9", "nan", "inf", "-inf", "NaN", "1e-400", "twelve"]


def test_the_walk_finds_the_numeric_flags() -> None:
    found = {str(f).split(" x")[0].split(" --")[0] + " " + f.option for f in FLAGS}
    for expected in ("judges report --days", "thresholds apply --high", "thresholds apply "
                     "--target", "thresholds suggest --tentative-target", "run --rounds",
                     "list --limit", "serve --port", "reviewers link --days"):
        assert expected in found, found


@pytest.mark.parametrize("flag", FLAGS, ids=str)
def test_every_numeric_flag_has_a_bounded_type(flag: Flag) -> None:
    assert isinstance(flag.kind, Whole | Real), (
        f"{flag.option} needs a bounded type from bot/cli/bounds.py, not {flag.kind!r}")


@pytest.mark.parametrize("flag", FLAGS, ids=str)
@pytest.mark.parametrize("value", BAD)
def test_out_of_range_is_one_usage_line(cli: Cli, flag: Flag, value: str) -> None:
    if _inside(flag.kind, value):
        pytest.skip(f"{value} is inside the range of {flag}")
    done = cli(*flag.command, f"{flag.option}={value}")
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith(f"error: argument {flag.option}: {value!r} is not "
                         f"{getattr(flag.kind, 'range', '')}"), done.stderr


def _inside(kind: Any, value: str) -> bool:
    try:
        kind(value)
    except (argparse.ArgumentTypeError, ValueError):
        return False
    return isinstance(kind, Whole | Real)


@pytest.mark.parametrize("flag", FLAGS, ids=str)
def test_the_ends_of_each_range_are_taken(flag: Flag) -> None:
    kind = flag.kind
    ends = [kind.low, kind.high] if isinstance(kind, Whole) else [
        kind.low + 1e-9 if kind.open_low else kind.low,
        kind.high - 1e-9 if kind.open_high else kind.high]
    dest = next(a.dest for p in [build_parser()] for a in _actions(p, flag.command)
                if flag.option in a.option_strings)
    for end in ends:
        args = build_parser().parse_args([*flag.command, f"{flag.option}={end!r}"])
        assert getattr(args, dest) == end


def _actions(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> list[argparse.Action]:
    for word in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
    return list(parser._actions)
