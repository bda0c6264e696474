"""Pure statistics for profiles: intervals, exact and permutation tests, the cluster bootstrap,
D50, slopes, Holm, ECE.

Nothing here does I/O, reads a clock or touches a global random state: every resampling function
takes a seeded :class:`numpy.random.Generator`, so the same seed gives the same interval.

Which method for which estimate is decided by the caller (see :mod:`reports._estimates`); this
module holds the methods. All intervals are two-sided, 95% unless a ``level`` says otherwise.

- **Wilson score interval** for a proportion (:func:`wilson_interval`): good near 0 and 1, where
  the Wald interval fails. Where trials come in clusters of several, the Wilson interval is taken
  at the **design-effect-adjusted** n (:func:`clustered_proportion`, Kish's n / deff with the
  ratio-estimator variance over clusters and a t quantile on clusters − 1 degrees of freedom);
  where a proportion pools strata whose sizes the design fixes (depth cells), at the
  **stratification-adjusted** n (:func:`stratified_n`).
- **Newcombe's intervals** for differences of proportions: the hybrid score interval for two
  independent proportions (:func:`newcombe_interval`, statsmodels) and Newcombe's square-and-add
  interval for paired proportions (:func:`newcombe_paired_interval`).
- **Exact and permutation tests**: the exact McNemar test for paired binary outcomes
  (:func:`mcnemar_exact`, scipy), Fisher's exact test for two independent proportions
  (:func:`fisher_exact`, scipy), and the sign-flip permutation test for paired differences over
  clusters (:func:`sign_flip_pvalue`: exact enumeration up to 2**16 sign patterns, else Monte
  Carlo with ``p = (1 + #{|T*| >= |T|}) / (B + 1)``, never below ``1 / (B + 1)``).
- **Cluster bootstrap** (:class:`ClusterBootstrap`, :func:`cluster_bootstrap`): whole clusters are
  resampled with replacement, optionally *within strata* (the design's fixed cells, e.g. belief
  type x depth), and the percentile interval of the replicates is reported. A stratum holding a
  single cluster would contribute no variance at all, so callers first merge such strata with
  their siblings (:func:`collapse_strata`); the bootstrap is only used where every stratum holds at
  least two clusters. Its p-value (:func:`bootstrap_pvalue`) is the percentile one, never below
  ``2 / (B + 1)``.
- **Normal approximation** for means of non-binary quantities (:func:`mean_interval`) and the
  paired t interval over clusters (:func:`clustered_mean_interval`).

D50 (:func:`d50_estimate`) is the depth at which the fitted false-belief accuracy of a logistic
regression on depth falls halfway between the ceiling and chance:
``halfway = chance + (ceiling - chance) / 2``. Chance is the mean of ``1 / number of choices``
over the items; the ceiling defaults to **1.0**, the accuracy of an exact reasoner, so that an
agent that is poor at every depth cannot buy a deep D50 with a low ceiling (its true-belief
accuracy is reported, and policed, separately). A caller can pass another ceiling (for example the
agent's R0 or true-belief accuracy). When the data cannot support a number the result says so
and why: perfect separation gives the bracket between two tested depths, accuracy still above
halfway at the deepest level gives a lower bound ("beyond the deepest level tested"), and so on.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._glm import LogitFit, logit_fit

__all__ = [
    "T975",
    "Z95",
    "Calibration",
    "ClusterBootstrap",
    "D50Result",
    "Interval",
    "SlopeResult",
    "bootstrap_pvalue",
    "cluster_bootstrap",
    "clustered_mean_interval",
    "clustered_proportion",
    "collapse_strata",
    "d50_estimate",
    "d50_from_fit",
    "d50_replicates",
    "degradation_slope",
    "ece",
    "fisher_exact",
    "fit_logistic_grouped",
    "holm",
    "logistic_batch",
    "mcnemar_exact",
    "mean_interval",
    "newcombe_interval",
    "newcombe_paired_interval",
    "normal_quantile",
    "paired_difference",
    "percentile_interval",
    "permutation_pvalue",
    "sign_flip_pvalue",
    "stratified_n",
    "t_quantile",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95% interval."""

FloatArray = npt.NDArray[np.float64]


# -- proportions, means, multiplicity ------------------------------------------------------


def wilson_interval(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``k`` successes in ``n`` trials.

    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``. Returns ``(nan, nan)`` when
    ``n == 0`` (no data, no interval).
    """
    if n <= 0:
        return (math.nan, math.nan)
    if k < 0 or k > n:
        raise ValueError(f"k={k} is outside 0..n={n}")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(values: npt.ArrayLike, z: float = Z95) -> tuple[float, float, float, int]:
    """Mean, normal-approximation interval and n of the finite values (nan when n < 2)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    m = float(v.mean())
    if n < 2:
        return (m, math.nan, math.nan, n)
    half = z * float(v.std(ddof=1)) / math.sqrt(n)
    return (m, m - half, m + half, n)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    Sort ascending; the i-th smallest (1-based) becomes ``max_{j<=i} min(1, (m-j+1)·p_(j))``.
    NaN p-values (contrasts that could not be tested) stay NaN and do not count in ``m``.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, math.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        out[idx] = running
    adjusted: list[float] = out.tolist()
    return adjusted


def percentile_interval(
    replicates: npt.ArrayLike, level: float = 0.95
) -> tuple[float, float, int]:
    """The percentile interval of bootstrap replicates, ignoring NaN ones.

    Infinite replicates are allowed (a D50 beyond every tested depth is +inf) and are never
    interpolated with finite ones: the interval ends are order statistics. Returns
    ``(lo, hi, number of finite-or-infinite replicates used)``.
    """
    r = np.asarray(replicates, dtype=float)
    r = r[~np.isnan(r)]
    if r.size == 0:
        return (math.nan, math.nan, 0)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(r, [alpha, 1.0 - alpha], method="inverted_cdf")
    return (float(lo), float(hi), int(r.size))


def bootstrap_pvalue(replicates: npt.ArrayLike, null: float = 0.0) -> float:
    """Two-sided percentile bootstrap p-value for ``null``:
    ``min(1, 2·min(1 + #{r <= null}, 1 + #{r >= null}) / (B + 1))``.

    It is the inversion of the percentile interval (``p <= 1 − level`` exactly when ``null`` lies
    outside it), so it can never claim more than the replicates resolve: it is at least
    ``2 / (B + 1)``. NaN replicates are ignored; infinite ones count on their side.
    """
    r = np.asarray(replicates, dtype=float)
    r = r[~np.isnan(r)]
    if r.size == 0:
        return math.nan
    b = r.size
    below = (1 + np.count_nonzero(r <= null)) / (b + 1)
    above = (1 + np.count_nonzero(r >= null)) / (b + 1)
    return float(min(1.0, 2.0 * min(below, above)))


def permutation_pvalue(observed: float, permuted: npt.ArrayLike) -> float:
    """Two-sided Monte Carlo permutation p-value ``(1 + #{|T*| >= |T|}) / (B + 1)``.

    ``permuted`` holds the statistic under ``B`` random relabellings. A NaN there (a statistic
    that could not be computed on that relabelling) counts as at least as extreme, which keeps
    the test valid. NaN when the observed statistic is NaN.
    """
    t = np.asarray(permuted, dtype=float)
    if math.isnan(observed):
        return math.nan
    obs = abs(observed) * (1.0 - 1e-12) if math.isfinite(observed) else math.inf
    extreme = np.isnan(t) | (np.abs(t) >= obs)
    return float((1 + np.count_nonzero(extreme)) / (t.size + 1))


T975 = (
    12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934,
    2.5705818356363146, 2.4469118511449786, 2.364624251592784, 2.306004135204166,
    2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
    2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546,
    2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
    2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
    2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454,
    2.045229642132703, 2.0422724563012378,
)  # fmt: skip
"""Student's t 97.5% quantiles on 1 to 30 degrees of freedom, as scipy computes them
(``scipy.special.stdtrit(df, 0.975)``, what ``scipy.stats.t.ppf`` calls; a test checks every
one): the 95% intervals of a run of a few dozen items need no SciPy, whose import takes longer
than the rest of their report."""


def normal_quantile(level: float = 0.95) -> float:
    """The two-sided ``level`` quantile of the standard normal, as scipy's ``norm.ppf`` gives
    it (:data:`Z95` for 95%, the same number)."""
    if level == 0.95:
        return Z95
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2.0))


