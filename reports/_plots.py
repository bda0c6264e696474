"""The profile's figures as SVG text, written directly (:mod:`reports._svg`; no plotting
library).

Each function takes a :class:`~reports.model.RunProfile` and returns one
``<svg>`` document as a string, or None when the run has nothing to draw for that figure. Error
bars are the interval each figure's profile entry stores with it; a point without an interval
has no bar, and its hover text says why. Every point carries a ``<title>`` with the exact figure
(value, interval, n), which a browser shows on hover.

Figures that would otherwise overlay every agent on one set of axes are small multiples, one
panel per agent on a grid at most :data:`MAX_COLUMNS` wide with a shared y axis. Every data
series is a ``<g data-series="kind:agent">`` (``false:``, ``true:``, ``control:``,
``reference:``, ``reality:``, ``calibration:``) and every guide a ``<g data-guide="…">``, so a
test (or a stylesheet) can find what is drawn without reading pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports import _svg as s
from reports._data import depth_label_number, depth_sort_key
from reports.model import AgentProfile, Estimate, RunProfile, Skill
from reports.present import d50_text, proportion_text
from reports.profile import TRUE_BELIEF_THRESHOLD

__all__ = [
    "AGENT_COLOUR",
    "CONTROL_COLOURS",
    "ERROR_COLOURS",
    "FIGURES",
    "INVALID_COLOUR",
    "MAX_COLUMNS",
    "RELIABILITY_COLUMNS",
    "depth_curves",
    "error_types",
    "figures",
    "headline",
    "reliability",
]

AGENT_COLOUR = s.BLUE
"""The agent under test, in every panel."""
CONTROL_COLOURS = (s.ORANGE, s.PURPLE, s.GREEN)
"""Its control(s), in turn."""
REFERENCE_COLOUR = "#9a9a9a"
INVALID_COLOUR = s.VERMILLION
"""Names and notes of an INVALID agent (its curve is drawn grey and dashed)."""
INVALID_CURVE = "#8c8c8c"
ROLE_COLOURS = {"agent": s.BLUE, "control": s.ORANGE, "ablation": s.GREEN, "reference": "#666666"}
ERROR_COLOURS = {
    "correct": s.GREEN,
    "reality_leak": s.VERMILLION,
    "projection": s.ORANGE,
    "truncation": s.SKY,
    "other": s.PURPLE,
    "uncoded": "#bbbbbb",
}
MAX_COLUMNS = 3
RELIABILITY_COLUMNS = 4


def _num(v: Any) -> float:
    return (
        float(v)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        else math.nan
    )


def _ends(ci: Any) -> tuple[float, float] | None:
    """An interval's two ends as floats (nan for an open end); None without an interval."""
    if not isinstance(ci, Sequence) or len(ci) != 2:
        return None
    return _num(ci[0]), _num(ci[1])


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


# -- marks ------------------------------------------------------------------------------------


def _marker(
    shape: str, x: float, y: float, colour: str, *, hollow: bool = False, r: float = 4.0
) -> str:
    """A point: ``o`` circle, ``s`` square, ``D`` diamond, ``^`` triangle; hollow ones are
    white inside."""
    fill = "#ffffff" if hollow else colour
    if shape == "s":
        return s.rect(
            x - r * 0.9, y - r * 0.9, 1.8 * r, 1.8 * r, fill=fill, stroke=colour, stroke_width=1.5
        )
    if shape == "D":
        return s.polygon(
            [(x, y - 1.3 * r), (x + 1.3 * r, y), (x, y + 1.3 * r), (x - 1.3 * r, y)],
            fill=fill,
            stroke=colour,
            stroke_width=1.5,
        )
    if shape == "^":
        return s.polygon(
            [(x, y - 1.2 * r), (x + 1.1 * r, y + 0.8 * r), (x - 1.1 * r, y + 0.8 * r)],
            fill=fill,
            stroke=colour,
            stroke_width=1.3,
        )
    return s.circle(x, y, r, fill=fill, stroke=colour, width=1.5)


def _vbar(x: float, y_lo: float, y_hi: float, colour: str, cap: float = 3.0) -> str:
    """A vertical error bar with caps."""
    return (
        s.line(x, y_lo, x, y_hi, stroke=colour, width=1.3)
        + s.line(x - cap, y_lo, x + cap, y_lo, stroke=colour, width=1.3)
        + s.line(x - cap, y_hi, x + cap, y_hi, stroke=colour, width=1.3)
    )


