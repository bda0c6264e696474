"""p-values: Holm's adjustment, the percentile bootstrap and Monte Carlo permutation p-values,
the exact McNemar and Fisher tests, and the sign-flip permutation test over clusters."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "SIGN_FLIP_EXACT_MAX",
    "bootstrap_pvalue",
    "fisher_exact",
    "holm",
    "mcnemar_exact",
    "permutation_pvalue",
    "sign_flip_pvalue",
]


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
