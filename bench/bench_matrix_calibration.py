"""Calibration of the matrix's skill S: over many independent samplings of the same reference
agents, how often does each reference predictor's 95% interval cover its true S, how far do the
estimates scatter, and where do they land against the issue's bands?

Issue 14's acceptance reads "clairvoyant S in [0.9, 1.0], projection S within ±0.1 of 0, random
S ≤ 0 (upper end of its interval ≤ 0.1), each with an interval that covers the truth". One run
shows one draw of each estimate; this shows their distribution. The agents are the reference
test's (``tests/harness/matrix/test_matrix_reference.py``): a ``habit`` target and the ``clairvoyant``,
``projection`` and ``random`` predictors, with the reference agents' real answer distributions
(:func:`harness.matrix.runs.answer_distribution`) on real matrix items
(:func:`harness.matrix.runs.make_items`). Each replication draws what a matrix run draws — every
agent's K answers per item (its target samples, shared by every cell, and the population of the
others' cells), every agent's own answer (the projection baseline) and the clairvoyant's top-1
guesses — builds each cell's records as the matrix's summary does, and computes S with its
hierarchical-bootstrap interval by :func:`reports.matrix.cell_statistics`, the summary's own
statistics. The true S is :func:`harness.testing.matrix_truth.true_skill` (exact expectations on
the same items; the population's mode by simulation).

Per predictor it prints the true S (mean over the item sets), the estimates' mean, standard
deviation and bias, the coverage of the truth with its Wilson interval (goal: 95%), and the share
of estimates in each band of the acceptance criterion.

The clairvoyant's true S is 1 by construction, up to the leave-one-out ceiling's K − 1: its
guess is a draw from the target's distribution, which is "the target predicting itself by
resampling", seed 002 §15.2's definition of S = 1. An estimate of a quantity whose truth is 1
lands above 1 about as often as below, so "in [0.9, 1.0]" holds for about half the runs, and
no honest estimator can make it hold for all of them.

Usage: ``python bench/bench_matrix_calibration.py [--replications 200] [--item-sets 4]
[--items 50] [--samples 8] [--boot 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.agent.agents import ReferenceAgent
from harness.matrix.runs import answer_distribution, make_items
from harness.testing.matrix_truth import true_skill
from ledger.scoring import default_top1
from mindledger.items import Item
from reports._stats import wilson_interval
from reports.matrix import ItemRecord, cell_statistics

__all__ = ["AGENTS", "BANDS", "Calibration", "calibrate", "main", "replicate"]

AGENTS: Mapping[str, str] = {
    "habit": "habit",
    "seer": "clairvoyant",
    "mirror": "projection",
    "dice": "random",
}
"""The reference test's agents, name → policy."""

TARGET = "habit"
PREDICTORS = ("seer", "mirror", "dice")

BANDS: Mapping[str, Sequence[tuple[str, float, float]]] = {
    "seer": (("S in [0.9, 1.0]", 0.9, 1.0), ("S in [0.9, 1.1]", 0.9, 1.1)),
    "mirror": (("S in [-0.1, 0.1]", -0.1, 0.1),),
    "dice": (("S <= 0", -np.inf, 0.0),),
}
"""The acceptance criterion's bands for each predictor's point estimate."""


def agents(seed: int = 5) -> dict[str, ReferenceAgent]:
    return {n: ReferenceAgent(n, policy, seed=seed) for n, policy in AGENTS.items()}


def _draw(rng: np.random.Generator, dist: Mapping[str, float], size: int) -> list[str]:
    choices = sorted(dist)
    picks = rng.choice(len(choices), size=size, p=[dist[c] for c in choices])
    return [choices[int(i)] for i in picks]


def replicate(
    items: Sequence[Item], team: Mapping[str, ReferenceAgent], samples: int,
    rng: np.random.Generator,
) -> dict[str, list[ItemRecord]]:
    """One matrix run's draws on ``items``: each predictor's records about the target."""
    out: dict[str, list[ItemRecord]] = {p: [] for p in PREDICTORS}
    for item in items:
        laws = {n: answer_distribution(a, item) for n, a in team.items()}
        answers = {n: _draw(rng, laws[n], samples) for n in team}
        own = {n: _draw(rng, laws[n], 1)[0] for n in team}
        population = tuple(a for n in team if n != TARGET for a in answers[n])
        observed = tuple(answers[TARGET])
        choices = sorted(laws[TARGET])
        uniform = dict.fromkeys(choices, 1.0 / len(choices))
        for p in PREDICTORS:
            policy = team[p].policy
            if policy == "clairvoyant":
                dist, top1 = laws[TARGET], _draw(rng, laws[TARGET], 1)[0]
            elif policy == "projection":
                dist, top1 = laws[p], default_top1(laws[p])
            else:
                dist, top1 = uniform, default_top1(uniform)
            out[p].append(ItemRecord(item.id, observed, dist, top1, own[p], population))
    return out


