"""One small function per kind of figure: the method each estimate gets, chosen by its n and design.

Every function takes the outcomes of the items a figure covers (and, where trials come in
clusters, one cluster code per item) and returns a frozen value that owns its JSON form
(``to_dict``). The choice of method is made here, once, so that every figure of a profile
follows the same rules:

======================================  ===========================================================
figure                                  method
======================================  ===========================================================
proportion, one trial per cluster       Wilson score interval (``wilson-95``); pooled over strata
                                        the design fixes (depth cells), Wilson at the
                                        stratification-adjusted n (``wilson-strat-95``)
proportion, clusters of several trials  Wilson at the design-effect-adjusted n, t quantile on
                                        clusters − 1 df (``wilson-deff-95``)
paired proportions, one pair per        Newcombe's square-and-add paired interval
cluster                                 (``newcombe-paired-95``); exact McNemar test
paired proportions in clusters          t interval over cluster differences (``paired-t-95``);
                                        sign-flip permutation test over clusters
paired means (log score, exploitation,  t interval over paired differences (``paired-t-95``);
applied gap of two agents)              sign-flip permutation test
======================================  ===========================================================

A figure whose (effective) n is below :data:`MIN_N` keeps its value and n but gets no interval
and no p-value: ``status`` is ``"not_estimable"`` and ``reason`` says why. It is left out of the
Holm family. The thresholds were checked by simulation (``bench/bench_stats.py``): at and above
them the intervals cover at close to their nominal rate on the shipped suites' designs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._stats import (
    clustered_mean_interval,
    clustered_proportion,
    effective_n,
    mcnemar_exact,
    newcombe_paired_interval,
    sign_flip_pvalue,
    stratified_n,
    wilson_interval,
)

__all__ = [
    "MIN_N",
    "NO_SPREAD",
    "Contrast",
    "MetricSample",
    "Proportion",
    "not_estimable_reason",
    "paired_binary",
    "paired_values",
    "proportion",
]

MIN_N = 10
NO_SPREAD = ("every paired difference is the same (the two agents answered alike): there is no "
             "spread to estimate an interval or a test from")
"""The smallest (effective) number of trials, pairs or clusters that gets an interval or a test."""

FloatArray = npt.NDArray[np.float64]


def not_estimable_reason(n: float, what: str = "items", minimum: int = MIN_N) -> str:
    """``"n = 3 items: at least 10 are needed for an interval that keeps its coverage"``."""
    shown = f"{n:.1f}" if isinstance(n, float) and not float(n).is_integer() else f"{int(n)}"
    return (f"n = {shown} {what}: at least {minimum} are needed for an interval that keeps its "
            "coverage")


def _codes(clusters: npt.ArrayLike | None, n: int) -> tuple[npt.NDArray[np.int64] | None, int]:
    """Dense cluster codes (None when every item is its own cluster) and the cluster count."""
    if clusters is None:
        return None, n
    c = np.asarray(clusters)
    if c.size == 0:
        return None, 0
    _, inv = np.unique(c, return_inverse=True)
    m = int(inv.max()) + 1
    return (None, n) if m == n else (inv.astype(np.int64), m)


@dataclass(frozen=True)
class Proportion:
    """A proportion with the interval its design allows, or the reason it has none."""

    k: float
    n: int
    lo: float | None
    hi: float | None
    interval: str | None
    n_clusters: int
    n_eff: float
    reason: str | None = None

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def estimable(self) -> bool:
        return self.reason is None and self.lo is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "k": round(self.k),
            "n": self.n,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "n_clusters": self.n_clusters,
            "status": "estimated" if self.estimable else "not_estimable",
        }
        if self.n_eff != self.n:
            out["n_effective"] = self.n_eff
        if self.reason:
            out["reason"] = self.reason
        return out


def proportion(
    y: npt.ArrayLike,
    clusters: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    *,
    min_n: int = MIN_N,
) -> Proportion:
    """The proportion of 1s in ``y``: Wilson where each trial is its own cluster (at the
    stratification-adjusted n when ``strata`` names more than one design stratum), Wilson at the
    design-effect-adjusted n where clusters hold several (see the module table)."""
    ya = np.asarray(y, dtype=float)
    n = int(ya.size)
    if n == 0:
        return Proportion(0.0, 0, None, None, None, 0, 0.0, "no scored items")
    codes, m = _codes(clusters, n)
    if codes is None:
        if n < min_n:
            return Proportion(float(ya.sum()), n, None, None, None, n, float(n),
                              not_estimable_reason(n))
        k = float(ya.sum())
        st = None if strata is None else np.asarray(strata)
        if st is not None and st.size and (st != st[0]).any():
            n_eff = stratified_n(ya, st)
            if n_eff > n:
                lo, hi = wilson_interval(k / n * n_eff, n_eff)
                return Proportion(k, n, lo, hi, "wilson-strat-95", n, n_eff)
        lo, hi = wilson_interval(k, n)
        return Proportion(k, n, lo, hi, "wilson-95", n, float(n))
    n_eff = effective_n(ya, codes, m) if m >= 2 else 1.0
    if m < 2 or n_eff < min_n:
        why = (f"{m} cluster" if m < 2 else
               not_estimable_reason(round(n_eff, 1), f"effective trials (n = {n} in {m} "
                                                     "clusters)", min_n))
        return Proportion(float(ya.sum()), n, None, None, None, m, n_eff, why)
    k, _, lo, hi, _ = clustered_proportion(ya, codes)
    return Proportion(k, n, lo, hi, "wilson-deff-95", m, n_eff)


@dataclass(frozen=True)
class Contrast:
    """A paired difference ``x − y`` between two agents (or two questions) on the same items,
    with its interval and test, or the reason it has neither."""

    names: tuple[str, str]
    x: float | None
    y: float | None
    difference: float | None
    lo: float | None
    hi: float | None
    n: int
    interval: str | None
    test: str | None
    p: float | None
    reason: str | None = None
    n_clusters: int | None = None

    @property
    def estimable(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            self.names[0]: self.x,
            self.names[1]: self.y,
            "difference": self.difference,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "n": self.n,
            "interval": self.interval,
            "test": self.test,
            "p": self.p,
            "p_holm": None,
            "status": "estimated" if self.estimable else "not_estimable",
        }
        if self.n_clusters is not None:
            out["n_clusters"] = self.n_clusters
        if self.reason:
            out["reason"] = self.reason
        return out


def paired_binary(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    names: tuple[str, str],
    rng: np.random.Generator,
    clusters: npt.ArrayLike | None = None,
    *,
    min_n: int = MIN_N,
    B: int = 2000,
) -> Contrast:
    """``mean(x) − mean(y)`` for paired 0/1 outcomes (one pair per item).

    One pair per cluster: Newcombe's paired square-and-add interval and the exact McNemar
    test. Clusters of several pairs: a t interval over the clusters' summed differences and the
    sign-flip permutation test over clusters (``rng`` draws its signs when there are too many
    to enumerate).
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    n = int(xa.size)
    if n == 0:
        return Contrast(names, None, None, None, None, None, 0, None, None, None,
                        "no items answered by both")
    mx, my = float(xa.mean()), float(ya.mean())
    diff = mx - my
    codes, m = _codes(clusters, n)
    if codes is None:
        if n < min_n:
            return Contrast(names, mx, my, diff, None, None, n, None, None, None,
                            not_estimable_reason(n, "paired items", min_n))
        a = float(np.sum((xa == 1) & (ya == 1)))
        b = int(np.sum((xa == 1) & (ya == 0)))
        c = int(np.sum((xa == 0) & (ya == 1)))
        d = float(n - a - b - c)
        lo, hi = newcombe_paired_interval(a, b, c, d)
        return Contrast(names, mx, my, diff, lo, hi, n, "newcombe-paired-95", "exact McNemar",
                        mcnemar_exact(b, c))
    if m < min_n:
        return Contrast(names, mx, my, diff, None, None, n, None, None, None,
                        not_estimable_reason(m, f"clusters ({n} paired items)", min_n), m)
    _, lo, hi, _, _ = clustered_mean_interval(xa - ya, codes)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return Contrast(names, mx, my, diff, None, None, n, None, None, None, NO_SPREAD, m)
    dc = np.bincount(codes, weights=xa - ya, minlength=m)
    p, how = sign_flip_pvalue(dc, rng, B=B)
    return Contrast(names, mx, my, diff, max(-1.0, lo), min(1.0, hi), n, "paired-t-95",
                    f"sign-flip permutation over clusters ({how})", p, None, m)


