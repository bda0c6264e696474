"""The matrix's S is calibrated: over independent samplings of the reference agents, each
reference predictor's estimate centres on its true S and its 95% hierarchical-bootstrap interval
covers the truth about as often as it claims (``bench/bench_matrix_calibration.py`` prints the
same figures over more replications)."""

from __future__ import annotations

import statistics

from bench.bench_matrix_calibration import calibrate

REPLICATIONS = 60


def test_skill_estimates_centre_on_the_truth_and_their_intervals_cover_it() -> None:
    result = calibrate(replications=REPLICATIONS, item_sets=3, n_items=50, samples=8,
                       n_boot=500)
    for p, cal in result.items():
        assert len(cal.values) == REPLICATIONS and cal.no_interval == 0, p
        # 95% intervals: at least 85% of 60 (a true 95% coverage falls below 51/60 with
        # probability 0.07%)
        assert cal.coverage >= 0.85, (p, cal.coverage)
        # centred on the truth to well within one run's spread (the base, the larger of two
        # estimated baselines, pulls S of a predictor whose baselines are close a little down)
        sd = statistics.stdev(cal.values)
        assert abs(cal.bias) < 0.5 * sd, (p, cal.bias, sd)
    # projection's two baselines (its own answer, the population's mode) are close: the
    # plug-in's interval, whose base is the larger of two noisy estimates, covered its truth in
    # 87% of 400 runs; over both candidate bases it keeps at least its 95%
    assert result["mirror"].coverage >= 0.95
    seer = result["seer"]
    # the clairvoyant resamples the target: its true S is 1 (the leave-one-out ceiling puts it
    # a hair above), and its estimates fall on both sides of it
    assert abs(statistics.fmean(seer.truths) - 1.0) < 0.005
    above = sum(v > 1.0 for v in seer.values) / REPLICATIONS
    assert 0.25 < above < 0.75, above
    assert statistics.fmean(result["dice"].truths) < 0 < statistics.fmean(seer.truths)