@dataclass
class Calibration:
    """One predictor's estimates over the replications, with the truth of each."""

    predictor: str
    values: list[float] = field(default_factory=list)
    truths: list[float] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    no_interval: int = 0

    @property
    def coverage(self) -> float:
        """The share of the intervals given that cover the truth (a run without an interval
        claims nothing)."""
        return sum(self.covered) / max(len(self.covered), 1)

    def share(self, lo: float, hi: float) -> float:
        return sum(lo <= v <= hi for v in self.values) / len(self.values)

    @property
    def bias(self) -> float:
        return statistics.fmean(v - t for v, t in zip(self.values, self.truths, strict=True))


def calibrate(
    *, replications: int, item_sets: int, n_items: int, samples: int, n_boot: int,
    seed: int = 0,
) -> dict[str, Calibration]:
    """``replications`` independent runs, spread over ``item_sets`` item sets (each with its
    own truth), every run's statistics with its own seeded generator."""
    team = agents()
    result = {p: Calibration(p) for p in PREDICTORS}
    sets = [make_items(1000 + i, n_items) for i in range(item_sets)]
    set_truths = [{p: true_skill(items, team, p, TARGET, samples=samples) for p in PREDICTORS}
                  for items in sets]
    for r in range(replications):
        items, truths = sets[r % item_sets], set_truths[r % item_sets]
        records = replicate(items, team, samples, np.random.default_rng([seed, r]))
        for p in PREDICTORS:
            stats = cell_statistics(records[p], np.random.default_rng([seed, r, 1]),
                                    n_boot=n_boot)
            cal, s = result[p], stats.skill
            if s.value is None:
                raise RuntimeError(f"replication {r}: {p}'s S is not estimable: {s.reason}")
            cal.values.append(s.value)
            cal.truths.append(truths[p])
            if s.lo is None or s.hi is None:
                cal.no_interval += 1
                continue
            cal.covered.append(s.lo <= truths[p] <= s.hi)
            cal.upper.append(s.hi)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replications", type=int, default=200)
    ap.add_argument("--item-sets", type=int, default=4)
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    result = calibrate(replications=args.replications, item_sets=args.item_sets,
                       n_items=args.items, samples=args.samples, n_boot=args.boot)
    took = time.perf_counter() - t0
    print(f"{args.replications} replications over {args.item_sets} item sets of {args.items} "
          f"items, K = {args.samples}, {args.boot} bootstrap replicates ({took:.1f} s)")
    for p, cal in result.items():
        if not cal.covered:
            print(f"\n{p}: no run gave S an interval ({cal.no_interval} runs; mean S "
                  f"{statistics.fmean(cal.values):+.4f}, true {statistics.fmean(cal.truths):+.4f})")
            continue
        lo, hi = wilson_interval(sum(cal.covered), len(cal.covered))
        print(f"\n{p} ({AGENTS[p]} → {TARGET}): true S {statistics.fmean(cal.truths):+.4f}; "
              f"estimates mean {statistics.fmean(cal.values):+.4f}, sd "
              f"{statistics.stdev(cal.values):.4f}, bias {cal.bias:+.4f}")
        print(f"  95% interval covers the truth: {cal.coverage:.1%} "
              f"[{lo:.1%}, {hi:.1%}] of {len(cal.covered)} (goal 95%; "
              f"{cal.no_interval} runs without an interval)")
        for label, b_lo, b_hi in BANDS[p]:
            print(f"  {label}: {cal.share(b_lo, b_hi):.1%} of runs")
        if p == "dice":
            ok = sum(u <= 0.1 for u in cal.upper) / max(len(cal.upper), 1)
            print(f"  upper end of the interval <= 0.1: {ok:.1%} of runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
