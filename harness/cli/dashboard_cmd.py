"""``mindledger dashboard``: the terminal dashboard over the configured database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
from sqlalchemy.engine import Engine

from harness.cli.common import get_settings, get_store
from harness.settings import Settings
from ledger.predictions import Ledger

__all__ = ["dashboard", "ledger_opener"]


def ledger_opener(settings: Settings, engine: Engine) -> Callable[[], Ledger]:
    """A function (called in a worker) that opens the prediction ledger of ``settings.home``
    over ``engine``; it refuses, rather than create a service key, when there is none."""

    def open_it() -> Ledger:
        from ledger.keys import KEY_FILE, load_or_create_service_key
        from ledger.predictions import WITNESS_DIR
        from tui.source import NoLedger

        if not (settings.home / KEY_FILE).exists():
            raise NoLedger(
                f"no service key in {settings.home} (nothing has been committed here yet; "
                "see `mindledger ledger --help`)"
            )
        return Ledger(
            engine,
            load_or_create_service_key(settings.home),
            reveal_timeout=settings.reveal_timeout,
            witness_dir=settings.home / WITNESS_DIR,
        )

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

    settings = get_settings(ctx)
    store = get_store(ctx)
    source = DashboardSource(store, ledger_opener(settings, store.engine), n_boot=n_boot, seed=seed)
    DashboardApp(source, refresh_seconds=refresh, export_dir=Path(export_dir)).run()
