"""The reference self-forecasters (reports.self_forecasters) and the synthetic agent's
expected false-belief accuracy with its spread."""

from __future__ import annotations

import numpy as np
import pytest

from mindledger.forecasts import central_interval, median, naive_like
from reports.self_forecasters import LEVELS, naive, oracle, overconfident
from reports.synthetic import SyntheticAgent, false_belief_spread, suite_design, synthetic_run


def test_naive_is_the_naive_forecast_itself() -> None:
    f = naive(0.6, (0.55, 0.65))
    assert f == naive_like(f, 0.6, (0.55, 0.65), 0.95)
    assert f.loss(0.7) == naive_like(f, 0.6, (0.55, 0.65)).loss(0.7)


def test_oracle_and_overconfident_shapes() -> None:
    o = oracle(0.7, 0.02)
    assert o.levels == LEVELS
    assert median(o) == pytest.approx(0.7)
    lo, hi = central_interval(o, 0.9) or (0, 0)
    assert hi - lo == pytest.approx(2 * 1.6449 * 0.02, rel=1e-3)
    oc = overconfident(0.7)
    assert median(oc) == pytest.approx(0.85)
    lo, hi = central_interval(oc, 0.9) or (0, 0)
    assert hi - lo < 0.02


def test_false_belief_spread_matches_draws() -> None:
    # the expected value and sd of the headline false-belief accuracy, against 300 draws of it
    items = suite_design("baseline")
    agent = SyntheticAgent("a", fb_accuracy=lambda d: 0.9 - 0.1 * d, confidence_noise=None)
    mean, sd = false_belief_spread(agent, items)
    counted = {
        it.id
        for it in items
        if it.family == "nesttom"
        and it.meta["question"] == "belief"
        and it.meta.get("selection") != "companion"
        and it.meta.get("block") == "B1"
        and it.meta["belief"] == "false"
        and it.meta["depth_n"] >= 1
    }
    rng = np.random.default_rng(3)
    draws: list[float] = []
    for _ in range(200):
        run = synthetic_run(rng, [agent], items)
        draws.append(float(np.mean([bool(t.correct) for t in run.trials if t.item_id in counted])))
    assert np.mean(draws) == pytest.approx(mean, abs=3 * sd / np.sqrt(200))
    assert np.std(draws) == pytest.approx(sd, rel=0.2)
