"""The self-forecast section (:mod:`reports.self_forecast`) for people: Markdown lines for an
agent's section of the report (the HTML report converts them as it does the rest of the
section), one CSV row per forecast, the lines the dashboard shows, and the forecast bands of
``mindledger history`` (text and HTML).

    self_forecast_markdown(section) -> list[str]       # [] when the agent made no forecast
    self_forecast_text(section) -> list[str]           # the dashboard's lines
    render_self_forecast_csv(profile) -> str           # mindledger report --format forecasts-csv
    band_text(line) -> str ; mark(line) -> str
    history_forecast_text(history) -> list[str] ; history_forecast_html(history) -> str
    forecast_csv_rows(history) -> list[list]            # mindledger history --format csv

Pure: models in, text out.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from typing import Any

from reports.model import ForecastLine, ForecastSkill, RunProfile, SelfForecast

__all__ = [
    "CSV_COLUMNS",
    "WRONG",
    "band_text",
    "forecast_csv_rows",
    "history_forecast_html",
    "history_forecast_text",
    "mark",
    "render_self_forecast_csv",
    "self_forecast_markdown",
    "self_forecast_text",
]

WRONG = "✗ confidently wrong"
"""How a forecast whose outcome fell outside its 90% interval is marked."""

CSV_COLUMNS = (
    "run_id",
    "agent",
    "forecast_id",
    "forecast_run",
    "figure",
    "status",
    "held",
    "form",
    "rule",
    "median",
    "lo50",
    "hi50",
    "lo90",
    "hi90",
    "outcome",
    "loss",
    "naive_loss",
    "in_50",
    "in_90",
    "confidently_wrong",
    "this_run",
    "note",
)


def _g(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}g}"


def _interval(ci: Any, digits: int = 3) -> str:
    if ci is None or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"


def _pct(v: Any) -> str:
    return "—" if v is None else f"{100.0 * v:.0f}%"


def _pct_ci(ci: Any) -> str:
    if ci is None or ci[0] is None or ci[1] is None:
        return ""
    return f" [{100.0 * ci[0]:.0f}%, {100.0 * ci[1]:.0f}%]"


def band_text(line: ForecastLine) -> str:
    """The forecast's bands: ``50% [a, b] · 90% [c, d]`` (median when it states no band)."""
    if line.interval_50 is None and line.interval_90 is None:
        return f"median {_g(line.median)}" if line.median is not None else "—"
    return f"50% {_interval(line.interval_50)} · 90% {_interval(line.interval_90)}"


def mark(line: ForecastLine) -> str:
    """What became of the forecast, in a few words: its loss against the naive forecast's, or
    why it was not scored; :data:`WRONG` first when the outcome fell outside its 90%
    interval."""
    if line.status == "committed":
        return "not revealed"
    if line.status == "rejected":
        return "rejected: the reveal did not match the commitment"
    if line.status == "void":
        return f"void: {line.note}" if line.note else "void"
    words = [] if not line.confidently_wrong else [WRONG]
    if line.loss is not None:
        words.append(
            f"loss {_g(line.loss)}"
            + (
                f" vs naive {_g(line.naive_loss)}"
                if line.naive_loss is not None
                else " (no naive forecast)"
            )
        )
    return "; ".join(words) or "scored"


def _skill_text(s: ForecastSkill) -> str:
    if s.value is None:
        return f"— ({s.reason})" if s.reason else "—"
    text = f"{s.value:+.2f}"
    if s.ci is not None:
        text += f" {_interval(s.ci, 2)} run bootstrap"
    elif s.reason:
        text += f" (no interval: {s.reason})"
    return text


def _counts_text(sf: SelfForecast) -> str:
    c = sf.counts
    parts = [f"{c.scored} scored"]
    parts += [
        f"{n} {w}"
        for n, w in ((c.void, "void"), (c.rejected, "rejected"), (c.unrevealed, "unrevealed"))
        if n
    ]
    return (
        f"{c.committed} forecast{'' if c.committed == 1 else 's'} of {sf.runs} "
        f"run{'' if sf.runs == 1 else 's'} up to this one: " + ", ".join(parts)
    )


def _coverage_rows(sf: SelfForecast) -> list[list[str]]:
    rows = []
    for key in ("50", "90"):
        cov = sf.coverage.get(key)
        if cov is None:
            continue
        rows.append(
            [
                f"{key}% interval",
                _pct(cov.nominal),
                (_pct(cov.value) + _pct_ci(cov.ci))
                if cov.value is not None
                else f"— ({cov.reason})",
                f"{cov.k}/{cov.n}",
            ]
        )
    return rows


