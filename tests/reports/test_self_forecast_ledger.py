"""The self-forecast section from forecasts the ledger holds (issue 29): committed, sealed and
revealed through :class:`ledger.predictions.Ledger`, read by :func:`reports.build_profile` from
the same database. Skipped until the ledger has self-forecasts (branch i29-ledger)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.db import open_engine
from ledger.predictions import Ledger
from ledger.protocol import commitment
from ledger.store import Store
from mindledger.forecasts import Quantiles, forecast_body
from reports import build_profile
from reports.history import agent_history
from reports.history_render import render_history_text
from reports.render import report
from reports.self_forecast import figure_value

from .conftest import StoredRun

pytestmark = pytest.mark.skipif(
    not hasattr(Ledger, "commit_forecast"), reason="the ledger has no self-forecasts yet"
)

KEY = Ed25519PrivateKey.from_private_bytes(b"\x29" * 32)


class Clock:
    def __init__(self) -> None:
        self.t = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        self.t += dt.timedelta(milliseconds=1)
        return self.t.isoformat(timespec="microseconds")


@pytest.fixture
def copied(stored_run: StoredRun, tmp_path: Path) -> Iterator[Store]:
    """The stored run's database, copied: the forecasts written here stay here."""
    import shutil

    src = str(stored_run.store.engine.url).removeprefix("sqlite:///")
    dst = tmp_path / "forecasts.db"
    shutil.copy(src, dst)
    store = Store(open_engine(f"sqlite:///{dst}"))
    with store.engine.begin() as conn:  # finished, so that it is in the agent's history
        conn.execute(sa.text("UPDATE runs SET status = 'complete'"))
    yield store
    store.engine.dispose()


def test_build_profile_reads_the_agents_forecasts_from_the_ledger(
    copied: Store, stored_run: StoredRun, tmp_path: Path
) -> None:
    run_id = stored_run.run_id
    led = Ledger(copied.engine, KEY, clock=Clock(), witness_dir=tmp_path / "witness")
    try:
        before = build_profile(copied, run_id, seed=1, n_boot=200)
        assert before.agents["piper"].self_forecast is None
        truth = figure_value(before, "piper", "false_belief_accuracy")
        assert truth.value is not None
        wide = Quantiles((0.05, 0.25, 0.5, 0.75, 0.95), (0.0, 0.3, 0.5, 0.7, 1.0))
        narrow = Quantiles((0.05, 0.5, 0.95), (0.97, 0.98, 0.99))  # far above: wrong
        ids = []
        for fig, f in (("false_belief_accuracy", wide), ("leakage_resistance", narrow)):
            body, salt = forecast_body(f, "the solver fails at depth 3"), os.urandom(32).hex()
            state = led.commit_forecast("piper", run_id, fig, commitment(body, bytes.fromhex(salt)))
            ids.append((state.id, body, salt, fig))
        led.seal_run(run_id)
        for fid, body, salt, fig in ids:
            v = figure_value(before, "piper", fig)
            led.reveal_forecast(fid, body, salt, outcome=v.value, previous=None)
    finally:
        led.close()
    after = build_profile(copied, run_id, seed=1, n_boot=200)
    sf = after.agents["piper"].self_forecast
    assert sf is not None
    assert (sf.counts.committed, sf.counts.scored) == (2, 2)
    assert [x.figure for x in sf.this_run] == ["false_belief_accuracy", "leakage_resistance"]
    assert sf.this_run[0].in_90 is True and sf.this_run[0].outcome == pytest.approx(truth.value)
    assert [x.figure for x in sf.confidently_wrong] == ["leakage_resistance"]
    assert after.agents["piper-control"].self_forecast is None
    # mindledger report reads them too
    assert "### Self-forecasts" in report(copied, run_id, "md", seed=1, n_boot=200)
    rows = report(copied, run_id, "forecasts-csv", seed=1, n_boot=200).splitlines()
    assert len(rows) == 3 and rows[1].startswith(f"{run_id},piper,f")
    history = agent_history(copied, "piper", n_boot=200, seed=1)
    assert [r.id for r in history.runs] == [run_id]
    assert [x.figure for x in history.confidently_wrong()] == ["leakage_resistance"]
    assert "forecast of leakage_resistance" in render_history_text(history)
