"""Argparse types for numeric flags: every number from the command line is finite and within
its range before any code reads it, or argparse says so in one usage line (exit 2)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass


def _number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True, slots=True)
class Whole:
    """A whole number from `low` to `high` (both included)."""

    low: int
    high: int

    @property
    def range(self) -> str:
        return f"a whole number from {self.low} to {self.high}"

    def __call__(self, text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.range}") from None
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.range}")
        return value

    def __repr__(self) -> str:   # argparse names the type in its messages
        return "whole number"


@dataclass(frozen=True, slots=True)
class Real:
    """A finite number from `low` to `high`; an open end excludes its bound."""

    low: float
    high: float
    open_low: bool = False
    open_high: bool = False

    @property
    def range(self) -> str:
        low, high = _number(self.low), _number(self.high)
        if not (self.open_low or self.open_high):
            return f"a number from {low} to {high}"
        left = "above" if self.open_low else "at least"
        right = "below" if self.open_high else "at most"
        return f"a number {left} {low} and {right} {high}"

    def _inside(self, value: float) -> bool:
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return math.isfinite(value) and above and below

    def __call__(self, text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.range}") from None
        if not self._inside(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.range}")
        return value

    def __repr__(self) -> str:
        return "number"


__all__ = ["Real", "Whole"]
