"""Array types and helpers shared by the statistics modules."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["FloatArray", "kept_labels"]

FloatArray = npt.NDArray[np.float64]


def kept_labels(
    labels: Sequence[Hashable] | npt.ArrayLike, keep: npt.NDArray[np.bool_]
) -> npt.NDArray[Any]:
    """A 1-D object array of the kept labels (tuples stay whole, unlike ``np.asarray``)."""
    seq = list(labels)  # type: ignore[arg-type]
    out = np.empty(int(np.count_nonzero(keep)), dtype=object)
    for j, i in enumerate(np.flatnonzero(keep)):
        out[j] = seq[i]
    return out
