"""Condition C against the run's own LLM population, end to end (issue 15 item 4): a stored
run of LLM-population scenarios with a command agent and reference players, executed by the
runner, profiled and rendered; every figure is computed here by hand from the truths."""

from __future__ import annotations

import asyncio
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import games
from harness.agent.families import verify_items
from harness.config.settings import AgentConfig, load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.store import Store
from mindledger.items import Item
from reports import build_profile, render_markdown

LOW_AGENT = str(Path(__file__).parents[1] / "scripts" / "population_agent.py")
SEED = 20261202
K = games.POPULATION_SAMPLES


def _label(item: Item, value: int) -> str:
    ranges = item.truth["label_ranges"]
    return str(item.truth["labels"][next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)])


def test_a_run_scores_c_against_its_own_agents(db_url: str, tmp_path: Path) -> None:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path)})
    settings = replace(settings, cache=False, agents={
        "low": AgentConfig(name="low", adapter="command", command=(sys.executable, LOW_AGENT),
                           concurrency=2)})
    store = Store(open_engine(db_url))
    items = games.generate_population_items(SEED, 2)  # a beauty contest, an 11-20 variant
    planned = plan_agents(settings, agents=["low"], references=("level:1", "level:2"),
                          no_control=True)
    run_id, _, n = create_run(store, settings, suite="baseline", planned=planned, seed=SEED,
                              items=items)
    assert n == 2 * (K + 1)
    asyncio.run(execute_stored_run(store, settings, run_id))
    assert store.get_run(run_id).status == "complete"
    assert verify_items(store.run_items(run_id)) == []
    trials = store.trials(run_id)
    assert len(trials) == 3 * n and all(t.status == "ok" for t in trials)
    assert all(t.correct is None for t in trials)  # nothing is scored per trial

    profile = build_profile(store, run_id, n_boot=20)
    doc = profile.to_json()
    expected_low: dict[str, list[float]] = {"log": [], "brier": []}
    expected_l1: list[float] = []
    for c in (items[K], items[2 * K + 1]):
        lo = c.truth["label_ranges"][0][0]
        a1, a2 = c.truth["own_level_actions"][:2]
        # low puts everything on the first label; its population is level:1's and level:2's
        # five plays each
        plays = [a1] * K + [a2] * K
        p = [1.0 if _label(c, v) == c.truth["labels"][0] else 0.0 for v in plays]
        expected_low["log"].append(sum(math.log(max(x, 1e-9)) for x in p) / len(p))
        expected_low["brier"].append(sum(1 - 2 * x + 1 for x in p) / len(p))
        assert _label(c, lo) == c.truth["labels"][0]
        # level:1 predicts uniformly: ln(1/L) whatever the others (low and level:2) played
        expected_l1.append(math.log(1 / len(c.truth["labels"])))
    low = doc["agents"]["low"]["games"]["abc"]["c_llm"]
    assert low["predictions"] == 2 and low["not_estimable_scenarios"] == 0
    assert low["population_plays"] == {"mean": 2.0 * K, "min": 2 * K}
    assert low["log_score"]["n"] == 2
    assert low["log_score"]["value"] == pytest.approx(sum(expected_low["log"]) / 2)
    assert low["brier"]["value"] == pytest.approx(sum(expected_low["brier"]) / 2)
    l1 = doc["agents"]["ref:level:1"]["games"]["abc"]["c_llm"]
    assert l1["log_score"]["value"] == pytest.approx(sum(expected_l1) / 2)
    assert l1["top1"]["value"] == 0.0 and l1["top1"]["n"] == 2
    # the report shows the figure with its n, apart from the scripted A/B/C line
    text = render_markdown(profile)
    lines = [x for x in text.splitlines() if x.startswith("C against the run's agents")]
    assert len(lines) == 3
    assert any(f"log score {low['log_score']['value']:.3f} n=2" in x for x in lines)