def _bias_text(sf: SelfForecast) -> str | None:
    b = sf.bias
    if b is None or not b.n:
        return None
    text = (
        f"Bias: {b.below_median}/{b.n} outcomes below the forecast's median "
        f"({_pct(b.share_below_median)}{_pct_ci(b.ci)}; 50% if unbiased, more when the "
        "agent expects more of itself)"
    )
    if b.by_figure:
        text += "; mean median − outcome: " + ", ".join(
            f"{name} {fb.mean_error:+.3g} (n={fb.n})"
            for name, fb in b.by_figure.items()
            if fb.mean_error is not None
        )
    return text + "."


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(c: str) -> str:
        return c.replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _line_row(x: ForecastLine, *, run: bool = False) -> list[str]:
    row = [x.run] if run else []
    return [
        *row,
        f"`{x.figure}`",
        _g(x.median),
        _interval(x.interval_50),
        _interval(x.interval_90),
        _g(x.outcome),
        mark(x),
    ]


def self_forecast_markdown(section: Any) -> list[str]:
    """The agent's self-forecast section as Markdown lines (a ``###`` heading, a sentence of
    counts, skill, coverage and bias, the run's forecasts and the confidently wrong ones); []
    when the agent made no forecast. ``section``: a :class:`SelfForecast` or its JSON."""
    if not section:
        return []
    sf = section if isinstance(section, SelfForecast) else SelfForecast.model_validate(section)
    out = ["### Self-forecasts", "", _counts_text(sf) + ".", ""]
    if sf.skill:
        out += [
            _table(
                ["rule", "skill vs naive [95%]", "forecasts", "runs"],
                [[rule, _skill_text(s), str(s.n), str(s.n_runs)] for rule, s in sf.skill.items()],
            ),
            "",
        ]
    rows = _coverage_rows(sf)
    if any(c.n for c in sf.coverage.values()):
        out += [_table(["coverage", "nominal", "observed [95% W]", "k/n"], rows), ""]
    bias = _bias_text(sf)
    if bias:
        out += [bias, ""]
    if sf.this_run:
        out += [
            "This run's forecasts:",
            "",
            _table(
                ["figure", "median", "50%", "90%", "outcome", "result"],
                [_line_row(x) for x in sf.this_run],
            ),
            "",
        ]
    if sf.confidently_wrong:
        out += [
            f"Confidently wrong (outcome outside the 90% interval): {len(sf.confidently_wrong)}.",
            "",
            _table(
                ["run", "figure", "median", "50%", "90%", "outcome", "result"],
                [_line_row(x, run=True) for x in sf.confidently_wrong],
            ),
            "",
        ]
    return out


def self_forecast_text(section: Any) -> list[str]:
    """The section in a few plain lines for the dashboard's agent panel ([] without
    forecasts)."""
    if not section:
        return []
    sf = section if isinstance(section, SelfForecast) else SelfForecast.model_validate(section)
    lines = ["Self-forecasts               " + _counts_text(sf)]
    for rule, s in sf.skill.items():
        lines.append(f"  skill vs naive ({rule})  {_skill_text(s)}")
    for key in ("50", "90"):
        cov = sf.coverage.get(key)
        if cov is not None and cov.n:
            lines.append(
                f"  {key}% coverage            {_pct(cov.value)}{_pct_ci(cov.ci)} "
                f"({cov.k}/{cov.n}; nominal {_pct(cov.nominal)})"
            )
    b = sf.bias
    if b is not None and b.n:
        lines.append(
            f"  below median              {_pct(b.share_below_median)}{_pct_ci(b.ci)} "
            f"({b.below_median}/{b.n}; 50% if unbiased)"
        )
    for x in sf.this_run:
        lines.append(f"  {x.figure}: {band_text(x)}, outcome {_g(x.outcome)} — {mark(x)}")
    wrong = [x for x in sf.confidently_wrong if x.run != sf.run]
    if wrong:
        lines.append(f"  {WRONG} before: " + ", ".join(f"{x.figure} on {x.run}" for x in wrong))
    return lines


