"""``mindledger runs``: the stored runs, as a table or as JSON; or one run's items re-checked.

``--format json`` prints one JSON array, newest run first, one object per run (a contract for
scripts; keys are only ever added):

``id``, ``suite``, ``status``, ``created_at``, ``finished_at`` (ISO 8601 UTC, null while
unfinished), ``held_out`` (bool), ``seed`` (null for a held-out run unless
``--reveal-held-out``), ``seed_withheld`` (bool), ``agents`` (``[{"name", "role", "trials",
"failed", "errors", "unparsed", "failure_share"}]``: the agent's stored trials, those that failed
— API errors and unreadable answers, as ``mindledger trials RUN --status error,unparsed``
lists them — and failed ÷ trials that asked it something, null before any did), ``trials``
(stored trials, every status), ``scored`` (trials with an answer scored), ``last_trial_at``
(when its newest trial was stored; null before any), ``over_failure_limit`` (the agents whose
failure share is above the ``max_failure_share`` setting, as ``mindledger run`` judged them
when it exited 3).

The table's ``failed`` column names the agent with the largest failure share (``3/26 mybot``);
a complete run with an agent over the failure limit reads ``FAILED``;
a run marked running that has stored no trial for ten minutes reads ``running · idle 2h14m``,
and a line under the table says what that may mean (its process killed: it stays marked
running until resumed) and the command that finishes it.
A database at the current schema is read without SQLAlchemy by :mod:`ledger.catalog`, in three
queries however many runs are listed; any other through the store, which migrates it first. The
command only reads: where there is no database it lists no runs and creates none. ``--verify``
always goes through the store.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from harness.cli.common import echo_json, get_settings, get_store, reads_only
from harness.cli.conventions import LISTED, an_id, format_option
from ledger.catalog import FailureCounts, ListedRun, read_run_listing
from mindledger.disclosure import seed_cell, shown_seed
from mindledger.errors import NoDatabaseError
from mindledger.words import counted
from reports.present import duration, idle_seconds, run_status_text

__all__ = ["idle_notes", "listed_runs", "over_limit", "run_record", "runs", "status_cell"]

NO_TRIALS = FailureCounts(0, 0, 0, 0)

NAME_WIDTH = 16
"""Characters of the worst agent's name in the ``failed`` column (JSON has them whole)."""

NO_RUNS = (
    "No runs stored yet. `mindledger quickstart` makes one on the embedded model; "
    "`mindledger run --agent NAME` runs your agent."
)
"""What the table says in place of an empty one."""

RUN_ID_WIDTH = 22
"""A run id's usual length (``20261203-043516-13e847``): the table never breaks one that long."""


def listed_runs(ctx: click.Context, limit: int) -> list[ListedRun]:
    """The ``limit`` newest runs of the configured database: read by :mod:`ledger.catalog`
    when it can (a database that exists, at the current schema), else through the store, which
    migrates the database first; none where there is no database (``runs`` creates none)."""
    listing = read_run_listing(get_settings(ctx).database_url, limit)
    if listing is None:
        try:
            listing = get_store(ctx).run_listing(limit)
        except NoDatabaseError:
            return []
    return listing


def over_limit(run: ListedRun, share: float) -> list[str]:
    """The run's agents whose failure share (failed ÷ attempted) is above ``share``: those
    ``mindledger run`` exits 3 for (:meth:`reports.trials.RunFailures.over`)."""
    return [name for name, c in sorted(run.failures.items()) if c.over(share)]


def run_record(
    run: ListedRun, *, reveal_held_out: bool = False, max_failure_share: float = 1.0
) -> dict[str, Any]:
    """One run as ``runs --format json`` prints it (a held-out run's seed withheld unless
    ``reveal_held_out``; its agents over ``max_failure_share`` named)."""
    counts = run.failures
    seed = shown_seed(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out)
    agents = []
    for a in run.agents:
        c = counts.get(a.name, NO_TRIALS)
        agents.append({
            "name": a.name,
            "role": a.role,
            "trials": c.trials,
            "failed": c.failed,
            "errors": c.errors,
            "unparsed": c.unparsed,
            "failure_share": c.failed / c.attempted if c.attempted else None,
        })  # fmt: skip
    return {
        "id": run.id,
        "suite": run.suite,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "held_out": run.held_out,
        "seed": seed,
        "seed_withheld": seed is None,
        "agents": agents,
        "trials": sum(c.trials for c in counts.values()),
        "scored": sum(c.trials - c.errors - c.not_applicable for c in counts.values()),
        "last_trial_at": run.last_trial_at,
        "over_failure_limit": over_limit(run, max_failure_share),
    }


def _now() -> dt.datetime:
    """The time a running run's idleness is counted from (tests fix it)."""
    return dt.datetime.now(dt.UTC)


def status_cell(run: ListedRun, now: dt.datetime, over: int = 0) -> str:
    """The ``status`` cell (:func:`reports.present.run_status_text`; ``over``: how many of its
    agents failed over the failure limit)."""
    return run_status_text(run.status, run.created_at, run.last_trial_at, now, over_limit=over)


