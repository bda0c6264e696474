"""Reading items back from storage cheaply: their stored JSON fetched as the bytes their ids
hash, and parsed by a faster parser than :func:`json.loads` that returns the same values.

A run executed by ``mindledger run`` reads its items back a page at a time
(:class:`ledger.store.StoredItems`), and each item's id is checked by hashing its stored bytes
(:meth:`mindledger.items.Item.from_json`). What that costs is mostly parsing: an 11–20 game
item is 4 KB of JSON holding a payoff matrix of 441 numbers, and :func:`json.loads` takes some
70–100 µs for it, as long as the rest of a trial's work on the runner. Two savings:

- The body is fetched as bytes (SQLite's ``CAST(… AS BLOB)``, PostgreSQL's ``convert_to``),
  not decoded into ``str`` by the driver only to be encoded back to bytes for the hash.
- pydantic-core's parser (jiter; installed with sqlmodel, which the ledger stands on) reads
  the same bytes in about half the time. It reads floats exactly and returns the values
  :func:`json.loads` returns (``tests/ledger/test_item_bodies.py`` compares the two over random
  documents); what it refuses and :func:`json.loads` accepts (a lone surrogate, a byte-order
  mark, nesting deeper than its limit) is read by :func:`json.loads`, as before.

A page of items (:class:`ItemPage`) is fetched at once but each item is rebuilt when first asked
for, so that the runner's event loop, which takes the items one by one as its workers reach
them, is never held for a whole page.

What is stored does not change, nor what an item reads back as.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from pydantic_core import from_json

from ledger.models import ItemRow
from mindledger.errors import StorageError, readable
from mindledger.items import Item

__all__ = ["ItemPage", "bodies_query", "read_json", "stored_item"]


def read_json(body: bytes) -> Any:
    """The JSON value of ``body``: exactly what :func:`json.loads` returns for it (and raises),
    in about half its time when the body holds many numbers."""
    try:
        return from_json(body)
    except ValueError:  # not JSON at all, or JSON that jiter refuses and json.loads reads
        return json.loads(body)


def bodies_query(dialect: str) -> sa.Select[str, bytes]:
    """``SELECT id, body`` for the items whose ids are bound to ``ids`` (an expanding
    parameter: the statement is compiled once, whatever the number of ids), the body as the
    UTF-8 bytes of the stored JSON on the database ``dialect``."""
    table = ItemRow.__table__  # type: ignore[attr-defined]
    text = table.c.body_json
    body = (
        sa.cast(text, sa.LargeBinary)  # SQLite: the text's bytes, in the database's encoding
        if dialect == "sqlite"
        else sa.func.convert_to(text, sa.literal("UTF8"), type_=sa.LargeBinary)
    )
    return sa.select(table.c.id, body).where(table.c.id.in_(sa.bindparam("ids", expanding=True)))


def stored_item(item_id: str, body: bytes) -> Item:
    """The item stored as ``item_id``, rebuilt from its stored JSON: StorageError unless its
    content hashes to ``item_id`` (a tampered or corrupted item must not be scored)."""
    try:
        item = Item.from_json(body, loads=read_json)
    except (ValueError, TypeError) as exc:  # not JSON, not an item, or content ≠ its own id
        raise StorageError(f"stored item {item_id} is corrupt: {readable(str(exc))}") from exc
    if item.id != item_id:
        raise StorageError(f"stored item {item_id} holds another item ({item.id})")
    return item


class ItemPage:
    """Items fetched together, each rebuilt from its body (:func:`stored_item`, its id checked)
    the first time it is asked for, and kept."""

    __slots__ = ("_bodies", "_ids", "_items")

    def __init__(self, ids: Sequence[str], bodies: Sequence[bytes]) -> None:
        self._ids = ids
        self._bodies = list(bodies)
        self._items: list[Item | None] = [None] * len(ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, offset: int) -> Item:
        item = self._items[offset]
        if item is None:
            item = self._items[offset] = stored_item(self._ids[offset], self._bodies[offset])
            self._bodies[offset] = b""  # read: no need to keep its bytes too
        return item

    def __iter__(self) -> Iterator[Item]:
        return (self[offset] for offset in range(len(self._ids)))
