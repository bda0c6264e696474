"""The profile shows the query proxy's record of the run's agents: calls, calls that carried a
prediction, refusals by reason and open obligations, read from the prediction ledger in the
same database; agents that never called the proxy are not listed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.db import open_engine
from ledger.predictions import Ledger
from ledger.protocol import query_hash, query_messages, response_hash
from ledger.store import Store
from reports import build_profile, render_html, render_markdown
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run

QH = query_hash(query_messages("q"))


def test_the_profile_counts_each_agents_calls_refusals_and_obligations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    store = Store(open_engine(url))
    agents = [
        SyntheticAgent("piper", logistic_accuracy(2.0, -1.2, 0.25)),
        SyntheticAgent("piper-control", logistic_accuracy(1.5, -1.2, 0.25), role="control",
                       base_agent="piper"),
    ]  # fmt: skip
    synthetic_run(np.random.default_rng(3), agents, stories=4, games=1).write(store, "r")
    led = Ledger(store.engine, Ed25519PrivateKey.generate(), witness_dir=None)
    led.record_call("piper", "dusk", request="a", query_hash=QH, status=200)
    led.record_refusal("piper", "dusk", "sampled", request="b", query_hash=QH)
    led.record_refusal("piper", "dusk", "obligation", request="c", query_hash=QH)
    p = led.client("piper").commit("dusk", "q2", {"7": 1.0})
    led.record_call(
        "piper", "dusk", request="d", query_hash=query_hash(query_messages("q2")), status=200,
        prediction=p.id, answer="7",
        response=response_hash("{}"),
    )  # fmt: skip
    led.record_refusal("piper", "wren", "sampled", request="e", query_hash=QH)
    led.record_call("stranger", "dusk", request="f", query_hash=QH, status=200)
    assert led.verify() == []
    profile = build_profile(store, "r", n_boot=50)
    assert profile["proxy"]["agents"] == {
        "piper": {
            "calls": 2,
            "predicted": 1,
            "unpredicted": 1,
            "refused": 3,
            "refusals": {"obligation": 1, "sampled": 2},
            "open_obligations": ["wren"],
        }
    }
    md = render_markdown(profile)
    assert "## Query proxy" in md
    assert "| piper | 2 | 1 | 3 | obligation 1, sampled 2 | wren |" in md
    assert "<h2>Query proxy</h2>" in render_html(profile, figures=[])
    store.engine.dispose()
