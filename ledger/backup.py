"""Backing up and restoring the database while the daemon runs, and checking a copy.

SQLite: :func:`backup_sqlite` copies the database through SQLite's online backup API from a
read-only connection of its own (see :mod:`ledger._sqlite_copy`): in WAL mode that copy is the
database as of one commit while the daemon goes on writing. The copy is written to a temporary
file, checked (:func:`check_copy`: ``PRAGMA integrity_check`` and ``foreign_key_check``, the
schema, its runs, trials and ledger entries counted, and the ledger verified with the data
directory's service key against the heads it published up to the copy's size), and only then
renamed to the name asked for: a file at that name is a checked copy.

:func:`restore_sqlite` checks the backup the same way, refuses to replace a database that a
process has open (:func:`~ledger._sqlite_copy.users_of`) or whose ledger this data directory
has seen grow past the backup (the head witness: restoring would cut off signed entries, which
``ledger verify`` then reports and the service refuses to append after) unless forced, keeps the
database it replaces as ``NAME.before-restore``, and copies the backup in through the same
backup API, so SQLite's own locking and WAL see the change.

PostgreSQL is backed up by ``pg_dump``, which reads one consistent snapshot by itself:
:func:`pg_dump_guidance` writes the command for a URL (password masked).

The service key and the published heads live in the data directory, not in the database: a
backup of the database is restorable with that directory's ``keys/``, which a copy of the data
directory keeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ledger._sqlite_copy import (
    MIGRATION_BACKUPS_KEPT,
    backup_before_migration,
    online_copy,
    open_read_only,
    users_of,
)
from ledger._witness import HeadWitness
from ledger.db import mask, normalise_url, private_file
from ledger.errors import LedgerKeyError
from ledger.keys import KEY_FILE, load_private_key
from ledger.migrations import MIGRATIONS
from ledger.predictions import WITNESS_DIR, Ledger
from ledger.schema import MIGRATIONS_TABLE
from ledger.tree import HEADS_FILE, HeadsFile, TreeHead
from mindledger.errors import InputError, NoDatabaseError, StorageError
from mindledger.words import counted

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "BEFORE_RESTORE",
    "MIGRATION_BACKUPS_KEPT",
    "CopyCheck",
    "Restored",
    "backup_before_migration",
    "backup_sqlite",
    "check_copy",
    "pg_dump_guidance",
    "restore_sqlite",
    "users_of",
]

SQLITE_HEADER = b"SQLite format 3\x00"
BEFORE_RESTORE = ".before-restore"
"""Suffix of the copy of a database that a restore replaced."""


@dataclass(frozen=True)
class CopyCheck:
    """What a copy of the database holds, and what is wrong with it (``problems``: empty when
    it is sound; ``warnings``: what was not checked, and why)."""

    path: Path
    bytes: int
    schema: str | None
    """The last migration applied to the copy."""
    runs: int
    trials: int
    ledger_entries: int
    ledger_head: str | None
    """The hash of the copy's last ledger entry."""
    heads_checked: int
    """Published tree heads (up to the copy's size) the copy's ledger was checked against."""
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    ledger_id: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line for people."""
        n = self.ledger_entries
        if not n:
            ledger = "ledger empty"
        elif self.warnings:
            ledger = f"ledger {n:,} entries, not verified (see the warning)"
        else:
            against = (
                f" against {counted(self.heads_checked, 'published head')}" if self.heads_checked else ""
            )
            ledger = f"ledger {n:,} entries verified{against} (head {self.ledger_head})"
        return (
            f"{self.bytes:,} bytes; schema {self.schema}; {self.runs:,} runs, {self.trials:,} "
            f"trials; {ledger}; integrity ok"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "bytes": self.bytes,
            "ok": self.ok,
            "schema": self.schema,
            "runs": self.runs,
            "trials": self.trials,
            "ledger_entries": self.ledger_entries,
            "ledger_head": self.ledger_head,
            "heads_checked": self.heads_checked,
            "problems": list(self.problems),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Restored:
    """The outcome of a restore: the backup as checked, the database as restored, where the
    replaced one was kept (None: there was none), and the refusals ``force`` overrode."""

    backup: CopyCheck
    target: CopyCheck
    before: Path | None
    overridden: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "backup": self.backup.to_dict(),
            "restored": self.target.to_dict(),
            "before_restore": None if self.before is None else str(self.before),
            "overridden": list(self.overridden),
        }


# -- the data directory's part: key, published heads, head witness -------------------------


def _service_key(home: Path | None) -> tuple[Ed25519PrivateKey | None, str | None]:
    if home is None:
        return None, "no data directory given"
    path = home / KEY_FILE
    if not path.exists():
        return None, f"there is no service key at {path}"
    try:
        return load_private_key(path), None
    except LedgerKeyError as exc:
        return None, str(exc)


def _published_heads(home: Path | None) -> list[TreeHead]:
    if home is None:
        return []
    return [h for _, h in HeadsFile(home / HEADS_FILE).read() if isinstance(h, TreeHead)]


# -- checking a copy --------------------------------------------------------------------------


def _expect_sqlite(path: Path, what: str) -> None:
    if not path.exists():
        raise InputError(f"no such file: {path} (expected {what})")
    if not path.is_file():
        raise InputError(f"{path} is not a file (expected {what})")
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror} (expected {what})") from None
    if header != SQLITE_HEADER:
        raise InputError(
            f"{path} is not a SQLite database (it does not start with SQLite's header; "
            f"expected {what})"
        )


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _count(conn: sqlite3.Connection, tables: set[str], table: str) -> int:
    if table not in tables:
        return 0
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def _unreadable(path: Path, problem: str) -> CopyCheck:
    return CopyCheck(path, path.stat().st_size, None, 0, 0, 0, None, 0, (problem,))


def check_copy(path: Path, *, home: Path | None = None, full: bool = False) -> CopyCheck:
    """Check the SQLite file ``path`` as a copy of mindledger's database: its integrity and
    foreign keys, that its schema is one this version knows, and (with the service key of the
    data directory ``home``) that its ledger verifies, consistently with every tree head
    ``home`` published up to the copy's size. The copy is only read. An InputError (exit 2)
    when ``path`` is not a SQLite database at all."""
    _expect_sqlite(path, "a SQLite database written by `mindledger db backup`")
    problems: list[str] = []
    warnings: list[str] = []
    try:
        conn = open_read_only(path)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open {path} as a SQLite database: {exc}") from None
    try:
        try:
            integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            tables = _tables(conn)
        except sqlite3.DatabaseError as exc:
            return _unreadable(path, f"SQLite cannot read it ({exc})")
        if integrity != ["ok"]:
            shown = "; ".join(integrity[:5]) + (" …" if len(integrity) > 5 else "")
            problems.append(f"SQLite's integrity check fails: {shown}")
        dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
        if dangling:
            problems.append(
                f"{counted(len(dangling), 'row')} {'refers' if len(dangling) == 1 else 'refer'} to rows that are not there (first: table "
                f"{dangling[0][0]}, row {dangling[0][1]} → {dangling[0][2]})"
            )
        schema: str | None = None
        if MIGRATIONS_TABLE not in tables:
            problems.append(f"it has no mindledger schema (no {MIGRATIONS_TABLE} table)")
        else:
            applied = [r[0] for r in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")]
            known = {name for name, _ in MIGRATIONS}
            unknown = sorted(set(applied) - known)
            if unknown:
                problems.append(
                    f"it was made by a newer mindledger (migrations unknown here: "
                    f"{', '.join(unknown)}): upgrade mindledger to read it"
                )
            schema = max(applied) if applied else None
        runs = _count(conn, tables, "runs")
        trials = _count(conn, tables, "trials")
        entries = _count(conn, tables, "ledger_entries")
        head_row = (
            conn.execute("SELECT hash FROM ledger_entries ORDER BY seq DESC LIMIT 1").fetchone()
            if entries
            else None
        )
        first = (
            conn.execute("SELECT hash FROM ledger_entries WHERE seq = 1").fetchone()
            if entries
            else None
        )
    finally:
        conn.close()
    lid = None if first is None else str(first[0])
    heads_checked = 0
    if entries and not problems:
        key, why = _service_key(home)
        if key is None:
            warnings.append(f"the copy's ledger was not verified: {why}")
        else:
            heads = [h for h in _published_heads(home) if h.ledger == lid and h.size <= entries]
            heads_checked = len(heads)
            problems.extend(_verify_ledger(path, key, heads, full))
    return CopyCheck(
        path=path,
        bytes=path.stat().st_size,
        schema=schema,
        runs=runs,
        trials=trials,
        ledger_entries=entries,
        ledger_head=None if head_row is None else str(head_row[0]),
        heads_checked=heads_checked,
        problems=tuple(problems),
        warnings=tuple(warnings),
        ledger_id=lid,
    )


def _verify_ledger(
    path: Path, key: Ed25519PrivateKey, heads: Sequence[TreeHead], full: bool
) -> list[str]:
    """``ledger verify`` on the copy: no head witness and no heads file (the data directory's
    run ahead of a copy, as they should), but every published head up to its size."""
    engine = sa.create_engine("sqlite://", creator=lambda: open_read_only(path))
    try:
        with Ledger(engine, key) as ledger:
            saved = [(h, f"the head published at {h.time} ({h.size} entries)") for h in heads]
            failures = ledger.verification(full=full, heads=saved).failures
    except LedgerKeyError as exc:
        return [f"its ledger cannot be verified with this data directory's key: {exc}"]
    finally:
        engine.dispose()
    return [f"ledger {f}" for f in failures[:5]] + (
        [f"… and {counted(len(failures) - 5, 'more ledger problem')}"] if len(failures) > 5 else []
    )


# -- backup -----------------------------------------------------------------------------------


def backup_sqlite(
    source: Path, dest: Path, *, home: Path | None = None, full: bool = False
) -> CopyCheck:
    """Copy the SQLite database ``source`` to ``dest`` while others write to it (see the
    module docstring), check the copy (:func:`check_copy`) and only then give it the name
    ``dest`` (replacing a file there). A StorageError naming the problems, and nothing at
    ``dest`` changed, when the copy does not check out (it is kept as ``dest.failed``)."""
    if not source.is_file():
        raise NoDatabaseError(f"no database at {source}: nothing to back up")
    if dest.is_dir():
        raise InputError(f"{dest} is a directory (expected the backup's file name)")
    if not dest.parent.is_dir():
        raise InputError(f"no directory {dest.parent} to write the backup {dest.name} in")
    if dest.exists() and dest.resolve() == source.resolve():
        raise InputError(f"{dest} is the database itself (expected another file)")
    unchecked = dest.with_name(f".{dest.name}.unchecked-{os.getpid()}")
    try:
        conn = open_read_only(source)
        try:
            online_copy(conn, unchecked)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"cannot copy {source} to {dest}: {exc}") from None
    except OSError as exc:
        raise StorageError(f"cannot write {dest}: {exc.strerror or exc}") from None
    try:
        check = check_copy(unchecked, home=home, full=full)
        if check.problems:
            failed = dest.with_name(dest.name + ".failed")
            os.replace(unchecked, failed)
            raise StorageError(
                f"the copy of {source} does not check out, so {dest} was not written (the "
                f"copy is kept at {failed} to look into): " + "; ".join(check.problems)
            )
        os.replace(unchecked, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            unchecked.unlink()
    return dataclasses.replace(check, path=dest)


# -- restore ----------------------------------------------------------------------------------


def _keep_replaced(target: Path) -> Path:
    """Copy the database about to be replaced to ``NAME.before-restore`` (through SQLite,
    which folds in its WAL; byte for byte when SQLite cannot read it)."""
    before = target.with_name(target.name + BEFORE_RESTORE)
    try:
        conn = open_read_only(target)
        try:
            online_copy(conn, before)
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        for suffix in ("", "-wal"):
            src = target.with_name(target.name + suffix)
            if src.exists():
                shutil.copyfile(src, before.with_name(before.name + suffix))
    return before


def _refusals(backup: CopyCheck, target: Path, home: Path | None) -> list[str]:
    reasons = users_of(target)
    if home is not None and backup.ledger_id is not None:
        seen = HeadWitness(home / WITNESS_DIR)
        try:
            witness = seen.read(backup.ledger_id)
        finally:
            seen.close()
        if witness is not None and witness.seq > backup.ledger_entries:
            reasons.append(
                f"this data directory saw the ledger reach entry {witness.seq} ({witness.source})"
                f", but the backup ends at entry {backup.ledger_entries}: restoring it cuts off "
                f"entries {backup.ledger_entries + 1}–{witness.seq}, which were signed and may "
                "have been published; `ledger verify` will then report the cut-off tail and the "
                "service refuses to append (restore into a fresh data directory to read the "
                "backup)"
            )
    return reasons


def restore_sqlite(
    backup: Path, target: Path, *, home: Path | None = None, force: bool = False
) -> Restored:
    """Replace the SQLite database ``target`` by the checked copy ``backup`` (see the module
    docstring). InputError (exit 2) when ``backup`` is not a sound copy of a mindledger
    database; StorageError (exit 2) naming the reasons when ``target`` is in use or the
    restore would cut off ledger entries, unless ``force``. Nothing is changed when refused."""
    checked = check_copy(backup, home=home)
    if checked.problems:
        raise InputError(
            f"{backup} cannot be restored: " + "; ".join(checked.problems) + "; nothing was "
            "changed (expected a file written by `mindledger db backup`, checked with the "
            "same data directory's key)"
        )
    if target.exists() and target.resolve() == backup.resolve():
        raise InputError(f"{backup} is the database itself (expected a backup of it)")
    if not target.parent.is_dir():
        raise InputError(f"no directory {target.parent} for the database {target.name}")
    reasons = _refusals(checked, target, home)
    if reasons and not force:
        raise StorageError(
            f"refusing to restore {backup} over {target}: "
            + "; ".join(reasons)
            + " (stop the daemon and any workers first; --force restores anyway)"
        )
    before = _keep_replaced(target) if target.exists() else None
    private_file(target)
    src = open_read_only(backup)
    try:
        dst = sqlite3.connect(target, timeout=30)
        try:
            dst.execute("PRAGMA busy_timeout=30000")
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=WAL")
        finally:
            dst.close()
    except sqlite3.Error as exc:
        kept = f" (the database it replaced is kept at {before})" if before else ""
        raise StorageError(f"cannot restore {backup} to {target}: {exc}{kept}") from None
    finally:
        src.close()
    restored = check_copy(target, home=home)
    if restored.problems:
        raise StorageError(
            f"{target} does not check out after the restore: {'; '.join(restored.problems)}"
            + (f" (the database it replaced is kept at {before})" if before else "")
        )
    return Restored(checked, restored, before, tuple(reasons))


# -- PostgreSQL -------------------------------------------------------------------------------


def pg_dump_guidance(url: str, dest: str) -> str:
    """How to back up (and restore) the PostgreSQL database at ``url`` into the file ``dest``
    with PostgreSQL's own tools: the commands, the password masked."""
    parsed = sa.engine.make_url(normalise_url(url)).set(drivername="postgresql")
    shown = parsed.render_as_string(hide_password=True)
    password = (
        "\n(the password is shown as ***: put it in ~/.pgpass or PGPASSWORD and drop ':***' "
        "from the URL rather than typing it on a command line)"
        if parsed.password
        else ""
    )
    return (
        f"mindledger copies SQLite databases itself; {mask(url)} is PostgreSQL, which pg_dump "
        "backs up consistently while the daemon writes (it reads one snapshot). Run:\n"
        f"  pg_dump --format=custom --file={shlex.quote(dest)} {shlex.quote(shown)}{password}\n"
        "and to restore it into an empty database (the daemon and workers stopped):\n"
        f"  pg_restore --no-owner --dbname={shlex.quote(shown)} {shlex.quote(dest)}\n"
        "The service key and the published heads are in the data directory, not the "
        "database: keep a copy of its keys/ and ledger-heads.jsonl too."
    )