@functools.lru_cache(maxsize=1024)
def t_quantile(df: float, level: float = 0.95) -> float:
    """The two-sided ``level`` quantile of Student's t on ``df`` degrees of freedom (the normal
    quantile for infinite ``df``): scipy.stats' ``t.ppf``, by the scipy.special function it
    calls (from :data:`T975` where that holds it), without importing scipy.stats (a second)."""
    if not math.isfinite(df):
        return normal_quantile(level)
    if level == 0.95 and 1 <= df <= len(T975) and float(df).is_integer():
        return T975[int(df) - 1]
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + level / 2.0)) if df > 0 else math.nan


def _t_quantile_series(df: int, p: float) -> float:
    """Student's t quantile by its Cornish–Fisher expansion in 1/df (Abramowitz & Stegun
    26.7.5, four terms): within 2e-5 of the exact value at p = 0.975 from df = 9 on, and
    without importing SciPy."""
    z = NormalDist().inv_cdf(p)
    g = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return float(z + sum(gi / df ** (i + 1) for i, gi in enumerate(g)))


@functools.lru_cache(maxsize=4096)
def expanded_level(n: int, level: float = 0.95) -> float:
    """The percentile level that makes a bootstrap percentile interval over ``n`` independent
    units as wide as a ``level`` t interval: Hesterberg's *expanded percentile interval* (2015,
    "What teachers should know about the bootstrap", *Amer. Statist.* 69(4)). Percentile
    intervals are too narrow in small samples (the bootstrap's variance is the plug-in's, with
    divisor n, and it uses normal, not t, tails); this widens them by ``sqrt(n / (n − 1)) ·
    t_{n−1} / z``: ``2 Φ(sqrt(n / (n − 1)) · t_{n−1}((1 + level) / 2)) − 1``. About 0.983 at
    n = 10, 0.968 at 20, 0.958 at 50, ``level`` in the limit; ``level`` when n < 2."""
    if n < 2:
        return level
    df = n - 1
    t = t_quantile(df, level) if df < 9 else _t_quantile_series(df, 0.5 + level / 2.0)
    return 2.0 * NormalDist().cdf(math.sqrt(n / df) * t) - 1.0


# -- differences of proportions, exact and permutation tests --------------------------------


