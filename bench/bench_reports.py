"""Benchmark: report generation for a run of ~100,000 trials (goal: under 10 s on 2 cores).

Builds a synthetic run (10 agents x ~10,000 items: NestToM at every depth, behaviour and
judgment questions, level-k games and A/B/C scenarios) in a temporary SQLite database, then
times, side by side in one process:

- the baseline: loading the run's trials as ORM objects (``Store.trials``), and a raw
  ``SELECT`` of the same rows;
- ``reports.load_run`` (one query per table, into columns);
- the profile (``reports.analyse``: every statistic, B=2000 bootstrap replicates);
- every rendering: the figures, Markdown, HTML (figures embedded), JSON and CSV.

Usage: ``python bench/bench_reports.py [--stories 560] [--agents 10] [--boot 2000]``.
The database is built once per run of the script and is not part of the timings.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from ledger.db import open_engine
from ledger.models import TrialRow
from ledger.store import Store
from mindledger.canonical import canonical_json
from reports.data import load_run
from reports.plots import figures
from reports.profile import analyse
from reports.render import render_csv, render_html, render_json, render_markdown
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_items, synthetic_run


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


def build(db: Path, stories: int, n_agents: int) -> tuple[Store, str, int]:
    rng = np.random.default_rng(7)
    items = synthetic_items(stories=stories, games=4, abc_scenarios=20, items_per_game_cell=5)
    run = synthetic_run(rng, _agents(n_agents), items)
    store = Store(open_engine(f"sqlite:///{db}"))
    run_id = "bench-100k"
    store.create_run(run_id, suite="bench", seed=7, held_out=False, params={},
                     agents=run.agents, items=run.items)

    def js(v: object) -> str | None:
        return None if v is None else canonical_json(v).decode("utf-8")

    rows = [
        {
            "run_id": run_id, "agent": t.agent, "item_id": t.item_id, "status": t.status,
            "answer_json": js(t.answer), "raw_text": None, "transcript_json": "[]",
            "confidence": t.confidence, "correct": t.correct, "score_value": t.score_value,
            "primary_error": t.primary_error, "score_json": js(t.score), "error": t.error,
            "turns": 1, "tokens_in": t.tokens_in, "tokens_out": t.tokens_out,
            "latency_s": t.latency_s, "provider_json": "{}", "created_at": "2026-01-01T00:00:00",
        }
        for t in run.trials
    ]
    with store.engine.begin() as conn:  # bulk insert: bench set-up only, not timed
        conn.execute(sa.insert(TrialRow.__table__), rows)  # type: ignore[attr-defined]
    return store, run_id, len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=560)
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--boot", type=int, default=2000)
    args = ap.parse_args()
    # warm the imports the report needs, so that the timings are of the work, not of imports
    import statsmodels.genmod.generalized_linear_model  # noqa: F401
    from matplotlib.figure import Figure  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        store, run_id, n = build(Path(tmp) / "bench.db", args.stories, args.agents)
        print(f"set-up: {n:,} trials, {args.agents} agents, built in "
              f"{time.perf_counter() - t0:.1f} s (not timed below)")

        timings: dict[str, float] = {}
        cpu: dict[str, float] = {}

        def timed(name: str, fn):  # type: ignore[no-untyped-def]
            t, c = time.perf_counter(), time.process_time()
            out = fn()
            timings[name] = time.perf_counter() - t
            cpu[name] = time.process_time() - c
            return out

        timed("baseline: Store.trials (ORM objects)", lambda: store.trials(run_id))
        tr = TrialRow.__table__  # type: ignore[attr-defined]

        def raw() -> int:
            with store.engine.connect() as conn:
                return len(conn.execute(sa.select(tr).where(tr.c.run_id == run_id)).all())

        timed("baseline: raw SELECT of the trials", raw)
        data = timed("load_run (columns)", lambda: load_run(store, run_id))
        an = timed("profile (all statistics)", lambda: analyse(data, seed=0, n_boot=args.boot))
        figs = timed("figures (5 PNGs)", lambda: figures(an.profile))
        timed("markdown (+ figure files)",
              lambda: render_markdown(an.profile, figures_dir=Path(tmp) / "figs",
                                      figures=figs))
        timed("html (figures embedded)", lambda: render_html(an.profile, figures=figs))
        timed("json", lambda: render_json(an.profile))
        timed("csv (one row per trial)", lambda: render_csv(data))

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
    verdict = "PASS" if total < 10 else "FAIL"
    print(f"\n{verdict}: report generation for {n:,} trials took {total:.2f} s "
          f"(goal < 10 s); {total / base:.1f}x the time to merely load the trials as ORM objects")


if __name__ == "__main__":
    main()
