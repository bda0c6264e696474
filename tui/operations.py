"""The daemon's schedule and the worker queue as the dashboard shows them: plain data handed in
by the harness (which alone knows the scheduler and the queue) and pure functions from it to
table rows. No Textual, no I/O, no clock: ``now`` is in the data.

The harness builds :class:`ScheduleSnapshot` and :class:`QueueSnapshot` (see
``harness/cli/dashboard_cmd.py``) and passes the functions that build them to
:class:`tui.source.DashboardSource`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tui.state import MISSING, RunSummary, accuracy_cell, fmt_time

__all__ = [
    "QUEUE_COLUMNS",
    "SCHEDULE_COLUMNS",
    "WORKER_COLUMNS",
    "QueueBatch",
    "QueueSnapshot",
    "QueueView",
    "QueueWorker",
    "ScheduleSnapshot",
    "ScheduleView",
    "ScheduledJob",
    "queue_view",
    "schedule_view",
    "until_text",
]

SCHEDULE_COLUMNS = ("Job", "Trigger", "Next run", "In", "Then", "Last run", "Status", "Accuracy")
QUEUE_COLUMNS = ("Job", "Run", "Agent", "Items", "Status", "Attempts", "Worker", "Heartbeat")
WORKER_COLUMNS = ("Worker", "Last heartbeat", "Ago", "Batches", "State")


# -- the schedule ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledJob:
    """One job of the daemon's schedule: ``next_runs`` are ISO 8601 times (the first is the
    daemon's stored next run time when the daemon has stored the job); ``last_run`` is the
    latest run the job made, if any."""

    id: str
    name: str
    trigger: str
    next_runs: tuple[str, ...] = ()
    stored: bool = False
    last_run: RunSummary | None = None


@dataclass(frozen=True)
class ScheduleSnapshot:
    """The ``[schedule]`` settings and every scheduled job, as of ``now`` (ISO 8601, UTC)."""

    expression: str
    now: str
    jobs: tuple[ScheduledJob, ...] = ()
    notes: tuple[str, ...] = ()
    timezone: str = "UTC"


@dataclass(frozen=True)
class ScheduleView:
    title: str
    notes: tuple[str, ...]
    keys: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    last_runs: tuple[tuple[str, str], ...] = ()
    """Per row, the (id, suite) of the job's last run (empty strings when it made none)."""
    details: tuple[str, ...] = ()
    """Per row, the job in full for the line under the table: what it runs, its next run
    times and its last run's accuracy per agent."""


ACCURACY_WIDTH = 30
"""The widest the last run's accuracy cell may be (the run screen has every agent's)."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _parse(iso: str) -> dt.datetime | None:
    try:
        t = dt.datetime.fromisoformat(iso)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def until_text(now: str, then: str) -> str:
    """How long from ``now`` to ``then``: ``"in 14 h 59 min"``, ``"in 3 d 2 h"``, ``"due"``."""
    a, b = _parse(now), _parse(then)
    if a is None or b is None:
        return MISSING
    seconds = int((b - a).total_seconds())
    if seconds <= 0:
        return "due"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = max(1, rest // 60) if not (days or hours) else rest // 60
    if days:
        return f"in {days} d {hours} h"
    if hours:
        return f"in {hours} h {minutes} min"
    return f"in {minutes} min"


def _short_time(iso: str) -> str:
    """``"03-02 03:00"``: month, day, hour and minute (the year is in the first column)."""
    full = fmt_time(iso)
    return full[5:16] if len(full) >= 16 else full


def schedule_view(snap: ScheduleSnapshot) -> ScheduleView:
    """The schedule table: one row per job, its next run (and how soon), the two after it, and
    the last run it made with that run's status and accuracy."""
    rows = []
    for job in snap.jobs:
        first = job.next_runs[0] if job.next_runs else None
        last = job.last_run
        rows.append(
            (
                job.id,
                job.trigger,
                MISSING if first is None else fmt_time(first)[:16],
                MISSING if first is None else until_text(snap.now, first),
                " · ".join(_short_time(t) for t in job.next_runs[1:3]) or MISSING,
                MISSING if last is None else f"{last.id} ({fmt_time(last.created_at)[:16]})",
                MISSING if last is None else last.status,
                MISSING if last is None else _cut(accuracy_cell(last.agents), ACCURACY_WIDTH),
            )
        )
    unstored = [j.id for j in snap.jobs if not j.stored]
    notes = list(snap.notes)
    if unstored and len(unstored) == len(snap.jobs):
        notes.append(
            "The daemon has not stored these jobs yet (`mindledger serve` stores them): next "
            "runs are computed from the schedule."
        )
    elif unstored:
        notes.append("Not stored by the daemon yet (computed from the schedule): "
                     + ", ".join(unstored))
    if not snap.jobs:
        notes.append("No scheduled jobs: declare agents under [agents] in the configuration.")
    return ScheduleView(
        f"Schedule '{snap.expression}' ({snap.timezone}) · as of {fmt_time(snap.now)[:16]}",
        tuple(notes),
        tuple(j.id for j in snap.jobs),
        tuple(rows),
        tuple((j.last_run.id, j.last_run.suite) if j.last_run else ("", "") for j in snap.jobs),
        tuple(_detail(j) for j in snap.jobs),
    )


