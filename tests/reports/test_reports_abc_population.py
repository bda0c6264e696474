"""Condition C against the run's own LLM population (issue 15 item 4), scored by the profile on
constructed runs whose population is reference players with known level-k policies, so the
empirical distribution — and every score — is known by hand."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import games
from ledger.store import RunAgent
from mindledger.items import Item
from reports import render_markdown
from reports._data import run_data
from reports.model import RunProfile
from reports.profile import profile_from_data

FLOOR = math.log(1e-9)
LEVELS = (1, 2, 3)


def _scenarios(n: int) -> list[Item]:
    return games.generate_population_items(5, n)


def _label(item: Item, value: int) -> str:
    ranges = item.truth["label_ranges"]
    return str(item.truth["labels"][next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)])


def _trial(agent: str, item: Item, answer: Any) -> dict[str, Any]:
    score = games.score(item, answer)
    return {"agent": agent, "item_id": item.id, "status": "ok", "correct": score.correct,
            "confidence": 0.9, "score_value": score.value, "primary_error": score.primary_error,
            "tokens_in": 0, "tokens_out": 0, "latency_s": 0.0,
            "score_json": json.dumps(score.to_dict()), "answer_json": json.dumps(answer),
            "error": None}


def _profile(items: Sequence[Item], trials: list[dict[str, Any]],
             agents: Sequence[str]) -> dict[str, Any]:
    run = {"id": "r", "suite": "test", "seed": 5, "held_out": False, "status": "complete",
           "created_at": None, "finished_at": None, "params": {}}
    data = run_data(run, [RunAgent(a, "reference", {"adapter": "reference", "policy": a})
                          for a in agents], [i.to_dict() for i in items], trials)
    return profile_from_data(data, n_boot=20).to_json()


def _reference_run(items: Sequence[Item], levels: Sequence[int] = LEVELS) -> dict[str, Any]:
    trials = []
    for k in levels:
        rng = np.random.default_rng(k)
        for it in items:
            trials.append(_trial(f"level:{k}", it, games.reference_answer(it, f"level:{k}", rng)))
    return _profile(items, trials, [f"level:{k}" for k in levels])


def test_reference_players_as_the_population_give_exact_scores() -> None:
    items = _scenarios(2)  # a beauty contest and an 11-20 variant, 5 plays + 1 C-llm each
    assert [i.meta["question"] for i in items] == ["play"] * 5 + ["C-llm"] + ["play"] * 5 + [
        "C-llm"]
    for c in (items[5], items[11]):
        acts = c.truth["own_level_actions"]
        assert len({_label(c, a) for a in acts}) == 3  # the three levels play apart
    profile = _reference_run(items)
    agents = profile["agents"]
    # level:2 predicts a point mass on level-1's play; the others' plays are level-1's five
    # and level-3's five (its own five left out): half the plays at probability 1, half at 0
    c2 = agents["level:2"]["games"]["abc"]["c_llm"]
    assert c2["available"] and c2["predictions"] == 2 and c2["not_estimable_scenarios"] == 0
    assert c2["samples"] == [5] and c2["min_population"] == games.POPULATION_MIN_ANSWERS
    assert c2["population_plays"] == {"mean": 10.0, "min": 10}
    assert c2["log_score"]["value"] == pytest.approx(0.5 * FLOOR)
    assert c2["log_score"]["n"] == 2
    assert c2["log_score"]["status"] == "not_estimable"  # two scenarios: no interval
    assert c2["brier"]["value"] == pytest.approx(1.0)  # (5·0 + 5·2) / 10
    assert c2["top1"]["value"] == 1.0 and c2["top1"]["n"] == 2  # its mode ties for the top
    # level:3 predicts level-2's play; the others are level-1 and level-2: the same figures
    c3 = agents["level:3"]["games"]["abc"]["c_llm"]
    assert c3["log_score"]["value"] == pytest.approx(0.5 * FLOOR)
    assert c3["brier"]["value"] == pytest.approx(1.0)
    # level:1 believes in level-0 players: a uniform prediction over L choices scores ln(1/L)
    # and 1 − 1/L whatever the plays, and has no unique mode
    c1 = agents["level:1"]["games"]["abc"]["c_llm"]
    sizes = [len(items[5].answer["choices"]), len(items[11].answer["choices"])]
    assert c1["log_score"]["value"] == pytest.approx(np.mean([math.log(1 / n) for n in sizes]))
    assert c1["brier"]["value"] == pytest.approx(np.mean([1 - 1 / n for n in sizes]))
    assert c1["top1"]["value"] == 0.0
    assert c1["uniform_log_score"] == pytest.approx(c1["log_score"]["value"])
    # population items are no one's right or wrong answers: out of the games family accuracy,
    # the unscored count and the scripted A/B/C figures
    assert agents["level:2"]["families"]["games"]["n"] == 0
    assert agents["level:2"]["api_errors"]["ok_without_score"] == 0
    assert agents["level:2"]["games"]["abc"]["available"] is False
    assert "accuracy" not in agents["level:2"]["games"]


def test_a_predictors_own_plays_are_left_out() -> None:
    """With only level:2 and level:3, each one's population is the other's five plays."""
    items = _scenarios(1)
    profile = _reference_run(items, (2, 3))
    c = items[5]
    acts = c.truth["own_level_actions"]
    c2 = profile["agents"]["level:2"]["games"]["abc"]["c_llm"]
    # level:2 predicts level-1's play; the population is level-3's play alone
    assert c2["population_plays"]["min"] == 5
    assert c2["log_score"]["value"] == pytest.approx(FLOOR)
    assert c2["brier"]["value"] == pytest.approx(2.0)
    assert c2["top1"]["value"] == 0.0
    # had its own plays counted, half of the population would sit on level-2's play instead
    assert _label(c, acts[0]) != _label(c, acts[1])


def test_the_scores_are_the_scripted_c_scorer() -> None:
    """One prediction against a counted population, by hand."""
    s = games.population_prediction_scores([0.5, 0.25, 0.25, 0.0], ["a", "b", "c", "d"],
                                           {"a": 2, "b": 1, "d": 1})
    # log: (2 ln .5 + ln .25 + ln 1e-9) / 4; Brier: Σq² = .375, (2(.375 − 1 + 1) + (.375 − .5
    # + 1) + (.375 + 1)) / 4
    assert s["log_score"] == pytest.approx((2 * math.log(0.5) + math.log(0.25) + FLOOR) / 4)
    assert s["brier"] == pytest.approx((2 * 0.375 + 0.875 + 1.375) / 4)
    assert s["top1"] is True and s["population_modes"] == ["a"]
    assert s["zero_probability_hits"] == 1 and s["n_realised"] == 4


def test_without_play_items_the_figure_is_not_estimable() -> None:
    items = [i for i in _scenarios(2) if i.meta["question"] == "C-llm"]
    profile = _reference_run(items)
    c = profile["agents"]["level:2"]["games"]["abc"]["c_llm"]
    assert c["predictions"] == 2 and c["not_estimable_scenarios"] == 2
    assert c["reason"] == "not estimable: no play items of this scenario in the run"
    for key in ("log_score", "brier", "top1"):
        assert c[key]["value"] is None and c[key]["n"] == 0
        assert c[key]["status"] == "not_estimable"
    text = render_markdown(RunProfile.of(profile))
    assert "not estimable: no play items of this scenario in the run" in text


def test_invalid_plays_do_not_make_a_population() -> None:
    """Out-of-range plays by everyone else: fewer valid plays than the minimum."""
    items = _scenarios(1)
    c = items[5]
    trials = []
    for it in items[:5]:
        trials.append(_trial("level:2", it, it.answer["min"]))
        trials.append(_trial("bad", it, it.answer["max"] + 1))
    trials.append(_trial("level:2", c, games.reference_answer(c, "level:2",
                                                              np.random.default_rng(0))))
    out_of_range = games.score(items[0], items[0].answer["max"] + 1)
    assert out_of_range.correct is None and out_of_range.primary_error == "out_of_range"
    profile = _profile(items, trials, ["level:2", "bad"])
    figure = profile["agents"]["level:2"]["games"]["abc"]["c_llm"]
    assert figure["reason"] == (
        f"not estimable: 0 valid plays of the other agents; at least "
        f"{games.POPULATION_MIN_ANSWERS} are needed")


def test_the_report_shows_c_against_the_run_apart_from_scripted_c() -> None:
    items = games.generate_abc_items(5, 3) + _scenarios(2)
    profile = _reference_run(items)
    abc = profile["agents"]["level:2"]["games"]["abc"]
    assert abc["accuracy"]["C"]["n"] == 3  # the scripted C items alone
    assert abc["log_score_c"]["n"] == 3
    assert abc["c_llm"]["log_score"]["n"] == 2
    text = render_markdown(RunProfile.of(profile))
    lines = [x for x in text.splitlines() if x.startswith("C against the run's agents")]
    assert len(lines) == 3  # one per agent, apart from the scripted "A/B/C:" line
    assert any("log score -10.362 n=2" in x and "top-1 100.0% n=2" in x for x in lines)
    scripted = [x for x in text.splitlines() if x.startswith("A/B/C:")]
    assert scripted and all("log score of C (scripted populations)" in x for x in scripted)


def test_an_unreadable_prediction_is_a_wrong_top1_without_a_log_score() -> None:
    """As the harness records a reply without a readable answer (``no_answer``, no details)."""
    items = _scenarios(1)
    trials = [_trial(f"level:{k}", it, games.reference_answer(it, f"level:{k}",
                                                            np.random.default_rng(k)))
              for k in (1, 3) for it in items[:5]]
    trials.append(_trial("mute", items[5], None) | {
        "correct": False, "primary_error": "no_answer", "score_json": json.dumps(
            {"correct": False, "error_codes": ["no_answer"], "details": {}})})
    profile = _profile(items, trials, ["level:1", "level:3", "mute"])
    c = profile["agents"]["mute"]["games"]["abc"]["c_llm"]
    assert c["predictions"] == 1 and c["population_plays"]["min"] == 10
    assert c["top1"]["value"] == 0.0 and c["top1"]["n"] == 1
    assert c["log_score"]["value"] is None and c["log_score"]["n"] == 0
    assert c["log_score"]["reason"].startswith("not estimable: no readable C-llm prediction")
    # no right or wrong answer of its own: not counted as an unscored or wrong games answer
    assert profile["agents"]["mute"]["families"]["games"]["n"] == 0
