"""Forest plots of an agent's contrasts (agent − control, ablation credit), as SVG text.

One row per metric of a contrast block (``profile["agents"][a]["minus_control"]["metrics"]``
or ``…["ablation_credit"][module]["metrics"]``): the difference as a point and its 95%
interval as a bar, beside a zero line. Rows share an axis only when they share a unit: the
differences of proportions (in percentage points) are one section, each other metric (D50 in
depth levels, a log score, S) a section of its own. A row whose Holm-adjusted p-value is below
:data:`SIGNIFICANCE` is marked (a filled diamond, its label bold); a row without an interval is
a hollow point with no bar, and the legend says "no interval" once, with the reason; a metric
with no difference at all is listed under the plot with its reason.

Each row is a ``<g class="forest-row" data-metric=… data-significant="yes|no"
data-interval="yes|no">`` whose hover text is the exact figure; the zero line of each section
is a ``<g data-guide="zero">``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports import _svg as s
from reports.model import ContrastFigure, ContrastMetrics
from reports.present import no_interval, number

__all__ = ["SIGNIFICANCE", "ForestRow", "forest_plot", "forest_rows"]

SIGNIFICANCE = 0.05
"""A contrast is marked when its Holm-adjusted p-value is below this."""

UNITS = {
    "d50": "depth levels",
    "log_score_c": "log score",
    "agent_prediction_skill": "skill S",
    "repeated_exploitation": "exploitation",
}
"""The unit of a metric that is not a proportion (its section's axis)."""

MARK = s.VERMILLION
POINT = s.BLUE


@dataclass(frozen=True)
class ForestRow:
    """One metric of a contrast block, ready to draw."""

    metric: str
    """The profile's key: ``false_belief_accuracy``, ``accuracy_by_depth.R3``, ``d50``…"""
    label: str
    proportion: bool
    """A difference of proportions (drawn in percentage points), else in its own unit."""
    value: float | None
    """The difference; None when the block has none (:attr:`reason` says why)."""
    ci: tuple[float | None, float | None] | None
    """The interval's ends (None for an open end); None when the row has no interval."""
    n: int | None
    p_holm: float | None
    reason: str | None = None
    """Why there is no difference, or no interval."""

    @property
    def significant(self) -> bool:
        return self.ci is not None and self.p_holm is not None and self.p_holm < SIGNIFICANCE

    @property
    def scale(self) -> float:
        return 100.0 if self.proportion else 1.0

    def figure(self) -> str:
        """``+17.2 pts [+8.9, +25.0] n=198`` (``+0.81 [+0.41, +1.25] n=198`` in own units);
        without an interval, the value and n alone."""
        if self.value is None:
            return "not estimable"
        fmt, unit = ("{:+.1f}", " pts") if self.proportion else ("{:+.2f}", "")
        text = fmt.format(self.scale * self.value) + unit
        if self.ci is not None:
            text += (
                " ["
                + ", ".join("open" if e is None else fmt.format(self.scale * e) for e in self.ci)
                + "]"
            )
        if self.n is not None:
            text += f" n={self.n}"
        return text

    def p_text(self) -> str:
        if self.p_holm is None:
            return ""
        return "p(Holm) <0.001" if self.p_holm < 0.001 else f"p(Holm) {self.p_holm:.3f}"


def _row(metric: str, label: str, proportion: bool, d: ContrastFigure) -> ForestRow:
    if d.available is False:
        return ForestRow(
            metric, label, proportion, None, None, None, None, str(d.reason or "not available")
        )
    value = number(d.difference)
    ci = d.ci
    ends: tuple[float | None, float | None] | None = None
    if value is not None and d.status != "not_estimable" and ci is not None and len(ci) == 2:
        ends = (number(ci[0]), number(ci[1]))
        if ends == (None, None):
            ends = None
    reason = None
    if value is None:
        reason = str(d.reason or d.note or "no difference")
    elif ends is None:  # " (no interval: n < 10)" → "n < 10"
        reason = no_interval(d).strip()[1:-1].removeprefix("no interval").lstrip(": ") or None
    return ForestRow(metric, label, proportion, value, ends, d.n, number(d.p_holm), reason)


def forest_rows(
    metrics: ContrastMetrics | Mapping[str, Any], labels: Mapping[str, tuple[str, bool]]
) -> list[ForestRow]:
    """The rows of one contrast block (a profile's :class:`~reports.model.ContrastMetrics`,
    or their JSON, read back here), in ``labels`` order (``key → (label, proportion)``); the
    false-belief accuracy is followed by its per-depth rows."""
    if not isinstance(metrics, ContrastMetrics):
        metrics = ContrastMetrics.of(metrics)
    rows = []
    for key, (label, proportion) in labels.items():
        d = metrics.figure(key)
        if d is None:
            continue
        rows.append(_row(key, label, proportion, d))
        if key == "false_belief_accuracy":
            for lab, dd in (metrics.accuracy_by_depth or {}).items():
                rows.append(_row(f"accuracy_by_depth.{lab}", f"{label} {lab}", True, dd))
    return rows


def _sections(rows: Sequence[ForestRow]) -> list[tuple[str, list[ForestRow]]]:
    """The drawn rows by unit: the proportions first (one shared axis), then each other
    metric alone."""
    props = [r for r in rows if r.value is not None and r.proportion]
    out = [("difference, percentage points", props)] if props else []
    for r in rows:
        if r.value is not None and not r.proportion:
            unit = UNITS.get(r.metric.split(".")[0], "its own unit")
            out.append((f"{r.label}: difference, {unit}", [r]))
    return out


def _domain(rows: Sequence[ForestRow]) -> tuple[float, float]:
    """The axis range of a section in drawn units: every point and finite interval end, and
    zero; padded and widened to round ticks."""
    scale = rows[0].scale
    vals = [0.0]
    for r in rows:
        if r.value is not None:
            vals.append(scale * r.value)
        for e in r.ci or ():
            if e is not None:
                vals.append(scale * e)
    lo, hi = min(vals), max(vals)
    if hi - lo < 1e-9:
        lo, hi = (-10.0, 10.0) if rows[0].proportion else (-1.0, 1.0)
    pad = 0.06 * (hi - lo)
    ticks = s.nice_ticks(lo - pad, hi + pad, 6)
    return min(ticks[0], lo - pad), max(ticks[-1], hi + pad)


LABEL_MAX = 300.0
PLOT_W = 380.0
TEXT_W = 300.0
ROW_H = 22.0


def forest_plot(rows: Sequence[ForestRow], *, title: str, fig_id: str) -> str | None:
    """The forest plot of ``rows`` (:func:`forest_rows`) as an ``<svg id=fig_id>``; None when
    no row has a difference to draw."""
    sections = _sections(rows)
    if not sections:
        return None
    label_w = min(LABEL_MAX, max(s.text_width(r.label, 11) for _, rs in sections for r in rs) + 24)
    x_plot = label_w
    x_text = x_plot + PLOT_W + 18
    width = x_text + TEXT_W
    y = 34.0
    body = [s.text(10, 20, title, size=13, weight="bold")]
    for head, srows in sections:
        body.append(s.text(x_plot, y + 10, head, size=10, fill="#555555"))
        y += 18
        lo, hi = _domain(srows)
        xs = s.Scale(lo, hi, x_plot, x_plot + PLOT_W)
        top = y
        body += [
            s.rect(10, y + ROW_H * i, width - 20, ROW_H, fill="#f4f4f4")
            for i in range(0, len(srows), 2)
        ]  # zebra stripes, behind everything
        y += ROW_H * len(srows)
        ticks = [t for t in s.nice_ticks(lo, hi, 6) if lo <= t <= hi]
        body.append(s.x_axis(xs, y, ticks, lambda t: f"{t:+g}" if t else "0", grid_to=top))
        body += [_forest_row(r, xs, top + ROW_H * (i + 0.5), x_text) for i, r in enumerate(srows)]
        body.append(
            s.group(
                s.line(xs(0.0), top - 2, xs(0.0), y, stroke="#222222", width=1.2), data_guide="zero"
            )
        )
        y += 34
    legend, h = _forest_legend(rows, 10, y, width - 20)
    body.append(legend)
    n_drawn = sum(len(rs) for _, rs in sections)
    return s.document(
        width,
        y + h + 6,
        "".join(body),
        id=fig_id,
        class_="forest",
        label=f"{title}: forest plot of {n_drawn} contrasts",
        data_rows=str(n_drawn),
    )


def _forest_row(r: ForestRow, xs: s.Scale, cy: float, x_text: float) -> str:
    assert r.value is not None
    v = r.scale * r.value
    colour = MARK if r.significant else POINT
    parts = [
        s.text(
            xs.start - 12,
            cy + 4,
            r.label,
            size=11,
            anchor="end",
            weight="bold" if r.significant else None,
        )
    ]
    if r.ci is not None:
        lo, hi = (None if e is None else r.scale * e for e in r.ci)
        x_lo = xs.start + 2 if lo is None else xs.clamped(lo)
        x_hi = xs.end - 2 if hi is None else xs.clamped(hi)
        parts.append(s.line(x_lo, cy, x_hi, cy, stroke=colour, width=2.0))
        for end, x in ((lo, x_lo), (hi, x_hi)):
            if end is None:  # open: an arrowhead at the axis edge
                d = 6.0 if x > xs(v) else -6.0
                parts.append(s.polygon([(x + d, cy), (x, cy - 4), (x, cy + 4)], fill=colour))
            else:
                parts.append(s.line(x, cy - 4, x, cy + 4, stroke=colour, width=1.3))
    px = xs.clamped(v)
    if r.significant:
        parts.append(
            s.polygon(
                [(px, cy - 6.5), (px + 6.5, cy), (px, cy + 6.5), (px - 6.5, cy)],
                fill=MARK,
                stroke="#ffffff",
                stroke_width=1,
            )
        )
    else:
        parts.append(
            s.circle(
                px, cy, 4.5, fill="#ffffff" if r.ci is None else POINT, stroke=POINT, width=1.6
            )
        )
    shown = r.figure() + (f" · {r.p_text()}" if r.p_text() else "")
    parts.append(
        s.text(
            x_text,
            cy + 4,
            shown,
            size=10,
            fill="#222222" if r.significant else "#444444",
            weight="bold" if r.significant else None,
        )
    )
    tip = f"{r.label}: {r.figure()}"
    if r.p_text():
        tip += f", {r.p_text()}"
    if r.significant:
        tip += " (Holm-significant)"
    if r.ci is None:
        tip += f" (no interval: {r.reason})" if r.reason else " (no interval)"
    return s.group(
        "".join(parts),
        title=tip,
        class_="forest-row",
        data_metric=r.metric,
        data_significant="yes" if r.significant else "no",
        data_interval="no" if r.ci is None else "yes",
    )


def _forest_legend(
    rows: Sequence[ForestRow], x: float, y: float, width: float
) -> tuple[str, float]:
    """The key (what a diamond, a filled and a hollow point mean: "no interval" said once,
    with the reason) and the metrics with no difference, each with its reason."""
    drawn = [r for r in rows if r.value is not None]
    items: list[tuple[Callable[[float, float], str], str]] = []
    if any(r.significant for r in drawn):
        items.append(
            (
                lambda cx, cy: s.polygon(
                    [(cx, cy - 6), (cx + 6, cy), (cx, cy + 6), (cx - 6, cy)], fill=MARK
                ),
                f"Holm-significant (p(Holm) < {SIGNIFICANCE:g})",
            )
        )
    if any(r.ci is not None and not r.significant for r in drawn):
        items.append(
            (
                lambda cx, cy: s.circle(cx, cy, 4.5, fill=POINT, stroke=POINT),
                f"not significant after Holm (p(Holm) ≥ {SIGNIFICANCE:g}); bar: 95% interval",
            )
        )
    bare = [r for r in drawn if r.ci is None]
    if bare:
        reasons = sorted({r.reason for r in bare if r.reason})
        why = f" ({'; '.join(reasons)})" if len(reasons) == 1 else " (reasons on hover)"
        items.append(
            (
                lambda cx, cy: s.circle(cx, cy, 4.5, fill="#ffffff", stroke=POINT, width=1.6),
                f"hollow: no interval{why}",
            )
        )
    parts = []
    cy = y
    for swatch, label in items:
        parts.append(
            swatch(x + 8, cy + 6) + s.text(x + 22, cy + 10, label, size=10, fill="#333333")
        )
        cy += 18
    missing = [r for r in rows if r.value is None]
    if missing:
        line = "Not estimable: " + "; ".join(f"{r.label} ({r.reason})" for r in missing) + "."
        for part in textwrap.wrap(line, max(40, int(width / s.text_width("x", 10)))):
            parts.append(s.text(x, cy + 10, part, size=10, fill="#555555"))
            cy += 14
    return s.group("".join(parts), class_="legend"), cy - y
