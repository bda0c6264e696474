"""The history's regression rule on profiles whose figures the test sets: which runs are tested,
against what baseline, at which threshold, and what it reads off a profile."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from reports.history import DEFAULT_RULE, RegressionRule, history_of
from reports.history_render import render_history_html, render_history_text, sparkline
from reports.profile import profile_from_data
from reports.simulation import study_agents
from reports.synthetic import simulate, suite_design


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    data = simulate(np.random.default_rng(3), [study_agents()[0]], suite_design("quick"))
    return profile_from_data(data, n_boot=100).to_json()


def _run(template: dict[str, Any], i: int, *, k: int, n: int = 40, suite: str = "quick",
         valid: bool = True, ece: tuple[float, float, float] | None = None) -> dict[str, Any]:
    p = copy.deepcopy(template)
    p["run"].update(id=f"r{i:02d}", suite=suite, created_at=f"2026-11-{i:02d}T03:00:00+00:00")
    a = p["agents"]["agent"]
    a["false_belief_accuracy"].update(value=k / n, k=k, n=n, ci=[0.0, 1.0], status="estimated")
    a["valid"] = valid
    if ece is not None:
        a["calibration"] = {"available": True, "ece": {
            "value": ece[0], "ci": [ece[1], ece[2]], "n": 400, "status": "estimated"}}
    return p


def test_a_drop_is_flagged_only_after_enough_history(template: dict[str, Any]) -> None:
    runs = [_run(template, i, k=36) for i in range(1, 4)] + [_run(template, 4, k=12)]
    h = history_of("agent", runs, metrics=["false_belief"])
    pts = h.metric("false_belief").points
    assert [p.tested for p in pts] == [False, False, False, True]
    assert pts[0].reason is not None and "history too short (0 earlier runs; 3 needed)" in \
        pts[0].reason
    assert pts[1].reason is not None and "history too short (1 earlier run; 3 needed)" in \
        pts[1].reason
    assert pts[3].flagged and pts[3].baseline == pytest.approx(108 / 120)
    m = sum(x.points[3].tested for x in history_of("agent", runs).metrics)
    assert pts[3].threshold == pytest.approx(DEFAULT_RULE.alpha / m)
    # with only two earlier runs the same drop is not tested
    short = history_of("agent", runs[1:], metrics=["false_belief"])
    assert not short.metric("false_belief").points[-1].tested


def test_the_baseline_is_the_window_of_the_same_suite_and_counted_runs(
    template: dict[str, Any]
) -> None:
    # old runs at 20/40, then five at 36/40: with window 5 the low ones are out of the window
    runs = [_run(template, i, k=20) for i in range(1, 4)]
    runs += [_run(template, i, k=36) for i in range(4, 9)]
    runs += [_run(template, 9, k=36, suite="baseline")]  # another design: no history of its own
    runs += [_run(template, 10, k=5, valid=False)]  # not counted: not tested, not a baseline
    runs += [_run(template, 11, k=28)]
    h = history_of("agent", runs, metrics=["false_belief"], rule=RegressionRule(window=5))
    pts = {p.run_id: p for p in h.metric("false_belief").points}
    assert pts["r08"].baseline == pytest.approx((20 + 4 * 36) / 200)  # r03..r07
    assert not pts["r09"].tested and pts["r09"].reason is not None
    assert not pts["r10"].counted and not pts["r10"].tested
    assert pts["r11"].baseline == pytest.approx(36 / 40)  # r04..r08, not r09 nor r10
    assert pts["r11"].flagged


def test_ece_is_worse_upwards_and_the_threshold_is_shared_per_run(
    template: dict[str, Any]
) -> None:
    runs = [_run(template, i, k=36, ece=(0.05, 0.04, 0.06)) for i in range(1, 5)]
    runs.append(_run(template, 5, k=36, ece=(0.15, 0.14, 0.16)))
    runs.append(_run(template, 6, k=36, ece=(0.01, 0.00, 0.02)))
    h = history_of("agent", runs, metrics=["false_belief", "ece"])
    ece = h.metric("ece").points
    assert ece[4].flagged and not ece[5].flagged  # a better calibration is no regression
    assert ece[4].text == "0.150 [0.140, 0.160] n=400" and ece[4].ci == (0.14, 0.16)
    # Bonferroni over every figure tested on the run, whichever are shown
    m = sum(x.points[4].tested for x in history_of("agent", runs).metrics)
    assert m >= 2 and ece[4].threshold == pytest.approx(DEFAULT_RULE.alpha / m)
    assert [r.metric.key for r in h.new_regressions("r05")] == ["ece"]


def test_a_lasting_drop_is_notified_once(template: dict[str, Any]) -> None:
    runs = [_run(template, i, k=38) for i in range(1, 8)]
    runs += [_run(template, i, k=10) for i in range(8, 11)]
    h = history_of("agent", runs, metrics=["false_belief"])
    fb = h.metric("false_belief")
    assert [p.flagged for p in fb.points] == [False] * 7 + [True] * 3
    assert [bool(h.new_regressions(f"r{i:02d}")) for i in range(8, 11)] == [True, False, False]
    assert sparkline(fb.values(), [p.flagged for p in fb.points]) == "███████▼▼▼"
    text = render_history_text(h)
    assert "▼ REGRESSION" in text and "r08" in text
    assert h.since("2026-11-09").runs[0].id == "r09"
    page = render_history_html(h)
    assert "data:image/png;base64," in page and "class='flagged'" in page


def test_unknown_metrics_and_bad_rules_are_refused(template: dict[str, Any]) -> None:
    from mindledger.errors import InputError

    with pytest.raises(InputError, match="metric: unknown metric 'd51'"):
        history_of("agent", [template], metrics=["d51"])
    with pytest.raises(ValueError, match="min_history"):
        RegressionRule(window=2, min_history=3)


def test_one_run_is_one_run_in_every_sentence(template: dict[str, Any]) -> None:
    rule = RegressionRule(window=1, min_history=1)
    assert "the pooled previous 1 run of the same suite" in rule.describe()
    runs = [_run(template, 1, k=36), _run(template, 2, k=12)]
    pts = history_of("agent", runs, metrics=["false_belief"], rule=rule).metric(
        "false_belief").points
    assert pts[1].tested and pts[1].reason is not None
    assert "over the previous 1 run, one-sided Fisher" in pts[1].reason
    text = render_history_text(history_of("agent", runs[:1], rule=rule))
    assert text.startswith("History of agent: 1 run\n")


def test_headline_figures_are_read_off_the_profile(template: dict[str, Any]) -> None:
    h = history_of("agent", [template])
    (fb,) = h.metric("false_belief").points
    a = template["agents"]["agent"]
    assert (fb.value, fb.n, fb.k) == (a["false_belief_accuracy"]["value"],
                                      a["false_belief_accuracy"]["n"],
                                      a["false_belief_accuracy"]["k"])
    (skill,) = h.metric("skill").points
    assert skill.value is None and skill.reason is not None and "no matrix run" in skill.reason
    assert h.to_dict()["schema"] == "mindledger.history/1"
    assert history_of("nobody", [template]).runs == ()


def test_too_few_items_for_an_interval_is_said_once_not_in_every_cell(
    template: dict[str, Any]
) -> None:
    """A nightly quick suite's figures are too small for an interval: the history says so once
    (the text, the HTML, the JSON) rather than "(no interval: n < 10)" after each figure, and
    the figures keep their value and n."""
    runs = [_run(template, i, k=36) for i in range(1, 4)]
    for i, p in enumerate(runs):
        fb = p["agents"]["agent"]["false_belief_accuracy"]
        fb.update(value=(4 + i) / 7, k=4 + i, n=7, ci=None, status="not_estimable",
                  reason="n = 7 items: at least 10 are needed for an interval that keeps its "
                         "coverage")
    h = history_of("agent", runs)
    texts = [p.text for p in h.metric("false_belief").points]
    assert texts == ["57.1% n=7", "71.4% n=7", "85.7% n=7"]
    assert h.small_n.startswith("Intervals need n ≥ 10: figures here printed without one rest ")
    text = render_history_text(h)
    assert text.count("Intervals need n ≥ 10") == 1 and "no interval: n < 10" not in text
    page = render_history_html(h)
    assert page.count("Intervals need n ≥ 10") == 1 and "no interval: n &lt; 10" not in page
    assert h.to_dict()["small_n"] == h.small_n
    assert h.since("2026-11-02").small_n == h.small_n
    # with figures large enough, nothing is said
    big = history_of("agent", [_run(template, i, k=36) for i in range(1, 4)],
                     metrics=["false_belief"])
    assert all("no interval" not in p.text for p in big.metric("false_belief").points)
