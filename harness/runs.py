"""Runs end to end: plan (items + agents, stored at once), execute, resume.

Nothing about a run lives only in one process's memory: the run row, its agents' specs and its
items are stored before the first trial, so :func:`resume_run` can finish any interrupted run
from the database alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.build import built_agents, concurrency_of, needs_local_model
from harness.runner import ProgressSink, RunSummary, execute_run
from harness.settings import Settings
from harness.suites import get_suite
from harness.workspace import SeedPolicy
from ledger.store import RunAgent, Store
from mindledger import family as family_registry
from mindledger.items import Item

__all__ = ["create_run", "execute_stored_run", "new_run_id"]


def new_run_id(now: dt.datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-xxxxxx``: sortable by time, unique by its random tail."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def create_run(
    store: Store,
    settings: Settings,
    *,
    suite: str,
    planned: Sequence[RunAgent],
    seed: int | None = None,
    held_out: bool = False,
    hitom_path: Path | None = None,
    run_id: str | None = None,
    items: Sequence[Item] | None = None,
) -> tuple[str, int, int]:
    """Generate the suite's items and store the run with its agents and items (one
    transaction). Returns (run id, seed, number of items).

    ``items``, when given, are stored instead of a preset's (``suite`` then only names the
    run); each must be of a registered family (:mod:`mindledger.family`).

    Development runs refuse held-out seeds, so the held-out share stays unseen until the
    scheduler draws from it."""
    spec = get_suite(suite) if items is None else None
    seeds = SeedPolicy.of(settings)
    seeds.check_seed(seed, held_out=held_out)
    if seed is None:
        seed = seeds.draw_seed(held_out=held_out)
    if spec is not None:
        items = spec.build(seed, hitom_path=hitom_path)
        counts = spec.counts
    else:
        assert items is not None
        for name in sorted({it.family for it in items}):
            family_registry.get(name)  # an unknown family is refused before anything is stored
        counts = dict(Counter(it.family for it in items))
    run_id = run_id or new_run_id()
    params: dict[str, Any] = {
        "suite": suite,
        "seed": seed,
        "counts": counts,
        "hitom": str(hitom_path) if hitom_path else None,
    }
    store.create_run(
        run_id,
        suite=suite,
        seed=seed,
        held_out=seeds.is_held_out(seed),
        params=params,
        agents=planned,
        items=items,
    )
    return run_id, seed, len(items)


@contextlib.contextmanager
def _maybe_local_model(planned: Sequence[RunAgent], settings: Settings) -> Iterator[str | None]:
    if not needs_local_model(planned):
        yield None
        return
    from harness.local_model import running_local_model

    with running_local_model(threads=settings.model_threads, log_dir=settings.home / "logs") as srv:
        yield srv.base_url


async def execute_stored_run(
    store: Store,
    settings: Settings,
    run_id: str,
    *,
    progress: ProgressSink | None = None,
    local_base_url: str | None = None,
) -> RunSummary:
    """Run every missing trial of a stored run; mark it complete when none is missing.

    Starts the embedded model when an agent needs it (unless ``local_base_url`` is given) and
    stops it afterwards, whatever happens."""
    run = store.get_run(run_id)
    planned = store.run_agents(run_id)
    items = store.run_items(run_id)
    store.set_run_status(run_id, "running")
    try:
        with contextlib.ExitStack() as stack:
            base = local_base_url
            if base is None:
                base = stack.enter_context(_maybe_local_model(planned, settings))
            async with built_agents(
                planned, settings, seed=run.seed, store=store, local_base_url=base
            ) as agents:
                summary = await execute_run(
                    store,
                    run_id,
                    agents,
                    items,
                    concurrency={ra.name: concurrency_of(ra, settings) for ra in planned},
                    progress=progress,
                )
    except BaseException:
        store.set_run_status(run_id, "interrupted")
        raise
    remaining = len(planned) * len(items) - len(store.done_pairs(run_id))
    store.set_run_status(run_id, "complete" if remaining == 0 else "incomplete", finished=True)
    return summary
