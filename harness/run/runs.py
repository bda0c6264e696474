"""Runs end to end: plan (items + agents, stored at once), execute, resume.

Nothing about a run lives only in one process's memory: the run row, its agents' specs and its
items are stored before the first trial, so :func:`resume_run` can finish any interrupted run
from the database alone.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config.settings import Settings
from harness.config.workspace import SeedPolicy
from harness.model.local_model import ModelEndpoint
from harness.run.execution import execute_batch, model_at, nothing_pending
from harness.run.runner import ProgressSink, RunSummary
from harness.run.suites import get_suite
from ledger.store import RunAgent, Store
from mindledger import family as family_registry
from mindledger.items import Item

if TYPE_CHECKING:
    from ledger.predictions import Ledger

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
    items: Iterable[Item] | None = None,
    extra_params: Mapping[str, Any] | None = None,
) -> tuple[str, int, int]:
    """Generate the suite's items and store the run with its agents and items (one
    transaction, all or nothing). Returns (run id, seed, number of items).

    The items stream into storage as they are generated, never all in memory at once.
    ``items``, when given (any iterable, a generator included), are stored instead of a
    preset's (``suite`` then only names the run); each must be of a registered family
    (:mod:`mindledger.family`), and its family counts are the run's ``params["counts"]``.
    ``extra_params`` are added to the run's params (a matrix run's samples and agents).

    Development runs refuse held-out seeds, so the held-out share stays unseen until the
    scheduler draws from it."""
    spec = get_suite(suite) if items is None else None
    seeds = SeedPolicy.of(settings)
    seeds.check_seed(seed, held_out=held_out)
    if seed is None:
        seed = seeds.draw_seed(held_out=held_out)
    families: Counter[str] = Counter()

    def counted(items: Iterable[Item]) -> Iterator[Item]:
        for it in items:
            if it.family not in families:
                family_registry.get(it.family)  # an unknown family: nothing is stored
            families[it.family] += 1
            yield it

    if spec is not None:
        stream = counted(spec.items(seed, hitom_path=hitom_path))
    else:
        assert items is not None
        stream = counted(items)
    run_id = run_id or new_run_id()

    def params() -> dict[str, Any]:  # once every item has been read
        return {
            "suite": suite,
            "seed": seed,
            "counts": spec.counts if spec is not None else dict(families),
            "hitom": str(hitom_path) if hitom_path else None,
            **(extra_params or {}),
        }

    store.create_run(
        run_id,
        suite=suite,
        seed=seed,
        held_out=seeds.is_held_out(seed),
        params=params,
        agents=planned,
        items=stream,
    )
    return run_id, seed, families.total()


async def execute_stored_run(
    store: Store,
    settings: Settings,
    run_id: str,
    *,
    progress: ProgressSink | None = None,
    local_base_url: ModelEndpoint | None = None,
    ledger: Ledger | None = None,
) -> RunSummary:
    """Run every missing trial of a stored run, as one batch in this process
    (:func:`harness.run.execution.execute_batch`): the run ends ``complete`` when no trial is
    missing, else ``incomplete``; ``interrupted`` if it raises or is cancelled (Ctrl-C).

    Starts the embedded model when an agent needs it (unless ``local_base_url`` is given) and
    stops it afterwards, whatever happens. The self-forecasts the service holds for the run are
    revealed when it ends, with ``ledger`` (default: one opened from the settings)."""
    result = await execute_batch(
        store,
        settings,
        run_id,
        local_model=None if local_base_url is None else model_at(local_base_url),
        progress=progress,
        others_pending=nothing_pending,
        interrupt_on_failure=True,
        ledger=ledger,
    )
    if result.summary is not None:
        return result.summary
    done = await asyncio.to_thread(store.done_pairs, run_id)
    return RunSummary(run_id, 0.0, attempted=0, skipped=len(done))