def newcombe_paired_interval(
    a: float, b: float, c: float, d: float, z: float = Z95
) -> tuple[float, float]:
    """Newcombe's (1998, *Statist. Med.* 17:2635) square-and-add interval for ``p1 − p2`` from a
    paired 2 x 2 table, with the corrected correlation of Altman et al. (2000, *Statistics with
    Confidence*, ch. 6).

    ``a`` both successes, ``b`` success on the first only, ``c`` on the second only, ``d``
    neither. With Wilson intervals ``(l1, u1)`` for ``p1 = (a + b)/n`` and ``(l2, u2)`` for
    ``p2 = (a + c)/n`` and ``φ = C / sqrt((a+b)(c+d)(a+c)(b+d))`` (0 when a margin is empty),
    where ``C = ad − bc`` when that is negative and ``max(ad − bc − n/2, 0)`` otherwise, the
    interval is ``θ − δ`` to ``θ + ε`` with
    ``δ = sqrt((p1 − l1)² − 2φ(p1 − l1)(u2 − p2) + (u2 − p2)²)`` and
    ``ε = sqrt((u1 − p1)² − 2φ(u1 − p1)(p2 − l2) + (p2 − l2)²)``. (The correction keeps the
    coverage at or above nominal from n ≈ 15 on; plain φ dips to ~93% there.)
    """
    n = a + b + c + d
    if n <= 0:
        return (math.nan, math.nan)
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, z)
    l2, u2 = wilson_interval(a + c, n, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    corrected = cross if cross <= 0 else max(cross - n / 2.0, 0.0)
    phi = corrected / math.sqrt(den) if den > 0 else 0.0
    theta = p1 - p2
    dl = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    du = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    return (max(-1.0, theta - math.sqrt(max(dl, 0.0))), min(1.0, theta + math.sqrt(max(du, 0.0))))


def newcombe_interval(
    k1: float, n1: float, k2: float, n2: float, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``k1/n1 − k2/n2`` (two independent proportions;
    statsmodels' ``confint_proportions_2indep(method="newcomb")``)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    if n1 <= 0 or n2 <= 0:
        return (math.nan, math.nan)
    lo, hi = confint_proportions_2indep(
        k1, n1, k2, n2, method="newcomb", compare="diff", alpha=1.0 - level
    )
    return (max(-1.0, float(lo)), min(1.0, float(hi)))


def mcnemar_exact(b: int, c: int) -> float:
    """The exact (conditional binomial) McNemar p-value for ``b`` and ``c`` discordant pairs:
    ``min(1, 2·P(X <= min(b, c)))`` with ``X ~ Binomial(b + c, 1/2)``, by scipy's binomial
    distribution as statsmodels' ``mcnemar(exact=True)`` computes it (without importing
    statsmodels and pandas). 1.0 when there is no discordant pair."""
    if b + c == 0:
        return 1.0
    return float(min(1.0, _binomial_cdf(min(b, c), b + c, 0.5) * 2))


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)`` and ``0 <= k < n``: scipy.stats'
    ``binom.cdf``, by the scipy.special ufunc it calls (Boost's binomial CDF), so the same
    number without importing scipy.stats (a second: a baseline run's profile needs no other
    part of it). Falls back to scipy.stats where that private ufunc is gone."""
    try:
        from scipy.special._ufuncs import _binom_cdf
    except ImportError:  # a SciPy that moved it: the public way, slower to import
        from scipy.stats import binom

        return float(binom.cdf(k, n, p))
    return float(_binom_cdf(float(k), float(n), p))


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's exact two-sided p-value for two independent proportions (scipy)."""
    from scipy.stats import fisher_exact as _fisher

    if n1 <= 0 or n2 <= 0:
        return math.nan
    res = _fisher([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided")
    return float(min(1.0, res.pvalue))


SIGN_FLIP_EXACT_MAX = 16
"""Up to this many non-zero paired differences the sign-flip test enumerates every pattern."""


def sign_flip_pvalue(
    differences: npt.ArrayLike, rng: np.random.Generator, *, B: int = 2000
) -> tuple[float, str]:
    """Two-sided sign-flip permutation test of "the paired differences are symmetric about 0".

    ``differences`` holds one value per independent unit (a cluster's summed differences); the
    statistic is ``|Σ d|``. Zeros carry no sign and are dropped. With at most
    :data:`SIGN_FLIP_EXACT_MAX` non-zero values every sign pattern is enumerated (exact p);
    otherwise ``B`` random patterns give ``(1 + #{|T*| >= |T|}) / (B + 1)``. Returns
    ``(p, "exact" | "Monte Carlo B=<B>")``.
    """
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    k = int(d.size)
    if k == 0:
        return (1.0, "exact")
    obs = abs(float(d.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))
    if k <= SIGN_FLIP_EXACT_MAX:
        signs = ((np.arange(2**k)[:, None] >> np.arange(k)) & 1) * 2 - 1
        t = np.abs(signs @ d)
        return (float(np.count_nonzero(t >= obs - tol) / t.size), "exact")
    hits = 0
    done = 0
    while done < B:  # in chunks: B x k signs at once could be large
        m = min(B - done, max(1, 2_000_000 // k))
        signs = rng.integers(0, 2, size=(m, k), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= obs - tol))
        done += m
    return (float((1 + hits) / (B + 1)), f"Monte Carlo B={B}")


def clustered_proportion(
    y: npt.ArrayLike, clusters: npt.ArrayLike | None = None, level: float = 0.95
) -> tuple[float, float, float, float, int]:
    """A proportion of 0/1 outcomes with its interval, allowing for clusters.

    Returns ``(k, n, lo, hi, m)``: successes, trials, the interval and the number of clusters.
    When every cluster holds one trial (or ``clusters`` is None) it is the Wilson interval. When
    clusters hold several, it is the Wilson interval at Kish's effective sample size
    ``n / deff`` (``deff`` = the ratio-estimator variance over clusters ÷ the binomial variance,
    at least 1 and at most the largest cluster; the largest cluster when every outcome is the
    same) with the t quantile on ``m − 1`` degrees of freedom. NaN interval with fewer than two
    clusters.
    """
    ya = np.asarray(y, dtype=float)
    n = int(ya.size)
    k = float(ya.sum())
    if n == 0:
        return (0.0, 0.0, math.nan, math.nan, 0)
    if clusters is None:
        lo, hi = wilson_interval(k, n)
        return (k, float(n), lo, hi, n)
    _, inv = np.unique(np.asarray(clusters), return_inverse=True)
    m = int(inv.max()) + 1
    if m == n:
        lo, hi = wilson_interval(k, n)
        return (k, float(n), lo, hi, m)
    if m < 2:
        return (k, float(n), math.nan, math.nan, m)
    n_eff = effective_n(ya, inv, m)
    z = t_quantile(m - 1, level)
    lo, hi = wilson_interval(k / n * n_eff, n_eff, z)
    return (k, float(n), lo, hi, m)


def stratified_n(y: npt.ArrayLike, strata: npt.ArrayLike) -> float:
    """The effective n of a proportion over strata whose sizes the design fixes (depth cells).

    The binomial variance ``p(1−p)/n`` treats the items as drawn from one pool; when the design
    fixes how many come from each stratum, the variance is the stratified one,
    ``Σ_h n_h p_h(1−p_h) / n²``, smaller when accuracy differs between strata. Each ``p_h`` is
    taken with one success and one failure added, ``(k_h + 1)/(n_h + 2)`` (as Agresti and Caffo
    do), so that a small stratum answered all right or all wrong still carries variance, and the
    result is used only where it is the smaller: ``n_eff = n / min(1, stratified ÷ binomial)``,
    never below ``n``. (Checked by simulation: with 12 items a stratum the interval covers at
    94–96.5%; with ``z²/2`` added instead, at 96–97%.)
    """
    ya = np.asarray(y, dtype=float)
    n = ya.size
    if n == 0:
        return 0.0
    p = float(ya.mean())
    vb = p * (1.0 - p) / n
    _, inv = np.unique(np.asarray(strata), return_inverse=True)
    if vb <= 0 or inv.max(initial=0) == 0:
        return float(n)
    kh = np.bincount(inv, weights=ya)
    nh = np.bincount(inv).astype(float)
    pt = (kh + 1.0) / (nh + 2.0)
    v = float((nh * pt * (1.0 - pt)).sum()) / (n * n)
    return float(n) / min(1.0, v / vb) if v > 0 else float(n)


def effective_n(y: FloatArray, codes: npt.NDArray[np.int64], m: int) -> float:
    """Kish's effective sample size ``n / deff`` of 0/1 outcomes ``y`` in ``m`` clusters
    (``codes`` 0..m-1), as :func:`clustered_proportion` defines it."""
    n = y.size
    yc = np.bincount(codes, weights=y, minlength=m)
    nc = np.bincount(codes, minlength=m).astype(float)
    p = float(y.mean())
    biggest = float(nc.max())
    vb = p * (1.0 - p) / n
    if vb <= 0:
        return n / biggest
    v = m / (m - 1) * float(((yc - p * nc) ** 2).sum()) / (n * n)
    deff = min(max(v / vb, 1.0), biggest)
    return n / deff


def clustered_mean_interval(
    values: npt.ArrayLike, clusters: npt.ArrayLike | None = None, level: float = 0.95
) -> tuple[float, float, float, int, int]:
    """Mean of ``values`` with a t interval over clusters: ``(mean, lo, hi, n, m)``.

    The ratio estimator ``Σ y / n`` with the linearised variance
    ``m/(m−1) · Σ_c (y_c − mean·n_c)² / n²`` and the t quantile on ``m − 1`` degrees of freedom;
    with one value per cluster it is the ordinary one-sample t interval. NaN interval with
    fewer than two clusters.
    """
    v = np.asarray(values, dtype=float)
    n = int(v.size)
    if n == 0:
        return (math.nan, math.nan, math.nan, 0, 0)
    if clusters is None:
        inv = np.arange(n)
    else:
        _, inv = np.unique(np.asarray(clusters), return_inverse=True)
    m = int(inv.max()) + 1
    mean = float(v.mean())
    if m < 2:
        return (mean, math.nan, math.nan, n, m)
    yc = np.bincount(inv, weights=v, minlength=m)
    nc = np.bincount(inv, minlength=m).astype(float)
    var = m / (m - 1) * float(((yc - mean * nc) ** 2).sum()) / (n * n)
    half = t_quantile(m - 1, level) * math.sqrt(var)
    return (mean, mean - half, mean + half, n, m)


def collapse_strata(
    strata: Sequence[tuple[Any, ...]],
    clusters: Sequence[Hashable],
    min_clusters: int = 2,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Merge strata that hold fewer than ``min_clusters`` clusters with their siblings.

    Strata are tuples read as a hierarchy (``("nesttom", "B1", "false", "R3")`` is a child of
    ``("nesttom", "B1", "false")``). While some stratum ``S`` holds too few clusters, every
    stratum under ``S``'s parent becomes the parent: the siblings are resampled together,
    unstratified within the parent. (A stratum of one cluster would otherwise be resampled as
    itself every time and contribute no variance: the zero-width interval of a resampling
    artefact.) Strata are never merged across their first element (the item family): a family
    whose top stratum holds one cluster stays as it is, and callers decide what that means for
    their estimate. Returns the new label of every observation and the parents that absorbed
    their children.
    """
    labels = [tuple(s) for s in strata]
    merged: list[tuple[Any, ...]] = []
    while True:
        members: dict[tuple[Any, ...], set[Hashable]] = {}
        for lab, c in zip(labels, clusters, strict=True):
            members.setdefault(lab, set()).add(c)
        small = sorted(
            (lab for lab, cs in members.items() if len(cs) < min_clusters and len(lab) > 1),
            key=lambda lab: (-len(lab), str(lab)),
        )
        if not small:
            return labels, merged
        parent = small[0][:-1]
        merged.append(parent)
        k = len(parent)
        labels = [lab[:k] if lab[:k] == parent else lab for lab in labels]


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval, n and the name of the interval shown."""

    value: float
    lo: float
    hi: float
    n: int
    interval: str
    replicates: FloatArray | None = field(default=None, repr=False, compare=False)
    p: float = math.nan


# -- calibration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """Expected calibration error and the reliability bins it was computed from.

    ``bins`` holds one dict per non-empty bin: ``lo``, ``hi``, ``n``, ``confidence`` (mean stated
    confidence) and ``accuracy``.
    """

    ece: float
    n: int
    bins: tuple[dict[str, float], ...]


def ece(confidences: npt.ArrayLike, correct: npt.ArrayLike, bins: int = 10) -> Calibration:
    """Expected calibration error over ``bins`` equal-width bins of [0, 1].

    ``ECE = Σ_b (n_b / N) · |accuracy_b − mean confidence_b|``. A confidence of exactly 1 falls in
    the last bin. Non-finite confidences are ignored. Confidences must be probabilities.
    """
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    keep = np.isfinite(c) & np.isfinite(y)
    c, y = c[keep], y[keep]
    if c.size and (c.min() < 0 or c.max() > 1):
        raise ValueError("confidences must lie in [0, 1]")
    n = int(c.size)
    if n == 0:
        return Calibration(math.nan, 0, ())
    idx = np.minimum((c * bins).astype(int), bins - 1)
    counts = np.bincount(idx, minlength=bins)
    conf_sum = np.bincount(idx, weights=c, minlength=bins)
    cor_sum = np.bincount(idx, weights=y, minlength=bins)
    total = float(np.abs(cor_sum - conf_sum).sum() / n)
    out = []
    for b in range(bins):
        if counts[b]:
            out.append(
                {
                    "lo": b / bins,
                    "hi": (b + 1) / bins,
                    "n": int(counts[b]),
                    "confidence": float(conf_sum[b] / counts[b]),
                    "accuracy": float(cor_sum[b] / counts[b]),
                }
            )
    return Calibration(total, n, tuple(out))


# -- the cluster bootstrap -----------------------------------------------------------------


class ClusterBootstrap:
    """Resample whole clusters with replacement, within strata, ``B`` times.

    ``clusters`` and ``strata`` give one label per observation (any hashable values). Each
    cluster must lie inside one stratum. Replicate ``b`` draws, in every stratum, as many
    clusters as the stratum has, with replacement; an observation's weight in the replicate is
    the number of times its cluster was drawn.

    The weights are drawn once per stratum from seeds taken from ``rng`` when the object is made,
    so the object is reproducible and :meth:`sums` can be called repeatedly with the same
    replicates (paired contrasts computed in separate calls still share their resamples).

    :meth:`sums` is the fast path: any statistic that is a function of weighted sums (a mean, a
    ratio, a difference of means, counts per depth for a logistic fit, ECE's bin sums...) is
    computed for all replicates at once by one matrix product per stratum.
    """

    def __init__(
        self,
        clusters: Sequence[Hashable] | npt.ArrayLike,
        rng: np.random.Generator,
        *,
        B: int = 2000,
        strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    ):
        if B < 1:
            raise ValueError("B must be at least 1")
        cl: list[Any] = list(clusters)  # type: ignore[arg-type]
        st: list[Any] = [None] * len(cl) if strata is None else list(strata)  # type: ignore[arg-type]
        if len(st) != len(cl):
            raise ValueError("clusters and strata must have one label per observation")
        self.B = B
        self.n_obs = len(cl)
        stratum_code: dict[Hashable, int] = {}
        cluster_code: dict[Hashable, int] = {}
        cluster_stratum: list[int] = []
        obs_cluster = np.empty(self.n_obs, dtype=np.int64)
        for i, (c, s) in enumerate(zip(cl, st, strict=True)):
            sc = stratum_code.setdefault(s, len(stratum_code))
            cc = cluster_code.get(c)
            if cc is None:
                cc = cluster_code[c] = len(cluster_code)
                cluster_stratum.append(sc)
            elif cluster_stratum[cc] != sc:
                raise ValueError(f"cluster {c!r} spans more than one stratum")
            obs_cluster[i] = cc
        self.strata: list[Hashable] = list(stratum_code)
        self.n_clusters = len(cluster_code)
        self.obs_cluster = obs_cluster
        cs = np.asarray(cluster_stratum, dtype=np.int64)
        self.obs_stratum = cs[obs_cluster] if self.n_obs else np.empty(0, dtype=np.int64)
        # per stratum: its clusters (global codes, sorted), and its observations sorted by cluster
        self._clusters_of: list[npt.NDArray[np.int64]] = []
        self._obs_of: list[npt.NDArray[np.int64]] = []
        self._starts_of: list[npt.NDArray[np.int64]] = []
        order = np.lexsort((obs_cluster, self.obs_stratum))
        bounds = np.searchsorted(self.obs_stratum[order], np.arange(len(self.strata) + 1))
        for s in range(len(self.strata)):
            obs = order[bounds[s] : bounds[s + 1]]
            ccodes = obs_cluster[obs]
            starts = np.flatnonzero(np.r_[True, ccodes[1:] != ccodes[:-1]])
            self._obs_of.append(obs)
            self._starts_of.append(starts)
            self._clusters_of.append(ccodes[starts])
        self._seeds = [int(x) for x in rng.integers(0, 2**63 - 1, size=len(self.strata))]
        self._cache: dict[int, npt.NDArray[np.float32]] = {}
        self._cache_budget = 40_000_000  # float32 entries kept (160 MB at most)

    def clusters_in(self, stratum: int) -> int:
        """How many clusters stratum number ``stratum`` holds."""
        return int(self._clusters_of[stratum].size)

    def weights(self, stratum: int) -> npt.NDArray[np.float32]:
        """The (B x clusters-in-stratum) matrix of draw counts for one stratum."""
        w = self._cache.get(stratum)
        if w is not None:
            return w
        c = self.clusters_in(stratum)
        rng = np.random.default_rng(self._seeds[stratum])
        if c == 1:
            w = np.ones((self.B, 1), dtype=np.float32)
        else:
            draws = rng.integers(0, c, size=(self.B, c), dtype=np.int64)
            draws += (np.arange(self.B, dtype=np.int64) * c)[:, None]
            w = np.bincount(draws.ravel(), minlength=self.B * c).astype(np.float32)
            w = w.reshape(self.B, c)
        if w.size <= self._cache_budget:
            self._cache[stratum] = w
            self._cache_budget -= w.size
        return w

    def sums(
        self,
        columns: Mapping[str, npt.ArrayLike],
        *,
        by_stratum: Sequence[str] = (),
    ) -> BootstrapSums:
        """Weighted sums of each column for the full sample and for every replicate.

        ``columns`` maps a name to one value per observation. Names in ``by_stratum`` are also
        kept per stratum (for cell-level statistics); the others only as totals.
        """
        names = list(columns)
        if not names:
            return BootstrapSums(self, {}, {}, {}, {})
        mat = np.empty((self.n_obs, len(names)), dtype=np.float64)
        for j, name in enumerate(names):
            col = np.asarray(columns[name], dtype=np.float64)
            if col.shape != (self.n_obs,):
                raise ValueError(f"column {name!r} has shape {col.shape}, not ({self.n_obs},)")
            mat[:, j] = col
        keep = set(by_stratum)
        point_total = {n: 0.0 for n in names}
        rep_total = {n: np.zeros(self.B) for n in names}
        point_s: dict[str, dict[int, float]] = {n: {} for n in names if n in keep}
        rep_s: dict[str, dict[int, FloatArray]] = {n: {} for n in names if n in keep}
        for s in range(len(self.strata)):
            obs = self._obs_of[s]
            if obs.size == 0:
                continue
            sub = mat[obs]
            nz = np.flatnonzero(np.any(sub != 0.0, axis=0))
            if nz.size == 0:
                continue
            csum = np.add.reduceat(sub[:, nz], self._starts_of[s], axis=0)
            reps = (self.weights(s) @ csum.astype(np.float32)).astype(np.float64)
            pts = csum.sum(axis=0)
            for jj, j in enumerate(nz.tolist()):
                name = names[j]
                point_total[name] += float(pts[jj])
                rep_total[name] += reps[:, jj]
                if name in keep:
                    point_s[name][s] = float(pts[jj])
                    rep_s[name][s] = reps[:, jj]
        return BootstrapSums(self, point_total, rep_total, point_s, rep_s)


@dataclass
class BootstrapSums:
    """Full-sample and replicate sums from :meth:`ClusterBootstrap.sums`."""

    boot: ClusterBootstrap
    point_total: dict[str, float]
    rep_total: dict[str, FloatArray]
    point_stratum: dict[str, dict[int, float]]
    rep_stratum: dict[str, dict[int, FloatArray]]

    def total(self, name: str) -> tuple[float, FloatArray]:
        """(full-sample sum, replicate sums) of a column over all strata."""
        if name not in self.point_total:
            return (0.0, np.zeros(self.boot.B))
        return self.point_total[name], self.rep_total[name]

    def over(self, name: str, strata: Sequence[int]) -> tuple[float, FloatArray]:
        """(full-sample sum, replicate sums) of a ``by_stratum`` column over some strata."""
        pt = 0.0
        rp = np.zeros(self.boot.B)
        ps = self.point_stratum.get(name, {})
        rs = self.rep_stratum.get(name, {})
        for s in strata:
            if s in ps:
                pt += ps[s]
                rp = rp + rs[s]
        return pt, rp


def _labels(labels: Sequence[Hashable] | npt.ArrayLike, keep: npt.NDArray[np.bool_]
            ) -> npt.NDArray[Any]:
    """A 1-D object array of the kept labels (tuples stay whole, unlike ``np.asarray``)."""
    seq = list(labels)  # type: ignore[arg-type]
    out = np.empty(int(np.count_nonzero(keep)), dtype=object)
    for j, i in enumerate(np.flatnonzero(keep)):
        out[j] = seq[i]
    return out


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def cluster_bootstrap(
    values: npt.ArrayLike,
    clusters: Sequence[Hashable] | npt.ArrayLike,
    rng: np.random.Generator,
    stat: Callable[[FloatArray, FloatArray], float] | None = None,
    *,
    B: int = 2000,
    strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    level: float = 0.95,
) -> Interval:
    """Cluster-bootstrap percentile interval of a statistic of ``values``.

    ``stat(values, weights)`` is a *weighted* statistic (weights are each observation's draw
    count in a replicate, all ones for the estimate itself); the default is the weighted mean,
    computed for all replicates at once. A custom ``stat`` is called once per replicate.
    """
    v = np.asarray(values, dtype=float)
    boot = ClusterBootstrap(clusters, rng, B=B, strata=strata)
    label = (
        f"cluster bootstrap {level:.0%} percentile ({boot.n_clusters} clusters"
        f"{', stratified' if strata is not None else ''}, B={B})"
    )
    if stat is None:
        sums = boot.sums({"y": v, "n": np.ones_like(v)})
        y0, yr = sums.total("y")
        n0, nr = sums.total("n")
        reps = _ratio(yr, nr)
        est = y0 / n0 if n0 else math.nan
    else:
        est = float(stat(v, np.ones_like(v)))
        reps = np.empty(B)
        for b in range(B):
            w = np.zeros(boot.n_obs)
            for s in range(len(boot.strata)):
                obs = boot._obs_of[s]
                if obs.size == 0:
                    continue
                per_cluster = boot.weights(s)[b]
                counts = np.diff(np.r_[boot._starts_of[s], obs.size])
                w[obs] = np.repeat(per_cluster, counts)
            reps[b] = stat(v, w)
    lo, hi, _ = percentile_interval(reps, level)
    return Interval(float(est), lo, hi, int(v.size), label, reps)


def paired_difference(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    clusters: Sequence[Hashable] | npt.ArrayLike,
    rng: np.random.Generator,
    *,
    B: int = 2000,
    strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    level: float = 0.95,
) -> Interval:
    """Mean of ``x - y`` over paired observations (the same items), with a cluster-bootstrap
    percentile interval and a two-sided bootstrap p-value for "no difference".

    Pairs where either value is NaN (e.g. one side had an API error) are dropped.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya)
    cl = _labels(clusters, keep)
    st = None if strata is None else _labels(strata, keep)
    d = xa[keep] - ya[keep]
    res = cluster_bootstrap(d, cl, rng, B=B, strata=st, level=level)
    p = bootstrap_pvalue(res.replicates) if res.replicates is not None else math.nan
    label = "paired " + res.interval
    return Interval(res.value, res.lo, res.hi, res.n, label, res.replicates, p)


# -- logistic fits and D50 ---------------------------------------------------------------


def fit_logistic_grouped(
    x: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike
) -> tuple[float, float, bool]:
    """Maximum-likelihood logistic regression of ``k`` of ``n`` successes on ``x`` (statsmodels'
    GLM, binomial family, as :func:`reports._glm.logit_fit` computes it without importing
    statsmodels). Returns ``(intercept, slope, converged)``."""
    xa = np.asarray(x, dtype=float)
    ka = np.asarray(k, dtype=float)
    na = np.asarray(n, dtype=float)
    keep = na > 0
    xa, ka, na = xa[keep], ka[keep], na[keep]
    with np.errstate(all="ignore"):
        fit = logit_fit(ka, na, np.column_stack([np.ones_like(xa), xa]))
    params = fit.params
    converged = fit.converged and bool(np.all(np.isfinite(params)))
    return (float(params[0]), float(params[1]), converged)


def logistic_batch(
    x: npt.ArrayLike, K: npt.ArrayLike, N: npt.ArrayLike, *, iters: int = 40
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Vectorised logistic regression for many replicate data sets at once.

    ``x`` has one value per group (D); ``K`` and ``N`` are (R x D) successes and trials. Newton's
    method on centred ``x``; returns per replicate ``(intercept, slope, converged)`` on the
    original scale. It fits the same model as :func:`fit_logistic_grouped` (a test checks that
    they agree) and exists because calling statsmodels B times per agent would be too slow.
    Separated replicates do not converge; callers detect separation first.
    """
    xa = np.asarray(x, dtype=float)
    Ka = np.atleast_2d(np.asarray(K, dtype=float))
    Na = np.atleast_2d(np.asarray(N, dtype=float))
    r = Ka.shape[0]
    xbar = float((Na.sum(axis=0) * xa).sum() / max(Na.sum(), 1.0))
    xc = xa - xbar
    a = np.zeros(r)
    b = np.zeros(r)
    grad_norm = np.full(r, np.inf)
    for _ in range(iters):
        eta = a[:, None] + b[:, None] * xc[None, :]
        p = 1.0 / (1.0 + np.exp(-eta))
        resid = Ka - Na * p
        g0 = resid.sum(axis=1)
        g1 = (resid * xc).sum(axis=1)
        w = Na * p * (1.0 - p)
        h00 = w.sum(axis=1)
        h01 = (w * xc).sum(axis=1)
        h11 = (w * xc * xc).sum(axis=1)
        det = h00 * h11 - h01 * h01
        safe = det > 1e-12
        det = np.where(safe, det, 1.0)
        da = np.where(safe, (h11 * g0 - h01 * g1) / det, 0.0)
        db = np.where(safe, (h00 * g1 - h01 * g0) / det, 0.0)
        a = a + np.clip(da, -10, 10)
        b = b + np.clip(db, -10, 10)
        grad_norm = np.abs(g0) + np.abs(g1)
        if float(np.max(np.abs(da) + np.abs(db), initial=0.0)) < 1e-10:
            break
    total = np.maximum(Na.sum(axis=1), 1.0)
    converged = grad_norm / total < 1e-6
    return a - b * xbar, b, converged


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def d50_from_fit(intercept: float, slope: float, halfway: float) -> float:
    """The depth where ``sigmoid(intercept + slope·depth) == halfway`` (slope must be < 0)."""
    return (_logit(halfway) - intercept) / slope


@dataclass(frozen=True)
class D50Result:
    """A D50 estimate, or the reason there is none.

    ``status`` is one of:

    - ``"estimated"``: ``value`` is the fitted depth, inside the tested range;
    - ``"beyond"``: fitted accuracy is still above halfway at the deepest level tested;
      ``lower_bound`` is that depth (a bound, not a number);
    - ``"below"``: accuracy is below halfway already at the shallowest level; ``upper_bound``;
    - ``"bracketed"``: perfect separation (every answer right up to one depth, wrong after it):
      the logistic fit has no finite maximum, and the data place D50 between ``lower_bound``
      and ``upper_bound``;
    - ``"not_estimable"``: see ``reason``.

    ``ci`` is the bootstrap percentile interval; an end outside the tested range is None and
    ``ci_note`` says which way it goes.
    """

    status: str
    value: float | None
    lower_bound: float | None
    upper_bound: float | None
    reason: str | None
    chance: float
    ceiling: float
    halfway: float
    intercept: float | None
    slope: float | None
    depths: tuple[float, ...]
    n: int
    ci: tuple[float | None, float | None] | None = None
    ci_note: str | None = None
    interval: str | None = None
    replicates: FloatArray | None = field(default=None, repr=False, compare=False)

    def display(self) -> str:
        """A short human form: ``2.7 [2.3, 3.1]``, ``> 5 (beyond …)``, ``between 2 and 3``."""
        def fmt(v: float | None) -> str:
            return "?" if v is None else f"{v:.2f}".rstrip("0").rstrip(".")

        if self.status == "estimated" and self.value is not None:
            ci = ""
            if self.ci is not None:
                lo = fmt(self.ci[0]) if self.ci[0] is not None else f"<{fmt(self.depths[0])}"
                hi = fmt(self.ci[1]) if self.ci[1] is not None else f">{fmt(self.depths[-1])}"
                ci = f" [{lo}, {hi}]"
            return f"{self.value:.2f}{ci}"
        if self.status == "beyond":
            return f"> {fmt(self.lower_bound)} (beyond the deepest level tested)"
        if self.status == "below":
            return f"< {fmt(self.upper_bound)} (below the shallowest level tested)"
        if self.status == "bracketed":
            return f"between {fmt(self.lower_bound)} and {fmt(self.upper_bound)}"
        return f"not estimable: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": self.value,
            "ci": None if self.ci is None else list(self.ci),
            "ci_note": self.ci_note,
            "interval": self.interval,
            "lower_bound": self.lower_bound,
            "upper_bound": self.upper_bound,
            "reason": self.reason,
            "display": self.display(),
            "n": self.n,
            "depths_tested": list(self.depths),
            "chance": self.chance,
            "ceiling": self.ceiling,
            "halfway": self.halfway,
            "fit": None
            if self.intercept is None
            else {"intercept": self.intercept, "slope": self.slope, "model": "logit(acc) ~ depth"},
        }


def _separation(depths: FloatArray, k: FloatArray, n: FloatArray) -> str:
    """'none', 'all_correct', 'all_wrong', 'decreasing' or 'increasing' for grouped data."""
    has = n > 0
    d, kk, nn = depths[has], k[has], n[has]
    succ = d[kk > 0]
    fail = d[kk < nn]
    if fail.size == 0:
        return "all_correct"
    if succ.size == 0:
        return "all_wrong"
    if succ.max() <= fail.min():
        return "decreasing"
    if fail.max() <= succ.min():
        return "increasing"
    return "none"


def d50_estimate(
    depths: npt.ArrayLike,
    k: npt.ArrayLike,
    n: npt.ArrayLike,
    *,
    chance: float,
    ceiling: float = 1.0,
    replicates: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    level: float = 0.95,
    interval: str | None = None,
) -> D50Result:
    """D50 from false-belief successes ``k`` of ``n`` at each depth (grouped data).

    The point fit is statsmodels' GLM. ``replicates``, when given, is a pair of (R x D) arrays of
    bootstrap successes and trials per depth (e.g. from :class:`ClusterBootstrap`); their D50s
    (:func:`d50_replicates`) give the percentile interval named by ``interval``.
    """
    d = np.asarray(depths, dtype=float)
    ka = np.asarray(k, dtype=float)
    na = np.asarray(n, dtype=float)
    order = np.argsort(d)
    d, ka, na = d[order], ka[order], na[order]
    has = na > 0
    tested = tuple(float(x) for x in d[has])
    total = int(na[has].sum())
    halfway = chance + (ceiling - chance) / 2.0

    def result(status: str, reason: str | None, **kw: Any) -> D50Result:
        base: dict[str, Any] = {
            "value": None,
            "lower_bound": None,
            "upper_bound": None,
            "intercept": None,
            "slope": None,
        }
        base.update(kw)
        return D50Result(
            status=status,
            reason=reason,
            chance=chance,
            ceiling=ceiling,
            halfway=halfway,
            depths=tested,
            n=total,
            **base,
        )

    if not math.isfinite(chance):
        return result("not_estimable", "chance level unknown (items do not list their choices)")
    if len(tested) < 2:
        return result(
            "not_estimable",
            f"false-belief items at {len(tested)} depth(s); a fit on depth needs at least 2",
        )
    if not ceiling > chance:
        return result("not_estimable", f"ceiling {ceiling:.3g} is not above chance {chance:.3g}")
    dmin, dmax = tested[0], tested[-1]
    acc = np.where(has, ka / np.where(has, na, 1.0), np.nan)
    sep = _separation(d, ka, na)
    if sep == "all_correct":
        return result(
            "beyond",
            f"no false-belief errors at any depth up to {dmax:g}",
            lower_bound=dmax,
        )
    if sep == "all_wrong":
        return result(
            "below", "no correct false-belief answers at any depth", upper_bound=dmin
        )
    if sep == "decreasing":
        lo, hi = _bracket(d[has], acc[has], halfway)
        if lo is None:
            return result(
                "below",
                "perfect separation with accuracy below halfway from the shallowest depth",
                upper_bound=dmin,
            )
        if hi is None:
            return result(
                "beyond",
                "perfect separation with accuracy above halfway through the deepest depth",
                lower_bound=dmax,
            )
        return result(
            "bracketed",
            "perfect separation (all right up to one depth, all wrong after it): the logistic "
            "fit has no finite maximum; the data place D50 between two tested depths",
            lower_bound=lo,
            upper_bound=hi,
        )
    a, b, converged = fit_logistic_grouped(d[has], ka[has], na[has])
    if not converged or not (math.isfinite(a) and math.isfinite(b)):
        return result("not_estimable", "the logistic fit did not converge")
    overall = float(ka[has].sum() / na[has].sum())
    if sep == "increasing" or b >= 0:
        if overall > halfway and np.all(acc[has] >= halfway):
            return result(
                "beyond",
                "accuracy does not decline with depth and stays above halfway",
                lower_bound=dmax,
                intercept=a,
                slope=b,
            )
        return result(
            "not_estimable",
            f"accuracy does not decline with depth (fitted slope {b:+.3g})",
            intercept=a,
            slope=b,
        )
    value = d50_from_fit(a, b, halfway)
    reps = None
    ci: tuple[float | None, float | None] | None = None
    note = None
    if replicates is not None:
        reps = d50_replicates(
            d, np.asarray(replicates[0], float)[:, order], np.asarray(replicates[1], float)[:, order],
            chance=chance, ceiling=ceiling,
        )
        lo_r, hi_r, used = percentile_interval(reps, level)
        if used:
            lo_c: float | None = lo_r if lo_r >= dmin else None
            hi_c: float | None = hi_r if hi_r <= dmax else None
            notes = []
            if lo_c is None:
                notes.append(f"lower end below the shallowest level tested ({dmin:g})")
            if hi_c is None:
                notes.append(f"upper end beyond the deepest level tested ({dmax:g})")
            ci = (lo_c, hi_c)
            note = "; ".join(notes) or None
    if value > dmax:
        return result(
            "beyond",
            f"fitted accuracy stays above halfway through the deepest level tested ({dmax:g})",
            lower_bound=dmax,
            intercept=a,
            slope=b,
            ci=ci,
            ci_note=note,
            interval=interval,
            replicates=reps,
        )
    if value < dmin:
        return result(
            "below",
            f"fitted accuracy is below halfway already at the shallowest level ({dmin:g})",
            upper_bound=dmin,
            intercept=a,
            slope=b,
            ci=ci,
            ci_note=note,
            interval=interval,
            replicates=reps,
        )
    return result(
        "estimated",
        None,
        value=value,
        intercept=a,
        slope=b,
        ci=ci,
        ci_note=note,
        interval=interval,
        replicates=reps,
    )


def _bracket(
    d: FloatArray, acc: FloatArray, halfway: float
) -> tuple[float | None, float | None]:
    """The last depth with accuracy >= halfway before the first one below it."""
    below = np.flatnonzero(acc < halfway)
    if below.size == 0:
        return (float(d[-1]), None)
    first = int(below[0])
    if first == 0:
        return (None, float(d[0]))
    return (float(d[first - 1]), float(d[first]))


def d50_replicates(
    depths: npt.ArrayLike,
    K: npt.ArrayLike,
    N: npt.ArrayLike,
    *,
    chance: float,
    ceiling: float = 1.0,
) -> FloatArray:
    """D50 of each replicate row of grouped counts (R x D), vectorised.

    Conventions for replicates the fit cannot place: no errors, or no decline with accuracy
    above halfway, give +inf; no successes, or no decline below halfway, give -inf; perfect
    separation gives the midpoint of its bracket; a fit that does not converge gives NaN (and
    is left out of the interval). Infinite replicates make an interval end a bound.
    """
    d = np.asarray(depths, dtype=float)
    Ka = np.atleast_2d(np.asarray(K, dtype=float))
    Na = np.atleast_2d(np.asarray(N, dtype=float))
    r = Ka.shape[0]
    halfway = chance + (ceiling - chance) / 2.0
    out = np.full(r, np.nan)
    big = 1e9
    has = Na > 0
    succ = Ka > 0
    fail = Ka < Na
    dd = np.broadcast_to(d, Ka.shape)
    smax = np.where(has & succ, dd, -big).max(axis=1)
    smin = np.where(has & succ, dd, big).min(axis=1)
    fmax = np.where(has & fail, dd, -big).max(axis=1)
    fmin = np.where(has & fail, dd, big).min(axis=1)
    any_s = (has & succ).any(axis=1)
    any_f = (has & fail).any(axis=1)
    overall = Ka.sum(axis=1) / np.maximum(Na.sum(axis=1), 1.0)
    all_correct = ~any_f
    all_wrong = ~any_s & any_f
    dec = any_s & any_f & (smax <= fmin)
    inc = any_s & any_f & ~dec & (fmax <= smin)
    out[all_correct] = np.inf
    out[all_wrong] = -np.inf
    out[dec] = (smax[dec] + fmin[dec]) / 2.0
    out[inc] = np.where(overall[inc] > halfway, np.inf, -np.inf)
    rest = ~(all_correct | all_wrong | dec | inc)
    if rest.any():
        a, b, conv = logistic_batch(d, Ka[rest], Na[rest])
        val = np.full(a.shape, np.nan)
        neg = conv & (b < 0)
        val[neg] = (_logit(halfway) - a[neg]) / b[neg]
        flat = conv & (b >= 0)
        val[flat] = np.where(overall[rest][flat] > halfway, np.inf, -np.inf)
        out[rest] = val
    return out


# -- slopes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlopeResult:
    """A regression coefficient with its interval, or the reason there is none."""

    status: str
    coef: float | None
    ci: tuple[float, float] | None
    se: float | None
    p: float | None
    n: int
    n_clusters: int
    covariates: tuple[str, ...]
    interval: str
    reason: str | None = None
    notes: tuple[str, ...] = ()
    terms: tuple[tuple[str, float, float, float, float, float], ...] = ()
    """Every covariate's ``(name, coefficient, lo, hi, se, p)``, depth first."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": self.coef,
            "ci": None if self.ci is None else list(self.ci),
            "se": self.se,
            "p": self.p,
            "n": self.n,
            "n_clusters": self.n_clusters,
            "model": "logit(correct) ~ " + " + ".join(self.covariates),
            "interval": self.interval,
            "reason": self.reason,
            "notes": list(self.notes),
            "terms": {
                name: {"value": c, "ci": [lo, hi], "se": se, "p": p, "n": self.n,
                       "interval": self.interval}
                for name, c, lo, hi, se, p in self.terms
            },
        }


def degradation_slope(
    depth: npt.ArrayLike,
    correct: npt.ArrayLike,
    length: npt.ArrayLike | None = None,
    groups: Sequence[Hashable] | npt.ArrayLike | None = None,
    *,
    level: float = 0.95,
    min_n: int = 0,
) -> SlopeResult:
    """Logistic-regression coefficient of correctness on depth, controlling for story length.

    statsmodels GLM (binomial; :func:`reports._glm.logit_fit` unless the errors are clustered);
    the interval is a Wald interval with cluster-robust standard errors over ``groups`` (e.g.
    story cells) when at least two groups are given. Length is dropped, with a note, when it is
    missing or constant. Observations are aggregated to (group, depth, length) cells first,
    which leaves the estimates unchanged. With fewer than ``min_n`` observations the fitted
    coefficient and its standard error come without an interval or a test (``not_estimable``).
    """
    x = np.asarray(depth, dtype=float)
    y = np.asarray(correct, dtype=float)
    notes: list[str] = []
    ln = None if length is None else np.asarray(length, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if ln is not None:
        if np.all(~np.isfinite(ln[keep])):
            notes.append("story length unknown: fitted on depth alone")
            ln = None
        else:
            missing = keep & ~np.isfinite(ln)
            if missing.any():
                notes.append(f"{int(missing.sum())} items without a story length left out")
            keep &= np.isfinite(ln)
    x, y = x[keep], y[keep]
    if ln is not None:
        ln = ln[keep]
        if np.unique(ln).size < 2:
            notes.append("story length constant: fitted on depth alone")
            ln = None
    g = None
    if groups is not None:
        g = _labels(groups, keep)
    covariates = ("depth",) if ln is None else ("depth", "length")
    n = int(x.size)
    n_groups = 0 if g is None else len(set(g.tolist()))
    interval = (
        f"Wald {level:.0%}, cluster-robust over {n_groups} clusters"
        if g is not None and n_groups >= 2
        else f"Wald {level:.0%} (model-based)"
    )

    def fail(reason: str) -> SlopeResult:
        return SlopeResult(
            "not_estimable", None, None, None, None, n, n_groups, covariates, interval, reason,
            tuple(notes),
        )

    if n == 0:
        return fail("no scored false-belief items")
    if np.unique(x).size < 2:
        return fail("items at fewer than two depths")
    if y.min() == y.max():
        return fail("every answer " + ("right" if y.max() == 1 else "wrong") + ": no variation")
    # aggregate to (group, depth, length) cells: the score sums per cluster are unchanged
    keys: dict[tuple[Any, ...], int] = {}
    cell = np.empty(n, dtype=np.int64)
    gl = g.tolist() if g is not None else [None] * n
    ll = ln.tolist() if ln is not None else [None] * n
    for i, (gg, xx, lv) in enumerate(zip(gl, x.tolist(), ll, strict=True)):
        cell[i] = keys.setdefault((gg, xx, lv), len(keys))
    kk = np.bincount(cell, weights=y)
    nn = np.bincount(cell).astype(float)
    cx = np.empty(len(keys))
    cl = np.empty(len(keys))
    cg: list[Any] = [None] * len(keys)
    for (gg, xx, lv), j in keys.items():
        cx[j] = xx
        cl[j] = lv if lv is not None else 0.0
        cg[j] = gg
    exog = cx[:, None] if ln is None else np.column_stack([cx, cl])
    exog = np.column_stack([np.ones(len(keys)), exog])
    if g is not None and n_groups >= 2:
        codes = {v: i for i, v in enumerate(dict.fromkeys(cg))}
        fit = _cluster_robust_logit(kk, nn, exog, np.asarray([codes[v] for v in cg]))
    else:
        with np.errstate(all="ignore"):
            fit = logit_fit(kk, nn, exog)
    if fit.separated:
        return fail("perfect separation: the coefficient is infinite")
    params, bse = fit.params, fit.bse
    if not fit.converged or not np.all(np.isfinite(params)):
        return fail("the logistic fit did not converge")
    if abs(params[1]) > 20:
        return fail("quasi-separation: the depth coefficient diverges")
    if n < min_n:
        return SlopeResult(
            "not_estimable", float(params[1]), None, float(bse[1]), None, n, n_groups,
            covariates, interval, f"n = {n}: at least {min_n} are needed for an interval",
            tuple(notes),
        )
    from scipy.special import ndtr  # what scipy.stats.norm.sf calls

    zq = normal_quantile(level)
    terms = []
    for j, name in enumerate(covariates, start=1):
        c, e = float(params[j]), float(bse[j])
        pj = float(2 * ndtr(-abs(c / e))) if e > 0 else math.nan
        terms.append((name, c, c - zq * e, c + zq * e, e, pj))
    _, coef, lo, hi, se, p = terms[0]
    return SlopeResult(
        "estimated", coef, (lo, hi), se, p, n, n_groups, covariates,
        interval, None, tuple(notes), tuple(terms),
    )


def _cluster_robust_logit(
    k: npt.ArrayLike, n: npt.ArrayLike, exog: FloatArray, groups: npt.NDArray[np.int64]
) -> LogitFit:
    """The binomial GLM of :func:`reports._glm.logit_fit` with cluster-robust standard errors
    over ``groups`` (statsmodels); ``separated`` where statsmodels warns of perfect
    separation, its other results then NaN."""
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.tools.sm_exceptions import (
        ConvergenceWarning,
        PerfectSeparationError,
        PerfectSeparationWarning,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        ka, na = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
        try:
            res = GLM(np.column_stack([ka, na - ka]), exog, family=Binomial()).fit(
                maxiter=100, cov_type="cluster", cov_kwds={"groups": groups}
            )
        except (PerfectSeparationError, PerfectSeparationWarning):
            nan = np.full(exog.shape[1], np.nan)
            return LogitFit(nan, nan, False, True)
    return LogitFit(
        np.asarray(res.params, dtype=float),
        np.asarray(res.bse, dtype=float),
        bool(getattr(res, "converged", True)),
        False,
    )
