"""``mindledger dashboard``: the terminal dashboard over the configured database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from harness.cli.common import get_workspace
from harness.workspace import Workspace
from ledger.predictions import Ledger

__all__ = ["dashboard", "ledger_opener"]


def ledger_opener(workspace: Workspace) -> Callable[[], Ledger]:
    """A function (called in a worker) that opens a fresh prediction ledger of ``workspace``
    (the caller closes it); it refuses, rather than create a service key, when there is none."""

    def open_it() -> Ledger:
        from tui.source import NoLedger

        if not workspace.has_service_key:
            raise NoLedger(
                f"no service key in {workspace.settings.home} (nothing has been committed "
                "here yet; see `mindledger ledger --help`)"
            )
        return workspace.new_ledger(heads_file=False)

    return open_it


@click.command("dashboard")
@click.option(
    "--refresh",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds between refreshes of the runs table (0: only on r).",
)
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Where the run screen's m and h keys write reports.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(100, 100_000),
    default=2000,
    show_default=True,
    help="Bootstrap replicates per interval.",
)
@click.pass_context
def dashboard(ctx: click.Context, refresh: float, export_dir: str, seed: int, n_boot: int) -> None:
    """Browse runs, profiles and the prediction ledger in the terminal.

    \b
    Keys: enter open a run · m/h export its report (Markdown/HTML) · l the prediction
    ledger · escape back · ? help · q quit.
    """
    from tui import DashboardApp, DashboardSource

    workspace = get_workspace(ctx)
    source = DashboardSource(
        workspace.store, ledger_opener(workspace), n_boot=n_boot, seed=seed
    )
    DashboardApp(source, refresh_seconds=refresh, export_dir=Path(export_dir)).run()
