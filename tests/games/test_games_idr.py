"""The four paper games: IDR sequences, K_max, best-response maps (Table 1, Table 4, App. A).

The expected sequences are the paper's listed values; the code derives them from the payoffs.
"""

from __future__ import annotations

import pytest

from games import GAMES, check_distinguishability, get_game, idr_sequence
from mindledger.errors import InputError

PAPER_IDR = {
    "11-20": [70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50],
    "all-pay": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    "nash-demand": [20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 9],
    "ring-11-20": [20, 17, 14, 11, 18, 15, 12, 19, 16, 13, 20],
}
PAPER_KMAX = {"11-20": 10, "all-pay": 10, "nash-demand": 10, "ring-11-20": 9}
PAPER_ANCHOR = {"11-20": 70, "all-pay": 0, "nash-demand": 20, "ring-11-20": 20}
PAPER_SPACE = {"11-20": (50, 70), "all-pay": (0, 10), "nash-demand": (1, 20),
               "ring-11-20": (1, 20)}


def test_registry_names_are_the_papers_four() -> None:
    assert list(GAMES) == ["11-20", "all-pay", "nash-demand", "ring-11-20"]


@pytest.mark.parametrize("name", list(PAPER_IDR))
def test_idr_sequence_matches_the_paper(name: str) -> None:
    assert idr_sequence(name, 10) == PAPER_IDR[name]
    assert idr_sequence(get_game(name)) == PAPER_IDR[name]


@pytest.mark.parametrize("name", list(PAPER_KMAX))
def test_kmax_matches_table_1(name: str) -> None:
    verdict = check_distinguishability(name)
    assert verdict.kmax == PAPER_KMAX[name]
    assert verdict["kmax"] == PAPER_KMAX[name]
    # Lemma 1 holds with equality in all four games
    assert verdict.kmax == verdict.reached - 1


@pytest.mark.parametrize("name", list(PAPER_ANCHOR))
def test_anchor_and_strategy_space_are_table_1s(name: str) -> None:
    spec = get_game(name)
    assert spec.anchor == PAPER_ANCHOR[name]
    assert (spec.actions[0], spec.actions[-1]) == PAPER_SPACE[name]
    assert list(spec.actions) == list(range(spec.actions[0], spec.actions[-1] + 1))


@pytest.mark.parametrize("name", list(PAPER_IDR))
def test_best_response_is_a_singleton_along_every_sequence(name: str) -> None:
    """App. A: BR(a(k)) is a singleton at every depth 0..10, so Eq. (3) never binds."""
    spec = get_game(name)
    for a in idr_sequence(name, 10):
        assert len(spec.best_responses(a)) == 1
    assert check_distinguishability(name).ties == ()


def _table4_br(name: str, a: int) -> int:
    """The closed-form best-response maps of the paper's Table 4."""
    if name == "11-20":
        return a - 2 if a >= 52 else 70
    if name == "all-pay":
        return a + 1 if a <= 9 else 0
    if name == "nash-demand":
        return a - 1 if a >= 12 else 20 - a
    if a >= 14:
        return a - 3
    if 10 <= a <= 13:
        return a + 7
    return 20


@pytest.mark.parametrize("name", list(PAPER_IDR))
def test_enumerated_br_agrees_with_table_4_on_every_action(name: str) -> None:
    spec = get_game(name)
    for a in spec.actions:
        assert spec.br(a) == _table4_br(name, int(a)), (name, a)


def test_ring_tie_off_the_sequence() -> None:
    """App. A: at a = 10 the actions 17 and 20 both pay 20; Eq. (3) selects 17."""
    ring = get_game("ring-11-20")
    assert ring.best_responses(10) == (17, 20)
    assert ring.br(10) == 17
    assert ring.payoff_of(17, 10) == ring.payoff_of(20, 10) == 20
    assert 10 not in idr_sequence(ring, 30)


def test_nash_demand_concedes_at_eleven_and_alternates() -> None:
    """Eq. (4): undercutting beats conceding exactly when a > 11.5; then 11 <-> 9."""
    nash = get_game("nash-demand")
    assert nash.br(12) == 11 and nash.br(11) == 9 and nash.br(9) == 11
    verdict = check_distinguishability(nash)
    assert (verdict.failure.depth, verdict.failure.repeats) == (11, 9)
    assert verdict.failure.kind == "cycle"
    assert idr_sequence(nash, 13)[11:] == [11, 9, 11]


def test_where_and_why_each_canonical_game_closes() -> None:
    closes = {name: check_distinguishability(name).failure for name in GAMES}
    assert (closes["11-20"].depth, closes["11-20"].repeats, closes["11-20"].kind) == (
        11, 0, "returns_to_anchor")
    assert (closes["all-pay"].depth, closes["all-pay"].kind) == (11, "returns_to_anchor")
    assert (closes["ring-11-20"].depth, closes["ring-11-20"].repeats) == (10, 0)
    assert closes["ring-11-20"].period == 10
    ring = check_distinguishability("ring-11-20")
    assert not ring.distinguishable
    assert "a(10) = a(0) = 20" in ring.problems()[0]
    assert check_distinguishability("ring-11-20", depth=9).distinguishable


def test_payoffs_of_table_1() -> None:
    e = get_game("11-20")
    assert e.payoff_of(68, 70) == 92 and e.payoff_of(69, 70) == 77 and e.payoff_of(70, 70) == 70
    ap = get_game("all-pay")
    assert ap.payoff_of(3, 2) == 9 and ap.payoff_of(2, 2) == 4 and ap.payoff_of(1, 2) == -1
    nd = get_game("nash-demand")
    assert nd.payoff_of(8, 12) == 8 and nd.payoff_of(11, 12) == pytest.approx(8.8)
    assert nd.payoff_of(12, 11) == 0
    ring = get_game("ring-11-20")
    assert ring.payoff_of(8, 11) == 18 and ring.payoff_of(18, 11) == 21
    assert ring.payoff_of(20, 11) == 20


def test_unknown_game_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown game"):
        get_game("prisoners-dilemma")


def test_idr_extends_periodically_past_the_first_repeat() -> None:
    assert idr_sequence("11-20", 23)[11:] == [70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50, 70, 68]
    assert idr_sequence("all-pay", 0) == [0]
