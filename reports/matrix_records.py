"""The records of the cross-model prediction matrix's statistics (:mod:`reports.matrix`): what
a cell's statistics take (:class:`ItemRecord`, one per item) and what they give
(:class:`Estimate`, :class:`CellStats`, :class:`SelfAdvantage`, :class:`Contrast`), each with
its JSON form (``to_dict``). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ledger.scoring import ScoreRecord, penalty_scores, score_prediction
from reports._json import JsonObject

__all__ = [
    "INTERVAL",
    "METRICS",
    "NO_BOOTSTRAP_SPREAD",
    "PAIRED_INTERVAL",
    "SKILL_MIN_N",
    "UNDEFINED_SHARE",
    "CellStats",
    "Contrast",
    "Estimate",
    "FloatArray",
    "IntArray",
    "ItemRecord",
    "SelfAdvantage",
]

INTERVAL = "hierarchical-bootstrap-95"
"""The name of the interval every figure of the matrix gets."""
METRICS = ("log_score", "brier", "top1_accuracy", "skill")
"""The figures of a cell, by the keys of :func:`ledger.scoring.aggregate`."""
NO_BOOTSTRAP_SPREAD = (
    "every bootstrap replicate gives the same value (the data have no spread): there is no "
    "interval to give"
)
SKILL_MIN_N = 20
"""Fewest items for an interval of S (the other figures need :data:`~reports._estimates.MIN_N`):
S is a ratio, and on fewer items its interval covers the truth too seldom — the clairvoyant's
89% at 10 items, 92% at 15, 94% at 20 and 96% at 50 (K = 10, 400 runs each,
``bench/bench_matrix_calibration.py``)."""
UNDEFINED_SHARE = 0.025
"""Largest share of replicates in which S may be undefined for S still to get an interval."""

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ItemRecord:
    """What the statistics need of one prediction of a cell (one item)."""

    item: str
    observed: tuple[str, ...]
    """The target's sampled answers to the item (K of them)."""
    distribution: Mapping[str, float] | None = None
    """The predictor's committed distribution; None for a penalised prediction."""
    top1: str | None = None
    """The predictor's top-1 guess (None with a penalised prediction)."""
    own_answer: str | None = None
    """The predictor's own answer to the item (projection baseline)."""
    population: tuple[str, ...] = ()
    """The other targets' answers to the item (population-modal baseline)."""

    def score_record(self) -> ScoreRecord:
        """The record :func:`ledger.scoring.aggregate` takes, scored as the ledger scores it
        (once: the record is immutable)."""
        cached: ScoreRecord | None = self.__dict__.get("_score_record")
        if cached is None:
            if self.distribution is None or self.top1 is None:
                scores = penalty_scores(self.observed)
            else:
                scores = score_prediction(self.distribution, self.top1, self.observed)
            cached = ScoreRecord(scores, self.observed, self.own_answer, self.population)
            object.__setattr__(self, "_score_record", cached)
        return cached


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval, or the reason it has none."""

    value: float | None
    n: int
    lo: float | None = None
    hi: float | None = None
    interval: str | None = None
    reason: str | None = None

    @property
    def estimable(self) -> bool:
        return self.lo is not None and self.reason is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "n": self.n,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "status": "estimated" if self.estimable else "not_estimable",
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class CellStats:
    """Every figure of one (predictor, target) cell."""

    n: int
    log_score: Estimate
    brier: Estimate
    top1_accuracy: Estimate
    skill: Estimate
    base: float | None
    base_kind: str | None
    """``"population"`` (modal answer of the other targets), ``"projection"`` (the predictor's
    own answer) or ``"population = projection"``; None without a baseline."""
    ceiling: float | None
    test: str | None
    p: float | None
    denominator: Estimate | None = None
    """S's denominator, ceiling − base, with its interval (None without a bootstrap or an S)."""

    def metric(self, name: str) -> Estimate:
        est: Estimate = getattr(self, name)
        return est

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            **{m: self.metric(m).to_dict() for m in METRICS},
            "base": self.base,
            "base_kind": self.base_kind,
            "ceiling": self.ceiling,
            "test": self.test,
            "p": self.p,
            "denominator": None if self.denominator is None else self.denominator.to_dict(),
        }


class _Paired(Protocol):
    @property
    def value(self) -> float | None: ...
    @property
    def n(self) -> int: ...
    @property
    def lo(self) -> float | None: ...
    @property
    def hi(self) -> float | None: ...
    @property
    def interval(self) -> str | None: ...
    @property
    def test(self) -> str | None: ...
    @property
    def p(self) -> float | None: ...
    @property
    def reason(self) -> str | None: ...


def _paired_json(fig: _Paired, **extra: float | None) -> JsonObject:
    """The serialiser of a paired figure (self-advantage, slope, contrast): its value, then
    ``extra``, then n, interval, test and status (``reason`` only when it has one)."""
    out: JsonObject = {
        "value": fig.value,
        **extra,
        "n": fig.n,
        "ci": [fig.lo, fig.hi] if fig.lo is not None else None,
        "interval": fig.interval,
        "test": fig.test,
        "p": fig.p,
        "status": "estimated" if fig.lo is not None and fig.reason is None else "not_estimable",
    }
    if fig.reason:
        out["reason"] = fig.reason
    return out


@dataclass(frozen=True)
class SelfAdvantage:
    """``metric(T→T) − mean over P≠T of metric(P→T)`` on the items all were scored on."""

    metric: str
    value: float | None
    own: float | None
    others: float | None
    n: int
    lo: float | None
    hi: float | None
    interval: str | None
    test: str | None
    p: float | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _paired_json(self, self=self.own, others=self.others)


@dataclass(frozen=True)
class Contrast:
    """A paired figure over items (a slope or a difference) with its interval and test."""

    value: float | None
    n: int
    lo: float | None = None
    hi: float | None = None
    interval: str | None = None
    test: str | None = None
    p: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _paired_json(self)


PAIRED_INTERVAL = "item-bootstrap-95"
"""The interval of a paired figure over items: items resampled with replacement."""
