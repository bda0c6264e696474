"""Runs, items and trials on SQLite and real PostgreSQL."""

from __future__ import annotations

from ledger.db import open_engine
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.items import Item


def make_items(n: int) -> list[Item]:
    return [
        Item(
            family="t",
            generator="g",
            version="1",
            seed=i,
            params={},
            prompt=f"q{i}",
            answer={"kind": "yesno"},
            truth={"answer": "yes"},
        )
        for i in range(n)
    ]


def test_run_items_trials_round_trip(db_url: str) -> None:
    store = Store(open_engine(db_url))
    items = make_items(5)
    agents = [
        RunAgent("a", "agent", {"adapter": "reference", "policy": "oracle"}),
        RunAgent("a-control", "control", {"adapter": "reference", "policy": "random"}, "a"),
    ]
    store.create_run(
        "r1", suite="s", seed=1, held_out=False, params={"x": 1}, agents=agents, items=items
    )
    # a second run sharing items stores them once
    store.create_run(
        "r2", suite="s", seed=1, held_out=False, params={}, agents=agents[:1], items=items[:2]
    )
    assert [i.id for i in store.run_items("r1")] == [i.id for i in items]
    assert store.run_items("r2") == items[:2]
    assert {a.name for a in store.run_agents("r1")} == {"a", "a-control"}

    rec = TrialRecord(
        run_id="r1",
        agent="a",
        item_id=items[0].id,
        status="ok",
        transcript=[{"role": "user", "content": "q0"}],
        answer="yes",
        correct=True,
    )
    assert store.record_trial(rec) is True
    assert store.record_trial(rec) is False  # exactly one per (run, agent, item)
    assert store.done_pairs("r1") == {("a", items[0].id)}
    assert store.trial_counts("r1") == {"a": {"ok": 1, "api_error": 0, "not_applicable": 0, "correct": 1}}
    store.set_run_status("r1", "complete", finished=True)
    assert store.get_run("r1").status == "complete"
    assert [r.id for r in store.list_runs()] in (["r2", "r1"], ["r1", "r2"])


def test_create_run_is_one_transaction(db_url: str) -> None:
    store = Store(open_engine(db_url))
    items = make_items(3)
    agents = [RunAgent("a", "agent", {"adapter": "reference"})]
    store.create_run("r1", suite="s", seed=1, held_out=False, params={}, agents=agents, items=items)
    try:  # same run id again: must fail without leaving new items or agents behind
        store.create_run(
            "r1",
            suite="s",
            seed=2,
            held_out=False,
            params={},
            agents=[RunAgent("b", "agent", {})],
            items=make_items(4),
        )
    except Exception:
        pass
    else:
        raise AssertionError("duplicate run id accepted")
    assert len(store.run_items("r1")) == 3
    assert {a.name for a in store.run_agents("r1")} == {"a"}


def test_cache(db_url: str) -> None:
    store = Store(open_engine(db_url))
    assert store.cache_get("k") is None
    store.cache_put("k", {"x": 1})
    store.cache_put("k", {"x": 2})
    assert store.cache_get("k") == {"x": 1}
