"""Scoring rules: hand-computed values, properscoring on random cases, and the penalty bound."""

from __future__ import annotations

import math

import numpy as np
import properscoring
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.scoring import (
    EPSILON,
    MAX_ANSWERS,
    ScoreRecord,
    aggregate,
    brier_score,
    default_top1,
    expected_calibration_error,
    log_score,
    modal_answers,
    normalise_distribution,
    normalised_skill,
    penalty_log_score,
    penalty_scores,
    retest_agreement,
    score_prediction,
    top1_match,
)
from mindledger.errors import InputError


def test_log_score_by_hand() -> None:
    # no smoothing needed: mean of ln 0.6, ln 0.3, ln 0.6
    q = {"a": 0.6, "b": 0.3, "c": 0.1}
    assert log_score(q, ["a", "b", "a"]) == pytest.approx((2 * math.log(0.6) + math.log(0.3)) / 3)
    # an answer given probability 0: floor at ε over A = {a, b, z}, then renormalise
    q2 = {"a": 0.75, "b": 0.25}
    z = 0.75 + 0.25 + EPSILON
    assert log_score(q2, ["z"]) == pytest.approx(math.log(EPSILON / z))
    assert log_score(q2, ["a", "z"]) == pytest.approx(
        (math.log(0.75 / z) + math.log(EPSILON / z)) / 2
    )
    # a listed answer with probability 0 is floored too: A = {a, b}, Z = 1 + ε
    assert log_score({"a": 1.0, "b": 0.0}, ["b"]) == pytest.approx(
        math.log(EPSILON / (1 + EPSILON))
    )


def test_brier_by_hand() -> None:
    q = {"a": 0.6, "b": 0.3, "c": 0.1}
    # y = a: (0.4)² + 0.3² + 0.1² = 0.26 ; y = b: 0.36 + 0.49 + 0.01 = 0.86
    assert brier_score(q, ["a"]) == pytest.approx(0.26)
    assert brier_score(q, ["b"]) == pytest.approx(0.86)
    assert brier_score(q, ["a", "b"]) == pytest.approx(0.56)
    # an answer outside the distribution: Σ q² + 1
    assert brier_score(q, ["z"]) == pytest.approx(0.46 + 1)
    assert brier_score({"a": 1.0}, ["b"]) == pytest.approx(2.0)  # the worst case
    assert brier_score({"a": 1.0}, ["a"]) == 0.0


def test_top1_modal_and_ties() -> None:
    assert modal_answers(["x", "y", "x"]) == ["x"]
    assert top1_match("x", ["x", "y", "x"]) == 1.0
    assert top1_match("y", ["x", "y", "x"]) == 0.0
    # two tied modes: half credit for either, none for anything else
    assert top1_match("x", ["x", "y"]) == 0.5
    assert top1_match("z", ["x", "y"]) == 0.0
    assert default_top1({"b": 0.4, "a": 0.4, "c": 0.2}) == "a"


def test_retest_agreement_and_skill() -> None:
    assert retest_agreement(["x"]).value is None
    assert "at least 2" in (retest_agreement(["x"]).reason or "")
    # leave one out: x vs {x, y} (tie: 1/2), x vs {x, y} (1/2), y vs {x, x} (0) → 1/3
    assert retest_agreement(["x", "x", "y"]).value == pytest.approx(1 / 3)
    assert retest_agreement(["x", "x", "x", "x"]).value == 1.0
    s = normalised_skill(0.7, 0.4, 0.9)
    assert s.value == pytest.approx(0.6)
    assert normalised_skill(0.4, 0.4, 0.9).value == 0.0
    for acc, base, ceiling, needle in [
        (0.7, 0.5, 0.5, "not above"),
        (0.7, 0.6, 0.5, "not above"),
        (0.7, None, 0.9, "no baseline"),
        (0.7, 0.4, None, "no ceiling"),
        (None, 0.4, 0.9, "no accuracy"),
    ]:
        m = normalised_skill(acc, base, ceiling)
        assert m.value is None and needle in (m.reason or ""), (acc, base, ceiling)


def test_ece_by_hand() -> None:
    # bin 9: confidences 0.9, 0.95 with outcomes 1, 0 → |1 − 1.85| ; bin 2: 0.2 vs 0 → 0.2
    m = expected_calibration_error([0.9, 0.95, 0.2], [1.0, 0.0, 0.0])
    assert m.value == pytest.approx((0.85 + 0.2) / 3)
    assert m.n == 3
    assert expected_calibration_error([1.0], [1.0]).value == 0.0  # 1.0 falls in the last bin
    empty = expected_calibration_error([], [])
    assert empty.value is None and empty.reason


def test_distribution_validation_names_the_problem() -> None:
    assert normalise_distribution({"a": 1}) == {"a": 1.0}
    for bad, needle in [
        ([0.5, 0.5], "JSON object"),
        ({}, "no answers"),
        ({"a": 0.5}, "sum to 0.5"),
        ({"a": -0.5, "b": 1.5}, "≥ 0"),
        ({"a": float("nan")}, "finite"),
        ({"a": "1"}, "not a number"),
        ({"a": True}, "not a number"),
        ({str(i): 1 / 1001 for i in range(1001)}, "at most"),
    ]:
        with pytest.raises(InputError) as err:
            normalise_distribution(bad, where="--distribution")
        assert needle in str(err.value) and "--distribution" in str(err.value)


