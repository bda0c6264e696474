"""An agent's history for people: a table per figure with a sparkline, and an HTML trend report
with one plot per figure (self-contained: the plots are embedded as base64 PNG, as in
:func:`reports.render.render_html`).

    render_history_text(history) -> str        # mindledger history AGENT
    render_history_html(history) -> str        # mindledger history AGENT --html FILE
    history_figure(metric_history) -> Figure | None ; sparkline(values) -> str

Pure: the history (:mod:`reports.history`) comes in, text or HTML goes out.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

from reports.history import AgentHistory, HistoryPoint, MetricHistory
from reports.self_forecast_render import history_forecast_html, history_forecast_text

__all__ = [
    "FLAG",
    "HELD_OUT",
    "flagged_line",
    "history_figure",
    "history_png",
    "render_history_html",
    "render_history_text",
    "sparkline",
    "verdict",
]

BARS = "▁▂▃▄▅▆▇█"
FLAG = "▼ REGRESSION"
HELD_OUT = "held-out"


def sparkline(values: Sequence[float | None], flagged: Sequence[bool] = ()) -> str:
    """One character per value, ``▁`` (lowest) to ``█`` (highest), ``▼`` for a flagged value
    (``flagged[i]``) and ``·`` where there is no value."""
    nums = [v for v in values if v is not None]
    if not nums:
        return "·" * len(values)
    lo, hi = min(nums), max(nums)
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append("·")
        elif i < len(flagged) and flagged[i]:
            out.append("▼")
        elif hi == lo:
            out.append(BARS[len(BARS) // 2])
        else:
            out.append(BARS[round((v - lo) / (hi - lo) * (len(BARS) - 1))])
    return "".join(out)


def verdict(p: HistoryPoint) -> str:
    """What the rule made of one run's figure: flagged with its reason, ok with its p, or why
    it was not tested."""
    if p.flagged:
        return f"{FLAG}: {p.reason}"
    if p.tested:
        return f"ok (p = {p.p:.2g})" if p.p is not None else "ok"
    return p.reason or ""


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return out


def failed_runs(history: AgentHistory) -> list[str]:
    """What is said once above the figures rather than in every cell: a line for each run on
    which every one of the agent's trials failed (not "not estimable" under every figure) or
    more than half of them did (what its figures rest on), and
    that figures printed without an interval rest on too few items (not "(no interval: n <
    10)" after each)."""
    lines = [f"{r.id}: {r.failed or r.mostly_failed}." for r in history.runs
             if r.failed or r.mostly_failed]  # fmt: skip
    return [*lines, history.small_n] if history.small_n else lines


def render_history_text(history: AgentHistory) -> str:
    """Which runs are flagged (or none), then a table per figure (run, created, held out, the
    figure as the profile words it, the verdict), headed by a sparkline of its values over the
    runs (``▼`` a flagged run)."""
    n = len(history.runs)
    lines = [f"History of {history.agent}: {n} run{'' if n == 1 else 's'}"]
    if not history.runs:
        lines += [f"Rule: {history.rule.describe()}.",
                  "No finished run has this agent as the agent under test."]  # fmt: skip
        return "\n".join(lines) + "\n"
    lines += [flagged_line(history), f"Rule: {history.rule.describe()}."]
    lines += failed_runs(history)
    for m in history.metrics:
        flags = [p.flagged for p in m.points]
        n_flag = sum(flags)
        lines += ["", f"{m.title}  {sparkline(m.values(), flags)}"
                  + (f"  ({n_flag} flagged)" if n_flag else "")]
        rows = [[p.run_id, (p.created_at or "")[:16].replace("T", " "),
                 "yes" if p.held_out else "", p.text, verdict(p)] for p in m.points]
        lines += _table(["run", "created (UTC)", HELD_OUT, "value", "verdict"], rows)
    lines += history_forecast_text(history)
    return "\n".join(lines) + "\n"


def flagged_line(history: AgentHistory) -> str:
    """The history's verdict, said first: ``No run flagged.``, or which figure of which run."""
    flagged = history.regressions()
    if not flagged:
        return "No run flagged."
    return f"{len(flagged)} flagged: " + "; ".join(
        f"{r.metric.key} on {r.point.run_id}" for r in flagged
    )


