"""Verifying the stored ledger: the entries, and what surrounds them.

:func:`~ledger.chain.verify_entries` checks the entries themselves; :class:`Verifier` adds what
only the service's side can check: that the stored Merkle tree matches them and records no
entry beyond the last, that this data directory witnessed no other ledger, that the service
key here is the ledger's current key, and that every tree head the service published, or one
saved elsewhere, is consistent with the ledger now.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger._head_guard import HeadGuard
from ledger._identity import LedgerIdentity
from ledger._table import EntryTable
from ledger._tree_heads import TreeHeads
from ledger._tree_store import TreeStore
from ledger.chain import PROBLEMS, Failure, Verification, Witness, verify_entries
from ledger.errors import LedgerKeyError
from ledger.tree import TreeHead, check_head

__all__ = ["Verifier"]


class Verifier:
    """Verifies the ledger in ``table`` (see :meth:`verification`)."""

    def __init__(
        self,
        table: EntryTable,
        identity: LedgerIdentity,
        guard: HeadGuard,
        tree: TreeStore,
        heads: TreeHeads,
    ):
        self.table = table
        self.identity = identity
        self.guard = guard
        self.tree = tree
        self.heads = heads

    def verification(
        self, *, full: bool = False, heads: Sequence[tuple[TreeHead, str]] = ()
    ) -> Verification:
        """Verify the stored ledger (see :meth:`ledger.predictions.Ledger.verification`)."""
        witness = self._witness()
        published, extra = self.heads.published()
        saved = [*heads, *published]
        result = verify_entries(
            self.table.iter_entries,
            self.identity.public_key,
            full=full,
            witness=witness,
            sizes={h.size for h, _ in saved},
        )
        extra += self._tree_beyond_head(result)
        if full and result.root is not None:
            extra += self.tree.check_stored(self.table.iter_entries)
        extra += self._other_ledgers(result)
        extra += self._key_here(result)
        extra += self._stored_root(result)
        for head, source in saved:
            extra += check_head(result, head, source)
        if extra:
            result.failures = sorted(
                [*result.failures, *extra], key=lambda f: (f.seq, PROBLEMS.index(f.problem))
            )
        return result

    def _witness(self) -> Witness | None:
        """The head witness of this ledger (None: none, or the key here is not the
        ledger's, which verification reports)."""
        if self.guard.witness is None:
            return None
        try:
            with self.table.reading() as cur:
                lid = self.identity.ledger_id(cur)
            return self.guard.witnessed(lid)
        except LedgerKeyError:
            return None

    def _tree_beyond_head(self, result: Verification) -> list[Failure]:
        """A stored tree node beyond the last entry verified, and no entry beyond it now: the
        ledger's tail was cut off. (An entry appended while the entries were read — a live
        daemon's — has its node too, so the head is read after the node: a writer stores an
        entry and its nodes in one transaction, so a node seen means its entry is there.)"""
        if not self.tree.nodes_now([(0, result.head_seq)]):
            return []
        head = self.table.head()
        if head is not None and head.seq > result.head_seq:
            return []  # the ledger grew while it was verified
        return [
            Failure(
                result.head_seq + 1,
                "entry-missing",
                f"the ledger's Merkle tree records entry {result.head_seq + 1}, but the "
                f"ledger ends at entry {result.head_seq}: its tail was cut off",
            )
        ]

    def _other_ledgers(self, result: Verification) -> list[Failure]:
        """This data directory witnessed another ledger: this one replaced it."""
        lid = result.ledger_id
        if lid is None:
            return []
        return [
            Failure(
                1,
                "ledger-replaced",
                f"{seen.source} recorded ledger {other} up to entry {seen.seq}, but the "
                f"database holds ledger {lid}: the ledger was replaced (emptied and started "
                "again, or rewritten under a new key)",
            )
            for other, seen in self.guard.foreign_witnesses(lid)
        ]

    def _key_here(self, result: Verification) -> list[Failure]:
        """The service key here is not the ledger's current key."""
        here = self.identity.public_key_hex
        if not result.keys or here == result.keys[-1]:
            return []
        return [
            Failure(
                result.head_seq,
                "ledger-replaced",
                f"the service key here is {here}, but the ledger's current "
                f"key is {result.keys[-1]}: the key was changed without a key entry",
            )
        ]

    def _stored_root(self, result: Verification) -> list[Failure]:
        """The stored tree's root is not the root of the entries."""
        if result.root is None or not result.head_seq:
            return []
        if self.tree.root(result.head_seq) == result.root:
            return []
        return [
            Failure(
                result.head_seq,
                "content-changed",
                "the stored Merkle tree does not match the entries (the ledger_tree "
                "table was changed): proofs served from it would be wrong",
            )
        ]
