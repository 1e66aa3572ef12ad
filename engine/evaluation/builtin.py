"""Built-in datasets: Du et al.'s arithmetic task (arXiv 2305.14325) and a small yes/no set."""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.evaluation.dataset import Dataset, Item

_DECISIONS: tuple[tuple[str, str], ...] = (
    ("Is 17 a prime number?", "yes"),
    ("Is the sum of the angles of a triangle in Euclidean geometry 180 degrees?", "yes"),
    ("Is 2 to the power of 10 greater than 1000?", "yes"),
    ("Is 91 a prime number?", "no"),
    ("Does a week have more hours than 150?", "yes"),
    ("Is 0.1 + 0.2 exactly 0.3 in IEEE 754 double precision?", "no"),
    ("Is the square root of 2 a rational number?", "no"),
    ("Is 1 kilobyte exactly 1024 bytes in the SI system?", "no"),
    ("Is every square a rectangle?", "yes"),
    ("Is 12 factorial divisible by 1000?", "no"),
)


def arithmetic(n: int, seed: int) -> Dataset:
    """Six integers 0-30, `a+b*c+d-e*f`, as Du et al. generate them."""
    rng = random.Random(seed)
    items = []
    for index in range(1, n + 1):
        a, b, c, d, e, f = (rng.randint(0, 30) for _ in range(6))
        items.append(Item(id=str(index), question=f"What is the result of {a}+{b}*{c}+{d}-{e}*{f}?",
                          answer=str(a + b * c + d - e * f)))
    return Dataset(name="arithmetic", items=tuple(items),
                   source=f"builtin:arithmetic seed={seed} n={n}")


def decisions() -> Dataset:
    """A small yes/no set (for `consensus`, whose verdict is a yes or a no)."""
    items = tuple(Item(id=str(i), question=q, answer=a)
                  for i, (q, a) in enumerate(_DECISIONS, start=1))
    return Dataset(name="decisions", items=items, source="builtin:decisions")


BUILTINS: dict[str, Callable[[int, int], Dataset]] = {
    "arithmetic": arithmetic,
    "decisions": lambda n, seed: decisions(),
}
