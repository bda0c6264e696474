"""``mindledger matrix``: the cross-model prediction matrix (seed 002 §15.2, B9)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from harness.build import built_agents, needs_local_model, plan_agents
from harness.cli.common import echo_json, get_settings
from harness.matrix import make_items, run_matrix
from harness.settings import Settings
from harness.workspace import SeedPolicy, Workspace
from ledger.store import RunAgent


@contextlib.contextmanager
def _local_model(planned: Sequence[RunAgent], settings: Settings) -> Iterator[str | None]:
    if not needs_local_model(planned):
        yield None
        return
    from harness.local_model import running_local_model

    with running_local_model(threads=settings.model_threads, log_dir=settings.home / "logs") as srv:
        yield srv.base_url


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _with_ci(figure: dict[str, Any], spec: str = ".3f") -> str:
    """``0.512 [0.401, 0.630]``, or the value alone when it has no interval."""
    ci = figure.get("ci")
    text = _fmt(figure.get("value"), spec)
    return text if not ci else f"{text} [{_fmt(ci[0], spec)}, {_fmt(ci[1], spec)}]"


def print_matrix(console: Console, result: dict[str, Any]) -> None:
    table = Table(
        title=f"Cross-model prediction matrix: {result['n_items']} items, "
        f"{result['samples']} target samples each (seed {result.get('seed')}); "
        "[95% hierarchical bootstrap]"
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
    as_json: bool,
) -> None:
    """Cross-model prediction matrix: who predicts whom, scored through the ledger.

    Every agent predicts every agent (itself included, as "a fresh copy of yourself") on
    arbitrary-choice items: the predicted distribution is committed to the prediction ledger
    before the target is asked, the target is asked --samples times, and the ledger reveals
    and scores. No control agents and no response cache: each sample is a real query.

    \b
    Examples:
      mindledger matrix --agent local --reference random --items 5
      mindledger matrix --agent a --agent b --samples 5 --seed 11 --json
    """
    settings = get_settings(ctx)
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
    items = make_items(used_seed, n_items)
    workspace = Workspace.open(settings)
    ledger = workspace.ledger

    async def go(base_url: str | None) -> dict[str, Any]:
        async with built_agents(
            planned, settings, seed=used_seed, store=None, local_base_url=base_url
        ) as agents:
            return await run_matrix(
                {a.name: a for a in agents},
                items,
                ledger,
                samples=samples,
                concurrency=concurrency,
            )

    try:
        with _local_model(planned, settings) as base:
            result = asyncio.run(go(base))
        problems = ledger.verify()
    finally:
        workspace.close()
    result = {"seed": used_seed, **result, "ledger_problems": [str(p) for p in problems]}
    if as_json:
        echo_json(result)
        return
    console = Console()
    print_matrix(console, result)
    console.print(
        "ledger verifies" if not problems else f"LEDGER PROBLEMS: {result['ledger_problems']}"
    )
