"""Runner benchmark: trials through the whole runner (agent, answer protocol, scoring, storage
with group commit) against a stand-in for the model server in a separate process answering
after a fixed 50 ms; and the memory a long run takes.

The stand-in is the lean peer (``bench/lean_peer.py``: the full fake server's replies at about
0.1 ms of CPU a request) unless ``--peer fake`` picks the full fake server
(``harness.testing.fake_openai``: 0.2–0.44 ms a request). A real model server costs the
runner's machine nothing; a stand-in runs on the same cores. The lean one did not change the
runner's wall ratio (2026-12-04, side by side): the runner is bound by its own CPU on about one
core, not by the cores it shares (see :func:`print_latency`).

1. 2,000 trials, 64 in flight; 2. at scale, 10,000 trials, 256 in flight. Each prints wall
time ÷ ideal (ideal = trials × latency ÷ concurrency), the runner's own CPU time per trial
(process CPU time ÷ trials) and that of its event loop's thread, and that CPU ÷ the ideal time
a trial, which the wall ratio follows; side by side with the same number of bare HTTP calls
through the adapter (the floor the runner stands on), and the stand-in's own CPU per request.
The runner is given the items as a list in memory; with ``--stored-items`` it runs again with
them read back from the stored run a page at a time, as ``mindledger run`` does
(``Store.run_items``), and the cost of reading an item back (its id checked) is printed beside
that of re-encoding it to check it. Each of these is timed in a fresh interpreter (see
:data:`PARTS`), one after another.

With ``--against DIR`` the latency scenarios also run with the source tree in DIR (an earlier
commit's, from ``git archive``): this file's code over that tree's packages, each run in a fresh
interpreter, the two trees in turn on the same stand-in, ``--repeat`` times each; the table
shows each tree's range and their ratio of CPU per trial. The machine's load average is printed
before and after: wall times move with it, CPU per trial and ratios taken in turn much less.

3. Memory: a 100,000-item run (11–20 game items, generated a slice at a time) is created, then
executed by the oracle reference agent, each phase in a fresh child process; prints each
phase's peak resident set size (VmHWM).

    python bench/bench_runner.py                 # all three (a few minutes)
    python bench/bench_runner.py --trials 500 --scale-trials 2000 --memory-items 10000  # quick
    python bench/bench_runner.py --scale-trials 0 --memory-items 0   # the first scenario only
    python bench/bench_runner.py --trials 0 --scale-trials 0          # memory only
    python bench/bench_runner.py --trials 0 --memory-items 0 --stored-items  # at scale, both
    git archive 2e2eef1 | tar -x -C /tmp/then       # an earlier commit's source tree, ...
    python bench/bench_runner.py --trials 0 --memory-items 0 --stored-items \\
        --against /tmp/then --repeat 3                 # ... timed in turn with this one
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import games
import harness
from harness.adapters import OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent, ReferenceAgent
from harness.run.runner import execute_run
from harness.testing import FakeOpenAIProcess
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item

if TYPE_CHECKING:  # not at run time: an older tree (--against) has no ChildServer
    from harness.testing import ChildServer

ROOT = Path(__file__).resolve().parent.parent
"""This source tree."""


def _chat(base_url: str, concurrency: int) -> OpenAIChat:
    """The adapter's client, in this tree's signature or (``--against`` an older tree) the
    signature from before ``ChatPolicy``."""
    import harness.adapters as adapters

    policy = getattr(adapters, "ChatPolicy", None)
    if policy is None:
        return OpenAIChat(base_url, "bench", concurrency=concurrency)  # type: ignore[call-arg]
    return OpenAIChat(base_url, "bench", policy=policy(concurrency=concurrency))


async def bare_calls(base_url: str, n: int, concurrency: int) -> None:
    """``n`` chat calls through the adapter, made as the runner makes its trials: by
    ``concurrency`` workers, each taking the next call when its last one is done (not ``n``
    calls queued at once on the adapter's semaphore, whose waiters would then cost the floor
    CPU that the runner never pays)."""
    async with _chat(base_url, concurrency) as client:
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


Row = tuple[str, float, float, float]
"""One line of the latency table: what ran, its wall seconds, the runner process's CPU seconds,
and the CPU seconds of the thread running the event loop."""


def _in_loop(coro: Any, spent: list[float]) -> Any:
    """Await ``coro``, adding the CPU time of the event loop's thread meanwhile to ``spent``."""

    async def timed() -> Any:
        t0 = time.thread_time()
        try:
            return await coro
        finally:
            spent.append(time.thread_time() - t0)

    return timed()


