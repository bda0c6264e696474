"""``mindledger matrix``: the cross-model prediction matrix (seed 002 §15.2, B9)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from harness.build import plan_agents
from harness.cli.common import echo_json, get_settings, get_workspace
from harness.matrix import create_matrix_run, execute_matrix_run, matrix_params, summarise_run
from harness.workspace import SeedPolicy
from ledger.store import Store
from mindledger.disclosure import seed_phrase
from mindledger.errors import UserError


class MatrixProgress:
    """A progress bar per agent (its target answers and its predictions, one trial each), with
    rate and ETA; quiet when the console is not a terminal."""

    def __init__(self, console: Console):
        self.progress = Progress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]:>4}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self.tasks: dict[str, TaskID] = {}
        self.errors: dict[str, int] = {}

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        for name, total in totals.items():
            self.errors[name] = 0
            self.tasks[name] = self.progress.add_task(
                name, total=total, completed=done.get(name, 0), errors=0
            )
        self.progress.start()

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None:
        self.errors[agent] += int(error)
        self.progress.update(self.tasks[agent], advance=1, errors=self.errors[agent])

    def stop(self) -> None:
        self.progress.stop()


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _with_ci(figure: dict[str, Any], spec: str = ".3f") -> str:
    """``0.512 [0.401, 0.630]``, or the value alone when it has no interval."""
    ci = figure.get("ci")
    text = _fmt(figure.get("value"), spec)
    return text if not ci else f"{text} [{_fmt(ci[0], spec)}, {_fmt(ci[1], spec)}]"


def print_matrix(console: Console, result: dict[str, Any]) -> None:
    seed = seed_phrase(result.get("seed"), held_out=bool(result.get("held_out")))
    run = f"run {result['run']} · " if result.get("run") else ""
    table = Table(
        title=f"Cross-model prediction matrix: {run}{result['n_items']} items, "
        f"{result['samples']} target samples each ({seed}); [95% hierarchical bootstrap]"
    )
    cols = ("predictor → target", "n", "log score", "Brier", "top-1", "skill S", "base",
            "p (Holm)", "notes")
    for col in cols:
        table.add_column(
            col,
            justify="left" if col in ("predictor → target", "notes") else "right",
            no_wrap=col == "predictor → target",
        )
    for c in result["cells"]:
        notes = []
        if c["skill"].get("reason"):
            notes.append("S: " + c["skill"]["reason"])
        for key in ("predictor_errors", "unparsed", "unscored", "rejected"):
            if c[key]:
                notes.append(f"{key.replace('_', ' ')}: {c[key]}")
        table.add_row(
            f"{c['predictor']} → {c['target']}" + (" (self)" if c["self"] else ""),
            str(c["n"]),
            _with_ci(c["log_score"]),
            _with_ci(c["brier"]),
            _with_ci(c["top1_accuracy"]),
            _with_ci(c["skill"]),
            c["skill"].get("base_kind") or "—",
            _fmt(c["skill"].get("p_holm"), ".3g"),
            "; ".join(notes),
        )
    console.print(table)
    adv = Table(
        title="Self-advantage: T predicting T minus others predicting T "
        "[95% interval] (sign-flip p, Holm)"
    )
    for col in ("target", "log score", "Brier", "top-1", "skill S"):
        adv.add_column(col, justify="left" if col == "target" else "right")
    for t, entry in result["self_advantage"].items():
        adv.add_row(
            t,
            *(
                _with_ci(entry[m], "+.3f")
                + ("" if entry[m].get("p_holm") is None else f" (p={entry[m]['p_holm']:.3g})")
                for m in ("log_score", "brier", "top1_accuracy", "skill")
            ),
        )
    console.print(adv)
    reasons = {
        entry[m]["reason"]
        for entry in result["self_advantage"].values()
        for m in entry
        if entry[m].get("reason")
    }
    for reason in sorted(reasons):
        console.print(f"  — {reason}")
    errors = {t: n for t, n in result["target_errors"].items() if n}
    if errors:
        console.print(f"target API errors (samples dropped): {errors}")


def report_matrix(
    store: Store, run_id: str, fmt: str, *, n_boot: int = 2000, stats_seed: int = 0,
    reveal_held_out: bool = False,
) -> str:
    """A stored matrix run as `mindledger report` shows it: its matrix as JSON (``json``) or as
    the tables `mindledger matrix` prints (``md``), rebuilt from its stored trials."""
    if fmt not in ("md", "json"):
        raise UserError(f"run {run_id} is a matrix run: it renders as md or json, not {fmt}")
    result = summarise_run(
        store, run_id, n_boot=n_boot, stats_seed=stats_seed, reveal_held_out=reveal_held_out
    )
    if fmt == "json":
        return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    console = Console(file=io.StringIO(), width=160, color_system=None, force_terminal=False)
    print_matrix(console, result)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    return text


@click.command("matrix")
@click.option("--agent", "agent_names", multiple=True, help="Agent from the settings (repeatable).")
@click.option(
    "--reference",
    "references",
    multiple=True,
    help="Reference agent: random, habit, clairvoyant or projection (repeatable; a "
    "clairvoyant needs reference targets only).",
)
@click.option("--items", "n_items", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--samples",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Times each target is asked each item (≥ 2 gives the test-retest ceiling).",
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
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Items in flight at once.",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    metavar="RUN",
    help="Finish a stored matrix run: only its items without every trial are run again.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the matrix as JSON.")
@click.pass_context
def matrix(
    ctx: click.Context,
    agent_names: tuple[str, ...],
    references: tuple[str, ...],
    n_items: int,
    samples: int,
    seed: int | None,
    temperature: float | None,
    concurrency: int,
    resume_id: str | None,
    as_json: bool,
) -> None:
    """Cross-model prediction matrix: who predicts whom, scored through the ledger.

    Every agent predicts every agent (itself included, as "a fresh copy of yourself") on
    arbitrary-choice items: the predicted distribution is committed to the prediction ledger
    before the target is asked, the target is asked --samples times, and the ledger reveals
    and scores. No control agents and no response cache: each sample is a real query.

    The matrix is a run (suite ``matrix``): its agents and items are stored first, and each
    item's target answers and predictions are stored as trials when the item is done, so an
    interrupted matrix loses only the items in flight and --resume finishes it. `mindledger
    report RUN` shows it again.

    \b
    Examples:
      mindledger matrix --agent local --reference random --items 5
      mindledger matrix --agent a --agent b --samples 5 --seed 11 --json
      mindledger matrix --resume 20261130-031500-ab12cd
    """
    settings = get_settings(ctx)
    err = Console(stderr=True)
    if resume_id:
        if agent_names or references or seed is not None or temperature is not None:
            raise click.UsageError(
                "--resume takes no agent, seed or temperature options: the run's own are used"
            )
        workspace = get_workspace(ctx)
        matrix_params(workspace.store, resume_id)  # a matrix run, or a user error
        run_id = resume_id
        err.print(f"resuming matrix run {run_id}")
    else:
        planned = plan_agents(
            settings,
            agents=agent_names,
            references=references,
            no_control=True,
            temperature=temperature,
        )
        seeds = SeedPolicy.of(settings)  # checked before the database is opened
        seeds.check_seed(seed)
        used_seed = seeds.draw_seed(held_out=False) if seed is None else seed
        workspace = get_workspace(ctx)
        run_id, _ = create_matrix_run(
            workspace.store,
            settings,
            planned=planned,
            n_items=n_items,
            samples=samples,
            seed=used_seed,
        )
        err.print(f"matrix run {run_id} (seed {used_seed})")
    ledger = workspace.ledger
    try:
        result = execute_matrix_run(
            workspace.store,
            settings,
            ledger,
            run_id,
            concurrency=concurrency,
            progress=MatrixProgress(err),
        )
    except KeyboardInterrupt:
        err.print(f"[yellow]Interrupted.[/] Continue with: mindledger matrix --resume {run_id}")
        raise
    problems = ledger.verify()
    result = {**result, "ledger_problems": [str(p) for p in problems]}
    if as_json:
        echo_json(result)
        return
    console = Console()
    if not console.is_terminal:  # wide enough for the tables in a file or a pipe
        console = Console(width=160)
    print_matrix(console, result)
    console.print(
        "ledger verifies" if not problems else f"LEDGER PROBLEMS: {result['ledger_problems']}"
    )
