"""What the matrix learns on one item, as typed records, and the score each is stored as.

A matrix run stores each item's outcome as trials (:mod:`harness.matrix.runs`): one per target on the
base item (:class:`TargetRecord`), one per prediction on its prediction item
(:class:`PredictionRecord`), one per second-order prediction (:class:`SecondOrderRecord`) and one
per target on each exposure item (:class:`ExposureRecord`). Each record writes its trial's score
(``to_score``) and is read back from it (:func:`read_score`), so the run that stores a score and
the summary that reads it (:mod:`reports.matrix_summary`) share one spelling of its keys.

**The stored score** (a contract: stored runs are read back with it). Every score has
``"scored_by": "matrix"`` and a ``role``:

- ``target``: ``own_answer``, ``own_error``, ``samples`` (the recorded answers), ``errors``
  (samples lost to API errors), and ``source`` (``"trials"``) only when the samples are the
  target's real trials;
- ``prediction``: ``item`` (the base item's id), ``target``, ``condition``, ``outcome`` (one of
  :data:`OUTCOMES`), ``top1``, ``own_answer``, ``prediction`` (the ledger's id), ``scores`` (the
  ledger's), ``observed``; the distribution is the trial's answer;
- ``second_order``: ``item``, ``about``, ``target``, ``outcome``, ``truth``, ``prediction``,
  ``scores``, ``ledger_scores``; the distribution is the trial's answer;
- ``exposure``: ``answer`` (the recorded answer, None for an API error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from matrix._base import FAMILY
from matrix._conditions import ZERO_SHOT

__all__ = [
    "OUTCOMES",
    "SCORED_BY",
    "ExposureRecord",
    "ItemOutcome",
    "MatrixRecord",
    "PredictionRecord",
    "SecondOrderRecord",
    "TargetRecord",
    "read_score",
]

SCORED_BY = FAMILY
"""The ``scored_by`` of every score the matrix stores."""

OUTCOMES = ("scored", "rejected", "unparsed", "unscored", "predictor_error")
"""What became of one prediction: revealed and scored; revealed but rejected by the ledger
(penalised); no parseable distribution (penalised, never committed); committed but the target
gave no answer (left to expire); the predictor's API error (no prediction)."""


