"""Small figure builders shared by sections."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from reports._estimates import MIN_N, not_estimable_reason
from reports._stats import clustered_mean_interval
from reports.sections._design import BoolArray, FloatArray

__all__ = ["Mean", "mean_figure"]


@dataclass(frozen=True)
class Mean:
    """A mean of numbers over independent units with its t interval (``ci`` None, ``status``
    not_estimable and the ``reason`` below MIN_N or without spread; no status and reason "no
    values" when there are none)."""

    value: float | None
    n: int
    ci: tuple[float, float] | None = None
    interval: str | None = None
    status: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The figure's JSON form."""
        if self.n == 0:
            return {"value": None, "n": 0, "reason": self.reason}
        if self.status == "not_estimable":
            return {
                "value": self.value,
                "n": self.n,
                "ci": None,
                "interval": None,
                "status": self.status,
                "reason": self.reason,
            }
        return {
            "value": self.value,
            "n": self.n,
            "ci": list(self.ci or ()),
            "interval": self.interval,
            "status": self.status,
        }


def mean_figure(values: FloatArray, mask: BoolArray | None = None) -> Mean:
    """A mean of numbers over independent units: t interval, not estimable below MIN_N."""
    v = values if mask is None else values[mask]
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return Mean(None, 0, reason="no values")
    mean, lo, hi, _, _ = clustered_mean_interval(v)
    if n < MIN_N or not (math.isfinite(lo) and math.isfinite(hi)):
        return Mean(
            mean,
            n,
            status="not_estimable",
            reason=not_estimable_reason(n) if n < MIN_N else "no spread",
        )
    return Mean(mean, n, ci=(lo, hi), interval="t-95", status="estimated")
