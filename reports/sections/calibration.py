"""An agent's calibration (``calibration``): how well its stated confidences match its
accuracy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from reports._estimates import MetricSample, not_estimable_reason
from reports._stats import ece, percentile_interval, wilson_interval
from reports.model import Calibration
from reports.sections._design import ratio
from reports.sections._inputs import AgentInputs, Measured
from reports.sections._resamples import CALIBRATION_BINS, LEVEL

__all__ = ["ECE_MIN_N", "calibration_section"]

ECE_MIN_N = 30
"""The expected calibration error gets a bootstrap interval from this many rated answers on."""


def calibration_section(inp: AgentInputs) -> Measured:
    """``calibration``: the expected calibration error (cluster-bootstrap interval), the
    reliability bins, the slope of stated confidence on depth, the Brier score."""
    samples: dict[str, MetricSample] = {}
    return Measured({"calibration": _calibration(inp, samples)}, samples)


def _calibration(inp: AgentInputs, samples: dict[str, MetricSample]) -> Calibration:
    c, p = inp.cols, inp.prefix
    fin = np.isfinite(c.conf)
    if not fin.any():
        return Calibration(available=False, reason="no stated confidences")
    cal = ece(c.conf[fin], c.cor[fin], CALIBRATION_BINS)
    _, nr = inp.res.sum(p + "fn")
    total = np.zeros(inp.res.B)
    for j in range(CALIBRATION_BINS):
        total += np.abs(inp.res.sum(p + f"e{j}k")[1] - inp.res.sum(p + f"e{j}c")[1])
    ece_reps = ratio(total, nr)
    lo, hi, _ = percentile_interval(ece_reps, LEVEL)
    ok = cal.n >= ECE_MIN_N
    samples["ece"] = MetricSample(cal.ece, cal.n, ok, replicates=ece_reps)
    bins = []
    for b in cal.bins:
        k = round(b["accuracy"] * b["n"])
        bins.append(b | {"ci": list(wilson_interval(k, b["n"])), "interval": "wilson-95"})
    # slope of confidence on depth
    sn0, snr = inp.res.sum(p + "sn")
    slope: dict[str, Any]
    if sn0 >= 3:

        def slope_of(n: Any, x: Any, y: Any, xy: Any, xx: Any) -> Any:
            with np.errstate(invalid="ignore", divide="ignore"):
                den = xx - x * x / n
                return np.where(
                    den > 1e-12, (xy - x * y / n) / np.where(den > 1e-12, den, 1), np.nan
                )

        parts = [inp.res.sum(p + s) for s in ("sx", "sy", "sxy", "sxx")]
        s0 = float(slope_of(sn0, *[q[0] for q in parts]))
        sr = slope_of(snr, *[q[1] for q in parts])
        slo, shi, _ = percentile_interval(sr, LEVEL)
        slope = {
            "value": s0 if math.isfinite(s0) else None,
            "ci": [slo, shi] if sn0 >= ECE_MIN_N else None,
            "n": int(sn0),
            "interval": "cluster-bootstrap-95" if sn0 >= ECE_MIN_N else None,
            "meaning": "change in stated confidence (0–1) per depth level, NestToM belief "
            "items (OLS)",
        }
        if sn0 < ECE_MIN_N:
            slope["status"] = "not_estimable"
            slope["reason"] = not_estimable_reason(int(sn0), "rated items", ECE_MIN_N)
        if not math.isfinite(s0):
            slope["reason"] = "all confidences at one depth"
    else:
        slope = {
            "value": None,
            "n": int(sn0),
            "reason": "fewer than 3 NestToM belief items with a stated confidence",
        }
    yv = c.cor[fin]
    brier = float(np.mean((c.conf[fin] - yv) ** 2))
    e: dict[str, Any] = {
        "value": cal.ece,
        "ci": [lo, hi] if ok else None,
        "n": cal.n,
        "bins": CALIBRATION_BINS,
        "interval": "cluster-bootstrap-95" if ok else None,
        "status": "estimated" if ok else "not_estimable",
    }
    if not ok:
        e["reason"] = not_estimable_reason(cal.n, "rated answers", ECE_MIN_N)
    out = {
        "available": True,
        "ece": e,
        "reliability": bins,
        "confidence_depth_slope": slope,
        "brier": {"value": brier, "n": cal.n, "interval": "none"},
        "mean_confidence": float(c.conf[fin].mean()),
        "accuracy_of_rated": float(yv.mean()),
    }
    if c.conf_note:
        out["note"] = c.conf_note
    return Calibration.of(out)