def _copy(mapping: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if mapping is None else dict(mapping)


@dataclass(frozen=True)
class TargetRecord:
    """One agent's answers to one base item: its own answer (asked as a predictor, the
    projection baseline) and its ``samples`` answers as a target."""

    agent: str
    own: str | None
    samples: tuple[str, ...]
    errors: int = 0
    """Samples lost to API errors."""
    own_error: str | None = None
    source: str | None = None
    """``"trials"`` when the samples are the target's real trials (a failure item), else
    None (asked)."""

    def to_score(self) -> dict[str, Any]:
        """The score of the target's trial on the base item."""
        return {
            "scored_by": SCORED_BY,
            "role": "target",
            "own_answer": self.own,
            "own_error": self.own_error,
            "samples": list(self.samples),
            "errors": self.errors,
            **({"source": self.source} if self.source else {}),
        }

    @classmethod
    def from_score(cls, agent: str, score: Mapping[str, Any]) -> TargetRecord:
        return cls(
            agent,
            score.get("own_answer"),
            tuple(str(a) for a in score.get("samples") or ()),
            int(score.get("errors") or 0),
            score.get("own_error"),
            score.get("source"),
        )


@dataclass(frozen=True)
class PredictionRecord:
    """One predictor's prediction of one target on one base item, and what became of it."""

    predictor: str
    target: str
    outcome: str
    """One of :data:`OUTCOMES`."""
    distribution: Mapping[str, float] | None = None
    top1: str | None = None
    own_answer: str | None = None
    prediction_id: str | None = None
    """The prediction ledger's id of the committed prediction."""
    scores: Mapping[str, Any] | None = None
    """The ledger's scores (the penalty for ``rejected`` and ``unparsed``)."""
    observed: tuple[str, ...] = ()
    error: str | None = None
    condition: str = ZERO_SHOT

    def to_score(self, item_id: str) -> dict[str, Any]:
        """The score of the prediction's trial; ``item_id`` is the base item's."""
        return {
            "scored_by": SCORED_BY,
            "role": "prediction",
            "item": item_id,
            "target": self.target,
            "condition": self.condition,
            "outcome": self.outcome,
            "top1": self.top1,
            "own_answer": self.own_answer,
            "prediction": self.prediction_id,
            "scores": _copy(self.scores),
            "observed": list(self.observed),
        }

    @classmethod
    def from_score(
        cls, agent: str, score: Mapping[str, Any], distribution: Any, error: str | None
    ) -> PredictionRecord:
        return cls(
            agent,
            str(score["target"]),
            str(score["outcome"]),
            distribution=distribution,
            top1=score.get("top1"),
            own_answer=score.get("own_answer"),
            prediction_id=score.get("prediction"),
            scores=score.get("scores"),
            observed=tuple(str(a) for a in score.get("observed") or ()),
            error=error,
            condition=str(score.get("condition") or ZERO_SHOT),
        )


@dataclass(frozen=True)
class SecondOrderRecord:
    """P's second-order prediction on one base item (seed 002 §15.2 protocol step 5): the
    distribution P predicts that Q commits for T's answer, and what became of it. Its ground
    truth ``truth`` is Q's committed zero-shot distribution, known once Q's prediction is
    revealed; ``scores`` are :func:`reports.matrix.distribution_scores` (the penalty,
    :data:`reports.matrix.SECOND_ORDER_PENALTY`, for ``unparsed``)."""

    predictor: str
    about: str
    """Q, the predictor whose committed prediction P predicts (the ledger's target)."""
    target: str
    """T, the target of Q's prediction."""
    outcome: str
    """One of :data:`OUTCOMES`; ``unscored`` when Q committed no distribution to compare with
    or its prediction was never revealed."""
    distribution: Mapping[str, float] | None = None
    truth: Mapping[str, float] | None = None
    scores: Mapping[str, float] | None = None
    prediction_id: str | None = None
    ledger_scores: Mapping[str, Any] | None = None
    """The ledger's scores of P's distribution on Q's committed top-1 answer (its observation)."""
    error: str | None = None

    def to_score(self, item_id: str) -> dict[str, Any]:
        """The score of the second-order prediction's trial; ``item_id`` is the base item's."""
        return {
            "scored_by": SCORED_BY,
            "role": "second_order",
            "item": item_id,
            "about": self.about,
            "target": self.target,
            "outcome": self.outcome,
            "truth": _copy(self.truth),
            "prediction": self.prediction_id,
            "scores": _copy(self.scores),
            "ledger_scores": _copy(self.ledger_scores),
        }

    @classmethod
    def from_score(
        cls, agent: str, score: Mapping[str, Any], distribution: Any, error: str | None
    ) -> SecondOrderRecord:
        return cls(
            agent,
            str(score["about"]),
            str(score["target"]),
            str(score["outcome"]),
            distribution=distribution,
            truth=score.get("truth"),
            scores=score.get("scores"),
            prediction_id=score.get("prediction"),
            ledger_scores=score.get("ledger_scores"),
            error=error,
        )


@dataclass(frozen=True)
class ExposureRecord:
    """One target's answer to one exposure item (asked once, shown to the ``observe:m``
    predictions): the recorded answer, None when the reply was an API error."""

    agent: str
    answer: str | None

    def to_score(self) -> dict[str, Any]:
        """The score of the target's trial on the exposure item."""
        return {"scored_by": SCORED_BY, "role": "exposure", "answer": self.answer}

    @classmethod
    def from_score(cls, agent: str, score: Mapping[str, Any]) -> ExposureRecord:
        return cls(agent, score.get("answer"))


MatrixRecord = TargetRecord | PredictionRecord | SecondOrderRecord | ExposureRecord
"""Any record a matrix trial stores."""


def read_score(
    agent: str, item_id: str, score: Mapping[str, Any], answer: Any = None, error: str | None = None
) -> tuple[str, MatrixRecord] | None:
    """The record ``agent``'s trial on ``item_id`` stores, with its base item's id (the
    prediction item's trial names it; the others are on it), from the trial's ``score``,
    ``answer`` (a prediction's distribution) and ``error``; None for a trial the matrix did not
    write."""
    if score.get("scored_by") != SCORED_BY:
        return None
    role = score.get("role")
    if role == "target":
        return item_id, TargetRecord.from_score(agent, score)
    if role == "prediction":
        return str(score["item"]), PredictionRecord.from_score(agent, score, answer, error)
    if role == "second_order":
        return str(score["item"]), SecondOrderRecord.from_score(agent, score, answer, error)
    if role == "exposure":
        return item_id, ExposureRecord.from_score(agent, score)
    return None


@dataclass(frozen=True)
class ItemOutcome:
    """Everything the matrix learned on one base item: what each target answered and what
    became of every prediction about it, by (predictor, target, condition), and of every
    second-order prediction, by (P, Q, T)."""

    item_id: str
    targets: Mapping[str, TargetRecord]
    predictions: Mapping[tuple[str, str, str], PredictionRecord]
    second_order: Mapping[tuple[str, str, str], SecondOrderRecord] = field(default_factory=dict)
