"""Two runs compared, worded by the profile's presenter (issue 24, item 5): figure titles, each
run's figure with its interval and n, the change judged from its interval, validity in words,
a figure one run did not measure with its reason; the dashboard shows the same words."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from reports.comparison import (
    Comparison,
    compare_runs,
    compared_figure,
    render_compare_markdown,
)
from reports.present import change_verdict, figure_title, validity_word
from reports.profile import Analysis, analyse
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run
from tui.comparison import compare_view

N_BOOT = 200


def test_figure_titles_name_the_figure_and_its_unit() -> None:
    assert figure_title("false_belief_accuracy") == "false-belief accuracy"
    assert figure_title("d50") == "D50 (levels)"
    assert figure_title("accuracy_by_depth.false.R1") == "accuracy at depth R1 (false belief)"
    assert figure_title("accuracy_by_depth.true.R2-self") == (
        "accuracy at depth R2-self (true belief)"
    )
    assert figure_title("some_new_figure") == "some new figure"
    assert compared_figure("accuracy_by_depth.false.R3").false_belief
    assert not compared_figure("accuracy_by_depth.true.R3").false_belief
    with pytest.raises(KeyError):
        compared_figure("no_such_figure")


@pytest.mark.parametrize(
    ("block", "verdict"),
    [
        ({"ci": [0.05, 0.3], "p_holm": 0.01, "status": "estimated"}, "clearly higher"),
        ({"ci": [-0.3, -0.05], "status": "estimated"}, "clearly lower"),
        ({"ci": [-0.1, 0.2], "p_holm": 0.5, "status": "estimated"}, "no detectable change"),
        ({"ci": [0.0, 0.2], "status": "estimated"}, "no detectable change"),
        # one of many intervals excluding 0 by chance: Holm across the table says so
        ({"ci": [0.02, 0.4], "p_holm": 0.37, "status": "estimated"}, "higher (not after Holm)"),
        ({"ci": None, "status": "not_estimable"}, "not estimable"),
        ({"ci": [None, 0.2], "status": "estimated"}, "not estimable"),
    ],
)
def test_a_change_is_judged_from_its_interval(block: dict[str, Any], verdict: str) -> None:
    assert change_verdict(block | {"difference": 0.1}) == verdict


def test_validity_reads_as_words() -> None:
    assert [validity_word(v) for v in (True, False, None)] == ["valid", "invalid", "unchecked"]


def _analysis(seed: int, *, tb_accuracy: float, games: int) -> Analysis:
    agent = SyntheticAgent(
        "piper", logistic_accuracy(2.5, -1.2, 0.25), tb_accuracy=tb_accuracy, confidence_noise=None
    )
    run = synthetic_run(
        np.random.default_rng(seed),
        [agent],
        stories=12,
        behaviour_every=0,
        games=games,
        items_per_game_cell=2,
    )
    return analyse(run.run_data(f"run-{seed}"), seed=seed, n_boot=N_BOOT)


@pytest.fixture(scope="module")
def compared() -> Comparison:
    """Run A valid with games; run B fails its true-belief controls and plays no game."""
    return compare_runs(
        _analysis(1, tb_accuracy=0.97, games=1), _analysis(2, tb_accuracy=0.3, games=0)
    )


def test_validity_and_a_missing_figure_in_words(compared: Comparison) -> None:
    piper = compared.agents["piper"]
    assert piper.valid == (True, False)
    assert piper.validity.text == "valid → invalid"
    assert piper.validity.why[0].startswith("run B: INVALID: piper's true-belief control")
    games = piper.metrics["games_accuracy"]
    assert games.difference is None and games.reason == "not measured in run b"
    assert re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\] n=16", games.a_text), games
    assert games.b_text == "not measured (no game items answered in this run)"
    assert games.verdict == "not compared (not measured in run B)"
    fb = piper.metrics["false_belief_accuracy"]
    assert fb.b_text.startswith("INVALID (not counted: ") and fb.b_compact == "INVALID"
    assert fb.verdict == "not counted (invalid in run B)"
    tb = piper.metrics["true_belief_control_accuracy"]
    assert tb.verdict == change_verdict(tb) == "clearly lower"
    md = render_compare_markdown(compared)
    assert "> **Validity: valid → invalid.** run B: INVALID: piper's" in md
    assert not re.findall(r"[A-Za-z0-9]+_[A-Za-z0-9_.]+", md)
    assert not re.findall(r"\b(True|False|None)\b", md)


def test_the_json_keeps_its_keys_and_parses_back(compared: Comparison) -> None:
    doc = compared.to_json()
    assert doc["schema"] == "mindledger.compare/1"
    piper = doc["agents"]["piper"]
    assert piper["valid"] == (True, False)
    tb = piper["metrics"]["true_belief_control_accuracy"]
    assert list(tb)[:12] == ["a", "b", "difference", "n_a", "n_b", "ci", "interval", "test",
                             "p", "p_holm", "status", "title"]  # fmt: skip
    skill = piper["metrics"]["agent_prediction_skill"]
    # S measured in neither run: no interval or test keys, as the schema has written it
    assert "interval" not in skill and "test" not in skill and skill["reason"]
    again = Comparison.of(json.loads(json.dumps(doc)))
    assert again == compared
    assert json.dumps(again.to_json()) == json.dumps(doc)
    # a number stays as it was written: an integer end is not rewritten as a float
    d50 = {**doc["agents"]["piper"]["metrics"]["d50"], "ci": [0, 1], "difference": 0}
    one = {**doc, "agents": {"piper": {**doc["agents"]["piper"], "metrics": {"d50": d50}}}}
    assert json.dumps(Comparison.of(one).to_json()) == json.dumps(one)
    with pytest.raises(ValueError, match=r"mindledger\.compare/1"):
        Comparison.of({**doc, "schema": "mindledger.profile/2"})


def test_the_dashboard_shows_the_markdown_words(compared: Comparison) -> None:
    md = render_compare_markdown(compared)
    table = [
        [c.strip() for c in line.strip().strip("|").split(" | ")]
        for line in md.splitlines()
        if line.startswith("| ")
    ][1:]  # past the header
    view = compare_view(compared)
    assert [r.cells[1] for r in view.rows] == [t[0] for t in table]
    for row, t in zip(view.rows, table, strict=True):
        assert row.cells[5] == t[4] or (
            row.cells[5].endswith("…") and t[4].startswith(row.cells[5][:-1])
        )
        assert f": A {t[1]} → B {t[2]}" in row.detail and row.detail.endswith(f": {t[4]}")
        if t[3] != "—":
            assert f"change {t[3]}" in row.detail
    assert "piper: validity valid → invalid; run B: INVALID: piper's" in "\n".join(view.notes)
    tb = next(r for r in view.rows if r.metric == "true_belief_control_accuracy")
    assert tb.direction == -1 and tb.cells[5] == "clearly lower"
