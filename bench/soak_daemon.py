"""Soak benchmark: the daemon (``mindledger serve``) living many nights in minutes.

A real ``mindledger serve`` process (real sockets on 127.0.0.1, SQLite in a temporary
directory) with its nightly job accelerated by the test-only ``[schedule] every_seconds``,
running the ``smoke`` suite for a command agent (a shell script, a process per turn) paired with
an OpenAI-compatible agent on the fake server (:class:`harness.testing.FakeOpenAIProcess`, in a
process of its own), and the prediction matrix beside each run. Beside it, for the whole soak,
an agent predicts and calls through the query proxy (commit, call, reveal; and plain calls the
proxy may sample) and an operator reads the API (runs, a run, metrics, the ledger's head).

After each nightly run (a *cycle*: the suite run and the matrix beside it, both finished, and
no run under way) it samples the daemon's resident memory, open file descriptors, threads and
child processes (``/proc``), the database's and its WAL's size, and verifies the ledger (read
only, from this process), timing it. It prints the least-squares slope of each against the
cycle number over the cycles after the warm-up, and checks:

- **RSS flat**: slope ≤ ``--rss-slope`` KiB a cycle (default 160). What grew (issue 27): a
  tracemalloc snapshot of the soaked daemon itself every 30 s put ~60 of its ~75 KiB a cycle of
  growing Python memory in the games' spec cache (``games._scoring._cached_spec``): a night or
  two brings a new game variant (a new name, a new key; ~0.5 a cycle by its ``cache_info``) and
  a kept spec with its payoff rows costs ~70–120 KiB, not the ~12 KB once assumed, so at 1,024
  keys it filled for ~2,000 nights (~100–150 MiB). It keeps 64 keys now. The rest is in caches
  with a bound (``harness.agent.agents``' answer pieces, 4,096, ~10 new a night; ``harness.agent.answers``'
  4,096); SQLite's own memory (``sqlite3_memory_used``) stays at 2–4 MiB and the C heap at
  ~36 MiB after warm-up. What still grew after that (+36 KiB a night through 2,000): cyclic
  garbage frozen by the runner's ``gc.freeze()`` at each run's start before a full collection
  could free it, with runs back to back (a command agent's asyncio subprocess transports,
  thousands after a few hundred cycles); a run now collects before it freezes
  (``harness.run.runner._steady_heap``). Figures: README, Performance, "The daemon's memory
  over many nights". Each sample also reads the daemon's own account of where its memory is
  from ``/metrics`` (SQLite's, the C heap's in use, free and mapped, the Python blocks) and
  the summary gives each one's slope beside the RSS's.
- **fds and threads flat**: |slope| ≤ 0.05 a cycle (one leaked descriptor or thread every 20
  nights fails; a leak per run is a slope of 1), sampled between runs. Not tighter: pooled
  database connections (2 descriptors each) and keep-alive sockets open when load peaks and
  then stay, a step that a 200-cycle fit reads as +0.013 (the CI-size run here) while 900
  cycles read it as −0.0002;
- **no child process between runs**: zero children (zombies included) at every sample taken
  while no run was under way (a sample is only taken when the database shows no run running
  before and after it);
- **database growth per run constant**: the slope of (database + WAL) bytes over the second
  half of the post-warm-up cycles is within ×0.5–2 of the first half's (constant: the same
  rows every night; a growing per-run cost — an index or a table rewritten each night — would
  double it);
- **no missed or doubled nightly run**: every fire of the nightly job (counted by how far its
  stored next run time moved, in intervals) either started exactly one suite run or was logged
  by APScheduler as skipped because the previous run still ran (``max_instances = 1``, by
  design: at a real 24-hour period it would be a run longer than a day); the skipped ones are
  reported. The last fire may be cut by the stop at the end (its job started, its run not yet
  stored: seen under load 10), and is reported as such. Every suite run is ``complete`` with its matrix beside it, and no two overlap;
- **ledger verify passes at every sample**;
- the daemon exits 143 on SIGTERM at the end, its log without a traceback.

Exits 1 when a bound fails, printing which.

    python bench/soak_daemon.py                      # CI size: 200 cycles
    python bench/soak_daemon.py --cycles 1000 --verify-every 10
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import pickle
import re
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.daemon.client import DaemonClient, DaemonError
from harness.daemon.tokens import create_token
from harness.testing import FakeOpenAIProcess
from harness.testing.daemon_process import DaemonProcess, process_stats, wait_for

AGENT_SCRIPT = """#!/bin/sh
# a command agent: reads the request, answers "1" (a valid answer for neither item: an
# unparsed or wrong answer is still a finished trial)
cat >/dev/null
echo '{"content": "1"}'
"""

NIGHTLY_JOB = "nightly:cmd"
SKIPPED = "skipped: maximum number of running instances reached"
MISSED = "was missed by"
COALESCED = re.compile(r"(\d+) fires due from \S+ to \S+ coalesced")


def config_text(fake_url: str, agent: Path, every: float) -> str:
    return f"""max_retries = 1
