"""Runner benchmark: trials through the whole runner (agent, answer protocol, scoring, storage
with group commit) against the fake OpenAI server in a separate process answering after a
fixed 50 ms; and the memory a long run takes.

1. 2,000 trials, 64 in flight; 2. at scale, 10,000 trials, 256 in flight. Each prints wall
time ÷ ideal (ideal = trials × latency ÷ concurrency) and the runner's own CPU time per trial
(process CPU time ÷ trials), side by side with the same number of bare HTTP calls through the
adapter (the floor the runner stands on), measured in one run, and the fake server's own CPU
per request (it runs on the same cores, so it bounds the wall time too). The runner is given
the items as a list in memory; with ``--stored-items`` it runs again with them read back from the
stored run a page at a time, as ``mindledger run`` does (``Store.run_items``), and the cost of
reading an item back (its id checked) is printed beside that of re-encoding it to check it.

3. Memory: a 100,000-item run (11–20 game items, generated a slice at a time) is created, then
executed by the oracle reference agent, each phase in a fresh child process; prints each
phase's peak resident set size (VmHWM).

    python bench/bench_runner.py                 # all three (a few minutes)
    python bench/bench_runner.py --trials 500 --scale-trials 2000 --memory-items 10000  # quick
    python bench/bench_runner.py --scale-trials 0 --memory-items 0   # the first scenario only
    python bench/bench_runner.py --trials 0 --scale-trials 0          # memory only
    python bench/bench_runner.py --trials 0 --memory-items 0 --stored-items  # at scale, both
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import games
from harness.adapters import ChatPolicy, OpenAIBackend, OpenAIChat
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
    async with OpenAIChat(base_url, "bench", policy=ChatPolicy(concurrency=concurrency)) as client:
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


def latency_scenario(
    server: FakeOpenAIProcess, n: int, lat: float, conc: int, *, stored_items: bool = False
) -> int:
    """Bare HTTP calls, then the runner, on the same server (and again with the items read from
    storage when ``stored_items``); print the table. Returns the fewest trials stored by a
    runner."""
    ideal = n * lat / conc
    items = list(game_items(2026, n))
    rows: list[tuple[str, float, float]] = []
    read: tuple[float, float, float] | None = None
    runs = ["bench", "bench-stored"] if stored_items else ["bench"]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(open_engine(f"sqlite:///{Path(tmp) / 'bench.db'}"))
        for run_id in runs:
            store.create_run(run_id, suite="bench", seed=0, held_out=False, params={},
                             agents=[RunAgent("fake", "agent", {"adapter": "openai"})],
                             items=items)

        c0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(bare_calls(server.base_url, n, conc))
        rows.append(("bare HTTP calls (OpenAIChat)",
                     time.perf_counter() - t0, time.process_time() - c0))

        server_cpu: list[float] = []

        def timed(what: str, run_id: str, run_items: Sequence[Item]) -> None:
            async def run() -> None:
                client = OpenAIChat(server.base_url, "bench", policy=ChatPolicy(concurrency=conc))
                backend = OpenAIBackend(client)
                agent = ChatAgent("fake", backend, spec={}, answer_mode="tools")
                try:
                    await execute_run(store, run_id, [agent], run_items,
                                      concurrency={"fake": conc})
                finally:
                    await agent.aclose()

            s0 = _process_cpu(server.process.pid if server.process else None)
            c0, t0 = time.process_time(), time.perf_counter()
            asyncio.run(run())
            rows.append((what, time.perf_counter() - t0, time.process_time() - c0))
            s1 = _process_cpu(server.process.pid if server.process else None)
            if s0 is not None and s1 is not None:
                server_cpu.append(s1 - s0)

        timed("runner (agent+score+store)", "bench", items)
        if stored_items:
            del items  # as in `mindledger run`: the items are in storage, not in memory
            gc.collect()
            timed("runner, items read from storage", "bench-stored",
                  store.run_items("bench-stored"))
            read = item_read_costs(store, "bench-stored")
        trials = {run_id: store.trials(run_id) for run_id in runs}

    print(f"{n} trials, {lat * 1000:.0f} ms latency, {conc} in flight: ideal {ideal:.2f} s")
    print(f"{'':34} {'wall':>8} {'÷ ideal':>8} {'CPU/trial':>10}")
    for what, wall, cpu in rows:
        print(f"{what:34} {wall:7.2f}s {wall / ideal:7.2f}× {cpu / n * 1000:8.2f}ms")
    (_, bare_wall, bare_cpu), (_, run_wall, run_cpu) = rows[:2]
    print(f"runner ÷ bare HTTP: {run_wall / bare_wall:.2f}× wall, "
          f"{run_cpu / max(bare_cpu, 1e-9):.2f}× CPU; " + "; ".join(
              f"{run_id}: stored {len(ts)}/{n} trials ({sum(bool(t.correct) for t in ts)} "
              "scored correct)" for run_id, ts in trials.items()))
    if server_cpu:
        print(f"the fake server's own CPU per request (on the same cores): "
              f"{server_cpu[0] / n * 1000:.2f} ms")
    if read is not None:
        print(f"an item read back (Store.run_items, id checked): {read[0] * 1e6:.0f} µs, of "
              f"which fetching its JSON {read[1] * 1e6:.0f} µs; checking its id by re-encoding "
              f"it (Item.from_dict) takes {read[2] * 1e6:.0f} µs")
    return min(len(ts) for ts in trials.values())


def _process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of process ``pid`` so far, where there is /proc."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def item_read_costs(store: Store, run_id: str) -> tuple[float, float, float]:
    """Seconds per item: reading the run's items back as the runner does (``Store.run_items``,
    every page, each id checked); fetching their stored JSON alone; and rebuilding them from
    it by re-encoding each item to check its id (``Item.from_dict``)."""
    t0 = time.perf_counter()
    n = sum(1 for _ in store.run_items(run_id))
    paged = (time.perf_counter() - t0) / n
    ids = store.run_item_ids(run_id)
    t0 = time.perf_counter()
    bodies = list(store.item_bodies(ids).values())
    fetch = (time.perf_counter() - t0) / len(ids)
    t0 = time.perf_counter()
    for body in bodies:
        Item.from_dict(json.loads(body))
    return paged, fetch, (time.perf_counter() - t0) / len(bodies)


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
    parser.add_argument("--stored-items", action="store_true",
                        help="also run the runner with its items read from the stored run")
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
                stored = latency_scenario(server, n, args.latency, conc,
                                          stored_items=args.stored_items)
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
