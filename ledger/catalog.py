"""The stored runs as ``mindledger runs`` lists them, read without SQLAlchemy.

Importing SQLModel and SQLAlchemy takes longer than listing the runs, so this module reads the
list through the database's own driver — :mod:`sqlite3`, or psycopg for PostgreSQL — in three
queries whatever the number of runs (up to 500; after one that checks the schema): the newest
runs, their agents, and per run and agent the trials that failed (:class:`FailureCounts`). It asks the same questions as
:meth:`ledger.store.Store.list_runs`, :meth:`~ledger.store.Store.run_agents` and
:meth:`~ledger.store.Store.failure_counts`, and :meth:`~ledger.store.Store.run_listing` builds
the same :class:`ListedRun` values through the ORM; ``tests/ledger/test_catalog.py`` checks
that the two agree, value for value and in the same order, on SQLite and PostgreSQL.

It only reads, and only a database that exists and whose recorded migrations are exactly
:data:`ledger.schema.MIGRATION_IDS`. :func:`read_run_listing` returns None for any other (a
missing file, a new or older schema, a URL it does not handle, a server that does not answer):
the caller then opens the database the usual way, which creates or migrates it, or says why it
cannot. Every table and column it reads is named in :data:`COLUMNS_READ`; a test checks them
against the ORM models and that its SQL names no other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ledger.schema import MIGRATION_IDS, MIGRATIONS_TABLE

__all__ = [
    "COLUMNS_READ",
    "FailureCounts",
    "ListedAgent",
    "ListedRun",
    "newest_trial",
    "read_run_listing",
]


@dataclass(frozen=True)
class FailureCounts:
    """One agent's trials in one run, and how many failed: API errors (status ``api_error``)
    and unreadable answers (a scored trial without an answer) — what
    :func:`reports.trials.outcome_of` calls ``error`` and ``unparsed``."""

    trials: int
    errors: int
    unparsed: int
    not_applicable: int
    last_trial_at: str | None = None
    """When its newest trial was stored (ISO 8601 UTC): how long ago a run still marked
    running last made progress (``mindledger runs``)."""
    correct: int = 0
    """Trials scored correct."""

    @classmethod
    def of_row(cls, numbers: Sequence[Any]) -> FailureCounts:
        """From the numbers and the time that :data:`FAILURE_COUNTS_SQL` selects after the
        run and the agent."""
        *counts, last = numbers
        trials, errors, unparsed, not_applicable, correct = map(int, counts)
        last_at = None if last is None else str(last)
        return cls(trials, errors, unparsed, not_applicable, last_at, correct)

    def over(self, share: float) -> bool:
        """Whether more than ``share`` of its attempted trials failed: what makes
        ``mindledger run`` exit 3 (``max_failure_share``; as
        :meth:`reports.trials.RunFailures.over` judges it)."""
        return bool(self.attempted) and self.failed / self.attempted > share

    @property
    def attempted(self) -> int:
        """Trials that asked the agent something (all but ``not_applicable``)."""
        return self.trials - self.not_applicable

    @property
    def failed(self) -> int:
        """API errors and unreadable answers."""
        return self.errors + self.unparsed


@dataclass(frozen=True)
class ListedAgent:
    """An agent's part in a listed run."""

    name: str
    role: str


@dataclass(frozen=True)
class ListedRun:
    """A stored run as the list of runs shows it: the run's own columns, its agents in the
    order of their names, and :class:`FailureCounts` per agent with trials, in the
    order the database groups them (the order decides between two agents that fail alike)."""

    id: str
    suite: str
    seed: int
    held_out: bool
    status: str
    created_at: str
    finished_at: str | None
    agents: tuple[ListedAgent, ...]
    counts: tuple[tuple[str, FailureCounts], ...]

    @property
    def failures(self) -> dict[str, FailureCounts]:
        """:attr:`counts` by agent name."""
        return dict(self.counts)

    @property
    def last_trial_at(self) -> str | None:
        """When its newest trial was stored (None: none yet)."""
        return newest_trial(c for _, c in self.counts)


def newest_trial(counts: Iterable[FailureCounts]) -> str | None:
    """When the newest trial of these counts (a run's agents') was stored; None: none yet."""
    return max((c.last_trial_at for c in counts if c.last_trial_at), default=None)


COLUMNS_READ: Mapping[str, tuple[str, ...]] = {
    MIGRATIONS_TABLE: ("name",),
    "runs": ("id", "suite", "seed", "held_out", "status", "created_at", "finished_at"),
    "run_agents": ("run_id", "agent", "role"),
    "trials": ("run_id", "agent", "status", "answer_json", "correct", "created_at"),
}
"""Every table and column this module reads; the SQL below names no other (checked by a test,
with these against the ORM models)."""

