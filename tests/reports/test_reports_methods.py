"""The methods behind every interval and test of the profile: hand values, exact properties,
and the regressions of issue 11 (zero-width intervals from single-cluster strata, p ≈ 0 at n = 3,
R0 counted as false belief, B2 and B4 pooled into B1's curve)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import multinomial

from reports._data import ItemTable
from reports._estimates import MIN_N, NO_SPREAD, paired_binary, paired_values, proportion
from reports._stats import (
    ClusterBootstrap,
    bootstrap_pvalue,
    clustered_mean_interval,
    clustered_proportion,
    collapse_strata,
    fisher_exact,
    mcnemar_exact,
    newcombe_interval,
    newcombe_paired_interval,
    permutation_pvalue,
    sign_flip_pvalue,
    wilson_interval,
)
from reports.comparison import compare_runs
from reports.profile import profile_from_data
from reports.synthetic import SyntheticAgent, logistic_accuracy, simulate, suite_design

# -- exact tests and their floors ------------------------------------------------------------


def test_mcnemar_exact_hand_values() -> None:
    # b = 1, c = 9: 2 · P(X <= 1 | n = 10, 1/2) = 2 · 11 / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0


def test_sign_flip_is_exact_for_few_and_floored_for_many() -> None:
    rng = np.random.default_rng(0)
    # five positive differences: 2 of the 32 sign patterns are as extreme
    p, how = sign_flip_pvalue([1, 1, 1, 1, 1, 0, 0], rng)
    assert how == "exact" and p == pytest.approx(2 / 32)
    p, how = sign_flip_pvalue(np.ones(40), rng, B=999)
    assert how == "Monte Carlo B=999" and p == pytest.approx(1 / 1000)  # never below 1/(B+1)
    assert sign_flip_pvalue([0, 0, 0], rng)[0] == 1.0
    p_sym, _ = sign_flip_pvalue([1, -1, 2, -2, 3, -3], rng)
    assert p_sym == 1.0


def test_permutation_and_bootstrap_pvalues_resolve_no_more_than_their_replicates() -> None:
    assert permutation_pvalue(5.0, np.zeros(999)) == pytest.approx(1 / 1000)
    assert permutation_pvalue(0.0, np.zeros(9)) == 1.0
    # a relabelling whose statistic could not be computed counts as extreme (valid, not liberal)
    assert permutation_pvalue(5.0, np.r_[np.zeros(8), np.nan]) == pytest.approx(2 / 10)
    assert bootstrap_pvalue(np.full(1999, 3.0)) == pytest.approx(2 / 2000)


def test_fisher_and_newcombe_independent_agree_with_statsmodels() -> None:
    from statsmodels.stats.proportion import confint_proportions_2indep

    lo, hi = newcombe_interval(56, 70, 48, 80)
    ref = confint_proportions_2indep(56, 70, 48, 80, method="newcomb")
    assert (lo, hi) == pytest.approx(tuple(ref))
    # Newcombe (1998a) Table II example (a): 56/70 − 48/80 → 0.0524 to 0.3339
    assert (lo, hi) == pytest.approx((0.0524, 0.3339), abs=5e-4)
    assert fisher_exact(3, 3, 0, 3) == pytest.approx(0.1)


# -- Newcombe's paired interval ---------------------------------------------------------------


def _exact_paired_coverage(n: int, p11: float, p10: float, p01: float) -> float:
    probs = [p11, p10, p01, 1 - p11 - p10 - p01]
    theta = p10 - p01
    cov = 0.0
    for a, b, c in itertools.product(range(n + 1), repeat=3):
        d = n - a - b - c
        if d < 0:
            continue
        lo, hi = newcombe_paired_interval(a, b, c, d)
        if lo <= theta <= hi:
            cov += float(multinomial.pmf([a, b, c, d], n, probs))
    return cov


def test_newcombe_paired_hand_case_and_edges() -> None:
    # a = b = c = d = 5 (n = 20, φ = 0): θ = 0 ± √((p − l)² + (u − p)²) with Wilson(10, 20)
    lo, hi = newcombe_paired_interval(5, 5, 5, 5)
    wl, wu = wilson_interval(10, 20)
    half = math.hypot(0.5 - wl, wu - 0.5)
    assert (lo, hi) == pytest.approx((-half, half))
    # all pairs concordant: a zero difference, but never a zero-width interval
    lo, hi = newcombe_paired_interval(12, 0, 0, 8)
    assert lo < 0 < hi
    assert newcombe_paired_interval(0, 10, 0, 0)[1] == 1.0


@pytest.mark.parametrize(
    ("n", "cells"),
    [
        (20, (0.45, 0.25, 0.10)),  # agent better, positively correlated answers
        (30, (0.20, 0.30, 0.30)),  # no difference
        (40, (0.60, 0.15, 0.05)),
    ],
)
def test_newcombe_paired_exact_coverage(n: int, cells: tuple[float, float, float]) -> None:
    """Exact coverage (every table enumerated): close to 95% already at n = 20-40."""
    cov = _exact_paired_coverage(n, *cells)
    assert 0.93 <= cov <= 0.975, cov


# -- clusters and strata ------------------------------------------------------------------------


def test_clustered_proportion_widens_only_for_real_clustering() -> None:
    y = np.repeat([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0], 5)  # 10 clusters of 5
    clusters = np.repeat(np.arange(10), 5)
    k, n, lo, hi, m = clustered_proportion(y, clusters)
    wlo, whi = wilson_interval(k, n)
    assert (k, n, m) == (30.0, 50.0, 10) and hi - lo > 1.5 * (whi - wlo)
    # singletons: exactly Wilson
    assert clustered_proportion(y, np.arange(50))[2:4] == pytest.approx((wlo, whi))
    # independent outcomes in clusters: the design effect is floored at 1 (never narrower)
    rng = np.random.default_rng(3)
    y2 = (rng.random(400) < 0.5).astype(float)
    _, _, lo2, hi2, _ = clustered_proportion(y2, np.repeat(np.arange(100), 4))
    w2 = wilson_interval(y2.sum(), 400)
    assert hi2 - lo2 >= (w2[1] - w2[0]) * 0.999
    mean, lo3, hi3, _, m3 = clustered_mean_interval([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and m3 == 4 and lo3 < 2.5 < hi3


def test_single_cluster_strata_are_merged_not_resampled_as_constants() -> None:
    """Issue 11: a (belief, depth) stratum of one cluster gave every replicate the same value,
    hence zero-width intervals. Merged with its siblings, the resamples vary again."""
    strata = [("nesttom", "B1", "false", f"R{d}") for d in range(1, 6)] + \
        [("nesttom", "B1", "true", f"R{d}") for d in range(1, 6)] + [("games", "g", "c")] * 4
    clusters = [*range(10), 100, 100, 101, 101]
    labels, merged = collapse_strata(strata, clusters)
    assert set(labels[:5]) == {("nesttom", "B1", "false")}
    assert set(labels[5:10]) == {("nesttom", "B1", "true")}
    assert labels[10:] == [("games", "g", "c")] * 4  # two clusters already: left alone
    assert merged
    y = np.array([1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0], dtype=float)
    before = ClusterBootstrap(clusters, np.random.default_rng(0), B=200, strata=strata)
    after = ClusterBootstrap(clusters, np.random.default_rng(0), B=200, strata=labels)
    for boot, spread in ((before, False), (after, True)):
        s = boot.sums({"y": y * (np.arange(14) < 5), "n": (np.arange(14) < 5) * 1.0})
        reps = s.total("y")[1] / s.total("n")[1]
        assert bool(np.ptp(reps) > 0) is spread
    # families are never merged into one another
    lone = collapse_strata([("a", "x"), ("b", "y")], [1, 2])[0]
    assert lone == [("a",), ("b",)]


# -- small n: not estimable, never spuriously significant --------------------------------------


def test_small_n_figures_keep_value_and_n_but_claim_nothing() -> None:
    p = proportion(np.ones(7))
    d = p.to_dict()
    assert d["value"] == 1.0 and d["n"] == 7 and d["ci"] is None
    assert d["status"] == "not_estimable" and "at least 10" in d["reason"]
    assert proportion(np.ones(MIN_N)).to_dict()["ci"] is not None
    # issue 11: "+33.3 pts [33.3, 33.3], n = 3, p(Holm) < 0.001"
    c = paired_binary([1, 0, 0], [0, 0, 0], ("full", "ablated"), np.random.default_rng(0))
    cd = c.to_dict()
    assert cd["difference"] == pytest.approx(1 / 3) and cd["ci"] is None and cd["p"] is None
    v = paired_values([0.1, 0.2], [0.0, 0.0], ("a", "b"), np.random.default_rng(0)).to_dict()
    assert v["p"] is None and v["status"] == "not_estimable"


def test_paired_binary_picks_its_method_by_design() -> None:
    rng = np.random.default_rng(1)
    x = (rng.random(60) < 0.8).astype(float)
    y = (rng.random(60) < 0.5).astype(float)
    single = paired_binary(x, y, ("agent", "control"), rng)
    assert single.interval == "newcombe-paired-95" and single.test == "exact McNemar"
    b = int(((x == 1) & (y == 0)).sum())
    c = int(((x == 0) & (y == 1)).sum())
    assert single.p == pytest.approx(mcnemar_exact(b, c))
    clustered = paired_binary(x, y, ("agent", "control"), rng, np.arange(60) // 3)
    assert clustered.interval == "paired-t-95" and clustered.n_clusters == 20
    assert clustered.test is not None and clustered.test.startswith("sign-flip")


# -- the NestToM metrics as seed 002 defines them -----------------------------------------------


def _agent(name: str, d50: float, **kw: object) -> SyntheticAgent:
    return SyntheticAgent(name, logistic_accuracy(d50, -1.2, 0.25), d50=d50, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def baseline_profile() -> dict:
    items = suite_design("baseline")
    agents = [
        _agent("agent", 2.7, behaviour_accuracy=0.6),
        _agent("agent-control", 2.7, role="control", base_agent="agent", behaviour_accuracy=0.6),
        SyntheticAgent("reality-leak", lambda d: 0.0, tb_accuracy=1.0, leak_share=1.0,
                       projection_share=0.0, role="reference", spec={"policy": "reality-leak"},
                       reality_accuracy=1.0),
    ]
    rd = simulate(np.random.default_rng(5), agents, items)
    return profile_from_data(rd, seed=1, n_boot=300).to_json()


def test_r0_is_the_reality_check_outside_false_belief_figures(baseline_profile: dict) -> None:
    leak = baseline_profile["agents"]["reality-leak"]
    assert leak["leakage_resistance"]["value"] == 0.0  # was 8.5% with R0 counted
    assert leak["reality_check"]["value"] == 1.0 and leak["reality_check"]["n"] == 120
    assert "R0" not in leak["accuracy_by_depth"]["false"]
    assert leak["d50"]["depths_tested"][0] == 1
    assert leak["valid"] is True


def test_b1_curve_b2_by_length_b4_gap_per_depth(baseline_profile: dict) -> None:
    a = baseline_profile["agents"]["agent"]
    assert a["accuracy_by_depth"]["false"]["R2"]["n"] == 60  # was 257 with B2 and B4 pooled
    assert a["false_belief_accuracy"]["n"] == 7 * 60
    ls = a["length_sweep"]
    for belief in ("false", "true"):
        assert set(ls["accuracy_by_length"][belief]) == {"6", "12", "20"}
        assert all(c["n"] == 60 for c in ls["accuracy_by_length"][belief].values())
    assert ls["available"] and ls["length"]["value"] is not None and "length" in ls["model"]
    gap = a["applied_gap"]  # B4: behaviour questions on 25 B1 stories at each of R1-R3
    assert gap["available"] and gap["n"] == 75 and set(gap["by_depth"]) == {"R1", "R2", "R3"}
    assert all(g["n"] == 25 for g in gap["by_depth"].values())
    assert gap["interval"] == "newcombe-paired-95"
    # companions serve joint accuracy only
    assert baseline_profile["design"]["companion_items"] == 1200
    r2s = a["r2_self"]
    assert r2s["own_belief_leak"]["n"] == 60 and r2s["own_belief_leak"]["ci"] is not None
    mech = a["by_mechanism"]["false_belief_accuracy"]
    assert set(mech) == {"absence", "secret-observation", "lie", "garble",
                         "stale-then-corrected"}
    assert sum(m["n"] for m in mech.values()) == 420
    assert set(a["by_form"]["false_belief_accuracy"]) == {"narrative", "chat", "log"}
    assert baseline_profile["design"]["block_source"] == "meta"


def test_blocks_are_inferred_when_the_items_do_not_name_them(baseline_profile: dict) -> None:
    items = suite_design("baseline", blocks_in_meta=False)
    table = ItemTable.from_bodies([it.to_dict() for it in items])
    assert table.block_source == "inferred"
    named = ItemTable.from_bodies([it.to_dict() for it in suite_design("baseline")])
    assert table.block.tolist() == named.block.tolist()


def test_identical_agents_on_quick_claim_nothing() -> None:
    items = suite_design("quick")
    agents = [_agent("agent", 2.7), _agent("agent-control", 2.7, role="control",
                                            base_agent="agent")]
    prof = profile_from_data(simulate(np.random.default_rng(2), agents, items),
                             n_boot=200).to_json()
    assert prof["multiple_comparisons"]["m"] == 0 and prof["contrasts"] == []
    fb = prof["agents"]["agent"]["minus_control"]["metrics"]["false_belief_accuracy"]
    assert fb["status"] == "not_estimable" and fb["ci"] is None and fb["p"] is None
    d50 = prof["agents"]["agent"]["d50"]
    assert d50.get("ci") is None


def test_compare_quick_with_baseline_makes_no_claim_quick_cannot_carry() -> None:
    from reports.profile import analyse

    agents = [_agent("agent", 2.7)]
    quick = analyse(simulate(np.random.default_rng(3), agents, suite_design("quick")),
                    n_boot=200)
    base = analyse(simulate(np.random.default_rng(4), agents, suite_design("baseline")),
                   n_boot=200, seed=1)
    cmp = compare_runs(quick, base)
    m = cmp.agents["agent"].metrics
    fb = m["false_belief_accuracy"]
    assert fb.status == "not_estimable" and fb.ci is None and fb.p is None
    both = compare_runs(base, base).agents["agent"].metrics["false_belief_accuracy"]
    assert both.interval == "newcombe-95" and both.ci is not None
    assert both.ci[0] is not None and both.ci[1] is not None and both.ci[0] < 0 < both.ci[1]


def test_differences_without_spread_get_no_interval() -> None:
    rng = np.random.default_rng(0)
    same = np.array([0.25] * 30)
    c = paired_values(same, same, ("a", "b"), rng)
    assert not c.estimable and c.lo is None and c.reason == NO_SPREAD and c.p is None
    shifted = paired_values(same + 0.5, same, ("a", "b"), rng)  # every difference 0.5
    assert not shifted.estimable and shifted.difference == pytest.approx(0.5)
    ones = np.ones(40)
    clusters = np.repeat(np.arange(20), 2)
    b = paired_binary(ones, ones, ("a", "b"), rng, clusters)
    assert not b.estimable and b.reason == NO_SPREAD
    # one pair per item: Newcombe's interval is honest even when both answered alike
    n = paired_binary(ones, ones, ("a", "b"), rng)
    assert n.estimable and n.lo is not None and n.hi is not None and n.lo < 0 < n.hi


def _intervals(node: object, path: str = "") -> list[tuple[str, list[float]]]:
    out: list[tuple[str, list[float]]] = []
    if isinstance(node, dict):
        ci = node.get("ci")
        if isinstance(ci, list) and len(ci) == 2 and None not in ci:
            out.append((path, ci))
        for k, v in node.items():
            out += _intervals(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _intervals(v, f"{path}[{i}]")
    return out


def test_two_agents_that_answer_alike_get_no_zero_width_contrast() -> None:
    # an agent and its control both at ceiling on every item: every paired numeric
    # difference is 0, and no contrast may claim a zero-width interval
    perfect = dict(tb_accuracy=1.0, reality_accuracy=1.0, behaviour_accuracy=1.0,
                   judgment_accuracy=1.0, game_accuracy=1.0, abc_accuracy=1.0)
    agents = [SyntheticAgent("agent", lambda d: 1.0, **perfect),  # type: ignore[arg-type]
              SyntheticAgent("agent-control", lambda d: 1.0, role="control",
                             base_agent="agent", **perfect)]  # type: ignore[arg-type]
    prof = profile_from_data(simulate(np.random.default_rng(9), agents,
                                      suite_design("baseline")), n_boot=200).to_json()
    metrics = prof["agents"]["agent"]["minus_control"]["metrics"]
    zero = [(p, ci) for p, ci in _intervals(metrics) if ci[0] == ci[1]]
    assert not zero, zero
    assert metrics["applied_gap"]["status"] == "not_estimable"
    assert metrics["applied_gap"]["reason"] == NO_SPREAD
    assert all(c["p_holm"] is None or c["p_holm"] >= 0.05 for c in prof["contrasts"])
