"""The self-forecast side of the reports (issue 29): every figure's value off a profile, the
profile's self-forecast section from forecasts built by hand (scored as the ledger scores them:
:mod:`mindledger.forecasts`), its place in the profile and its schema."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import jsonschema
import numpy as np
import pytest

from ledger.forecasts import ForecastState
from mindledger.errors import InputError
from mindledger.forecasts import (
    Bins,
    figure,
)
from reports.model import SCHEMA_FILE, RunProfile, SelfForecast
from reports.profile import profile_from_data
from reports.self_forecast import (
    MIN_RUNS,
    FigureValue,
    attach_self_forecasts,
    figure_value,
    forecast_line,
    read_agent_forecasts,
    self_forecast_section,
    with_self_forecasts,
)
from reports.simulation import study_agents
from reports.synthetic import simulate, suite_design
from tests.reports.forecast_states import q, runs, state

# -- figure values ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    data = simulate(np.random.default_rng(3), study_agents(), suite_design("quick"))
    return profile_from_data(data, n_boot=100).to_json()


def _profile(doc: dict[str, Any], **run: Any) -> RunProfile:
    d = copy.deepcopy(doc)
    d["run"].update(run)
    return RunProfile.of(d)


def test_every_base_figure_reads_the_profile(template: dict[str, Any]) -> None:
    p = RunProfile.of(template)
    a = p.agents["agent"]
    fb = figure_value(p, "agent", "false_belief_accuracy")
    assert fb.value == a.false_belief_accuracy.value and fb.level == 0.95
    assert fb.ci == (
        None if a.false_belief_accuracy.ci is None else tuple(a.false_belief_accuracy.ci)
    )
    assert figure_value(p, "agent", "leakage_resistance").value == a.leakage_resistance.value
    r2 = figure_value(p, "agent", "accuracy_at_depth:R2")
    assert r2.value == a.accuracy_by_depth.false["R2"].value
    r0 = figure_value(p, "agent", "accuracy_at_depth:R0")
    assert r0.value == a.reality_check.value
    s = figure_value(p, "agent", "S")
    assert s.value is None and s.reason is not None and "matrix" in s.reason
    d50 = figure_value(p, "agent", figure("d50"))
    if a.d50.status == "estimated":
        assert d50.value == pytest.approx(float(a.d50.value or 0))
    else:
        assert d50.value is None and a.d50.status in (d50.reason or "")
    credit = figure_value(p, "agent", "ablation_credit:" + next(iter(a.ablation_credit)))
    block = next(iter(a.ablation_credit.values()))
    assert block.metrics is not None and block.metrics.false_belief_accuracy is not None
    assert credit.value == pytest.approx(block.metrics.false_belief_accuracy.difference)


def test_d50_that_is_only_a_bound_has_no_value(template: dict[str, Any]) -> None:
    d = copy.deepcopy(template)
    d["agents"]["agent"]["d50"].update(
        status="beyond", value=None, ci=None, reason="accuracy never fell to halfway"
    )
    v = figure_value(RunProfile.of(d), "agent", "d50")
    assert v.value is None and v.reason == "D50 is beyond: accuracy never fell to halfway"
    d["agents"]["agent"]["d50"].update(status="estimated", value=2.5, ci=[2.0, 3.1])
    assert figure_value(RunProfile.of(d), "agent", "d50") == FigureValue(2.5, (2.0, 3.1))


def test_figures_the_run_does_not_have_say_why(template: dict[str, Any]) -> None:
    p = RunProfile.of(template)
    assert figure_value(p, "nobody", "d50").reason == f"nobody is not in run {p.run.id}"
    assert (
        figure_value(p, "agent", "ablation_credit:no-such").reason
        == "the run did not ablate module 'no-such'"
    )
    d = copy.deepcopy(template)
    del d["agents"]["agent"]["accuracy_by_depth"]["false"]["R5"]
    v = figure_value(RunProfile.of(d), "agent", "accuracy_at_depth:R5")
    assert v.value is None and "depth R5" in (v.reason or "")
    with pytest.raises(InputError):
        figure_value(p, "agent", "accuracy_at_depth:R9")
    # a skill S with a value and its interval
    d["agents"]["agent"]["agent_prediction_skill"] = {
        "available": True,
        "value": 0.31,
        "ci": [0.1, 0.5],
        "status": "estimated",
    }
    assert figure_value(RunProfile.of(d), "agent", "S") == FigureValue(0.31, (0.1, 0.5))


def test_change_is_minus_the_previous_run_with_intervals_in_quadrature(
    template: dict[str, Any],
) -> None:
    now_doc = copy.deepcopy(template)
    now_doc["agents"]["agent"]["false_belief_accuracy"].update(
        value=0.7, ci=[0.6, 0.8], status="estimated"
    )
    before_doc = copy.deepcopy(template)
    before_doc["run"]["id"] = "earlier"
    before_doc["agents"]["agent"]["false_belief_accuracy"].update(
        value=0.55, ci=[0.4, 0.7], status="estimated"
    )
    now, before = RunProfile.of(now_doc), RunProfile.of(before_doc)
    v = figure_value(now, "agent", "change:false_belief_accuracy", before)
    half = math.hypot(0.1, 0.15)
    assert v.value == pytest.approx(0.15)
    assert v.ci == pytest.approx((0.15 - half, 0.15 + half))
    assert (
        figure_value(now, "agent", "change:false_belief_accuracy", None).reason
        == "no previous run of the same suite to take the change from"
    )
    other = _profile(before_doc, suite="other-suite")
    assert "another suite" in (figure_value(now, "agent", "change:d50", other).reason or "")
    # no interval on either side: the change has none
    before_doc["agents"]["agent"]["false_belief_accuracy"].update(ci=None, status="not_estimable")
    v2 = figure_value(now, "agent", "change:false_belief_accuracy", RunProfile.of(before_doc))
    assert v2.value == pytest.approx(0.15) and v2.ci is None
    # no value before: why
    before_doc["agents"]["agent"]["false_belief_accuracy"].update(value=None, reason="n = 0")
    v3 = figure_value(now, "agent", "change:false_belief_accuracy", RunProfile.of(before_doc))
    assert (
        v3.value is None
        and v3.reason == "the previous run earlier has no false_belief_accuracy: n = 0"
    )


# -- the section --------------------------------------------------------------------------------


def test_no_forecasts_no_section() -> None:
    assert self_forecast_section([], "run-00") is None
    # forecasts only of later runs do not count for this one
    later = [state("run-03", "d50", q(2.5, 0.5), 2.4)]
    assert self_forecast_section(later, "run-01", runs=runs(4)) is None


def test_counts_coverage_bias_and_the_confidently_wrong() -> None:
    r = runs(3)
    fs = [
        state(r[0], "d50", q(2.5, 0.6), 2.55, seq=1),  # inside 50% and 90%
        state(r[0], "false_belief_accuracy", q(0.8, 0.05), 0.6, seq=2),  # far below: wrong
        state(r[1], "d50", q(2.5, 0.6), 2.85, seq=3),  # inside 90% only
        state(r[1], "S", q(0.3, 0.1), None, status="void", seq=4, note="no matrix run"),
        state(r[2], "d50", q(2.6, 0.3), 3.2, seq=5),  # above the 90%: wrong
        state(r[2], "leakage_resistance", q(0.7, 0.1), 0.7, status="rejected", seq=6),
        state(r[2], "change:d50", None, None, status="committed", seq=7),
    ]
    sf = self_forecast_section(fs, r[2], runs=r, seed=1, n_boot=200)
    assert sf is not None
    assert sf.runs == 3
    c = sf.counts
    assert (c.committed, c.scored, c.void, c.rejected, c.unrevealed) == (7, 4, 1, 1, 1)
    cov50, cov90 = sf.coverage["50"], sf.coverage["90"]
    assert (cov50.k, cov50.n, cov50.nominal) == (1, 4, 0.5)
    assert (cov90.k, cov90.n) == (2, 4)
    assert cov90.value == 0.5 and cov90.ci is not None
    lo, hi = cov90.ci
    assert lo is not None and hi is not None and lo < 0.5 < hi
    assert [(x.run, x.figure) for x in sf.confidently_wrong] == [
        (r[0], "false_belief_accuracy"),
        (r[2], "d50"),
    ]
    assert [x.figure for x in sf.this_run] == ["d50", "leakage_resistance", "change:d50"]
    assert sf.this_run[0].confidently_wrong and sf.this_run[0].outcome == 3.2
    assert sf.this_run[1].median is None  # a rejected reveal shows nothing
    # bias: outcomes below the median 1 of 4 (0.6 < 0.8); d50's mean median − outcome
    b = sf.bias
    assert b is not None and (b.n, b.below_median) == (4, 1)
    assert b.by_figure["d50"].mean_error == pytest.approx(
        ((2.5 - 2.55) + (2.5 - 2.85) + (2.6 - 3.2)) / 3
    )
    assert b.by_figure["false_belief_accuracy"].mean_error == pytest.approx(0.2)
    # the section's history ends at the run: as of r[0] only r[0]'s forecasts count
    first = self_forecast_section(fs, r[0], runs=r, seed=1, n_boot=200)
    assert first is not None and first.counts.committed == 2 and first.runs == 1


def test_skill_is_one_minus_the_loss_ratio_with_a_run_bootstrap_interval() -> None:
    r = runs(8)
    rng = np.random.default_rng(5)
    fs = []
    for i, run in enumerate(r):
        y = float(rng.normal(2.5, 0.3))
        fs.append(
            state(run, "d50", q(y + 0.05, 0.4), y, previous=(2.0, (1.4, 2.6), 0.95), seq=2 * i)
        )
        fs.append(
            state(run, "false_belief_accuracy", q(0.6, 0.1), 0.62, previous=None, seq=2 * i + 1)
        )  # no previous value: no naive
    sf = self_forecast_section(fs, r[-1], runs=r, seed=7, n_boot=500)
    assert sf is not None
    sk = sf.skill["quantile_score"]
    with_naive = [s for s in fs if s.naive_loss is not None]
    expected = 1 - sum(s.loss or 0 for s in with_naive) / sum(s.naive_loss or 0 for s in with_naive)
    assert sk.value is not None
    assert sk.value == pytest.approx(expected) and sk.value > 0.5
    assert (sk.n, sk.n_runs, sk.without_naive) == (8, 8, 8)
    assert sk.ci is not None and sk.status == "estimated"
    lo, hi = sk.ci
    assert lo is not None and hi is not None
    assert lo < sk.value < hi and lo > 0
    # the same seed, the same interval; another seed, another
    again = self_forecast_section(fs, r[-1], runs=r, seed=7, n_boot=500)
    other = self_forecast_section(fs, r[-1], runs=r, seed=8, n_boot=500)
    assert again is not None and other is not None
    assert again.skill["quantile_score"].ci == sk.ci != other.skill["quantile_score"].ci
    # with fewer runs than MIN_RUNS: a value, no interval, and why
    few = self_forecast_section(fs, r[MIN_RUNS - 2], runs=r, seed=7, n_boot=500)
    assert few is not None
    fsk = few.skill["quantile_score"]
    assert fsk.value is not None and fsk.ci is None and fsk.status == "not_estimable"
    assert f"at least {MIN_RUNS}" in (fsk.reason or "")


def test_a_worse_than_naive_forecaster_has_negative_skill_and_bins_their_own_rule() -> None:
    r = runs(6)
    fs = [
        state(run, "d50", q(1.0, 0.1), 2.5, previous=(2.5, (2.2, 2.8), 0.95), seq=i)
        for i, run in enumerate(r)
    ]
    edges = (0.0, 0.25, 0.5, 0.75, 1.0)
    fs += [
        state(
            run,
            "false_belief_accuracy",
            Bins(edges, (0.05, 0.05, 0.2, 0.7)),
            0.8,
            previous=(0.6, (0.5, 0.7), 0.95),
            seq=10 + i,
        )
        for i, run in enumerate(r)
    ]
    sf = self_forecast_section(fs, r[-1], runs=r, seed=0, n_boot=300)
    assert sf is not None
    assert set(sf.skill) == {"quantile_score", "log_score"}
    qs = sf.skill["quantile_score"]
    assert qs.value is not None and qs.value < 0 and qs.ci is not None
    assert qs.ci[1] is not None and qs.ci[1] < 0
    assert (sf.coverage["90"].k, sf.coverage["90"].n) == (6, 12)  # only the bins cover 0.8
    assert len(sf.confidently_wrong) == 6


def test_forecasts_of_several_predictors_are_a_bug() -> None:
    fs = [
        state("run-00", "d50", q(2.5, 0.5), 2.5, predictor="a"),
        state("run-00", "d50", q(2.5, 0.5), 2.5, predictor="b", seq=1),
    ]
    with pytest.raises(ValueError, match="several predictors"):
        self_forecast_section(fs, "run-00")


def test_forecast_line_reads_a_state() -> None:
    s = state("run-00", "d50", q(2.5, 0.6), 3.4)
    line = forecast_line(s)
    assert line.median == 2.5 and line.interval_90 == pytest.approx((1.9, 3.1))
    assert line.interval_50 is not None and line.in_50 is False and line.in_90 is False
    assert line.confidently_wrong and line.rule == "quantile_score" and line.form == "quantiles"
    assert line.loss == pytest.approx(s.loss)


# -- in the profile -----------------------------------------------------------------------------


def _forecasts_of(run_id: str) -> list[ForecastState]:
    r = [*runs(5), run_id]
    return [state(run, "d50", q(2.5, 0.4), 2.5 + 0.1 * i, seq=i) for i, run in enumerate(r)]


def test_the_section_in_the_profile_round_trips_and_fits_the_schema(
    template: dict[str, Any],
) -> None:
    p = RunProfile.of(template)
    with_sf = with_self_forecasts(
        p, {"agent": _forecasts_of(p.run.id)}, runs_by_agent={"agent": [*runs(5), p.run.id]}
    )
    doc = with_sf.to_json()
    assert RunProfile.of(doc).to_json() == doc
    assert json.loads(json.dumps(doc)) == doc
    sf = with_sf.agents["agent"].self_forecast
    assert isinstance(sf, SelfForecast) and sf.counts.scored == 6 and sf.run == p.run.id
    assert sf.skill["quantile_score"].ci is not None  # 6 runs >= MIN_RUNS
    assert with_sf.agents["agent-control"].self_forecast is None
    assert "self_forecast" not in doc["agents"]["agent-control"]
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema)
    # the same bootstrap as the profile's: its seed and replicates
    again = with_self_forecasts(
        p, {"agent": _forecasts_of(p.run.id)}, runs_by_agent={"agent": [*runs(5), p.run.id]}
    )
    assert again.to_json() == doc
    # no forecasts: the profile unchanged
    assert with_self_forecasts(p, {}).to_json() == template


class _FakeStore:
    def __init__(self, by_agent: dict[str, list[ForecastState]], order: list[str]) -> None:
        self.engine = object()
        self.by_agent = by_agent
        self.order = order

    def agent_runs(self, agent: str) -> list[str]:
        return self.order


def test_build_profile_reads_forecasts_through_one_function(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ledger.forecasts

    p = RunProfile.of(template)
    assert read_agent_forecasts(object(), "agent") == []  # no database: no forecasts
    store = _FakeStore({"agent": _forecasts_of(p.run.id)}, [*runs(5), p.run.id])
    calls: list[tuple[object, str | None]] = []

    def read_forecasts(
        engine: object, *, predictor: str | None = None, run_id: str | None = None
    ) -> list[ForecastState]:
        calls.append((engine, predictor))
        return store.by_agent.get(predictor or "", [])

    monkeypatch.setattr(ledger.forecasts, "read_forecasts", read_forecasts, raising=False)
    assert len(read_agent_forecasts(store, "agent")) == 6
    out = attach_self_forecasts(store, p)
    assert {pred for _, pred in calls} == set(p.agents) and calls[0][0] is store.engine
    sf = out.agents["agent"].self_forecast
    assert sf is not None and sf.counts.committed == 6
    monkeypatch.delattr(ledger.forecasts, "read_forecasts", raising=False)
    if not hasattr(ledger.forecasts, "read_forecasts"):
        assert attach_self_forecasts(store, p) is p  # before the ledger reads forecasts


def test_an_invalid_agents_false_belief_figures_have_no_value(template: dict[str, Any]) -> None:
    d = copy.deepcopy(template)
    d["agents"]["agent"]["valid"] = False
    d["agents"]["agent"]["validity"]["message"] = "true-belief control accuracy 40% < 90%"
    p = RunProfile.of(d)
    for name in ("false_belief_accuracy", "d50", "leakage_resistance", "accuracy_at_depth:R2"):
        v = figure_value(p, "agent", name)
        assert v.value is None and v.reason == (
            "not counted: the agent is invalid on this run (true-belief control accuracy 40% < 90%)"
        )
    assert figure_value(p, "agent", "accuracy_at_depth:R0").value is not None
    assert (
        figure_value(RunProfile.of(template), "agent", "d50").reason
        != figure_value(p, "agent", "d50").reason
    )