# The SQL is written for sqlite3's ``?`` placeholders (psycopg's are ``%s``); keywords and
# functions in capitals, names in lower case, so that a test can find every name it uses.
# Each asks what the corresponding Store method asks, with no ORDER BY where it has none, so
# that both get the rows in the database's same order.
APPLIED_MIGRATIONS_SQL = f"SELECT name FROM {MIGRATIONS_TABLE}"
RUNS_SQL = (
    "SELECT id, suite, seed, held_out, status, created_at, finished_at "
    "FROM runs ORDER BY created_at DESC LIMIT ?"
)
RUN_AGENTS_SQL = (
    "SELECT run_id, agent, role FROM run_agents WHERE run_id IN ({ids}) ORDER BY run_id, agent"
)
FAILURE_COUNTS_SQL = (
    "SELECT run_id, agent, COUNT(*), "
    "SUM(CASE WHEN status = 'api_error' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN status NOT IN ('api_error', 'not_applicable') "
    "AND (answer_json IS NULL OR answer_json = 'null') THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN status = 'not_applicable' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN correct THEN 1 ELSE 0 END), "
    "MAX(created_at) "
    "FROM trials WHERE run_id IN ({ids}) GROUP BY run_id, agent"
)

CHUNK = 500
"""Run ids per ``IN (…)`` list, as :meth:`~ledger.store.Store.failure_counts` takes them."""

PG_CONNECT_TIMEOUT = 5
"""Seconds to wait for a PostgreSQL server, as :func:`ledger.db.open_engine` does."""


class _Cursor(Protocol):
    def execute(self, sql: Any, params: Sequence[Any] = ...) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def read_run_listing(url: str, limit: int) -> list[ListedRun] | None:
    """The ``limit`` newest runs of the database at ``url`` (newest first), with their agents
    and failure counts; None when this reader cannot answer for it: a URL that is not a plain
    ``sqlite:///PATH`` or ``postgresql://…`` one, a database that does not exist or cannot be
    reached, or whose schema is not exactly the current one."""
    if url.startswith(("sqlite:///", "sqlite+pysqlite:///")):
        return _read_sqlite(url.partition(":///")[2], limit)
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return _read_postgresql(url, limit)
    return None


def _read_sqlite(database: str, limit: int) -> list[ListedRun] | None:
    # SQLAlchemy decodes %XX and takes ?key=value as driver options (and ~ is read two ways
    # by ledger.db): such URLs go its way
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    if any(c in database for c in "%?~"):
        return None
    path = Path(database).absolute()
    try:
        # mode=rw: never create a missing database (the Store path does, with its own modes)
        with closing(sqlite3.connect(path.as_uri() + "?mode=rw", uri=True, timeout=30)) as conn:
            cur = conn.cursor()
            cur.execute("BEGIN")  # one snapshot for every query
            listing = _read(cur, limit, placeholder="?")
            conn.rollback()
            return listing
    except sqlite3.Error:
        return None


def _read_postgresql(url: str, limit: int) -> list[ListedRun] | None:
    try:
        import psycopg
    except ImportError:
        return None
    conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        with psycopg.connect(conninfo, connect_timeout=PG_CONNECT_TIMEOUT) as conn:
            conn.read_only = True
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot
            with conn.cursor() as cur:
                listing = _read(cur, limit, placeholder="%s")
            conn.rollback()
            return listing
    except psycopg.Error:
        return None


def _read(cur: _Cursor, limit: int, *, placeholder: str) -> list[ListedRun] | None:
    def sql(text: str, n: int = 0) -> str:
        return text.format(ids=", ".join("?" * n)).replace("?", placeholder)

    cur.execute(sql(APPLIED_MIGRATIONS_SQL))
    applied = sorted(str(name) for (name,) in cur.fetchall())
    if applied != sorted(MIGRATION_IDS):
        return None
    cur.execute(sql(RUNS_SQL), (limit,))
    runs = cur.fetchall()
    ids = [str(r[0]) for r in runs]
    agents: dict[str, list[ListedAgent]] = {}
    counts: dict[str, list[tuple[str, FailureCounts]]] = {}
    for chunk in _chunks(ids, CHUNK):
        cur.execute(sql(RUN_AGENTS_SQL, len(chunk)), chunk)
        for run_id, agent, role in cur.fetchall():
            agents.setdefault(run_id, []).append(ListedAgent(str(agent), str(role)))
        cur.execute(sql(FAILURE_COUNTS_SQL, len(chunk)), chunk)
        for run_id, agent, *numbers in cur.fetchall():
            counts.setdefault(run_id, []).append((str(agent), FailureCounts.of_row(numbers)))
    return [
        ListedRun(
            id=run_id,
            suite=str(suite),
            seed=int(seed),
            held_out=bool(held_out),
            status=str(status),
            created_at=str(created_at),
            finished_at=None if finished_at is None else str(finished_at),
            agents=tuple(agents.get(run_id, ())),
            counts=tuple(counts.get(run_id, ())),
        )
        for run_id, (_, suite, seed, held_out, status, created_at, finished_at) in zip(
            ids, runs, strict=True
        )
    ]


def _chunks(seq: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]
