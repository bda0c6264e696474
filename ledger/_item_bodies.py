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

A page of items (:class:`ItemPage`) is fetched at once, and its items are rebuilt a run of
:attr:`ItemPage.BUILD_AHEAD` at a time, from the first one asked for: the runner's event loop,
which takes the items one by one as its workers reach them, is held for a run (about 2.5 ms),
never for a whole page, and the items of a run are parsed together. Parsed one by one as the
workers reach them, between the run's other work, an item cost twice its cost alone (89–106
µs of the loop's CPU against 42–46): its bytes and the parser had left the processor's caches.
Parsed in runs, on a quiet host, the runner's stored path (``bench/bench_runner.py
--stored-items``, 10,000 trials at 256 in flight) took 0.26–0.30 ms of CPU a trial against
0.34–0.35, 1.26–1.41× the ideal wall time against 1.62–1.70× (the items held in memory:
1.16×); on a busy host, whose other tenants take the caches, no difference was measured.

Most of an item's bulk is often one numeric matrix its items share: the 441 payoffs of an 11–20
game take 2.7 of its 3.9 KB, and every item of that game holds the same ones. A
:class:`SharedMatrices` reader, which a run's pages share, parses each distinct matrix once:
an item's body is parsed with its matrices cut out, and the matrices put back as the one parsed
copy of each (equal values; the lists are shared between the items, which, like every item,
are read and never changed). That parses a game item in about a quarter of the time, and keeps
one matrix in memory instead of one per item. A matrix met before is recognised where it starts
and put back where it went the last time, without searching for its end, copying or hashing
its bytes, or walking the document: an 11–20 item is then rebuilt in 22 µs rather than 26 (2,048
items, alone; in the runner, 49–51 µs of the loop's CPU rather than 52–54).

What is stored does not change, nor what an item reads back as.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from pydantic_core import from_json

from ledger.models import ItemRow
from mindledger.errors import StorageError, readable
from mindledger.items import Item

__all__ = ["ItemPage", "SharedMatrices", "bodies_query", "read_json", "stored_item"]


def read_json(body: bytes) -> Any:
    """The JSON value of ``body``: exactly what :func:`json.loads` returns for it (and raises),
    in about half its time when the body holds many numbers."""
    try:
        return from_json(body)
    except ValueError:  # not JSON at all, or JSON that jiter refuses and json.loads reads
        return json.loads(body)


_MATRIX_CHARS = b"0123456789.eE+-,[]"
"""Every byte of a matrix of numbers in canonical JSON."""

_PLACEHOLDER = '"\\u0000shared-matrix:%d"'
"""What a cut-out matrix is replaced by before parsing (a string no canonical item holds: a body
with ``\\u0000shared-matrix`` in it is parsed whole)."""


class _Matrix:
    """A matrix of numbers met before: its bytes, its one parsed copy, and the keys of the
    object member it was last put back into (``None`` until it has been)."""

    __slots__ = ("path", "text", "value")

    def __init__(self, text: bytes, value: list[Any]) -> None:
        self.text = text
        self.value = value
        self.path: tuple[str, ...] | None = None


_HEAD = 48
"""How many of a matrix's first bytes index it among those met before."""


class SharedMatrices:
    """A JSON reader (for :meth:`mindledger.items.Item.from_json`) that parses each distinct
    numeric matrix of at least :attr:`SMALLEST` bytes once and hands every document that holds it
    the same parsed copy; everything else is read as :func:`read_json` reads it. It keeps the
    last :attr:`KEPT` distinct matrices.

    A matrix met before is recognised where it starts, by its first bytes and then all of them
    compared in place (no copy of it is made, nor its end searched for), and put back where it
    was put back the last time (found by walking the document only when it is not there)."""

    SMALLEST = 512
    KEPT = 64

    __slots__ = ("_heads", "_parsed")

    def __init__(self) -> None:
        self._parsed: dict[bytes, _Matrix] = {}
        """The matrices met, by their bytes, oldest first."""
        self._heads: dict[bytes, list[_Matrix]] = {}
        """The same matrices by their first :data:`_HEAD` bytes."""

    def __call__(self, body: bytes) -> Any:
        if len(body) < 2 * self.SMALLEST or b"\\u0000shared-matrix" in body:
            return read_json(body)
        cut = list(self._matrices(body))
        if not cut:
            return read_json(body)
        parts: list[bytes] = []
        at = 0
        for number, (start, end, _) in enumerate(cut):
            parts += (body[at:start], (_PLACEHOLDER % number).encode("ascii"))
            at = end
        parts.append(body[at:])
        parsed = read_json(b"".join(parts))
        if type(parsed) is not dict or not _put_back(parsed, [m for _, _, m in cut]):
            return read_json(body)  # a matrix inside an array: read as it is
        return parsed

    def _matrices(self, body: bytes) -> Iterator[tuple[int, int, _Matrix]]:
        """Where ``body`` (JSON) holds, as an object member's value, a matrix of numbers (an
        array of arrays of numbers) of at least :attr:`SMALLEST` bytes: (start, end, the matrix)
        of each.

        Found by byte search rather than a regular expression (which took longer than parsing
        the body). ``":[[`` is the end of a key and the start of its value when the key holds no
        backslash (a ``"`` inside a string is escaped). There, a matrix met before is the value
        when the body holds all its bytes and a ``,`` or ``}`` follows them; any other value is
        the bytes up to the first ``]]`` when they hold nothing but numbers, commas and
        balanced brackets and a ``,`` or ``}`` follows them."""
        at = body.find(b'":[[')
        while at >= 0:
            start = at + 2
            key = body.rfind(b'"', 0, at)
            if not (
                key > 0 and body[key - 1 : key] in (b"{", b",") and b"\\" not in body[key + 1 : at]
            ):
                at = body.find(b'":[[', start)
                continue
            for known in self._heads.get(body[start : start + _HEAD], ()):
                end = start + len(known.text)
                if body[end : end + 1] in (b",", b"}") and body.startswith(known.text, start):
                    yield start, end, known
                    break
            else:
                end = body.find(b"]]", start) + 2
                if end < 2:
                    return
                value = body[start:end]
                if (
                    end - start >= self.SMALLEST
                    and body[end : end + 1] in (b",", b"}")
                    and not value.translate(None, _MATRIX_CHARS)
                    and value.count(b"[") == value.count(b"]")
                ):
                    yield start, end, self._parse(value)
            at = body.find(b'":[[', end)

    def _parse(self, text: bytes) -> _Matrix:
        if text in self._parsed:  # not reached: a matrix met before is found by its start
            return self._parsed[text]
        if len(self._parsed) >= self.KEPT:
            oldest = self._parsed.pop(next(iter(self._parsed)))
            heads = self._heads[oldest.text[:_HEAD]]
            heads.remove(oldest)
            if not heads:
                del self._heads[oldest.text[:_HEAD]]
        matrix = self._parsed[text] = _Matrix(text, read_json(text))
        self._heads.setdefault(text[:_HEAD], []).append(matrix)
        return matrix


def _put_back(value: dict[str, Any], matrices: Sequence[_Matrix]) -> bool:
    """Replace the placeholder of each of ``matrices`` (the ``n``-th's is
    ``"\\0shared-matrix:n"``), where it is a member of ``value`` (a parsed JSON object) or of an
    object inside it, by the matrix's parsed copy; False if one is left (a matrix inside an
    array is not put back, and the body is then parsed whole).

    Each is looked for first where it was put back the last time; the document is walked, objects
    only, for those that are not there. An item's arrays are not walked: most of its values are
    arrays of numbers."""
    missing: dict[str, _Matrix] = {}
    for number, matrix in enumerate(matrices):
        placeholder = f"\0shared-matrix:{number}"
        path = matrix.path
        if path is not None:
            holder: Any = value
            for key in path[:-1]:
                holder = holder.get(key) if type(holder) is dict else None
            if type(holder) is dict and holder.get(path[-1]) == placeholder:
                holder[path[-1]] = matrix.value
                continue
        missing[placeholder] = matrix
    return not missing or _walk_back(value, missing, ()) == len(missing)


def _walk_back(value: dict[str, Any], missing: dict[str, _Matrix], path: tuple[str, ...]) -> int:
    """Put back the ``missing`` matrices (by placeholder) found in ``value`` at ``path`` or in an
    object inside it, each remembering where; how many were."""
    found = 0
    for key, inner in value.items():
        kind = type(inner)
        if kind is str:
            matrix = missing.get(inner)
            if matrix is not None:
                value[key] = matrix.value
                matrix.path = (*path, key)
                found += 1
        elif kind is dict:
            found += _walk_back(inner, missing, (*path, key))
    return found


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


def stored_item(item_id: str, body: bytes, *, loads: Callable[[bytes], Any] = read_json) -> Item:
    """The item stored as ``item_id``, rebuilt from its stored JSON (parsed by ``loads``):
    StorageError unless its content hashes to ``item_id`` (a tampered or corrupted item must not
    be scored)."""
    try:
        item = Item.from_json(body, loads=loads)
    except (ValueError, TypeError) as exc:  # not JSON, not an item, or content ≠ its own id
        raise StorageError(f"stored item {item_id} is corrupt: {readable(str(exc))}") from exc
    if item.id != item_id:
        raise StorageError(f"stored item {item_id} holds another item ({item.id})")
    return item


class ItemPage:
    """Items fetched together, each rebuilt from its body (:func:`stored_item`, its id checked,
    parsed by ``loads``) when it or one of the :attr:`BUILD_AHEAD` items before it is first asked
    for, and kept. An item that cannot be rebuilt (corrupt, or not the item its id names) raises
    when it is asked for, not when an item before it is."""

    BUILD_AHEAD = 64
    """Items rebuilt together (see the module docstring)."""

    __slots__ = ("_bodies", "_ids", "_items", "_loads")

    def __init__(
        self,
        ids: Sequence[str],
        bodies: Sequence[bytes],
        *,
        loads: Callable[[bytes], Any] = read_json,
    ) -> None:
        self._ids = ids
        self._loads = loads
        self._bodies = list(bodies)
        self._items: list[Item | None] = [None] * len(ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, offset: int) -> Item:
        item = self._items[offset]
        if item is None:
            item = self._build(offset)
            for ahead in range(offset + 1, min(offset + self.BUILD_AHEAD, len(self._ids))):
                if self._items[ahead] is None:
                    try:
                        self._build(ahead)
                    except Exception:  # raised again when that item is asked for, to its asker
                        pass
        return item

    def _build(self, offset: int) -> Item:
        item = self._items[offset] = stored_item(
            self._ids[offset], self._bodies[offset], loads=self._loads
        )
        self._bodies[offset] = b""  # read: no need to keep its bytes too
        return item

    def __iter__(self) -> Iterator[Item]:
        return (self[offset] for offset in range(len(self._ids)))
