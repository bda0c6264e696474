"""The profile's figures as PNG bytes (matplotlib's object API; no pyplot global state).

Each function takes a profile dict (:func:`reports.profile.build_profile`) and returns PNG
bytes, or None when the run has nothing to draw for that figure. Error bars are the interval
each figure's caption names (the one stored with the number in the profile).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any, Literal

from reports.data import depth_sort_key

__all__ = [
    "FIGURES",
    "contrast_bars",
    "depth_curves",
    "error_types",
    "figures",
    "headline",
    "reliability",
]

ROLE_STYLE = {
    "agent": {"lw": 2.6, "ls": "-", "marker": "o"},
    "control": {"lw": 2.0, "ls": "--", "marker": "s"},
    "ablation": {"lw": 1.4, "ls": "-.", "marker": "^"},
    "reference": {"lw": 1.2, "ls": ":", "marker": "d"},
}
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


def depth_curves(profile: Mapping[str, Any]) -> bytes | None:
    """False-belief (left) and true-belief (right) accuracy by depth for every agent, with the
    interval stored with each point, chance and the D50 halfway line."""
    agents = profile.get("agents", {})
    labels: set[str] = set()
    for a in agents.values():
        for belief in ("false", "true"):
            labels |= set((a.get("accuracy_by_depth") or {}).get(belief, {}))
    if not labels:
        return None
    order = sorted(labels, key=depth_sort_key)
    xpos = {lab: i for i, lab in enumerate(order)}
    fig = _fig(12, 4.8)
    axes = fig.subplots(1, 2, sharey=True)
    cols = _colours(list(agents))
    for ax, belief, title in ((axes[0], "false", "False-belief accuracy"),
                              (axes[1], "true", "True-belief controls")):
        for ai, (name, a) in enumerate(agents.items()):
            cells = (a.get("accuracy_by_depth") or {}).get(belief, {})
            pts = [(xpos[lab], c) for lab, c in cells.items() if c.get("value") is not None]
            if not pts:
                continue
            pts.sort(key=lambda t: t[0])
            xs = [p[0] + (ai - (len(agents) - 1) / 2) * 0.03 for p in pts]
            vs = [p[1]["value"] for p in pts]
            # a cell with no interval (too few items) is drawn without an error bar
            lo = [max(p[1]["value"] - p[1]["ci"][0], 0) if p[1].get("ci") else 0 for p in pts]
            hi = [max(p[1]["ci"][1] - p[1]["value"], 0) if p[1].get("ci") else 0 for p in pts]
            st = ROLE_STYLE.get(a.get("role", ""), ROLE_STYLE["reference"])
            label = f"{name} ({a.get('role')})" + (" INVALID" if a.get("valid") is False else "")
            ax.errorbar(xs, vs, yerr=[lo, hi], color=cols[name], lw=st["lw"], ls=st["ls"],
                        marker=st["marker"], capsize=2, label=label, ms=5)
        if belief == "false":
            d50s = [a.get("d50") or {} for a in agents.values()]
            chance = next((d.get("chance") for d in d50s if d.get("chance") is not None), None)
            half = next((d.get("halfway") for d in d50s if d.get("halfway") is not None), None)
            if chance is not None:
                ax.axhline(chance, color="#999", ls=":", lw=1)
                ax.text(len(order) - 0.6, chance + 0.01, "chance", fontsize=8, color="#666",
                        ha="right")
            if half is not None:
                ax.axhline(half, color="#999", ls="--", lw=1)
                ax.text(len(order) - 0.6, half + 0.01, "halfway (D50)", fontsize=8,
                        color="#666", ha="right")
        ax.axhline(0.9 if belief == "true" else -1, color="#d1495b", ls="--", lw=1)
        ax.set_xticks(range(len(order)), order)
        ax.set_ylim(-0.03, 1.05)
        ax.set_xlabel("depth")
        ax.set_title(title + " (95% interval shown per point)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    axes[1].text(0, 0.91, "90% validity threshold", fontsize=8, color="#d1495b")
    axes[0].legend(fontsize=7, loc="lower left")
    return _png(fig)


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


def reliability(profile: Mapping[str, Any]) -> bytes | None:
    """Reliability diagram: accuracy against stated confidence per bin, per agent (Wilson 95%
    per bin), with ECE in the legend."""
    agents = profile.get("agents", {})
    names = [n for n, a in agents.items() if (a.get("calibration") or {}).get("available")]
    if not names:
        return None
    fig = _fig(5.6, 5.0)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="#999", ls="--", lw=1, label="perfect calibration")
    cols = _colours(list(agents))
    for n in names:
        cal = agents[n]["calibration"]
        bins = cal.get("reliability") or []
        if not bins:
            continue
        xs = [b["confidence"] for b in bins]
        ys = [b["accuracy"] for b in bins]
        lo = [max(b["accuracy"] - b["ci"][0], 0) for b in bins]
        hi = [max(b["ci"][1] - b["accuracy"], 0) for b in bins]
        e = cal["ece"]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", color=cols[n], capsize=2, lw=1.5,
                    label=f"{n}: ECE {e['value']:.3f} (n={e['n']})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("accuracy (Wilson 95% per bin)")
    ax.set_title("Reliability diagram")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    return _png(fig)


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
    ("depth_curves", "Accuracy by depth: agent, control and references", depth_curves),
    ("error_types", "Error types by depth (false-belief items)", error_types),
    ("reliability", "Reliability diagram", reliability),
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
