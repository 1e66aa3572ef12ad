"""The console's two pictures, drawn on the server as SVG (no chart library, no script): the
judges × criteria heatmap of calibrated scores, and alpha with its interval on the preset's band
scale. Pure functions of the result; every label is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from bot.service.results import SCORE_MAX, SCORE_MIN, alpha_text, on_scale
from engine.domain import ConsensusSummary
from engine.settings import ThresholdSpec
from engine.vocabulary import Band

CELL_W, CELL_H = 36, 30
LABEL_W, HEADER_H = 96, 92
RIGHT_PAD = 44    # the last column's label, slanted, runs past its cell
GROUP_TITLE = {"pro": "on the rubric for the proposition", "con": "on the rubric against it",
               "claims": "on the claims"}
# light to dark blue: one hue, readable by the colour-blind and in greyscale
LOW_RGB, HIGH_RGB = (239, 246, 255), (8, 64, 129)
BAND_FILL = {Band.CONTENTIOUS: "#f4c7c3", Band.REVIEW: "#fde6b8", Band.TENTATIVE: "#dbeac0",
             Band.HIGH: "#b9dfb4"}


@dataclass(frozen=True, slots=True)
class Column:
    item: str
    group: str      # "pro", "con", "claims"
    label: str


def columns(items: Sequence[str]) -> list[Column]:
    """The heatmap's columns: "pro.logic" is logic under Pro, "claim.P1" is P1 under Claims."""
    out = []
    for item in items:
        head, _, tail = item.partition(".")
        if head in ("pro", "con"):
            out.append(Column(item, head, tail or item))
        else:
            out.append(Column(item, "claims", tail or item))
    return out


def cell_colour(score: float) -> tuple[str, str]:
    """(fill, text colour) for a score on the judges' scale."""
    t = (on_scale(score) - SCORE_MIN) / (SCORE_MAX - SCORE_MIN)
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(LOW_RGB, HIGH_RGB, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("#ffffff" if t > 0.55 else "#111111")


def heatmap_svg(c: ConsensusSummary) -> Markup:
    """Rows are judges, columns the rubric per side and the claims; each cell the judge's
    calibrated score (raw when the result predates stored calibration) on the 1-10 scale. One
    picture per side and one for the claims, however many: on a phone they stack, and a wide
    one scales down to the screen (the stylesheet's max-width), rather than one group split
    into two pictures with the same heading."""
    rows = c.calibrated or c.ratings
    judges = [j for j in c.judges if j in rows] or sorted(rows)
    cols = list(enumerate(columns(c.items)))
    if not judges or not cols:
        return Markup("")
    title = "calibrated" if c.calibrated else "raw"
    groups: dict[str, list[tuple[int, Column]]] = {}
    for index, col in cols:
        groups.setdefault(col.group, []).append((index, col))
    return Markup("".join(_heatmap_part(n, chunk, judges, rows, title)
                          for n, chunk in enumerate(groups.values())))


def _heatmap_part(n: int, chunk: list[tuple[int, Column]], judges: list[str],
                  rows: dict[str, list[float | None]], title: str) -> str:
    width = LABEL_W + CELL_W * len(chunk) + RIGHT_PAD
    height = HEADER_H + CELL_H * len(judges) + 8
    group = chunk[0][1].group
    parts = [f'<svg class="heatmap" role="img" aria-labelledby="hm-title-{n}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<title id="hm-title-{n}">Judges\' {title} scores, 1 to 10, {GROUP_TITLE[group]}'
             '</title>']
    parts += _column_headers([col for _, col in chunk])
    for r, judge in enumerate(judges):
        y = HEADER_H + r * CELL_H
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + CELL_H / 2 + 4}" text-anchor="end" '
                     f'class="hm-judge">{escape(judge)}</text>')
        row = rows.get(judge, [])
        for i, (index, col) in enumerate(chunk):
            value = row[index] if index < len(row) else None
            parts.append(_cell(LABEL_W + i * CELL_W, y, judge, col, value))
    parts.append("</svg>")
    return "".join(parts)


def _column_headers(cols: list[Column]) -> list[str]:
    parts = []
    previous = ""
    for i, col in enumerate(cols):
        x = LABEL_W + i * CELL_W
        if col.group != previous:
            parts.append(f'<text x="{x + 2}" y="14" class="hm-group">'
                         f'{escape(col.group.capitalize())}</text>')
            if previous:
                parts.append(f'<line x1="{x}" y1="4" x2="{x}" y2="{HEADER_H - 2}" '
                             'class="hm-sep"/>')
            previous = col.group
        cx, cy = x + CELL_W / 2, HEADER_H - 6
        parts.append(f'<text x="{cx}" y="{cy}" transform="rotate(-55 {cx} {cy})" '
                     f'class="hm-item">{escape(col.label[:12])}</text>')
    return parts


