"""The cyclic garbage collector, set for how a `dialectic` process allocates.

Start-up builds a few hundred thousand objects that live as long as the process: modules,
classes, pydantic and SQLAlchemy schemas, settings, the runtime. A running service then allocates
many short-lived objects for every LLM call (requests, replies, rows, events), few of them in
cycles. With CPython's default thresholds (700, 10, 10) a worker running 1,000 concurrent
debates spent a fifth of its CPU in the collector, each full collection walking the start-up
objects again (`make bench`, docs/benchmarks.md). So, in a `dialectic` process (not when
`main()` is called inside another program, such as the tests):

- nothing is collected while it starts (`starting`, first thing in the entry point);
- once started, what start-up built is frozen (`gc.freeze`: kept, never traversed again), and
  the youngest generation is collected every `THRESHOLDS[0]` net allocations instead of 700
  (`started`: before a command's work begins, and again once a server or worker has assembled).

Garbage in cycles is still collected, only in larger batches; frozen start-up objects are those
the process keeps anyway.
"""

from __future__ import annotations

import gc

#: (young generation, middle, old): the collector's thresholds once a process has started
THRESHOLDS = (50_000, 20, 100)

_tuned = False


def starting() -> None:
    """The process is starting: collect nothing until `started()`."""
    global _tuned
    _tuned = True
    gc.disable()


def started() -> None:
    """What the process built so far lives as long as it does: freeze it, and collect what comes
    after with `THRESHOLDS`. Does nothing unless `starting()` was called (the entry point of a
    `dialectic` process), so a program that calls `main()` keeps its own collector settings."""
    if not _tuned:
        return
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.enable()


__all__ = ["THRESHOLDS", "started", "starting"]