def _hbar(x_lo: float, x_hi: float, y: float, colour: str, cap: float = 4.0) -> str:
    """A horizontal error bar with caps."""
    return (
        s.line(x_lo, y, x_hi, y, stroke=colour, width=2.0)
        + s.line(x_lo, y - cap, x_lo, y + cap, stroke=colour, width=1.3)
        + s.line(x_hi, y - cap, x_hi, y + cap, stroke=colour, width=1.3)
    )


def _arrow(x_from: float, x_to: float, y: float, colour: str) -> str:
    """A horizontal arrow (an open-ended bound)."""
    head = 6.0 if x_to > x_from else -6.0
    return s.line(x_from, y, x_to - head, y, stroke=colour, width=2.0) + s.polygon(
        [(x_to, y), (x_to - head, y - 4), (x_to - head, y + 4)], fill=colour
    )


def _legend(
    items: Sequence[tuple[Callable[[float, float], str], str]],
    x: float,
    y: float,
    width: float,
    size: float = 10,
) -> tuple[str, float]:
    """Legend entries (a swatch drawn centred at a point, and its label) flowing left to right
    from ``(x, y)``, wrapped at ``width``; returns the SVG and its height."""
    parts = []
    cx, cy = x, y + 8
    for swatch, label in items:
        w = 30 + s.text_width(label, size) + 18
        if cx > x and cx + w > x + width:
            cx, cy = x, cy + 18
        parts.append(
            swatch(cx + 12, cy) + s.text(cx + 28, cy + size / 3, label, size=size, fill="#333333")
        )
        cx += w
    return s.group("".join(parts), class_="legend"), cy - y + 12


def _line_swatch(
    colour: str,
    shape: str | None = None,
    *,
    dash: str | None = None,
    hollow: bool = False,
    width: float = 2.0,
) -> Callable[[float, float], str]:
    def draw(x: float, y: float) -> str:
        out = s.line(x - 11, y, x + 11, y, stroke=colour, width=width, dash=dash)
        return out + (_marker(shape, x, y, colour, hollow=hollow) if shape else "")

    return draw


def _box_swatch(colour: str) -> Callable[[float, float], str]:
    return lambda x, y: s.rect(x - 6, y - 6, 12, 12, fill=colour)


# -- headline -----------------------------------------------------------------------------------


def headline(profile: RunProfile) -> str | None:
    """D50 (with its interval, a bound or a bracket), leakage resistance and, when measured,
    agent-prediction skill S: one row per agent, one panel per figure, points coloured by
    role. An INVALID agent's name is red and its points hollow grey."""
    agents = profile.agents
    names = list(agents)
    if not names:
        return None
    has_skill = any(a.agent_prediction_skill.available for a in agents.values())
    labels = {n: f"{n} (INVALID)" if agents[n].valid is False else n for n in names}
    label_w = min(260.0, max(s.text_width(t, 11) for t in labels.values()) + 16)
    row_h, top, bottom = 26.0, 44.0, 58.0
    panel_w, gap = 300.0, 36.0
    panels = ["d50", "leakage"] + (["skill"] if has_skill else [])
    width = label_w + len(panels) * (panel_w + gap) + 10
    height = top + row_h * len(names) + bottom
    ys = {n: top + row_h * (i + 0.5) for i, n in enumerate(names)}
    body = []
    for n in names:
        invalid = agents[n].valid is False
        body.append(
            s.text(
                label_w - 10,
                ys[n] + 4,
                labels[n],
                anchor="end",
                fill=INVALID_COLOUR if invalid else "#222222",
                weight="bold" if invalid else None,
            )
        )
    deepest = max(
        [
            1.0,
            *(
                max(
                    (d for d in agents[n].d50.depths_tested if isinstance(d, int | float)),
                    default=1.0,
                )
                for n in names
            ),
        ]
    )
    x0 = label_w
    for key in panels:
        if key == "d50":
            scale = s.Scale(0.0, deepest + 1.0, x0, x0 + panel_w)
            body.append(
                _headline_axes(
                    scale,
                    names,
                    ys,
                    top,
                    "Recursion span D50",
                    "depth (bars: bootstrap 95%)",
                    s.nice_ticks(0, deepest + 1, 6),
                    lambda t: f"{t:g}",
                )
            )
            body += [_d50_mark(n, agents[n], scale, ys[n], deepest) for n in names]
        else:
            title = "Leakage resistance" if key == "leakage" else "Agent-prediction skill S"
            lo, hi = (0.0, 1.0) if key == "leakage" else (-0.5, 1.5)
            scale = s.Scale(lo, hi, x0, x0 + panel_w)
            body.append(
                _headline_axes(
                    scale,
                    names,
                    ys,
                    top,
                    title,
                    "95% interval",
                    s.nice_ticks(lo, hi, 5),
                    _pct if key == "leakage" else lambda t: f"{t:g}",
                )
            )
            body += [
                _point_mark(
                    n,
                    agents[n],
                    agents[n].leakage_resistance
                    if key == "leakage"
                    else agents[n].agent_prediction_skill,
                    scale,
                    ys[n],
                )
                for n in names
            ]
        x0 += panel_w + gap
    legend, _ = _legend(
        [
            (_line_swatch(c, "o"), role)
            for role, c in ROLE_COLOURS.items()
            if any(agents[n].role == role for n in names)
        ],
        label_w,
        height - 22,
        width - label_w,
    )
    body.append(legend)
    return s.document(
        width,
        height,
        "".join(body),
        id="fig-svg-headline",
        label="Headline: D50, leakage resistance"
        + (" and agent-prediction skill S" if has_skill else "")
        + " per agent",
    )