timeout = 20

[agents.cmd]
adapter = "command"
command = ["{agent}"]
control = "fake"

[agents.fake]
adapter = "openai"
endpoint = "{fake_url}"
model = "m"

[schedule]
every_seconds = {every}

[schedule.matrix]
items = 1
samples = 2
pilot = false
"""


@dataclass
class Sample:
    cycle: int
    elapsed: float
    rss_kb: int
    fds: int
    threads: int
    children: int | None
    """Children seen while no run was under way (None: a run started around the sample)."""
    db_bytes: int
    wal_bytes: int
    verify_s: float | None
    verify_ok: bool | None
    ledger_entries: int
    proxy_ops: int
    api_reads: int
    memory: dict[str, float] = field(default_factory=dict)
    """Where the daemon's memory is, from its ``/metrics`` (KiB; blocks): SQLite's, the C
    heap's in use, free and mapped, the Python blocks ({} when it did not answer)."""


MEMORY_METRICS = {
    ("mindledger_sqlite_memory_bytes", None): "sqlite_kib",
    ("mindledger_c_heap_bytes", "in_use"): "heap_in_use_kib",
    ("mindledger_c_heap_bytes", "free"): "heap_free_kib",
    ("mindledger_c_heap_bytes", "mmapped"): "heap_mmapped_kib",
    ("mindledger_python_allocated_blocks", None): "python_blocks",
}


def memory_use(url: str, token: str) -> dict[str, float]:
    """The daemon's own account of its memory (``/metrics``: see :data:`MEMORY_METRICS`)."""
    try:
        r = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        r.raise_for_status()
    except httpx.HTTPError:
        return {}
    out = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            key = MEMORY_METRICS.get((sample.name, sample.labels.get("state")))
            if key is not None:
                out[key] = sample.value / (1 if key == "python_blocks" else 1024)
    return out


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ys against xs."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


class Traffic:
    """Proxy traffic and API reads beside the nightly runs, on two threads."""

    def __init__(self, url: str, agent_token: str, operator_token: str, rate: float):
        self.url = url
        self.agent_token = agent_token
        self.operator_token = operator_token
        self.pause = 1.0 / rate
        self.stop = threading.Event()
        self.proxy_ops = 0
        self.api_reads = 0
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._proxy, daemon=True),
            threading.Thread(target=self._reads, daemon=True),
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def _note(self, what: str, exc: Exception) -> None:
        if len(self.errors) < 20:
            self.errors.append(f"{what}: {exc}")

    def _proxy(self) -> None:
        with DaemonClient(self.url, self.agent_token, timeout=60) as ml:
            for n in itertools.count():
                if self.stop.wait(self.pause):
                    return
                query = f"soak question {n} [[answer: {n % 3}]]"
                dist = {"0": 0.5, "1": 0.3, "2": 0.2}
                try:
                    if n % 2:
                        with ml.predict("fake", query, dist) as p:  # commit, call, reveal
                            p.ask()
                    else:  # a plain call: the proxy samples one in five for a prediction
                        ml.chat("fake", query, predict=lambda _m, d=dist: d)
                    self.proxy_ops += 1
                except (DaemonError, httpx.HTTPError) as exc:
                    self._note("proxy", exc)

    def _reads(self) -> None:
        headers = {"Authorization": f"Bearer {self.operator_token}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60) as c:
            while not self.stop.wait(self.pause):
                try:
                    runs = c.get("/runs").json().get("runs") or []
                    if runs:
                        c.get(f"/runs/{runs[0]['id']}").raise_for_status()
                    c.get("/metrics").raise_for_status()
                    c.get("/health").raise_for_status()
                    head = c.get("/ledger/head")
                    if head.status_code not in (200, 404):
                        head.raise_for_status()
                    self.api_reads += 5
                except (httpx.HTTPError, ValueError) as exc:
                    self._note("api", exc)


def run_rows(db: Path) -> list[tuple[str, str, str, str, str | None]]:
    """(id, suite, status, created_at, finished_at) of every run, oldest first (read only)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        return list(
            c.execute(
                "SELECT id, suite, status, created_at, finished_at FROM runs ORDER BY created_at"
            )
        )


def nightly_job(db: Path) -> tuple[float, float, float] | None:
    """The nightly job as stored: (next run time, its interval trigger's start, the
    interval), POSIX seconds; None before it is stored."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        row = c.execute(
            "SELECT next_run_time, job_state FROM apscheduler_jobs WHERE id = ?", (NIGHTLY_JOB,)
        ).fetchone()
    if row is None or row[0] is None:
        return None
    trigger = pickle.loads(row[1])["trigger"]  # our own daemon's row: APScheduler's pickle
    return float(row[0]), trigger.start_date.timestamp(), trigger.interval.total_seconds()