def paired_values(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    names: tuple[str, str],
    rng: np.random.Generator,
    clusters: npt.ArrayLike | None = None,
    *,
    min_n: int = MIN_N,
    B: int = 2000,
) -> Contrast:
    """``mean(x) − mean(y)`` for paired numbers: a t interval over the (cluster) differences and
    the sign-flip permutation test."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    n = int(xa.size)
    if n == 0:
        return Contrast(names, None, None, None, None, None, 0, None, None, None,
                        "no items answered by both")
    mx, my = float(xa.mean()), float(ya.mean())
    diff = mx - my
    codes, m = _codes(clusters, n)
    if m < min_n:
        what = "paired items" if codes is None else f"clusters ({n} paired items)"
        return Contrast(names, mx, my, diff, None, None, n, None, None, None,
                        not_estimable_reason(m, what, min_n), None if codes is None else m)
    d = xa - ya
    _, lo, hi, _, _ = clustered_mean_interval(d, codes)
    dc = d if codes is None else np.bincount(codes, weights=d, minlength=m)
    p, how = sign_flip_pvalue(dc, rng, B=B)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return Contrast(names, mx, my, diff, None, None, n, None, None, None, NO_SPREAD,
                        None if codes is None else m)
    return Contrast(names, mx, my, diff, lo, hi, n, "paired-t-95",
                    f"sign-flip permutation ({how})", p, None,
                    None if codes is None else m)


@dataclass(frozen=True)
class MetricSample:
    """What :func:`reports.render.compare_runs` needs of one headline figure of one run.

    Proportions carry their successes and n at the effective sample size (``k``, ``n_eff``);
    D50, ECE and the log score their bootstrap replicates; paired differences (the applied gap)
    their own interval (``ci``). ``estimable`` is False when the run's own
    figure has no interval (then no change involving it has one either).
    """

    value: float
    n: int
    estimable: bool
    k: float | None = None
    n_eff: float | None = None
    replicates: FloatArray | None = None
    ci: tuple[float, float] | None = None

    @classmethod
    def of(cls, p: Proportion) -> MetricSample:
        value = p.value if p.value is not None else math.nan
        return cls(value, p.n, p.estimable, value * p.n_eff, p.n_eff)
