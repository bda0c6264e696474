"""The repeated-games section on baseline's balanced design (issue 15): every cell comes out with
the documented n, B6 is reported on its own, and the counterfactual gap is a paired difference
within matched sets. No model: reference policies scored by the family's own scorer, and one
synthetic agent whose exploitation is set by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from games.repeated import b6_episodes, counterfactual_design, reference_answer, score
from harness.run.suites import EPISODES_PER_CELL
from ledger.store import RunAgent
from mindledger.items import Item, Score
from reports._data import run_data
from reports.profile import profile_from_data

SEED = 21
RUN = {"id": "r", "suite": "baseline", "seed": SEED, "held_out": False, "status": "complete",
       "created_at": None, "finished_at": None, "params": {}}
SHIFT = 0.1


def _trial(agent: str, item: Item, sc: Score) -> dict[str, Any]:
    return {"agent": agent, "item_id": item.id, "status": "ok", "correct": sc.correct,
            "confidence": None, "score_value": sc.value, "primary_error": sc.primary_error,
            "tokens_in": 0, "tokens_out": 0, "latency_s": 0.0,
            "score_json": json.dumps(sc.to_dict()), "answer_json": None, "error": None}


def _shifted(oracle: dict[str, Score]) -> Callable[[Item], Score]:
    """Exploitation = a level drawn per matched set (widely spread) + SHIFT in the default
    setting + a little noise: paired, the gap is SHIFT with a narrow interval; unpaired it
    would drown in the spread between sets."""
    rng = np.random.default_rng(5)
    level: dict[str, float] = {}

    def play(item: Item) -> Score:
        sc = oracle[item.id]
        d = dict(sc.details)
        if d["exploitation"] is not None:
            key = f"{item.meta['game']}/{item.meta['opponent']}/{item.seed}"
            base = level.setdefault(key, float(rng.uniform(-1.0, 1.0)))
            bonus = SHIFT if item.meta["counterfactual"] == "default" else 0.0
            d["exploitation"] = base + bonus + float(rng.normal(0.0, 0.01))
        return Score(sc.correct, sc.value, sc.error_codes, sc.primary_error, d)

    return play


@pytest.fixture(scope="module")
def built() -> tuple[list[Item], dict[str, dict[str, Score]], dict[str, Any]]:
    items = counterfactual_design(SEED, EPISODES_PER_CELL) + b6_episodes(SEED)
    agents = [RunAgent("ref:oracle", "reference", {"policy": "oracle"}),
              RunAgent("ref:random", "reference", {"policy": "random"}),
              RunAgent("shifted", "agent", {"adapter": "test", "model": "m"})]
    scores: dict[str, dict[str, Score]] = {}
    for k, policy in enumerate(("oracle", "random")):
        rng = np.random.default_rng(40 + k)
        scores[f"ref:{policy}"] = {i.id: score(i, reference_answer(i, policy, rng))
                                   for i in items}
    play = _shifted(scores["ref:oracle"])
    scores["shifted"] = {i.id: play(i) for i in items}
    trials = [_trial(a, i, scores[a][i.id]) for a in scores for i in items]
    data = run_data(RUN, agents, [i.to_dict() for i in items], trials)
    return items, scores, profile_from_data(data, seed=3, n_boot=50).to_json()


def test_every_cell_has_the_documented_n_and_b6_is_apart(
    built: tuple[list[Item], dict[str, dict[str, Score]], dict[str, Any]],
) -> None:
    items, _, profile = built
    for agent in ("ref:oracle", "ref:random", "shifted"):
        rp = profile["agents"][agent]["repeated"]
        design = rp["design"]
        assert design["episodes_per_cell"] == {f"{g}/{c}": EPISODES_PER_CELL
                                               for g in ("pd", "rps")
                                               for c in ("default", "label", "payoff", "joint")}
        assert design["balanced"] and design["matched_sets"] == 2 * EPISODES_PER_CELL
        assert design["b6_episodes"] == 20
        assert rp["n_episodes"] == 8 * EPISODES_PER_CELL
        for row in rp["by_game_counterfactual"]:
            assert row["n_design"] == row["n_episodes"] == EPISODES_PER_CELL
            assert row["opponents"] == {o: 2 for o in ("counter-frequent", "counter-last",
                                                       "equilibrium", "pattern")}
            assert row["b6"]["available"] is False and "on their own" in row["b6"]["reason"]
        b6 = rp["b6"]
        assert b6["available"] and b6["n"] == b6["n_design"] == 20
        assert set(b6["opponents"].values()) == {5}
        assert b6["adapted"]["n"] == 20
    # the oracle adapts to the switching bots; its latencies are the stored ones
    b6 = profile["agents"]["ref:oracle"]["repeated"]["b6"]
    lat = [s.details["adaptation_latency"] for i, s in
           zip(items, (built[1]["ref:oracle"][i.id] for i in items), strict=True)
           if "switch_round" in i.meta and s.details["adapted"]]
    assert b6["adapted"]["k"] == len(lat)
    if lat:
        assert b6["adaptation_latency"]["value"] == pytest.approx(np.mean(lat))


def _pairs(items: list[Item], sc: dict[str, Score], game: str, cf: str) -> list[float]:
    """default − cf exploitation per matched set, computed here from the items themselves."""
    by: dict[tuple[str, int], dict[str, float | None]] = {}
    for i in items:
        if i.meta["game"] == game and "switch_round" not in i.meta:
            key = (i.meta["opponent"], i.seed)
            by.setdefault(key, {})[i.meta["counterfactual"]] = sc[i.id].details["exploitation"]
    out = []
    for v in by.values():
        a, b = v.get("default"), v.get(cf)
        if a is not None and b is not None:
            out.append(a - b)
    return out


def test_the_gap_is_paired_within_matched_sets(
    built: tuple[list[Item], dict[str, dict[str, Score]], dict[str, Any]],
) -> None:
    items, scores, profile = built
    for agent in ("ref:oracle", "ref:random", "shifted"):
        gaps = {(g["game"], g["counterfactual"]): g
                for g in profile["agents"][agent]["repeated"]["counterfactual_gap"]}
        assert set(gaps) == {(g, c) for g in ("pd", "rps", "pd+rps")
                             for c in ("label", "payoff", "joint")}
        for cf in ("label", "payoff", "joint"):
            both: list[float] = []
            for g in ("pd", "rps"):
                diffs = _pairs(items, scores[agent], g, cf)
                both += diffs
                gap = gaps[(g, cf)]
                assert gap["n_pairs"] == len(diffs)
                assert gap["difference"] == pytest.approx(np.mean(diffs))
                # 6 to 8 pairs per game at 8 episodes per cell: a value, no interval
                assert 6 <= len(diffs) <= 8
                assert gap["status"] == "not_estimable" and gap["ci"] is None
                assert "at least 10" in gap["reason"]
            pooled = gaps[("pd+rps", cf)]
            assert pooled["n_pairs"] == len(both) >= 12
            assert pooled["difference"] == pytest.approx(np.mean(both))
    # the synthetic agent: sets differ widely, the default setting adds SHIFT; paired, the
    # interval is tight around SHIFT (unpaired, it would span the sets' spread of ±1)
    for cf in ("label", "payoff", "joint"):
        g = {(x["game"], x["counterfactual"]): x
             for x in profile["agents"]["shifted"]["repeated"]["counterfactual_gap"]}
        pooled = g[("pd+rps", cf)]
        assert pooled["status"] == "estimated" and pooled["interval"] == "paired-t-95"
        lo, hi = pooled["ci"]
        assert lo < SHIFT < hi and hi - lo < 0.05
        assert pooled["test"].startswith("sign-flip permutation")