def _headline_axes(
    scale: s.Scale,
    names: Sequence[str],
    ys: Mapping[str, float],
    top: float,
    title: str,
    axis: str,
    ticks: Sequence[float],
    fmt: Callable[[float], str],
) -> str:
    bottom = top + 26.0 * len(names)
    return s.text(
        (scale.start + scale.end) / 2, top - 18, title, size=12, anchor="middle", weight="bold"
    ) + s.x_axis(scale, bottom, ticks, fmt, grid_to=top, label=axis)


def _colour(a: AgentProfile) -> str:
    return INVALID_CURVE if a.valid is False else ROLE_COLOURS.get(a.role, "#444444")


def _d50_mark(name: str, a: AgentProfile, scale: s.Scale, y: float, deepest: float) -> str:
    d = a.d50
    st = d.status
    c = _colour(a)
    hollow = a.valid is False
    tip = f"{name}: D50 {d50_text(d)}"
    if st == "estimated" and math.isfinite(_num(d.value)):
        v = _num(d.value)
        ends = _ends(d.ci)
        out = ""
        if ends is not None:
            lo, hi = ends
            left = scale.clamped(lo if math.isfinite(lo) else 0.0)
            right = scale.clamped(hi if math.isfinite(hi) else deepest + 1)
            out += _hbar(left, right, y, c)
        out += _marker("o", scale.clamped(v), y, c, hollow=hollow, r=4.5)
        out += s.text(scale.clamped(v), y - 8, f"{v:.2f}", size=9, anchor="middle", fill="#333333")
        return s.group(out, title=tip, data_agent=name)
    if st in ("beyond", "below"):
        bound = _num(d.lower_bound if st == "beyond" else d.upper_bound)
        bound = deepest if st == "beyond" and math.isnan(bound) else bound
        bound = 0.0 if math.isnan(bound) else bound
        x = scale.clamped(bound)
        end = scale.end - 2 if st == "beyond" else scale.start + 2
        sign = ">" if st == "beyond" else "<"
        return s.group(
            _arrow(x, end, y, c)
            + s.text(x, y - 7, f"{sign} {bound:g}", size=9, anchor="middle", fill="#333333"),
            title=tip,
            data_agent=name,
        )
    if st == "bracketed":
        lo, hi = _num(d.lower_bound), _num(d.upper_bound)
        if math.isfinite(lo) and math.isfinite(hi):
            return s.group(
                s.rect(
                    scale.clamped(lo),
                    y - 6,
                    scale.clamped(hi) - scale.clamped(lo),
                    12,
                    fill=c,
                    fill_opacity=0.45,
                )
                + s.text(
                    (scale.clamped(lo) + scale.clamped(hi)) / 2,
                    y - 8,
                    f"{lo:g}–{hi:g}",
                    size=9,
                    anchor="middle",
                    fill="#333333",
                ),
                title=tip,
                data_agent=name,
            )
    return s.group(
        s.text(scale.start + 6, y + 4, "not estimable", size=10, fill="#666666"),
        title=tip,
        data_agent=name,
    )