def history_figure(mh: MetricHistory) -> Any:
    """One figure's trend: its value per run with its 95% interval, held-out runs filled and
    others hollow, flagged runs in red, each tested run's baseline as a dash. None when no run
    has a value."""
    pts = [(i, p) for i, p in enumerate(mh.points) if p.value is not None]
    if not pts:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 2.6), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    scale = 100.0 if mh.metric.percent else 1.0
    xs = [i for i, _ in pts]
    ys = [scale * (p.value or 0.0) for _, p in pts]
    ax.plot(xs, ys, color="#888888", linewidth=1, zorder=1)
    for i, p in pts:
        y = scale * (p.value or 0.0)
        colour = "#d1495b" if p.flagged else "#00798c"
        if p.ci is not None and p.ci[0] is not None and p.ci[1] is not None:
            ax.errorbar([i], [y], yerr=[[y - scale * p.ci[0]], [scale * p.ci[1] - y]],
                        color=colour, capsize=3, linewidth=1, zorder=2)
        ax.scatter([i], [y], s=36, zorder=3, edgecolors=colour,
                   facecolors=colour if p.held_out else "white",
                   marker="v" if p.flagged else "o")
        if p.tested and p.baseline is not None:
            ax.plot([i - 0.3, i + 0.3], [scale * p.baseline] * 2, color="#edae49", linewidth=2,
                    zorder=1)
    ax.set_xticks(range(len(mh.points)))
    ax.set_xticklabels([(p.created_at or p.run_id)[5:10] if p.created_at else str(k + 1)
                        for k, p in enumerate(mh.points)], fontsize=7, rotation=45)
    ax.set_ylabel(mh.title + (" (%)" if mh.metric.percent else ""), fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def history_png(mh: MetricHistory) -> bytes | None:
    fig = history_figure(mh)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1180px;color:#222;line-height:1.45;padding:0 1rem}
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.86rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}tr.flagged td{background:#fdecea}.legend{color:#555;font-size:.85rem}
img{max-width:100%;border:1px solid #eee}
"""


def render_history_html(history: AgentHistory) -> str:
    """The trend report: the rule, then per figure its plot and its table."""
    h = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>mindledger history — {h(history.agent)}</title><style>{_CSS}</style></head>"
        "<body>",
        f"<h1>History of {h(history.agent)}</h1>",
        f"<p>{len(history.runs)} runs. Rule: {h(history.rule.describe())}.</p>",
        "<p class='legend'>Filled markers: held-out (nightly) runs; hollow: others. Red ▼: "
        "flagged regression. Orange dash: the pooled previous level a run was tested against. "
        "Bars: 95% intervals.</p>",
    ]
    parts += [f"<p>{h(line)}</p>" for line in failed_runs(history)]
    flagged = history.regressions()
    if flagged:
        parts.append("<p><strong>Flagged:</strong> " + "; ".join(
            h(f"{r.metric.title} on {r.point.run_id}") for r in flagged) + "</p>")
    elif history.runs:
        parts.append("<p><strong>No run flagged.</strong></p>")
    for m in history.metrics:
        parts.append(f"<h2 id='{h(m.key)}'>{h(m.title)}</h2>")
        png = history_png(m)
        if png is not None:
            b64 = base64.b64encode(png).decode("ascii")
            parts.append(f"<figure><img alt='{h(m.title)} over runs' "
                         f"src='data:image/png;base64,{b64}'></figure>")
        else:
            parts.append("<p>No run has a value for this figure.</p>")
        rows = []
        for p in m.points:
            cls = " class='flagged'" if p.flagged else ""
            cells = [p.run_id, p.created_at or "", "yes" if p.held_out else "", p.text,
                     verdict(p)]
            rows.append(f"<tr{cls}>" + "".join(f"<td>{h(c)}</td>" for c in cells) + "</tr>")
        parts.append("<table><tr><th>run</th><th>created (UTC)</th><th>held-out</th>"
                     "<th>value</th><th>verdict</th></tr>" + "".join(rows) + "</table>")
    parts.append(history_forecast_html(history))
    parts.append("</body></html>\n")
    return "\n".join(parts)
