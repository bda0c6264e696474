"""D50, the depth at which fitted false-belief accuracy falls halfway between the ceiling and
chance (see :mod:`reports._stats`), from grouped logistic fits; and the D50 of every bootstrap
replicate at once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mindledger.words import counted
from reports._glm import logit_fit
from reports._json import JsonObject
from reports._stats.arrays import FloatArray
from reports._stats.intervals import percentile_interval

__all__ = [
    "D50Result",
    "d50_estimate",
    "d50_from_fit",
    "d50_replicates",
    "fit_logistic_grouped",
    "logistic_batch",
]


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

    def to_dict(self) -> JsonObject:
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
            f"false-belief items at {counted(len(tested), 'depth')}; a fit on depth needs at least 2",
        )
    if not ceiling > chance:
        return result("not_estimable", f"ceiling {ceiling:.3g} is not above chance {chance:.3g}")
    dmin, dmax = tested[0], tested[-1]
    acc = np.where(has, ka / np.where(has, na, 1.0), np.nan)
    sep = _separation(d, ka, na)
    separated = _separated(sep, d[has], acc[has], halfway)
    if separated is not None:
        status, reason, bounds = separated
        return result(status, reason, **bounds)
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
            f"accuracy does not decline with depth: fitted slope {b:+.3g}",
            intercept=a,
            slope=b,
        )
    value = d50_from_fit(a, b, halfway)
    reps = None
    ci: tuple[float | None, float | None] | None = None
    note = None
    if replicates is not None:
        reps = d50_replicates(
            d,
            np.asarray(replicates[0], float)[:, order],
            np.asarray(replicates[1], float)[:, order],
            chance=chance,
            ceiling=ceiling,
        )
        ci, note = _replicate_interval(reps, level, dmin, dmax)
    fitted = {
        "intercept": a,
        "slope": b,
        "ci": ci,
        "ci_note": note,
        "interval": interval,
        "replicates": reps,
    }
    if value > dmax:
        return result(
            "beyond",
            f"fitted accuracy stays above halfway through the deepest level tested ({dmax:g})",
            lower_bound=dmax,
            **fitted,
        )
    if value < dmin:
        return result(
            "below",
            f"fitted accuracy is below halfway already at the shallowest level ({dmin:g})",
            upper_bound=dmin,
            **fitted,
        )
    return result("estimated", None, value=value, **fitted)


def _separated(
    sep: str, d: FloatArray, acc: FloatArray, halfway: float
) -> tuple[str, str, dict[str, float]] | None:
    """What data that :func:`_separation` finds separated say, as the status, the reason and the
    bound or bounds of a :class:`D50Result` (the logistic fit has no finite maximum there);
    None for data a fit can take (``"none"``, ``"increasing"``). ``d`` and ``acc``: the tested
    depths, ascending, and their accuracies."""
    dmin, dmax = float(d[0]), float(d[-1])
    if sep == "all_correct":
        return (
            "beyond",
            f"no false-belief errors at any depth up to {dmax:g}",
            {"lower_bound": dmax},
        )
    if sep == "all_wrong":
        return ("below", "no correct false-belief answers at any depth", {"upper_bound": dmin})
    if sep != "decreasing":
        return None
    lo, hi = _bracket(d, acc, halfway)
    if lo is None:
        return (
            "below",
            "perfect separation with accuracy below halfway from the shallowest depth",
            {"upper_bound": dmin},
        )
    if hi is None:
        return (
            "beyond",
            "perfect separation with accuracy above halfway through the deepest depth",
            {"lower_bound": dmax},
        )
    return (
        "bracketed",
        "perfect separation (all right up to one depth, all wrong after it): the logistic "
        "fit has no finite maximum; the data place D50 between two tested depths",
        {"lower_bound": lo, "upper_bound": hi},
    )


def _replicate_interval(
    reps: FloatArray, level: float, dmin: float, dmax: float
) -> tuple[tuple[float | None, float | None] | None, str | None]:
    """The percentile interval of the replicate D50s ``reps`` and its note: an end outside the
    tested depths ``dmin`` … ``dmax`` is None, and the note says which way it goes. (None,
    None) when no replicate is usable."""
    lo_r, hi_r, used = percentile_interval(reps, level)
    if not used:
        return None, None
    lo_c: float | None = lo_r if lo_r >= dmin else None
    hi_c: float | None = hi_r if hi_r <= dmax else None
    notes = []
    if lo_c is None:
        notes.append(f"lower end below the shallowest level tested ({dmin:g})")
    if hi_c is None:
        notes.append(f"upper end beyond the deepest level tested ({dmax:g})")
    return (lo_c, hi_c), "; ".join(notes) or None


def _bracket(d: FloatArray, acc: FloatArray, halfway: float) -> tuple[float | None, float | None]:
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
