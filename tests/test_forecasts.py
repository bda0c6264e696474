"""The self-forecast core (mindledger.forecasts): figure names, the two forms, their scores
against hand-computed values, and the naive forecast."""

from __future__ import annotations

import math

import pytest

from mindledger.errors import InputError
from mindledger.forecasts import (
    Bins,
    Quantiles,
    central_interval,
    figure,
    forecast_body,
    interval_score,
    median,
    naive_like,
    parse_forecast,
    skill,
)


def test_figure_names() -> None:
    assert figure("d50").base == "d50"
    f = figure("accuracy_at_depth:R3")
    assert (f.base, f.arg, f.change) == ("accuracy_at_depth", "R3", False)
    c = figure("change:ablation_credit:memory")
    assert (c.base, c.arg, c.change, c.level) == (
        "ablation_credit",
        "memory",
        True,
        "ablation_credit:memory",
    )
    for bad in (
        "",
        "accuracy",
        "d50:x",
        "accuracy_at_depth:R6",
        "change:change:d50",
        "ablation_credit:",
        "S:1",
        5,
    ):
        with pytest.raises(InputError, match="figure"):
            figure(bad)


def test_quantile_score_by_hand() -> None:
    q = Quantiles((0.25, 0.5, 0.75), (0.4, 0.5, 0.6))
    # y = 0.7: pinball 0.25*0.3 + 0.5*0.2 + 0.75*0.1 = 0.25; times 2/3
    assert q.loss(0.7) == pytest.approx(2 * 0.25 / 3)
    # y = 0.45: (0.25)(0.05) + (0.5-1)(-0.05) + (0.75-1)(-0.15) = 0.0125+0.025+0.0375
    assert q.loss(0.45) == pytest.approx(2 * 0.075 / 3)
    assert Quantiles((0.5,), (0.3,)).loss(0.3) == 0.0


def test_quantile_score_tends_to_crps_of_a_normal() -> None:
    # CRPS(N(0,1), y=0) = 2φ(0) - 1/√π = 0.2337...; dense levels approach it
    from statistics import NormalDist

    levels = tuple(i / 1000 for i in range(1, 1000))
    q = Quantiles(levels, tuple(NormalDist().inv_cdf(t) for t in levels))
    crps = 2 * NormalDist().pdf(0) - 1 / math.sqrt(math.pi)
    assert q.loss(0.0) == pytest.approx(crps, rel=0.01)


def test_bins_log_score_and_quantiles() -> None:
    b = Bins((0.0, 0.5, 0.8, 1.0), (0.2, 0.5, 0.3))
    assert b.loss(0.6) == pytest.approx(-math.log(0.5))
    assert b.loss(1.0) == pytest.approx(-math.log(0.3))  # the last bin is closed
    assert b.loss(1.5) == pytest.approx(-math.log(1e-4))  # outside: the floor
    assert b.quantile(0.2) == pytest.approx(0.5)
    assert b.quantile(0.45) == pytest.approx(0.65)
    assert median(b) == pytest.approx(0.68)  # 0.5 + (0.5-0.2)/0.5 * 0.3


def test_interval_and_coverage_reading() -> None:
    q = Quantiles((0.05, 0.25, 0.5, 0.75, 0.95), (0.1, 0.3, 0.4, 0.5, 0.7))
    assert central_interval(q, 0.5) == (0.3, 0.5)
    assert central_interval(q, 0.9) == pytest.approx((0.1, 0.7))
    assert central_interval(Quantiles((0.5,), (0.4,)), 0.9) is None
    assert interval_score(0.3, 0.5, 0.4, 0.5) == pytest.approx(0.2)
    assert interval_score(0.3, 0.5, 0.6, 0.5) == pytest.approx(0.2 + 4 * 0.1)


def test_parse_forecast_names_the_field() -> None:
    good = {"form": "quantiles", "levels": [0.1, 0.9], "values": [0.2, 0.3]}
    assert parse_forecast(good).to_json() == good
    cases = [
        ([], "forecast"),
        ({"form": "normal"}, "forecast.form"),
        ({"form": "quantiles", "levels": [0.1, 0.9], "values": [0.3]}, "forecast.values"),
        ({"form": "quantiles", "levels": [0.9, 0.1], "values": [0.3, 0.4]}, "forecast.levels"),
        ({"form": "quantiles", "levels": [0.1, 1.0], "values": [0.3, 0.4]}, "forecast.levels"),
        ({"form": "quantiles", "levels": [0.1, 0.9], "values": [0.4, 0.3]}, "forecast.values"),
        ({"form": "quantiles", "levels": [0.5], "values": [float("nan")]}, "forecast.values[0]"),
        ({"form": "quantiles", "levels": [0.5], "values": [True]}, "forecast.values[0]"),
        ({"form": "bins", "edges": [0, 1], "probs": [0.5]}, "forecast.probs"),
        ({"form": "bins", "edges": [0, 1, 1], "probs": [0.5, 0.5]}, "forecast.edges"),
        ({"form": "bins", "edges": [0, 1], "probs": [1], "x": 1}, "forecast"),
    ]
    for value, where in cases:
        with pytest.raises(InputError) as err:
            parse_forecast(value)
        assert err.value.where == where, (value, err.value)


def test_reason_is_one_short_line() -> None:
    q = Quantiles((0.5,), (0.4,))
    assert forecast_body(q, "solver fails on R4")["reason"] == "solver fails on R4"
    for bad in ("a\nb", "x" * 501):
        with pytest.raises(InputError, match="reason"):
            forecast_body(q, bad)


def test_naive_forecast_and_skill() -> None:
    q = Quantiles((0.05, 0.5, 0.95), (0.0, 0.0, 0.0))
    n = naive_like(q, 0.6, (0.5, 0.7))
    assert isinstance(n, Quantiles)
    assert n.values[1] == pytest.approx(0.6)
    assert n.values[2] - n.values[0] == pytest.approx(2 * 1.6449 * 0.1 / 1.96, rel=1e-3)
    point = naive_like(q, 0.6, None)
    assert isinstance(point, Quantiles)
    assert point.values == (0.6, 0.6, 0.6)
    b = naive_like(Bins((0.0, 0.5, 1.0), (0.5, 0.5)), 0.7, None)
    assert isinstance(b, Bins) and b.probs == (0.0, 1.0)
    # the naive forecast scored as itself has skill 0; a perfect one 1
    assert skill([0.2, 0.1], [0.2, 0.1]) == 0.0
    assert skill([0.0, 0.0], [0.2, 0.1]) == 1.0
    assert skill([], []) is None


def test_scores_are_proper_by_simulation() -> None:
    # the expected quantile score is lowest for the true quantiles: shifting or narrowing them
    # costs (a property of a proper score, checked on a sample)
    from statistics import NormalDist

    import numpy as np

    ys = [float(y) for y in np.random.default_rng(5).normal(0.5, 0.1, 4000)]
    levels = (0.05, 0.25, 0.5, 0.75, 0.95)

    def mean_loss(mu: float, sd: float) -> float:
        q = Quantiles(levels, tuple(NormalDist(mu, sd).inv_cdf(t) for t in levels))
        return sum(q.loss(y) for y in ys) / len(ys)

    best = mean_loss(0.5, 0.1)
    assert best < mean_loss(0.55, 0.1)
    assert best < mean_loss(0.5, 0.02)
    assert best < mean_loss(0.5, 0.3)
