"""Issue 29's acceptance: over 20 nightly runs of a scripted agent whose accuracy drifts, the
three reference self-forecasters are diagnosed as what they are.

Each night, before the run's first trial, each forecaster commits a held forecast of its agent's
false-belief accuracy for that night's run (the oracle from the accuracy the agent will have,
the naive and overconfident forecasters from the agent's previous profile); the run is sealed,
its trials are drawn (a synthetic agent: accuracies declared, answers scored as the profile
scores them) and stored, and the service's post-run step reveals the forecasts against the
run's profile. The last run's profile then says: oracle skill > 0.5 with its interval above 0;
naive skill 0 inside its interval; overconfident 90%-interval coverage below 50%.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.run.forecasting import reveal_held
from ledger.db import open_engine
from ledger.errors import LedgerStateError
from ledger.forecasts import read_forecasts
from ledger.predictions import Ledger
from ledger.protocol import commitment
from ledger.store import Store
from mindledger.forecasts import Quantiles, forecast_body
from reports.profile import build_profile
from reports.self_forecast import figure_value
from reports.self_forecasters import naive, oracle, overconfident
from reports.synthetic import SyntheticAgent, false_belief_spread, synthetic_items, synthetic_run

NIGHTS = 20
N_BOOT = 200
FIGURE = "false_belief_accuracy"
KINDS = ("oracle", "naive", "overconfident")


def _accuracies(seed: int) -> list[float]:
    """The agent's false-belief accuracy night by night: a random walk from 0.6 (steps of sd
    0.1) reflected into [0.15, 0.95]."""
    out, x = [], 0.6
    for step in np.random.default_rng(seed).normal(0.0, 0.1, NIGHTS):
        x += float(step)
        x = 1.9 - x if x > 0.95 else 0.3 - x if x < 0.15 else x
        out.append(x)
    return out


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Ledger]]:
    engine = open_engine(f"sqlite:///{tmp_path / 'm.db'}")
    led = Ledger(engine, Ed25519PrivateKey.generate(), witness_dir=tmp_path / "witness")
    yield Store(engine), led
    led.close()
    engine.dispose()


def _commit(led: Ledger, agent: str, run_id: str, forecast: Quantiles) -> str:
    body, salt = forecast_body(forecast, f"{agent}'s reference forecast"), os.urandom(32).hex()
    state = led.commit_forecast(
        agent, run_id, FIGURE, commitment(body, bytes.fromhex(salt)), held=(body, salt)
    )
    return state.id


def test_reference_forecasters_are_diagnosed(stores: tuple[Store, Ledger]) -> None:
    store, led = stores
    items = synthetic_items(stories=100, depths=("R0", "R1", "R2", "R3"), lengths=(12,))
    rng = np.random.default_rng(29)
    runs: list[str] = []
    for night, acc in enumerate(_accuracies(29)):
        run_id = f"night-{night:02d}"
        agents = [
            SyntheticAgent(kind, fb_accuracy=lambda d, p=acc: p, tb_accuracy=0.97) for kind in KINDS
        ]
        # before the run: each forecaster commits its forecast of its own agent's figure
        prev = build_profile(store, runs[-1], n_boot=N_BOOT) if runs else None
        for a in agents:
            if a.name == "oracle":
                _commit(led, a.name, run_id, oracle(*false_belief_spread(a, items)))
                continue
            if prev is None:
                continue  # no previous value yet: nothing to forecast from
            was = figure_value(prev, a.name, FIGURE)
            assert was.value is not None and was.ci is not None, was.reason
            if a.name == "naive":
                f = naive(was.value, was.ci, was.level)
            else:
                f = overconfident(was.value)
            _commit(led, a.name, run_id, f)
        # the run: sealed before its first trial, then its trials, then the post-run reveal
        led.seal_run(run_id)
        with pytest.raises(LedgerStateError):
            _commit(led, "oracle", run_id, oracle(0.5, 0.1))
        synthetic_run(rng, agents, items).write(store, run_id)
        revealed = reveal_held(led, store, run_id, n_boot=N_BOOT)
        assert len(revealed) == (1 if night == 0 else 3)
        runs.append(run_id)

    assert led.verify() == []
    profile = build_profile(store, runs[-1], n_boot=N_BOOT)
    sections = {k: profile.agents[k].self_forecast for k in KINDS}
    for kind, sf in sections.items():
        assert sf is not None, kind
        assert sf.counts.scored == (NIGHTS if kind == "oracle" else NIGHTS - 1), kind

    oracle_skill = sections["oracle"].skill["quantile_score"]  # type: ignore[union-attr]
    assert oracle_skill.value is not None and oracle_skill.value > 0.5, oracle_skill
    assert oracle_skill.ci is not None and (oracle_skill.ci[0] or 0) > 0, oracle_skill

    naive_skill = sections["naive"].skill["quantile_score"]  # type: ignore[union-attr]
    assert naive_skill.value == pytest.approx(0.0, abs=1e-9), naive_skill
    lo, hi = naive_skill.ci or (None, None)
    assert lo is not None and hi is not None and lo <= 0.0 <= hi, naive_skill

    cover90 = sections["overconfident"].coverage["90"]  # type: ignore[union-attr]
    assert cover90.value is not None and cover90.value < 0.5, cover90
    oracle90 = sections["oracle"].coverage["90"]  # type: ignore[union-attr]
    assert oracle90.value is not None and oracle90.value >= 0.7, oracle90

    # every forecast was committed before its run's seal (the ledger's order says so)
    seals = {e.subject.removeprefix("run:"): e.seq for e in led.entries() if e.kind == "run-start"}
    for f in read_forecasts(store.engine):
        assert f.seq < seals[f.run_id]
