"""The regression rule's false-alarm rate and its power, on the synthetic agents.

For each seed, ``--runs`` runs of the simulation study's agents (:func:`reports.simulation.
study_agents`: an agent under test, its control and an ablation, each an unchanged agent over
the runs) are drawn on fresh items of a suite's design and profiled; the history of each agent
is tested with :data:`reports.history.DEFAULT_RULE`. Printed side by side, in one run:

- **false alarms**: the share of tested runs of an unchanged agent with any figure flagged
  (the rule's bound is ``alpha``), and the share of whole histories with any flagged run;
- **detection**: the same histories with the agent under test's D50 dropped from 2.7 to
  ``--drop-to`` (and its true-belief accuracy unchanged) from run ``--drop-at`` on: the share
  of histories flagged at that run.

    python bench/bench_history.py --suite quick --seeds 100
    python bench/bench_history.py --suite baseline --seeds 40
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from reports.history import DEFAULT_RULE, history_of
from reports.profile import profile_from_data
from reports.simulation import CHANCE, SLOPE, study_agents
from reports.synthetic import logistic_accuracy, simulate, suite_design


def _profiles(seed: int, suite: str, runs: int, n_boot: int, drop_at: int | None,
              drop_to: float) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    agents = study_agents()
    dropped = [replace(agents[0], fb_accuracy=logistic_accuracy(drop_to, SLOPE, CHANCE),
                       d50=drop_to), *agents[1:]]
    out = []
    for i in range(runs):
        items = suite_design(suite)
        cast = dropped if drop_at is not None and i + 1 >= drop_at else agents
        data = simulate(rng, cast, items, run_id=f"run-{seed}-{i + 1:02d}")
        profile = profile_from_data(data, seed=seed, n_boot=n_boot).to_json()
        profile["run"]["suite"] = suite
        profile["run"]["created_at"] = f"2026-01-{i + 1:02d}T03:00:00+00:00"
        out.append(profile)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="quick", help="design of the runs (quick, baseline)")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--drop-at", type=int, default=8)
    ap.add_argument("--drop-to", type=float, default=1.5, help="D50 after the drop (from 2.7)")
    ap.add_argument("--alpha", type=float, default=DEFAULT_RULE.alpha)
    args = ap.parse_args()
    rule = replace(DEFAULT_RULE, alpha=args.alpha)
    t0 = time.perf_counter()
    tested_runs = flagged_runs = histories = flagged_histories = 0
    by_metric: dict[str, int] = {}
    detected = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        profiles = _profiles(seed, args.suite, args.runs, args.n_boot, None, args.drop_to)
        for agent in profiles[0]["agents"]:  # type: ignore[attr-defined]
            h = history_of(agent, profiles, rule=rule)
            histories += 1
            any_flag = False
            for run in h.runs:
                points = [m.points[h.runs.index(run)] for m in h.metrics]
                if any(p.tested for p in points):
                    tested_runs += 1
                    if any(p.flagged for p in points):
                        flagged_runs += 1
                        any_flag = True
                        for m in h.metrics:
                            if m.points[h.runs.index(run)].flagged:
                                by_metric[m.key] = by_metric.get(m.key, 0) + 1
            flagged_histories += any_flag
        drop = _profiles(seed, args.suite, args.runs, args.n_boot, args.drop_at, args.drop_to)
        h = history_of("agent", drop, rule=rule)
        at = h.runs[args.drop_at - 1].id
        detected += bool(h.regressions(at))
    elapsed = time.perf_counter() - t0
    print(f"rule: {rule.describe()}")
    print(f"suite {args.suite}: {args.seeds} seeds x {args.runs} runs, "
          f"{histories} unchanged-agent histories ({elapsed:.0f} s)")
    print(f"false alarms: {flagged_runs}/{tested_runs} tested runs flagged "
          f"({flagged_runs / max(tested_runs, 1):.4f}; bound alpha = {rule.alpha:g}); "
          f"{flagged_histories}/{histories} histories with any flag "
          f"({flagged_histories / max(histories, 1):.4f})"
          + (f"; by figure {by_metric}" if by_metric else ""))
    print(f"detection: D50 2.7 -> {args.drop_to} at run {args.drop_at}: flagged at that run in "
          f"{detected}/{args.seeds} histories ({detected / max(args.seeds, 1):.3f})")


if __name__ == "__main__":
    main()
