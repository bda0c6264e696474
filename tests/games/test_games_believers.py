"""Reference players with known beliefs (issue 15): ``level:K`` states the belief of a level-K
player (its opponent plays ``a(K−1)``) and best-responds to it; ``believer:K`` states the same
belief but plays at random. The scorer must read K_B and K_L exactly and tell the two apart by
best-response consistency."""

from __future__ import annotations

import numpy as np
import pytest

from games import generate_items, parse_policy, reference_answer, score, summarize
from mindledger.items import Item, Score

ITEMS = [i for i in generate_items(2031, 160) if not i.meta["excluded"]]
VARIANTS = [i for i in generate_items(2032, 80, variants=True) if not i.meta["excluded"]]


def scores(items: list[Item], policy: str, seed: int = 0) -> list[Score]:
    rng = np.random.default_rng(seed)
    return [score(i, reference_answer(i, policy, rng)) for i in items]


@pytest.mark.parametrize("items", [ITEMS, VARIANTS], ids=["canonical", "variants"])
@pytest.mark.parametrize("k", [2, 3])
def test_level_k_states_its_belief_and_acts_on_it(items: list[Item], k: int) -> None:
    ss = scores(items, f"level:{k}")
    assert {s.details["K_B"] for s in ss} == {k}
    assert {s.details["K_L"] for s in ss} == {k}
    assert all(s.details["br_consistent"] is True for s in ss)
    assert {s.details["chain_consistency"] for s in ss} == {1.0}
    assert {s.details["chain_length"] for s in ss} == {k}
    summary = summarize(ss)
    assert summary["K_L_coverage"] == {"n": len(ss), "rate": 1.0}
    assert summary["br_consistency"] == {"n": len(ss), "rate": 1.0}


@pytest.mark.parametrize("k", [2, 3])
def test_believer_k_states_a_level_k_belief_but_plays_at_random(k: int) -> None:
    ss = scores(ITEMS, f"believer:{k}", seed=5)
    assert {s.details["K_L"] for s in ss} == {k}
    summary = summarize(ss)
    br = summary["br_consistency"]
    chance = summary["br_chance"]["mean"]
    assert br["n"] == len(ss) and chance is not None and chance < 0.1
    # 160-odd uniform draws: the binomial's 99.9% band around chance, not the level bot's 1.0
    sd = (chance * (1 - chance) / br["n"]) ** 0.5
    assert abs(br["rate"] - chance) < 3.3 * sd + 1 / br["n"]
    # its K_B is wherever its random action falls: mostly unmatched, not k
    kb = [s.details["K_B"] for s in ss]
    assert sum(v == k for v in kb) < len(kb) / 4


def test_believer_is_seeded_and_level_zero_states_nothing() -> None:
    item = ITEMS[0]
    a = reference_answer(item, "believer:3", np.random.default_rng(9))
    b = reference_answer(item, "believer:3", np.random.default_rng(9))
    assert a == b and a["final_belief_point"] == item.truth["idr"][2]
    assert a["chain"] == item.truth["idr"][:3]
    assert a["action"] in item.truth["actions"]
    assert reference_answer(item, "believer:0", np.random.default_rng(9)) in item.truth["actions"]
    assert parse_policy("believer:4") == ("believer", 4)


def test_believer_plays_at_random_on_abc_items() -> None:
    from games import generate_abc_items

    item = generate_abc_items(3, 1)[0]
    a = reference_answer(item, "believer:2", np.random.default_rng(4))
    b = reference_answer(item, "random", np.random.default_rng(4))
    assert a == b