PARTS = ("bare", "memory", "stored")
"""The latency scenario's parts, each timed in a fresh interpreter: bare HTTP calls, the runner
with its items in memory, the runner with them read from storage. Timed one after another in
one process, a runner came out 0.2× of the ideal slower the second time, its items in memory or
not (2026-12-04: 1.67–1.69× against 1.45–1.49×, three runs each): the bench had compared the
stored path, always second, with a path timed first. ``mindledger run`` executes one run a
process."""


def latency_scenario(
    base_url: str, server_pid: int | None, n: int, lat: float, conc: int, part: str
) -> dict[str, Any]:
    """One part of the latency scenario (:data:`PARTS`) on the server at ``base_url``: bare HTTP
    calls, or the runner over a freshly created run of ``n`` items in memory or read from
    storage. Returns what :func:`print_latency` prints of it: its row, the server's CPU per
    request (the runner's), the cost of reading an item back (when stored), the trials
    stored."""
    result: dict[str, Any] = {"rows": [], "server_cpu": None, "read": None, "trials": {}}
    loop: list[float] = []
    if part == "bare":
        c0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(_in_loop(bare_calls(base_url, n, conc), loop))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        result["rows"].append(("bare HTTP calls (OpenAIChat)", wall, cpu, loop[-1]))
        return result
    items = list(game_items(2026, n))
    run_id = "bench" if part == "memory" else "bench-stored"
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(open_engine(f"sqlite:///{Path(tmp) / 'bench.db'}"))
        store.create_run(
            run_id,
            suite="bench",
            seed=0,
            held_out=False,
            params={},
            agents=[RunAgent("fake", "agent", {"adapter": "openai"})],
            items=items,
        )
        run_items: Sequence[Item] = items
        what = "runner (agent+score+store)"
        if part == "stored":
            del items  # as in `mindledger run`: the items are in storage, not in memory
            gc.collect()
            run_items = store.run_items(run_id)
            what = "runner, items read from storage"

        async def run() -> None:
            backend = OpenAIBackend(_chat(base_url, conc))
            agent = ChatAgent("fake", backend, spec={}, answer_mode="tools")
            try:
                await execute_run(store, run_id, [agent], run_items, concurrency={"fake": conc})
            finally:
                await agent.aclose()

        s0 = _process_cpu(server_pid)
        c0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(_in_loop(run(), loop))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        s1 = _process_cpu(server_pid)
        result["rows"].append((what, wall, cpu, loop[-1]))
        if s0 is not None and s1 is not None:
            result["server_cpu"] = (s1 - s0) / n
        if part == "stored":
            result["read"] = item_read_costs(store, run_id)
        trials = store.trials(run_id)
        result["trials"][run_id] = [len(trials), sum(bool(t.correct) for t in trials)]
    return result


def _merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One run of every part of the scenario, as one result: the rows in order, the first
    server CPU and item-read cost given, every run's trials."""
    return {
        "rows": [row for p in parts for row in p["rows"]],
        "server_cpu": next((p["server_cpu"] for p in parts if p["server_cpu"] is not None), None),
        "read": next((p["read"] for p in parts if p["read"] is not None), None),
        "trials": {k: v for p in parts for k, v in p["trials"].items()},
    }


