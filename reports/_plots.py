"""The profile's figures as PNG bytes (matplotlib's object API; no pyplot global state).

Each function takes a profile dict (:func:`reports.profile.build_profile`) and returns PNG
bytes, or None when the run has nothing to draw for that figure. Error bars are the interval
each figure's caption names (the one stored with the number in the profile).

Figures that would otherwise overlay every agent on one set of axes are small multiples, one
panel per agent on a grid at most :data:`MAX_COLUMNS` wide with a shared y axis; their
``*_figure`` functions return the matplotlib Figure before PNG encoding (for tests and for
callers that want another format).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from reports._data import depth_label_number, depth_sort_key
from reports.profile import TRUE_BELIEF_THRESHOLD

__all__ = [
    "FIGURES",
    "contrast_bars",
    "depth_curves",
    "depth_curves_figure",
    "error_types",
    "figures",
    "headline",
    "reliability",
    "reliability_figure",
]

ERROR_COLOURS = {
    "correct": "#4c9a5a",
    "reality_leak": "#d1495b",
    "projection": "#edae49",
    "truncation": "#00798c",
    "other": "#8e7dbe",
    "uncoded": "#bbbbbb",
}
DPI = 100
LAYOUT: Literal["constrained", "compressed", "tight"] | None = "constrained"


def _fig(w: float, h: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI, layout=LAYOUT)
    return fig


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _colours(names: list[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {n: cmap(i % 10) for i, n in enumerate(names)}


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else math.nan


def headline(profile: Mapping[str, Any]) -> bytes | None:
    """D50 (with interval or bound), leakage resistance and, when measured, agent-prediction
    skill S, one row per agent."""
    agents = profile.get("agents", {})
    names = [n for n, a in agents.items() if a.get("d50")]
    if not names:
        return None
    has_skill = any((a.get("agent_prediction_skill") or {}).get("available") for a in
                    agents.values())
    ncols = 3 if has_skill else 2
    fig = _fig(4.2 * ncols, 0.55 * len(names) + 1.6)
    axes = fig.subplots(1, ncols, sharey=True)
    cols = _colours(names)
    ys = list(range(len(names)))[::-1]
    ax = axes[0]
    deepest = 0.0
    for n in names:
        deepest = max([deepest, *(agents[n]["d50"].get("depths_tested") or [0])])
    for y, n in zip(ys, names, strict=True):
        d = agents[n]["d50"]
        st = d.get("status")
        c = cols[n]
        if st == "estimated":
            v = d["value"]
            ci = d.get("ci") or [None, None]
            lo = ci[0] if ci[0] is not None else 0
            hi = ci[1] if ci[1] is not None else deepest + 0.5
            ax.plot([lo, hi], [y, y], color=c, lw=2)
            ax.plot([v], [y], "o", color=c, ms=8)
            ax.annotate(f"{v:.2f}", (v, y), xytext=(0, 7), textcoords="offset points",
                        ha="center", fontsize=8)
        elif st == "beyond":
            b = d.get("lower_bound") or deepest
            ax.annotate("", xy=(b + 0.6, y), xytext=(b, y),
                        arrowprops={"arrowstyle": "->", "color": c, "lw": 2})
            ax.text(b, y + 0.18, f"> {b:g}", fontsize=8, ha="center")
        elif st == "below":
            b = d.get("upper_bound") or 0
            ax.annotate("", xy=(b - 0.6, y), xytext=(b, y),
                        arrowprops={"arrowstyle": "->", "color": c, "lw": 2})
            ax.text(b, y + 0.18, f"< {b:g}", fontsize=8, ha="center")
        elif st == "bracketed":
            lo, hi = d.get("lower_bound"), d.get("upper_bound")
            ax.fill_betweenx([y - 0.2, y + 0.2], lo, hi, color=c, alpha=0.45)
            ax.text((lo + hi) / 2, y + 0.25, f"{lo:g}–{hi:g}", fontsize=8, ha="center")
        else:
            ax.text(0.1, y, "not estimable", fontsize=8, va="center", color="#666")
    ax.set_xlim(-0.2, deepest + 1.0)
    ax.set_yticks(ys, [f"{n} (INVALID)" if agents[n].get("valid") is False else n
                       for n in names])
    for tick, n in zip(ax.get_yticklabels(), names, strict=True):
        if agents[n].get("valid") is False:
            tick.set_color("#d1495b")
            tick.set_fontweight("bold")
    ax.set_xlabel("D50 (depth); bar = bootstrap 95%")
    ax.set_title("Recursion span D50")
    ax.grid(axis="x", alpha=0.3)
    ax = axes[1]
    for y, n in zip(ys, names, strict=True):
        lr = agents[n].get("leakage_resistance") or {}
        v = _num(lr.get("value"))
        if math.isnan(v):
            ax.text(0.02, y, "n/a", fontsize=8, va="center", color="#666")
            continue
        ci = lr.get("ci") or [v, v]
        ax.barh(y, v, color=cols[n], alpha=0.8, height=0.6)
        ax.errorbar(v, y, xerr=[[max(v - ci[0], 0)], [max(ci[1] - v, 0)]], color="black",
                    capsize=3, lw=1)
        ax.text(min(v + 0.02, 0.9), y - 0.3, f"n={lr.get('n')}", fontsize=7)
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("1 − (leak + projection) / FB items; 95%")
    ax.set_title("Leakage resistance")
    ax.grid(axis="x", alpha=0.3)
    if has_skill:
        ax = axes[2]
        for y, n in zip(ys, names, strict=True):
            s = agents[n].get("agent_prediction_skill") or {}
            v = _num(s.get("value"))
            if not math.isnan(v):
                ax.barh(y, v, color=cols[n], alpha=0.8, height=0.6)
        ax.set_title("Agent-prediction skill S")
        ax.set_xlim(-0.1, 1.05)
    return _png(fig)


AGENT_COLOUR = "#1f77b4"  # tab10 blue: the agent under test, in every panel
CONTROL_COLOURS = ("#ff7f0e", "#9467bd", "#8c564b")  # its control(s)
INVALID_RED = "#d1495b"
AGENT_STYLE: dict[str, Any] = {"color": AGENT_COLOUR, "lw": 2.2, "ls": "-", "marker": "o",
                               "ms": 4.5}
INVALID_STYLE: dict[str, Any] = {"color": "#8c8c8c", "lw": 1.2, "ls": "--", "marker": "o",
                                 "ms": 4.5, "mfc": "none"}
TRUE_BELIEF_STYLE: dict[str, Any] = {"color": AGENT_COLOUR, "lw": 1.0, "ls": ":",
                                     "marker": "^", "ms": 3, "mfc": "none", "zorder": 2}
REFERENCE_STYLE: dict[str, Any] = {"color": "#7f7f7f", "lw": 0.9, "alpha": 0.35, "zorder": 1}
GUIDE_STYLES: dict[str, dict[str, Any]] = {
    "chance": {"color": "#999", "ls": ":", "lw": 0.8},
    "halfway": {"color": "#999", "ls": "--", "lw": 0.8},
    "validity": {"color": INVALID_RED, "ls": (0, (1, 3)), "lw": 0.7, "alpha": 0.6},
}
MAX_COLUMNS = 3
RELIABILITY_COLUMNS = 4


def _grid(n: int, panel_w: float, panel_h: float, extra_h: float,
          max_columns: int = MAX_COLUMNS) -> tuple[Any, list[Any]]:
    """A figure with ``n`` panels on a grid at most ``max_columns`` wide (shared y), the
    unused cells removed; returns the figure and the panels in reading order."""
    ncols = max(1, min(max_columns, n))
    nrows = math.ceil(n / ncols)
    fig = _fig(panel_w * ncols + 0.6, panel_h * nrows + extra_h)
    grid = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
    cells = [ax for row in grid for ax in row]
    for ax in cells[n:]:
        ax.remove()
    return fig, cells[:n]


def _depth_points(agent: Mapping[str, Any], belief: str, xpos: Mapping[str, float]
                  ) -> tuple[list[float], list[float], list[float], list[float]]:
    """x, value and the interval's lower/upper extents of one curve (labels at depth 0, the
    reality check, are not part of it; a cell without an interval gets no bar)."""
    cells = (agent.get("accuracy_by_depth") or {}).get(belief) or {}
    pts = sorted(((xpos[lab], c) for lab, c in cells.items()
                  if lab in xpos and isinstance(c, Mapping) and c.get("value") is not None),
                 key=lambda t: t[0])
    xs, vs, lo, hi = [], [], [], []
    for x, c in pts:
        v = _num(c["value"])
        ci = c.get("ci") or (v, v)
        xs.append(x)
        vs.append(v)
        lo.append(max(v - _num(ci[0]), 0.0) if math.isfinite(_num(ci[0])) else 0.0)
        hi.append(max(_num(ci[1]) - v, 0.0) if math.isfinite(_num(ci[1])) else 0.0)
    return xs, vs, lo, hi


def _reality_point(agent: Mapping[str, Any]) -> tuple[float, float, float] | None:
    rc = agent.get("reality_check") or {}
    v = _num(rc.get("value"))
    if math.isnan(v):
        return None
    ci = rc.get("ci") or (v, v)
    lo, hi = _num(ci[0]), _num(ci[1])
    return (v, max(v - lo, 0.0) if math.isfinite(lo) else 0.0,
            max(hi - v, 0.0) if math.isfinite(hi) else 0.0)


def _panels(agents: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """``(subject, its controls)`` per panel: every agent under test (role agent, ablation or
    any role that is not a control or a reference) with the controls whose ``base_agent`` is
    the agent or the agent's own base; controls no such panel shows get a panel of their own;
    with no agent under test at all, one panel per reference."""
    controls = [n for n, a in agents.items() if a.get("role") == "control"]
    subjects = [n for n, a in agents.items() if a.get("role") not in ("control", "reference")]
    panels: list[tuple[str, list[str]]] = []
    shown: set[str] = set()
    for s in subjects:
        bases = {s, agents[s].get("base_agent")} - {None}
        mine = [c for c in controls if agents[c].get("base_agent") in bases]
        shown.update(mine)
        panels.append((s, mine))
    panels += [(c, []) for c in controls if c not in shown]
    if not panels:
        panels = [(n, []) for n, a in agents.items() if a.get("role") == "reference"]
    return panels


def _depth_panel(ax: Any, agents: Mapping[str, Mapping[str, Any]], name: str,
                 controls: Sequence[str], references: Sequence[str],
                 xpos: Mapping[str, float]) -> None:
    """One agent's panel of :func:`depth_curves_figure`. Every data line carries a gid:
    ``false:``, ``true:``, ``control:``, ``reference:`` or ``reality:`` (the R0 point) and the
    agent's name; the horizontal and vertical guides ``guide:…``."""
    a = agents[name]
    for ref in references:
        xs, vs, _, _ = _depth_points(agents[ref], "false", xpos)
        if ref != name and xs:
            ax.plot(xs, vs, gid=f"reference:{ref}", **REFERENCE_STYLE)
    for i, c in enumerate(controls):
        colour = CONTROL_COLOURS[i % len(CONTROL_COLOURS)]
        xs, vs, lo, hi = _depth_points(agents[c], "false", xpos)
        if xs:
            bars = ax.errorbar([x + 0.08 for x in xs], vs, yerr=[lo, hi], color=colour,
                               lw=1.6, ls="--", marker="s", ms=4, capsize=2, zorder=3)
            bars.lines[0].set_gid(f"control:{c}")
        r0 = _reality_point(agents[c])
        if r0 is not None:
            bars = ax.errorbar([0.08], [r0[0]], yerr=[[r0[1]], [r0[2]]], color=colour,
                               marker="s", ms=4, capsize=2, zorder=3)
            bars.lines[0].set_gid(f"reality:{c}")
    invalid = a.get("valid") is False
    xs, vs, _, _ = _depth_points(a, "true", xpos)
    if xs:
        ax.plot(xs, vs, gid=f"true:{name}", **TRUE_BELIEF_STYLE)
    xs, vs, lo, hi = _depth_points(a, "false", xpos)
    if xs:
        bars = ax.errorbar([x - 0.08 for x in xs], vs, yerr=[lo, hi], capsize=2, zorder=4,
                           **(INVALID_STYLE if invalid else AGENT_STYLE))
        bars.lines[0].set_gid(f"false:{name}")
    r0 = _reality_point(a)
    if r0 is not None:
        bars = ax.errorbar([-0.08], [r0[0]], yerr=[[r0[1]], [r0[2]]], color=AGENT_COLOUR,
                           marker="D", ms=4.5, capsize=2, zorder=4)
        bars.lines[0].set_gid(f"reality:{name}")
    d50 = a.get("d50") or {}
    if d50.get("chance") is not None:
        ax.axhline(d50["chance"], gid="guide:chance", **GUIDE_STYLES["chance"])
    if d50.get("halfway") is not None:
        ax.axhline(d50["halfway"], gid="guide:halfway", **GUIDE_STYLES["halfway"])
    ax.axhline(TRUE_BELIEF_THRESHOLD, gid="guide:validity", **GUIDE_STYLES["validity"])
    ax.set_title(f"{name} (INVALID)" if invalid else name, fontsize=10, pad=11,
                 color=INVALID_RED if invalid else "black",
                 fontweight="bold" if invalid else "normal")
    role = a.get("role") or "agent"
    vs_controls = ", ".join(f"{c} (INVALID)" if agents[c].get("valid") is False else c
                            for c in controls)
    ax.text(0.5, 1.01, f"{role}" + (f" · control: {vs_controls}" if controls else ""),
            transform=ax.transAxes, ha="center", va="bottom", fontsize=7, color="#555")


