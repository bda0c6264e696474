"""The daemon's scheduler: APScheduler 3 with its job store in mindledger's own database.

Jobs are stored (pickled references to the top-level functions below, with string arguments)
in the ``apscheduler_jobs`` table of the same database as the runs, so schedules survive a
restart. Three kinds of job:

* ``nightly:AGENT`` — the nightly suite of each declared agent (``settings.schedule``, a cron
  expression in UTC; for tests, every ``[schedule] every_seconds`` instead) with the ablation variants ``[schedule] ablate`` names for it (read when
  the job runs: a changed list changes no job), then the prediction matrix over the suite
  run's agents but its ablation variants, as ``[schedule.matrix]`` says (a matrix run whose
  params name the suite run it ``accompanies``: the suite's profile takes each agent's skill
  S from it; on PostgreSQL queued for ``mindledger worker`` processes,
  :mod:`harness.matrix.nightly`). A job already stored with the same trigger and arguments is kept as it is,
  so a restart does not move its next run time: runs missed while the daemon was down are
  *coalesced* into one (``coalesce=True``) if the latest is within ``misfire_grace_time``;
  Each fire of a nightly job is announced ahead of time (:meth:`DaemonScheduler.announcements`,
  ``GET /schedule/next``) under the run id it will use, :func:`harness.run.forecasting.
  scheduled_run_id` of the job's id and the time it is due: derived, not stored, so that the
  stored job's next run time alone keeps the announcement across a restart (agents commit
  their self-forecasts for that id until the fire time, their deadline). The job learns the
  time it was due from the executor (:class:`_FireTimes`), as APScheduler does not pass it;
* ``run:RUN_ID`` — a run-now request: execute a run that the API has already planned and stored;
* ``expire-predictions`` — every few minutes, record expiry of predictions past their deadline;
* ``prune-transcripts`` — at the nightly schedule, when ``[retention] transcripts_days`` is set:
  old trials' transcripts replaced by a dated marker (:mod:`ledger.retention`).

Every run the daemon starts, the matrix included, draws a **held-out** seed
(``create_run(..., held_out=True)``).

The job functions find what they run against (settings, store, ledger) in the
:class:`DaemonContext` made active by :meth:`DaemonScheduler.start` — a pickled job carries
only a reference to the function and its string arguments.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_STOPPED
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine

from harness.config.schedule_config import MatrixSchedule
from harness.config.settings import Settings
from harness.daemon.logs import run_context
from harness.daemon.memory import release_free_memory
from harness.matrix.nightly import plan_matrix_beside, schedule_to_json
from harness.matrix.runs import execute_matrix_run
from harness.run.build import PlanFields, plan_agents
from harness.run.forecasting import scheduled_run_id
from harness.run.runs import create_run, execute_stored_run, new_run_id
from ledger.predictions import Ledger
from ledger.retention import PruneReport, cutoff_before, prune_transcripts
from ledger.store import Store
from mindledger.errors import ConfigError, NotFoundError

__all__ = [
    "JOBS_TABLE",
    "Announcement",
    "DaemonContext",
    "DaemonScheduler",
    "execute_planned_run",
    "expire_predictions",
    "nightly_agents",
    "nightly_suite",
    "prune_transcripts_job",
    "stored_announcements",
]

log = logging.getLogger("mindledger.daemon")

SCHEDULE_FIELDS = PlanFields(
    agent="agents", control="agents", reference="references", ablate="schedule.ablate"
)
"""How a scheduled run's errors name what they refuse: the configuration's keys."""

JOBS_TABLE = "apscheduler_jobs"
"""The job store's table (created by APScheduler, next to mindledger's own tables)."""
NIGHTLY_PREFIX = "nightly:"
RUN_PREFIX = "run:"
EXPIRE_JOB = "expire-predictions"
RETENTION_JOB = "prune-transcripts"
FINISHED = ("complete", "incomplete", "interrupted")


class DaemonContext:
    """What the scheduled jobs run against: the settings, the store and the ledger. The
    nightly matrix is run as ``[schedule.matrix]`` says (:class:`MatrixSchedule`);
    ``matrix_items``, ``matrix_samples``, ``matrix_pilot``, ``matrix_kinds``,
    ``matrix_candidates``, ``matrix_conditions`` and ``matrix_queue`` override its keys (None:
    the setting)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        ledger: Ledger | None = None,
        *,
        matrix_items: int | None = None,
        matrix_samples: int | None = None,
        matrix_pilot: bool | None = None,
        matrix_kinds: Sequence[str] | None = None,
        matrix_candidates: int | None = None,
        matrix_conditions: Sequence[str] | None = None,
        matrix_queue: bool | None = None,
    ):
        self.settings = settings
        self.store = store
        self.ledger = ledger
        self._planned = threading.local()
        """The suite run this thread's nightly job stored (for its failure notice)."""
        self.stopping = threading.Event()
        """Set when the daemon stops: patient writes give up (:meth:`interrupt_patiently`)."""
        base = settings.schedule_matrix
        overrides: dict[str, Any] = {
            "items": matrix_items,
            "samples": matrix_samples,
            "pilot": matrix_pilot,
            "kinds": None if matrix_kinds is None else tuple(matrix_kinds),
            "candidates": matrix_candidates,
            "conditions": None if matrix_conditions is None else tuple(matrix_conditions),
            "queue": matrix_queue,
        }
        self.matrix: MatrixSchedule = replace(
            base, **{k: v for k, v in overrides.items() if v is not None}
        )

    def plan_run(
        self,
        *,
        suite: str,
        agents: Sequence[str] = (),
        references: Sequence[str] = (),
        ablate: Sequence[str] = (),
        run_id: str | None = None,
        fields: PlanFields = SCHEDULE_FIELDS,
    ) -> str:
        """Plan and store a run on a held-out seed (as ``run_id``, default a new id), with an
        ablation variant of each agent per module in ``ablate``; return its id. An unknown
        name is refused naming where it came from as ``fields`` calls it (the configuration's
        keys for a scheduled run, the request's fields for one the API asked for)."""
        planned = plan_agents(
            self.settings, agents=agents, references=references, ablate=ablate, fields=fields
        )
        run_id, _, _ = create_run(
            self.store, self.settings, suite=suite, planned=planned, held_out=True, run_id=run_id
        )
        return run_id

    def execute(self, run_id: str) -> None:
        """Run every missing trial of a stored run (in this thread's own event loop; every
        line logged meanwhile names the run: :func:`harness.daemon.logs.run_context`)."""
        with run_context(run_id):
            log.info("run %s: executing", run_id)
            asyncio.run(
                execute_stored_run(self.store, self.settings, run_id, ledger=self.ledger)
            )
            log.info("run %s: %s", run_id, self.outcome(run_id))

    def outcome(self, run_id: str) -> str:
        """A finished run as its last log line says it: its status, its trials and which
        agents' failed, ``complete: 208 trials, 2 failed (local 1, local-control 1)``."""
        status = self.store.get_run(run_id).status
        try:
            counts = self.store.failure_counts([run_id]).get(run_id, {})
        except Exception:  # the line must still be logged: the status alone then
            log.exception("could not count the trials of run %s", run_id)
            return status
        trials = sum(c.trials for c in counts.values())
        failed = {agent: c.failed for agent, c in sorted(counts.items()) if c.failed}
        if not failed:
            return f"{status}: {trials} trials, none failed"
        who = ", ".join(f"{agent} {n}" for agent, n in failed.items())
        return f"{status}: {trials} trials, {sum(failed.values())} failed ({who})"

    def run_suite(
        self, *, suite: str, agents: Sequence[str], run_id: str | None = None
    ) -> str:
        """Plan and execute a scheduled suite for ``agents``, with an ablation variant per
        module that ``[schedule] ablate`` names for them, as ``run_id`` (default: a new id);
        return the run id."""
        wanted = self.settings.schedule_ablations
        ablate = tuple(dict.fromkeys(m for a in agents for m in wanted.get(a, ())))
        run_id = self.plan_run(suite=suite, agents=agents, ablate=ablate, run_id=run_id)
        self._planned.run_id = run_id
        with run_context(run_id):
            log.info("scheduled run %s: suite %s, agents %s", run_id, suite, ", ".join(agents))
            self.execute(run_id)
        return run_id

    def run_matrix_beside(self, suite_run: str) -> str | None:
        """The prediction matrix (held-out seed) over the agents of the suite run
        ``suite_run`` that can take part in it (not its ablation variants), linked to it
        (``accompanies``), as ``[schedule.matrix]`` says (:mod:`harness.matrix.nightly`):
        on PostgreSQL (``queue = "auto"``) one job deferred for the workers, which plan it and
        run its items; else planned and executed here. Returns the matrix run's id, or None
        when there is no ledger or no agent can take part."""
        if self.ledger is None:
            log.warning("no prediction ledger: no matrix beside run %s", suite_run)
            return None
        if not self.matrix.enabled:
            log.info("[schedule.matrix] enabled = false: no matrix beside run %s", suite_run)
            return None
        postgresql = self.store.engine.dialect.name == "postgresql"
        if self.matrix.queued(postgresql):
            from harness.queue.batches import defer_nightly_matrix

            run_id = defer_nightly_matrix(
                self.settings, suite_run, schedule_to_json(self.matrix)
            )
            log.info("matrix run %s beside run %s queued for the workers", run_id, suite_run)
            return run_id
        planned = plan_matrix_beside(self.store, self.settings, suite_run, self.matrix)
        if planned is None:
            return None
        log.info("scheduled matrix run %s beside run %s", planned, suite_run)
        with run_context(planned):
            log.info("run %s: executing", planned)
            try:
                execute_matrix_run(self.store, self.settings, self.ledger, planned)
            except BaseException:
                # a matrix run that raised stayed 'running' for good (found by the fault tests:
                # the database locked past its busy timeout); the suite's runs are marked alike
                self.interrupt_patiently(planned)
                raise
            log.info("run %s: %s", planned, self.outcome(planned))
        return planned

    def interrupt_patiently(self, run_id: str) -> None:
        """Mark a run whose job raised ``interrupted`` (unless it finished), trying again until
        the database takes it or the daemon stops. What made the run fail (the disk full, the
        database locked past its busy timeout) often refuses that write too, once: the run then
        stayed ``running`` for as long as the daemon lived, in ``runs`` and on the dashboard, and
        nothing counted the nights after it as idle (found by the disk-full fault test). A
        daemon stopped meanwhile leaves it to the next start's recovery."""
        delay = 0.5
        while True:
            try:
                self.store.transition_run(run_id, "interrupted", unless=FINISHED)
                return
            except sa.exc.OperationalError as exc:
                log.warning("could not mark run %s interrupted (%s); trying again in %g s",
                            run_id, _reason(exc), delay)
            if self.stopping.wait(delay):
                return
            delay = min(2 * delay, 10.0)

    def prune(self) -> PruneReport | None:
        """Prune the transcripts older than ``[retention] transcripts_days`` (None: kept)."""
        days = self.settings.retention_transcripts_days
        if days is None:
            return None
        engine = self.store.engine
        report = prune_transcripts(
            engine, before=cutoff_before(days, self.store.clock()), clock=self.store.clock
        )
        log.info("retention: %s", report.describe())
        return report

    def nightly(
        self, *, suite: str, agents: Sequence[str], run_id: str | None = None
    ) -> tuple[str, str | None]:
        """The nightly work: the suite for ``agents`` (with their scheduled ablations) as
        ``run_id`` (the id it was announced under; default a new one), then the matrix beside
        it; returns (suite run id, matrix run id or None). A failed nightly run
        (it raised, or :func:`harness.publish.notify.run_failure` says why it failed) is logged and
        announced (:meth:`report_failure`); an exception is raised again after that."""
        self._planned.run_id = None
        try:
            run_id = self.run_suite(suite=suite, agents=agents, run_id=run_id)
            matrix_run = self.run_matrix_beside(run_id)
        except Exception as exc:
            # the run this job stored before it failed, if it stored one
            if self._planned.run_id is not None:
                self.interrupt_patiently(self._planned.run_id)
            self.report_failure(agents, self._planned.run_id, _reason(exc))
            raise
        self.check_regressions(run_id, agents)
        self.check_failure(run_id, agents)
        return run_id, matrix_run

    def check_failure(self, run_id: str, agents: Sequence[str]) -> None:
        """Announce the finished run ``run_id`` if it failed (never raises)."""
        from harness.publish.notify import run_failure

        try:
            reason = run_failure(self.store, self.settings, run_id)
        except Exception:
            log.exception("could not tell whether run %s failed", run_id)
            return
        if reason is not None:
            self.report_failure(agents, run_id, reason)

    def report_failure(self, agents: Sequence[str], run_id: str | None, reason: str) -> None:
        """Log a failed nightly run and notify it when ``[notify]`` is configured (never
        raises: a failed delivery is logged and recorded)."""
        from harness.publish.notify import notify_run_failed

        try:
            notify_run_failed(self.store, self.settings, agents, run_id, reason)
        except Exception:
            log.exception("nightly run %s of %s failed (%s); notifying it failed too",
                          run_id, ", ".join(agents), reason)

    def check_regressions(self, run_id: str, agents: Sequence[str]) -> None:
        """When ``[notify]`` is configured: check each agent's history at the finished run
        and notify a regression that begins on it (:mod:`harness.publish.notify`). Never raises: a
        failed check or delivery is logged (and a delivery recorded), the daemon goes on."""
        if not self.settings.notify.enabled:
            return
        from harness.publish.notify import notify_regressions

        for agent in agents:
            try:
                notify_regressions(self.store, self.settings, agent, run_id)
            except Exception:
                log.exception("regression check of %s after run %s failed", agent, run_id)

    def expire(self) -> list[str]:
        """Record expiry of every open prediction past its deadline."""
        return [] if self.ledger is None else self.ledger.expire_overdue()


