"""Calibration: the expected calibration error and its reliability bins."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Calibration", "ece"]


@dataclass(frozen=True)
class Calibration:
    """Expected calibration error and the reliability bins it was computed from.

    ``bins`` holds one dict per non-empty bin: ``lo``, ``hi``, ``n``, ``confidence`` (mean stated
    confidence) and ``accuracy``.
    """

    ece: float
    n: int
    bins: tuple[dict[str, float], ...]


def ece(confidences: npt.ArrayLike, correct: npt.ArrayLike, bins: int = 10) -> Calibration:
    """Expected calibration error over ``bins`` equal-width bins of [0, 1].

    ``ECE = Σ_b (n_b / N) · |accuracy_b − mean confidence_b|``. A confidence of exactly 1 falls in
    the last bin. Non-finite confidences are ignored. Confidences must be probabilities.
    """
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    keep = np.isfinite(c) & np.isfinite(y)
    c, y = c[keep], y[keep]
    if c.size and (c.min() < 0 or c.max() > 1):
        raise ValueError("confidences must lie in [0, 1]")
    n = int(c.size)
    if n == 0:
        return Calibration(math.nan, 0, ())
    idx = np.minimum((c * bins).astype(int), bins - 1)
    counts = np.bincount(idx, minlength=bins)
    conf_sum = np.bincount(idx, weights=c, minlength=bins)
    cor_sum = np.bincount(idx, weights=y, minlength=bins)
    total = float(np.abs(cor_sum - conf_sum).sum() / n)
    out = []
    for b in range(bins):
        if counts[b]:
            out.append(
                {
                    "lo": b / bins,
                    "hi": (b + 1) / bins,
                    "n": int(counts[b]),
                    "confidence": float(conf_sum[b] / counts[b]),
                    "accuracy": float(cor_sum[b] / counts[b]),
                }
            )
    return Calibration(total, n, tuple(out))
