"""``mindledger matrix``: the cross-model prediction matrix (seed 002 §15.2, B9)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from harness.build import plan_agents
from harness.cli.common import echo_json, get_settings, get_workspace, resolve_run
from harness.cli.conventions import CONCURRENCY, an_id, format_option
from harness.cli.progress import TrialProgress, progress_option
from harness.cli.tables import PIPED_WIDTH, fits, print_table, stdout_console
from harness.matrix import (
    ZERO_SHOT,
    check_matrix_options,
    create_matrix_run,
    execute_matrix_run,
    matrix_params,
    pilot_candidates,
    plan_matrix_run,
    summarise_run,
)
from harness.matrix_items import DEFAULT_KINDS
from harness.workspace import SeedPolicy
from ledger.store import Store
from mindledger.disclosure import seed_phrase
from mindledger.errors import UserError


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _with_ci(figure: dict[str, Any], spec: str = ".3f") -> str:
    """``0.512 [0.401, 0.630]``, or the value alone when it has no interval."""
    ci = figure.get("ci")
    text = _fmt(figure.get("value"), spec)
    return text if not ci else f"{text} [{_fmt(ci[0], spec)}, {_fmt(ci[1], spec)}]"


def _unreadable(cell: dict[str, Any]) -> str:
    """``0/40 · 3/10``: the cell's unreadable target answers and predictions."""
    u = cell.get("unreadable")
    if not u:
        return "—"
    return (f"{u['target_answers']}/{u['target_samples']} · "
            f"{u['predictions']}/{u['predictions_asked']}")


def _print_pilot(console: Console, result: dict[str, Any]) -> None:
    pilot = result.get("pilot")
    if not pilot:
        return
    rule = ", ".join(f"{k} {v}" for k, v in (pilot.get("filter") or {}).items())
    console.print(f"pilot ({pilot.get('method')}; K = {pilot.get('samples')}; {rule}): "
                  f"{pilot.get('verdict')}")
    kinds = pilot.get("by_kind") or {}
    if kinds:
        console.print("  kept per kind: " + ", ".join(
            f"{k} {v.get('kept')}/{v.get('candidates')}" for k, v in kinds.items()))


def _pair_table(title: str, columns: Sequence[str]) -> Table:
    """A table of (predictor → target) rows and right-aligned ``columns``."""
    table = Table(title=title)
    table.add_column("predictor → target")
    for col in columns:
        table.add_column(col, justify="right")
    return table


def _print_conditions(console: Console, result: dict[str, Any]) -> None:
    by_condition = result.get("by_condition")
    if not by_condition:
        return
    table = _pair_table("Per condition: top-1 match and log score [95% interval]",
                        list(by_condition))
    rows: dict[tuple[str, str], list[str]] = {}
    for entry in by_condition.values():
        for cell in entry["cells"]:
            rows.setdefault((cell["predictor"], cell["target"]), []).append(
                f"{_fmt(cell['top1_accuracy']['value'])} / {_fmt(cell['log_score']['value'])}"
            )
    for (p, t), values in rows.items():
        table.add_row(f"{p} → {t}", *values)
    print_table(console, table)
    for key, title in (
        ("learning_curve", "Learning curve: slope per past answer shown (m)"),
        ("simulate_contrast", "Simulate − zero-shot"),
    ):
        entries = result.get(key)
        if not entries:
            continue
        sub = Table(title=f"{title} [95% item bootstrap] (sign-flip p)")
        for col in ("predictor → target", "log score", "top-1"):
            sub.add_column(col, justify="left" if col.startswith("predictor") else "right")
        for e in entries:
            sub.add_row(
                f"{e['predictor']} → {e['target']}",
                *(
                    _with_ci(e[m], "+.4f")
                    + ("" if e[m].get("p") is None else f" (p={e[m]['p']:.3g})")
                    + (f" — {e[m]['reason']}" if e[m].get("reason") else "")
                    for m in ("log_score", "top1_accuracy")
                ),
            )
        print_table(console, sub)


