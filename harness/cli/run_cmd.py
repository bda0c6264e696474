"""``mindledger run``, ``runs`` and ``quickstart``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import click
from rich.console import Console
from rich.progress import TaskID, TextColumn
from rich.table import Table

from harness.build import plan_agents
from harness.cli.common import get_settings, get_store
from harness.cli.progress import progress_bars
from harness.runner import RunSummary
from harness.runs import create_run, execute_stored_run
from harness.settings import Settings
from harness.suites import SUITES, get_suite
from harness.workspace import SeedPolicy
from ledger.store import Store
from mindledger.disclosure import seed_phrase

QUICKSTART_REFERENCES = (
    "oracle",
    "random",
    "depth-capped:2",
    "reality-leak",
    "not-reality",
    "level:2",
)


class RichProgress:
    """A progress bar per agent, with rate and ETA; quiet when stderr is not a terminal."""

    def __init__(self, console: Console):
        self.console = console
        self.progress = progress_bars(console, TextColumn("{task.fields[rate]:>8}"),
                                      TextColumn("acc {task.fields[acc]:>5}"))
        self.tasks: dict[str, TaskID] = {}
        self.counts: dict[str, list[int]] = {}

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        for name, total in totals.items():
            self.counts[name] = [0, 0]
            self.tasks[name] = self.progress.add_task(
                name, total=total, completed=done.get(name, 0), rate="", acc="-"
            )
        self.progress.start()

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None:
        c = self.counts[agent]
        if not error:
            c[0] += 1
            c[1] += int(bool(correct))
        task = self.tasks[agent]
        self.progress.advance(task)
        t = self.progress.tasks[task]
        speed = t.speed
        self.progress.update(
            task,
            rate=f"{speed:.1f}/s" if speed else "",
            acc=f"{c[1] / c[0]:.0%}" if c[0] else "-",
        )

    def stop(self) -> None:
        self.progress.stop()


def print_summary(console: Console, store: Store, run_id: str, summary: RunSummary | None) -> None:
    run = store.get_run(run_id)
    counts = store.trial_counts(run_id)
    roles = {ra.name: ra.role for ra in store.run_agents(run_id)}
    n_items = len(store.run_items(run_id))
    table = Table(
        title=f"run {run_id} · suite {run.suite} · "
        f"{seed_phrase(run.seed, held_out=run.held_out)} · {run.status}"
    )
    for col in ("agent", "role", "trials", "scored", "correct", "accuracy", "api errors", "n/a"):
        table.add_column(
            col, justify="left" if col in ("agent", "role") else "right", no_wrap=col == "agent"
        )
    for name in roles:
        c = counts.get(name, {"ok": 0, "api_error": 0, "not_applicable": 0, "correct": 0})
        scored = c.get("ok", 0)
        acc = f"{c['correct'] / scored:.1%}" if scored else "n/a"
        stored = scored + c.get("api_error", 0) + c.get("not_applicable", 0)
        table.add_row(
            name,
            roles[name],
            f"{stored}/{n_items}",
            str(scored),
            str(c["correct"]),
            acc,
            str(c.get("api_error", 0)),
            str(c.get("not_applicable", 0)),
        )
    console.print(table)
    if summary is not None:
        console.print(
            f"{summary.attempted} trial(s) attempted in {summary.wall_s:.1f} s"
            + (f"; {summary.skipped} already stored" if summary.skipped else "")
        )


def _stdout() -> Console:
    """Standard output; wide enough for the tables when it is not a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=140)


def _run(store: Store, settings: Settings, run_id: str, console: Console) -> RunSummary:
    progress = RichProgress(console)
    try:
        summary = asyncio.run(execute_stored_run(store, settings, run_id, progress=progress))
    except KeyboardInterrupt:
        console.print(f"[yellow]Interrupted.[/] Continue with: mindledger run --resume {run_id}")
        raise
    return summary


