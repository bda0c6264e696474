"""The degradation slope: the logistic-regression coefficient of correctness on depth,
controlling for story length, with a (cluster-robust) Wald interval."""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._glm import LogitFit, logit_fit
from reports._stats.arrays import FloatArray, kept_labels
from reports._stats.intervals import normal_quantile

__all__ = ["SlopeResult", "degradation_slope"]


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
                name: {
                    "value": c,
                    "ci": [lo, hi],
                    "se": se,
                    "p": p,
                    "n": self.n,
                    "interval": self.interval,
                }
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
        g = kept_labels(groups, keep)
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
            "not_estimable",
            None,
            None,
            None,
            None,
            n,
            n_groups,
            covariates,
            interval,
            reason,
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
            "not_estimable",
            float(params[1]),
            None,
            float(bse[1]),
            None,
            n,
            n_groups,
            covariates,
            interval,
            f"n = {n}: at least {min_n} are needed for an interval",
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
        "estimated",
        coef,
        (lo, hi),
        se,
        p,
        n,
        n_groups,
        covariates,
        interval,
        None,
        tuple(notes),
        tuple(terms),
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
