"""Money as text: one function every surface uses, precise enough to be true at small caps."""

from __future__ import annotations

import pytest

from engine.money.cost import budget_refusal, usd, usd_decimals


@pytest.mark.parametrize(("amount", "text"), [
    (0, "$0.00"), (4.2, "$4.20"), (1250, "$1,250.00"), (0.0734, "$0.0734"), (0.5, "$0.50"),
    (0.01, "$0.01"), (0.000012, "$0.00001"), (0.0049, "$0.0049"), (-0.25, "$-0.25"),
])
def test_one_amount(amount: float, text: str) -> None:
    assert usd(amount) == text


@pytest.mark.parametrize(("amounts", "decimals"), [
    ((0.0, 1.0, 0.5), 2), ((2.5, 10.0), 2), ((0.00034, 0.01, 0.0049), 4),
    ((0.0, 0.0), 2), ((1e-9,), 6), ((0.009,), 3),
])
def test_shared_decimals_show_the_smallest_figure(amounts: tuple[float, ...],
                                                 decimals: int) -> None:
    assert usd_decimals(*amounts) == decimals


@pytest.mark.parametrize(("remaining", "cap", "needed", "text"), [
    (0.00034, 0.01, 0.00487,
     "today's budget has $0.0003 of $0.0100 left; this debate needs about $0.0049"),
    (0.0, 1.0, 0.5, "today's budget has $0.00 of $1.00 left; this debate needs about $0.50"),
    (2.5, 10.0, 3.1, "today's budget has $2.50 of $10.00 left; this debate needs about $3.10"),
    # what is left rounds down, what is needed rounds up: never "$0.0005 left, needs $0.0005"
    (0.00049, 0.01, 0.00051,
     "today's budget has $0.0004 of $0.0100 left; this debate needs about $0.0006"),
])
def test_a_refusal_compares_like_with_like(remaining: float, cap: float, needed: float,
                                           text: str) -> None:
    assert budget_refusal(remaining_usd=remaining, cap_usd=cap, needed_usd=needed) == text
