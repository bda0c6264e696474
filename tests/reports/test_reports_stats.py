"""The pure statistics: hand values, reproducibility, and D50 recovery with interval coverage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reports._stats import (
    ClusterBootstrap,
    bootstrap_pvalue,
    cluster_bootstrap,
    d50_estimate,
    d50_replicates,
    degradation_slope,
    ece,
    expanded_level,
    fit_logistic_grouped,
    holm,
    logistic_batch,
    paired_difference,
    percentile_interval,
    wilson_interval,
)
from reports.synthetic import logistic_accuracy

# -- Wilson -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # hand values from (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964
        (0, 10, 0.0, 0.277533),
        (5, 10, 0.236593, 0.763407),
        (10, 10, 0.722467, 1.0),
        (1, 1, 0.206549, 1.0),
        (81, 263, 0.255289, 0.366210),  # Newcombe (1998), Table I: 0.2553 to 0.3662
    ],
)
def test_wilson_hand_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-6)


def test_wilson_agrees_with_statsmodels_and_edge_cases() -> None:
    from statsmodels.stats.proportion import proportion_confint

    for n in (1, 7, 40, 333):
        for k in {0, 1, n // 3, n - 1, n}:
            ref = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert wilson_interval(k, n) == pytest.approx(ref, abs=1e-9)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


# -- Holm, ECE, p-values ------------------------------------------------------------------------


def test_holm_hand_values() -> None:
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.06, 0.04·1) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1, monotone, and NaN (untestable contrasts) kept out of m
    out = holm([0.5, float("nan"), 0.2])
    assert out[0] == pytest.approx(0.5) and out[2] == pytest.approx(0.4)
    assert math.isnan(out[1])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_ece_hand_case() -> None:
    # bins: 0.3 → acc 0 (|0 − 0.3|·1), 0.6 → acc 1 (|1 − 0.6|·2), 0.9 → acc 0.5 (|0.5 − 0.9|·2)
    cal = ece([0.9, 0.9, 0.6, 0.6, 0.3], [1, 0, 1, 1, 0], bins=10)
    assert cal.ece == pytest.approx((0.3 + 0.8 + 0.8) / 5)
    assert [b["n"] for b in cal.bins] == [1, 2, 2]
    assert ece([1.0, 0.0, 0.5, 0.5], [1, 0, 1, 0]).ece == pytest.approx(0.0)
    assert ece([1.0], [1]).bins[0]["lo"] == pytest.approx(0.9)  # 1.0 lands in the last bin
    with pytest.raises(ValueError):
        ece([1.5], [1])


def test_bootstrap_pvalue_and_percentile_interval() -> None:
    assert bootstrap_pvalue(np.zeros(100)) == 1.0
    assert bootstrap_pvalue(np.ones(999)) == pytest.approx(2 / 1000)
    # a bootstrap p-value never claims more than B replicates resolve: at least 2/(B+1)
    reps = np.random.default_rng(0).normal(1.0, 0.1, 2000)
    assert bootstrap_pvalue(reps) == pytest.approx(2 / 2001)
    lo, hi, used = percentile_interval([1.0, 2.0, np.inf, np.nan] * 10)
    assert used == 30 and lo == 1.0 and hi == np.inf


# -- the cluster bootstrap ----------------------------------------------------------------------


def test_cluster_bootstrap_is_seeded_and_leaves_global_state_alone() -> None:
    values = np.r_[np.ones(30), np.zeros(30)]
    clusters = np.repeat(np.arange(12), 5)
    state = str(np.random.get_state(legacy=False))  # checking it is untouched
    a = cluster_bootstrap(values, clusters, np.random.default_rng(3), B=500)
    b = cluster_bootstrap(values, clusters, np.random.default_rng(3), B=500)
    c = cluster_bootstrap(values, clusters, np.random.default_rng(4), B=500)
    assert (a.lo, a.hi) == (b.lo, b.hi)
    assert a.replicates is not None and c.replicates is not None
    assert not np.array_equal(a.replicates, c.replicates)
    assert str(np.random.get_state(legacy=False)) == state
    assert a.value == pytest.approx(0.5) and "12 clusters" in a.interval


def test_cluster_bootstrap_widens_for_clustered_data_only() -> None:
    rng = np.random.default_rng(5)
    # 40 clusters of 10 identical outcomes: effectively n = 40, not 400
    per_cluster = rng.random(40) < 0.5
    values = np.repeat(per_cluster, 10).astype(float)
    clusters = np.repeat(np.arange(40), 10)
    res = cluster_bootstrap(values, clusters, np.random.default_rng(1), B=2000)
    w_lo, w_hi = wilson_interval(values.sum(), values.size)
    assert (res.hi - res.lo) > 2.0 * (w_hi - w_lo)
    # singleton clusters: the bootstrap agrees with Wilson
    single = cluster_bootstrap(values, np.arange(400), np.random.default_rng(1), B=2000)
    assert (single.hi - single.lo) == pytest.approx(w_hi - w_lo, rel=0.15)


def test_custom_statistic_matches_fast_path_and_strata_are_respected() -> None:
    rng = np.random.default_rng(2)
    values = rng.random(60)
    clusters = np.repeat(np.arange(20), 3)
    strata = np.repeat(np.arange(4), 15)
    fast = cluster_bootstrap(values, clusters, np.random.default_rng(9), B=300, strata=strata)
    slow = cluster_bootstrap(
        values, clusters, np.random.default_rng(9), lambda v, w: float(np.average(v, weights=w)),
        B=300, strata=strata,
    )
    assert fast.replicates is not None and slow.replicates is not None
    np.testing.assert_allclose(fast.replicates, slow.replicates, rtol=1e-5)
    # within strata, every replicate keeps each stratum's size
    boot = ClusterBootstrap(clusters, np.random.default_rng(9), B=50, strata=strata)
    sums = boot.sums({"n": np.ones(60)}, by_stratum=["n"])
    for s in range(4):
        assert np.all(sums.rep_stratum["n"][s] == 15)
    with pytest.raises(ValueError, match="spans more than one stratum"):
        ClusterBootstrap([1, 1], np.random.default_rng(0), strata=["a", "b"])


def test_paired_difference_signs() -> None:
    rng = np.random.default_rng(8)
    x = (rng.random(300) < 0.8).astype(float)
    y = (rng.random(300) < 0.5).astype(float)
    clusters = np.arange(300) // 3
    d = paired_difference(x, y, clusters, np.random.default_rng(0), B=1000)
    assert d.value > 0 and d.lo > 0 and d.p == pytest.approx(2 / 1001)  # its floor
    same = paired_difference(x, x, clusters, np.random.default_rng(0), B=1000)
    assert same.value == 0 and same.lo == 0 and same.hi == 0 and same.p == 1.0
    y[:10] = np.nan  # an API error on one side drops the pair
    assert paired_difference(x, y, clusters, np.random.default_rng(0), B=200).n == 290


# -- logistic fits and D50 -------------------------------------------------------------------------

DEPTHS = np.array([0.0, 1, 2, 3, 4, 5])


def test_vectorised_logistic_matches_statsmodels() -> None:
    rng = np.random.default_rng(11)
    n = np.full(6, 50)
    K = rng.binomial(50, [0.95, 0.85, 0.7, 0.45, 0.3, 0.1], size=(20, 6))
    a, b, conv = logistic_batch(DEPTHS, K, np.broadcast_to(n, K.shape))
    assert conv.all()
    for r in range(20):
        ra, rb, ok = fit_logistic_grouped(DEPTHS, K[r], n)
        assert ok and a[r] == pytest.approx(ra, abs=1e-6) and b[r] == pytest.approx(rb, abs=1e-6)


def _grouped(rng: np.random.Generator, p: np.ndarray, n: int) -> np.ndarray:
    return rng.binomial(n, p)


def test_d50_recovers_the_known_value() -> None:
    f = logistic_accuracy(2.7, -1.2, 0.25)
    p = np.array([f(d) for d in DEPTHS])
    n = np.full(6, 4000)
    k = _grouped(np.random.default_rng(1), p, 4000)
    res = d50_estimate(DEPTHS, k, n, chance=0.25)
    assert res.status == "estimated" and res.value == pytest.approx(2.7, abs=0.05)
    assert res.halfway == pytest.approx(0.625) and res.ceiling == 1.0


def _coverage(seeds: int, n_per_depth: int, cluster_size: int, rho: float, B: int
              ) -> tuple[float, float, float]:
    """Share of seeds whose bootstrap interval covers the true D50, and the mean widths of the
    cluster bootstrap and of a bootstrap that (wrongly) treats trials as independent.

    Outcomes in a cluster of ``cluster_size`` share one draw with probability ``rho`` (else they
    are independent), which keeps the marginal accuracy exactly logistic in depth."""
    true = 2.7
    f = logistic_accuracy(true, -1.2, 0.25)
    p = np.array([f(d) for d in DEPTHS])
    covered = 0
    widths = []
    naive_widths = []
    n_clusters = n_per_depth // cluster_size
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        depth = np.repeat(DEPTHS, n_per_depth)
        cluster = np.repeat(np.arange(len(DEPTHS) * n_clusters), cluster_size)
        pp = p[depth.astype(int)]
        own = rng.random(depth.size) < pp
        shared = np.repeat(rng.random(cluster.max() + 1), cluster_size) < pp
        use_shared = np.repeat(rng.random(cluster.max() + 1) < rho, cluster_size)
        y = np.where(use_shared, shared, own).astype(float)
        k = np.array([y[depth == d].sum() for d in DEPTHS])
        n = np.full(6, n_per_depth)
        widths_for = []
        for labels in (cluster, np.arange(depth.size)):
            boot = ClusterBootstrap(labels, np.random.default_rng(seed), B=B, strata=depth)
            cols = {f"k{j}": y * (depth == d) for j, d in enumerate(DEPTHS)}
            cols |= {f"n{j}": (depth == d).astype(float) for j, d in enumerate(DEPTHS)}
            s = boot.sums(cols)
            K = np.column_stack([s.total(f"k{j}")[1] for j in range(6)])
            N = np.column_stack([s.total(f"n{j}")[1] for j in range(6)])
            res = d50_estimate(DEPTHS, k, n, chance=0.25, replicates=(K, N))
            assert res.status == "estimated" and res.ci is not None
            lo, hi = res.ci
            assert lo is not None and hi is not None
            widths_for.append(hi - lo)
            if labels is cluster:
                covered += lo <= true <= hi
        widths.append(widths_for[0])
        naive_widths.append(widths_for[1])
    return covered / seeds, float(np.mean(widths)), float(np.mean(naive_widths))


def test_d50_interval_coverage_over_repeated_seeds() -> None:
    # independent trials, 60 per depth (B1's size): nominal 95%
    cov, width, naive = _coverage(seeds=150, n_per_depth=60, cluster_size=1, rho=0.0, B=400)
    assert 0.90 <= cov <= 0.995, cov
    assert width == pytest.approx(naive, rel=0.1)


def test_d50_cluster_bootstrap_covers_clustered_trials() -> None:
    # clusters of 4 trials sharing their outcome half the time (25 clusters per depth): the
    # cluster bootstrap still covers; an item-level bootstrap would be far too narrow. (With
    # about 12 clusters per depth the percentile interval under-covers, ~87%: a known
    # small-sample property of the cluster bootstrap.)
    cov, width, naive = _coverage(seeds=120, n_per_depth=100, cluster_size=4, rho=0.5, B=400)
    assert 0.90 <= cov <= 1.0, cov
    assert width > 1.3 * naive


def test_d50_perfect_separation_is_bracketed() -> None:
    n = np.full(6, 40)
    k = np.array([40, 40, 40, 0, 0, 0])
    res = d50_estimate(DEPTHS, k, n, chance=0.25)
    assert res.status == "bracketed" and (res.lower_bound, res.upper_bound) == (2.0, 3.0)
    assert res.value is None and "separation" in (res.reason or "")
    assert res.display() == "between 2 and 3"
    # replicates of separated data take the bracket's midpoint
    assert d50_replicates(DEPTHS, k[None], n[None], chance=0.25)[0] == pytest.approx(2.5)


def test_d50_beyond_and_below_are_bounds_not_numbers() -> None:
    n = np.full(6, 40)
    res = d50_estimate(DEPTHS, n, n, chance=0.25)
    assert res.status == "beyond" and res.lower_bound == 5.0 and res.value is None
    mild = d50_estimate(DEPTHS, np.array([40, 39, 39, 38, 37, 36]), n, chance=0.25)
    assert mild.status == "beyond" and mild.value is None and mild.lower_bound == 5.0
    assert "beyond the deepest level tested" in mild.display()
    low = d50_estimate(DEPTHS, np.array([12, 9, 6, 4, 2, 1]), n, chance=0.25)
    assert low.status == "below" and low.upper_bound == 0.0


def test_d50_not_estimable_says_why() -> None:
    n = np.full(6, 40)
    rising = d50_estimate(DEPTHS, np.array([5, 8, 10, 12, 15, 18]), n, chance=0.25)
    assert rising.status == "not_estimable" and "does not decline" in (rising.reason or "")
    one = d50_estimate([2.0], [10], [20], chance=0.25)
    assert one.status == "not_estimable" and "at least 2" in (one.reason or "")
    nochance = d50_estimate(DEPTHS, n // 2, n, chance=float("nan"))
    assert nochance.status == "not_estimable" and "chance" in (nochance.reason or "")
    low_ceiling = d50_estimate(DEPTHS, n // 2, n, chance=0.5, ceiling=0.4)
    assert low_ceiling.status == "not_estimable"


def test_degradation_slope_controls_for_length() -> None:
    rng = np.random.default_rng(4)
    depth = rng.integers(0, 6, 6000).astype(float)
    length = 6 + 3 * depth + rng.integers(0, 8, 6000)  # longer stories at deeper levels
    eta = 3.0 - 0.8 * depth - 0.15 * (length - 12)
    y = (rng.random(6000) < 1 / (1 + np.exp(-eta))).astype(float)
    groups = (np.arange(6000) // 4).tolist()
    with_len = degradation_slope(depth, y, length, groups)
    without = degradation_slope(depth, y, None, groups)
    assert with_len.status == "estimated" and with_len.covariates == ("depth", "length")
    assert with_len.ci is not None and with_len.ci[0] <= -0.8 <= with_len.ci[1]
    assert without.coef is not None and without.coef < -1.1  # length's effect leaks into depth
    sep = degradation_slope(depth, (depth < 3).astype(float), length)
    assert sep.status == "not_estimable" and sep.reason
    const = degradation_slope(depth, y, np.full(6000, 12.0))
    assert const.covariates == ("depth",) and any("constant" in n for n in const.notes)


def test_the_expanded_percentile_level_matches_a_t_intervals_width() -> None:
    # Hesterberg (2015): z' = sqrt(n / (n - 1)) * t_{n-1, 0.975}; level 2 Phi(z') - 1
    from scipy import stats as sps

    for n in (3, 9, 10, 11, 20, 50, 200, 5000):
        z = math.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1)
        assert expanded_level(n) == pytest.approx(2 * sps.norm.cdf(z) - 1, abs=2e-6)
    levels = [expanded_level(n) for n in range(2, 400)]
    assert all(a > b for a, b in itertools.pairwise(levels))
    assert 0.95 < levels[-1] < 0.951 and expanded_level(10) == pytest.approx(0.9829, abs=1e-4)
    assert expanded_level(1) == 0.95
