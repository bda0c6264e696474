"""``mindledger history``: an agent's headline figures over its runs, regressions flagged."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import echo_json, get_settings, get_store, known_agent, reads_only
from harness.cli.conventions import format_option
from mindledger.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Collection

    from rich.console import Console

    from reports.history import AgentHistory, MetricHistory

__all__ = ["history"]

METRIC_KEYS = ("d50", "false_belief", "leakage_resistance", "skill", "true_belief", "K_B",
               "K_L", "ece")
"""The figures followed (:data:`reports.history.HEADLINE_METRICS`; kept here so ``--help``
does not import the reports)."""


def _since(value: str | None) -> dt.date | dt.datetime | None:
    if value is None:
        return None
    try:
        if "T" in value or " " in value:
            when = dt.datetime.fromisoformat(value)
            return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"expected a date like 2026-11-30 (or an ISO time), got {value!r}",
                         where="--since") from None


@reads_only
@click.command("history")
@click.argument("agent")
@click.option("--metric", "metrics", multiple=True, type=click.Choice(METRIC_KEYS),
              help="Show only this figure (repeatable; default: every headline figure).")
@click.option("--since", default=None, metavar="DATE",
              help="Show the runs created on or after DATE (YYYY-MM-DD or an ISO time, UTC); "
              "earlier runs still serve as the baseline of the first ones shown.")
@click.option("--suite", default=None, help="Only this suite's runs.")
@format_option("the agent's history: runs, figures per run, flags and the rule",
               csv="one row per figure and run (metric, run_id, created_at, suite, held_out, "
               "value, ci_low, ci_high, n, k, text, tested, flagged, baseline, p, reason)")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, writable=True),
              default=None, help="Also write an HTML trend report with a plot per figure.")
@click.option("--notify", is_flag=True,
              help="Check the latest run and send the configured [notify] webhook/command if "
              "a regression begins on it (each run is notified once; recorded in the "
              "database).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(100, 100_000), default=2000,
              show_default=True, help="Bootstrap replicates per interval.")
@click.pass_context
def history(ctx: click.Context, agent: str, metrics: tuple[str, ...], since: str | None,
            suite: str | None, fmt: str, html_out: str | None, notify: bool,
            n_boot: int) -> None:
    """Show AGENT's headline figures (D50, false-belief accuracy, leakage resistance, skill S,
    true-belief control accuracy, K_B, K_L, calibration ECE) over its finished runs, oldest
    first, each with its interval and n; held-out (nightly) runs marked. A run's figure is
    flagged (▼) when it is below the agent's recent level beyond noise: a one-sided test
    against the pooled previous 5 runs of the same suite (at least 3), at level 0.01 per run,
    Bonferroni over the figures tested on it (README: "History and regressions"). Exits 0
    whether or not a run is flagged; scripts read "flagged" in the JSON.

    \b
    Examples:
      mindledger history mybot
      mindledger history mybot --metric false_belief --metric d50 --since 2026-11-01
      mindledger history mybot --format json | jq '.flagged'
      mindledger history mybot --format csv > mybot-history.csv
      mindledger history mybot --html trend.html
      mindledger history mybot --notify   # announce the latest run's regression
    """
    from reports.history import agent_history
    from reports.history_render import render_history_html

    when = _since(since)
    known_agent(ctx, agent)
    store = get_store(ctx)
    full = agent_history(store, agent, metrics=metrics or None, suite=suite, n_boot=n_boot)
    shown = full.since(when) if when is not None else full
    if not full.runs:
        click.echo(f"note: no finished run has {agent!r} as the agent under test "
                   "(see `mindledger runs`)", err=True)
    if notify:
        _notify(ctx, agent, full if not metrics else None)
    if html_out:
        Path(html_out).write_text(render_history_html(shown), encoding="utf-8")
        click.echo(f"wrote {html_out}", err=True)
    if fmt == "json":
        echo_json(shown.to_dict())
    elif fmt == "csv":
        click.echo(_csv(shown), nl=False)
    else:
        from harness.cli.tables import stdout_console

        _print_history(stdout_console(), shown)


CSV_COLUMNS = ("metric", "run_id", "created_at", "suite", "held_out", "value", "ci_low",
               "ci_high", "n", "k", "text", "tested", "flagged", "baseline", "p", "reason")


def _csv(history: AgentHistory) -> str:
    """``history --format csv``: a row per figure and run, oldest run first; then a row per
    self-forecast (metric ``forecast:<figure>``: value the outcome, ci the forecast's 90%
    interval, text both its bands, baseline its median, flagged when confidently wrong)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for m in history.metrics:
        for p in m.points:
            lo, hi = p.ci if p.ci is not None else (None, None)
            writer.writerow(["" if v is None else v for v in (
                m.key, p.run_id, p.created_at, p.suite, p.held_out, p.value, lo, hi, p.n, p.k,
                p.text, p.tested, p.flagged, p.baseline, p.p, p.reason)])
    from reports.self_forecast_render import forecast_csv_rows

    writer.writerows(forecast_csv_rows(history))
    return out.getvalue()