def print_matrix(console: Console, result: dict[str, Any]) -> None:
    _print_pilot(console, result)
    if result.get("not_divergent"):
        console.print(
            f"No skill reported: {result['not_divergent']}. The predictions were not run "
            "(on items where the targets answer alike, predicting another is answering the "
            "question yourself)."
        )
        return
    seed = seed_phrase(result.get("seed"), held_out=bool(result.get("held_out")))
    run = f"run {result['run']} · " if result.get("run") else ""
    table = Table(
        title=f"Cross-model prediction matrix: {run}{result['n_items']} items, "
        f"{result['samples']} target samples each ({seed}); [95% hierarchical bootstrap]"
    )
    cols = ("predictor → target", "n", "log score", "Brier", "top-1", "skill S", "base",
            "p (Holm)", "unreadable", "notes")
    for col in cols:
        table.add_column(col, justify="left" if col in ("predictor → target", "notes") else "right")
    footnotes: dict[str, int] = {}  # a reason → its number (long reasons would wrap the table)
    for c in result["cells"]:
        notes = []
        if c["skill"].get("reason"):
            number = footnotes.setdefault(c["skill"]["reason"], len(footnotes) + 1)
            notes.append(f"S: see {number}")
        for key in ("predictor_errors", "unscored", "rejected"):
            if c[key]:
                notes.append(f"{key.replace('_', ' ')}: {c[key]}")
        table.add_row(
            f"{c['predictor']} → {c['target']}" + (" (self)" if c["self"] else ""),
            str(c["n"]),
            _with_ci(c["log_score"]),
            _with_ci(c["brier"]),
            _with_ci(c["top1_accuracy"]),
            "not estimable" if c["skill"].get("value") is None else _with_ci(c["skill"]),
            c["skill"].get("base_kind") or "—",
            _fmt(c["skill"].get("p_holm"), ".3g"),
            _unreadable(c),
            "; ".join(notes),
        )
    print_table(console, table, drop=("base", "p (Holm)", "Brier"))
    console.print("  unreadable: the target's answers with no readable answer (of its samples) · "
                  "the predictor's unparsed predictions (of its replies); more than half of "
                  "either makes a cell not estimable", markup=False, highlight=False)
    for reason, number in footnotes.items():
        console.print(f"  {number}. S: {reason}", markup=False, highlight=False)
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
    print_table(console, adv, drop=("Brier",))
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
    _print_conditions(console, result)
    _print_depths(console, result)


def _print_depths(console: Console, result: dict[str, Any]) -> None:
    by_depth = result.get("by_depth")
    if not by_depth:
        return
    title = "Skill S by belief depth (NestToM items) [95% hierarchical bootstrap]"
    start = 0
    while start < len(by_depth):  # as many depths side by side as the width holds
        end = len(by_depth)
        while end > start + 1 and not fits(_depth_table(title, by_depth[start:end]),
                                           console.width):
            end -= 1
        print_table(console, _depth_table(title, by_depth[start:end]))
        title, start = "Skill S by belief depth (continued)", end


def _depth_table(title: str, by_depth: Sequence[dict[str, Any]]) -> Table:
    table = _pair_table(title, [f"{e['depth']} ({e['n_items']} items)" for e in by_depth])
    for cell in by_depth[0]["cells"]:
        p, t = cell["predictor"], cell["target"]
        table.add_row(f"{p} → {t}", *(
            _with_ci(next(c for c in entry["cells"]
                          if c["predictor"] == p and c["target"] == t)["skill"])
            for entry in by_depth
        ))
    return table


