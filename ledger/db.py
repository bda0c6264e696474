"""Opening the database: SQLite (WAL) or PostgreSQL, migrated to the current schema.

:func:`open_engine` turns a URL into an engine and checks that it answers, raising a
:class:`~mindledger.errors.StorageError` that names the (password-masked) URL when it does not,
before anything is written.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

from ledger.clock import Clock, utc_now
from ledger.migrations import MIGRATIONS, applied_migrations, migrate
from mindledger.errors import StorageError

__all__ = [
    "Clock",
    "normalise_url",
    "open_engine",
    "private_dir",
    "private_file",
    "schema_version",
    "utc_now",
]


def private_dir(path: Path) -> None:
    """Create directory ``path`` (and its parents) if missing; one this call creates is
    owner-only (0700) whatever the umask. An existing directory is left as it is."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def private_file(path: Path) -> None:
    """Create an empty owner-only (0600) file at ``path`` unless one exists, whatever the
    umask: SQLite gives its -wal and -shm files the database file's mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


def mask(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def normalise_url(url: str) -> str:
    """Map ``postgres://`` and ``postgresql://`` to the psycopg 3 driver SQLAlchemy needs."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    # Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    # locked" at once, without its busy handler, while another process holds one (several
    # processes opening a new database together): retry for as long as the busy timeout.
    deadline = time.monotonic() + 30.0
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def open_engine(url: str, *, migrate_schema: bool = True, clock: Clock = utc_now) -> Engine:
    """Create an engine for ``url``, check that it answers, and migrate it unless told not to.

    SQLite files get WAL journaling, full fsync on commit, foreign keys and a 30 s busy timeout;
    their parent directory is created. Raises StorageError naming the URL when the database
    cannot be opened.
    """
    url = normalise_url(url)
    try:
        parsed = sa.engine.make_url(url)
    except ArgumentError:
        raise StorageError(
            f"not a database URL: {url!r} (expected sqlite:///PATH or postgresql://…)"
        ) from None
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            path = Path(parsed.database).expanduser()
            try:
                private_dir(path.parent)
                private_file(path)
            except OSError as exc:
                raise StorageError(
                    f"cannot create database {mask(url)}: {exc.strerror or exc}"
                ) from None
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    elif parsed.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": 5}
        kwargs["pool_pre_ping"] = True
    try:
        engine = sa.create_engine(url, **kwargs)
    except (NoSuchModuleError, ArgumentError) as exc:
        raise StorageError(f"cannot use database {mask(url)}: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except (OperationalError, DBAPIError) as exc:
        engine.dispose()
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StorageError(f"cannot connect to database {mask(url)}: {reason}") from None
    if migrate_schema:
        migrate(engine, clock)
    return engine


def schema_version(engine: Engine) -> tuple[str | None, int]:
    """The last applied migration's name and how many migrations are still pending."""
    applied = applied_migrations(engine)
    done = set(applied)
    pending = sum(1 for name, _ in MIGRATIONS if name not in done)
    return (applied[-1] if applied else None), pending
