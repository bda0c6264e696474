"""Intervals for proportions, means and their differences, and the quantiles they use: Wilson
(plain, at a design-effect- or stratification-adjusted n), Newcombe's two, the normal and t
intervals of means (over clusters), the percentile interval of bootstrap replicates."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from reports._stats.arrays import FloatArray

__all__ = [
    "T975",
    "Z95",
    "Interval",
    "clustered_mean_interval",
    "clustered_proportion",
    "effective_n",
    "expanded_level",
    "mean_interval",
    "newcombe_interval",
    "newcombe_paired_interval",
    "normal_quantile",
    "percentile_interval",
    "stratified_n",
    "t_quantile",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95% interval."""


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


def percentile_interval(replicates: npt.ArrayLike, level: float = 0.95) -> tuple[float, float, int]:
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
