"""Synthetic runs for the reports tests: trials drawn from known accuracies, stored through the
real :class:`ledger.store.Store` (SQLite), built once per module because writing trials one
transaction at a time is the slow part (one stored run serves the whole session)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ledger.db import open_engine
from ledger.store import Store
from reports.model import RunProfile
from reports.synthetic import SyntheticAgent, SyntheticRun, logistic_accuracy, synthetic_run

CHANCE = 0.25
SLOPE = -1.2
D50_AGENT = 2.7
D50_CONTROL = 1.6
D50_ABLATED = 1.9


def agents() -> list[SyntheticAgent]:
    """An agent under test, its control, two ablations (one that matters, one that does not)
    and three scripted references with known diagnoses."""
    full = logistic_accuracy(D50_AGENT, SLOPE, CHANCE)
    return [
        SyntheticAgent("piper", full, spec={"adapter": "openai", "model": "m"},
                       api_error_rate=0.05),
        SyntheticAgent("piper-control", logistic_accuracy(D50_CONTROL, SLOPE, CHANCE),
                       role="control", base_agent="piper", leak_share=0.7,
                       behaviour_accuracy=0.5),
        SyntheticAgent("piper-no-perspective", logistic_accuracy(D50_ABLATED, SLOPE, CHANCE),
                       role="ablation", base_agent="piper",
                       spec={"ablated": "perspective-filtering"}),
        SyntheticAgent("piper-no-witness-log", full, role="ablation", base_agent="piper",
                       spec={"ablated": "witness-log"}),
        SyntheticAgent("oracle", lambda d: 1.0, tb_accuracy=1.0, role="reference",
                       spec={"policy": "oracle"}, confidence_noise=None),
        SyntheticAgent("depth-capped:2", lambda d: 1.0 if d <= 2 else 0.0, tb_accuracy=1.0,
                       role="reference", spec={"policy": "depth-capped:2"},
                       confidence_noise=None),
        SyntheticAgent("not-reality", lambda d: 0.9, tb_accuracy=0.04, role="reference",
                       spec={"policy": "not-reality"}, confidence_noise=None),
    ]


@dataclass
class StoredRun:
    store: Store
    run_id: str
    run: SyntheticRun
    url: str


@pytest.fixture(scope="session")
def stored_profile(stored_run: StoredRun) -> RunProfile:
    """The stored run's profile (B=1000, bootstrap seed 1)."""
    from reports import build_profile

    return build_profile(stored_run.store, stored_run.run_id, seed=1, n_boot=1000)


@pytest.fixture(scope="session")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoredRun]:
    """A 7-agent synthetic run (~3,500 trials) in a fresh SQLite database."""
    path: Path = tmp_path_factory.mktemp("reports") / "reports.db"
    url = f"sqlite:///{path}"
    store = Store(open_engine(url))
    run = synthetic_run(np.random.default_rng(20261130), agents(), stories=30, games=2,
                        abc_scenarios=4, items_per_game_cell=2)
    run.write(store, "run-a", seed=11)
    yield StoredRun(store, "run-a", run, url)
    store.engine.dispose()


@pytest.fixture(scope="session")
def known() -> dict[str, float]:
    """The values the synthetic agents were drawn from."""
    return {"chance": CHANCE, "slope": SLOPE, "d50_agent": D50_AGENT,
            "d50_control": D50_CONTROL, "d50_ablated": D50_ABLATED}
