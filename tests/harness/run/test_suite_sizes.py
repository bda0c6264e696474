"""Baseline's A/B/C and repeated-game sizes (issue 15, items 3 and 5): the n each figure needs
for a 95% interval narrower than ±15 points, computed with the interval reports uses, and a
synthetic profile at baseline size that shows it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from games import POPULATION_SAMPLES, generate_abc_items, generate_population_items
from harness.run.suites import (
    ABC_SCENARIOS,
    EPISODES_PER_CELL,
    POPULATION_ITEMS,
    POPULATION_SCENARIOS,
    SEAT_EPISODES,
    get_suite,
)
from ledger.store import RunAgent
from reports._data import run_data
from reports._stats import newcombe_paired_interval, wilson_interval
from reports.profile import profile_from_data

HALF_WIDTH = 0.15


def _needed_k_items() -> int:
    """Smallest n whose Wilson interval at 0.5 (its widest) is narrower than ±15 points."""
    for n in range(2, 500):
        lo, hi = wilson_interval(n / 2, n)
        if (hi - lo) / 2 < HALF_WIDTH:
            return n
    raise AssertionError("no n found")


def _needed_pairs(discordance: float) -> int:
    """Smallest number of scenarios whose Newcombe paired interval is narrower than ±15 points
    at accuracies 0.5 on both questions with ``discordance`` of the pairs answered unalike."""
    for n in range(2, 1000):
        b = c = n * discordance / 2
        a = d = n * (1 - discordance) / 2
        lo, hi = newcombe_paired_interval(a, b, c, d)
        if (hi - lo) / 2 < HALF_WIDTH:
            return n
    raise AssertionError("no n found")


def test_the_needed_sizes_are_the_documented_ones() -> None:
    assert _needed_k_items() == 39
    assert _needed_pairs(0.5) == 82  # independent answers at 0.5
    assert _needed_pairs(0.72) <= 120 < _needed_pairs(0.74)


def test_baseline_meets_them() -> None:
    items = generate_abc_items(12, ABC_SCENARIOS)  # what baseline draws
    q = Counter(i.meta["question"] for i in items)
    assert q["K"] >= _needed_k_items()
    assert min(q["A"], q["B"], q["C"]) >= _needed_pairs(0.5)
    counts = get_suite("baseline").counts
    assert counts["B5_abc"] == len(items) == 400
    assert counts["repeated"] == 8 * EPISODES_PER_CELL and EPISODES_PER_CELL >= 8
    assert counts["B6"] == 20
    assert counts["repeated_agents"] == SEAT_EPISODES == 32
    # C against the run's own agents: one prediction per scenario and agent, n = 40 ≥ 39
    population = generate_population_items(12, POPULATION_SCENARIOS)
    q = Counter(i.meta["question"] for i in population)
    assert q["C-llm"] == POPULATION_SCENARIOS >= _needed_k_items()
    assert q["play"] == POPULATION_SAMPLES * POPULATION_SCENARIOS
    assert counts["B5_abc_llm"] == POPULATION_ITEMS == len(population) == 240


def test_a_synthetic_profile_at_baseline_size_has_the_promised_intervals() -> None:
    """An agent right half the time on every question, independently: K accuracy and the
    A − B, B − C contrasts come out with 95% intervals narrower than ±15 points."""
    items = generate_abc_items(12, ABC_SCENARIOS)
    rng = np.random.default_rng(3)
    trials: list[dict[str, Any]] = []
    for it in items:
        ok = bool(rng.random() < 0.5)
        trials.append({"agent": "a", "item_id": it.id, "status": "ok", "correct": ok,
                       "confidence": None, "score_value": float(ok), "primary_error": None,
                       "tokens_in": 0, "tokens_out": 0, "latency_s": 0.0,
                       "score_json": json.dumps({"details": {}}), "answer_json": None,
                       "error": None})
    run = {"id": "r", "suite": "baseline", "seed": 12, "held_out": False,
           "status": "complete", "created_at": None, "finished_at": None, "params": {}}
    data = run_data(run, [RunAgent("a", "agent", {"adapter": "test", "model": "m"})],
                    [i.to_dict() for i in items], trials)
    abc = profile_from_data(data, n_boot=20).to_json()["agents"]["a"]["games"]["abc"]
    k = abc["opponent_type_inference"]
    assert k["n"] == 40 and k["status"] == "estimated"
    assert (k["ci"][1] - k["ci"][0]) / 2 < HALF_WIDTH
    for name in ("A_minus_B", "B_minus_C"):
        c = abc["contrasts"][name]
        assert c["n"] == ABC_SCENARIOS and c["interval"] == "newcombe-paired-95"
        assert (c["ci"][1] - c["ci"][0]) / 2 < HALF_WIDTH
