"""Runner benchmark: 2,000 trials through the whole runner (agent, answer protocol, scoring,
storage: one SQLite transaction per trial) against the fake OpenAI server in a separate process
answering after a fixed 50 ms, 64 in flight.

Prints wall time ÷ ideal (ideal = trials × latency ÷ concurrency) and the runner's own CPU time
per trial, side by side with the same number of bare HTTP calls through the adapter (the floor
the runner stands on), measured in one run.

    python bench/bench_runner.py                 # 2,000 trials
    python bench/bench_runner.py --trials 500    # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import games
from harness.adapters import OpenAIChat
from harness.agents import ChatAgent
from harness.backends import OpenAIBackend
from harness.runner import execute_run
from harness.testing import FakeOpenAIProcess
from ledger.db import open_engine
from ledger.store import RunAgent, Store


async def bare_calls(base_url: str, n: int, concurrency: int) -> None:
    async with OpenAIChat(base_url, "bench", concurrency=concurrency) as client:
        msgs = [{"role": "user", "content": "Pick a number."}]
        await asyncio.gather(*(client.chat(msgs) for _ in range(n)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    n, lat, conc = args.trials, args.latency, args.concurrency
    ideal = n * lat / conc

    # 11–20 items all take an integer from 50 to 70; the fake server answers 60 to every one.
    items = games.generate_items(2026, n, games=("11-20",), conditions=("recursive",))
    server = FakeOpenAIProcess(latency=lat, answer="60")
    server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(open_engine(f"sqlite:///{Path(tmp) / 'bench.db'}"))
            store.create_run("bench", suite="bench", seed=0, held_out=False, params={},
                             agents=[RunAgent("fake", "agent", {"adapter": "openai"})], items=items)

            c0, t0 = time.process_time(), time.perf_counter()
            asyncio.run(bare_calls(server.base_url, n, conc))
            bare_wall, bare_cpu = time.perf_counter() - t0, time.process_time() - c0

            async def run() -> None:
                backend = OpenAIBackend(server.base_url, "bench", concurrency=conc)
                agent = ChatAgent("fake", backend, spec={}, answer_mode="tools")
                try:
                    await execute_run(store, "bench", [agent], items, concurrency={"fake": conc})
                finally:
                    await agent.aclose()

            c0, t0 = time.process_time(), time.perf_counter()
            asyncio.run(run())
            run_wall, run_cpu = time.perf_counter() - t0, time.process_time() - c0
            trials = store.trials("bench")
            stored = len(trials)
            correct = sum(bool(t.correct) for t in trials)
    finally:
        server.stop()

    print(f"{n} trials, {lat * 1000:.0f} ms latency, {conc} in flight: ideal {ideal:.2f} s")
    print(f"{'':34} {'wall':>8} {'÷ ideal':>8} {'CPU/trial':>10}")
    print(f"{'bare HTTP calls (OpenAIChat)':34} {bare_wall:7.2f}s {bare_wall / ideal:7.2f}× "
          f"{bare_cpu / n * 1000:8.2f}ms")
    print(f"{'runner (agent+score+store)':34} {run_wall:7.2f}s {run_wall / ideal:7.2f}× "
          f"{run_cpu / n * 1000:8.2f}ms")
    print(f"runner ÷ bare HTTP: {run_wall / bare_wall:.2f}× wall, "
          f"{run_cpu / max(bare_cpu, 1e-9):.2f}× CPU; stored {stored}/{n} trials "
          f"({correct} scored correct)")
    if stored != n:
        raise SystemExit(f"lost trials: stored {stored} of {n}")


if __name__ == "__main__":
    main()
