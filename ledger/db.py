"""Opening the database: SQLite (WAL) or PostgreSQL, migrated to the current schema.

:func:`open_engine` turns a URL into an engine and checks that it answers, raising a
:class:`~mindledger.errors.StorageError` that names the (password-masked) URL when it does not,
before anything is written.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
import urllib.parse
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

from ledger.clock import Clock, utc_now
from ledger.migrations import MIGRATIONS, applied_migrations, migrate
from mindledger.errors import NoDatabaseError, StorageError

__all__ = [
    "Clock",
    "normalise_url",
    "open_engine",
    "parse_url",
    "private_dir",
    "private_file",
    "private_home",
    "schema_version",
    "utc_now",
]


def private_dir(path: Path) -> None:
    """Create directory ``path`` (and its parents) if missing; every directory this call
    creates is owner-only (0700) whatever the umask. An existing directory is left as it is
    (it may be the user's own, such as the folder of a ``--db sqlite:///…`` file): the data
    directory itself is tightened by :func:`private_home`."""
    if path.is_dir():
        return
    missing = [path, *(p for p in path.parents if not p.exists())]
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for created in missing:
        try:
            os.chmod(created, 0o700)
        except OSError:
            pass  # made by another process meanwhile, as it pleased


def private_file(path: Path) -> None:
    """Create an empty owner-only (0600) file at ``path`` unless one exists, whatever the
    umask: SQLite gives its -wal and -shm files the database file's mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


def private_home(path: Path) -> str | None:
    """Make the existing data directory ``path`` owner-only (0700) if group or others may
    enter it, as a new one is: it holds the ledger's signing key, the database of transcripts
    and the API tokens' hashes, and its file names (log names, key names) say what it holds.
    Done silently for a directory the user owns (nothing in it was meant for others: every
    file mindledger writes there is 0600 already). A shared directory (writable by others, or
    sticky like /tmp) or another user's is left as it is, and a warning line returned; so is
    one whose mode cannot be changed. None when there was nothing to say."""
    try:
        st = path.stat()
    except OSError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if os.name != "posix" or not mode & 0o077:
        return None
    if mode & (stat.S_ISVTX | 0o002):
        return (
            f"warning: the data directory {path} is shared (mode {mode:04o}): anyone may add "
            "files to it; mindledger leaves it as it is: choose a private MINDLEDGER_HOME"
        )
    if st.st_uid != os.geteuid():
        return (
            f"warning: the data directory {path} is open to others (mode {mode:04o}) and "
            f"belongs to user {st.st_uid}, not you: make it private (chmod 700) or choose "
            "another MINDLEDGER_HOME"
        )
    try:
        os.chmod(path, 0o700)
    except OSError as exc:
        return f"warning: cannot make the data directory {path} private: {exc.strerror}"
    return None


_PASSWORD = re.compile(r"^([\w+]+://[^:/@]*:).*@")
"""``scheme://user:`` and everything up to the last ``@``: the password of a URL that does not
parse, masked more widely than SQLAlchemy would read it rather than less."""


def mask(url: str) -> str:
    """``url`` with its password replaced by ``***`` (also when it is not a valid URL)."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _PASSWORD.sub(r"\1***@", url)


def parse_url(url: str) -> sa.engine.URL:
    """``url`` parsed by SQLAlchemy; a StorageError naming it (password masked) and what is
    wrong with it when it is not a database URL."""
    try:
        parsed = sa.engine.make_url(url)
    except (ArgumentError, ValueError):
        pass
    else:
        if parsed.port is None or 0 < parsed.port < 65536:
            return parsed
    try:  # urllib says what is wrong with a host or port in words
        _ = urllib.parse.urlsplit(url).port
    except ValueError as exc:
        reason = str(exc)
        if reason == "Invalid IPv6 URL":
            reason = "its host opens '[' without closing it: an IPv6 host is written [::1]"
        reason = reason[:1].lower() + reason[1:]
    else:
        reason = "expected sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/NAME"
    raise StorageError(f"not a database URL: {mask(url)!r} ({reason})")


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


def open_engine(
    url: str, *, migrate_schema: bool = True, create: bool = True, clock: Clock = utc_now
) -> Engine:
    """Create an engine for ``url``, check that it answers, and migrate it unless told not to.

    SQLite files get WAL journaling, full fsync on commit, foreign keys and a 30 s busy timeout;
    their parent directory is created. Raises StorageError naming the URL when the database
    cannot be opened. With ``create`` false nothing is created: a SQLite file that does not
    exist, or (when ``migrate_schema``) a database without mindledger's schema, is a
    NoDatabaseError; a database at an older schema is still migrated.
    """
    parse_url(url)  # the error names the URL as it was given
    url = normalise_url(url)
    parsed = parse_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            path = Path(parsed.database).expanduser()
            if not create and not path.is_file():
                raise NoDatabaseError(
                    f"no database at {path}: this command only reads and creates none; "
                    "nothing has been stored there yet (`mindledger quickstart` or "
                    "`mindledger run` store a first run), or give --db the right URL"
                )
            if create:
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
        if not create and not applied_migrations(engine):
            engine.dispose()
            raise NoDatabaseError(
                f"no mindledger database at {mask(url)} (it has no schema): this command only "
                "reads and creates none (`mindledger db migrate` creates it)"
            )
        migrate(engine, clock)
    return engine


def schema_version(engine: Engine) -> tuple[str | None, int]:
    """The last applied migration's name and how many migrations are still pending."""
    applied = applied_migrations(engine)
    done = set(applied)
    pending = sum(1 for name, _ in MIGRATIONS if name not in done)
    return (applied[-1] if applied else None), pending
