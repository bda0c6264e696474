"""Quantal level-k opponent histories (Appendix C, Eq. 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from games import get_game, idr_sequence, opponent_history, quantal_probabilities

DRAWS = 60_000


def _eq7(name: str, level: int, lam: float) -> dict[int, float]:
    """Eq. (7) written out by hand from the payoffs."""
    spec = get_game(name)
    belief = idr_sequence(name, level)[level - 1]
    u = {s: spec.payoff_of(s, belief) for s in spec.actions}
    lo, hi = min(u.values()), max(u.values())
    w = {s: math.exp(lam * (v - lo) / (hi - lo)) for s, v in u.items()}
    total = sum(w.values())
    return {s: x / total for s, x in w.items()}


@pytest.mark.parametrize(("name", "level", "lam"), [
    ("11-20", 5, 1), ("all-pay", 3, 3), ("nash-demand", 9, 10), ("ring-11-20", 4, 3),
])
def test_probabilities_are_eq_7(name: str, level: int, lam: float) -> None:
    p = quantal_probabilities(get_game(name), level, lam)
    expected = _eq7(name, level, lam)
    assert p.tolist() == pytest.approx([expected[s] for s in get_game(name).actions], abs=1e-12)
    # a(k) is the modal draw at every lambda
    assert get_game(name).actions[int(np.argmax(p))] == idr_sequence(name, level)[level]


@pytest.mark.parametrize(("name", "level", "lam"), [
    ("11-20", 2, 1), ("11-20", 6, 3), ("nash-demand", 4, 10), ("ring-11-20", 7, 1),
])
def test_empirical_frequencies_reproduce_eq_7(name: str, level: int, lam: float) -> None:
    spec = get_game(name)
    expected = _eq7(name, level, lam)
    rng = np.random.default_rng(20260824)
    draws = opponent_history(spec, level, lam, rng, n=DRAWS)
    counts = {s: 0 for s in spec.actions}
    for d in draws:
        counts[d] += 1
    for s, p in expected.items():
        sd = math.sqrt(p * (1 - p) / DRAWS)
        assert abs(counts[s] / DRAWS - p) <= 5 * sd + 1e-9, (s, counts[s] / DRAWS, p)


@pytest.mark.parametrize("lam", [1, 3, 10])
def test_level_zero_histories_are_uniform_at_every_lambda(lam: float) -> None:
    spec = get_game("all-pay")
    p = quantal_probabilities(spec, 0, lam)
    assert p.tolist() == pytest.approx([1 / 11] * 11)
    draws = opponent_history(spec, 0, lam, np.random.default_rng(5), n=DRAWS)
    counts = np.bincount(np.asarray(draws), minlength=11)
    chi2 = float((((counts - DRAWS / 11) ** 2) / (DRAWS / 11)).sum())
    assert chi2 < 35.0  # chi-square with 10 degrees of freedom: p < 1e-4 above 35
    assert set(draws) == set(spec.actions)


def test_higher_lambda_concentrates_on_a_k() -> None:
    spec = get_game("ring-11-20")
    mass = [quantal_probabilities(spec, 5, lam)[spec.index[15]] for lam in (1, 3, 10)]
    assert mass[0] < mass[1] < mass[2]


def test_histories_are_thirty_records_and_reproducible() -> None:
    spec = get_game("11-20")
    a = opponent_history(spec, 3, 10, np.random.default_rng(1))
    b = opponent_history(spec, 3, 10, np.random.default_rng(1))
    assert a == b and len(a) == 30
