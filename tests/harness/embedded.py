"""What the tests on the embedded model share: the guard (skipped only where the model is not
installed and CI is unset), a stored run executed on it, and the "reported" rule for figures."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.agent.families import verify_items
from harness.config.settings import Settings, load_settings
from harness.model.local_model import model_status
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item


def require_embedded_model() -> None:
    """Skip the calling test module where the model is not installed (an error under CI)."""
    if not model_status()[0]:
        if os.environ.get("CI"):
            raise RuntimeError("the embedded model must be installed under CI: "
                               + model_status()[1])
        pytest.skip("embedded model not installed", allow_module_level=True)


def embedded_settings(tmp_path: Path, db: str) -> Settings:
    """Settings over the SQLite database ``db`` in ``tmp_path``, with a timeout a loaded CI
    machine cannot reach (it can take minutes per turn: the tests are about figures, not speed)."""
    url = f"sqlite:///{tmp_path / db}"
    settings = load_settings(None, env={}, flags={"db_url": url, "home": str(tmp_path / "home")})
    return replace(settings, timeout=3600.0)


def run_stored(settings: Settings, planned: Sequence[RunAgent], items: Sequence[Item], *,
               suite: str, trials: int) -> tuple[Store, str]:
    """Create the run of ``items`` (``trials`` trials in all) and execute it (which starts and
    stops the model); it completes with every item verified."""
    store = Store(open_engine(settings.db_url))
    run_id, _, n = create_run(store, settings, suite=suite, planned=planned, seed=5,
                              items=items)
    assert n == trials
    asyncio.run(execute_stored_run(store, settings, run_id))
    assert store.get_run(run_id).status == "complete"
    assert verify_items(store.run_items(run_id)) == []
    return store, run_id


def reported(figure: dict[str, Any]) -> bool:
    """A value with its n, or a reason that says it is not estimable."""
    if figure.get("value") is not None:
        return isinstance(figure.get("n"), int) and figure["n"] >= 1
    return str(figure.get("reason", "")).startswith("not estimable: ")


__all__ = ["embedded_settings", "reported", "require_embedded_model", "run_stored"]
