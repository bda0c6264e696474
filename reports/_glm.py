"""Logistic regression on grouped binomial data, computed as statsmodels' GLM computes it.

The D50 point fit and the degradation slope are maximum-likelihood logistic regressions that the
profile has always taken from ``statsmodels.GLM(endog, exog, family=Binomial()).fit()``.
Importing statsmodels (with pandas and scipy.stats behind it) takes a second, longer than the
rest of a quick run's report, so :func:`logit_fit` repeats that fit here, step for step and
operation for operation, with NumPy alone: the same starting values, the same iteratively
reweighted least squares (``numpy.linalg.lstsq`` per step, stopping when the deviance moves by at
most 1e-8), the same final weighted least-squares solve through statsmodels' ``pinv_extended``,
and the same model-based standard errors. Its results are the same floating-point numbers, not
just close ones: ``tests/reports/test_glm.py`` checks them bit for bit against statsmodels.

Only the model-based covariance is here; a cluster-robust interval still calls statsmodels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["LogitFit", "logit_fit"]

FloatArray = npt.NDArray[np.float64]

_EPS = float(np.finfo(float).eps)
"""statsmodels clips probabilities to [eps, 1 − eps] before the logit and the variance."""

_TOL = 1e-8
"""GLM.fit's default ``tol``: the iterations stop when the deviance changes by at most this."""

_MAXITER = 100
"""The fits ask statsmodels for at most 100 iterations."""


@dataclass(frozen=True)
class LogitFit:
    """A fitted ``logit(k / n) ~ exog``: what the callers read off statsmodels' results."""

    params: FloatArray
    """Coefficients, one per column of ``exog``."""
    bse: FloatArray
    """Model-based standard errors (the binomial's scale is 1)."""
    converged: bool
    """The deviance settled within the iteration limit."""
    separated: bool
    """At some iteration every fitted proportion matched the observed one to 1e-8: where
    statsmodels warns of perfect separation (PerfectSeparationWarning)."""


def logit_fit(k: npt.ArrayLike, n: npt.ArrayLike, exog: npt.ArrayLike) -> LogitFit:
    """``GLM(column_stack([k, n − k]), exog, family=Binomial()).fit(maxiter=100)``, without
    statsmodels: ``k`` successes of ``n`` trials per row of ``exog`` (which holds the constant
    column, if any). Raises ValueError where statsmodels does (a NaN first deviance, non-finite
    working weights or responses)."""
    ka = np.asarray(k, dtype=float)
    x = np.asarray(exog, dtype=float)
    trials = np.column_stack([ka, np.asarray(n, dtype=float) - ka]).sum(1)
    y = ka * 1.0 / trials
    mu = (y + 0.5) / 2
    lin_pred = _logit(mu)
    deviance = [_deviance(y, mu, trials)]
    if np.isnan(deviance[0]):
        raise ValueError("the first guess on the deviance is NaN")
    converged = separated = False
    for _ in range(_MAXITER):
        weights = trials * _irls_weights(mu)
        working = lin_pred + _logit_deriv(mu) * (y - mu) - 0.0
        w_half = np.sqrt(weights)
        if not (np.all(np.isfinite(w_half)) and np.all(np.isfinite(working))):
            raise ValueError("the working weights or responses are not finite")
        step, _, _, _ = np.linalg.lstsq(w_half[:, None] * x, w_half * working, rcond=-1)
        lin_pred = np.dot(x, step)
        lin_pred += 0.0
        mu = 1.0 / (1.0 + np.exp(-lin_pred))
        deviance.append(_deviance(y, mu, trials))
        if y.squeeze().ndim == 1 and np.allclose(mu - y, 0):
            separated = True
        converged = bool(np.allclose(deviance[-2], deviance[-1], atol=_TOL, rtol=0.0))
        if converged:
            break
    # the results come from one more weighted least-squares solve, by pseudo-inverse, on the
    # last iteration's working response and weights
    root = np.sqrt(weights)
    pinv = _pinv_extended(root[:, None] * x)
    params = np.dot(pinv, working * root)
    cov = np.dot(pinv, np.transpose(pinv)) * 1.0
    with np.errstate(invalid="ignore"):
        bse = np.sqrt(np.diag(cov))
    return LogitFit(params, bse, converged, separated)


def _clip(p: FloatArray) -> FloatArray:
    return np.clip(p, _EPS, 1.0 - _EPS)


def _logit(p: FloatArray) -> FloatArray:
    p = _clip(p)
    out: FloatArray = np.log(p / (1.0 - p))
    return out


def _logit_deriv(p: FloatArray) -> FloatArray:
    p = _clip(p)
    out: FloatArray = 1.0 / (p * (1 - p))
    return out


def _irls_weights(mu: FloatArray) -> FloatArray:
    p = np.clip(mu / 1, _EPS, 1 - _EPS)
    out: FloatArray = 1.0 / (_logit_deriv(mu) ** 2 * (p * (1 - p) * 1))
    return out


def _deviance(y: FloatArray, mu: FloatArray, trials: FloatArray) -> float:
    y_mu = np.clip(y / (mu + 1e-20), _EPS, np.inf)
    rest_mu = np.clip((1.0 - y) / (1.0 - mu + 1e-20), _EPS, np.inf)
    resid = 2 * trials * (y * np.log(y_mu) + (1 - y) * np.log(rest_mu))
    return float(np.sum(resid * 1.0 * 1.0 / 1.0))


def _pinv_extended(x: FloatArray, rcond: float = 1e-15) -> FloatArray:
    u, s, vt = np.linalg.svd(x, False)
    cutoff = rcond * np.maximum.reduce(s)
    for i in range(min(vt.shape[1], u.shape[0])):
        s[i] = 1.0 / s[i] if s[i] > cutoff else 0.0
    out: FloatArray = np.dot(np.transpose(vt), np.multiply(s[:, np.newaxis], np.transpose(u)))
    return out
