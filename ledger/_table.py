"""The ledger's tables through the database driver: transactions, the head, the entries.

The prediction ledger's hot paths go straight to the DBAPI driver: SQLAlchemy's per-statement
overhead would cost a third of the commit rate. :class:`Cursor` takes ``?`` placeholders on
SQLite and PostgreSQL alike; :class:`EntryTable` opens the transactions — one holding the
write lock that serialises all writers (``BEGIN IMMEDIATE`` on SQLite, ``LOCK TABLE … IN
EXCLUSIVE MODE`` on PostgreSQL), or a read — and streams the entries in ``seq`` order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Engine

from ledger.chain import Entry
from ledger.db import mask

__all__ = ["COLUMNS", "Build", "Cursor", "EntryTable", "Spec", "head_entry", "row_entry"]

COLUMNS = "seq, subject, kind, payload_json, time, prev_hash, prev_signature, hash, signature"
"""The columns of ``ledger_entries``, in the order of :class:`~ledger.chain.Entry`'s fields."""

Spec = tuple[str, str, dict[str, Any]]
"""(kind, subject, payload) of an entry to append."""


class Cursor:
    """A DBAPI cursor taking ``?`` placeholders on SQLite and PostgreSQL alike."""

    def __init__(self, cursor: Any, postgres: bool):
        self.cursor = cursor
        self.postgres = postgres

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.cursor.execute(self._sql(sql), params)

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.cursor.execute(self._sql(sql), params)
        return self.cursor.fetchone()

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        self.cursor.execute(self._sql(sql), params)
        return list(self.cursor.fetchall())

    def many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.cursor.executemany(self._sql(sql), rows)


Build = Callable[[Cursor, str], tuple[list[Spec], Any]]
"""What a request to append runs inside the write transaction, given a cursor and the time:
the entries to append and the result for its caller (see :class:`ledger._writer.Writer`)."""


def row_entry(row: Any) -> Entry:
    """The entry of a row selected as :data:`COLUMNS`."""
    return Entry(*row)


def head_entry(cur: Cursor) -> Entry | None:
    """The ledger's last entry (None while it is empty)."""
    row = cur.one(f"SELECT {COLUMNS} FROM ledger_entries ORDER BY seq DESC LIMIT 1")
    return None if row is None else row_entry(row)


class EntryTable:
    """``ledger_entries`` (and ``ledger_tree`` beside it) in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"
        self.integrity_error: type[Exception] = engine.dialect.loaded_dbapi.IntegrityError
        """What the driver raises when a UNIQUE constraint stops a fork."""
        self.operational_error: type[Exception] = engine.dialect.loaded_dbapi.OperationalError
        self.db_label = mask(engine.url.render_as_string(hide_password=False))
        """The database's URL without its password, for messages."""

    @contextmanager
    def locked(self) -> Iterator[Cursor]:
        """One transaction holding the ledger's write lock."""
        raw = self.engine.raw_connection()
        try:
            cur = Cursor(raw.cursor(), not self.sqlite)
            if self.sqlite:
                cur.run("BEGIN IMMEDIATE")
            else:
                cur.run("LOCK TABLE ledger_entries IN EXCLUSIVE MODE")
            try:
                yield cur
            except BaseException:
                raw.rollback()
                raise
            raw.commit()
        finally:
            raw.close()

    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        """One read transaction."""
        raw = self.engine.raw_connection()
        try:
            yield Cursor(raw.cursor(), not self.sqlite)
        finally:
            raw.rollback()
            raw.close()

    @contextmanager
    def raw_cursor(self, name: str | None = None) -> Iterator[Any]:
        """A bare driver cursor in one read transaction, to stream rows with ``fetchmany``;
        with ``name``, a server-side cursor on PostgreSQL."""
        raw = self.engine.raw_connection()
        try:
            if self.sqlite or name is None:
                yield raw.cursor()
            else:
                yield raw.driver_connection.cursor(name=name)  # type: ignore[union-attr]
        finally:
            raw.rollback()
            raw.close()

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry in ``seq`` order, streamed (one consistent snapshot)."""
        with self.raw_cursor("ledger_scan") as cursor:
            cursor.execute(f"SELECT {COLUMNS} FROM ledger_entries ORDER BY seq")
            while True:
                rows = cursor.fetchmany(5000)
                if not rows:
                    break
                for row in rows:
                    yield Entry(*row)
            cursor.close()

    def head(self) -> Entry | None:
        """The ledger's last entry (None while it is empty)."""
        with self.reading() as cur:
            return head_entry(cur)

    def count(self, kind: str) -> int:
        """How many entries of ``kind`` the ledger holds."""
        with self.reading() as cur:
            (n,) = cur.one("SELECT count(*) FROM ledger_entries WHERE kind = ?", (kind,))
            return int(n)
