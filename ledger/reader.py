"""What the dashboard's runs and run screens read, asked in SQL through a DBAPI connection.

One :class:`Reader` holds one connection and asks every question once, in SQL written for
both SQLite and PostgreSQL: a run, its agents, its trial counts and failures, its items' bodies
and trials' columns (what :func:`reports._data.load_run` turns into arrays), its judgements, the
query proxy's ledger entries and the complete runs of a suite (for the accompanying matrix).

There is one implementation of each question. :meth:`Reader.open` reads a database through
its own driver — :mod:`sqlite3`, or psycopg — without importing SQLAlchemy (which takes longer
to import than the dashboard takes to show a run), and only when its recorded migrations are
exactly :data:`ledger.schema.MIGRATION_IDS`, as :mod:`ledger.catalog` does;
:meth:`ledger.store.Store.reader` hands out a Reader over one of the engine's pooled
connections (``engine.raw_connection()``), so the Store asks the same SQL and decodes the
same rows. ``tests/ledger/test_reader.py`` checks that the two give equal values on SQLite and
PostgreSQL, and that the SQL names only the columns of :data:`COLUMNS_READ`.

A Reader opened by :meth:`Reader.open` is shared by the dashboard's worker threads: a lock
lets one question through at a time.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ledger.catalog import CHUNK, FAILURE_COUNTS_SQL, PG_CONNECT_TIMEOUT, FailureCounts
from ledger.schema import MIGRATION_IDS, MIGRATIONS_TABLE
from mindledger.errors import NotFoundError

__all__ = ["COLUMNS_READ", "Readable", "Reader", "RunAgent", "StoredRun"]


@dataclass(frozen=True)
class RunAgent:
    """An agent's part in a run: its role (agent, control, reference, ablation) and the spec
    the harness needs to rebuild its adapter when the run is resumed."""

    name: str
    role: str
    spec: dict[str, Any]
    base_agent: str | None = None


@dataclass(frozen=True)
class StoredRun:
    """A run's own columns (``params`` decoded; {} when they are not a JSON object)."""

    id: str
    suite: str
    seed: int
    held_out: bool
    status: str
    created_at: str
    finished_at: str | None
    params: dict[str, Any]


TRIAL_COLUMNS = (
    "agent", "item_id", "status", "correct", "confidence", "score_value", "primary_error",
    "tokens_in", "tokens_out", "latency_s", "score_json", "answer_json", "error",
)  # fmt: skip
"""The trials' columns a profile reads, in the order :meth:`Reader.trial_rows` gives them."""

JUDGEMENT_COLUMNS = (
    "agent", "item_id", "judge", "status", "cached", "grounded", "ungrounded", "dropped",
    "score_json",
)  # fmt: skip
"""The judgements' columns, in the order :meth:`Reader.judgement_rows` gives them."""

COLUMNS_READ: Mapping[str, tuple[str, ...]] = {
    MIGRATIONS_TABLE: ("name",),
    "runs": ("id", "suite", "seed", "held_out", "status", "created_at", "finished_at",
             "params_json"),
    "run_agents": ("run_id", "agent", "role", "spec_json", "base_agent"),
    "run_items": ("run_id", "item_id", "position"),
    "items": ("id", "body_json"),
    "trials": ("id", "run_id", *TRIAL_COLUMNS),
    "judgements": ("id", "run_id", *JUDGEMENT_COLUMNS),
    "ledger_entries": ("seq", "subject", "kind", "payload_json", "time"),
}  # fmt: skip
"""Every table and column this module reads; its SQL names no other (checked by a test, with
these against the ORM models and the migrations)."""