def _reason(exc: BaseException) -> str:
    """An exception as a failure's reason: its type and first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


_active: DaemonContext | None = None
_active_lock = threading.Lock()


def _context() -> DaemonContext:
    with _active_lock:
        if _active is None:
            raise RuntimeError("no daemon context is active: start a DaemonScheduler first")
        return _active


def nightly_suite(agent: str, suite: str) -> tuple[str, str | None]:
    """Job: the nightly suite of one agent, then the matrix beside it (held-out seeds); returns
    their run ids (the daemon's health reports them). The suite run takes the id this fire was
    announced under (:func:`announced_run_id`)."""
    context = _context()
    run_id = announced_run_id(NIGHTLY_PREFIX + agent, context.store)
    try:
        return context.nightly(suite=suite, agents=(agent,), run_id=run_id)
    finally:  # what the night freed, back to the system (glibc keeps it otherwise: issue 27)
        release_free_memory()


_due: dict[str, dt.datetime] = {}
"""The time each job was due when it was last handed to the executor (:class:`_FireTimes`)."""
_due_lock = threading.Lock()


def announced_run_id(job_id: str, store: Store) -> str:
    """The run id the fire of ``job_id`` now executing was announced under: derived from the
    time it was due (the earliest of its coalesced fire times, the one announced). A new id,
    with a warning, when that time is unknown (the job was called outside the scheduler) or a
    run with the derived id exists already."""
    with _due_lock:
        due = _due.get(job_id)
    if due is None:
        log.warning("%s: the time it was due is unknown; its run gets a new id", job_id)
        return new_run_id()
    run_id = scheduled_run_id(job_id, due)
    if _stored(store, run_id):
        log.warning("%s: run %s (due %s) exists already; this one gets a new id", job_id, run_id,
                    due.isoformat())
        return new_run_id()
    return run_id


def _stored(store: Store, run_id: str) -> bool:
    try:
        store.get_run(run_id)
    except NotFoundError:
        return False
    return True


class _FireTimes(ThreadPoolExecutor):
    """The thread pool executor, noting the time each job was due before it runs it (APScheduler
    3 passes a job its arguments only): the next run time it had stored, which is the time its
    run was announced for — also when missed fires are coalesced after downtime (APScheduler
    then passes the latest missed time alone; the earliest is the one announced, and the one
    forecasts were committed for)."""

    def submit_job(self, job: Job, run_times: list[dt.datetime]) -> None:
        due = getattr(job, "next_run_time", None) or (run_times[0] if run_times else None)
        if due is not None:
            with _due_lock:
                _due[job.id] = due
            if run_times and run_times[-1] > due:
                fires = coalesced_fires(job.trigger, due, run_times[-1])
                log.warning(
                    "%s: %s fires due from %s to %s %s into this one (the scheduler was "
                    "busy or the daemon down)", job.id,
                    f"{fires}" if fires < _COUNTED else f"{_COUNTED:,} or more",
                    due.isoformat(), run_times[-1].isoformat(), COALESCED,
                )
        super().submit_job(job, run_times)


COALESCED = "coalesced"
"""The word of the log line that says how many fires of a job one submission covers."""
_COUNTED = 100_000
"""Fires counted at most for that line (a 0.1 s test schedule after a day down: 864,000)."""


def coalesced_fires(
    trigger: Any, first: dt.datetime, last: dt.datetime, *, limit: int = _COUNTED
) -> int:
    """How many times ``trigger`` fires from ``first`` to ``last``, both included (both fire
    times of it): the fires APScheduler coalesces into one submission when it finds a job late.
    Counted up to ``limit``."""
    fires, at = 1, first
    while fires < limit:
        following = trigger.get_next_fire_time(at, at + dt.timedelta(microseconds=1))
        if following is None or following > last:
            break
        fires, at = fires + 1, following
    return fires


@dataclass(frozen=True)
class Announcement:
    """The next fire of a nightly job, announced: the run it will start, and when."""

    job: str
    agent: str
    suite: str
    fire_time: dt.datetime
    run_id: str

    @property
    def deadline(self) -> dt.datetime:
        """Forecasts for the run are taken until it fires."""
        return self.fire_time


def execute_planned_run(run_id: str) -> None:
    """Job: execute a run planned by a run-now request."""
    _context().execute(run_id)


def expire_predictions() -> None:
    """Job: expire the predictions past their deadline."""
    expired = _context().expire()
    if expired:
        log.info("expired %d predictions", len(expired))


def prune_transcripts_job() -> None:
    """Job: prune the transcripts past ``[retention] transcripts_days``."""
    _context().prune()


def nightly_agents(settings: Settings) -> list[str]:
    """The declared agents that get a nightly suite: all but those serving as another agent's
    control (a run of the agent includes its control already)."""
    controls = {a.control for a in settings.agents.values() if a.control}
    return sorted(name for name in settings.agents if name not in controls)


_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _crontab_weekday(token: str) -> int:
    token = token.strip().lower()
    if token[:3] in _WEEKDAYS and len(token) == 3:
        return _WEEKDAYS.index(token)
    if token.isdigit() and int(token) <= 7:
        return int(token)
    raise ValueError(f"day of week {token!r} is not 0-7 or sun-sat")


def crontab_weekdays(field: str) -> str:
    """A crontab day-of-week field (0 or 7 = Sunday, 1 = Monday, names, lists, ranges, steps)
    as APScheduler reads it. APScheduler 3 counts numeric days from Monday = 0, so passing the
    field through as ``CronTrigger.from_crontab`` does would turn ``1-5`` (Monday to Friday in
    crontab) into Tuesday to Saturday; the days are spelled out by name instead."""
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.split(","):
        span, slash, step_text = part.partition("/")
        step = int(step_text) if slash and step_text.isdigit() else 1
        if slash and (not step_text.isdigit() or step < 1):
            raise ValueError(f"step {step_text!r} in day of week is not a positive number")
        if span == "*":
            lo, hi = 0, 6
        elif "-" in span:
            first, last = span.split("-", 1)
            lo, hi = _crontab_weekday(first), _crontab_weekday(last)
            if hi < lo:
                raise ValueError(f"day-of-week range {span!r} runs backwards")
        else:
            lo = _crontab_weekday(span)
            hi = 7 if slash else lo
        days.update(d % 7 for d in range(lo, hi + 1, step))
    return ",".join(_WEEKDAYS[d] for d in sorted(days))


def crontab(expression: str) -> CronTrigger:
    """The trigger of a five-field crontab expression, in UTC, with crontab's day-of-week
    numbering (see :func:`crontab_weekdays`). Raises ValueError on a malformed expression."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"wrong number of fields; got {len(fields)}, expected 5")
    minute, hour, day, month, weekday = fields
    return CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=crontab_weekdays(weekday),
        timezone=dt.UTC,
    )


