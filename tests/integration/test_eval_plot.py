"""bot/cli/eval_report.py write_plot: a PNG of accuracy against cost per question (matplotlib is
in the dev install, so this never skips), and one line when matplotlib is missing."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from bot.cli.eval_report import PLOT_MISSING, write_plot
from engine.errors import ConfigurationError, InvalidRequest
from engine.evaluation.dataset import Dataset, Item
from engine.evaluation.report import ItemOutcome, Report, build_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATASET = Dataset(name="$sums$ with $math$", source="s",
                  items=tuple(Item(id=str(i), question="q", answer=str(i)) for i in range(12)))


def _report(cost: float, *, rehearsal: bool = False) -> Report:
    def mode(rights: int, factor: float, calls: int) -> list[ItemOutcome]:
        return [ItemOutcome(item_id=str(i), answer=str(i), correct=i < rights, tie=False,
                            cost_usd=cost * factor, calls=calls, tokens=100, seconds=1.0)
                for i in range(12)]
    return build_report(DATASET, {"single": mode(6, 1, 1), "vote": mode(8, 5, 5),
                                  "$panel$": mode(11, 4, 7)}, rehearsal=rehearsal)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize(("cost", "rehearsal"), [(0.002, False), (0.0, True)])
def test_the_plot_is_a_png_of_every_mode(tmp_path: Path, cost: float, rehearsal: bool) -> None:
    path = tmp_path / "eval.png"
    write_plot(_report(cost, rehearsal=rehearsal), path)
    width, height = _png_size(path)
    assert (width, height) == (840, 540)                    # 7 x 4.5 inches at 120 dpi
    assert path.stat().st_size > 10_000                     # points, bars, labels: not blank


def test_a_plot_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"cannot write the plot to .*nowhere"):
        write_plot(_report(0.001), tmp_path / "nowhere" / "eval.png")


def test_without_matplotlib_the_plot_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)   # import raises ImportError
    with pytest.raises(ConfigurationError) as raised:
        write_plot(_report(0.001), tmp_path / "eval.png")
    assert str(raised.value) == PLOT_MISSING == ("the plot needs matplotlib: "
                                                 "pip install 'dialectic[plot]'")
    assert not (tmp_path / "eval.png").exists()