def _point_mark(name: str, a: AgentProfile, d: Estimate | Skill, scale: s.Scale, y: float) -> str:
    """Leakage resistance (a proportion, an :class:`Estimate`) or skill S (a :class:`Skill`)."""
    v = _num(d.value)
    c = _colour(a)
    if isinstance(d, Estimate):
        tip = f"{name}: leakage resistance {proportion_text(d)}"
    else:
        ends0 = _ends(d.ci)
        tip = (
            f"{name}: S {v:.2f}" + (f" [{ends0[0]:.2f}, {ends0[1]:.2f}]" if ends0 else "")
            if math.isfinite(v)
            else f"{name}: S not measured ({d.reason})"
        )
    if math.isnan(v):
        return s.group(
            s.text(scale.start + 6, y + 4, "n/a", size=10, fill="#666666"),
            title=tip,
            data_agent=name,
        )
    out = ""
    ends = _ends(d.ci) if d.status != "not_estimable" else None
    if ends is not None and all(math.isfinite(e) for e in ends):
        out += _hbar(scale.clamped(ends[0]), scale.clamped(ends[1]), y, c)
    out += _marker("o", scale.clamped(v), y, c, hollow=a.valid is False or ends is None, r=4.5)
    return s.group(out, title=tip, data_agent=name)


# -- accuracy by depth ----------------------------------------------------------------------


def _panels(agents: Mapping[str, AgentProfile]) -> list[tuple[str, list[str]]]:
    """``(subject, its controls)`` per panel: every agent under test (role agent, ablation or
    any role that is not a control or a reference) with the controls whose ``base_agent`` is
    the agent or the agent's own base; controls no such panel shows get a panel of their own;
    with no agent under test at all, one panel per reference."""
    controls = [n for n, a in agents.items() if a.role == "control"]
    subjects = [n for n, a in agents.items() if a.role not in ("control", "reference")]
    panels: list[tuple[str, list[str]]] = []
    shown: set[str] = set()
    for sub in subjects:
        bases = {sub, agents[sub].base_agent} - {None}
        mine = [c for c in controls if agents[c].base_agent in bases]
        shown.update(mine)
        panels.append((sub, mine))
    panels += [(c, []) for c in controls if c not in shown]
    if not panels:
        panels = [(n, []) for n, a in agents.items() if a.role == "reference"]
    return panels


def _depth_points(
    cells: Mapping[str, Estimate], xpos: Mapping[str, float]
) -> list[tuple[str, float, float, float, float, Estimate]]:
    """The cells of one curve (an agent's accuracy by depth, false or true belief) in depth
    order: ``(label, x, value, lo, hi, cell)``; labels at depth 0 (the reality check) are not
    part of it; a cell without an interval has nan ends."""
    out = []
    for lab, c in cells.items():
        if lab not in xpos or c.value is None:
            continue
        ends = _ends(c.ci) if c.status != "not_estimable" else None
        lo, hi = ends if ends is not None else (math.nan, math.nan)
        out.append((lab, xpos[lab], _num(c.value), lo, hi, c))
    return sorted(out, key=lambda t: t[1])


@dataclass(frozen=True)
class _Style:
    """How :func:`_curve` draws a series: its colour, the marker ``shape`` (None: none, or a
    small dot where there are no interval bars either), the line's ``width`` and ``dash``,
    ``hollow`` markers, each point's interval as a bar (``bars``), and the ``opacity``."""

    colour: str
    shape: str | None = None
    width: float = 1.0
    dash: str | None = None
    hollow: bool = False
    bars: bool = True
    opacity: float | None = None


def _curve(
    series: str,
    pts: Sequence[tuple[str, float, float, float, float, Estimate]],
    xs: s.Scale,
    ys: s.Scale,
    style: _Style,
    *,
    who: str = "",
    dx: float = 0.0,
) -> str:
    """One series: a line through its points, a marker with hover text per point and, when
    ``style.bars``, each point's interval; shifted ``dx`` to the right."""
    if not pts:
        return ""
    colour = style.colour
    coords = [(xs(x) + dx, ys(v)) for _, x, v, _, _, _ in pts]
    body = (
        s.polyline(coords, stroke=colour, width=style.width, dash=style.dash)
        if len(coords) > 1
        else ""
    )
    for (lab, _, _, lo, hi, cell), (px, py) in zip(pts, coords, strict=True):
        mark = ""
        if style.bars and math.isfinite(lo) and math.isfinite(hi):
            mark += _vbar(px, ys.clamped(lo), ys.clamped(hi), colour)
        if style.shape:
            mark += _marker(style.shape, px, py, colour, hollow=style.hollow)
        elif not style.bars:
            mark += s.circle(px, py, 2.0, fill=colour)
        body += s.group(mark, title=f"{who} {lab}: {proportion_text(cell)}", class_="point")
    return s.group(body, data_series=series, opacity=style.opacity)


