"""The level-k fit of a depth signal against chance (:mod:`reports._levels`), on sums whose
answer is known, and on simulated players: a uniformly random one is identified at most at the
test's level, a fixed-level one always, a half-level-k one at the baseline's size."""

from __future__ import annotations

import numpy as np
import pytest

from reports._levels import ALPHA, LevelFit, SignalSums, chance_pvalue, level_fit
from reports._stats import ClusterBootstrap

B = 400


def sums_of(matched: np.ndarray, chance: np.ndarray, depth: np.ndarray, seed: int) -> SignalSums:
    """The bootstrap sums of one agent's trials, each trial its own cluster."""
    boot = ClusterBootstrap(list(range(matched.size)), np.random.default_rng(seed), B=B)
    s = boot.sums(
        {
            "n": np.ones(matched.size),
            "r": matched.astype(float),
            "c": chance,
            "s": np.where(matched, depth, 0.0),
        }
    )
    return SignalSums(*(s.total(k) for k in "nrcs"), rates=chance)


def fit_of(matched: np.ndarray, chance: np.ndarray, depth: np.ndarray, seed: int = 0) -> LevelFit:
    return level_fit(sums_of(matched, chance, depth, seed))


def test_the_fit_is_the_chance_corrected_match_rate() -> None:
    matched = np.array([1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1], bool)
    chance = np.full(12, 0.5)
    f = fit_of(matched, chance, np.full(12, 3.0))
    # R = 10, C = 6, N = 12: (10 − 6) / (12 − 6)
    assert f.fit == pytest.approx(4 / 6) and f.chance == pytest.approx(0.5)
    assert f.matched == 10 and f.n == 12


def test_a_fixed_level_player_is_identified_at_its_level() -> None:
    n = 60
    chance = np.random.default_rng(1).uniform(0.25, 0.95, n)
    f = fit_of(np.ones(n, bool), chance, np.full(n, 2.0))
    assert f.identifiable is True and f.fit == 1.0
    assert f.depth == 2.0 and f.depth_ci == (2.0, 2.0)


@pytest.mark.parametrize("seed", range(20))
def test_a_uniformly_random_player_is_rarely_identified(seed: int) -> None:
    # 60 trials at the baseline's spread of chance rates, matched at exactly those rates
    rng = np.random.default_rng([seed, 24])
    chance = rng.uniform(0.25, 0.95, 60)
    matched = rng.random(60) < chance
    depth = rng.integers(0, 11, 60).astype(float)
    f = fit_of(matched, chance, depth, seed)
    if f.identifiable is False:
        assert f.depth is None and f.depth_ci is None and f.reason
        assert "no level explains them better than chance" in f.reason
    assert f.fit_ci is not None and f.fit_ci[0] < 0.35
    assert f.p_chance is not None and (f.identifiable is True) == (f.p_chance < ALPHA)


def test_the_exact_test_matches_the_binomial_when_chance_is_constant() -> None:
    from scipy.stats import binom

    for r in (0, 5, 9, 17, 20):
        assert chance_pvalue(r, np.full(20, 0.3)) == pytest.approx(binom.sf(r - 1, 20, 0.3))
    assert chance_pvalue(3, [1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert chance_pvalue(4, [1.0, 1.0, 1.0]) == 0.0


def test_random_players_are_identified_at_most_at_the_tests_level() -> None:
    """Over many simulated random players the gate lets through at most ALPHA of them (the
    exact test is conservative); the bootstrap interval alone let through about 4%."""
    rng = np.random.default_rng(2024)
    runs = 2000
    identified = 0
    for _ in range(runs):
        chance = rng.uniform(0.25, 0.95, 60)
        matched = rng.random(60) < chance
        identified += chance_pvalue(int(matched.sum()), chance) < ALPHA
    assert identified <= ALPHA * runs * 1.3


@pytest.mark.parametrize(("share", "at_least"), [(0.7, 0.97), (0.5, 0.8)])
def test_mostly_level_k_players_are_identified_at_baseline_size(
    share: float, at_least: float
) -> None:
    """A player whose choices are its level's with probability ``share`` (else uniform) is
    identified in most 60-trial runs."""
    rng = np.random.default_rng(5)
    runs = 200
    identified = 0
    for _ in range(runs):
        chance = rng.uniform(0.25, 0.95, 60)
        matched = (rng.random(60) < share) | (rng.random(60) < chance)
        identified += chance_pvalue(int(matched.sum()), chance) < ALPHA
    assert identified >= at_least * runs


def test_too_few_trials_or_no_room_for_chance_are_untested() -> None:
    small = fit_of(np.ones(6, bool), np.full(6, 0.5), np.full(6, 1.0))
    assert small.identifiable is None and small.depth == 1.0 and "at least 10" in str(small.reason)
    assert small.p_chance is None and small.depth_ci is None
    full = fit_of(np.ones(20, bool), np.ones(20), np.full(20, 1.0))
    assert full.identifiable is None and full.fit is None
    assert "cannot tell level-k play from chance" in str(full.reason)
    none = level_fit(
        SignalSums(*((0.0, np.zeros(B)),) * 4, rates=np.zeros(0)), what="stated beliefs"
    )
    assert none.identifiable is None and none.n == 0 and none.reason == "no stated beliefs to match"
