"""The ledger's Merkle tree (RFC 6962, :mod:`ledger.merkle`) as stored in ``ledger_tree``.

Every append writes the tree nodes it completes, once, never to be rewritten; roots and proofs
read O(log n) of them and never the entries. :class:`TreeStore` keeps, in memory, the compact
range at the head this process wrote last, so the next append need not read it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ledger._table import Cursor, EntryTable, head_entry
from ledger.chain import Entry, Failure
from ledger.errors import LedgerIntegrityError
from ledger.merkle import (
    CompactRange,
    Node,
    NodeKey,
    consistency_keys,
    consistency_proof,
    inclusion_keys,
    inclusion_proof,
    leaf_hash,
    root_from,
    root_keys,
)
from ledger.tree import digest_bytes, digest_text
from mindledger.errors import NotFoundError

__all__ = ["TreeStore"]

_INSERT = "INSERT INTO ledger_tree (level, idx, hash) VALUES (?, ?, ?)"
_MISSING = "the ledger's Merkle tree lacks nodes (run `mindledger ledger verify`)"


class TreeStore:
    """The stored Merkle tree of the entries in ``table``."""

    def __init__(self, table: EntryTable):
        self.table = table
        self._tree: tuple[str, CompactRange] | None = None
        """The Merkle tree's compact range at the head this process last wrote (its hash)."""

    # -- writing ----------------------------------------------------------------------------

    def at(self, cur: Cursor, head: Entry | None) -> CompactRange:
        """A copy of the Merkle tree's compact range at ``head`` (to extend), from memory
        when this process wrote that head, else from the stored nodes."""
        size = 0 if head is None else head.seq
        if head is not None and self._tree is not None and self._tree[0] == head.hash:
            return self._tree[1].copy()
        nodes = self.nodes(cur, [*root_keys(size), (0, size)])
        if (0, size) in nodes:
            raise LedgerIntegrityError(
                f"the ledger's Merkle tree records entry {size + 1}, but the ledger ends at "
                f"entry {size}: entries were deleted; refusing to append (run `mindledger "
                "ledger verify`)"
            )
        try:
            return CompactRange.from_nodes(size, nodes)
        except KeyError:
            raise LedgerIntegrityError(
                f"the ledger's Merkle tree lacks nodes for its {size} entries (the "
                "ledger_tree table was changed); refusing to append (run `mindledger ledger "
                "verify`)"
            ) from None

    @staticmethod
    def grow(tree: CompactRange, entries: Sequence[Entry]) -> list[tuple[int, int, str]]:
        """Append ``entries`` to ``tree``: the rows of the nodes they complete."""
        return [
            (n.level, n.index, n.hash.hex())
            for e in entries
            for n in tree.append(leaf_hash(digest_bytes(e.hash)))
        ]

    @staticmethod
    def insert(cur: Cursor, rows: list[tuple[int, int, str]]) -> None:
        """Store the node ``rows`` (from :meth:`grow`)."""
        cur.many(_INSERT, rows)

    def remember(self, head_hash: str, tree: CompactRange) -> None:
        """``tree`` is the compact range at the head ``head_hash`` this process just wrote."""
        self._tree = (head_hash, tree)

    def forget(self) -> None:
        """Read the compact range back from the stored nodes before the next append."""
        self._tree = None

    # -- reading ----------------------------------------------------------------------------

    def nodes(self, cur: Cursor, keys: Iterable[NodeKey]) -> dict[NodeKey, bytes]:
        """The stored tree nodes ``keys`` (one query; a missing one is simply absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        where = " OR ".join(["(level = ? AND idx = ?)"] * len(wanted))
        params = tuple(x for key in wanted for x in key)
        out: dict[NodeKey, bytes] = {}
        for level, idx, digest in cur.all(
            f"SELECT level, idx, hash FROM ledger_tree WHERE {where}", params
        ):
            try:
                out[(int(level), int(idx))] = bytes.fromhex(digest)
            except (TypeError, ValueError):
                continue
        return out

    def nodes_now(self, keys: Iterable[NodeKey]) -> dict[NodeKey, bytes]:
        """:meth:`nodes` in a read transaction of its own."""
        with self.table.reading() as cur:
            return self.nodes(cur, keys)

    def root(self, size: int | None = None) -> bytes | None:
        """The Merkle root of entries 1…``size`` (default: all) from the stored tree; None
        when the stored tree lacks the nodes."""
        with self.table.reading() as cur:
            if size is None:
                head = head_entry(cur)
                size = 0 if head is None else head.seq
            try:
                return root_from(size, self.nodes(cur, root_keys(size)))
            except KeyError:
                return None

    def inclusion_proof(self, seq: int, size: int | None = None) -> dict[str, Any]:
        """The RFC 6962 audit path of entry ``seq`` in the tree of the first ``size`` entries
        (default: all), from O(log n) stored nodes: ``{seq, entry, size, root, proof,
        nodes_read}`` (hashes as ``sha256:<hex>``)."""
        with self.table.reading() as cur:
            head = head_entry(cur)
            n = 0 if head is None else head.seq
            size = n if size is None else size
            if type(seq) is not int or not 1 <= seq <= size <= n:
                raise NotFoundError(
                    f"no entry {seq} in a tree of {size} (expected 1 ≤ entry ≤ size ≤ {n}: the "
                    f"ledger has {n} entries)"
                )
            row = cur.one("SELECT hash FROM ledger_entries WHERE seq = ?", (seq,))
            keys = [*inclusion_keys(seq - 1, size), *root_keys(size)]
            nodes = self.nodes(cur, keys)
        try:
            proof = inclusion_proof(seq - 1, size, nodes)
            root = root_from(size, nodes)
        except KeyError:
            raise LedgerIntegrityError(_MISSING) from None
        return {
            "seq": seq,
            "entry": row[0],
            "size": size,
            "root": digest_text(root),
            "proof": [digest_text(h) for h in proof],
            "nodes_read": len(nodes),
        }

    def consistency_proof(self, old: int, new: int | None = None) -> dict[str, Any]:
        """The RFC 6962 consistency proof that the first ``new`` entries (default: all) extend
        the first ``old``, from O(log n) stored nodes (never the entries): ``{old, new,
        old_root, new_root, proof, nodes_read}``."""
        with self.table.reading() as cur:
            head = head_entry(cur)
            n = 0 if head is None else head.seq
            new = n if new is None else new
            if type(old) is not int or not 0 <= old <= new <= n:
                raise NotFoundError(
                    f"no trees of {old} and {new} entries (expected 0 ≤ old ≤ new ≤ {n}: the "
                    f"ledger has {n} entries)"
                )
            keys = [*consistency_keys(old, new), *root_keys(old), *root_keys(new)]
            nodes = self.nodes(cur, keys)
        try:
            proof = consistency_proof(old, new, nodes)
            old_root, new_root = root_from(old, nodes), root_from(new, nodes)
        except KeyError:
            raise LedgerIntegrityError(_MISSING) from None
        return {
            "old": old,
            "new": new,
            "old_root": digest_text(old_root),
            "new_root": digest_text(new_root),
            "proof": [digest_text(h) for h in proof],
            "nodes_read": len(nodes),
        }

    # -- verification -----------------------------------------------------------------------

    def check_stored(self, entries: Callable[[], Iterator[Entry]]) -> list[Failure]:
        """Every stored tree node against the node re-derived from ``entries()`` (``--full``):
        both streams in the order the nodes were completed. A changed interior node would
        make the proofs served for its leaves wrong."""
        failures: list[Failure] = []
        with self.table.raw_cursor() as cursor:
            cursor.execute(
                "SELECT level, idx, hash FROM ledger_tree ORDER BY ((idx + 1) * "
                "(CAST(1 AS BIGINT) << level)), level"
            )
            tree = CompactRange()
            expected = (
                node for e in entries() for node in tree.append(leaf_hash(digest_bytes(e.hash)))
            )
            while len(failures) < 20:
                rows = cursor.fetchmany(5000)
                if not rows:
                    break
                for level, idx, stored in rows:
                    want = next(expected, None)
                    if want is None or (want.level, want.index) != (int(level), int(idx)):
                        failures.append(_misplaced(want, int(level), int(idx)))
                        return failures
                    if want.hash.hex() != stored:
                        failures.append(
                            Failure(
                                (want.index + 1) << want.level,
                                "content-changed",
                                f"the stored Merkle tree node ({level}, {idx}) is not the hash "
                                "of the entries under it: proofs through it would be wrong",
                            )
                        )
            cursor.close()
            missing = next(expected, None) if not failures else None
            if missing is not None:
                failures.append(
                    Failure(
                        (missing.index + 1) << missing.level,
                        "content-changed",
                        f"the Merkle tree lacks node ({missing.level}, {missing.index})",
                    )
                )
        return failures


def _misplaced(want: Node | None, level: int, idx: int) -> Failure:
    """The failure for the stored node (``level``, ``idx``) where the entries make ``want``
    (None after the last): whichever comes first is the
    one out of place."""
    got = ((idx + 1) << level, level)
    if want is not None and ((want.index + 1) << want.level, want.level) < got:
        where = want.index + 1 << want.level
        what = f"the Merkle tree lacks node ({want.level}, {want.index})"
    else:
        where = got[0]
        what = f"the Merkle tree stores node ({level}, {idx}), which the entries do not make"
    return Failure(where, "content-changed", what)