@click.command()
@click.option(
    "--suite",
    type=click.Choice(sorted(SUITES)),
    default="quick",
    show_default=True,
    help="Suite preset: " + "; ".join(f"{s.name}: {s.description}" for s in SUITES.values()),
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    metavar="NAME",
    help="Agent under test, from the settings or built in ('local'); repeatable.",
)
@click.option(
    "--control",
    default=None,
    metavar="NAME",
    help="Control agent (default: the agent's `control` setting, else the same model "
    "with a minimal system prompt and no modules).",
)
@click.option("--no-control", is_flag=True, help="Run without a control (not recommended).")
@click.option(
    "--reference",
    "references",
    multiple=True,
    metavar="POLICY",
    help="Reference agent: oracle, random, depth-capped:N, reality-leak, not-reality, "
    "level:K, believer:K; repeatable.",
)
@click.option(
    "--ablate",
    multiple=True,
    metavar="MODULE",
    help="Add a variant of the agent with MODULE switched off: one of the reference "
    "scaffold's (perspective, witness_log, opponent_sim) or of the agent's own, declared in "
    "the settings as [agents.NAME.own_modules.MODULE] with the headers, body fields, model, "
    "endpoint or env that switch it off; repeatable. The profile credits each module "
    "(full − ablated, paired).",
)
@click.option("--seed", type=int, default=None, help="Seed (default: drawn fresh and logged).")
@click.option(
    "--held-out",
    is_flag=True,
    help="Draw from the held-out seed share (scheduled runs). The seed is not printed: it "
    "regenerates the run's items (operators: `mindledger runs --reveal-held-out`).",
)
@click.option(
    "--hitom",
    "hitom_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Hi-ToM JSON file, adds test B3.",
)
@click.option(
    "--queue",
    "use_queue",
    is_flag=True,
    help="Store the run and queue its trials in batches for `mindledger worker` processes "
    "(PostgreSQL) instead of running them here.",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    metavar="RUN_ID",
    help="Continue an interrupted run: attempt only what has no stored trial.",
)
def run(
    suite: str,
    agents: tuple[str, ...],
    control: str | None,
    no_control: bool,
    references: tuple[str, ...],
    ablate: tuple[str, ...],
    seed: int | None,
    held_out: bool,
    hitom_path: Path | None,
    use_queue: bool,
    resume_id: str | None,
) -> None:
    """Run a suite against agents, their controls and reference agents.

    Items are generated from the seed and stored with the run before any trial; every trial is
    stored as it completes, so an interrupted run loses nothing and --resume finishes it.

    \b
    Suites and their item counts:
      quick     16 belief + 6 applied NestToM items, 4 game variants (minutes on 2 CPUs)
      baseline  B1 960, B2 180, B4 150, B5 700 items (60 level-k trials + 400 A/B/C
                items from 120 scenarios + 240 from 40 scenarios against the run's own
                agents) (+ B3 100 Hi-ToM with --hitom)

    \b
    Examples:
      mindledger run --suite quick --agent local --reference oracle --reference depth-capped:2
      mindledger run --suite baseline --agent mybot --ablate perspective
      mindledger run --suite baseline --agent mybot --ablate tom   # an own module
      mindledger run --resume 20261130-031500-ab12cd
    """
    ctx = click.get_current_context()
    settings = get_settings(ctx)
    if use_queue:
        from harness.queue import conninfo

        conninfo(settings)  # PostgreSQL only: say so before anything is stored
    console = Console(stderr=True)
    if resume_id:
        if agents or references or ablate or seed is not None:
            raise click.UsageError("--resume takes no other run options: the run's own are used")
        store = get_store(ctx)
        run_id = resume_id
        store.get_run(run_id)
        console.print(f"resuming run {run_id}")
    else:
        # every argument is checked before the database is opened (or created)
        get_suite(suite)
        SeedPolicy.of(settings).check_seed(seed, held_out=held_out)
        planned = plan_agents(
            settings,
            agents=agents,
            control=control,
            references=references,
            ablate=ablate,
            no_control=no_control,
        )
        store = get_store(ctx)
        run_id, used_seed, n = create_run(
            store,
            settings,
            suite=suite,
            planned=planned,
            seed=seed,
            held_out=held_out,
            hitom_path=hitom_path,
        )
        seed_text = seed_phrase(used_seed, held_out=store.get_run(run_id).held_out)
        console.print(
            f"run {run_id}: suite {suite}, {seed_text}, {n} items × "
            f"{len(planned)} agents ({', '.join(ra.name for ra in planned)})"
        )
    if use_queue:
        from harness.queue import enqueue_run

        done = enqueue_run(store, settings, run_id)
        stalled = f", re-queued {done.retried} stalled batch(es)" if done.retried else ""
        console.print(
            f"queued {done.deferred} batch(es) of run {run_id}{stalled}; start workers with "
            "`mindledger worker` (any machine with this database URL)"
        )
        return
    summary = _run(store, settings, run_id, console)
    print_summary(_stdout(), store, run_id, summary)
    from harness.cli.judge_cmd import judge_after_run  # the judge stage, when switched on

    judge_after_run(store, settings, run_id, console)
