"""The reference self-forecasters (issue 29, item 5): forecasters whose quality is known, to
check that the scoring of self-forecasts diagnoses each as what it is.

- ``self-forecast:oracle`` knows the run's figure in expectation: its quantiles are those of a
  normal around the figure's expected value with the figure's sampling spread (for a synthetic
  agent, :func:`reports.synthetic.false_belief_spread`). Its skill against the naive forecast
  is well above 0 when the agent drifts, and its intervals cover at their nominal rates.
- ``self-forecast:naive`` states the naive forecast itself (its previous value with that value's
  interval): skill 0 by construction.
- ``self-forecast:overconfident`` states narrow intervals around a wrong value (its previous
  value moved by ``offset``): its 90% intervals cover far less than 90% of outcomes.

Pure: the caller supplies the expected value and spread, or the previous value.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

from mindledger.forecasts import Quantiles, naive_like

__all__ = ["KINDS", "LEVELS", "naive", "oracle", "overconfident"]

KINDS = ("self-forecast:oracle", "self-forecast:naive", "self-forecast:overconfident")
"""The reference forecasters, as they are named."""

LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)
"""The quantile levels they state: the median and the 50% and 90% central intervals."""


def _normal(mu: float, sd: float, levels: Sequence[float]) -> Quantiles:
    dist = NormalDist(mu, sd) if sd > 0 else None
    return Quantiles(tuple(levels), tuple(mu if dist is None else dist.inv_cdf(t) for t in levels))


def oracle(expected: float, sd: float, levels: Sequence[float] = LEVELS) -> Quantiles:
    """The forecast of one who knows the figure's expected value and sampling spread."""
    return _normal(expected, sd, levels)


def naive(
    previous: float,
    ci: Sequence[float] | None,
    level: float = 0.95,
    levels: Sequence[float] = LEVELS,
) -> Quantiles:
    """The naive forecast: the previous value with its ``level`` interval ``ci``."""
    shape = Quantiles(tuple(levels), tuple(0.0 for _ in levels))
    forecast = naive_like(shape, previous, ci, level)
    assert isinstance(forecast, Quantiles)
    return forecast


def overconfident(
    previous: float,
    *,
    offset: float = 0.15,
    sd: float = 0.005,
    levels: Sequence[float] = LEVELS,
) -> Quantiles:
    """Narrow quantiles (``sd``) around a wrong value: the previous value plus ``offset``."""
    return _normal(previous + offset, sd, levels)
