"""Copying a SQLite database while others write to it, and telling whether anyone has it open.

The copy goes through SQLite's online backup API (``sqlite3.Connection.backup``) from a
connection of its own, in one step: the step reads inside one read transaction, so in WAL mode
the copy is the database as of one commit, while writers go on committing beside it. It is
written to a temporary file next to the destination, switched to a single-file (DELETE) journal
so that the copy is self-contained, flushed to disk, and then renamed into place: a copy is
either whole at its name or not there.

Only the standard library: :mod:`ledger.migrations` takes a copy before it migrates.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import struct
from pathlib import Path

__all__ = [
    "MIGRATION_BACKUPS_KEPT",
    "backup_before_migration",
    "has_data",
    "online_copy",
    "open_read_only",
    "users_of",
]

MIGRATION_BACKUPS_KEPT = 3
"""How many pre-migration copies (``NAME.before-<migration>.bak``) are kept beside a database."""

BUSY_TIMEOUT_MS = 30_000
"""How long a copy waits for a writer's lock (the daemon's transactions are short)."""


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path`` (which must exist)."""
    uri = "file:" + str(path.resolve()).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def online_copy(source: sqlite3.Connection, dest: Path) -> None:
    """Copy the database of ``source`` (a connection nobody else uses meanwhile) to ``dest``,
    atomically: through ``dest.tmp-<pid>`` in the same directory, owner-only (0600), renamed
    once complete and on disk. An existing ``dest`` is replaced only by a complete copy."""
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    try:
        target = sqlite3.connect(tmp)
        try:
            source.backup(target)  # one step: one read transaction, one consistent state
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(dest.parent)


def has_data(conn: sqlite3.Connection) -> bool:
    """Whether any table of the database (other than SQLite's own and the migrations'
    bookkeeping) holds a row."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name != '_migrations'"
        )
    ]
    return any(
        conn.execute(f'SELECT 1 FROM "{name.replace(chr(34), chr(34) * 2)}" LIMIT 1').fetchone()
        for name in tables
    )


def migration_backup_path(db: Path, migration: str) -> Path:
    """Where the copy of ``db`` taken before ``migration`` goes."""
    return db.with_name(f"{db.name}.before-{migration}.bak")


def backup_before_migration(db: Path, migration: str) -> tuple[Path | None, list[Path]]:
    """Copy the SQLite database ``db`` to ``NAME.before-<migration>.bak`` beside it if it holds
    any data, and remove the older such copies beyond the newest
    :data:`MIGRATION_BACKUPS_KEPT`. Returns the copy (None when the database is empty) and the
    copies removed. The caller holds the database's write lock (the migration lock), so the
    copy is the database as the migration finds it."""
    source = open_read_only(db)
    try:
        if not has_data(source):
            return None, []
        dest = migration_backup_path(db, migration)
        online_copy(source, dest)
    finally:
        source.close()
    older = sorted(db.parent.glob(f"{db.name}.before-*.bak"), key=lambda p: p.name)
    removed = [p for p in older[:-MIGRATION_BACKUPS_KEPT] if p != dest]
    for path in removed:
        with contextlib.suppress(OSError):
            path.unlink()
    return dest, removed


# -- who has the database open ------------------------------------------------------------

_WAL_DMS_BYTE = 128
"""The byte of the ``-shm`` file on which every open WAL-mode connection holds a shared lock
(SQLite's unix VFS: ``UNIX_SHM_DMS``, the "dead man switch"); the last connection to close
takes it exclusively to clean up."""

_probes: dict[Path, int] = {}
"""Descriptors of ``-shm`` files opened to probe their locks, kept open for the life of the
process: closing any descriptor of a file drops every POSIX lock this process holds on it,
including those of SQLite's own connections in this process."""


def _shm_is_locked(shm: Path) -> bool:
    key = shm.absolute()
    fd = _probes.get(key)
    try:
        now = os.stat(shm)
    except FileNotFoundError:
        return False
    if fd is not None and (os.fstat(fd).st_ino, os.fstat(fd).st_dev) != (now.st_ino, now.st_dev):
        # the last connection removed the file and a new one made another: nobody in this
        # process holds a lock on the removed one any more
        os.close(fd)
        fd = None
    if fd is None:
        try:
            fd = os.open(shm, os.O_RDWR)
        except FileNotFoundError:
            return False
        _probes[key] = fd
    ofd = getattr(fcntl, "F_OFD_SETLK", None)
    if ofd is None:  # not Linux: a POSIX lock, blind to connections of this process
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _WAL_DMS_BYTE)
        except OSError:
            return True
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _WAL_DMS_BYTE)
        return False
    # an open-file-description lock: it conflicts with SQLite's POSIX locks, this process's too
    flock = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, _WAL_DMS_BYTE, 1, 0)
    try:
        fcntl.fcntl(fd, ofd, flock)
    except OSError:
        return True
    fcntl.fcntl(fd, ofd, struct.pack("hhqqi4x", fcntl.F_UNLCK, os.SEEK_SET, _WAL_DMS_BYTE, 1, 0))
    return False


def users_of(db: Path) -> list[str]:
    """Why the SQLite database ``db`` is in use now, as sentences; empty when nobody has it
    open in WAL mode and no transaction holds its write lock. WAL-mode connections (every
    mindledger process's) each hold a shared lock on a byte of the ``-shm`` file for as long
    as they are open, idle or not, so the daemon is seen between its transactions too. The
    write-lock probe opens the database, which (as any opening does) recovers a WAL left by a
    process that died: its committed transactions are folded in, an unfinished one dropped."""
    reasons: list[str] = []
    if _shm_is_locked(db.with_name(db.name + "-shm")):
        reasons.append(
            f"a process has {db} open (a shared lock on {db.name}-shm: the daemon, a worker, "
            "the dashboard or another command)"
        )
    if db.exists():
        try:
            conn = sqlite3.connect(db, timeout=0, isolation_level=None)
        except sqlite3.Error:
            return reasons
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                reasons.append(f"a write transaction is open on {db}")
        finally:
            conn.close()
    return reasons