def print_latency(n: int, lat: float, conc: int, results: dict[str, list[dict[str, Any]]]) -> int:
    """Print the latency table: each tree's wall time ÷ ideal, the runner's CPU per trial and
    its event loop thread's share (the range over its repetitions), that CPU ÷ the ideal time
    a trial, and with two trees their CPU ratio. Returns the fewest trials any runner stored.

    CPU ÷ ideal is what the wall ratio follows once it is above 1×: the runner's threads (the
    event loop, the trial writer) share the interpreter's lock, so the runner goes about as
    fast as one core running all of its CPU, however many cores the machine has; the wall
    ratio comes in a little under it by the parts that release the lock (system calls,
    SQLite). The stand-in runs on the other core (its CPU a request is printed below)."""
    ideal = n * lat / conc
    cores = os.cpu_count() or 1
    trees = list(results)
    reps = len(results[trees[0]])
    print(
        f"{n} trials, {lat * 1000:.0f} ms latency, {conc} in flight: ideal {ideal:.2f} s"
        + (f"; {reps} runs of each tree" if reps > 1 else "")
        + ("; the trees alternating" if len(trees) > 1 else "")
        + "; each row timed in a fresh process"
    )

    def span(values: list[float], fmt: str) -> str:
        low, high = min(values), max(values)
        return (
            format(low, fmt)
            if format(low, fmt) == format(high, fmt)
            else (f"{format(low, fmt)}–{format(high, fmt)}")
        )

    head = "".join(
        f" {tree + ' ÷ ideal':>13} {'CPU/trial':>13} {'loop/trial':>13} {'CPU ÷ ideal':>12}"
        for tree in trees
    )
    print(
        f"{'':34}{head}" + (f" {trees[1] + '÷' + trees[0] + ' CPU':>14}" if len(trees) > 1 else "")
    )
    per_trial = ideal / n * 1000  # ms
    for i, (what, *_) in enumerate(results[trees[0]][0]["rows"]):
        cells, cpu_median = "", []
        for tree in trees:
            walls = [r["rows"][i][1] / ideal for r in results[tree]]
            cpus = [r["rows"][i][2] / n * 1000 for r in results[tree]]
            loops = [r["rows"][i][3] / n * 1000 for r in results[tree]]
            bound = span([c / per_trial for c in cpus], ".2f") + "×"
            cells += (
                f" {span(walls, '.2f') + '×':>13} {span(cpus, '.2f') + ' ms':>13}"
                f" {span(loops, '.2f') + ' ms':>13} {bound:>12}"
            )
            cpu_median.append(statistics.median(cpus))
        ratio = f" {cpu_median[1] / cpu_median[0]:13.2f}×" if len(trees) > 1 else ""
        print(f"{what:34}{cells}{ratio}")
    print(
        f"CPU ÷ ideal: the runner's CPU a trial ÷ the ideal time a trial ({per_trial:.3f} ms); "
        "its threads share the interpreter's lock, so it runs about as one core would: "
        "above 1×, the wall ratio follows this one"
    )
    fewest = n
    for tree in trees:
        label = f"{tree}: " if len(trees) > 1 else ""
        for r in results[tree]:
            fewest = min([fewest, *(stored for stored, _ in r["trials"].values())])
        last = results[tree][-1]
        (_, bare_wall, bare_cpu, _), (_, run_wall, run_cpu, _) = last["rows"][:2]
        print(
            f"{label}runner ÷ bare HTTP: {run_wall / bare_wall:.2f}× wall, "
            f"{run_cpu / max(bare_cpu, 1e-9):.2f}× CPU; "
            + "; ".join(
                f"{run_id}: stored {stored}/{n} trials ({correct} scored correct)"
                for run_id, (stored, correct) in last["trials"].items()
            )
        )
        if last["server_cpu"] is not None:
            print(
                f"{label}the stand-in's own CPU per request (on the same {cores} cores): "
                f"{span([r['server_cpu'] * 1000 for r in results[tree]], '.2f')} ms"
            )
        if last["read"] is not None:
            paged, fetch, recode = (
                span([r["read"][k] * 1e6 for r in results[tree]], ".0f") for k in range(3)
            )
            print(
                f"{label}an item read back (Store.run_items, id checked): {paged} µs of CPU, "
                f"of which fetching its JSON {fetch} µs; checking its id by re-encoding it "
                f"(Item.from_dict) takes {recode} µs"
            )
    return fewest