def report_matrix(
    store: Store, run_id: str, fmt: str, *, n_boot: int = 2000, stats_seed: int = 0,
    reveal_held_out: bool = False, width: int = PIPED_WIDTH,
) -> str:
    """A stored matrix run as `mindledger report` shows it, rebuilt from its stored trials: its
    matrix as JSON (``json``), the tables `mindledger matrix` prints (``md``, fitted to
    ``width`` columns), one page with the heatmap of S per condition (``html``) or one row per
    cell (``csv``)."""
    if fmt not in ("md", "json", "html", "csv"):
        raise UserError(
            f"run {run_id} is a matrix run: it renders as md, json, html or csv, not {fmt}"
        )
    result = summarise_run(
        store, run_id, n_boot=n_boot, stats_seed=stats_seed, reveal_held_out=reveal_held_out
    )
    if fmt == "json":
        return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if fmt in ("html", "csv"):
        from reports.matrix_render import render_matrix_csv, render_matrix_html

        return render_matrix_html(result) if fmt == "html" else render_matrix_csv(result)
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
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
@click.option("--items", "n_items", type=click.IntRange(1, 10_000), default=20, show_default=True,
              help="Items in the matrix (at most; the pilot may keep fewer). S gets an "
              "interval from 20 items, the other figures from 10.")
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
def matrix(
    ctx: click.Context,
    agent_names: tuple[str, ...],
    references: tuple[str, ...],
    n_items: int,
    samples: int,
    kinds: str,
    n_candidates: int | None,
    no_pilot: bool,
    conditions: str,
    second_order: bool,
    seed: int | None,
    temperature: float | None,
    concurrency: int,
    resume_id: str | None,
    use_queue: bool,
    progress_mode: str,
    fmt: str,
) -> None:
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
      mindledger matrix --agent a --agent b --no-pilot --queue   # then: mindledger worker
    """
    settings = get_settings(ctx)
    err = Console(stderr=True, soft_wrap=True)
    if use_queue:
        from harness.queue import conninfo

        conninfo(settings)  # PostgreSQL only: say so before anything is stored
    if resume_id:
        if (agent_names or references or seed is not None or temperature is not None
                or n_candidates is not None or no_pilot or second_order):
            raise click.UsageError(
                "--resume takes no agent, seed or temperature options: the run's own are used"
            )
        workspace = get_workspace(ctx)
        run_id = resolve_run(ctx, resume_id)
        matrix_params(workspace.store, run_id)  # a matrix run, or a user error
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
        kind_list = [k.strip() for k in kinds.split(",") if k.strip()]
        wanted = check_matrix_options(
            samples=samples,
            conditions=[c.strip() for c in conditions.split(",") if c.strip()],
            second_order=second_order,
            pilot_kinds=None if no_pilot else kind_list,
            n_candidates=pilot_candidates(n_items, n_candidates),
        )
        used_seed = seeds.draw_seed(held_out=False) if seed is None else seed
        workspace = get_workspace(ctx)
        if no_pilot:
            run_id, _ = create_matrix_run(
                workspace.store,
                settings,
                planned=planned,
                n_items=n_items,
                samples=samples,
                seed=used_seed,
                conditions=wanted,
                second_order=second_order,
            )
        else:
            err.print(f"pilot: candidates of {kinds} (seed {used_seed})")
            run_id, _, record = plan_matrix_run(
                workspace.store,
                settings,
                planned=planned,
                n_items=n_items,
                samples=samples,
                kinds=kind_list,
                n_candidates=n_candidates,
                seed=used_seed,
                conditions=wanted,
                concurrency=concurrency,
                second_order=second_order,
            )
            err.print(f"pilot: {record.verdict}")
        err.print(f"matrix run {run_id} (seed {used_seed})")
    if use_queue:
        from harness.queue import enqueue_run

        done = enqueue_run(workspace.store, settings, run_id)
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
        return
    ledger = workspace.ledger
    try:
        result = execute_matrix_run(
            workspace.store,
            settings,
            ledger,
            run_id,
            concurrency=concurrency,
            progress=TrialProgress(err, progress_mode, accuracy=False),
        )
    except KeyboardInterrupt:
        # main says "Interrupted." once, after this
        err.print(f"matrix run {run_id} keeps every item finished: continue with "
                  f"`mindledger matrix --resume {run_id}`", highlight=False)
        raise
    problems = ledger.verify()
    result = {**result, "ledger_problems": [str(p) for p in problems]}
    if fmt == "json":
        echo_json(result)
        return
    if fmt == "csv":
        from reports.matrix_render import render_matrix_csv

        click.echo(render_matrix_csv(result), nl=False)
        return
    console = stdout_console()
    print_matrix(console, result)
    console.print(
        "ledger verifies" if not problems else f"LEDGER PROBLEMS: {result['ledger_problems']}"
    )