def depth_curves_figure(profile: Mapping[str, Any]) -> Any:
    """The accuracy-by-depth small multiples as a matplotlib Figure (None: nothing to draw).

    One panel per agent under test (:func:`_panels`), on a shared 0–1 accuracy axis: its
    false-belief curve (solid blue, the 95% interval stored with each point; an INVALID
    agent's dashed grey, and its title says INVALID), its true-belief curve (dotted, no
    intervals), its control's false-belief curve (dashed orange, intervals) and every
    reference faint in grey (no intervals) for orientation; the agent's chance and D50
    halfway lines and the 90% validity threshold. R0, the reality check, is a point apart,
    left of a divider, never on the false-belief curve."""
    agents: Mapping[str, Mapping[str, Any]] = profile.get("agents", {})
    labels: set[str] = set()
    for a in agents.values():
        for belief in ("false", "true"):
            labels |= set((a.get("accuracy_by_depth") or {}).get(belief) or {})
    order = sorted((lab for lab in labels if depth_label_number(lab) != 0), key=depth_sort_key)
    if not order:
        return None
    has_r0 = any(_reality_point(a) is not None for a in agents.values())
    ticks = (["R0\nreality"] if has_r0 else []) + order
    xpos = {lab: float(ticks.index(lab)) for lab in order}
    panels = _panels(agents)
    references = [n for n, a in agents.items() if a.get("role") == "reference"]
    fig, axes = _grid(len(panels), 4.0, 3.0, 1.1)
    for ax, (name, controls) in zip(axes, panels, strict=True):
        _depth_panel(ax, agents, name, controls, references, xpos)
        if has_r0:
            ax.axvline(0.5, color="#444", lw=0.8, gid="guide:r0-divider")
        ax.set_xticks([float(i) for i in range(len(ticks))], ticks, fontsize=7)
        ax.set_xlim(-0.5, len(ticks) - 0.5)
        ax.set_ylim(-0.03, 1.05)
        ax.grid(alpha=0.25, lw=0.5)
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("accuracy")
    from matplotlib.lines import Line2D

    key = [Line2D([], [], **AGENT_STYLE, label="false-belief (95% interval)")]
    if any(agents[n].get("valid") is False for n, _ in panels):
        key.append(Line2D([], [], **INVALID_STYLE, label="false-belief of an INVALID agent"))
    key.append(Line2D([], [], **TRUE_BELIEF_STYLE, label="true-belief"))
    if any(c for _, c in panels):
        key.append(Line2D([], [], color=CONTROL_COLOURS[0], lw=1.6, ls="--", marker="s",
                          ms=4, label="its control, false-belief (95% interval)"))
    if has_r0:
        key.append(Line2D([], [], color=AGENT_COLOUR, ls="none", marker="D", ms=4.5,
                          label="R0 reality check (not a false-belief item)"))
    if references:
        key.append(Line2D([], [], **REFERENCE_STYLE,
                          label="references, faint: " + ", ".join(references)))
    key += [Line2D([], [], **GUIDE_STYLES[g], label=label) for g, label in (
        ("chance", "chance"), ("halfway", "halfway (D50)"),
        ("validity", "90% validity threshold (true belief, R0)"))]
    fig.legend(handles=key, loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    who = ("one panel per agent under test" if any(agents[s].get("role") != "reference"
                                                  for s, _ in panels)
           else "one panel per reference (no agent under test in this run)")
    fig.suptitle(f"Accuracy by depth, {who}", fontsize=10)
    return fig


def depth_curves(profile: Mapping[str, Any]) -> bytes | None:
    """:func:`depth_curves_figure` as PNG bytes."""
    fig = depth_curves_figure(profile)
    return None if fig is None else _png(fig)


def _error_group(code: str) -> str:
    if code.startswith("truncation"):
        return "truncation"
    return code if code in ERROR_COLOURS else "other"


def error_types(profile: Mapping[str, Any], max_agents: int = 4) -> bytes | None:
    """Stacked shares of false-belief answers by depth: correct, reality leak, projection,
    truncation, other; one panel per agent (agents under test and controls first)."""
    agents = profile.get("agents", {})
    names = [n for n, a in agents.items() if (a.get("error_types_by_depth") or {}).get("false")]
    if not names:
        return None
    names = names[:max_agents]
    fig = _fig(3.4 * len(names) + 1.6, 3.8)
    axes = fig.subplots(1, len(names), sharey=True, squeeze=False)[0]
    for ax, n in zip(axes, names, strict=True):
        cells = agents[n]["error_types_by_depth"]["false"]
        order = sorted(cells, key=depth_sort_key)
        bottoms = [0.0] * len(order)
        for group in ERROR_COLOURS:
            vals = []
            for lab in order:
                c = cells[lab]
                if group == "correct":
                    vals.append((c["n"] - c["n_wrong"]) / c["n"])
                else:
                    cnt = sum(v for k, v in c["counts"].items() if _error_group(k) == group)
                    vals.append(cnt / c["n"])
            ax.bar(range(len(order)), vals, bottom=bottoms, color=ERROR_COLOURS[group],
                   label=group.replace("_", " "))
            bottoms = [b + v for b, v in zip(bottoms, vals, strict=True)]
        ax.set_xticks(range(len(order)), order, rotation=45, fontsize=8)
        ax.set_title(f"{n}", fontsize=10)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share of false-belief items (counts, no interval)")
    axes[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)


def reliability_figure(profile: Mapping[str, Any]) -> Any:
    """The reliability diagram as small multiples (None: no agent stated confidence): one
    panel per agent with calibration, accuracy against stated confidence per bin (Wilson 95%
    per bin) beside the diagonal of perfect calibration, ECE in the panel's title."""
    agents = profile.get("agents", {})
    names = [n for n, a in agents.items()
             if (a.get("calibration") or {}).get("available")
             and (a["calibration"].get("reliability") or [])]
    if not names:
        return None
    fig, axes = _grid(len(names), 2.8, 2.6, 0.5, max_columns=RELIABILITY_COLUMNS)
    ncols = min(RELIABILITY_COLUMNS, len(names))
    for i, (ax, n) in enumerate(zip(axes, names, strict=True)):
        cal = agents[n]["calibration"]
        bins = cal["reliability"]
        xs = [_num(b.get("confidence")) for b in bins]
        ys = [_num(b.get("accuracy")) for b in bins]
        cis = [b.get("ci") or (y, y) for b, y in zip(bins, ys, strict=True)]
        lo = [max(y - _num(c[0]), 0.0) if math.isfinite(_num(c[0])) else 0.0
              for y, c in zip(ys, cis, strict=True)]
        hi = [max(_num(c[1]) - y, 0.0) if math.isfinite(_num(c[1])) else 0.0
              for y, c in zip(ys, cis, strict=True)]
        ax.plot([0, 1], [0, 1], color="#999", ls="--", lw=1, gid="guide:perfect")
        bars = ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=4, color=AGENT_COLOUR,
                           capsize=2, lw=1.5)
        bars.lines[0].set_gid(f"calibration:{n}")
        e = cal.get("ece") or {}
        ece = _num(e.get("value"))
        ax.set_title(n, fontsize=9)
        ax.text(0.03, 0.97, f"ECE {ece:.3f} (n={e.get('n')})" if math.isfinite(ece) else
                "ECE n/a", transform=ax.transAxes, ha="left", va="top", fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3, lw=0.5)
        ax.tick_params(labelsize=7)
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("accuracy (Wilson 95%)", fontsize=8)
        if i + ncols >= len(names):  # no panel below
            ax.set_xlabel("stated confidence", fontsize=8)
    fig.suptitle("Reliability diagram, one panel per agent (dashed: perfect calibration)",
                 fontsize=10)
    return fig


