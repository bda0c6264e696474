"""The matrix's typed records and the scores they are stored as (:mod:`matrix._records`):
the stored form is a contract (stored runs are read back with it), so each record's score is
pinned here key by key, and every record reads back as itself."""

from __future__ import annotations

from typing import Any

import pytest

from matrix import (
    SCORED_BY,
    ExposureRecord,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    read_score,
)

SCORES = {"log_score": -0.5, "brier": 0.25, "top1_match": 1.0}


def test_a_target_record_is_stored_as_its_score_and_read_back() -> None:
    rec = TargetRecord("t", "red", ("red", "blue"), errors=1, own_error=None, source="trials")
    score = rec.to_score()
    assert score == {
        "scored_by": "matrix", "role": "target", "own_answer": "red", "own_error": None,
        "samples": ["red", "blue"], "errors": 1, "source": "trials",
    }  # fmt: skip
    assert read_score("t", "item-1", score) == ("item-1", rec)
    asked = TargetRecord("t", None, ("red",))
    assert "source" not in asked.to_score()  # only samples from real trials say where from
    assert read_score("t", "item-1", asked.to_score()) == ("item-1", asked)


def test_a_prediction_record_is_stored_as_its_score_and_read_back() -> None:
    dist = {"red": 0.75, "blue": 0.25}
    rec = PredictionRecord(
        "p", "t", "scored", distribution=dist, top1="red", own_answer="blue",
        prediction_id="p123", scores=SCORES, observed=("red", "red"), condition="observe:2",
    )  # fmt: skip
    score = rec.to_score("base")
    assert score == {
        "scored_by": "matrix", "role": "prediction", "item": "base", "target": "t",
        "condition": "observe:2", "outcome": "scored", "top1": "red", "own_answer": "blue",
        "prediction": "p123", "scores": SCORES, "observed": ["red", "red"],
    }  # fmt: skip
    # the distribution is the trial's answer, the error its error
    assert read_score("p", "prediction-item", score, dist, None) == ("base", rec)
    failed = PredictionRecord("p", "t", "predictor_error", error="timeout")
    got = read_score("p", "prediction-item", failed.to_score("base"), None, "timeout")
    assert got == ("base", failed) and failed.to_score("base")["condition"] == "zero-shot"


def test_a_second_order_record_is_stored_as_its_score_and_read_back() -> None:
    truth = {"red": 0.5, "blue": 0.5}
    rec = SecondOrderRecord(
        "p", "q", "t", "scored", distribution={"red": 1.0, "blue": 0.0}, truth=truth,
        scores={"brier": 0.5}, prediction_id="p9", ledger_scores=SCORES,
    )  # fmt: skip
    score = rec.to_score("base")
    assert score == {
        "scored_by": "matrix", "role": "second_order", "item": "base", "about": "q",
        "target": "t", "outcome": "scored", "truth": truth, "prediction": "p9",
        "scores": {"brier": 0.5}, "ledger_scores": SCORES,
    }  # fmt: skip
    assert read_score("p", "so-item", score, {"red": 1.0, "blue": 0.0}) == ("base", rec)


def test_an_exposure_record_is_stored_as_its_score_and_read_back() -> None:
    rec = ExposureRecord("t", "blue")
    assert rec.to_score() == {"scored_by": "matrix", "role": "exposure", "answer": "blue"}
    assert read_score("t", "e1", rec.to_score()) == ("e1", rec)
    assert ExposureRecord.from_score("t", ExposureRecord("t", None).to_score()).answer is None


@pytest.mark.parametrize(
    "score",
    [{}, {"scored_by": "nesttom", "role": "target"}, {"scored_by": SCORED_BY, "role": "judge"}],
)
def test_a_score_the_matrix_did_not_write_reads_as_none(score: dict[str, Any]) -> None:
    assert read_score("a", "i", score) is None