def _cron(expression: str) -> CronTrigger:
    try:
        return crontab(expression)
    except ValueError as exc:
        raise ConfigError(
            f"expected a cron expression like '0 3 * * *', got {expression!r} ({exc})",
            key="schedule",
        ) from None


def nightly_trigger(settings: Settings) -> CronTrigger | IntervalTrigger:
    """When the nightly job fires: ``settings.schedule``'s cron expression, or every
    ``settings.schedule_every`` seconds when that test-only setting is given (``[schedule]
    every_seconds``: the soak benchmark and the fault tests)."""
    if settings.schedule_every is not None:
        return IntervalTrigger(seconds=settings.schedule_every, timezone=dt.UTC)
    return _cron(settings.schedule)


class _PatientJobStore(SQLAlchemyJobStore):
    """APScheduler's SQLAlchemy job store, whose ``update_job`` (the next run time saved after
    a fire) is tried again until the database takes it. APScheduler 3 does not catch a failure
    there: with the database locked past its busy timeout, or the disk full, at the moment a
    job fired, the scheduler's thread died and no job ever fired again while ``/health`` said
    ``running``; and a next run time left unsaved would fire the same night twice."""

    def update_job(self, job: Job) -> None:
        delay = 0.5
        while True:
            try:
                super().update_job(job)
                return
            except sa.exc.OperationalError as exc:
                scheduler = getattr(self, "_scheduler", None)
                if scheduler is None or scheduler.state == STATE_STOPPED:
                    raise
                log.warning("could not save the schedule (%s); trying again in %g s",
                            _reason(exc), delay)
                time.sleep(delay)
                delay = min(2 * delay, 10.0)