# Written for ``?`` placeholders (psycopg's ``%s`` are put in their place); {ids} stands for a
# list of them. Keywords in capitals, names in lower case, so that a test can find every name.
_RUN_COLUMNS = "id, suite, seed, held_out, status, created_at, finished_at, params_json"
RUN_SQL = f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?"
RUNS_SQL = f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at DESC LIMIT ?"
SUITE_RUNS_SQL = (
    f"SELECT {_RUN_COLUMNS} FROM runs WHERE suite = ? AND status = ? ORDER BY created_at DESC"
)
RUN_AGENTS_SQL = (
    "SELECT agent, role, spec_json, base_agent FROM run_agents WHERE run_id = ? ORDER BY agent"
)
TRIAL_COUNTS_SQL = (
    "SELECT agent, status, correct, COUNT(*) FROM trials WHERE run_id = ? "
    "GROUP BY agent, status, correct"
)
ITEM_BODIES_SQL = (
    "SELECT items.body_json FROM run_items JOIN items ON run_items.item_id = items.id "
    "WHERE run_items.run_id = ? ORDER BY run_items.position"
)
TRIAL_ROWS_SQL = f"SELECT {', '.join(TRIAL_COLUMNS)} FROM trials WHERE run_id = ? ORDER BY id"
JUDGEMENT_ROWS_SQL = (
    f"SELECT {', '.join(JUDGEMENT_COLUMNS)} FROM judgements WHERE run_id = ? ORDER BY id"
)
PROXY_ENTRIES_SQL = (
    "SELECT seq, kind, payload_json, time FROM ledger_entries "
    "WHERE subject IN ({ids}) AND kind IN ('call', 'refuse') ORDER BY seq"
)
LAST_ENTRY_TIME_SQL = "SELECT time FROM ledger_entries ORDER BY seq DESC LIMIT 1"
HAS_ENTRIES_SQL = "SELECT 1 FROM ledger_entries WHERE kind = ? LIMIT 1"
APPLIED_MIGRATIONS_SQL = f"SELECT name FROM {MIGRATIONS_TABLE}"


class _Connection(Protocol):
    def cursor(self) -> Any: ...

    def close(self) -> None: ...


class Readable(Protocol):
    """What can hand out a :class:`Reader`: a Reader itself, or a
    :class:`~ledger.store.Store` (over one of its engine's connections)."""

    def reader(self) -> AbstractContextManager[Reader]: ...


class Reader:
    """Read-only questions over one DBAPI connection (see the module docstring).

    ``placeholder`` is the driver's: ``?`` (sqlite3) or ``%s`` (psycopg)."""

    def __init__(self, conn: _Connection, placeholder: str, *, owned: bool = False):
        self._conn = conn
        self._placeholder = placeholder
        self._owned = owned
        self._lock = threading.Lock()

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str) -> Reader | None:
        """A Reader of the database at ``url``, or None when it cannot vouch for it: a URL
        that is not a plain ``sqlite:///PATH`` or ``postgresql://…`` one, a database that does
        not exist or cannot be reached, or whose schema is not exactly the current one (the
        caller then opens it the usual way, which creates or migrates it)."""
        if url.startswith(("sqlite:///", "sqlite+pysqlite:///")):
            reader = _open_sqlite(url.partition(":///")[2])
        elif url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
            reader = _open_postgresql(url)
        else:
            return None
        if reader is None:
            return None
        try:
            current = reader.is_current()
        except Exception:
            current = False
        if not current:
            reader.close()
            return None
        return reader

    def reader(self) -> AbstractContextManager[Reader]:
        """Itself (a :class:`Readable`)."""
        return nullcontext(self)

    def close(self) -> None:
        """Close the connection, if this Reader opened it."""
        if self._owned:
            self._conn.close()

    # -- the questions --------------------------------------------------------------------

    def is_current(self) -> bool:
        """Whether the recorded migrations are exactly :data:`MIGRATION_IDS`."""
        applied = sorted(str(name) for (name,) in self._all(APPLIED_MIGRATIONS_SQL))
        return applied == sorted(MIGRATION_IDS)

    def get_run(self, run_id: str) -> StoredRun:
        """Run ``run_id`` (raises :class:`~mindledger.errors.NotFoundError` when there is
        none)."""
        rows = self._all(RUN_SQL, (run_id,))
        if not rows:
            raise NotFoundError(f"no run with id {run_id!r} (see `mindledger runs`)")
        return _stored_run(rows[0])

    def list_runs(self, limit: int) -> list[StoredRun]:
        """The ``limit`` newest runs, newest first."""
        return [_stored_run(r) for r in self._all(RUNS_SQL, (limit,))]

    def runs_of_suite(self, suite: str, status: str) -> list[StoredRun]:
        """The runs of ``suite`` with ``status``, newest first."""
        return [_stored_run(r) for r in self._all(SUITE_RUNS_SQL, (suite, status))]

    def run_agents(self, run_id: str) -> list[RunAgent]:
        """The run's agents, in the order the database returns them."""
        return [
            RunAgent(str(agent), str(role), json.loads(spec),
                     None if base is None else str(base))
            for agent, role, spec, base in self._all(RUN_AGENTS_SQL, (run_id,))
        ]  # fmt: skip

    def trial_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per agent: trials by status, and how many were correct."""
        out: dict[str, dict[str, int]] = {}
        for agent, status, correct, n in self._all(TRIAL_COUNTS_SQL, (run_id,)):
            d = out.setdefault(str(agent), {"ok": 0, "api_error": 0, "not_applicable": 0,
                                            "correct": 0})  # fmt: skip
            d[str(status)] = d.get(str(status), 0) + int(n)
            if correct:
                d["correct"] += int(n)
        return out

    def failure_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, FailureCounts]]:
        """Per run of ``run_ids`` and agent with trials: its trials and failures, in one
        aggregate query per 500 runs (no trial is read)."""
        out: dict[str, dict[str, FailureCounts]] = {}
        for chunk in _chunks(run_ids, CHUNK):
            for run_id, agent, *numbers in self._all(FAILURE_COUNTS_SQL, chunk, len(chunk)):
                out.setdefault(str(run_id), {})[str(agent)] = FailureCounts.of_row(numbers)
        return out

    def item_bodies(self, run_id: str) -> list[str]:
        """The stored JSON of the run's items, in the run's order."""
        return [str(body) for (body,) in self._all(ITEM_BODIES_SQL, (run_id,))]

    def trial_rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's trials, in id order, as tuples of :data:`TRIAL_COLUMNS` (``correct`` a
        bool or None)."""
        correct = TRIAL_COLUMNS.index("correct")
        return [
            (*r[:correct], None if r[correct] is None else bool(r[correct]), *r[correct + 1 :])
            for r in self._all(TRIAL_ROWS_SQL, (run_id,))
        ]

    def judgement_rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's judgements, in id order, as tuples of :data:`JUDGEMENT_COLUMNS`."""
        return [tuple(r) for r in self._all(JUDGEMENT_ROWS_SQL, (run_id,))]

    def proxy_entries(self, subjects: Sequence[str]) -> list[tuple[int, str, str, str]]:
        """The ``call`` and ``refuse`` ledger entries of ``subjects``, in sequence: (seq,
        kind, payload JSON, time)."""
        if not subjects:
            return []
        return [
            (int(seq), str(kind), str(payload), str(time))
            for seq, kind, payload, time in self._all(PROXY_ENTRIES_SQL, subjects, len(subjects))
        ]

    def last_entry_time(self) -> str | None:
        """The time of the prediction ledger's last entry (None when it has none)."""
        rows = self._all(LAST_ENTRY_TIME_SQL)
        return None if not rows or rows[0][0] is None else str(rows[0][0])

    def has_entries(self, kind: str) -> bool:
        """Whether the prediction ledger has an entry of ``kind`` (``forecast``: whether any
        profile has a self-forecast section to read through the Store)."""
        return bool(self._all(HAS_ENTRIES_SQL, (kind,)))

    # -- plumbing -------------------------------------------------------------------------

    def _all(self, text: str, params: Sequence[Any] = (), n: int = 0) -> list[Any]:
        sql = text.format(ids=", ".join("?" * n)).replace("?", self._placeholder)
        with self._lock:
            cur = self._conn.cursor()
            try:
                cur.execute(sql, tuple(params))
                return list(cur.fetchall())
            finally:
                cur.close()


