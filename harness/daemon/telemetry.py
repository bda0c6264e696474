"""What the daemon says about itself: ``GET /metrics`` in the Prometheus text format.

Counts that live in the database are read when Prometheus scrapes, by :class:`StateCollector`
— one aggregate query each, nothing counted twice in memory: runs by status, trials by agent
and status, ledger entries by kind, and the query proxy's record per caller (folded from the
ledger's ``call`` and ``refuse`` entries as ``GET /calls`` folds them, incrementally: a scrape
reads only the entries appended since the last one). What happens only in this process is
measured here: request latencies (real histograms: per route and calling agent, and per proxy
target), the scheduler's fire times and the jobs in its queue (:class:`SchedulerWatch`, an
APScheduler listener), and the daemon's last verification of the ledger.

Every metric is named ``mindledger_…``; the README's "Observability" section lists them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_SUBMITTED,
    JobEvent,
    JobExecutionEvent,
)
from prometheus_client import CollectorRegistry, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.engine import Engine

from harness.daemon.memory import MemoryCollector
from harness.daemon.scheduler import NIGHTLY_PREFIX, RUN_PREFIX, DaemonScheduler
from ledger.calls import Calls, summarise
from ledger.predictions import Ledger

__all__ = [
    "CONTENT_TYPE",
    "LATENCY_BUCKETS",
    "NightlyEnd",
    "SchedulerWatch",
    "StateCollector",
    "Telemetry",
    "Verified",
    "job_kind",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format, version 0.0.4 (what every Prometheus reads)."""
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Seconds: from a cached read to a slow model's answer through the proxy."""


def job_kind(job_id: str) -> str:
    """A scheduler job as a metric's label: a nightly job and the expiry sweep by their id,
    every run-now job as ``run-now`` (one label value, not one per run)."""
    return "run-now" if job_id.startswith(RUN_PREFIX) else job_id


@dataclass(frozen=True)
class NightlyEnd:
    """How a nightly job ended: when (POSIX seconds), whether it raised (``error``), and the
    suite and matrix runs it made (None when it failed before making them)."""

    job: str
    ended_at: float
    error: str | None
    run_id: str | None
    matrix_run_id: str | None


@dataclass(frozen=True)
class Verified:
    """The daemon's last verification of the ledger: when it ended (POSIX seconds), how long it
    took, the entries it covered and the failures it found (none: intact)."""

    at: float
    seconds: float
    entries: int
    failures: tuple[str, ...]
    error: str | None = None
    """Why the verification could not run (the database, the key): not ok either."""

    @property
    def ok(self) -> bool:
        return not self.failures and self.error is None


