"""Reference agents: the suite must diagnose each scripted bot as what it is."""

from __future__ import annotations

import numpy as np
import pytest

from games import generate_items, parse_policy, reference_answer, score, summarize
from mindledger.errors import InputError
from mindledger.items import Item

CANONICAL = generate_items(2026, 160)
VARIANTS = generate_items(2027, 80, variants=True)


def _accuracy_by_depth(items: list[Item], policy: str) -> dict[int, float]:
    rng = np.random.default_rng(0)
    hits: dict[int, list[bool]] = {}
    for item in items:
        if item.meta["excluded"]:
            continue
        s = score(item, reference_answer(item, policy, rng))
        hits.setdefault(item.meta["target_depth"], []).append(s.correct)
    return {k: sum(v) / len(v) for k, v in sorted(hits.items())}


@pytest.mark.parametrize("items", [CANONICAL, VARIANTS], ids=["canonical", "variants"])
@pytest.mark.parametrize("level", range(0, 11))
def test_level_k_bot_scores_exactly_at_depth_k(items: list[Item], level: int) -> None:
    acc = _accuracy_by_depth(items, f"level:{level}")
    assert acc == {k: (1.0 if k == level else 0.0) for k in acc}
    assert set(acc) == set(range(1, 11))


def test_beyond_k_max_a_bot_is_indistinguishable_from_a_lower_level() -> None:
    """Lemma 1 in action: past the window the sequence revisits values (Ring: period 10;
    Nash Demand: a(11) = a(9)), so a level-11 bot scores at a lower depth."""
    acc = _accuracy_by_depth([i for i in CANONICAL if i.meta["game"] == "ring-11-20"],
                             "level:11")
    assert acc[1] == 1.0
    acc = _accuracy_by_depth([i for i in CANONICAL if i.meta["game"] == "nash-demand"],
                             "level:11")
    assert acc[9] == 1.0


@pytest.mark.parametrize("items", [CANONICAL, VARIANTS], ids=["canonical", "variants"])
@pytest.mark.parametrize("cap", [0, 1, 4, 7, 10])
def test_depth_capped_bot_fails_beyond_its_cap(items: list[Item], cap: int) -> None:
    acc = _accuracy_by_depth(items, f"depth-capped:{cap}")
    assert acc == {k: (1.0 if k <= cap else 0.0) for k in acc}


def test_oracle_is_perfect_and_random_is_not() -> None:
    rng = np.random.default_rng(1)
    kept = [i for i in CANONICAL if not i.meta["excluded"]]
    oracle = summarize([score(i, reference_answer(i, "oracle", rng)) for i in kept])
    assert oracle["accuracy"]["rate"] == 1.0 and oracle["within_one"]["rate"] == 1.0
    rand = summarize([score(i, reference_answer(i, "random", rng)) for i in kept])
    assert rand["accuracy"]["rate"] < 0.25


def test_level_bot_answers_are_the_idr_entries() -> None:
    item = next(i for i in CANONICAL if i.meta["game"] == "ring-11-20")
    rng = np.random.default_rng(0)
    assert reference_answer(item, "level:4", rng) == {
        "action": 18, "final_belief_point": 11, "chain": [20, 17, 14, 11]}
    assert reference_answer(item, "level:14", rng)["action"] == 18  # period 10
    assert reference_answer(item, "level:0", rng) == 20  # a level-0 player states no belief


def test_policy_parsing() -> None:
    assert parse_policy("level:3") == ("level", 3)
    assert parse_policy("depth-capped:5") == ("depth-capped", 5)
    for bad in ("level", "level:x", "psychic", "oracle:2"):
        with pytest.raises(InputError):
            parse_policy(bad)
