"""``mindledger matrix``: the cross-model prediction matrix (seed 002 §15.2, B9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console

from harness.cli.common import echo_json, get_settings, get_workspace, resolve_run
from harness.cli.conventions import CONCURRENCY, an_id, format_option
from harness.cli.matrix_report import print_matrix
from harness.cli.progress import TrialProgress, progress_option
from harness.cli.tables import stdout_console
from harness.config.workspace import SeedPolicy, Workspace
from harness.matrix.runs import (
    MatrixOptions,
    PilotOptions,
    check_matrix_options,
    create_matrix_run,
    execute_matrix_run,
    matrix_params,
    pilot_candidates,
    plan_matrix_run,
)
from harness.run.build import plan_agents
from matrix import DEFAULT_KINDS, ZERO_SHOT

__all__ = ["MatrixCommand", "matrix"]


@dataclass(frozen=True)
class MatrixCommand:
    """What `mindledger matrix` was asked: its options, by parameter name."""

    agent_names: tuple[str, ...]
    references: tuple[str, ...]
    n_items: int
    samples: int
    kinds: str
    n_candidates: int | None
    no_pilot: bool
    conditions: str
    second_order: bool
    seed: int | None
    temperature: float | None
    concurrency: int
    resume_id: str | None
    use_queue: bool
    progress_mode: str
    fmt: str

    @property
    def kind_list(self) -> list[str]:
        return [k.strip() for k in self.kinds.split(",") if k.strip()]

    @property
    def condition_list(self) -> list[str]:
        return [c.strip() for c in self.conditions.split(",") if c.strip()]

    def fresh_only(self) -> bool:
        """Whether an option only a new run takes was given (refused with --resume)."""
        return bool(
            self.agent_names
            or self.references
            or self.seed is not None
            or self.temperature is not None
            or self.n_candidates is not None
            or self.no_pilot
            or self.second_order
        )


@click.command("matrix")
@click.option("--agent", "agent_names", multiple=True, help="Agent from the settings (repeatable).")
@click.option(
    "--reference",
    "references",
    multiple=True,
    help="Reference agent: random, habit, clairvoyant or projection (repeatable; a "
    "clairvoyant needs reference targets only).",
)
@click.option(
    "--items",
    "n_items",
    type=click.IntRange(1, 10_000),
    default=20,
    show_default=True,
    help="Items in the matrix (at most; the pilot may keep fewer). S gets an "
    "interval from 20 items, the other figures from 10.",
)
@click.option(
    "--samples",
    type=click.IntRange(1, 1_000),
    default=10,
    show_default=True,
    help="K: times each target is asked each item, in the pilot and the matrix (≥ 2 gives "
    "the test-retest ceiling; seed 002 §15.2 asks for 10).",
)
@click.option(
    "--kinds",
    default=",".join(DEFAULT_KINDS),
    show_default=True,
    help="Candidate item kinds for the pilot, comma-separated: arbitrary, preference, open, "
    "nesttom, games, failure.",
)
@click.option(
    "--candidates",
    "n_candidates",
    type=click.IntRange(1, 100_000),
    default=None,
    help="Candidates the pilot puts through every target (default: 5 × --items).",
)
@click.option(
    "--no-pilot",
    is_flag=True,
    help="No pilot: the first --items arbitrary-choice items of the seed, unfiltered.",
)
@click.option(
    "--conditions",
    default=ZERO_SHOT,
    show_default=True,
    help="Prediction conditions, comma-separated: zero-shot, simulate (an explicit "
    "'simulate the target' instruction), observe:M (M of the target's answers to other items "
    "shown), e.g. zero-shot,observe:3,observe:10,simulate.",
)
@click.option(
    "--second-order",
    is_flag=True,
    help="Also second-order prediction (seed 002 B9): every agent P predicts, for every other "
    "agent Q and every target T, the distribution Q commits for T's answer (n²(n − 1) per "
    "item), committed before any first-order prediction and scored against Q's committed "
    "zero-shot distribution (needs the zero-shot condition).",
)
@click.option("--seed", type=int, default=None, help="Item seed (default: a fresh one, printed).")
@click.option(
    "--temperature",
    type=float,
    default=None,
    help="Sampling temperature for every chat agent (default: each agent's own).",
)
@click.option(
    "--concurrency",
    type=CONCURRENCY,
    default=64,
    show_default=True,
    help="Model requests in flight at once, across all agents (each agent's own concurrency "
    "limit applies too).",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    callback=an_id,
    metavar="RUN",
    help="Finish a stored matrix run (its id, the id's start, latest or latest~N): only its "
    "items without every trial are run again.",
)
@click.option(
    "--queue",
    "use_queue",
    is_flag=True,
    help="Store the run and queue its items in batches for `mindledger worker` processes "
    "(PostgreSQL) instead of running them here (the pilot, if any, runs here first). With "
    "--resume, queue what the run still lacks.",
)
@progress_option
@format_option(
    "the matrix (cells, self_advantage, by_condition, by_depth, …, ledger_problems)",
    csv="one row per cell, as `report RUN --format csv`",
)
@click.pass_context
def matrix(ctx: click.Context, **options: Any) -> None:
    """Cross-model prediction matrix: who predicts whom, scored through the ledger.

    Every agent predicts every agent (itself included, as "a fresh copy of yourself") under
    every condition: the predicted distribution is committed to the prediction ledger before
    the target is asked, the target is asked --samples times, and the ledger reveals and
    scores. No control agents and no response cache: each sample is a real query.

    First a pilot (seed 002 §15.2) puts --candidates items of --kinds through every target
    --samples times and keeps those where the targets disagree with each other and agree with
    themselves (at most --items); its filter and verdict are stored with the run. When too few
    survive, the run says "not divergent: <reason>" instead of reporting skill and asks no
    predictions. --no-pilot uses arbitrary-choice items unfiltered.

    The matrix is a run (suite ``matrix``): its agents and items are stored first, and each
    item's target answers and predictions are stored as trials when the item is done, so an
    interrupted matrix loses only the items in flight and --resume finishes it. `mindledger
    report RUN` shows it again. With --queue (PostgreSQL), its items are queued instead, five
    to a batch, for `mindledger worker` processes, which run each item exactly as here.

    \b
    Examples:
      mindledger matrix --agent local --reference random --items 5 --no-pilot
      mindledger matrix --agent a --agent b --kinds arbitrary,open --candidates 60
      mindledger matrix --agent a --agent b --conditions zero-shot,observe:3,simulate
      mindledger matrix --agent a --agent b --agent c --second-order
      mindledger matrix --agent a --agent b --samples 5 --seed 11 --format json
      mindledger matrix --resume latest
      mindledger matrix --agent a --agent b --no-pilot --queue  # then: worker
    """
    cmd = MatrixCommand(**options)
    settings = get_settings(ctx)
    err = Console(stderr=True, soft_wrap=True)
    if cmd.use_queue:
        from harness.queue.batches import conninfo

        conninfo(settings)  # PostgreSQL only: say so before anything is stored
    if cmd.resume_id:
        if cmd.fresh_only():
            raise click.UsageError(
                "--resume takes no agent, seed or temperature options: the run's own are used"
            )
        workspace = get_workspace(ctx)
        run_id = resolve_run(ctx, cmd.resume_id)
        matrix_params(workspace.store, run_id)  # a matrix run, or a user error
        err.print(f"resuming matrix run {run_id}")
    else:
        workspace, run_id = _new_run(ctx, cmd, err)
    if cmd.use_queue:
        _queue(workspace, run_id, err)
        return
    _execute(workspace, run_id, cmd, err)


def _new_run(ctx: click.Context, cmd: MatrixCommand, err: Console) -> tuple[Workspace, str]:
    """Plan and store a new matrix run (after its pilot, unless --no-pilot): the workspace
    and the run's id."""
    settings = get_settings(ctx)
    planned = plan_agents(
        settings,
        agents=cmd.agent_names,
        references=cmd.references,
        no_control=True,
        temperature=cmd.temperature,
    )
    seeds = SeedPolicy.of(settings)  # checked before the database is opened
    seeds.check_seed(cmd.seed)
    wanted = check_matrix_options(
        samples=cmd.samples,
        conditions=cmd.condition_list,
        second_order=cmd.second_order,
        pilot_kinds=None if cmd.no_pilot else cmd.kind_list,
        n_candidates=pilot_candidates(cmd.n_items, cmd.n_candidates),
    )
    used_seed = seeds.draw_seed(held_out=False) if cmd.seed is None else cmd.seed
    workspace = get_workspace(ctx)
    options = MatrixOptions(
        n_items=cmd.n_items,
        samples=cmd.samples,
        conditions=wanted,
        second_order=cmd.second_order,
        seed=used_seed,
        concurrency=cmd.concurrency,
    )
    if cmd.no_pilot:
        run_id, _ = create_matrix_run(workspace.store, settings, planned=planned, options=options)
    else:
        err.print(f"pilot: candidates of {cmd.kinds} (seed {used_seed})")
        run_id, _, record = plan_matrix_run(
            workspace.store,
            settings,
            planned=planned,
            options=options,
            pilot=PilotOptions(kinds=cmd.kind_list, n_candidates=cmd.n_candidates),
        )
        err.print(f"pilot: {record.verdict}")
    err.print(f"matrix run {run_id} (seed {used_seed})")
    return workspace, run_id