def _detail(job: ScheduledJob) -> str:
    runs = ", ".join(fmt_time(t)[:16] for t in job.next_runs) or "none (paused)"
    last = job.last_run
    made = ("no run yet" if last is None else
            f"last run {last.id}, {last.status}: {accuracy_cell(last.agents)}")
    return f"{job.id}: {job.name} · next runs {runs} · {made}"


# -- the queue ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueBatch:
    """One queued, running or failed batch of trials (a procrastinate job)."""

    job_id: int
    run_id: str
    agent: str
    items: int
    status: str
    """``todo`` (queued), ``doing`` (running), ``failed`` or ``aborted``."""
    attempts: int = 0
    worker_id: int | None = None
    seconds_since_heartbeat: float | None = None
    """Of the batch's worker; None when it has none."""
    stalled: bool = False
    """Running, and its worker sent no heartbeat within ``stalled_after`` (or is gone)."""


@dataclass(frozen=True)
class QueueWorker:
    """A worker procrastinate knows (one that has sent a heartbeat and not been pruned)."""

    id: int
    last_heartbeat: str
    seconds_since_heartbeat: float
    running: int = 0


@dataclass(frozen=True)
class QueueSnapshot:
    """The queue as of ``now``; ``available`` False (and ``reason``, for a person) when there
    is none, as with a SQLite database."""

    available: bool
    reason: str = ""
    batches: tuple[QueueBatch, ...] = ()
    workers: tuple[QueueWorker, ...] = ()
    stalled_after: float = 30.0
    now: str = ""


@dataclass(frozen=True)
class QueueView:
    headline: str
    batch_rows: tuple[tuple[str, ...], ...]
    batch_states: tuple[str, ...]
    worker_rows: tuple[tuple[str, ...], ...]


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    s = max(0, round(seconds))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago"


def queue_view(snap: QueueSnapshot) -> QueueView:
    """Counts first (queued, running, stalled, failed, workers), then one row per batch —
    stalled ones first — and one per worker."""
    if not snap.available:
        return QueueView(snap.reason or "no queue", (), (), ())
    state = {b.job_id: ("stalled" if b.stalled else b.status) for b in snap.batches}
    order = {"stalled": 0, "doing": 1, "todo": 2, "failed": 3, "aborted": 4}
    batches = sorted(snap.batches, key=lambda b: (order.get(state[b.job_id], 5), b.job_id))
    shown = {"todo": "queued", "doing": "running"}
    rows = tuple(
        (
            str(b.job_id),
            b.run_id,
            b.agent,
            str(b.items),
            shown.get(state[b.job_id], state[b.job_id]),
            str(b.attempts),
            MISSING if b.worker_id is None else str(b.worker_id),
            _ago(b.seconds_since_heartbeat),
        )
        for b in batches
    )
    counts = {k: sum(1 for b in snap.batches if state[b.job_id] == k) for k in order}
    alive = sum(1 for w in snap.workers if w.seconds_since_heartbeat < snap.stalled_after)
    headline = (
        f"{counts['todo']} queued · {counts['doing']} running · {counts['stalled']} stalled · "
        f"{counts['failed'] + counts['aborted']} failed · {alive} of {len(snap.workers)} "
        f"workers alive (stalled after {snap.stalled_after:g} s without a heartbeat)"
    )
    workers = tuple(
        (
            str(w.id),
            fmt_time(w.last_heartbeat),
            _ago(w.seconds_since_heartbeat),
            str(w.running),
            "alive" if w.seconds_since_heartbeat < snap.stalled_after else "stalled",
        )
        for w in sorted(snap.workers, key=lambda w: w.id)
    )
    return QueueView(
        headline, rows, tuple(shown.get(state[b.job_id], state[b.job_id]) for b in batches),
        workers,
    )