def reliability(profile: Mapping[str, Any]) -> bytes | None:
    """:func:`reliability_figure` as PNG bytes."""
    fig = reliability_figure(profile)
    return None if fig is None else _png(fig)


CONTRAST_METRICS = (
    ("false_belief_accuracy", "FB accuracy"),
    ("leakage_resistance", "leakage resistance"),
    ("applied_gap", "applied-ToM gap"),
    ("games_accuracy", "games accuracy"),
    ("abc_dissociation", "A/B/C dissociation"),
    ("log_score_c", "log score (C)"),
)


def contrast_bars(profile: Mapping[str, Any]) -> bytes | None:
    """Base-model subtraction (agent − control) and ablation credit (full − ablated) with their
    paired 95% intervals (each metric's own method); proportions left, D50 (depth units)
    right. Contrasts without an interval (too few items) are left out."""
    rows: list[tuple[str, float, float, float]] = []
    d50_rows: list[tuple[str, float, float, float]] = []
    for name, a in profile.get("agents", {}).items():
        blocks: list[tuple[str, Mapping[str, Any]]] = []
        mc = a.get("minus_control") or {}
        if mc.get("available"):
            blocks.append((f"{name} − control", mc["metrics"]))
        for module, blk in (a.get("ablation_credit") or {}).items():
            blocks.append((f"{name}: {module}", blk["metrics"]))
        for label, metrics in blocks:
            for key, short in CONTRAST_METRICS:
                d = metrics.get(key) or {}
                if d.get("difference") is None or not d.get("ci"):
                    continue
                lo, hi = d["ci"]
                rows.append((f"{label} · {short}", float(d["difference"]), _num(lo), _num(hi)))
            d = metrics.get("d50") or {}
            if d.get("difference") is not None and d.get("ci"):
                lo, hi = d["ci"]
                d50_rows.append((label, float(d["difference"]), _num(lo), _num(hi)))
    if not rows and not d50_rows:
        return None
    h = 0.32 * max(len(rows), len(d50_rows), 3) + 1.6
    fig = _fig(12, h)
    axes = fig.subplots(1, 2, width_ratios=[3, 2])
    for ax, data, title in ((axes[0], rows, "Differences in proportions / scores"),
                            (axes[1], d50_rows, "D50 difference (depth levels)")):
        ys = list(range(len(data)))[::-1]
        for y, r in zip(ys, data, strict=True):
            v, lo, hi = r[1], r[2], r[3]
            colour = "#4c9a5a" if v >= 0 else "#d1495b"
            ax.barh(y, v, color=colour, alpha=0.75, height=0.6)
            if not (math.isnan(lo) or math.isnan(hi)):
                ax.errorbar(v, y, xerr=[[max(v - lo, 0)], [max(hi - v, 0)]], color="black",
                            capsize=3, lw=1)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(ys, [r[0] for r in data], fontsize=7)
        ax.set_title(title + "\n(bars: paired 95% intervals)", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    return _png(fig)


FIGURES = (
    ("headline", "Headline: D50, leakage resistance and agent-prediction skill", headline),
    ("depth_curves", "Accuracy by depth, one panel per agent under test: its control and the "
     "references", depth_curves),
    ("error_types", "Error types by depth (false-belief items)", error_types),
    ("reliability", "Reliability diagram, one panel per agent", reliability),
    ("contrasts", "Base-model subtraction and ablation credit", contrast_bars),
)


def figures(profile: Mapping[str, Any]) -> list[tuple[str, str, bytes]]:
    """Every figure the profile supports, as ``(key, caption, png bytes)``."""
    out = []
    for key, caption, fn in FIGURES:
        png = fn(profile)
        if png is not None:
            out.append((key, caption, png))
    return out