def _queue(workspace: Workspace, run_id: str, err: Console) -> None:
    """Queue what the run lacks for `mindledger worker` processes, and say what was queued."""
    from harness.queue.batches import enqueue_run

    done = enqueue_run(workspace.store, workspace.settings, run_id)
    if done.complete:
        err.print(f"nothing to queue: matrix run {run_id} is complete")
        return
    if not (done.deferred or done.retried):
        err.print(
            f"nothing new to queue: every item matrix run {run_id} lacks is in one of "
            f"{done.held} batch(es) queued or running on a live worker"
        )
        return
    stalled = f", re-queued {done.retried} stalled batch(es)" if done.retried else ""
    err.print(
        f"queued {done.deferred} batch(es) of matrix run {run_id}{stalled}; start workers "
        "with `mindledger worker` (any machine with this database URL and the ledger's "
        f"service key); then `mindledger report {run_id}`"
    )


def _execute(workspace: Workspace, run_id: str, cmd: MatrixCommand, err: Console) -> None:
    """Run (or resume) the run here, then print its matrix and whether the ledger verifies."""
    ledger = workspace.ledger
    try:
        result = execute_matrix_run(
            workspace.store,
            workspace.settings,
            ledger,
            run_id,
            concurrency=cmd.concurrency,
            progress=TrialProgress(err, cmd.progress_mode, accuracy=False),
        )
    except KeyboardInterrupt:
        # main says "Interrupted." once, after this
        err.print(
            f"matrix run {run_id} keeps every item finished: continue with "
            f"`mindledger matrix --resume {run_id}`",
            highlight=False,
        )
        raise
    problems = ledger.verify()
    result = {**result, "ledger_problems": [str(p) for p in problems]}
    if cmd.fmt == "json":
        echo_json(result)
        return
    if cmd.fmt == "csv":
        from reports.matrix_render import render_matrix_csv

        click.echo(render_matrix_csv(result), nl=False)
        return
    console = stdout_console()
    print_matrix(console, result)
    console.print(
        "ledger verifies" if not problems else f"LEDGER PROBLEMS: {result['ledger_problems']}"
    )
