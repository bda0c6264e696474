"""Whether the daemon is alive: the checks behind ``GET /health``.

Three parts, each checked within :data:`CHECK_TIMEOUT` seconds so that a stuck part is
reported rather than waited for:

* the **scheduler**: running (its thread alive), paused, stopped, or off (``serve
  --no-scheduler``: nothing to run, which is not a fault), and its next fire;
* the **database**: a query that needs the write lock (SQLite: ``BEGIN IMMEDIATE`` on a
  connection of its own with a short busy timeout; a database another process holds locked is
  not ok), or ``SELECT 1`` with a statement timeout (PostgreSQL);
* the **ledger**: its head is readable, and the daemon's last verification of it (if any)
  found it intact.

Besides: when the last nightly job ended and how (since the daemon started).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import anyio.to_thread
import sqlalchemy as sa

from harness.daemon.services import Services
from harness.daemon.telemetry import Telemetry

__all__ = [
    "CHECK_TIMEOUT",
    "Check",
    "SchedulerState",
    "check_all",
    "in_thread",
    "scheduler_state",
]

T = TypeVar("T")

CHECK_TIMEOUT = 2.0
"""Seconds a check may take before it counts as failed."""

Check = dict[str, Any]
"""One part's result: ``ok`` and what was found."""


def _iso(ts: float | None) -> str | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).isoformat()


SchedulerState = Literal["running", "paused", "stopped", "off"]


def scheduler_state(services: Services) -> SchedulerState:
    """``running``, ``paused``, ``stopped`` or ``off`` (the daemon has no scheduler)."""
    sched = services.scheduler
    if sched is None:
        return "off"
    from apscheduler.schedulers.base import STATE_PAUSED, STATE_RUNNING

    state = sched.scheduler.state
    thread = getattr(sched.scheduler, "_thread", None)
    if state == STATE_RUNNING and (thread is None or thread.is_alive()):
        return "running"
    if state == STATE_PAUSED:
        return "paused"
    return "stopped"


def _scheduler(services: Services) -> Check:
    state = scheduler_state(services)
    out: Check = {"ok": state in ("running", "off"), "state": state}
    sched = services.scheduler
    if sched is not None:
        times = [
            j.next_run_time.timestamp()
            for j in sched.scheduler.get_jobs()
            if getattr(j, "next_run_time", None) is not None
        ]
        out["next_fire"] = _iso(min(times)) if times else None
    return out


def _database(services: Services) -> Check:
    engine = services.engine
    start = time.monotonic()
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if path and path != ":memory:":
        conn = sqlite3.connect(path, timeout=CHECK_TIMEOUT, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")  # the write lock: refused while another holds it
            conn.execute("SELECT count(*) FROM runs WHERE 0")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    else:
        with engine.connect() as c:
            if engine.dialect.name == "postgresql":
                c.execute(sa.text(f"SET LOCAL statement_timeout = {int(CHECK_TIMEOUT * 1000)}"))
            c.execute(sa.text("SELECT 1"))
    return {"ok": True, "seconds": round(time.monotonic() - start, 4)}


def _ledger(services: Services, telemetry: Telemetry | None) -> Check:
    head = services.ledger.head()
    out: Check = {
        "ok": True,
        "entries": 0 if head is None else head.seq,
        "head": None if head is None else head.hash,
    }
    verified = None if telemetry is None else telemetry.verified
    if verified is not None:
        out["ok"] = verified.ok
        out["last_verify"] = {
            "at": _iso(verified.at),
            "ok": verified.ok,
            "entries": verified.entries,
            "seconds": round(verified.seconds, 3),
            "failures": list(verified.failures[:5]),
            "error": verified.error,
        }
    return out


async def in_thread(work: Callable[[], T]) -> T:
    """``work`` in a worker thread, abandoned (left to finish on its own) when the caller is
    cancelled: a timeout around it is a bound, whatever the thread is stuck on."""
    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


async def _within(name: str, check: Callable[[], Check]) -> Check:
    """``check`` run in a worker thread, or a failed check if it raised or took longer than
    :data:`CHECK_TIMEOUT` (the thread is abandoned)."""
    try:
        return await asyncio.wait_for(in_thread(check), CHECK_TIMEOUT + 1.0)
    except TimeoutError:
        return {"ok": False, "error": f"{name}: no answer within {CHECK_TIMEOUT + 1.0:g} s"}
    except (sqlite3.Error, sa.exc.SQLAlchemyError) as exc:
        detail = str(exc).splitlines()[0][:300]
        return {"ok": False, "error": f"{type(exc).__name__}: {detail}"}
    except Exception as exc:  # a health check reports, never raises
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _last_nightly(services: Services, telemetry: Telemetry | None) -> dict[str, Any] | None:
    end = None if telemetry is None else telemetry.watch.last_nightly()
    if end is None:
        return None
    status = None
    if end.run_id is not None:
        try:
            status = services.store.get_run(end.run_id).status
        except Exception:  # the database's check says why
            status = None
    return {
        "job": end.job,
        "ended_at": _iso(end.ended_at),
        "outcome": "failed" if end.error is not None else "ended",
        "error": end.error,
        "run": end.run_id,
        "status": status,
        "matrix_run": end.matrix_run_id,
    }


async def check_all(services: Services) -> tuple[bool, dict[str, Any]]:
    """Every part's check, and whether all are ok."""
    telemetry = services.telemetry
    checks = {
        "scheduler": await _within("scheduler", lambda: _scheduler(services)),
        "database": await _within("database", lambda: _database(services)),
        "ledger": await _within("ledger", lambda: _ledger(services, telemetry)),
    }
    nightly = await _within(
        "nightly", lambda: {"ok": True, "last": _last_nightly(services, telemetry)}
    )
    return all(c["ok"] for c in checks.values()), {
        "checks": checks,
        "last_nightly": nightly.get("last"),
    }
