"""Queue benchmark: a stored run executed by one `mindledger worker`, then the same run by two,
on PostgreSQL, when the endpoint is the bottleneck.

2,000 trials against the fake OpenAI server in a separate process answering after a fixed
50 ms (the response cache off, so every trial asks it); each worker runs one batch at a time
with 4 requests in flight, so one worker is endpoint-bound (ideal: requests × latency ÷ 4) and
a second one should halve the wall time. Each phase stores a run of its own, queues it in batches (`enqueue_run`) and starts
`mindledger worker --once` processes, timed from their start until the last has exited (their
start-up included). Prints both wall times beside their ideal and the ratio two ÷ one (the
goal is ≤ 0.6).

Needs a PostgreSQL server: ``--pg URL`` or ``MINDLEDGER_TEST_PG_URL``; the benchmark creates a
database of its own there and drops it afterwards.

    python bench/bench_queue.py                      # 2,000 trials
    python bench/bench_queue.py --trials 500         # quicker
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import sqlalchemy as sa

import games
from harness.config.settings import load_settings
from harness.queue.batches import enqueue_run
from harness.testing import FakeOpenAIProcess
from ledger.db import normalise_url, open_engine
from ledger.store import RunAgent, Store


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """A fresh database on the server (procrastinate's schema goes in its default schema),
    dropped afterwards."""
    name = "mlbench_" + uuid.uuid4().hex[:10]
    admin = sa.create_engine(normalise_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(server_url).set(database=name).render_as_string(
            hide_password=False
        )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def run_workers(url: str, home: Path, n: int) -> tuple[float, list[str]]:
    """Start ``n`` `mindledger worker --once` processes; wall time until all have exited, and
    their logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(home)
    env["MINDLEDGER_CACHE"] = "false"  # every trial asks the endpoint (the items repeat prompts)
    cmd = [sys.executable, "-m", "harness.cli.main", "--db", url, "worker", "--once"]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([*cmd, "--name", f"bench-{i}"], env=env, cwd=home,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for i in range(n)
    ]  # fmt: skip
    logs = [p.communicate(timeout=600)[1] for p in procs]
    wall = time.perf_counter() - t0
    for p, log in zip(procs, logs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"worker failed ({p.returncode}):\n{log}")
    return wall, logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight a worker")
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--pg", default=os.environ.get("MINDLEDGER_TEST_PG_URL", ""))
    args = parser.parse_args()
    if not args.pg:
        raise SystemExit("needs PostgreSQL: pass --pg URL or set MINDLEDGER_TEST_PG_URL")
    n, lat, conc = args.trials, args.latency, args.concurrency

    # 11–20 items all take an integer from 50 to 70; the fake server answers 60 to every one
    items = games.generate_items(2026, n, games=("11-20",), conditions=("recursive",))
    server = FakeOpenAIProcess(latency=lat, answer="60")
    server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp, scratch_database(args.pg) as url:
            home = Path(tmp)
            settings = replace(load_settings(None, env={}, flags={"db_url": url}), home=home)
            store = Store(open_engine(url))
            spec = {"adapter": "openai", "endpoint": server.base_url, "model": "bench",
                    "concurrency": conc, "answer_mode": "tools"}  # fmt: skip
            walls: dict[int, float] = {}
            requests: dict[int, int] = {}
            for workers in (1, 2):
                run_id = f"bench-{workers}"
                store.create_run(run_id, suite="bench", seed=0, held_out=False, params={},
                                 agents=[RunAgent("fake", "agent", spec)], items=items)  # fmt: skip
                queued = enqueue_run(store, settings, run_id, batch_size=args.batch_size)
                server.reset()
                walls[workers], logs = run_workers(url, home, workers)
                requests[workers] = int(server.stats()["requests"])
                stored = len(store.done_pairs(run_id))
                status = store.get_run(run_id).status
                if stored != n or status != "complete":
                    raise SystemExit(
                        f"{workers} worker(s): stored {stored}/{n} trials, run {status}\n"
                        + "\n".join(logs)
                    )
                per_worker = [log.count(" trial(s) in ") for log in logs]
                print(f"{workers} worker(s): {queued.deferred} batches, executed "
                      f"{' + '.join(map(str, per_worker))}")  # fmt: skip
            store.engine.dispose()
    finally:
        server.stop()

    print(f"{n} trials, {lat * 1000:.0f} ms latency, {conc} in flight a worker, "
          f"batches of {args.batch_size}; ideal = requests × latency ÷ in flight")  # fmt: skip
    print(f"{'':12} {'requests':>9} {'wall':>8} {'ideal':>8} {'÷ ideal':>8}")
    for workers, wall in walls.items():
        ideal = requests[workers] * lat / (conc * workers)
        print(f"{workers} worker(s) {requests[workers]:9d} {wall:7.2f}s {ideal:7.2f}s "
              f"{wall / ideal:7.2f}×")  # fmt: skip
    ratio = walls[2] / walls[1]
    print(f"two workers ÷ one: {ratio:.2f}× wall (goal ≤ 0.60; the physical limit is 0.50)")


if __name__ == "__main__":
    main()