def render_self_forecast_csv(profile: RunProfile) -> str:
    """One row per forecast a profile names (each agent's forecasts of this run, then the
    earlier confidently wrong ones): its bands, outcome and losses. Header only when no agent
    made a forecast."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)

    def num(v: Any) -> str:
        return "" if v is None else f"{v:.6g}"

    def flag(v: bool | None) -> str:
        return "" if v is None else str(int(v))

    for name, a in profile.agents.items():
        sf = a.self_forecast
        if sf is None:
            continue
        seen = set()
        for x in [*sf.this_run, *sf.confidently_wrong]:
            if x.id in seen:
                continue
            seen.add(x.id)
            i50 = x.interval_50 or (None, None)
            i90 = x.interval_90 or (None, None)
            w.writerow(
                [
                    profile.run.id,
                    name,
                    x.id,
                    x.run,
                    x.figure,
                    x.status,
                    int(x.held),
                    x.form or "",
                    x.rule or "",
                    num(x.median),
                    num(i50[0]),
                    num(i50[1]),
                    num(i90[0]),
                    num(i90[1]),
                    num(x.outcome),
                    num(x.loss),
                    num(x.naive_loss),
                    flag(x.in_50),
                    flag(x.in_90),
                    int(x.confidently_wrong),
                    int(x.run == profile.run.id),
                    x.note or "",
                ]
            )
    return buf.getvalue()


# -- history ----------------------------------------------------------------------------------


def _by_figure(forecasts: Sequence[ForecastLine]) -> dict[str, list[ForecastLine]]:
    out: dict[str, list[ForecastLine]] = {}
    for x in forecasts:
        out.setdefault(x.figure, []).append(x)
    return out


def history_forecast_text(history: Any) -> list[str]:
    """``mindledger history``'s self-forecast tables: per forecast figure, each run's 50% and
    90% band beside the outcome, confidently wrong runs marked; [] without forecasts.
    ``history``: a :class:`reports.history.AgentHistory`."""
    forecasts: Sequence[ForecastLine] = history.forecasts
    if not forecasts:
        return []
    wrong = [x for x in forecasts if x.confidently_wrong]
    out = [
        "",
        f"Self-forecasts: {len(forecasts)} of {len({x.run for x in forecasts})} runs"
        + (f", {len(wrong)} confidently wrong (outcome outside the 90% interval)" if wrong else ""),
    ]
    for name, xs in _by_figure(forecasts).items():
        rows = [[x.run, band_text(x), _g(x.median), _g(x.outcome), mark(x)] for x in xs]
        head = ["run", "forecast band", "median", "outcome", "result"]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        out += [
            "",
            f"forecast of {name}",
            "  ".join(h.ljust(wd) for h, wd in zip(head, widths, strict=True)).rstrip(),
            "  ".join("-" * wd for wd in widths),
        ]
        out += [
            "  ".join(c.ljust(wd) for c, wd in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
    return out


def forecast_csv_rows(history: Any) -> list[list[Any]]:
    """``mindledger history --format csv``'s rows for the self-forecasts, in its columns
    (metric, run_id, created_at, suite, held_out, value, ci_low, ci_high, n, k, text, tested,
    flagged, baseline, p, reason): metric ``forecast:<figure>``, value the outcome, ci the
    forecast's 90% interval, text both bands, flagged when confidently wrong, baseline the
    forecast's median, reason what became of it."""
    runs = {r.id: r for r in history.runs}
    out = []
    for x in history.forecasts:
        r = runs.get(x.run)
        lo, hi = x.interval_90 or (None, None)
        row = [
            f"forecast:{x.figure}",
            x.run,
            r.created_at if r else None,
            r.suite if r else None,
            r.held_out if r else None,
            x.outcome,
            lo,
            hi,
            None,
            None,
            band_text(x),
            x.status == "scored",
            x.confidently_wrong,
            x.median,
            None,
            mark(x),
        ]
        out.append(["" if v is None else v for v in row])
    return out


def history_forecast_html(history: Any) -> str:
    """The same tables for the HTML trend report (rows of confidently wrong runs flagged);
    "" without forecasts."""
    forecasts: Sequence[ForecastLine] = history.forecasts
    if not forecasts:
        return ""
    h = html.escape
    parts = [
        "<h2 id='self-forecasts'>Self-forecasts</h2>",
        "<p class='legend'>Each forecast's central 50% and 90% intervals beside the run's "
        "value of the figure; red rows: the outcome fell outside the 90% interval "
        f"({h(WRONG)}).</p>",
    ]
    for name, xs in _by_figure(forecasts).items():
        rows = []
        for x in xs:
            cls = " class='flagged'" if x.confidently_wrong else ""
            cells = [
                x.run,
                _interval(x.interval_50),
                _interval(x.interval_90),
                _g(x.median),
                _g(x.outcome),
                mark(x),
            ]
            rows.append(f"<tr{cls}>" + "".join(f"<td>{h(c)}</td>" for c in cells) + "</tr>")
        parts += [
            f"<h3>{h(name)}</h3>",
            "<table><tr><th>run</th><th>50%</th><th>90%</th><th>median</th>"
            "<th>outcome</th><th>result</th></tr>" + "".join(rows) + "</table>",
        ]
    return "\n".join(parts)
