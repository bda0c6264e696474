"""Small figure builders shared by sections."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from reports._estimates import MIN_N, not_estimable_reason
from reports._stats import clustered_mean_interval
from reports.sections._design import BoolArray, FloatArray

__all__ = ["mean_figure"]


def mean_figure(values: FloatArray, mask: BoolArray | None = None) -> dict[str, Any]:
    """A mean of numbers over independent units: t interval, not estimable below MIN_N."""
    v = values if mask is None else values[mask]
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return {"value": None, "n": 0, "reason": "no values"}
    mean, lo, hi, _, _ = clustered_mean_interval(v)
    if n < MIN_N or not (math.isfinite(lo) and math.isfinite(hi)):
        return {
            "value": mean,
            "n": n,
            "ci": None,
            "interval": None,
            "status": "not_estimable",
            "reason": not_estimable_reason(n) if n < MIN_N else "no spread",
        }
    return {"value": mean, "n": n, "ci": [lo, hi], "interval": "t-95", "status": "estimated"}
