"""The suite's own validity check: on the quick suite, every reference agent is diagnosed as
what it is (issue 5's acceptance), through the real runner and storage."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import pytest

from harness.build import plan_agents
from harness.runs import create_run, execute_stored_run
from harness.settings import load_settings
from ledger.db import open_engine
from ledger.store import Store

POLICIES = ("oracle", "random", "depth-capped:2", "reality-leak", "not-reality", "level:2")


@pytest.fixture(scope="module", params=[12, 40, 33])
def quick_run(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[Store, str]:
    path = tmp_path_factory.mktemp("diag") / "t.db"
    settings = load_settings(None, env={}, flags={"db_url": f"sqlite:///{path}"})
    store = Store(open_engine(settings.database_url))
    planned = plan_agents(settings, agents=(), references=POLICIES)
    run_id, _, _ = create_run(store, settings, suite="quick", planned=planned, seed=request.param)
    asyncio.run(execute_stored_run(store, settings, run_id))
    return store, run_id


def rows(store: Store, run_id: str, agent: str) -> list[tuple[dict, object]]:
    items = {i.id: i for i in store.run_items(run_id)}
    out = []
    for t in store.trials(run_id, f"ref:{agent}"):
        if t.status == "ok":
            out.append((items[t.item_id], t))
    return out


def belief_rows(store: Store, run_id: str, agent: str):
    return [
        (i, t)
        for i, t in rows(store, run_id, agent)
        if i.family == "nesttom" and i.meta["question"] == "belief"
    ]


def test_every_pair_stored_once(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    pairs = [(t.agent, t.item_id) for t in store.trials(run_id)]
    assert len(pairs) == len(set(pairs)) == len(POLICIES) * len(store.run_items(run_id))
    assert store.get_run(run_id).status == "complete"


def test_oracle_is_perfect(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    scored = [t for i, t in rows(store, run_id, "oracle") if not i.meta.get("excluded")]
    assert scored and all(t.correct for t in scored)


def test_reality_leak_shows_reality_leak_errors(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    fb = [
        (i, t)
        for i, t in belief_rows(store, run_id, "reality-leak")
        if i.meta["belief"] == "false" and i.meta["depth"] != "R0"
    ]
    assert fb and all(not t.correct and t.primary_error == "reality_leak" for _, t in fb)
    tb = [t for i, t in belief_rows(store, run_id, "reality-leak") if i.meta["belief"] == "true"]
    assert tb and all(t.correct for t in tb)


def test_depth_capped_fails_from_depth_three_with_truncation(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    by_depth: dict[int, list] = defaultdict(list)
    for i, t in belief_rows(store, run_id, "depth-capped:2"):
        if i.meta["belief"] == "false":
            by_depth[i.meta["depth_n"]].append(t)
    assert all(t.correct for d in (0, 1, 2) for t in by_depth[d])
    deep = [t for d in (3, 4, 5) for t in by_depth[d]]
    assert deep and all(not t.correct for t in deep)
    # every deep answer is the depth-2 prefix's: truncation:2 is always among its codes (the
    # primary code is reality_leak or projection when that prefix's answer is also one of those)
    assert all("truncation:2" in json.loads(t.score_json)["error_codes"] for t in deep)


def test_not_reality_fails_true_belief_controls(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    tb = [t for i, t in belief_rows(store, run_id, "not-reality") if i.meta["belief"] == "true"]
    assert tb and not any(t.correct for t in tb)


def test_level_bot_plays_games_only(quick_run: tuple[Store, str]) -> None:
    store, run_id = quick_run
    statuses = {
        (store_item.family, t.status)
        for store_item, t in [
            ({i.id: i for i in store.run_items(run_id)}[t.item_id], t)
            for t in store.trials(run_id, "ref:level:2")
        ]
    }
    assert ("nesttom", "not_applicable") in statuses and ("games", "ok") in statuses


def test_profiles_diagnose_references(quick_run: tuple[Store, str]) -> None:
    """Issue 6: oracle D50 beyond the deepest level, depth-capped:2 between 2 and 3,
    not-reality invalid (reports.diagnose_references checks each)."""
    from reports import build_profile, diagnose_references

    store, run_id = quick_run
    profile = build_profile(store, run_id, n_boot=200)
    assert diagnose_references(profile) == []
    agents = profile["agents"]
    assert agents["ref:oracle"]["d50"]["status"] == "beyond"
    assert agents["ref:not-reality"]["valid"] is False
    capped = agents["ref:depth-capped:2"]["d50"]
    assert capped["status"] == "bracketed"


def test_stored_items_regenerate_bit_for_bit(quick_run: tuple[Store, str]) -> None:
    import dataclasses

    from harness.families import verify_items

    store, run_id = quick_run
    items = store.run_items(run_id)
    assert verify_items(items) == []
    tampered = dataclasses.replace(items[3], truth={**items[3].truth, "answer": "attic"})
    assert any("differs" in p for p in verify_items([tampered]))