def _guide(kind: str, xs: s.Scale, y: float, colour: str, dash: str) -> str:
    return s.group(
        s.line(xs.start, y, xs.end, y, stroke=colour, width=1.0, dash=dash), data_guide=kind
    )


def _depth_panel(
    agents: Mapping[str, AgentProfile],
    name: str,
    controls: Sequence[str],
    references: Sequence[str],
    xpos: Mapping[str, float],
    ticks: Sequence[str],
    ox: float,
    oy: float,
) -> str:
    """One agent's panel of :func:`depth_curves`, its top left corner at ``(ox, oy)``."""
    a = agents[name]
    left, top = ox + 44, oy + 38
    xs = s.Scale(-0.5, len(ticks) - 0.5, left, left + PANEL_W - 56)
    ys = s.Scale(-0.03, 1.05, oy + PANEL_H - 36, top)
    invalid = a.valid is False
    parts = [
        s.y_axis(ys, xs.start, [0, 0.25, 0.5, 0.75, 1.0], _pct, grid_to=xs.end, label="accuracy")
    ]
    axis_y = ys.start
    parts.append(s.line(xs.start, axis_y, xs.end, axis_y, stroke="#555555"))
    for i, t in enumerate(ticks):
        x = xs(float(i))
        parts.append(s.line(x, axis_y, x, axis_y + 4, stroke="#555555"))
        parts.append(
            s.text(
                x, axis_y + 15, "R0" if t == R0_TICK else t, size=9, anchor="middle", fill="#555555"
            )
        )
    if R0_TICK in ticks:
        parts.append(
            s.text(xs(0.0), axis_y + 26, "reality", size=8, anchor="middle", fill="#555555")
        )
        divider = xs(0.5)
        parts.append(
            s.group(
                s.line(divider, ys.end, divider, ys.start, stroke="#444444", width=0.8),
                data_guide="r0-divider",
            )
        )
    for kind, value, colour, dash in (
        ("chance", a.d50.chance, "#999999", "2 3"),
        ("halfway", a.d50.halfway, "#999999", "6 3"),
        ("validity", TRUE_BELIEF_THRESHOLD, INVALID_COLOUR, "1 3"),
    ):
        if isinstance(value, int | float):
            parts.append(_guide(kind, xs, ys(float(value)), colour, dash))
    for ref in references:
        if ref != name:
            parts.append(
                _curve(
                    f"reference:{ref}",
                    _depth_points(agents[ref].accuracy_by_depth.false, xpos),
                    xs,
                    ys,
                    _Style(REFERENCE_COLOUR, width=0.9, bars=False, opacity=0.45),
                    who=ref,
                )
            )
    for i, c in enumerate(controls):
        colour = CONTROL_COLOURS[i % len(CONTROL_COLOURS)]
        parts.append(
            _curve(
                f"control:{c}",
                _depth_points(agents[c].accuracy_by_depth.false, xpos),
                xs,
                ys,
                _Style(colour, shape="s", width=1.6, dash="5 3"),
                who=f"{c} false belief",
                dx=3.0,
            )
        )
        parts.append(_reality(agents[c], c, xs, ys, colour, "s", dx=3.0))
    parts.append(
        _curve(
            f"true:{name}",
            _depth_points(a.accuracy_by_depth.true, xpos),
            xs,
            ys,
            _Style(AGENT_COLOUR, shape="^", width=1.0, dash="1 2", hollow=True, bars=False),
            who=f"{name} true belief",
        )
    )
    parts.append(
        _curve(
            f"false:{name}",
            _depth_points(a.accuracy_by_depth.false, xpos),
            xs,
            ys,
            _Style(
                INVALID_CURVE if invalid else AGENT_COLOUR,
                shape="o",
                width=1.2 if invalid else 2.2,
                dash="5 3" if invalid else None,
                hollow=invalid,
            ),
            who=f"{name} false belief",
            dx=-3.0,
        )
    )
    parts.append(_reality(a, name, xs, ys, AGENT_COLOUR, "D", dx=-3.0))
    role = a.role or "agent"
    vs = ", ".join(f"{c} (INVALID)" if agents[c].valid is False else c for c in controls)
    title = f"{name} (INVALID)" if invalid else name
    parts.append(
        s.text(
            (xs.start + xs.end) / 2,
            oy + 14,
            title,
            size=12,
            anchor="middle",
            fill=INVALID_COLOUR if invalid else "#222222",
            weight="bold",
            class_="panel-title",
        )
    )
    parts.append(
        s.text(
            (xs.start + xs.end) / 2,
            oy + 27,
            role + (f" · control: {vs}" if controls else ""),
            size=9,
            anchor="middle",
            fill="#555555",
        )
    )
    return s.group("".join(parts), class_="panel", data_agent=name)


