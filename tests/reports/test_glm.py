"""The figures computed without importing statsmodels or scipy.stats are the same floating-point
numbers those libraries give: the logistic fit (reports._glm), the t and normal quantiles and
the exact McNemar test (reports._stats), and a degradation slope end to end."""

from __future__ import annotations

import math
import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats
from statsmodels.genmod.families import Binomial
from statsmodels.genmod.generalized_linear_model import GLM
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

from reports._glm import logit_fit
from reports._stats import (
    T975,
    Z95,
    degradation_slope,
    fit_logistic_grouped,
    mcnemar_exact,
    normal_quantile,
    t_quantile,
)


def _statsmodels(k: np.ndarray, n: np.ndarray, exog: np.ndarray) -> tuple[object, bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = GLM(np.column_stack([k, n - k]), exog, family=Binomial()).fit(maxiter=100)
    return res, any(issubclass(w.category, PerfectSeparationWarning) for w in caught)


@st.composite
def grouped(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Successes of trials per row, and a design with a constant, depth and maybe length."""
    rows = draw(st.integers(2, 12))
    depth = np.array(draw(st.lists(st.integers(0, 5), min_size=rows, max_size=rows)), float)
    n = np.array(draw(st.lists(st.integers(1, 60), min_size=rows, max_size=rows)), float)
    k = np.array([draw(st.integers(0, int(t))) for t in n], float)
    columns = [np.ones(rows), depth]
    if draw(st.booleans()):
        columns.append(np.array(draw(st.lists(st.integers(5, 40), min_size=rows,
                                              max_size=rows)), float))
    return k, n, np.column_stack(columns)


@settings(max_examples=300, deadline=None)
@given(grouped())
def test_logit_fit_is_statsmodels_glm_bit_for_bit(data: tuple[np.ndarray, ...]) -> None:
    k, n, exog = data
    res, separated = _statsmodels(k, n, exog)
    with np.errstate(all="ignore"):
        fit = logit_fit(k, n, exog)
    assert np.array_equal(fit.params, np.asarray(res.params), equal_nan=True)
    assert np.array_equal(fit.bse, np.asarray(res.bse), equal_nan=True)
    assert fit.converged == bool(res.converged)
    assert fit.separated == separated


def test_logit_fit_on_a_separated_and_a_typical_data_set() -> None:
    depth = np.array([1.0, 2.0, 3.0, 4.0])
    n = np.array([10.0, 10.0, 10.0, 10.0])
    typical = np.array([9.0, 7.0, 4.0, 2.0])
    fit = logit_fit(typical, n, np.column_stack([np.ones(4), depth]))
    assert fit.converged and not fit.separated
    assert fit.params[1] < 0 and np.all(fit.bse > 0)
    with np.errstate(all="ignore"):
        separated = logit_fit(np.array([10.0, 10.0, 0.0, 0.0]), n,
                              np.column_stack([np.ones(4), depth]))
    assert separated.separated


def test_the_d50_fit_is_the_one_statsmodels_gave() -> None:
    depth = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    k = np.array([19.0, 15.0, 12.0, 5.0, 3.0])
    n = np.array([20.0, 20.0, 19.0, 20.0, 18.0])
    res, _ = _statsmodels(k, n, np.column_stack([np.ones(5), depth]))
    assert fit_logistic_grouped(depth, k, n) == (float(res.params[0]), float(res.params[1]), True)


def test_degradation_slope_is_the_statsmodels_wald_interval() -> None:
    rng = np.random.default_rng(3)
    depth = rng.integers(1, 5, 300).astype(float)
    length = rng.integers(8, 30, 300).astype(float)
    correct = (rng.random(300) < 1 / (1 + np.exp(-(2.5 - 0.6 * depth - 0.02 * length))))
    got = degradation_slope(depth, correct.astype(float), length)
    # what degradation_slope computed with statsmodels and scipy.stats before: the items
    # summed into (depth, length) cells in the order they first appear, one GLM over the cells
    cells: dict[tuple[float, float], tuple[float, float]] = {}
    for d, ln, c in zip(depth, length, correct, strict=True):
        kk, nn = cells.get((d, ln), (0.0, 0.0))
        cells[(d, ln)] = (kk + c, nn + 1.0)
    exog = np.array([[1.0, d, ln] for d, ln in cells])
    k = np.array([v[0] for v in cells.values()])
    n = np.array([v[1] for v in cells.values()])
    grouped_res, _ = _statsmodels(k, n, exog)
    z = float(stats.norm.ppf(0.975))
    expected = []
    for j, name in ((1, "depth"), (2, "length")):
        c, e = float(grouped_res.params[j]), float(grouped_res.bse[j])
        expected.append((name, c, c - z * e, c + z * e, e, float(2 * stats.norm.sf(abs(c / e)))))
    assert got.status == "estimated"
    assert got.terms == tuple(expected)


def test_degradation_slope_below_min_n_keeps_the_coefficient_without_an_interval() -> None:
    depth = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0])
    correct = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    full = degradation_slope(depth, correct)
    few = degradation_slope(depth, correct, min_n=20)
    assert full.status == "estimated" and few.status == "not_estimable"
    assert (few.coef, few.se) == (full.coef, full.se)
    assert few.ci is None and few.p is None and few.terms == ()


def test_t_quantiles_are_scipys() -> None:
    assert tuple(float(special.stdtrit(df, 0.975)) for df in range(1, 31)) == T975
    assert normal_quantile() == Z95 == float(stats.norm.ppf(0.975))
    for level in (0.8, 0.9, 0.95, 0.99):
        assert normal_quantile(level) == float(stats.norm.ppf(0.5 + level / 2))
        for df in (*range(1, 45), 59, 119, 2519, 1e6, 2.5):
            assert t_quantile(df, level) == float(stats.t.ppf(0.5 + level / 2, df)), (df, level)
        assert t_quantile(math.inf, level) == float(stats.norm.ppf(0.5 + level / 2))
    assert math.isnan(t_quantile(0))


@pytest.mark.parametrize("b", [0, 1, 2, 5, 9, 17, 40, 133])
def test_mcnemar_exact_is_statsmodels(b: int) -> None:
    for c in (0, 1, 3, 8, 20, 41, 150):
        expected = 1.0 if b + c == 0 else float(
            min(1.0, mcnemar([[0, b], [c, 0]], exact=True).pvalue))
        assert mcnemar_exact(b, c) == expected


def test_mcnemar_exact_falls_back_to_scipy_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """The binomial comes from scipy.special's private ufunc (no scipy.stats import); a SciPy
    without it gets the same number from scipy.stats."""
    pairs = ((1, 9), (17, 41), (133, 150))
    fast = [mcnemar_exact(b, c) for b, c in pairs]
    assert stats.binom is not None  # scipy.stats is loaded before its ufuncs are hidden
    monkeypatch.setitem(sys.modules, "scipy.special._ufuncs", types.ModuleType("without"))
    assert [mcnemar_exact(b, c) for b, c in pairs] == fast
    assert fast[0] == pytest.approx(22 / 1024)
