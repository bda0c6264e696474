"""The run screen's depth chart as data, and as lines of text: one agent's accuracy by depth
(R0, the reality check, then R1 … R5 and the variants between them), false and true belief,
each point with its 95% interval when the profile gives one. Pure functions from a profile's
agent dict; no Textual, no I/O.

:func:`chart_rows` lays the chart out on a character grid (one row per
:data:`STEP` of accuracy, one column block per depth) and says which cells hold which mark,
so the widget only colours them and a test can read the grid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.present import number, proportion_text

__all__ = [
    "COLUMN",
    "MARKS",
    "STEP",
    "ChartRow",
    "DepthCurve",
    "DepthPoint",
    "chart_rows",
    "depth_curve",
]


@dataclass(frozen=True)
class DepthPoint:
    """One cell: accuracy and its interval (None: no interval, the figure's n is too small or
    the cell has none), the n, and the exact figure as the reports word it."""

    value: float
    lo: float | None
    hi: float | None
    n: int
    text: str


@dataclass(frozen=True)
class DepthCurve:
    """One agent's accuracy by depth: per depth label (in depth order), its false-belief and
    its true-belief point (None where the run has no such cell). R0, when the run checked
    reality, holds the reality check as its true-belief point (it has no false belief)."""

    agent: str
    valid: bool
    depths: tuple[str, ...]
    false_belief: tuple[DepthPoint | None, ...]
    true_belief: tuple[DepthPoint | None, ...]

    @property
    def empty(self) -> bool:
        return not any(self.false_belief) and not any(self.true_belief)


def _point(cell: Any) -> DepthPoint | None:
    if not isinstance(cell, Mapping):
        return None
    value = number(cell.get("value"))
    if value is None:
        return None
    ci = cell.get("ci")
    lo = hi = None
    if cell.get("status") != "not_estimable" and isinstance(ci, Sequence) and len(ci) == 2:
        lo, hi = number(ci[0]), number(ci[1])
        if lo is None or hi is None:
            lo = hi = None
    n = cell.get("n")
    return DepthPoint(value, lo, hi, n if isinstance(n, int) else 0, proportion_text(cell))


def _depth_key(cells: Mapping[str, Any], label: str) -> tuple[float, str]:
    cell = cells.get(label) or {}
    depth = number(cell.get("depth_n")) if isinstance(cell, Mapping) else None
    return (depth if depth is not None else math.inf, label)


def depth_curve(name: str, agent: Mapping[str, Any]) -> DepthCurve:
    """``agent``'s (a profile's ``agents[name]``) depth curve; an invalid agent's false-belief
    points are kept (the chart marks them as not counted)."""
    acc = agent.get("accuracy_by_depth") or {}
    false = acc.get("false") or {}
    true = acc.get("true") or {}
    cells = {**false, **true}
    labels = sorted(set(false) | set(true), key=lambda lab: _depth_key(cells, lab))
    fb = [_point(false.get(lab)) for lab in labels]
    tb = [_point(true.get(lab)) for lab in labels]
    reality = _point(agent.get("reality_check"))
    if reality is not None and "R0" not in labels:
        labels.insert(0, "R0")
        fb.insert(0, None)
        tb.insert(0, reality)
    return DepthCurve(name, agent.get("valid") is not False, tuple(labels), tuple(fb), tuple(tb))


STEP = 0.1
"""The accuracy one row of the chart stands for."""
COLUMN = 7
"""Characters per depth: the false-belief mark two left of the centre, the true-belief mark
two right of it."""
MARKS = {
    "false": "●",
    "false-bare": "○",
    "true": "▲",
    "true-bare": "△",
    "reality": "◆",
    "bar": "│",
    "threshold": "┄",
}
"""What the chart draws: a point with an interval (filled), without one (hollow), the R0
reality check, an interval's bar and the 90% validity line."""
THRESHOLD = 0.9


@dataclass(frozen=True)
class ChartRow:
    """One line of the chart: its y label (``"100%"``, every other row blank) and its cells,
    each ``(text, kind)`` with kind one of ``axis``, ``false``, ``true``, ``reality``,
    ``threshold`` or ``""`` (blank)."""

    label: str
    cells: tuple[tuple[str, str], ...]


def _row_of(value: float) -> int:
    """The row (0 = 0%, 10 = 100%) that a value falls in."""
    return max(0, min(round(value / STEP), round(1 / STEP)))


def chart_rows(curve: DepthCurve) -> list[ChartRow]:
    """The chart's grid, top row (100%) first, then the x axis and the depth labels."""
    top = round(1 / STEP)
    width = COLUMN * len(curve.depths)
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * width for _ in range(top + 1)]
    for x in range(width):
        grid[_row_of(THRESHOLD)][x] = (MARKS["threshold"], "threshold")
    for i, label in enumerate(curve.depths):
        centre = COLUMN * i + COLUMN // 2
        series: list[tuple[DepthPoint | None, int, str]] = [
            (curve.false_belief[i], centre - 1, "false"),
            (curve.true_belief[i], centre + 1, "reality" if label == "R0" else "true"),
        ]
        for point, x, kind in series:
            if point is None:
                continue
            if point.lo is not None and point.hi is not None:
                for r in range(_row_of(point.lo), _row_of(point.hi) + 1):
                    grid[r][x] = (MARKS["bar"], kind)
            mark = (
                MARKS[kind]
                if kind == "reality" or point.lo is not None
                else (MARKS[f"{kind}-bare"])
            )
            grid[_row_of(point.value)][x] = (mark, kind)
    rows = []
    for r in range(top, -1, -1):
        label = f"{round(100 * r * STEP)}%" if r % 2 == 0 else ""
        rows.append(ChartRow(label, tuple(grid[r])))
    rows.append(ChartRow("", tuple(("─", "axis") for _ in range(width))))
    rows.append(
        ChartRow(
            "",
            tuple(
                (c, "axis") for c in "".join(lab.center(COLUMN)[:COLUMN] for lab in curve.depths)
            ),
        )
    )
    return rows
