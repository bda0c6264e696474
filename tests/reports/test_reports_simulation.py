"""A small run of the simulation study (``bench/bench_stats.py`` runs it at scale): on the shipped
suites' designs, the profile's intervals cover what they estimate, small-n figures say they are
not estimable, and identical agents do not come out different."""

from __future__ import annotations

import numpy as np
import pytest

from reports.simulation import AGENT_FIGURES, CONTRASTS, run_study

SEEDS = range(20)


@pytest.fixture(scope="module")
def baseline():  # type: ignore[no-untyped-def]
    return run_study("baseline", SEEDS, n_boot=200)


def test_baseline_intervals_cover_what_they_estimate(baseline) -> None:  # type: ignore[no-untyped-def]
    rows = baseline.rows()
    assert len(rows) == len(AGENT_FIGURES) + len(CONTRASTS)
    for r in rows:
        # every figure of the baseline suite has its interval in every run ...
        assert r.estimable == r.runs == len(SEEDS), r.figure
        # ... and, over 20 runs, covers its true value in at least 16 (a 95% interval misses
        # more than 4 of 20 with probability 0.3%)
        assert r.coverage is not None and r.coverage >= 0.8, (r.figure, r.coverage)
    pooled = np.mean([r.coverage for r in rows])
    assert 0.92 <= pooled <= 0.99, pooled


def test_baseline_identical_agents_do_not_differ(baseline) -> None:  # type: ignore[no-untyped-def]
    assert baseline.null_runs == len(SEEDS)
    assert baseline.null_any_significant <= 1  # family-wise, after Holm
    assert baseline.null_tests > 20 * len(SEEDS)  # the family is not empty: tests were run
    assert baseline.null_raw_significant / baseline.null_tests <= 0.06


def test_quick_claims_nothing_its_size_cannot_carry() -> None:
    quick = run_study("quick", range(10), n_boot=100)
    assert all(r.estimable == 0 and r.coverage is None for r in quick.rows())  # n <= 7 everywhere: no intervals
    assert quick.null_any_significant == 0 and quick.null_tests == 0
