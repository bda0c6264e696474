"""Proper scoring rules for predicted answer distributions. Pure functions.

A prediction is a probability distribution ``q`` over answers (strings; answer clusters are the
caller's business) plus a top-1 guess; the target is sampled ``K`` times, giving the observed
answers ``y_1 … y_K``. All scores are means over the K samples.

**Log score** (natural log; higher is better, 0 is perfect). Answers given probability 0 would
score −∞, so ``q`` is smoothed first: over ``A`` = the predicted answers ∪ the observed ones,
``q'(a) = max(q(a), ε)`` with ``ε =`` :data:`EPSILON` ``= 0.001``, then renormalised,
``q''(a) = q'(a) / Σ_A q'``. The log score is ``mean_k ln q''(y_k)``. Because a distribution has
at most :data:`MAX_ANSWERS` answers, ``Σ_A q' ≤ 1 + (MAX_ANSWERS + d)·ε`` where ``d`` is the
number of distinct observed answers, so every attainable log score is at least
:func:`penalty_log_score` ``(d) = ln ε − ln(1 + (MAX_ANSWERS + d)·ε)``.

**Brier score** (multi-class; lower is better, in [0, 2]): ``mean_k Σ_{a∈A} (q(a) − [a = y_k])²``
with ``q`` as given (normalised to sum 1, not smoothed).

**Top-1 match** with the target's modal answer: 1 if the guess is the most frequent observed
answer; with ``m`` answers tied for most frequent, ``1/m`` if the guess is one of them (the
expected value of breaking the tie at random), else 0.

**Penalties.** An expired prediction (no reveal before the deadline) and a rejected one (the
reveal does not match its commitment, or the committed distribution is invalid) score the worst
attainable value on every rule: log score :func:`penalty_log_score`, Brier 2, top-1 match 0, and
for calibration confidence 1 with outcome 0. So nobody improves an aggregate by not revealing.

**Normalised skill** ``S = (acc − base) / (ceiling − base)``: ``acc`` is the mean top-1 match,
``base`` the better of the population-modal baseline (the modal answer of the *other* targets
asked the same query, as a guess) and the projection baseline (the predictor's own answer, as a
guess), and ``ceiling`` the target's test-retest agreement: leave-one-out, how often one sample
of the target matches the modal answer of its other samples (needs K ≥ 2). S = 0 is no better
than the base; S = 1 is as good as the target predicting itself by resampling (S may exceed 1).
Where a denominator is 0 or data are missing, the value is ``None`` with a reason.

**Calibration** (ECE): over many predictions, the confidence ``q(top1)`` against the outcome
(the share of the K samples equal to the guess), in 10 equal-width bins:
``ECE = Σ_b (n_b / N)·|mean outcome_b − mean confidence_b|``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindledger.errors import InputError

__all__ = [
    "EPSILON",
    "MAX_ANSWERS",
    "SUM_TOLERANCE",
    "Metric",
    "ScoreRecord",
    "aggregate",
    "brier_score",
    "default_top1",
    "expected_calibration_error",
    "log_score",
    "modal_answers",
    "normalise_distribution",
    "normalised_skill",
    "penalty_log_score",
    "penalty_scores",
    "retest_agreement",
    "score_prediction",
    "top1_match",
]

EPSILON = 1e-3
"""Floor on a smoothed probability before renormalising (log score)."""
MAX_ANSWERS = 1000
"""Most answers a distribution may list (bounds the worst attainable log score)."""
SUM_TOLERANCE = 1e-6
"""How far from 1 the probabilities of a distribution may sum."""
BRIER_WORST = 2.0
"""The worst multi-class Brier score."""


@dataclass(frozen=True)
class Metric:
    """A figure with its n, or ``value=None`` and the reason it is not computable."""

    value: float | None
    n: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "n": self.n}
        if self.reason:
            out["reason"] = self.reason
        return out


def normalise_distribution(dist: Any, *, where: str = "distribution") -> dict[str, float]:
    """Check a distribution and return it with every probability as a float.

    It must be a JSON object of 1 to :data:`MAX_ANSWERS` answers (strings) to probabilities
    (finite numbers ≥ 0) summing to 1 within :data:`SUM_TOLERANCE`. Raises InputError naming
    ``where`` otherwise.
    """
    if not isinstance(dist, Mapping):
        raise InputError(
            'expected a JSON object of answer to probability, e.g. {"yes": 0.7, "no": 0.3}',
            where=where,
        )
    if not dist:
        raise InputError("the distribution lists no answers", where=where)
    if len(dist) > MAX_ANSWERS:
        raise InputError(f"at most {MAX_ANSWERS} answers, got {len(dist)}", where=where)
    out: dict[str, float] = {}
    for answer, p in dist.items():
        if not isinstance(answer, str):
            raise InputError(f"answer {answer!r} is not a string", where=where)
        if isinstance(p, bool) or not isinstance(p, int | float):
            raise InputError(f"probability of {answer!r} is not a number: {p!r}", where=where)
        fp = float(p)
        if not math.isfinite(fp) or fp < 0:
            raise InputError(
                f"probability of {answer!r} must be a finite number ≥ 0, got {p!r}",
                where=where,
            )
        out[answer] = fp
    total = math.fsum(out.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InputError(f"probabilities sum to {total!r}, not 1", where=where)
    return out


def default_top1(dist: Mapping[str, float]) -> str:
    """The most probable answer; ties go to the first in code-point order."""
    best = max(dist.values())
    return min(a for a, p in dist.items() if p == best)


def _normalised(dist: Mapping[str, float]) -> dict[str, float]:
    total = math.fsum(dist.values())
    return {a: p / total for a, p in dist.items()}


def _need_samples(observed: Sequence[str]) -> None:
    if not observed:
        raise ValueError("no observed answers to score against")


def log_score(dist: Mapping[str, float], observed: Sequence[str], eps: float = EPSILON) -> float:
    """Mean natural-log score of ``dist`` on the observed answers, with the ε-floor smoothing
    described in the module docstring."""
    _need_samples(observed)
    q = _normalised(dist)
    support = set(q) | set(observed)
    floored = {a: max(q.get(a, 0.0), eps) for a in support}
    log_z = math.log(math.fsum(floored.values()))
    return math.fsum(math.log(floored[y]) - log_z for y in observed) / len(observed)


def penalty_log_score(distinct_observed: int, eps: float = EPSILON) -> float:
    """A log score no revealed prediction can fall below, given ``distinct_observed`` distinct
    observed answers (at least 1 is assumed)."""
    d = max(distinct_observed, 1)
    return math.log(eps) - math.log(1.0 + (MAX_ANSWERS + d) * eps)


def brier_score(dist: Mapping[str, float], observed: Sequence[str]) -> float:
    """Mean multi-class Brier score: ``Σ_a (q(a) − [a = y])²`` averaged over the samples."""
    _need_samples(observed)
    q = _normalised(dist)
    sum_sq = math.fsum(p * p for p in q.values())
    total = 0.0
    for y in observed:
        py = q.get(y, 0.0)
        # Σ_a (q_a − [a=y])² = Σ q_a² − 2 q_y + 1
        total += sum_sq - 2.0 * py + 1.0
    return total / len(observed)


def modal_answers(observed: Sequence[str]) -> list[str]:
    """The most frequent observed answers, in code-point order."""
    _need_samples(observed)
    counts = Counter(observed)
    best = max(counts.values())
    return sorted(a for a, n in counts.items() if n == best)


def top1_match(guess: str, observed: Sequence[str]) -> float:
    """1 if ``guess`` is the modal observed answer, ``1/m`` if it is one of ``m`` tied modes,
    else 0."""
    modes = modal_answers(observed)
    return 1.0 / len(modes) if guess in modes else 0.0


def retest_agreement(observed: Sequence[str]) -> Metric:
    """Leave-one-out agreement of the target with itself: the mean over samples of the top-1
    match of that sample against the other samples. Needs at least 2 samples."""
    k = len(observed)
    if k < 2:
        return Metric(None, k, "test-retest agreement needs at least 2 samples of the target")
    total = 0.0
    for i, y in enumerate(observed):
        total += top1_match(y, [*observed[:i], *observed[i + 1 :]])
    return Metric(total / k, k)


def normalised_skill(acc: float | None, base: float | None, ceiling: float | None) -> Metric:
    """``S = (acc − base) / (ceiling − base)``, or not computable with the reason."""
    if acc is None:
        return Metric(None, 0, "no accuracy: no scored predictions")
    if base is None:
        return Metric(
            None,
            0,
            "no baseline: neither the population-modal answer (other targets on the same "
            "queries) nor the projection baseline (the predictor's own answer) is known",
        )
    if ceiling is None:
        return Metric(None, 0, "no ceiling: the target was not sampled at least twice on any query")
    denom = ceiling - base
    if denom <= 0:
        return Metric(
            None,
            0,
            f"the ceiling ({ceiling:.4g}) is not above the baseline ({base:.4g}): the target "
            "is no more self-consistent than the baseline, so skill is undefined",
        )
    return Metric((acc - base) / denom, 0)


def expected_calibration_error(
    confidences: Sequence[float], outcomes: Sequence[float], bins: int = 10
) -> Metric:
    """ECE of confidences in [0, 1] against outcomes in [0, 1], equal-width bins."""
    if len(confidences) != len(outcomes):
        raise ValueError("confidences and outcomes differ in length")
    n = len(confidences)
    if n == 0:
        return Metric(None, 0, "no predictions to calibrate")
    conf_sum = [0.0] * bins
    out_sum = [0.0] * bins
    for c, o in zip(confidences, outcomes, strict=True):
        b = min(int(c * bins), bins - 1)
        conf_sum[b] += c
        out_sum[b] += o
    return Metric(math.fsum(abs(o - c) for c, o in zip(conf_sum, out_sum, strict=True)) / n, n)


def score_prediction(
    dist: Mapping[str, float], top1: str, observed: Sequence[str]
) -> dict[str, Any]:
    """Every per-prediction score, as stored in a ``reveal`` entry."""
    _need_samples(observed)
    q = _normalised(dist)
    return {
        "log_score": log_score(dist, observed),
        "brier": brier_score(dist, observed),
        "top1_match": top1_match(top1, observed),
        "confidence": q.get(top1, 0.0),
        "hit_rate": sum(1 for y in observed if y == top1) / len(observed),
        "n_observed": len(observed),
        "penalty": False,
    }


def penalty_scores(observed: Sequence[str]) -> dict[str, Any]:
    """The worst-case scores recorded for an expired or rejected prediction."""
    return {
        "log_score": penalty_log_score(len(set(observed))),
        "brier": BRIER_WORST,
        "top1_match": 0.0,
        "confidence": 1.0,
        "hit_rate": 0.0,
        "n_observed": len(observed),
        "penalty": True,
    }


@dataclass(frozen=True)
class ScoreRecord:
    """What :func:`aggregate` needs of one final prediction."""

    scores: Mapping[str, Any]
    """The recorded scores (or penalty scores)."""
    observed: Sequence[str] = ()
    """The target's observed answers."""
    own_answer: str | None = None
    """The predictor's own answer to the query, if it revealed one (projection baseline)."""
    population: Sequence[str] = field(default_factory=tuple)
    """Answers of the other targets to the same query (population-modal baseline)."""


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def aggregate(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    """Aggregate scores over final predictions (penalties included, as they must be)."""
    n = len(records)
    penalised = sum(1 for r in records if r.scores.get("penalty"))
    log_scores = [float(r.scores["log_score"]) for r in records]
    briers = [float(r.scores["brier"]) for r in records]
    matches = [float(r.scores["top1_match"]) for r in records]
    acc = _mean(matches)
    pop = [
        top1_match(modal_answers(r.population)[0], r.observed)
        for r in records
        if r.population and r.observed
    ]
    proj = [
        top1_match(r.own_answer, r.observed)
        for r in records
        if r.own_answer is not None and r.observed
    ]
    retest = [
        m.value for m in (retest_agreement(r.observed) for r in records) if m.value is not None
    ]
    pop_base, proj_base, ceiling = _mean(pop), _mean(proj), _mean(retest)
    bases = [b for b in (pop_base, proj_base) if b is not None]
    base = max(bases) if bases else None
    skill = normalised_skill(acc, base, ceiling)
    ece = expected_calibration_error(
        [float(r.scores["confidence"]) for r in records],
        [float(r.scores["hit_rate"]) for r in records],
    )

    def metric(xs: list[float], what: str) -> dict[str, Any]:
        m = _mean(xs)
        return Metric(m, len(xs), None if m is not None else f"no {what}").to_dict()

    return {
        "n": n,
        "penalised": penalised,
        "log_score": metric(log_scores, "final predictions"),
        "brier": metric(briers, "final predictions"),
        "top1_accuracy": metric(matches, "final predictions"),
        "ece": ece.to_dict(),
        "skill": {
            **Metric(skill.value, n, skill.reason).to_dict(),
            "base": base,
            "population_baseline": Metric(
                pop_base, len(pop), None if pop else "no other target answered these queries"
            ).to_dict(),
            "projection_baseline": Metric(
                proj_base, len(proj), None if proj else "no revealed own answers"
            ).to_dict(),
            "ceiling": Metric(
                ceiling, len(retest), None if retest else "no query sampled at least twice"
            ).to_dict(),
        },
    }