def _cell(x: float, y: float, judge: str, col: Column, value: float | None) -> str:
    what = f"{judge}, {col.group} {col.label}"
    if value is None:
        return (f'<g><title>{escape(what)}: no score</title><rect x="{x + 1}" y="{y + 1}" '
                f'width="{CELL_W - 2}" height="{CELL_H - 2}" class="hm-none"/>'
                f'<text x="{x + CELL_W / 2}" y="{y + CELL_H / 2 + 4}" text-anchor="middle" '
                f'class="hm-num">–</text></g>')
    score = on_scale(value)
    fill, ink = cell_colour(score)
    return (f'<g><title>{escape(what)}: {score:.1f}</title><rect x="{x + 1}" y="{y + 1}" '
            f'width="{CELL_W - 2}" height="{CELL_H - 2}" fill="{fill}"/>'
            f'<text x="{x + CELL_W / 2}" y="{y + CELL_H / 2 + 4}" text-anchor="middle" '
            f'fill="{ink}" class="hm-num">{score:.1f}</text></g>')


SCALE_W, SCALE_H, PAD = 380, 74, 14
EDGE = 60   # from either side, the alpha label is anchored to the dot's edge, not centred


def _x(alpha: float) -> float:
    """Alpha from 0 to 1 across the bar (below 0 pinned to the left edge)."""
    return PAD + (SCALE_W - 2 * PAD) * min(1.0, max(0.0, alpha))


def alpha_scale_svg(alpha: float | None, interval: tuple[float, float] | None,
                    thresholds: ThresholdSpec) -> Markup:
    """The band scale (contentious, review, tentative, high between the preset's cut-offs) with
    alpha as a dot and its 95% interval as a bar."""
    cuts = [(Band.CONTENTIOUS, 0.0, thresholds.escalate),
            (Band.REVIEW, thresholds.escalate, thresholds.tentative),
            (Band.TENTATIVE, thresholds.tentative, thresholds.high),
            (Band.HIGH, thresholds.high, 1.0)]
    label = f"Krippendorff's alpha {alpha_text(alpha, thresholds)} on the band scale"
    parts = [f'<svg class="scale" role="img" aria-label="{escape(label)}" '
             f'viewBox="0 0 {SCALE_W} {SCALE_H}" xmlns="http://www.w3.org/2000/svg">']
    for band, low, high in cuts:
        if high <= low:
            continue
        x0, x1 = _x(low), _x(min(high, 1.0))
        parts.append(f'<rect x="{x0}" y="18" width="{max(x1 - x0, 0)}" height="18" '
                     f'fill="{BAND_FILL[band]}"/>')
        parts.append(f'<text x="{(x0 + x1) / 2}" y="13" text-anchor="middle" '
                     f'class="sc-band">{band.value}</text>')
    for cut in sorted({thresholds.escalate, thresholds.tentative, thresholds.high}):
        if 0 < cut <= 1:
            parts.append(f'<line x1="{_x(cut)}" y1="16" x2="{_x(cut)}" y2="40" class="sc-cut"/>'
                         f'<text x="{_x(cut)}" y="54" text-anchor="middle" class="sc-tick">'
                         f'{cut:g}</text>')
    parts.append(f'<text x="{PAD}" y="54" text-anchor="middle" class="sc-tick">0</text>'
                 f'<text x="{SCALE_W - PAD}" y="54" text-anchor="middle" class="sc-tick">1</text>')
    if interval is not None:
        lo, hi = _x(interval[0]), _x(interval[1])
        parts.append(f'<line x1="{lo}" y1="27" x2="{hi}" y2="27" class="sc-ci"/>'
                     f'<line x1="{lo}" y1="21" x2="{lo}" y2="33" class="sc-ci"/>'
                     f'<line x1="{hi}" y1="21" x2="{hi}" y2="33" class="sc-ci"/>')
    if alpha is not None:
        x = _x(alpha)
        # a label centred on a dot at either end would be cut by the picture's edge
        anchor, at = (("start", x - 6) if x < EDGE else ("end", x + 6) if x > SCALE_W - EDGE
                      else ("middle", x))
        parts.append(f'<circle cx="{x}" cy="27" r="6" class="sc-alpha"/>'
                     f'<text x="{at}" y="70" text-anchor="{anchor}" class="sc-value">'
                     f'α {escape(alpha_text(alpha, thresholds))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


__all__ = ["alpha_scale_svg", "cell_colour", "columns", "heatmap_svg"]
