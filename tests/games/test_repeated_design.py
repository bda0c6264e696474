"""The balanced repeated-game design (issue 15, item 3): every counterfactual cell of seed 003
(game × label × payoff) gets the same number of episodes, in matched sets that face the same
opponent and draws in every setting; B6's switching bots are generated and marked apart."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.family import REPEATED
from games.repeated import (
    B6_OPPONENTS,
    COUNTERFACTUALS,
    GAMES,
    PAPER_OPPONENTS,
    b6_episodes,
    counterfactual_design,
    generate_episodes,
    make_episode_item,
)
from mindledger.errors import InputError

CELLS = {(g, c) for g in GAMES for c in COUNTERFACTUALS}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), per_cell=st.integers(0, 5))
def test_every_cell_gets_the_same_number_of_episodes(seed: int, per_cell: int) -> None:
    items = counterfactual_design(seed, per_cell)
    records = [REPEATED.design(i) for i in items]
    cells = Counter((r.game, r.counterfactual) for r in records)
    assert len(items) == len(CELLS) * per_cell
    assert cells == (dict.fromkeys(CELLS, per_cell) if per_cell else {})
    assert not any(r.b6 for r in records)
    # matched sets: one episode per setting, the same opponent, seed and draws
    sets: dict[str, list[int]] = {}
    for k, r in enumerate(records):
        sets.setdefault(r.matched, []).append(k)
    assert len(sets) == len(GAMES) * per_cell
    for members in sets.values():
        group = [items[k] for k in members]
        assert sorted(i.meta["counterfactual"] for i in group) == sorted(COUNTERFACTUALS)
        assert len({(i.meta["game"], i.meta["opponent"], i.seed) for i in group}) == 1
        assert len({tuple(i.truth["noise"]) for i in group}) == 1
    # within a game the opponents cycle: no opponent has more than one set more than another
    for g in GAMES:
        per_opp = Counter(items[m[0]].meta["opponent"] for m in sets.values()
                          if items[m[0]].meta["game"] == g)
        counts = [per_opp.get(o, 0) for o in PAPER_OPPONENTS]
        assert set(per_opp) <= set(PAPER_OPPONENTS) and sum(counts) == per_cell
        assert max(counts) - min(counts) <= 1

def test_baseline_size_balances_the_opponents_exactly() -> None:
    items = counterfactual_design(12, 8)
    per = Counter((i.meta["game"], i.meta["counterfactual"], i.meta["opponent"]) for i in items)
    assert per == {(g, c, o): 2 for g in GAMES for c in COUNTERFACTUALS for o in PAPER_OPPONENTS}
    assert {i.meta["rounds"] for i in items if i.meta["game"] == "pd"} == {16}
    assert {i.meta["rounds"] for i in items if i.meta["game"] == "rps"} == {24}
    assert sum(i.meta["rounds"] for i in items) == 32 * 16 + 32 * 24 == 1280


def test_the_design_is_deterministic_and_regenerable() -> None:
    a = counterfactual_design(7, 2)
    assert [i.id for i in a] == [i.id for i in counterfactual_design(7, 2)]
    assert [i.id for i in a] != [i.id for i in counterfactual_design(8, 2)]
    assert len({i.id for i in a}) == len(a)
    for item in a:
        assert make_episode_item(item.seed, item.params) == item
        assert item.verify() == []
    # a larger design extends a smaller one: its first sets are the same episodes
    assert [i.id for i in counterfactual_design(7, 3)][: len(a)] == [i.id for i in a]


def test_b6_is_generated_and_marked_apart() -> None:
    b6 = b6_episodes(5)
    records = [REPEATED.design(i) for i in b6]
    assert len(b6) == 20
    assert Counter(r.opponent for r in records) == dict.fromkeys(B6_OPPONENTS, 5)
    assert all(r.b6 and r.counterfactual == "" and r.matched == "" for r in records)
    assert {i.meta["rounds"] for i in b6} == {30}
    # the same items baseline drew before the balanced design
    assert [i.id for i in b6] == [i.id for i in generate_episodes(
        5, n=20, games=("rps",), counterfactuals=("default",), opponents=B6_OPPONENTS,
        rounds=30)]
    assert len(b6_episodes(5, 2)) == 8
    # and none of the counterfactual design's episodes is a B6 one
    assert not {i.id for i in b6} & {i.id for i in counterfactual_design(5, 8)}


def test_bad_design_arguments_name_the_field() -> None:
    with pytest.raises(InputError) as err:
        counterfactual_design(1, -1)
    assert err.value.where == "episodes_per_cell"
    with pytest.raises(InputError) as err:
        counterfactual_design(1, 1, games=("chess",))
    assert err.value.where == "games"
    with pytest.raises(InputError) as err:
        counterfactual_design(1, 1, games=("pd",), opponents=("biased",))
    assert err.value.where == "opponents"
    with pytest.raises(InputError) as err:
        b6_episodes(1, True)  # type: ignore[arg-type]
    assert err.value.where == "sessions_per_bot"
