"""``mindledger runs``: the stored runs, as a table or as JSON; or one run's items re-checked.

``--format json`` prints one JSON array, newest run first, one object per run (a contract for
scripts; keys are only ever added):

``id``, ``suite``, ``status``, ``created_at``, ``finished_at`` (ISO 8601 UTC, null while
unfinished), ``held_out`` (bool), ``seed`` (null for a held-out run unless
``--reveal-held-out``), ``seed_withheld`` (bool), ``agents`` (``[{"name", "role"}]``),
``trials`` (stored trials, every status), ``scored`` (trials with an answer scored).
"""

from __future__ import annotations

from typing import Any

import click

from harness.cli.common import echo_json, get_store
from harness.cli.conventions import format_option
from ledger.models import RunRow
from ledger.store import Store
from mindledger.disclosure import seed_cell, shown_seed

__all__ = ["run_record", "runs"]


def run_record(store: Store, run: RunRow, *, reveal_held_out: bool = False) -> dict[str, Any]:
    """One run as ``runs --format json`` prints it (a held-out run's seed withheld unless
    ``reveal_held_out``)."""
    counts = store.trial_counts(run.id)
    seed = shown_seed(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out)
    return {
        "id": run.id,
        "suite": run.suite,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "held_out": run.held_out,
        "seed": seed,
        "seed_withheld": seed is None,
        "agents": [{"name": a.name, "role": a.role} for a in store.run_agents(run.id)],
        "trials": sum(v for c in counts.values() for k, v in c.items() if k != "correct"),
        "scored": sum(c.get("ok", 0) for c in counts.values()),
    }


def _table(records: list[dict[str, Any]], runs: list[RunRow], reveal_held_out: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for col in ("run", "suite", "seed", "held out", "status", "created", "agents", "trials"):
        table.add_column(col)
    for r, run in zip(records, runs, strict=True):
        table.add_row(
            r["id"],
            r["suite"],
            seed_cell(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out),
            "yes" if r["held_out"] else "",
            r["status"],
            r["created_at"][:19].replace("T", " "),
            str(len(r["agents"])),
            str(r["trials"]),
        )
    console = Console()
    (console if console.is_terminal else Console(width=140)).print(table)


@click.command()
@click.option("--limit", default=20, show_default=True, help="How many runs to list.")
@click.option(
    "--verify",
    "verify_id",
    default=None,
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
    store = get_store(ctx)
    if verify_id:
        from harness.families import verify_items

        items = store.run_items(verify_id)
        problems = verify_items(items)
        if fmt == "json":
            echo_json(
                {"run": verify_id, "items": len(items), "ok": not problems, "problems": problems}
            )
        else:
            for p in problems:
                click.echo(p)
        if problems:
            click.echo(f"{len(problems)} problem(s) in {len(items)} items", err=True)
            ctx.exit(1)
        if fmt != "json":
            click.echo(f"all {len(items)} items of run {verify_id} regenerate bit for bit")
        return
    listed = store.list_runs(limit)
    records = [run_record(store, r, reveal_held_out=reveal_held_out) for r in listed]
    if fmt == "json":
        echo_json(records)
        return
    _table(records, listed, reveal_held_out)