def _stored_run(row: Sequence[Any]) -> StoredRun:
    run_id, suite, seed, held_out, status, created_at, finished_at, params_json = row
    try:
        params = json.loads(params_json)
    except ValueError:
        params = {}
    return StoredRun(
        id=str(run_id),
        suite=str(suite),
        seed=int(seed),
        held_out=bool(held_out),
        status=str(status),
        created_at=str(created_at),
        finished_at=None if finished_at is None else str(finished_at),
        params=params if isinstance(params, dict) else {},
    )


def _chunks(seq: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def _open_sqlite(database: str) -> Reader | None:
    # as ledger.catalog: URLs SQLAlchemy would decode or take options from go its way
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    if any(c in database for c in "%?~"):
        return None
    path = Path(database).absolute()
    try:
        # mode=rw: never create a missing database (only SELECTs are sent); autocommit: each
        # question sees the latest commit (the dashboard refreshes while runs are written)
        conn = sqlite3.connect(path.as_uri() + "?mode=rw", uri=True, timeout=30,
                               isolation_level=None, check_same_thread=False)  # fmt: skip
    except sqlite3.Error:
        return None
    return Reader(conn, "?", owned=True)


def _open_postgresql(url: str) -> Reader | None:
    try:
        import psycopg
    except ImportError:
        return None
    conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        conn = psycopg.connect(conninfo, connect_timeout=PG_CONNECT_TIMEOUT, autocommit=True)
    except psycopg.Error:
        return None
    return Reader(conn, "%s", owned=True)