def latency_child(args: argparse.Namespace) -> None:
    """One part of the latency scenario in this process (with whichever source tree PYTHONPATH
    gives it), printed as one JSON line for the parent."""
    n, conc = args.latency_child
    result = latency_scenario(args.server, args.server_pid, n, args.latency, conc, args.part)
    result["tree"] = str(Path(harness.__file__).resolve().parent.parent)
    print(json.dumps(result), flush=True)


def latency_in_trees(
    server: ChildServer,
    n: int,
    lat: float,
    conc: int,
    *,
    stored_items: bool,
    trees: dict[str, Path],
    repeat: int,
) -> dict[str, list[dict[str, Any]]]:
    """The scenario ``repeat`` times for each source tree, in turn, each of its parts
    (:data:`PARTS`; the stored one when ``stored_items``) run in a fresh interpreter whose
    PYTHONPATH is the tree (this file's code, the tree's packages)."""
    results: dict[str, list[dict[str, Any]]] = {tree: [] for tree in trees}
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for root in trees.values():  # byte-compiled alike: a tree without its caches (an archive
        # unpacked, with PYTHONDONTWRITEBYTECODE set) compiles what the run imports lazily
        # inside the timed runs, and only there
        compileall.compile_dir(root, quiet=1)
    pid = server.process.pid if server.process else None
    parts = PARTS if stored_items else PARTS[:2]
    for _ in range(repeat):
        for tree, root in trees.items():
            done = []
            for part in parts:
                argv = [sys.executable, __file__, "--latency-child", str(n), str(conc)]
                argv += ["--part", part, "--server", server.base_url, "--latency", str(lat)]
                argv += ["--server-pid", str(pid)] if pid else []
                proc = subprocess.run(
                    argv, env={**base, "PYTHONPATH": str(root)}, capture_output=True, text=True
                )
                if proc.returncode:
                    raise SystemExit(f"the {tree} tree ({root}) failed:\n{proc.stderr}")
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                if Path(result["tree"]) != root:
                    raise SystemExit(f"the {tree} run imported {result['tree']}, not {root}")
                done.append(result)
            results[tree].append(_merged(done))
    return results


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
    """CPU seconds per item: reading the run's items back as the runner does
    (``Store.run_items``, every page, each id checked); fetching their stored JSON alone; and
    rebuilding them from it by re-encoding each item to check its id (``Item.from_dict``).
    The cyclic collector is paused meanwhile, as the runner nearly pauses it (its collections
    are timed with the runs: ``harness.run.runner._steady_heap``); else a full collection now and
    then, walking every object alive, would land on whichever of the three it interrupts."""
    gc.collect()
    gc.disable()
    try:
        c0 = time.process_time()
        n = sum(1 for _ in store.run_items(run_id))
        paged = (time.process_time() - c0) / n
        ids = store.run_item_ids(run_id)
        c0 = time.process_time()
        bodies = list(store.item_bodies(ids).values())
        fetch = (time.process_time() - c0) / len(ids)
        c0 = time.process_time()
        for body in bodies:
            Item.from_dict(json.loads(body))
        recode = (time.process_time() - c0) / len(bodies)
    finally:
        gc.enable()
    return paged, fetch, recode


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

        store.create_run(
            "long",
            suite="bench",
            seed=7,
            held_out=False,
            params=lambda: {"counts": dict(counts)},
            agents=[RunAgent("oracle", "reference", {"adapter": "reference", "policy": "oracle"})],
            items=counted(),
        )
        done = sum(counts.values())
    else:
        items = store.run_items("long")
        agent = ReferenceAgent("oracle", "oracle", seed=7)
        summary = asyncio.run(
            execute_run(store, "long", [agent], items, concurrency={"oracle": 64})
        )
        done = summary.per_agent["oracle"].trials
    print(
        json.dumps(
            {
                "phase": phase,
                "seconds": time.perf_counter() - t0,
                "done": done,
                "base_mb": base,
                "peak_mb": _peak_rss_mb(),
            }
        ),
        flush=True,
    )