R0_TICK = "R0 reality"
PANEL_W = 330.0
PANEL_H = 262.0


def _reality(
    a: AgentProfile, name: str, xs: s.Scale, ys: s.Scale, colour: str, shape: str, dx: float
) -> str:
    """The R0 reality check of ``name``, a point apart left of the divider."""
    rc = a.reality_check
    v = _num(rc.value)
    if math.isnan(v):
        return ""
    return _curve(
        f"reality:{name}",
        [("R0", 0.0, v, *(_ends(rc.ci) or (math.nan, math.nan)), rc)],
        xs,
        ys,
        _Style(colour, shape=shape, width=1.0),
        who=f"{name} reality check",
        dx=dx,
    )


def depth_curves(profile: RunProfile) -> str | None:
    """Accuracy by depth as small multiples (None: nothing to draw).

    One panel per agent under test (:func:`_panels`), on a shared 0–1 accuracy axis: its
    false-belief curve (solid blue circles, the 95% interval stored with each point; an
    INVALID agent's dashed grey and hollow, and its title says INVALID), its true-belief curve
    (dotted, hollow triangles, no intervals), its control's false-belief curve (dashed orange
    squares, intervals) and every reference faint in grey (no intervals) for orientation;
    the agent's chance and D50 halfway lines and the 90% validity threshold. R0, the reality
    check, is a point apart, left of a divider, never on the false-belief curve."""
    agents = profile.agents
    labels: set[str] = set()
    for a in agents.values():
        labels |= set(a.accuracy_by_depth.false) | set(a.accuracy_by_depth.true)
    order = sorted((lab for lab in labels if depth_label_number(lab) != 0), key=depth_sort_key)
    if not order:
        return None
    has_r0 = any(math.isfinite(_num(a.reality_check.value)) for a in agents.values())
    ticks = ([R0_TICK] if has_r0 else []) + order
    xpos = {lab: float(ticks.index(lab)) for lab in order}
    panels = _panels(agents)
    references = [n for n, a in agents.items() if a.role == "reference"]
    ncols = max(1, min(MAX_COLUMNS, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    width = ncols * PANEL_W + 20
    head = 30.0
    body = []
    for i, (name, controls) in enumerate(panels):
        ox = 10 + (i % ncols) * PANEL_W
        oy = head + (i // ncols) * PANEL_H
        body.append(_depth_panel(agents, name, controls, references, xpos, ticks, ox, oy))
    key: list[tuple[Callable[[float, float], str], str]] = [
        (_line_swatch(AGENT_COLOUR, "o", width=2.2), "false belief (95% interval)")
    ]
    if any(agents[n].valid is False for n, _ in panels):
        key.append(
            (
                _line_swatch(INVALID_CURVE, "o", dash="5 3", hollow=True),
                "false belief of an INVALID agent",
            )
        )
    key.append((_line_swatch(AGENT_COLOUR, "^", dash="1 2", hollow=True, width=1.0), "true belief"))
    if any(c for _, c in panels):
        key.append(
            (
                _line_swatch(CONTROL_COLOURS[0], "s", dash="5 3", width=1.6),
                "its control, false belief (95% interval)",
            )
        )
    if has_r0:
        key.append(
            (
                lambda x, y: _marker("D", x, y, AGENT_COLOUR),
                "R0 reality check (not a false-belief item)",
            )
        )
    if references:
        key.append(
            (
                _line_swatch(REFERENCE_COLOUR, width=0.9),
                "references, faint: " + ", ".join(references),
            )
        )
    key += [
        (_line_swatch("#999999", dash="2 3", width=1.0), "chance"),
        (_line_swatch("#999999", dash="6 3", width=1.0), "halfway (D50)"),
        (
            _line_swatch(INVALID_COLOUR, dash="1 3", width=1.0),
            "90% validity threshold (true belief, R0)",
        ),
    ]
    legend_y = head + nrows * PANEL_H + 4
    legend, legend_h = _legend(key, 20, legend_y, width - 30)
    body.append(legend)
    who = (
        "one panel per agent under test"
        if any(agents[sub].role != "reference" for sub, _ in panels)
        else "one panel per reference (no agent under test in this run)"
    )
    title = f"Accuracy by depth, {who}"
    body.insert(0, s.text(width / 2, 18, title, size=13, anchor="middle", weight="bold"))
    return s.document(
        width, legend_y + legend_h + 6, "".join(body), id="fig-svg-depth-curves", label=title
    )


# -- error types ------------------------------------------------------------------------------


def _error_group(code: str) -> str:
    if code.startswith("truncation"):
        return "truncation"
    return code if code in ERROR_COLOURS else "other"


def error_types(profile: RunProfile, max_agents: int = 4) -> str | None:
    """Stacked shares of false-belief answers by depth: correct, reality leak, projection,
    truncation, other; one panel per agent (at most ``max_agents``, in the profile's order).
    Counts, no interval: each segment's hover text gives its count of the cell's n."""
    cells_of = {
        n: a.error_types_by_depth.false
        for n, a in profile.agents.items()
        if a.error_types_by_depth is not None and a.error_types_by_depth.false
    }
    names = list(cells_of)
    if not names:
        return None
    names = names[:max_agents]
    panel_w, top, plot_h = 260.0, 46.0, 170.0
    width = 60 + panel_w * len(names) + 10
    ys = s.Scale(0.0, 1.0, top + plot_h, top)
    body = [
        s.text(
            width / 2,
            18,
            "Error types by depth (false-belief items; counts, no interval)",
            size=13,
            anchor="middle",
            weight="bold",
        )
    ]
    for k, n in enumerate(names):
        cells = cells_of[n]
        order = sorted(cells, key=depth_sort_key)
        x0 = 60 + k * panel_w
        xs = s.Scale(-0.5, len(order) - 0.5, x0 + 4, x0 + panel_w - 52)
        parts = [
            s.y_axis(
                ys, x0, [0, 0.25, 0.5, 0.75, 1.0], _pct, label="share of items" if k == 0 else None
            )
        ]
        bw = 0.7 * (xs.end - xs.start) / max(len(order), 1)
        for i, lab in enumerate(order):
            c = cells[lab]
            total = c.n or 0
            bottom = 0.0
            for grp, colour in ERROR_COLOURS.items():
                if grp == "correct":
                    cnt = total - c.n_wrong
                else:
                    cnt = sum(v for code, v in c.counts.items() if _error_group(code) == grp)
                if not total or not cnt:
                    continue
                share = cnt / total
                y_hi, y_lo = ys(bottom + share), ys(bottom)
                parts.append(
                    s.group(
                        s.rect(xs(float(i)) - bw / 2, y_hi, bw, y_lo - y_hi, fill=colour),
                        title=f"{n} {lab}: {grp.replace('_', ' ')} {cnt} of {total} "
                        f"({100 * share:.1f}%)",
                        data_group=grp,
                    )
                )
                bottom += share
            parts.append(
                s.text(xs(float(i)), ys.start + 14, lab, size=9, anchor="middle", fill="#555555")
            )
        parts.append(s.line(xs.start, ys.start, xs.end, ys.start, stroke="#555555"))
        parts.append(
            s.text(
                (xs.start + xs.end) / 2,
                top - 10,
                n,
                size=11,
                anchor="middle",
                weight="bold",
                class_="panel-title",
            )
        )
        body.append(s.group("".join(parts), class_="panel", data_agent=n))
    legend, legend_h = _legend(
        [(_box_swatch(c), g.replace("_", " ")) for g, c in ERROR_COLOURS.items()],
        60,
        top + plot_h + 26,
        width - 70,
    )
    body.append(legend)
    return s.document(
        width,
        top + plot_h + 26 + legend_h + 4,
        "".join(body),
        id="fig-svg-error-types",
        label="Error types by depth",
    )


# -- reliability ------------------------------------------------------------------------------


def reliability(profile: RunProfile) -> str | None:
    """The reliability diagram as small multiples (None: no agent stated confidence): one
    panel per agent with calibration, accuracy against stated confidence per bin (Wilson 95%
    per bin) beside the diagonal of perfect calibration, ECE in the panel."""
    calibrated = {
        n: a.calibration
        for n, a in profile.agents.items()
        if a.calibration is not None and a.calibration.available and a.calibration.reliability
    }
    names = list(calibrated)
    if not names:
        return None
    pw, ph = 240.0, 220.0
    ncols = min(RELIABILITY_COLUMNS, len(names))
    nrows = math.ceil(len(names) / ncols)
    width = ncols * pw + 20
    head = 30.0
    body = [
        s.text(
            width / 2,
            18,
            "Reliability diagram, one panel per agent (dashed: perfect calibration)",
            size=13,
            anchor="middle",
            weight="bold",
        )
    ]
    for i, n in enumerate(names):
        ox, oy = 10 + (i % ncols) * pw, head + (i // ncols) * ph
        xs = s.Scale(0.0, 1.0, ox + 52, ox + pw - 14)
        ys = s.Scale(0.0, 1.02, oy + ph - 46, oy + 22)
        cal = calibrated[n]
        parts = [
            s.y_axis(
                ys,
                xs.start,
                [0, 0.5, 1.0],
                lambda t: f"{t:g}",
                grid_to=xs.end,
                label="accuracy (Wilson 95%)" if i % ncols == 0 else None,
                size=9,
            ),
            s.x_axis(
                xs, ys.start, [0, 0.5, 1.0], lambda t: f"{t:g}", label="stated confidence", size=9
            ),
            s.group(
                s.line(xs(0), ys(0), xs(1), ys(1), stroke="#999999", dash="5 3"),
                data_guide="perfect",
            ),
        ]
        pts = []
        for b in cal.reliability or []:
            conf, acc = _num(b.confidence), _num(b.accuracy)
            if math.isnan(conf) or math.isnan(acc):
                continue
            lo, hi = _ends(b.ci) or (math.nan, math.nan)
            pts.append(
                (f"confidence {conf:.2f}", conf, acc, lo, hi, Estimate(value=acc, ci=b.ci, n=b.n))
            )
        parts.append(
            _curve(
                f"calibration:{n}", pts, xs, ys, _Style(AGENT_COLOUR, shape="o", width=1.5), who=n
            )
        )
        e = cal.ece or Estimate()
        ece = _num(e.value)
        parts.append(
            s.text(
                xs.start + 6,
                ys.end + 12,
                f"ECE {ece:.3f} (n={e.n})" if math.isfinite(ece) else "ECE n/a",
                size=9,
                fill="#333333",
            )
        )
        parts.append(
            s.text(
                (xs.start + xs.end) / 2,
                oy + 12,
                n,
                size=11,
                anchor="middle",
                weight="bold",
                class_="panel-title",
            )
        )
        body.append(s.group("".join(parts), class_="panel", data_agent=n))
    return s.document(
        width,
        head + nrows * ph + 4,
        "".join(body),
        id="fig-svg-reliability",
        label="Reliability diagram, one panel per agent",
    )


FIGURES: tuple[tuple[str, str, Callable[[RunProfile], str | None]], ...] = (
    ("headline", "Headline: D50, leakage resistance and agent-prediction skill", headline),
    (
        "depth_curves",
        "Accuracy by depth, one panel per agent under test: its control and the references",
        depth_curves,
    ),
    ("error_types", "Error types by depth (false-belief items)", error_types),
    ("reliability", "Reliability diagram, one panel per agent", reliability),
)
"""The profile-wide figures, in report order: ``(key, caption, function)``. The contrasts are
drawn per agent, as forest plots (:mod:`reports._forest`)."""


def figures(profile: RunProfile) -> list[tuple[str, str, str]]:
    """Every profile-wide figure the profile supports, as ``(key, caption, svg text)``."""
    out = []
    for key, caption, fn in FIGURES:
        svg = fn(profile)
        if svg is not None:
            out.append((key, caption, svg))
    return out
