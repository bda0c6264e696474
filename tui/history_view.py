"""An agent's history as the dashboard shows it: one line per headline figure with a sparkline
over the agent's runs and its flagged regressions, one row per run of the chosen figure, and
one row per self-forecast (its 50% and 90% bands beside the outcome, confidently wrong ones
marked).
Pure functions from :class:`reports.history.AgentHistory` (the same history
``mindledger history`` prints). No Textual, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reports.history import AgentHistory, HistoryPoint, MetricHistory
from reports.present import MISSING
from tui.state import fmt_time

__all__ = [
    "FORECAST_COLUMNS",
    "HISTORY_COLUMNS",
    "POINT_COLUMNS",
    "SPARK_BLOCKS",
    "HistoryView",
    "MetricLine",
    "history_view",
    "sparkline",
]

HISTORY_COLUMNS = ("Figure", "Over runs (oldest → newest)", "Latest", "Lowest", "Highest",
                   "Flagged")  # fmt: skip
POINT_COLUMNS = ("Run", "Created", "Suite", "Seeds", "Figure", "Recent level", "p", "Verdict")
FORECAST_COLUMNS = ("Run", "Forecast of", "50% band", "90% band", "Median", "Outcome", "Result")
SPARK_BLOCKS = "▁▂▃▄▅▆▇█"
NO_VALUE = "·"
VERDICT_WIDTH = 60
FIGURE_WIDTH = 26
"""The widest a figure's cell may be (a D50 bound says why at length: the line above the
runs table shows the latest in full)."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def sparkline(values: Sequence[float | None]) -> str:
    """One block per value, scaled from the lowest to the highest (a flat series sits in the
    middle); :data:`NO_VALUE` where a run has no value."""
    known = [v for v in values if v is not None]
    if not known:
        return NO_VALUE * len(values)
    lo, hi = min(known), max(known)
    top = len(SPARK_BLOCKS) - 1
    out = []
    for v in values:
        if v is None:
            out.append(NO_VALUE)
        elif hi == lo:
            out.append(SPARK_BLOCKS[top // 2])
        else:
            out.append(SPARK_BLOCKS[round((v - lo) / (hi - lo) * top)])
    return "".join(out)


def _verdict(p: HistoryPoint) -> str:
    if p.flagged:
        return f"REGRESSION: {p.reason or ''}".rstrip(": ")
    if p.tested:
        return p.reason or "within noise"
    return f"not tested: {p.reason}" if p.reason else "not tested"


@dataclass(frozen=True)
class MetricLine:
    """One figure over the runs: its summary cells (HISTORY_COLUMNS order), which positions of
    the sparkline are flagged and which runs were held out, and one row per run (newest
    first, POINT_COLUMNS order) with the verdict in full for the detail line."""

    key: str
    cells: tuple[str, ...]
    flagged_at: tuple[int, ...]
    held_out_at: tuple[int, ...]
    points: tuple[tuple[str, ...], ...]
    point_flagged: tuple[bool, ...]
    verdicts: tuple[str, ...]


@dataclass(frozen=True)
class HistoryView:
    """The history screen: ``forecasts`` one row per self-forecast (FORECAST_COLUMNS order,
    newest run first), ``forecast_wrong`` whether each was confidently wrong (the outcome
    outside its 90% interval)."""

    title: str
    notes: tuple[str, ...]
    lines: tuple[MetricLine, ...]
    forecasts: tuple[tuple[str, ...], ...] = ()
    forecast_wrong: tuple[bool, ...] = ()


def _line(m: MetricHistory) -> MetricLine:
    values = m.values()
    known = [v for v in values if v is not None]
    pts = list(m.points)
    latest = next((p for p in reversed(pts) if p.value is not None or p.text), None)
    flagged = [p for p in pts if p.flagged]
    flagged_text = (f"{len(flagged)}: " + ", ".join(p.run_id for p in flagged)) if flagged else "0"
    rows = []
    verdicts = []
    for p in reversed(pts):
        verdict = _verdict(p)
        verdicts.append(f"{p.run_id} · {m.title}: {p.text or MISSING} — {verdict}")
        rows.append((
            p.run_id,
            fmt_time(p.created_at)[:16],
            p.suite or MISSING,
            "held-out" if p.held_out else "dev",
            _cut(p.text or m.metric.format(p.value), FIGURE_WIDTH),
            m.metric.format(p.baseline) if p.baseline is not None else MISSING,
            MISSING if p.p is None else f"{p.p:.2g}",
            _cut(verdict, VERDICT_WIDTH),
        ))
    return MetricLine(
        m.key,
        (
            m.title,
            sparkline(values),
            MISSING if latest is None
            else _cut(latest.text or m.metric.format(latest.value), FIGURE_WIDTH),
            m.metric.format(min(known)) if known else MISSING,
            m.metric.format(max(known)) if known else MISSING,
            flagged_text,
        ),
        tuple(i for i, p in enumerate(pts) if p.flagged),
        tuple(i for i, p in enumerate(pts) if p.held_out),
        tuple(rows),
        tuple(p.flagged for p in reversed(pts)),
        tuple(verdicts),
    )


def history_view(history: AgentHistory) -> HistoryView:
    """The history of one agent: a title with its runs (how many held out), the rule, and a
    line per figure."""
    runs = history.runs
    held = sum(1 for r in runs if r.held_out)
    flagged = history.regressions()
    title = (f"History of {history.agent} · {len(runs)} runs ({held} held-out) · "
             f"{len(flagged)} flagged figure{'s' if len(flagged) != 1 else ''}")
    notes = [f"Rule: {history.rule.describe()}."]
    if runs:
        notes.append(f"From {runs[0].id} ({fmt_time(runs[0].created_at)[:16]}) to {runs[-1].id} "
                     f"({fmt_time(runs[-1].created_at)[:16]}); sparklines are oldest → newest, "
                     "red where flagged, underlined where the run was held out.")
    else:
        notes.append(f"No finished run has {history.agent} as the agent under test.")
    from reports.history_render import failed_runs
    from reports.self_forecast_render import WRONG, mark

    notes += failed_runs(history)  # said once here, not in every figure's line

    order = {r.id: i for i, r in enumerate(runs)}
    # newest run first; a run's forecasts in the order they were committed
    forecasts = sorted(history.forecasts, key=lambda f: -order.get(f.run, -1))
    wrong = [f.confidently_wrong for f in forecasts]
    if forecasts:
        notes.append(f"Self-forecasts: {len(forecasts)}, {sum(wrong)} {WRONG} (outcome outside "
                     "the 90% interval, in red).")

    def band(ci: tuple[float | None, float | None] | None) -> str:
        if ci is None or ci[0] is None or ci[1] is None:
            return MISSING
        return f"[{ci[0]:.3g}, {ci[1]:.3g}]"

    def num(v: float | None) -> str:
        return MISSING if v is None else f"{v:.3g}"

    rows = tuple((f.run, f.figure, band(f.interval_50), band(f.interval_90), num(f.median),
                  num(f.outcome), _cut(mark(f), VERDICT_WIDTH)) for f in forecasts)
    return HistoryView(title, tuple(notes), tuple(_line(m) for m in history.metrics), rows,
                       tuple(wrong))