def idle_notes(runs: list[ListedRun], now: dt.datetime) -> list[str]:
    """A line under the table for each run marked running that has stored no trial for a
    while: what that may mean and the command that finishes it."""
    notes = []
    for run in runs:
        idle = idle_seconds(run.status, run.created_at, run.last_trial_at, now)
        if idle is not None:
            notes.append(
                f"{run.id} is marked running but has stored no trial for {duration(idle)}: if "
                "its process stopped (killed, the machine restarted), `mindledger run --resume "
                f"{run.id}` finishes it."
            )
    return notes


def _worst(counts: dict[str, FailureCounts]) -> str:
    """The ``failed`` cell: the agent with the largest failure share, as ``3/26 mybot`` (``+2``:
    two more agents failed some trials); ``none``; or nothing before any trial."""
    failing = {name: c for name, c in counts.items() if c.failed}
    if not failing:
        return "none" if counts else ""
    name, worst = max(
        failing.items(), key=lambda nc: (nc[1].failed / nc[1].attempted, nc[1].failed)
    )
    shown = name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"
    more = f" +{len(failing) - 1}" if len(failing) > 1 else ""
    return f"{worst.failed}/{worst.attempted} {shown}{more}"


def _table(
    records: list[dict[str, Any]], runs: list[ListedRun], reveal_held_out: bool, share: float
) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console

    now = _now()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    columns = ["run", "suite", "seed", "held out", "status", "created", "agents", "trials",
               "failed"]  # fmt: skip
    if not any(run.held_out for run in runs):
        columns.remove("held out")  # blank in every row: not a column to read, nor to say left out
    for col in columns:
        table.add_column(
            col,
            # an agent's name (at most NAME_WIDTH) in "failed" is never cut: the cell wraps
            # between its count and the name, and fit_table leaves columns out first
            overflow="fold" if col == "run" else "ellipsis",
            no_wrap=col == "created",
            min_width=RUN_ID_WIDTH if col == "run" else None,
        )
    for r, run in zip(records, runs, strict=True):
        cells = (
            r["id"],
            r["suite"],
            seed_cell(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out),
            *(["yes" if r["held_out"] else ""] if "held out" in columns else []),
            status_cell(run, now, len(r["over_failure_limit"])),
            r["created_at"][:16].replace("T", " "),
            str(len(r["agents"])),
            str(r["trials"]),
            _worst(run.failures),
        )
        table.add_row(*(Text(c) for c in cells))  # text, never markup
    console = stdout_console()
    print_table(console, table, drop=("held out", "agents", "seed", "suite", "created"))
    for note in idle_notes(runs, now):
        console.print(note, highlight=False, markup=False)


@reads_only
@click.command()
@click.option("--limit", type=LISTED, default=20, show_default=True, help="How many runs to list.")
@click.option(
    "--verify",
    "verify_id",
    default=None,
    callback=an_id,
    metavar="RUN_ID",
    help="Instead of listing, regenerate every item of RUN_ID from its generator, seed and "
    "parameters and check it matches the stored copy bit for bit (exit 1 if not).",
)
@click.option(
    "--reveal-held-out",
    is_flag=True,
    help="Show the seeds of held-out runs too. For operators at this machine only: a held-out "
    "seed regenerates the run's items, so it must never reach the agent under test.",
)
@format_option("an array of runs (with --verify, an object: run, items, ok, problems)")
def runs(limit: int, verify_id: str | None, reveal_held_out: bool, fmt: str) -> None:
    """List stored runs, newest first. A held-out run's seed shows as "withheld" (null in
    JSON) unless --reveal-held-out.

    \b
    Examples:
      mindledger runs --limit 5
      mindledger runs --format json | jq -r '.[] | select(.status == "complete") | .id'
      mindledger runs --verify 20261130-031500-ab12cd
    """
    ctx = click.get_current_context()
    if verify_id:
        _verify(ctx, verify_id, fmt)
        return
    listed = listed_runs(ctx, limit)
    share = get_settings(ctx).max_failure_share
    records = [
        run_record(r, reveal_held_out=reveal_held_out, max_failure_share=share) for r in listed
    ]
    if fmt == "json":
        echo_json(records)
        return
    if not listed:
        click.echo(NO_RUNS)
        return
    _table(records, listed, reveal_held_out, share)


def _verify(ctx: click.Context, run_id: str, fmt: str) -> None:
    """``runs --verify RUN_ID``: regenerate the run's items and compare them with the stored
    copies; exit 1 if any differs."""
    from harness.agent.families import verify_items

    items = get_store(ctx).run_items(run_id)
    problems = verify_items(items)
    if fmt == "json":
        echo_json({"run": run_id, "items": len(items), "ok": not problems, "problems": problems})
    else:
        for p in problems:
            click.echo(p)
    if problems:
        click.echo(f"{counted(len(problems), 'problem')} in {counted(len(items), 'item')}", err=True)
        ctx.exit(1)
    if fmt != "json":
        click.echo(f"all {len(items)} items of run {run_id} regenerate bit for bit")