class SchedulerWatch:
    """What the scheduler did, from its events: each job's last fire, the jobs handed to its
    executor and not yet finished, and each nightly job's last end. In memory: a restarted
    daemon starts with none."""

    def __init__(self, clock: Any = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self.last_fire: dict[str, float] = {}
        self.in_flight = 0
        self.nightly: dict[str, NightlyEnd] = {}

    def watch(self, scheduler: DaemonScheduler) -> None:
        scheduler.scheduler.add_listener(
            self.on_event, EVENT_JOB_SUBMITTED | EVENT_JOB_EXECUTED | EVENT_JOB_ERROR
        )

    def on_event(self, event: JobEvent) -> None:
        now = self.clock()
        with self._lock:
            if event.code == EVENT_JOB_SUBMITTED:
                self.last_fire[job_kind(event.job_id)] = now
                self.in_flight += 1
                return
            self.in_flight = max(0, self.in_flight - 1)
            if not event.job_id.startswith(NIGHTLY_PREFIX):
                return
            assert isinstance(event, JobExecutionEvent)
            runs = event.retval if isinstance(event.retval, tuple) else (None, None)
            error = None if event.exception is None else f"{type(event.exception).__name__}: "
            if event.exception is not None:
                error = (error or "") + str(event.exception)[:500]
            self.nightly[event.job_id] = NightlyEnd(event.job_id, now, error, *runs)

    def last_nightly(self) -> NightlyEnd | None:
        """The nightly job that ended last (None: none since the daemon started)."""
        with self._lock:
            ends = sorted(self.nightly.values(), key=lambda e: e.ended_at)
        return ends[-1] if ends else None


class StateCollector(Collector):
    """The counts read from the database at scrape time (see the module's docstring)."""

    def __init__(self, telemetry: Telemetry):
        self.telemetry = telemetry
        self._fold = Calls(asked=False)
        self._folded = 0
        self._fold_lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        t = self.telemetry
        with t.engine.connect() as conn:
            yield _gauge(
                "mindledger_runs",
                "Stored runs by status.",
                ["status"],
                conn.execute(sa.text("SELECT status, count(*) FROM runs GROUP BY status")),
            )
            yield _gauge(
                "mindledger_trials",
                "Stored trials by agent and status.",
                ["agent", "status"],
                conn.execute(
                    sa.text("SELECT agent, status, count(*) FROM trials GROUP BY agent, status")
                ),
            )
            by_kind = list(
                conn.execute(sa.text("SELECT kind, count(*) FROM ledger_entries GROUP BY kind"))
            )
            head = conn.execute(
                sa.text("SELECT seq, time FROM ledger_entries ORDER BY seq DESC LIMIT 1")
            ).first()
            yield _gauge(
                "mindledger_ledger_entries_by_kind", "Ledger entries by kind.", ["kind"], by_kind
            )
            size = 0 if head is None else int(head[0])
            yield _gauge("mindledger_ledger_entries", "Entries in the ledger.", [], [(size,)])
            yield from self._proxy(conn, size, None if head is None else str(head[1]))
            if t.scheduler is not None:
                yield from self._queue(conn)
        yield from self._verified()
        yield from self._scheduler()

    def _proxy(self, conn: sa.Connection, size: int, as_of: str | None) -> Iterator[Metric]:
        """The proxy's record per caller, folded from the entries appended since the last
        scrape (from the start when the ledger is shorter than what was folded: replaced)."""
        with self._fold_lock:
            if size < self._folded:
                self._fold, self._folded = Calls(asked=False), 0
            rows = conn.execute(
                sa.text(
                    "SELECT seq, kind, payload_json, time FROM ledger_entries "
                    "WHERE seq > :seq AND kind IN ('call', 'refuse') ORDER BY seq"
                ),
                {"seq": self._folded},
            )
            for seq, kind, payload, at in rows:
                self._fold.apply(int(seq), kind, json.loads(payload), str(at))
            self._folded = max(self._folded, size)
            tallies = self._fold.by_caller()
            calls = [(t.caller, t.target, t.calls) for t in tallies]
            refusals = [
                (t.caller, t.target, reason, n) for t in tallies for reason, n in t.refusals.items()
            ]
            rows_by_caller = summarise(tallies, as_of)
        yield _gauge(
            "mindledger_proxy_calls",
            "Calls the query proxy forwarded.",
            ["caller", "target"],
            calls,
        )
        yield _gauge(
            "mindledger_proxy_refusals",
            "Calls the query proxy refused, by reason.",
            ["caller", "target", "reason"],
            refusals,
        )
        yield _gauge(
            "mindledger_proxy_obligations",
            "The proxy's obligations per caller: opened, met, pending, abandoned "
            "(opened = met + pending + abandoned).",
            ["caller", "state"],
            [
                (caller, state, n)
                for caller, row in rows_by_caller.items()
                for state, n in row["obligations"].items()
            ],
        )

    def _queue(self, conn: sa.Connection) -> Iterator[Metric]:
        """Runs waiting for or in the scheduler's executor; on PostgreSQL, the batches waiting
        for workers."""
        t = self.telemetry
        assert t.scheduler is not None
        stored = sum(1 for job in t.scheduler.scheduler.get_jobs() if job.id.startswith(RUN_PREFIX))
        depth = [("scheduler", stored + t.watch.in_flight)]
        if (
            conn.dialect.name == "postgresql"
            and conn.execute(
                sa.text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            ).scalar_one()
        ):
            todo = conn.execute(
                sa.text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'")
            ).scalar_one()
            depth.append(("workers", int(todo)))
        yield _gauge(
            "mindledger_queue_depth",
            "Work waiting: scheduler jobs stored or handed to its executor and not finished; "
            "on PostgreSQL, batches queued for workers.",
            ["queue"],
            depth,
        )

    def _verified(self) -> Iterator[Metric]:
        v = self.telemetry.verified
        if v is None:
            return
        yield _gauge(
            "mindledger_ledger_last_verify_timestamp_seconds",
            "When the daemon last verified the ledger.",
            [],
            [(v.at,)],
        )
        yield _gauge(
            "mindledger_ledger_last_verify_ok",
            "1 when the last verification found the ledger intact.",
            [],
            [(int(v.ok),)],
        )
        yield _gauge(
            "mindledger_ledger_last_verify_duration_seconds",
            "How long the last verification took.",
            [],
            [(v.seconds,)],
        )

    def _scheduler(self) -> Iterator[Metric]:
        t = self.telemetry
        if t.scheduler is None:
            return
        yield _gauge(
            "mindledger_scheduler_running",
            "1 while the scheduler runs.",
            [],
            [(int(t.scheduler.running),)],
        )
        with t.watch._lock:
            fired = sorted(t.watch.last_fire.items())
            ends = sorted(t.watch.nightly.values(), key=lambda e: e.job)
        yield _gauge(
            "mindledger_scheduler_last_fire_timestamp_seconds",
            "When each job (run-now jobs together) last fired.",
            ["job"],
            fired,
        )
        nxt: dict[str, float] = {}
        for job in t.scheduler.scheduler.get_jobs():
            when = getattr(job, "next_run_time", None)  # None: paused, or not yet scheduled
            if when is not None:
                kind = job_kind(job.id)
                nxt[kind] = min(nxt.get(kind, when.timestamp()), when.timestamp())
        yield _gauge(
            "mindledger_scheduler_next_fire_timestamp_seconds",
            "When each job (run-now jobs: the soonest) fires next.",
            ["job"],
            sorted(nxt.items()),
        )
        yield _gauge(
            "mindledger_nightly_last_end_timestamp_seconds",
            "When each nightly job last ended.",
            ["job"],
            [(e.job, e.ended_at) for e in ends],
        )
        yield _gauge(
            "mindledger_nightly_last_ok",
            "1 when the nightly job's last end was without an error.",
            ["job"],
            [(e.job, int(e.error is None)) for e in ends],
        )


def _gauge(name: str, doc: str, labels: list[str], rows: Any) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for row in rows:
        *values, n = tuple(row)
        family.add_metric([str(v) for v in values], float(n))
    return family


class Telemetry:
    """The daemon's metrics registry: the histograms this process observes, the state the
    collector reads at scrape time, the scheduler's watch and the last verification."""

    def __init__(self, engine: Engine, ledger: Ledger, scheduler: DaemonScheduler | None = None):
        self.engine = engine
        self.ledger = ledger
        self.scheduler = scheduler
        self.watch = SchedulerWatch()
        if scheduler is not None:
            self.watch.watch(scheduler)
        self.verified: Verified | None = None
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Histogram(
            "mindledger_http_request_duration_seconds",
            "API requests by route, calling agent (operator, anonymous) and status.",
            ["method", "route", "agent", "code"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.upstream = Histogram(
            "mindledger_proxy_upstream_duration_seconds",
            "The proxy's calls to each target agent, until its answer (code: its HTTP status, "
            "or unreachable).",
            ["target", "code"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(StateCollector(self))
        self.registry.register(MemoryCollector())
        ProcessCollector(registry=self.registry)  # process_* (Linux: resident memory, fds, CPU)

    def observe_request(
        self, method: str, route: str, agent: str, code: int, seconds: float
    ) -> None:
        self.requests.labels(method, route, agent, str(code)).observe(seconds)

    def observe_upstream(self, target: str, code: int | None, seconds: float) -> None:
        self.upstream.labels(target, "unreachable" if code is None else str(code)).observe(seconds)

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format (reads the database)."""
        return generate_latest(self.registry)

    def verify_ledger(self, clock: Any = time.time) -> Verified:
        """Verify the ledger now and keep the result (never raises: an error is a result). An
        entry appended while it is verified is not read as a cut-off tail: the verifier itself
        reads the head again (:meth:`ledger._verifier.Verifier`)."""
        start = time.monotonic()
        try:
            head = self.ledger.head()
            failures = tuple(str(f) for f in self.ledger.verify())
            error = None
        except Exception as exc:  # the database or the key: reported, the daemon goes on
            head, failures, error = None, (), f"{type(exc).__name__}: {exc}"[:500]
        self.verified = Verified(
            at=clock(),
            seconds=time.monotonic() - start,
            entries=0 if head is None else head.seq,
            failures=failures,
            error=error,
        )
        return self.verified
