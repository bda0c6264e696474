"""The profile shows the query proxy's record of the run's agents: calls, calls that carried a
prediction, refusals by reason and open obligations, read from the prediction ledger in the
same database; agents that never called the proxy are not listed."""

from __future__ import annotations

import datetime as dt
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


class Clock:
    def __init__(self) -> None:
        self.t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        return self.t.isoformat(timespec="microseconds")


def test_the_profile_counts_each_agents_calls_refusals_and_obligations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    store = Store(open_engine(url))
    agents = [
        SyntheticAgent("piper", logistic_accuracy(2.0, -1.2, 0.25)),
        SyntheticAgent("piper-control", logistic_accuracy(1.5, -1.2, 0.25), role="control",
                       base_agent="piper"),
    ]  # fmt: skip
    synthetic_run(np.random.default_rng(3), agents, stories=4, games=1).write(store, "r")
    clock = Clock()
    led = Ledger(store.engine, Ed25519PrivateKey.generate(), witness_dir=None, clock=clock)
    q0 = query_hash(query_messages("q0"))
    led.record_call("piper", "dusk", request="a", query_hash=q0, status=200)
    led.record_refusal("piper", "dusk", "sampled", request="b", query_hash=QH)
    led.record_refusal("piper", "dusk", "obligation", request="c", query_hash=QH)
    client = led.client("piper")

    def predicted(query: str, request: str) -> None:
        p = client.commit("dusk", query, {"7": 1.0})
        led.record_call(
            "piper", "dusk", request=request, query_hash=query_hash(query_messages(query)),
            status=200, prediction=p.id, answer="7", response=response_hash("{}"),
        )  # fmt: skip

    predicted("q2", "d")  # a throwaway: another query's prediction leaves dusk owed
    predicted("q", "d2")  # the sampled query's own prediction meets it
    led.record_refusal("piper", "wren", "sampled", request="e", query_hash=QH)
    led.record_call("stranger", "dusk", request="f", query_hash=QH, status=200)
    assert led.verify() == []
    profile = build_profile(store, "r", n_boot=50)
    expected = {
        "calls": 3,
        "predicted": 2,
        "unpredicted": 1,
        "refused": 3,
        "refusals": {"obligation": 1, "sampled": 2},
        "open_obligations": ["wren"],
        "obligations": {"opened": 2, "met": 1, "pending": 1, "abandoned": 0},
        "abandoned_obligations": [],
    }
    assert profile.to_json()["proxy"]["agents"] == {"piper": expected}
    md = render_markdown(profile)
    assert "## Query proxy" in md
    assert "| piper | 3 | 2 | 3 | obligation 1, sampled 2 | 2 | 1 | 0 | wren |" in md
    assert "<h2>Query proxy</h2>" in render_html(profile, figures=[])
    # a day later (as the ledger's own last entry says), wren's obligation is abandoned
    clock.t += dt.timedelta(hours=24, seconds=1)
    led.record_call("stranger", "dusk", request="g", query_hash=q0, status=200)
    profile = build_profile(store, "r", n_boot=50)
    piper = profile.to_json()["proxy"]["agents"]["piper"]
    assert piper["obligations"] == {"opened": 2, "met": 1, "pending": 0, "abandoned": 1}
    (gone,) = piper["abandoned_obligations"]
    assert (gone["target"], gone["query_hash"]) == ("wren", QH)
    assert "| piper | 3 | 2 | 3 | obligation 1, sampled 2 | 2 | 1 | 1 | wren |" in (
        render_markdown(profile)
    )
    store.engine.dispose()
