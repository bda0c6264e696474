"""The distinguishability checker against a brute-force reading of Definition 1, on random
payoff matrices; and the validation of JSON game specs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import GameSpec, check_distinguishability
from mindledger.errors import InputError


def brute_force(actions: list[int], payoff: list[list[int]], anchor: int, depth: int) -> dict[
    str, Any
]:
    """Definition 1 by the letter: iterate Eq. (3) with plain loops, then find the largest K
    such that every pair of depths 0 <= k1 < k2 <= K has distinct actions."""
    n = len(actions)

    def br_set(a: int) -> list[int]:
        j = actions.index(a)
        column = [payoff[i][j] for i in range(n)]
        best = max(column)
        return sorted(actions[i] for i in range(n) if column[i] == best)

    seq = [anchor]
    for _ in range(max(depth, n) + 1):
        seq.append(min(br_set(seq[-1])))
    kmax = 0
    for big_k in range(len(seq)):
        if all(seq[k1] != seq[k2] for k2 in range(big_k + 1) for k1 in range(k2)):
            kmax = big_k
    ties = [(k, tuple(br_set(seq[k]))) for k in range(depth) if len(br_set(seq[k])) > 1]
    return {"idr": seq[: depth + 1], "kmax": kmax, "ties": ties, "seq": seq}


@st.composite
def games(draw: st.DrawFn) -> tuple[list[int], list[list[int]], int, int]:
    n = draw(st.integers(1, 12))
    actions = draw(st.lists(st.integers(-30, 30), min_size=n, max_size=n, unique=True))
    # a narrow payoff range makes ties (and so the Eq. (3) selection) common
    high = draw(st.sampled_from([1, 3, 50]))
    payoff = draw(st.lists(st.lists(st.integers(-high, high), min_size=n, max_size=n),
                           min_size=n, max_size=n))
    if draw(st.booleans()):
        # plant a best-response map (a random function of the columns) so that long orbits,
        # which random matrices rarely have, are exercised too
        targets = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
        for j, i in enumerate(targets):
            payoff[i][j] = high + 1 + draw(st.integers(0, 1))
    anchor = draw(st.sampled_from(actions))
    depth = draw(st.integers(0, 14))
    return actions, payoff, anchor, depth


@settings(max_examples=400, deadline=None)
@given(games())
def test_checker_agrees_with_brute_force(game: tuple[list[int], list[list[int]], int, int]) -> None:
    actions, payoff, anchor, depth = game
    expected = brute_force(actions, payoff, anchor, depth)
    verdict = check_distinguishability(
        {"actions": actions, "payoff": payoff, "anchor": anchor}, depth
    )
    assert verdict.idr == expected["idr"]
    assert verdict.kmax == expected["kmax"]
    assert verdict.distinguishable == (expected["kmax"] >= depth)
    assert list(verdict.ties) == expected["ties"]
    # where it fails: the first repeated pair, just past K_max
    f = verdict.failure
    seq = expected["seq"]
    assert f.depth == expected["kmax"] + 1
    assert seq[f.depth] == seq[f.repeats] == f.action
    assert f.period == f.depth - f.repeats
    assert verdict.reached == len(set(seq))


@settings(max_examples=100, deadline=None)
@given(games(), st.randoms(use_true_random=False))
def test_checker_ignores_the_order_actions_are_listed_in(
    game: tuple[list[int], list[list[int]], int, int], shuffler: Any
) -> None:
    actions, payoff, anchor, depth = game
    order = list(range(len(actions)))
    shuffler.shuffle(order)
    shuffled = {
        "actions": [actions[i] for i in order],
        "payoff": [[payoff[i][j] for j in order] for i in order],
        "anchor": anchor,
    }
    a = check_distinguishability({"actions": actions, "payoff": payoff, "anchor": anchor}, depth)
    b = check_distinguishability(shuffled, depth)
    assert (a.idr, a.kmax, a.ties) == (b.idr, b.kmax, b.ties)


def test_a_game_outside_the_repository() -> None:
    """Matching pennies-like rotation on 3 actions: cycle of period 3 from the anchor."""
    spec = {"actions": [1, 2, 3], "payoff": [[0, 1, 0], [0, 0, 1], [1, 0, 0]], "anchor": 1}
    verdict = check_distinguishability(spec, depth=4)
    assert verdict.idr == [1, 3, 2, 1, 3]
    assert verdict.kmax == 2
    assert verdict.failure.kind == "returns_to_anchor"
    # A fixed point: the dominant action 2 answers everything.
    dom = {"actions": [1, 2], "payoff": [[0, 0], [1, 1]], "anchor": 1}
    verdict = check_distinguishability(dom)
    assert verdict.idr[:3] == [1, 2, 2] and verdict.kmax == 1
    assert verdict.failure.kind == "fixed_point"


def test_float_payoffs_and_ties_are_reported() -> None:
    spec = {"actions": [0, 1, 2], "payoff": [[0.5, 0, 1], [0.5, 0, 0], [0, 1, 0]],
            "anchor": 0}
    verdict = check_distinguishability(spec, depth=3)
    assert verdict.ties[0] == (0, (0, 1))
    assert not verdict.strict
    assert "smallest-maximiser" in verdict.problems()[-1]


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"actions": [1, 2, 3], "payoff": [[1, 2, 3], [3, 2, 1]], "anchor": 1}, "payoff"),
        ({"actions": [1, 2], "payoff": [[1, 2], [3]], "anchor": 1}, "payoff[1]"),
        ({"actions": [1, 2], "payoff": [[1, "x"], [3, 4]], "anchor": 1}, "payoff[0][1]"),
        ({"actions": [1, 2], "payoff": [[1, None], [3, 4]], "anchor": 1}, "payoff[0][1]"),
        ({"actions": [1, 2], "payoff": [[1, True], [3, 4]], "anchor": 1}, "payoff[0][1]"),
        ({"actions": [1, 2], "payoff": [[1, 2], [3, 4]], "anchor": 7}, "anchor"),
        ({"actions": [1, 1], "payoff": [[1, 2], [3, 4]], "anchor": 1}, "actions[1]"),
        ({"actions": [1, "b"], "payoff": [[1, 2], [3, 4]], "anchor": 1}, "actions[1]"),
        ({"actions": [1, 2], "payoff": [[1, 2], [3, 4]]}, "anchor"),
        ({"actions": [], "payoff": [], "anchor": 1}, "actions"),
        ({"actions": [1, 2], "payoff": "nope", "anchor": 1}, "payoff"),
    ],
)
def test_bad_specs_name_the_problem(spec: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as info:
        GameSpec.from_dict(spec, source="spec.json")
    assert info.value.where == where
    assert str(info.value).startswith(f"spec.json: {where}: ")


def test_non_square_message_says_what_is_wrong() -> None:
    with pytest.raises(InputError, match="not square"):
        check_distinguishability({"actions": [1, 2, 3], "payoff": [[1, 2, 3]] * 2, "anchor": 1})
