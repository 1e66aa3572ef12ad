"""Sets for trying `dialectic eval` without data of one's own.

* `arithmetic(n, seed)` — Du et al.'s arithmetic task (arXiv 2305.14325, section 3): six integers
  drawn uniformly from 0 to 30, "What is the result of a+b*c+d-e*f?", the answer the integer.
  The same seed gives the same questions, so a run sets their table beside one's own models'.
* `decisions()` — a small yes/no set shipped with the package (data/decisions.jsonl): factual
  propositions whose answer is not a matter of opinion, for modes that answer yes or no
  (`consensus`).

`BUILTINS` maps the names `--builtin` accepts to makers called as `make(n, seed)`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from importlib import resources

from engine.evaluation.dataset import MAX_ITEMS, Dataset, DatasetError, Item, parse_lines

ARITHMETIC_LOW, ARITHMETIC_HIGH = 0, 30
DECISIONS_FILE = "data/decisions.jsonl"


def _check_n(name: str, n: int) -> None:
    if not 1 <= n <= MAX_ITEMS:
        raise DatasetError(f"builtin:{name}: n must be between 1 and {MAX_ITEMS:,} (got {n})")


def arithmetic(n: int, seed: int) -> Dataset:
    """`n` questions of Du et al.'s arithmetic task, drawn with `seed`."""
    _check_n("arithmetic", n)
    rng = random.Random(seed)
    items = []
    for index in range(1, n + 1):
        a, b, c, d, e, f = (rng.randint(ARITHMETIC_LOW, ARITHMETIC_HIGH) for _ in range(6))
        items.append(Item(id=str(index),
                          question=f"What is the result of {a}+{b}*{c}+{d}-{e}*{f}?",
                          answer=str(a + b * c + d - e * f)))
    return Dataset(name="arithmetic", items=tuple(items),
                   source=f"builtin:arithmetic seed={seed} n={n}")


def decisions() -> Dataset:
    """The yes/no decision set shipped with the package, whole and in file order."""
    text = resources.files("engine.evaluation").joinpath(DECISIONS_FILE).read_text("utf-8")
    return parse_lines(text.splitlines(), origin=f"builtin:decisions ({DECISIONS_FILE})",
                       name="decisions", source="builtin:decisions")


def decisions_sample(n: int, seed: int) -> Dataset:
    """`n` items of the decision set drawn with `seed` (file order kept); all of them when `n`
    is at least its size."""
    _check_n("decisions", n)
    whole = decisions()
    if n >= len(whole.items):
        return whole
    keep = set(random.Random(seed).sample(range(len(whole.items)), n))
    items = tuple(item for index, item in enumerate(whole.items) if index in keep)
    return Dataset(name="decisions", items=items, source=f"builtin:decisions seed={seed} n={n}")


BuiltinMaker = Callable[[int, int], Dataset]

#: `--builtin NAME`: make(n, seed).
BUILTINS: dict[str, BuiltinMaker] = {
    "arithmetic": arithmetic,
    "decisions": decisions_sample,
}