def _random_case(rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    n = int(rng.integers(1, 8))
    probs = rng.dirichlet(np.ones(n) * float(rng.uniform(0.2, 3)))
    if n > 1 and rng.random() < 0.3:  # some exact zeros
        probs[rng.integers(0, n)] = 0.0
        probs = probs / probs.sum()
    answers = [f"a{i}" for i in range(n)]
    dist = dict(zip(answers, (float(p) for p in probs), strict=True))
    pool = [*answers, "other1", "other2"]
    k = int(rng.integers(1, 12))
    observed = [pool[int(i)] for i in rng.integers(0, len(pool), size=k)]
    return dist, observed


def test_brier_against_properscoring_on_random_cases() -> None:
    rng = np.random.default_rng(20261130)
    for _ in range(300):
        dist, observed = _random_case(rng)
        classes = sorted(set(dist) | set(observed))
        q = np.array([dist.get(c, 0.0) for c in classes])
        q = q / q.sum()
        per_sample = [
            float(np.sum(properscoring.brier_score(np.array([c == y for c in classes], float), q)))
            for y in observed
        ]
        assert brier_score(dist, observed) == pytest.approx(np.mean(per_sample), abs=1e-12)


def test_log_score_against_numpy_and_properness_on_random_cases() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        dist, observed = _random_case(rng)
        classes = sorted(set(dist) | set(observed))
        q = np.array([dist.get(c, 0.0) for c in classes])
        smoothed = np.maximum(q / q.sum(), EPSILON)
        smoothed /= smoothed.sum()
        idx = [classes.index(y) for y in observed]
        assert log_score(dist, observed) == pytest.approx(float(np.mean(np.log(smoothed[idx]))))
    # propriety: the expected Brier score under p is lowest when q = p
    for _ in range(50):
        p = rng.dirichlet(np.ones(4))
        answers = ["a", "b", "c", "d"]
        truth = dict(zip(answers, (float(x) for x in p), strict=True))
        q_other = dict(zip(answers, (float(x) for x in rng.dirichlet(np.ones(4))), strict=True))

        def expected_brier(
            q: dict[str, float], p: np.ndarray = p, answers: list[str] = answers
        ) -> float:
            return sum(float(p[i]) * brier_score(q, [a]) for i, a in enumerate(answers))

        assert expected_brier(truth) <= expected_brier(q_other) + 1e-12


def test_ece_against_numpy_on_random_cases() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(1, 200))
        conf = rng.random(n)
        out = (rng.random(n) < conf).astype(float)
        bins = np.minimum((conf * 10).astype(int), 9)
        expected = sum(abs(out[bins == b].sum() - conf[bins == b].sum()) for b in range(10)) / n
        got = expected_calibration_error(list(map(float, conf)), list(map(float, out)))
        assert got.value == pytest.approx(float(expected))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text(max_size=3), st.floats(0, 1), min_size=1, max_size=20).filter(
        lambda d: sum(d.values()) > 0
    ),
    st.lists(st.text(max_size=3), min_size=1, max_size=15),
)
def test_no_revealed_prediction_scores_below_the_penalty(
    weights: dict[str, float], observed: list[str]
) -> None:
    total = sum(weights.values())
    dist = {a: w / total for a, w in weights.items()}
    penalty = penalty_scores(observed)
    assert log_score(dist, observed) >= penalty["log_score"]
    assert penalty["log_score"] == penalty_log_score(len(set(observed)))
    assert brier_score(dist, observed) <= penalty["brier"] + 1e-12
    assert score_prediction(dist, default_top1(dist), observed)["top1_match"] >= 0.0


def test_penalty_bound_holds_for_the_largest_distribution() -> None:
    # the worst a revealed prediction can do: MAX_ANSWERS answers, none of them observed
    dist = {f"a{i}": 1 / MAX_ANSWERS for i in range(MAX_ANSWERS)}
    observed = [f"z{i}" for i in range(5)]
    assert log_score(dist, observed) >= penalty_log_score(5)


def test_aggregate_counts_penalties_and_says_why_not_computable() -> None:
    good = score_prediction({"x": 0.9, "y": 0.1}, "x", ["x", "x", "y"])
    records = [
        ScoreRecord(good, ["x", "x", "y"], own_answer="y", population=["y", "y"]),
        ScoreRecord(penalty_scores(["x"]), ["x"]),
    ]
    agg = aggregate(records)
    assert agg["n"] == 2 and agg["penalised"] == 1
    assert agg["top1_accuracy"]["value"] == pytest.approx(0.5)
    assert agg["log_score"]["value"] == pytest.approx(
        (good["log_score"] + penalty_log_score(1)) / 2
    )
    # base = max(population-modal "y" → 0, projection "y" → 0) = 0; ceiling from the one
    # query sampled 3 times = 1/3; S = (0.5 − 0) / (1/3 − 0) = 1.5
    assert agg["skill"]["base"] == 0.0
    assert agg["skill"]["ceiling"]["value"] == pytest.approx(1 / 3)
    assert agg["skill"]["value"] == pytest.approx(1.5)
    lone = aggregate([ScoreRecord(good, ["x"])])
    assert lone["skill"]["value"] is None and "baseline" in lone["skill"]["reason"]
    assert aggregate([])["log_score"]["value"] is None