def _print_history(console: Console, history: AgentHistory) -> None:
    """The verdict first (which runs are flagged, or none), then a table per figure (run,
    created, held out, the figure as the profile words it, the verdict) under its sparkline,
    fitted to the console's width: the creation time, which starts the run's id, is left out
    first, and what one table leaves out every table leaves out, so that they read alike."""
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import fit_table, note_dropped
    from reports.history_render import HELD_OUT, failed_runs, flagged_line, sparkline, verdict
    from reports.self_forecast_render import history_forecast_text

    n = len(history.runs)
    say = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    say(f"History of {history.agent}: {n} run{'' if n == 1 else 's'}")
    if not history.runs:
        say(f"Rule: {history.rule.describe()}.")
        say("No finished run has this agent as the agent under test.")
        return
    say(flagged_line(history))
    say(f"Rule: {history.rule.describe()}.")
    for line in failed_runs(history):
        say(line)
    columns = ("run", "created (UTC)", HELD_OUT, "value", "verdict")
    droppable = ("created (UTC)", HELD_OUT)

    def table_of(metric: MetricHistory, leave_out: Collection[str]) -> Table:
        table = Table()
        shown = [c for c in columns if c not in leave_out]
        for col in shown:
            table.add_column(col, no_wrap=col == "run")
        for p in metric.points:
            cells = {"run": p.run_id, "created (UTC)": (p.created_at or "")[:16].replace("T", " "),
                     HELD_OUT: "yes" if p.held_out else "", "value": p.text,
                     "verdict": verdict(p)}  # fmt: skip
            table.add_row(*(Text(cells[c]) for c in shown))
        return table

    tables = [table_of(m, ()) for m in history.metrics]
    left = [fit_table(t, console.width, drop=droppable) for t in tables]
    dropped = [d for d in droppable if any(d in gone for gone in left)]
    for m, table, gone in zip(history.metrics, tables, left, strict=True):
        flags = [p.flagged for p in m.points]
        say("")
        say(f"{m.title}  {sparkline(m.values(), flags)}"
            + (f"  ({sum(flags)} flagged)" if any(flags) else ""))
        if set(gone) != set(dropped):  # it kept a column another table left out: rebuilt
            table = table_of(m, dropped)
            fit_table(table, console.width)
        console.print(table)
    for line in history_forecast_text(history):
        say(line)
    note_dropped(console, dropped)


def _notify(ctx: click.Context, agent: str, history: object) -> None:
    from harness.publish.notify import notify_regressions
    from reports.history import AgentHistory

    settings = get_settings(ctx)
    if not settings.notify.enabled:
        click.echo("note: --notify: no [notify] webhook or command is configured", err=True)
    h, regressions, deliveries = notify_regressions(
        get_store(ctx), settings, agent,
        history=history if isinstance(history, AgentHistory) else None)
    if not h.runs:
        return
    latest = h.runs[-1].id
    if not regressions:
        click.echo(f"notify: no regression begins on the latest run {latest}", err=True)
    for d in deliveries:
        if not d.recorded:
            click.echo(f"notify: {d.channel}: run {latest} was notified already", err=True)
        else:
            click.echo(f"notify: {d.channel} {d.target}: {d.status}"
                       + (f" ({d.error})" if d.error else ""), err=True)
