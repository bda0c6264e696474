"""Benchmark: do the profile's intervals keep their promise at the sizes we ship?

Simulates runs of the ``quick`` and ``baseline`` suites' designs (``reports.synthetic.
suite_design``) with synthetic agents whose D50s, agent − control differences and ablation
effects are known, profiles every run exactly as ``mindledger report`` does, and prints, per
design:

- each figure's 95% interval **coverage** of the value it estimates (goal 93–97%), with the
  Monte Carlo interval of that coverage, the share of runs in which the figure had an interval
  at all (the rest were reported "not estimable"), and the mean interval width;
- the **family-wise false-positive rate**: the share of *null* runs (agent, control and
  ablation are one agent with independent randomness) in which any contrast came out
  significant after Holm (goal <= 5%), beside the per-test rate before correction.

Each seed is one effect run and one null run, so ``--seeds 1000`` is 2,000 simulated runs per
design. Takes minutes (about 0.3 s a baseline run on one core).

Usage: ``python bench/bench_stats.py [--seeds 1000] [--boot 1000] [--designs quick baseline]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time

from reports.simulation import run_study


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--designs", nargs="+", default=["quick", "baseline"])
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = ap.parse_args()
    today = dt.datetime.now(dt.UTC).date().isoformat()
    results = []
    for design in args.designs:
        t0 = time.perf_counter()

        def progress(k: int, design: str = design, t0: float = t0) -> None:
            if k % 50 == 0 or k == args.seeds:
                rate = (time.perf_counter() - t0) / k
                print(f"  {design}: {k}/{args.seeds} seeds ({rate:.2f} s/seed)",
                      file=sys.stderr, flush=True)

        res = run_study(design, range(args.seeds), n_boot=args.boot, progress=progress)
        results.append((res, time.perf_counter() - t0))
    for res, took in results:
        runs = 2 * res.seeds
        print(f"\n## {res.design}: {res.seeds} seeds x (effect run + null run) = {runs} "
              f"simulated runs, B={res.n_boot}, {today}, {took:.0f} s\n")
        head = ["figure", "has interval", "coverage", "MC 95%", "mean width", "true value"]
        rows = []
        for r in res.rows():
            mc = r.coverage_mc_interval
            rows.append([
                r.figure,
                f"{r.estimable}/{r.runs}",
                _pct(r.coverage) if r.estimable else "not estimable",
                "—" if mc is None else f"{100 * mc[0]:.1f}–{100 * mc[1]:.1f}",
                "—" if r.mean_width is None else f"{r.mean_width:.3f}",
                f"{r.truth:.3f}",
            ])
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
        if args.markdown:
            print("| " + " | ".join(head) + " |")
            print("|" + "|".join("---" for _ in head) + "|")
            for row in rows:
                print("| " + " | ".join(row) + " |")
        else:
            print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
            for row in rows:
                print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        m = sorted(set(res.null_m))
        raw = res.null_raw_significant / res.null_tests if res.null_tests else None
        verdict = "PASS" if res.fwer <= 0.05 else "FAIL"
        print(f"\nnull runs (agent = control = ablation, independent randomness): "
              f"{res.null_any_significant}/{res.null_runs} with any contrast significant after "
              f"Holm = {_pct(res.fwer)} family-wise (goal <= 5%: {verdict}); per test before "
              f"correction {_pct(raw)} of {res.null_tests} tests; family size m = "
              f"{', '.join(map(str, m))}")
        cov = [r.coverage for r in res.rows() if r.coverage is not None]
        inside = sum(0.93 <= c <= 0.97 for c in cov)
        print(f"coverage in 93–97%: {inside}/{len(cov)} figures with an interval; "
              f"{sum(1 for r in res.rows() if not r.estimable)} reported not estimable in "
              "every run")


if __name__ == "__main__":
    main()