def run_counts(db: Path) -> tuple[int, int]:
    """(nightly suite runs, runs under way), read only."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        rows = c.execute("SELECT suite, status, COUNT(*) FROM runs GROUP BY suite, status")
        counts = list(rows)
    suites = sum(n for suite, _, n in counts if suite == "smoke")
    busy = sum(n for _, status, n in counts if status in ("running", "planned", "queued"))
    return suites, busy


def ledger_entries(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        return int(c.execute("SELECT COUNT(*) FROM ledger_entries").fetchone()[0])


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def analyse(
    samples: Sequence[Sample], warmup: int, args: argparse.Namespace
) -> tuple[dict[str, float], list[Check]]:
    post = [s for s in samples if s.cycle > warmup]
    xs = [float(s.cycle) for s in post]
    slopes = {
        "rss_kib": slope(xs, [s.rss_kb for s in post]),
        "fds": slope(xs, [s.fds for s in post]),
        "threads": slope(xs, [s.threads for s in post]),
        "db_wal_bytes": slope(xs, [s.db_bytes + s.wal_bytes for s in post]),
        "db_bytes": slope(xs, [s.db_bytes for s in post]),
        "wal_bytes": slope(xs, [s.wal_bytes for s in post]),
        "ledger_entries": slope(xs, [s.ledger_entries for s in post]),
    }
    for key in MEMORY_METRICS.values():  # where the RSS slope is, by the daemon's account
        known = [s for s in post if key in s.memory]
        if len(known) >= 2:
            slopes[key] = slope([float(s.cycle) for s in known], [s.memory[key] for s in known])
    timed = [s for s in post if s.verify_s is not None]
    slopes["verify_ms"] = slope(
        [float(s.cycle) for s in timed], [1000 * (s.verify_s or 0) for s in timed]
    )
    half = len(post) // 2
    first = slope(xs[:half], [s.db_bytes + s.wal_bytes for s in post[:half]])
    second = slope(xs[half:], [s.db_bytes + s.wal_bytes for s in post[half:]])
    idle = [s for s in samples if s.children is not None]
    checks = [
        Check(
            "rss flat",
            slopes["rss_kib"] <= args.rss_slope,
            f"{slopes['rss_kib']:+.2f} KiB/cycle (bound {args.rss_slope:g})",
        ),
        Check(
            "fds flat",
            abs(slopes["fds"]) <= args.count_slope,
            f"{slopes['fds']:+.4f}/cycle (bound ±{args.count_slope:g})",
        ),
        Check(
            "threads flat",
            abs(slopes["threads"]) <= args.count_slope,
            f"{slopes['threads']:+.4f}/cycle (bound ±{args.count_slope:g})",
        ),
        Check(
            "no child process between runs",
            all(s.children == 0 for s in idle) and len(idle) >= len(samples) // 2,
            f"{sum(1 for s in idle if s.children)} of {len(idle)} idle samples had children "
            f"(max {max((s.children or 0 for s in idle), default=0)}); "
            f"{len(samples) - len(idle)} samples not idle",
        ),
        Check(
            "database growth per run constant",
            first > 0 and 0.5 <= second / first <= 2.0,
            f"{first:,.0f} then {second:,.0f} bytes/cycle",
        ),
        Check(
            "ledger verify passes at every sample",
            all(s.verify_ok is not False for s in samples) and bool(timed),
            f"{sum(1 for s in samples if s.verify_ok)} verified, "
            f"{sum(1 for s in samples if s.verify_ok is False)} failed",
        ),
    ]
    return slopes, checks


def fire_checks(
    rows: Sequence[tuple[str, str, str, str, str | None]],
    job: tuple[float, float, float],
    log: str,
) -> tuple[dict[str, int], list[Check]]:
    next_run, start, every = job
    fires = round((next_run - start) / every)
    skipped = log.count(SKIPPED)
    missed = log.count(MISSED)
    # a late scheduler submits one job for several fires due (APScheduler's coalesce): the
    # daemon logs how many, and all but one are accounted for by that line
    coalesced = sum(int(n) - 1 for n in COALESCED.findall(log))
    suites = [r for r in rows if r[1] == "smoke"]
    matrices = [r for r in rows if r[1] == "matrix"]
    overlaps = sum(
        1
        for a, b in itertools.pairwise(rows)
        if a[4] is None or dt.datetime.fromisoformat(b[3]) < dt.datetime.fromisoformat(a[4])
    )
    counts = {
        "fires": fires,
        "suite_runs": len(suites),
        "skipped_while_running": skipped,
        "coalesced_late": coalesced,
        "missed": missed,
        "matrix_runs": len(matrices),
        "overlapping_runs": overlaps,
    }
    bad = [r for r in rows if r[2] != "complete"]
    checks = [
        Check(
            "no missed or doubled nightly run",
            # the last fire may be under way when the daemon is stopped, its job started but
            # its run not stored yet: that one fire is cut by the stop, not missed
            0 <= fires - (len(suites) + skipped + coalesced) <= 1 and missed == 0,
            f"{fires} fires = {len(suites)} suite runs + {skipped} skipped while the previous "
            f"ran + {coalesced} coalesced into a late one"
            f"{' + 1 cut by the stop' if fires == len(suites) + skipped + coalesced + 1 else ''}"
            f"; {missed} missed",
        ),
        Check(
            "every run complete, a matrix beside each, none overlapping",
            not bad and len(matrices) == len(suites) and overlaps == 0,
            f"{len(bad)} not complete {[r[:3] for r in bad[:3]]}, {len(matrices)} matrices, "
            f"{overlaps} overlaps",
        ),
    ]
    return counts, checks


def soak(args: argparse.Namespace, work: Path) -> int:
    agent = work / "agent.sh"
    agent.write_text(AGENT_SCRIPT)
    agent.chmod(0o755)
    deadline = time.monotonic() + 60 * args.max_minutes
    with FakeOpenAIProcess(log_bodies=False) as fake:
        daemon = DaemonProcess(
            work, config_text(fake.base_url, agent, args.every), args=["--suite", "smoke"]
        )
        settings = load_settings(None, env={}, cwd=work, flags={"home": str(daemon.home)})
        with Workspace.open(settings) as ws:  # tokens before the daemon starts
            agent_token = create_token(ws.engine, "piper")
            operator_token = create_token(ws.engine, None, scope="operator")
        daemon.start()
        samples: list[Sample] = []
        try:
            daemon.wait_ready()
            db = daemon.db_path
            wait_for(lambda: nightly_job(db), timeout=60, what="the nightly job to be stored")
            traffic = Traffic(daemon.url, agent_token, operator_token, args.rate)
            traffic.start()
            started = time.monotonic()
            reader = Workspace.open(settings, read_only=True)
            ledger = reader.new_ledger()
            done = 0
            while done < args.cycles:
                if time.monotonic() > deadline:
                    print(f"time limit: {done} of {args.cycles} cycles", file=sys.stderr)
                    break
                if daemon.proc is not None and daemon.proc.poll() is not None:
                    raise RuntimeError(f"the daemon exited:\n{daemon.log_tail()}")
                cycles, busy = run_counts(db)
                if busy or cycles <= done:
                    time.sleep(0.05)
                    continue
                done = cycles
                stats = process_stats(daemon.pid)
                # children count only if no run started meanwhile (its command agent's)
                children = len(stats.children) if run_counts(db) == (cycles, 0) else None
                verify_s = verify_ok = None
                if done % args.verify_every == 0 or done == args.cycles:
                    t0 = time.perf_counter()
                    failures = ledger.verify()
                    verify_s, verify_ok = time.perf_counter() - t0, not failures
                    if failures:
                        print(f"cycle {done}: ledger verify failed: {failures[:3]}")
                samples.append(
                    Sample(
                        cycle=done,
                        elapsed=round(time.monotonic() - started, 3),
                        rss_kb=stats.rss_kb,
                        fds=stats.fds,
                        threads=stats.threads,
                        children=children,
                        db_bytes=file_size(db),
                        wal_bytes=file_size(db.with_name(db.name + "-wal")),
                        verify_s=verify_s,
                        verify_ok=verify_ok,
                        ledger_entries=ledger_entries(db),
                        proxy_ops=traffic.proxy_ops,
                        api_reads=traffic.api_reads,
                        memory=memory_use(daemon.url, operator_token),
                    )
                )
                if done % args.report_every == 0:
                    s = samples[-1]
                    print(
                        f"cycle {done:5d}  {s.elapsed:7.1f} s  rss {s.rss_kb / 1024:6.1f} MiB  "
                        f"fds {s.fds:3d}  threads {s.threads:2d}  children {s.children}  "
                        f"db {(s.db_bytes + s.wal_bytes) / 1e6:7.2f} MB  "
                        f"ledger {s.ledger_entries}  proxy {s.proxy_ops}  reads {s.api_reads}",
                        flush=True,
                    )
                if done % 200 == 0:
                    with contextlib.suppress(Exception):
                        fake.reset()  # the fake server's own request log, not the daemon's
            traffic.close()
            ledger.close()
            reader.close()
            wall = time.monotonic() - started
        finally:
            code = daemon.stop(signal.SIGTERM)
        rows = run_rows(db)
        job = nightly_job(db)
        assert job is not None
        log = daemon.log_text()
    warmup = args.warmup if args.warmup is not None else max(10, len(samples) // 5)
    slopes, checks = analyse(samples, warmup, args)
    counts, more = fire_checks(rows, job, log)
    checks += more
    checks.append(
        Check(
            "cycles",
            done >= args.cycles,
            f"{done} of {args.cycles} ({len(samples)} sampled: two runs may end between looks)",
        )
    )
    checks.append(
        Check(
            "clean SIGTERM",
            code == 143 and "Traceback" not in log,
            f"exit {code}, {log.count('Traceback')} tracebacks in the log",
        )
    )
    checks.append(
        Check(
            "traffic served",
            traffic.proxy_ops > 0 and traffic.api_reads > 0 and not traffic.errors,
            f"{traffic.proxy_ops} proxy operations, {traffic.api_reads} API reads, "
            f"{len(traffic.errors)} errors {traffic.errors[:2]}",
        )
    )
    post = [s for s in samples if s.cycle > warmup]
    summary = {
        "cycles": done,
        "samples": len(samples),
        "wall_s": round(wall, 1),
        "every_s": args.every,
        "warmup": warmup,
        "slopes_per_cycle": {k: round(v, 4) for k, v in slopes.items()},
        "rss_mib": [round(samples[0].rss_kb / 1024, 1), round(samples[-1].rss_kb / 1024, 1)]
        if samples
        else None,
        "rss_post_warmup_mib": [
            round(min(s.rss_kb for s in post) / 1024, 1),
            round(max(s.rss_kb for s in post) / 1024, 1),
        ]
        if post
        else None,
        "fds_range": [min(s.fds for s in post), max(s.fds for s in post)] if post else None,
        "db_bytes_final": samples[-1].db_bytes + samples[-1].wal_bytes if samples else 0,
        "ledger_entries_final": samples[-1].ledger_entries if samples else 0,
        "proxy_ops": traffic.proxy_ops,
        "api_reads": traffic.api_reads,
        **counts,
        "checks": [asdict(c) for c in checks],
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"summary": summary, "samples": [asdict(s) for s in samples]}, indent=1)
        )
    failed = [c for c in checks if not c.ok]
    for c in checks:
        print(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=200, help="nightly runs to soak (default 200)")
    p.add_argument(
        "--every", type=float, default=1.0, help="seconds between nightly fires (default 1)"
    )
    p.add_argument("--warmup", type=int, default=None, help="cycles left out of the slopes")
    p.add_argument(
        "--rate", type=float, default=5.0, help="proxy operations and API read rounds a second"
    )
    p.add_argument("--verify-every", type=int, default=1, help="verify the ledger every N cycles")
    p.add_argument("--report-every", type=int, default=20)
    p.add_argument("--rss-slope", type=float, default=160.0, help="KiB a cycle (default 160)")
    p.add_argument("--count-slope", type=float, default=0.05, help="fds, threads a cycle")
    p.add_argument("--max-minutes", type=float, default=10.0)
    p.add_argument("--json", default=None, help="write the samples and summary here")
    p.add_argument("--keep", default=None, help="work in this directory and keep it")
    args = p.parse_args(argv)
    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        return soak(args, work)
    with tempfile.TemporaryDirectory(prefix="mindledger-soak-") as tmp:
        return soak(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
