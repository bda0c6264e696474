"""``mindledger quickstart``: the embedded model and the reference agents on the quick suite,
end to end, then a few plain lines on what the newcomer just saw.

The lines come from the run's own profile (:func:`explain_run`, pure): the run's verdict, the
same that opens its reports and the dashboard's run screen (:func:`reports.verdict`), then where
to go next.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from harness.cli.common import get_settings, get_store
from harness.cli.progress import progress_option

if TYPE_CHECKING:
    from reports.model import RunProfile

__all__ = ["DASHBOARD_COMMAND", "README_SECTION", "explain_run", "quickstart"]

DASHBOARD_COMMAND = "mindledger dashboard"
README_SECTION = "Connecting a real agent"
"""The README section (a ``##`` heading) that connects a real agent; a test keeps it there."""


def explain_run(profile: RunProfile) -> list[str]:
    """The lines a quickstart run ends with, computed from its profile (pure): the run's
    verdict as every report opens with it (:func:`reports.verdict`: the agent under test, its
    validity and figures, the reference agents as the suite diagnosed them, what this run is
    too small to say), then the command that opens the dashboard and the README section that
    connects a real agent."""
    from reports.verdicts import verdict

    return [
        "What you just saw:",
        *verdict(profile).paragraphs(),
        f"Browse the results: {DASHBOARD_COMMAND}",
        f'Evaluate your own agent: the README section "{README_SECTION}".',
    ]


@click.command()
@click.option("--seed", type=int, default=None, help="Seed (default: drawn fresh).")
@progress_option
def quickstart(seed: int | None, progress_mode: str) -> None:
    """Start the embedded model and run the quick suite end to end.

    Runs the `local` agent (SmolLM2-135M with the reference scaffold), its control, and the
    reference agents on the quick suite, stores everything in the configured database (SQLite
    in the data directory by default), writes the report next to it, and ends with a few
    lines on what the run showed. Exits 3 (after saying why) when an agent's trials mostly
    failed, as `mindledger run` does.

    \b
    Examples:
      mindledger quickstart
      mindledger quickstart --seed 12
      mindledger quickstart --progress lines 2> quickstart.log
    """
    from rich.console import Console

    from harness.cli.report_cmd import write_reports
    from harness.cli.run_cmd import (
        QUICKSTART_REFERENCES,
        _run,
        check_failures,
        print_summary,
        summary_record,
    )
    from harness.cli.tables import stdout_console
    from harness.config.workspace import SeedPolicy
    from harness.model.local_model import server_count
    from harness.run.build import plan_agents
    from harness.run.runs import create_run
    from reports import build_profile
    from reports.trials import failure_summary

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    SeedPolicy.of(settings).check_seed(seed)  # before the database is opened: writes nothing
    store = get_store(ctx)
    console = Console(stderr=True, soft_wrap=True)  # a log keeps its lines whole
    planned = plan_agents(settings, agents=("local",), references=QUICKSTART_REFERENCES)
    run_id, used_seed, n = create_run(store, settings, suite="quick", planned=planned, seed=seed)
    console.print(
        f"run {run_id}: quick suite, seed {used_seed}, {n} items × {len(planned)} agents",
        highlight=False,
    )
    servers = server_count(settings.model_servers)
    console.print(
        "starting the embedded model (SmolLM2-135M-Instruct via llama.cpp on 127.0.0.1: "
        f"{servers} server{'s' if servers != 1 else ''} of {settings.model_threads} "
        f"thread{'s' if settings.model_threads != 1 else ''})…",
        highlight=False,
    )
    if settings.model_weights == "q8_0" and not _q8_cached():
        console.print(
            "re-encoding the model's weights as Q8_0, once (a few seconds; it reads prompts "
            "about twice as fast as the packaged Q4_1)…",
            highlight=False,
        )
    summary = _run(store, settings, run_id, console, progress_mode)
    out = stdout_console()
    record = summary_record(
        store, run_id, summary, failure_summary(store, run_id), settings.max_failure_share
    )
    print_summary(out, record)
    url = settings.database_url
    where = url.split("///")[-1] if url.startswith("sqlite") else "the database"
    out.print(f"stored in {where} as run {run_id}", highlight=False)
    profile = build_profile(store, run_id)
    for p in write_reports(store, run_id, settings.home / "reports", profile=profile):
        out.print(f"report: {p}", highlight=False)
    sys.stdout.flush()
    click.echo("\n" + "\n".join(explain_run(profile)))
    check_failures(console, record)


def _q8_cached() -> bool:
    """Whether the embedded model's Q8_0 weights are already cached (or cannot be: no model)."""
    from harness.model.gguf_q8 import cached_path
    from harness.model.local_model import find_model_file
    from mindledger.errors import ModelNotInstalledError

    try:
        return cached_path(find_model_file()).is_file()
    except (ModelNotInstalledError, OSError):
        return True