def memory_scenario(n: int) -> dict[str, dict[str, float]]:
    """Create, then execute, an ``n``-item run, each in a fresh process; print the peaks."""
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "long.db")
        for phase in ("create", "execute"):
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--memory-child",
                    phase,
                    "--db",
                    db,
                    "--memory-items",
                    str(n),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            out[phase] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"{n} items (11–20 games), reference agent, SQLite: peak RSS per process "
        f"(after imports {out['create']['base_mb']:.0f} MB)"
    )
    for phase, what in (
        ("create", "create the run (stream items)"),
        ("execute", "execute it (oracle, 64 in flight)"),
    ):
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
    parser.add_argument(
        "--stored-items",
        action="store_true",
        help="also run the runner with its items read from the stored run",
    )
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time the source tree in DIR (e.g. `git archive REV | tar -x "
        "-C DIR`), in turn with this one, each run in a fresh process",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each latency scenario (of each tree); the range is shown",
    )
    parser.add_argument(
        "--peer",
        choices=("lean", "fake"),
        default="lean",
        help="the model's stand-in: the lean peer (bench/lean_peer.py: about 0.1 ms of CPU a "
        "request) or the full fake server (0.2–0.44 ms a request); either runs on the same "
        "cores as the runner",
    )
    parser.add_argument("--memory-child", choices=("create", "execute"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--latency-child", type=int, nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--server", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.db, args.memory_items)
        return
    if args.latency_child:
        latency_child(args)
        return

    lost = []
    runs = [(args.trials, args.concurrency), (args.scale_trials, args.scale_concurrency)]
    runs = [(n, conc) for n, conc in runs if n > 0]
    trees = {"now": ROOT} | ({"then": args.against.resolve()} if args.against else {})
    if runs:
        load = os.getloadavg()
        print(
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            + "".join(f"; {tree}: {root}" for tree, root in trees.items())
            + "\n"
        )
        from lean_peer import LeanPeerProcess  # the parent's only: see ChildServer above

        server: ChildServer
        if args.peer == "fake":
            server = FakeOpenAIProcess(latency=args.latency, answer="60", log_bodies=False)
            server.start()
            stand_in = "the full fake server (harness.testing.fake_openai)"
        else:
            peer = server = LeanPeerProcess(latency=args.latency, answer="60")
            peer.start()
            stand_in = f"the lean peer (bench/lean_peer.py, on {peer.loop})"
        print(
            f"the model's stand-in: {stand_in}, answering after {args.latency * 1000:.0f} ms, "
            "in a child process\n"
        )
        try:
            for i, (n, conc) in enumerate(runs):
                if i:
                    print()
                results = latency_in_trees(
                    server,
                    n,
                    args.latency,
                    conc,
                    stored_items=args.stored_items,
                    trees=trees,
                    repeat=args.repeat,
                )
                stored = print_latency(n, args.latency, conc, results)
                if stored != n:
                    lost.append(f"stored {stored} of {n}")
        finally:
            server.stop()
        load = os.getloadavg()
        print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.memory_items:
        if runs:
            print()
        memory_scenario(args.memory_items)
    if lost:
        raise SystemExit(f"lost trials: {'; '.join(lost)}")


if __name__ == "__main__":
    main()
