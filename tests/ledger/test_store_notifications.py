"""The store's part of the agent history and its notifications: which runs are an agent's, and
one notification per (agent, run, channel) — on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item


def _item(n: int) -> Item:
    return Item(family="nesttom", generator="t", version="1", seed=n, params={},
                prompt=f"item {n}", answer={"kind": "choice", "choices": ["a", "b"]},
                truth={"answer": "a"}, meta={})


def _run(store: Store, run_id: str, *, suite: str = "quick", role: str = "agent",
         status: str = "complete") -> None:
    store.create_run(run_id, suite=suite, seed=1, held_out=True, params={},
                     agents=[RunAgent("bot", role, {}), RunAgent("ref:oracle", "reference", {})],
                     items=[_item(1), _item(2)])
    store.set_run_status(run_id, status, finished=status in ("complete", "incomplete"))


def test_agent_runs_are_its_finished_suite_runs_as_the_agent_under_test(db_url: str) -> None:
    store = Store(open_engine(db_url))
    _run(store, "r1")
    _run(store, "m1", suite="matrix")  # S comes through the suite run it accompanies
    _run(store, "r2", status="incomplete")
    _run(store, "r3", status="running")  # not finished: not in a history yet
    _run(store, "b1", suite="baseline")
    _run(store, "c1", role="control")  # the bot as another's control is not its history
    assert store.agent_runs("bot") == ["r1", "r2", "b1"]
    assert store.agent_runs("bot", suite="quick") == ["r1", "r2"]
    assert store.agent_runs("ref:oracle") == []
    store.engine.dispose()


def test_a_run_is_notified_once_per_channel(db_url: str) -> None:
    store = Store(open_engine(db_url))
    _run(store, "r1")
    note = {"agent": "bot", "run_id": "r1", "target": "https://h.example", "attempts": 3,
            "payload": {"event": "regression"}}
    assert store.record_notification(channel="webhook", status="failed", error="HTTP 503",
                                     **note)  # type: ignore[arg-type]
    assert not store.record_notification(channel="webhook", status="sent", error=None,
                                         **note)  # type: ignore[arg-type]
    assert store.record_notification(channel="command", status="sent", error=None,
                                     **note)  # type: ignore[arg-type]
    rows = store.notifications("bot")
    assert [(r.channel, r.status, r.error) for r in rows] == [
        ("webhook", "failed", "HTTP 503"), ("command", "sent", None)]
    assert json.loads(rows[0].payload_json) == {"event": "regression"}
    assert store.notifications("bot", run_id="r2") == [] and store.notifications("other") == []
    store.engine.dispose()
