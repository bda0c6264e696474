"""Scoring A/B/C/K answers (:mod:`games._strategic`): one answer against its item's exact truth
(:func:`score_abc_answer`), the separation summary of a run (:func:`summarize_abc`), and a C
prediction against the run's own LLM population (:func:`population_prediction_scores`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from games._strategic import POPULATION_QUESTIONS
from mindledger.items import Item, Score

__all__ = [
    "B_TOLERANCE",
    "LOG_FLOOR",
    "population_prediction_scores",
    "score_abc_answer",
    "summarize_abc",
]

B_TOLERANCE = 0.05
"""Largest total-variation distance at which a stated mixed equilibrium counts as correct."""
LOG_FLOOR = 1e-9
"""Probability floor in the log score (a zero on a realised choice scores ``ln 1e-9``)."""


# -- one answer ---------------------------------------------------------------------------


def _parse_int(answer: Any) -> int | None:
    if isinstance(answer, Mapping):
        answer = answer.get("answer", answer.get("action"))
    if isinstance(answer, bool) or answer is None:
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, float) and math.isfinite(answer) and answer.is_integer():
        return int(answer)
    if isinstance(answer, str):
        try:
            return int(answer.strip())
        except ValueError:
            return None
    return None


def _read_distribution(
    answer: Any, choices: Sequence[str], details: dict[str, Any], codes: list[str]
) -> tuple[list[float], list[str]] | None:
    """Parse a distribution ``answer`` over ``choices`` into ``details`` (the parse note, the
    prediction and its single mode, if any): the probabilities and the modal labels, or None
    with ``no_action``/``invalid_action`` added to ``codes``."""
    probs, note = _parse_distribution(answer, choices)
    details["parse"] = note
    if probs is None:
        codes.append("no_action" if answer is None else "invalid_action")
        return None
    details["prediction"] = probs
    top = max(probs)
    modes = [lab for lab, p in zip(choices, probs, strict=True) if p == top]
    details["predicted_mode"] = modes[0] if len(modes) == 1 else None
    return probs, modes


def _parse_distribution(answer: Any, labels: Sequence[str]) -> tuple[list[float] | None, str]:
    if isinstance(answer, Mapping) and "distribution" in answer:
        answer = answer["distribution"]
    probs: list[float]
    if isinstance(answer, Mapping):
        index = {lab: i for i, lab in enumerate(labels)}
        probs = [0.0] * len(labels)
        for key, w in answer.items():
            if str(key) not in index:
                return None, f"unknown choice {key!r}"
            if not isinstance(w, int | float) or isinstance(w, bool):
                return None, f"probability for {key!r} is not a number"
            probs[index[str(key)]] += float(w)
    elif isinstance(answer, Sequence) and not isinstance(answer, str):
        if len(answer) != len(labels):
            return None, "wrong number of probabilities"
        if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in answer):
            return None, "probabilities must be numbers"
        probs = [float(w) for w in answer]
    else:
        return None, "no distribution"
    if any(not math.isfinite(w) or w < 0 for w in probs):
        return None, "probabilities must be finite and non-negative"
    total = sum(probs)
    if total <= 0:
        return None, "probabilities sum to zero"
    note = "renormalised" if abs(total - 1) > 0.01 else "ok"
    return [w / total for w in probs], note


def _distribution_scores(probs: Sequence[float], truth: Mapping[str, Any]) -> dict[str, Any]:
    labels: list[str] = truth["labels"]
    counts: Mapping[str, int] = truth["realised_counts"]
    n = sum(counts.values())
    index = {lab: i for i, lab in enumerate(labels)}
    log_score = 0.0
    brier = 0.0
    zero_hits = 0
    for lab, c in counts.items():
        if not c:
            continue
        p = probs[index[lab]]
        zero_hits += c if p == 0 else 0
        log_score += c * math.log(max(p, LOG_FLOOR))
        brier += c * (sum(q * q for q in probs) - 2 * p + 1)
    uniform = 1.0 / len(labels)
    return {
        "log_score": log_score / n,
        "brier": brier / n,
        "uniform_log_score": math.log(uniform),
        "uniform_brier": 1 - uniform,
        "zero_probability_hits": zero_hits,
        "n_realised": n,
    }


def score_abc_answer(item: Item, answer: Any) -> Score:
    """Score an answer to an A/B/C/K item (pure).

    A and B (integer): correct when the answer is one of the exact best responses /
    equilibrium choices. B (distribution, 11–20): correct when its total-variation distance to
    an exact symmetric equilibrium is at most :data:`B_TOLERANCE`. C: correct when the
    prediction has a unique most likely choice and it is a modal choice of the realised
    population; details carry the log score and Brier score against the realised choices (and
    the uniform prediction's, for reference). K: correct when the stated level is the bot's.

    The LLM-population questions (:func:`~games._strategic.make_population_item`) cannot be judged one answer at
    a time: their ``correct`` is None and ``details["status"]`` says why — ``"population_play"``
    for a play (``details["label"]`` is the answer range it falls in, None when the answer is
    not a valid number), ``"pending_population"`` for a C-llm prediction (``details
    ["prediction"]`` is scored at report time by :func:`population_prediction_scores`); their
    ``value`` is 0 and means nothing.
    """
    q = item.meta["question"]
    if q in POPULATION_QUESTIONS:
        return _score_population_answer(item, answer)
    truth = item.truth
    spec = item.answer
    details: dict[str, Any] = {
        "question": q,
        "scenario": item.meta.get("scenario"),
        "abc_differ": truth.get("abc_differ"),
    }
    correct = False
    codes: list[str] = []
    if spec["kind"] == "integer":
        value = _parse_int(answer)
        details["answer"] = value
        if value is None:
            codes.append("no_action" if answer is None else "invalid_action")
        else:
            correct = value in truth["target_action"]
            levels = truth["own_level_actions"]
            details["matches_level"] = [k + 1 for k, a in enumerate(levels) if a == value]
            details["is_equilibrium"] = value in truth["equilibria"]
            details["is_best_response_to_mix"] = value in truth["a_best_responses"]
            details["distance"] = min(abs(value - t) for t in truth["target_action"])
            if not correct:
                if q == "A" and details["is_equilibrium"]:
                    codes.append("answered_equilibrium")
                elif q == "B" and details["is_best_response_to_mix"]:
                    codes.append("answered_best_response")
                codes.append("wrong_value")
    elif spec["kind"] == "distribution":
        read = _read_distribution(answer, spec["choices"], details, codes)
        if read is not None:
            probs, modes = read
            if q == "B":
                tvs = [
                    0.5 * sum(abs(a - b) for a, b in zip(probs, e, strict=True))
                    for e in truth["mixed_equilibria"]
                ]
                details["tv_distance"] = min(tvs) if tvs else None
                correct = bool(tvs) and min(tvs) <= B_TOLERANCE
            else:
                details.update(_distribution_scores(probs, truth))
                correct = len(modes) == 1 and modes[0] in truth["target_action"]
            if not correct:
                codes.append("wrong_distribution")
    else:
        chosen = answer.get("answer") if isinstance(answer, Mapping) else answer
        label = None if chosen is None else str(chosen).strip()
        details["answer"] = label
        if not label:
            codes.append("no_action")
        else:
            correct = label == truth["target_action"]
            if not correct:
                codes.append("wrong_level")
    return Score(
        correct=correct,
        value=1.0 if correct else 0.0,
        error_codes=tuple(codes),
        primary_error=codes[0] if codes else None,
        details=details,
    )


def _score_population_answer(item: Item, answer: Any) -> Score:
    q = item.meta["question"]
    truth = item.truth
    details: dict[str, Any] = {
        "question": q,
        "scenario": item.meta.get("scenario"),
        "population": "llm",
    }
    codes: list[str] = []
    if q == "play":
        details["status"] = "population_play"
        details["sample"] = item.meta.get("sample")
        value = _parse_int(answer)
        lo, hi = item.answer["min"], item.answer["max"]
        if value is not None and not lo <= value <= hi:
            value = None
            codes.append("out_of_range")
        details["answer"] = value
        details["label"] = None
        if value is None:
            if not codes:
                codes.append("no_action" if answer is None else "invalid_action")
        else:
            ranges = truth["label_ranges"]
            hit = next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)
            details["label"] = truth["labels"][hit]
            details["matches_level"] = [
                k + 1 for k, a in enumerate(truth["own_level_actions"]) if a == value
            ]
            details["is_equilibrium"] = value in truth["equilibria"]
    else:
        details["status"] = "pending_population"
        _read_distribution(answer, item.answer["choices"], details, codes)
    return Score(
        correct=None,
        value=0.0,
        error_codes=tuple(codes),
        primary_error=codes[0] if codes else None,
        details=details,
    )


def summarize_abc(pairs: Iterable[tuple[Item, Score]]) -> dict[str, Any]:
    """Per-question accuracy and the separation figure.

    ``separation`` is the fraction of scenarios whose A, B and C truths differ
    (``truth["abc_differ"]``) in which the agent answered all three correctly; since the
    truths differ, correct answers are necessarily distinct. Also reports K accuracy and the
    mean log and Brier scores of C. LLM-population questions are left out (they are scored
    against a whole run's answers, by the profile).
    """
    by_scenario: dict[str, dict[str, bool]] = {}
    differ: dict[str, bool] = {}
    per_q: dict[str, list[bool]] = {}
    logs: list[float] = []
    briers: list[float] = []
    for item, score in pairs:
        q = str(item.meta["question"])
        if q in POPULATION_QUESTIONS or score.correct is None:
            continue  # scored against the run's population at report time
        sid = str(item.meta["scenario"])
        by_scenario.setdefault(sid, {})[q] = score.correct
        differ[sid] = bool(item.truth.get("abc_differ"))
        per_q.setdefault(q, []).append(score.correct)
        if q == "C" and "log_score" in score.details:
            logs.append(float(score.details["log_score"]))
            briers.append(float(score.details["brier"]))
    eligible = [
        sid for sid, qs in by_scenario.items() if differ[sid] and all(x in qs for x in "ABC")
    ]
    separated = [sid for sid in eligible if all(by_scenario[sid][x] for x in "ABC")]
    return {
        "scenarios": len(by_scenario),
        "separation": {
            "n": len(eligible),
            "correct": len(separated),
            "rate": (len(separated) / len(eligible)) if eligible else None,
        },
        "accuracy": {q: {"n": len(v), "rate": sum(v) / len(v)} for q, v in sorted(per_q.items())},
        "c_log_score": {"n": len(logs), "mean": (sum(logs) / len(logs)) if logs else None},
        "c_brier": {"n": len(briers), "mean": (sum(briers) / len(briers)) if briers else None},
    }


def population_prediction_scores(
    prediction: Sequence[float], labels: Sequence[str], counts: Mapping[str, int]
) -> dict[str, Any]:
    """A C prediction scored against a population's realised choices (pure): the mean log
    score (the probability floored at :data:`LOG_FLOOR`, as for a scripted population), the
    mean Brier score, the uniform prediction's two, and ``top1`` — whether the prediction has a
    unique most likely choice and it is a modal choice of the population (the scripted C's
    ``correct``). ``counts`` maps labels to how many plays fell in them (at least one)."""
    if len(prediction) != len(labels):
        raise ValueError("one probability per label")
    out = _distribution_scores(prediction, {"labels": list(labels), "realised_counts": counts})
    top = max(counts.values())
    modes = {lab for lab, c in counts.items() if c == top}
    best = max(prediction)
    predicted = [lab for lab, p in zip(labels, prediction, strict=True) if p == best]
    out["top1"] = len(predicted) == 1 and predicted[0] in modes
    out["population_modes"] = sorted(modes, key=list(labels).index)
    return out
