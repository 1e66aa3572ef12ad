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
  Not many more: a young collection walks every young object still alive (about 0.2 µs each,
  the running debates' in-flight state among them), and the process stops for it. At 50,000 a
  `serve` paused 11-31 ms at a time, once in the middle of a burst of 100 Slack acks; at 10,000
  it pauses about 2 ms and spends about the same CPU in all (docs/benchmarks.md);
- what is loaded later, once, for the rest of the process is start-up too (`loading`: the
  `openai` SDK, imported when the first debate builds its client). Nothing is collected while it
  loads, and what it built is frozen after (with whatever else is alive then, once: a server's
  first debates). Otherwise its few hundred thousand objects stayed young, and the next
  collections walked them all, about 10 ms each, one of them inside the first debate.

Garbage in cycles is still collected, only in larger batches; frozen start-up objects are those
the process keeps anyway. For the same reason the process does not take them apart one by one
when its command is done (`ending`): once every other exit handler has run (logs flushed, spans
exported) and its output is flushed, it ends with the command's status, skipping the
interpreter's teardown of every module, class and frozen object (about 0.1 s of every
`dialectic run`, after its output and before the shell's prompt; docs/benchmarks.md). A command
that raised ends as Python ends it.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: (young generation, middle, old): the collector's thresholds once a process has started
THRESHOLDS = (10_000, 100, 100)   # the middle and old as often as at (50,000, 20, 100)

_tuned = False
#: the command's exit status once it returned (`ending`), read by the last exit handler
_status: list[int] = []


def starting() -> None:
    """The process is starting: collect nothing until `started()`. Its exit handler is
    registered first, so it runs last, after those of everything the command loads."""
    global _tuned
    _tuned = True
    gc.disable()
    atexit.register(_end_without_teardown)


def ending(status: int) -> int:
    """The command returned `status`: the process ends with it without its teardown."""
    _status[:] = [status]
    return status


def _end_without_teardown() -> None:
    if not _status:   # the command raised (or never returned): Python ends the process
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):   # a closed pipe: Python reports it and sets the status
        return
    os._exit(_status[0])


def started() -> None:
    """What the process built so far lives as long as it does: freeze it, and collect what comes
    after with `THRESHOLDS`. Does nothing unless `starting()` was called (the entry point of a
    `dialectic` process), so a program that calls `main()` keeps its own collector settings."""
    if not _tuned:
        return
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.enable()


@contextmanager
def loading() -> Iterator[None]:
    """Around a load done once, after start-up, whose objects live as long as the process (see
    the module's docstring): nothing collected during it, everything frozen after. Does nothing
    before `started()` (start-up collects nothing anyway, and `started()` freezes it all) or
    without `starting()`, as `started()`."""
    if not (_tuned and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


__all__ = ["THRESHOLDS", "ending", "loading", "started", "starting"]
