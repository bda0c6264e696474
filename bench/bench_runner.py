"""Runner benchmark: trials through the whole runner (agent, answer protocol, scoring, storage
with group commit) against the fake OpenAI server in a separate process answering after a
fixed 50 ms; and the memory a long run takes.

1. 2,000 trials, 64 in flight; 2. at scale, 10,000 trials, 256 in flight. Each prints wall
time ÷ ideal (ideal = trials × latency ÷ concurrency) and the runner's own CPU time per trial
(process CPU time ÷ trials), side by side with the same number of bare HTTP calls through the
adapter (the floor the runner stands on), measured in one run.

3. Memory: a 100,000-item run (11–20 game items, generated a slice at a time) is created, then
executed by the oracle reference agent, each phase in a fresh child process; prints each
phase's peak resident set size (VmHWM).

    python bench/bench_runner.py                 # all three (a few minutes)
    python bench/bench_runner.py --trials 500 --scale-trials 2000 --memory-items 10000  # quick
    python bench/bench_runner.py --scale-trials 0 --memory-items 0   # the first scenario only
    python bench/bench_runner.py --trials 0 --scale-trials 0          # memory only
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import games
from harness.adapters import OpenAIBackend, OpenAIChat
from harness.agents import ChatAgent, ReferenceAgent
from harness.runner import execute_run
from harness.testing import FakeOpenAIProcess
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item


async def bare_calls(base_url: str, n: int, concurrency: int) -> None:
    """``n`` chat calls through the adapter, made as the runner makes its trials: by
    ``concurrency`` workers, each taking the next call when its last one is done (not ``n``
    calls queued at once on the adapter's semaphore, whose waiters would then cost the floor
    CPU that the runner never pays)."""
    async with OpenAIChat(base_url, "bench", concurrency=concurrency) as client:
        msgs = [{"role": "user", "content": "Pick a number."}]
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await client.chat(msgs)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))


def game_items(seed: int, n: int, *, slice_size: int = 1000) -> Iterator[Item]:
    """``n`` 11–20 items (every one an integer from 50 to 70; the fake server answers 60),
    generated a slice at a time so that a long run's items are never all in memory."""
    for start in range(0, n, slice_size):
        yield from games.generate_items(
            seed + start, min(slice_size, n - start), games=("11-20",), conditions=("recursive",)
        )


def latency_scenario(server: FakeOpenAIProcess, n: int, lat: float, conc: int) -> int:
    """Bare HTTP calls, then the runner, on the same server; print the table. Returns the number
    of trials stored."""
    ideal = n * lat / conc
    items = list(game_items(2026, n))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(open_engine(f"sqlite:///{Path(tmp) / 'bench.db'}"))
        store.create_run("bench", suite="bench", seed=0, held_out=False, params={},
                         agents=[RunAgent("fake", "agent", {"adapter": "openai"})], items=items)

        c0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(bare_calls(server.base_url, n, conc))
        bare_wall, bare_cpu = time.perf_counter() - t0, time.process_time() - c0

        async def run() -> None:
            backend = OpenAIBackend(OpenAIChat(server.base_url, "bench", concurrency=conc))
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

    print(f"{n} trials, {lat * 1000:.0f} ms latency, {conc} in flight: ideal {ideal:.2f} s")
    print(f"{'':34} {'wall':>8} {'÷ ideal':>8} {'CPU/trial':>10}")
    print(f"{'bare HTTP calls (OpenAIChat)':34} {bare_wall:7.2f}s {bare_wall / ideal:7.2f}× "
          f"{bare_cpu / n * 1000:8.2f}ms")
    print(f"{'runner (agent+score+store)':34} {run_wall:7.2f}s {run_wall / ideal:7.2f}× "
          f"{run_cpu / n * 1000:8.2f}ms")
    print(f"runner ÷ bare HTTP: {run_wall / bare_wall:.2f}× wall, "
          f"{run_cpu / max(bare_cpu, 1e-9):.2f}× CPU; stored {stored}/{n} trials "
          f"({correct} scored correct)")
    return stored


# -- memory: a long run, created and executed in child processes ----------------------------


def _peak_rss_mb() -> float:
    """This process's peak resident set size: VmHWM where there is /proc (``ru_maxrss`` keeps
    the parent's peak across fork and exec on Linux), else ``ru_maxrss``."""
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)  # bytes on macOS


def memory_child(phase: str, db: str, n: int) -> None:
    """One phase of the memory scenario; prints one JSON line."""
    store = Store(open_engine(f"sqlite:///{db}"))
    base = _peak_rss_mb()
    t0 = time.perf_counter()
    if phase == "create":
        counts: Counter[str] = Counter()

        def counted() -> Iterator[Item]:
            for it in game_items(7, n):
                counts[it.family] += 1
                yield it

        store.create_run("long", suite="bench", seed=7, held_out=False,
                         params=lambda: {"counts": dict(counts)},
                         agents=[RunAgent("oracle", "reference",
                                          {"adapter": "reference", "policy": "oracle"})],
                         items=counted())
        done = sum(counts.values())
    else:
        items = store.run_items("long")
        agent = ReferenceAgent("oracle", "oracle", seed=7)
        summary = asyncio.run(execute_run(store, "long", [agent], items,
                                          concurrency={"oracle": 64}))
        done = summary.per_agent["oracle"].trials
    print(json.dumps({"phase": phase, "seconds": time.perf_counter() - t0, "done": done,
                      "base_mb": base, "peak_mb": _peak_rss_mb()}), flush=True)


def memory_scenario(n: int) -> dict[str, dict[str, float]]:
    """Create, then execute, an ``n``-item run, each in a fresh process; print the peaks."""
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "long.db")
        for phase in ("create", "execute"):
            proc = subprocess.run(
                [sys.executable, __file__, "--memory-child", phase, "--db", db,
                 "--memory-items", str(n)],
                check=True, capture_output=True, text=True,
            )
            out[phase] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{n} items (11–20 games), reference agent, SQLite: peak RSS per process "
          f"(after imports {out['create']['base_mb']:.0f} MB)")
    for phase, what in (("create", "create the run (stream items)"),
                        ("execute", "execute it (oracle, 64 in flight)")):
        r = out[phase]
        print(f"{what:34} {r['peak_mb']:7.0f} MB {r['seconds']:7.1f}s  ({r['done']:.0f} done)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--scale-trials", type=int, default=10_000, help="0: skip")
    parser.add_argument("--scale-concurrency", type=int, default=256)
    parser.add_argument("--memory-items", type=int, default=100_000, help="0: skip")
    parser.add_argument("--memory-child", choices=("create", "execute"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.db, args.memory_items)
        return

    lost = []
    runs = [(args.trials, args.concurrency), (args.scale_trials, args.scale_concurrency)]
    runs = [(n, conc) for n, conc in runs if n > 0]
    if runs:
        server = FakeOpenAIProcess(latency=args.latency, answer="60", log_bodies=False)
        server.start()
        try:
            for i, (n, conc) in enumerate(runs):
                if i:
                    print()
                stored = latency_scenario(server, n, args.latency, conc)
                if stored != n:
                    lost.append(f"stored {stored} of {n}")
        finally:
            server.stop()
    if args.memory_items:
        if runs:
            print()
        memory_scenario(args.memory_items)
    if lost:
        raise SystemExit(f"lost trials: {'; '.join(lost)}")


if __name__ == "__main__":
    main()