class _StoppableScheduler(BackgroundScheduler):
    """BackgroundScheduler that does nothing once stopped. APScheduler 3's loop wakes up once
    more after ``shutdown()`` and processes due jobs: submitting them to the executors already
    shut down fails, yet it advances their next run time in the store, so a run due at shutdown
    (or while paused) would be lost instead of coalesced after the restart."""

    def _process_jobs(self) -> float | None:
        if self.state == STATE_STOPPED:
            return None
        try:
            result: float | None = super()._process_jobs()
        except Exception:  # never let the scheduler's thread die: look again shortly
            log.exception("the scheduler could not process its jobs; trying again")
            return float(self.jobstore_retry_interval)
        return result


class DaemonScheduler:
    """APScheduler's BackgroundScheduler over the database of ``context.store``.

    ``suite`` is the nightly suite; ``misfire_grace_time`` is how late (seconds) a missed run may
    still start after downtime (None: however late), missed runs being coalesced into one;
    ``max_workers`` is how many runs execute at once; ``expire_every`` is the period (seconds)
    of the expiry sweep (None: no sweep).
    """

    def __init__(
        self,
        engine: Engine,
        context: DaemonContext,
        *,
        suite: str = "quick",
        misfire_grace_time: int | None = 23 * 3600,
        max_workers: int = 1,
        expire_every: float | None = 300.0,
    ):
        self.context = context
        self.suite = suite
        self.misfire_grace_time = misfire_grace_time
        self.expire_every = expire_every
        self.trigger = nightly_trigger(context.settings)
        self.scheduler = _StoppableScheduler(
            jobstores={"default": _PatientJobStore(engine=engine, tablename=JOBS_TABLE)},
            executors={"default": _FireTimes(max_workers)},
            job_defaults={
                "coalesce": True,
                "misfire_grace_time": misfire_grace_time,
                "max_instances": 1,
            },
            timezone=dt.UTC,
        )

    @property
    def running(self) -> bool:
        return bool(self.scheduler.running)

    def start(self, *, paused: bool = False) -> None:
        """Make this scheduler's context the active one, bring the stored nightly jobs in line
        with the settings, then start processing (unless ``paused``)."""
        global _active
        with _active_lock:
            _active = self.context
        self.scheduler.start(paused=True)
        self.announce_nightly(self.sync_nightly())
        self.finish_left_runs()
        if self.expire_every:
            self.scheduler.add_job(
                expire_predictions,
                IntervalTrigger(seconds=self.expire_every, timezone=dt.UTC),
                id=EXPIRE_JOB,
                name="expire overdue predictions",
                replace_existing=True,
            )
        self.sync_retention()
        if not paused:
            self.scheduler.resume()

    def resume(self) -> None:
        self.scheduler.resume()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop; with ``wait``, after the running jobs finish. The jobs stay stored."""
        global _active
        self.context.stopping.set()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=wait)
        with _active_lock:
            if _active is self.context:
                _active = None

    def sync_nightly(self) -> list[str]:
        """Add a nightly job for every agent that should have one, replace those whose
        schedule or suite changed, remove those of agents no longer declared; keep the next run
        time of unchanged ones (so their missed runs coalesce), updating only their misfire
        grace time. Returns the nightly job ids."""
        wanted = {NIGHTLY_PREFIX + a: a for a in nightly_agents(self.context.settings)}
        for job in self.scheduler.get_jobs():
            if job.id.startswith(NIGHTLY_PREFIX) and job.id not in wanted:
                job.remove()
        for job_id, agent in wanted.items():
            args = (agent, self.suite)
            existing = self.scheduler.get_job(job_id)
            if (
                existing is not None
                and str(existing.trigger) == str(self.trigger)
                and tuple(existing.args) == args
            ):
                if existing.misfire_grace_time != self.misfire_grace_time or not existing.coalesce:
                    # the stored job keeps its next run time: only how misses are treated changes
                    existing.modify(misfire_grace_time=self.misfire_grace_time, coalesce=True)
                continue
            self.scheduler.add_job(
                nightly_suite,
                self.trigger,
                args=args,
                id=job_id,
                name=f"nightly {self.suite} suite and matrix of {agent}",
                replace_existing=True,
            )
        return sorted(wanted)

    def announce_nightly(self, job_ids: Sequence[str]) -> None:
        """Say once, at the start, what the nightly jobs will do and when the next fires, or
        loudly that there is nothing to run: a daemon serving no declared agent ran nothing,
        night after night, and said nothing about it."""
        if not job_ids:
            log.warning(
                "nightly: nothing to run: no agent is declared (an [agents.NAME] table in "
                "mindledger.toml: README, 'Connecting a real agent'); the API and the proxy "
                "serve meanwhile"
            )
            return
        agents = [job_id.removeprefix(NIGHTLY_PREFIX) for job_id in job_ids]
        times = [
            nrt
            for job_id in job_ids
            if (job := self.scheduler.get_job(job_id)) is not None
            and (nrt := getattr(job, "next_run_time", None)) is not None
        ]
        when = (
            f"every {self.context.settings.schedule_every:g} s"
            if self.context.settings.schedule_every is not None
            else f"on schedule {self.context.settings.schedule!r} (UTC)"
        )
        nxt = ""
        if times:
            first = min(times).astimezone(dt.UTC)
            nxt = (
                f"; next at {first:%Y-%m-%d %H:%M} UTC"
                if first > dt.datetime.now(dt.UTC)
                else f"; due now (its time, {first:%Y-%m-%d %H:%M} UTC, passed while the daemon "
                "was down)"
            )
        log.info("nightly: the %s suite for %s, %s%s", self.suite, ", ".join(agents), when, nxt)

    def sync_retention(self) -> bool:
        """Store the nightly retention job (at the nightly schedule) when ``[retention]
        transcripts_days`` is set, else remove it; returns whether it is stored."""
        if self.context.settings.retention_transcripts_days is None:
            if self.scheduler.get_job(RETENTION_JOB) is not None:
                self.scheduler.remove_job(RETENTION_JOB)
            return False
        existing = self.scheduler.get_job(RETENTION_JOB)
        if existing is None or str(existing.trigger) != str(self.trigger):
            self.scheduler.add_job(
                prune_transcripts_job,
                self.trigger,
                id=RETENTION_JOB,
                name="prune old transcripts ([retention] transcripts_days)",
                replace_existing=True,
            )
        return True

    def finish_left_runs(self) -> list[str]:
        """The held-out runs a previous daemon left ``running`` or ``interrupted`` (killed, or
        stopped in the middle of a run): a suite run is queued to finish (a run-now job: its
        missing trials only); a matrix run, which does not resume, is marked ``interrupted``.
        SQLite only: on PostgreSQL queue workers on other machines may be running them.
        Returns the ids of the suite runs queued."""
        store = self.context.store
        if store.engine.dialect.name != "sqlite":
            return []
        with store.engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT id, suite FROM runs WHERE held_out AND status IN "
                    "('running', 'interrupted') ORDER BY created_at"
                )
            ).all()
        queued = []
        for run_id, suite in rows:
            if suite == "matrix":
                if store.transition_run(run_id, "interrupted", unless=FINISHED):
                    log.warning("matrix run %s was left unfinished: marked interrupted", run_id)
                continue
            log.warning("run %s was left unfinished by the last daemon: finishing it", run_id)
            self.run_now(run_id)
            queued.append(run_id)
        return queued

    def run_now(self, run_id: str) -> str:
        """Queue the execution of a planned run; returns the job id. The job is stored, so a
        restart before it runs still runs it."""
        job = self.scheduler.add_job(
            execute_planned_run,
            "date",
            args=(run_id,),
            id=RUN_PREFIX + run_id,
            name=f"run-now {run_id}",
            run_date=dt.datetime.now(dt.UTC),
            misfire_grace_time=None,
            replace_existing=True,
        )
        return str(job.id)

    def announcements(self, agent: str | None = None) -> list[Announcement]:
        """The next fire of each nightly job (``agent``'s alone, when given) with the run id it
        will use; a paused job announces nothing."""
        return _announce(self.scheduler.get_jobs(), agent)

    def announced(self, run_id: str) -> Announcement | None:
        """The announcement of the run ``run_id``, if a nightly job's next fire will start it."""
        return next((a for a in self.announcements() if a.run_id == run_id), None)

    def jobs(self) -> list[dict[str, Any]]:
        """The stored jobs as plain data."""
        return [_job_dict(j) for j in self.scheduler.get_jobs()]


def _announce(jobs: Sequence[Job], agent: str | None) -> list[Announcement]:
    out = []
    for job in jobs:
        nrt = getattr(job, "next_run_time", None)
        if not job.id.startswith(NIGHTLY_PREFIX) or nrt is None:
            continue
        who, suite = str(job.args[0]), str(job.args[1])
        if agent is not None and who != agent:
            continue
        at = nrt.astimezone(dt.UTC)
        out.append(Announcement(job.id, who, suite, at, scheduled_run_id(job.id, at)))
    return sorted(out, key=lambda a: (a.fire_time, a.agent))


def stored_announcements(engine: Engine, agent: str | None = None) -> list[Announcement]:
    """The announcements of the nightly jobs stored in the database ``engine`` (as
    :meth:`DaemonScheduler.announcements`), read without a running scheduler: at the machine
    (``mindledger forecast``), whether the daemon runs or not."""
    jobstore = SQLAlchemyJobStore(engine=engine, tablename=JOBS_TABLE)
    jobstore.start(BackgroundScheduler(timezone=dt.UTC), "default")  # never started itself
    # (not jobstore.shutdown(): it disposes of the engine, which is the caller's)
    return _announce(jobstore.get_all_jobs(), agent)


def _job_dict(job: Job) -> dict[str, Any]:
    nrt = getattr(job, "next_run_time", None)
    return {
        "id": job.id,
        "name": job.name,
        "trigger": str(job.trigger),
        "next_run_time": nrt.isoformat() if nrt else None,
    }
