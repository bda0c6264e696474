"""Benchmark: report generation for a run of ~100,000 trials (goal: under 10 s on 2 cores),
or of ~1,000,000 (goal: under 30 s).

Builds a synthetic run (by default 10 agents x ~10,000 items: NestToM at every depth,
behaviour and judgment questions, level-k games and A/B/C scenarios) in a temporary SQLite
database, then times, side by side in one process:

- the baseline: loading the run's trials as ORM objects (``Store.trials``), and a raw
  ``SELECT`` of the same rows;
- ``reports.load_run`` (one query per table, into columns);
- the profile (``reports.analyse``: every statistic, B=2000 bootstrap replicates);
- every rendering: the figures, Markdown, HTML (figures embedded), JSON and CSV.

Usage::

    python bench/bench_reports.py                      # ~110,000 trials (--stories 560)
    python bench/bench_reports.py --trials 1000000     # ~1,000,000 trials (--stories 5242)
    python bench/bench_reports.py --trials 1000000 --cprofile report.prof

``--trials N`` picks the number of stories that gives about N trials with ``--agents``
agents; ``--stories`` sets it directly. The database is built once per run of the script,
one agent at a time with batched inserts (under a minute for 1,000,000 trials), and is not
part of the timings. The last lines give the process's peak resident memory (a 1,000,000-trial
run peaks near 3 GB, in the ORM baseline). ``--cprofile FILE`` also writes a cProfile of
the report steps (not of the baselines) after the timed run, for ``python -m pstats FILE``.
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

from ledger.db import open_engine
from ledger.models import TrialRow
from ledger.store import RunAgent, Store
from mindledger.canonical import canonical_json
from mindledger.items import Item
from reports._data import load_run
from reports._plots import figures
from reports.profile import analyse
from reports.render import render_csv, render_html, render_json, render_markdown
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_items, synthetic_run

BATCH = 50_000
"""Trials per INSERT batch while building the database."""


def _agents(n: int) -> list[SyntheticAgent]:
    base = [
        SyntheticAgent("agent", logistic_accuracy(2.7, -1.2, 0.25), spec={"adapter": "openai"}),
        SyntheticAgent("agent-control", logistic_accuracy(1.8, -1.2, 0.25), role="control",
                       base_agent="agent"),
        SyntheticAgent("agent-no-perspective", logistic_accuracy(2.1, -1.2, 0.25),
                       role="ablation", base_agent="agent",
                       spec={"ablated": "perspective-filtering"}),
        SyntheticAgent("agent-no-witness-log", logistic_accuracy(2.4, -1.2, 0.25),
                       role="ablation", base_agent="agent",
                       spec={"ablated": "witness-log"}),
        SyntheticAgent("oracle", lambda d: 1.0, tb_accuracy=1.0, role="reference",
                       spec={"policy": "oracle"}),
        SyntheticAgent("depth-capped:2", lambda d: 1.0 if d <= 2 else 0.0, tb_accuracy=1.0,
                       role="reference", spec={"policy": "depth-capped:2"}),
        SyntheticAgent("not-reality", lambda d: 0.9, tb_accuracy=0.05, role="reference",
                       spec={"policy": "not-reality"}),
        SyntheticAgent("reality-leak", lambda d: 0.02, leak_share=1.0, role="reference",
                       spec={"policy": "reality-leak"}),
        SyntheticAgent("random", lambda d: 0.25, tb_accuracy=0.25, role="reference",
                       spec={"policy": "random"}),
        SyntheticAgent("depth-capped:1", lambda d: 1.0 if d <= 1 else 0.0, tb_accuracy=1.0,
                       role="reference", spec={"policy": "depth-capped:1"}),
    ]
    return base[:n]


def _items(stories: int) -> list[Item]:
    return synthetic_items(stories=stories, games=4, abc_scenarios=20, items_per_game_cell=5)


def stories_for(trials: int, n_agents: int) -> int:
    """The number of stories whose run has about ``trials`` trials with ``n_agents`` agents."""
    fixed = len(_items(0))
    per_story = (len(_items(300)) - fixed) / 300
    return max(1, round((trials / max(n_agents, 1) - fixed) / per_story))


def build(db: Path, stories: int, n_agents: int) -> tuple[Store, str, int]:
    """A stored run of ``n_agents`` agents on ``stories`` stories (plus the game items). The
    trials are drawn and inserted one agent at a time, in batches of :data:`BATCH` rows, so
    that memory holds one agent's trials at most (the draws are those of one
    :func:`synthetic_run` over every agent: same generator, same order)."""
    rng = np.random.default_rng(7)
    items = _items(stories)
    agents = _agents(n_agents)
    store = Store(open_engine(f"sqlite:///{db}"))
    run_id = "bench"
    run_agents = [RunAgent(a.name, a.role, dict(a.spec) or {"adapter": "synthetic"},
                           a.base_agent) for a in agents]  # as synthetic_run names them
    store.create_run(run_id, suite="bench", seed=7, held_out=False, params={},
                     agents=run_agents, items=items)

    def js(v: object) -> str | None:
        return None if v is None else canonical_json(v).decode("utf-8")

    n = 0
    table = TrialRow.__table__  # type: ignore[attr-defined]
    with store.engine.begin() as conn:  # bulk insert: bench set-up only, not timed
        for agent in agents:
            trials = synthetic_run(rng, [agent], items).trials
            for start in range(0, len(trials), BATCH):
                conn.execute(table.insert(), [
                    {
                        "run_id": run_id, "agent": t.agent, "item_id": t.item_id,
                        "status": t.status, "answer_json": js(t.answer), "raw_text": None,
                        "transcript_json": "[]", "confidence": t.confidence,
                        "correct": t.correct, "score_value": t.score_value,
                        "primary_error": t.primary_error, "score_json": js(t.score),
                        "error": t.error, "turns": 1, "tokens_in": t.tokens_in,
                        "tokens_out": t.tokens_out, "latency_s": t.latency_s,
                        "provider_json": "{}", "created_at": "2026-01-01T00:00:00",
                    }
                    for t in trials[start:start + BATCH]
                ])
            n += len(trials)
            del trials
    return store, run_id, n


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux


def _report_steps(store: Store, run_id: str, tmp: Path, n_boot: int
                  ) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    """The report's steps in order, each a function of the results so far (by step name)."""
    return [
        ("load_run (columns)", lambda r: load_run(store, run_id)),
        ("profile (all statistics)",
         lambda r: analyse(r["load_run (columns)"], seed=0, n_boot=n_boot)),
        ("figures (4 SVGs)", lambda r: figures(r["profile (all statistics)"].profile)),
        ("markdown (+ figure files)",
         lambda r: render_markdown(r["profile (all statistics)"].profile,
                                   figures_dir=tmp / "figs", figures=r["figures (4 SVGs)"])),
        ("html (figures embedded)",
         lambda r: render_html(r["profile (all statistics)"].profile,
                               figures=r["figures (4 SVGs)"])),
        ("json", lambda r: render_json(r["profile (all statistics)"].profile)),
        ("csv (one row per trial)", lambda r: render_csv(r["load_run (columns)"])),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--stories", type=int, default=None,
                      help="stories in the run (default 560: ~110,000 trials with 10 agents)")
    size.add_argument("--trials", type=int, default=None,
                      help="about this many trials (picks --stories), e.g. 1000000")
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--goal", type=float, default=None,
                    help="seconds for the report total (default: 10 up to 500,000 trials, "
                    "30 above)")
    ap.add_argument("--cprofile", type=Path, default=None,
                    help="also write a cProfile of the report steps to this file")
    args = ap.parse_args(argv)
    stories = args.stories if args.stories is not None else (
        stories_for(args.trials, args.agents) if args.trials is not None else 560)
    # warm the imports the report needs, so that the timings are of the work, not of imports
    import statsmodels.genmod.generalized_linear_model  # noqa: F401

    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        t0 = time.perf_counter()
        store, run_id, n = build(tmp / "bench.db", stories, args.agents)
        print(f"set-up: {n:,} trials ({stories:,} stories), {args.agents} agents, built in "
              f"{time.perf_counter() - t0:.1f} s (not timed below); peak RSS so far "
              f"{_peak_rss_gb():.2f} GB", flush=True)

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            t, c = time.perf_counter(), time.process_time()
            out = fn()
            timings[name] = time.perf_counter() - t
            cpu[name] = time.process_time() - c
            return out

        # the list is dropped after the timing, as the report's results are
        timed("baseline: Store.trials (ORM objects)", lambda: store.trials(run_id))
        tr = TrialRow.__table__  # type: ignore[attr-defined]

        def raw() -> int:
            with store.engine.connect() as conn:
                return len(conn.execute(sa.select(tr).where(tr.c.run_id == run_id)).all())

        timed("baseline: raw SELECT of the trials", raw)
        steps = _report_steps(store, run_id, tmp, args.boot)
        results: dict[str, Any] = {}
        for name, step in steps:
            results[name] = timed(name, partial(step, results))
        results.clear()
        if args.cprofile is not None:
            prof = cProfile.Profile()
            for name, step in steps:
                results[name] = prof.runcall(step, results)
            prof.dump_stats(args.cprofile)
            results.clear()
        store.engine.dispose()

    total = sum(v for k, v in timings.items() if not k.startswith("baseline"))
    total_cpu = sum(v for k, v in cpu.items() if not k.startswith("baseline"))
    base = timings["baseline: Store.trials (ORM objects)"]
    width = max(len(k) for k in timings)
    print(f"\n{'step':<{width}}  {'wall s':>7}  {'cpu s':>7}  {'wall ÷ ORM load':>15}")
    for k, v in timings.items():
        print(f"{k:<{width}}  {v:7.2f}  {cpu[k]:7.2f}  {v / base:15.2f}")
    print(f"{'report total (load → every format)':<{width}}  {total:7.2f}  {total_cpu:7.2f}  "
          f"{total / base:15.2f}")
    print("(cpu s is this process's CPU time: on a shared machine it is steadier than wall "
          "time; numpy's BLAS may use a second core, so cpu can exceed wall)")
    print(f"peak RSS of the process: {_peak_rss_gb():.2f} GB")
    if args.cprofile is not None:
        print(f"cProfile of the report steps written to {args.cprofile}")
    goal = args.goal if args.goal is not None else (10.0 if n <= 500_000 else 30.0)
    verdict = "PASS" if total < goal else "FAIL"
    print(f"\n{verdict}: report generation for {n:,} trials took {total:.2f} s "
          f"(goal < {goal:g} s); {total / base:.1f}x the time to merely load the trials as ORM "
          "objects")


if __name__ == "__main__":
    main()
