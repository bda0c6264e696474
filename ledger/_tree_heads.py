"""Signed tree heads of the ledger, and proof bundles against them.

A tree head (:class:`~ledger.tree.TreeHead`) names the ledger, its size, its Merkle root and its
last entry, signed by the service key; each newly signed head is appended to the heads file, so
anyone holding an older one can ask for a consistency proof. :meth:`TreeHeads.prove` bundles a
fresh head with the inclusion proofs of some entries: a bundle anyone can check offline
(:func:`ledger.tree.check_proof`).
"""

from __future__ import annotations

from typing import Any

from ledger._identity import LedgerIdentity
from ledger._table import COLUMNS, EntryTable, head_entry, row_entry
from ledger._tree_store import TreeStore
from ledger.chain import Failure
from ledger.clock import Clock
from ledger.errors import LedgerIntegrityError
from ledger.merkle import root_from, root_keys
from ledger.tree import HeadsFile, TreeHead, sign_tree_head
from mindledger.errors import NotFoundError

__all__ = ["TreeHeads"]


class TreeHeads:
    """The heads of the tree in ``tree``, signed by ``identity``'s key at ``clock()`` and
    published to ``heads_file`` (None: signed but not kept)."""

    def __init__(
        self,
        table: EntryTable,
        identity: LedgerIdentity,
        tree: TreeStore,
        heads_file: HeadsFile | None,
        clock: Clock,
    ):
        self.table = table
        self.identity = identity
        self.tree = tree
        self.file = heads_file
        self.clock = clock
        self._published: TreeHead | None = None

    def tree_head(self, *, publish: bool = True) -> TreeHead | None:
        """A signed tree head of the ledger as it is now (None while it is empty). A head is
        signed only when the ledger grew since the last one this process signed; with
        ``publish``, each newly signed head is appended to the heads file."""
        with self.table.reading() as cur:
            head = head_entry(cur)
            if head is None:
                return None
            last = self._published
            if last is not None and (last.size, last.head) == (head.seq, head.hash):
                return last
            lid = self.identity.ledger_id(cur)
            assert lid is not None
            try:
                root = root_from(head.seq, self.tree.nodes(cur, root_keys(head.seq)))
            except KeyError:
                raise LedgerIntegrityError(
                    f"the ledger's Merkle tree lacks nodes for its {head.seq} entries; "
                    "refusing to sign a head (run `mindledger ledger verify`)"
                ) from None
        signed = sign_tree_head(
            self.identity.key,
            ledger=lid,
            size=head.seq,
            root=root,
            head=head.hash,
            time=self.clock(),
        )
        if publish and self.file is not None:
            self.file.append(signed)
        self._published = signed
        return signed

    def published(self) -> tuple[list[tuple[TreeHead, str]], list[Failure]]:
        """Every head in the heads file, with where it stands, and a failure for each line
        that is not a head."""
        heads: list[tuple[TreeHead, str]] = []
        failures: list[Failure] = []
        if self.file is not None:
            for n, head in self.file.read():
                if isinstance(head, TreeHead):
                    heads.append((head, f"the published head on line {n} of {self.file.path}"))
                else:
                    failures.append(Failure(1, "invalid-entry", head))
        return heads, failures

    def prove(self, subject: str) -> dict[str, Any]:
        """Inclusion proofs of a prediction's entries (``subject`` a prediction id) or of one
        entry (``subject`` its seq), against a freshly signed tree head: a bundle anyone can
        check offline (:func:`ledger.tree.check_proof`)."""
        if subject.isdigit():
            seqs = [int(subject)]
        else:
            with self.table.reading() as cur:
                seqs = [
                    int(r[0])
                    for r in cur.all(
                        "SELECT seq FROM ledger_entries WHERE subject = ? ORDER BY seq", (subject,)
                    )
                ]
            if not seqs:
                raise NotFoundError(f"no entries for {subject!r} (a prediction id or an entry seq)")
        head = self.tree_head()
        if head is None:
            raise NotFoundError("the ledger is empty: there is nothing to prove")
        marks = ", ".join("?" * len(seqs))
        with self.table.reading() as cur:
            rows = cur.all(
                f"SELECT {COLUMNS} FROM ledger_entries WHERE seq IN ({marks})", tuple(seqs)
            )
        entries = {int(r[0]): row_entry(r) for r in rows}
        proofs = []
        for seq in seqs:
            if seq not in entries or seq > head.size:
                raise NotFoundError(f"no entry {seq} in the ledger's {head.size} entries")
            proof = self.tree.inclusion_proof(seq, head.size)
            if proof["root"] != head.root:
                raise LedgerIntegrityError(
                    "the stored Merkle tree does not match the signed head (run `mindledger "
                    "ledger verify`)"
                )
            proofs.append({"entry": entries[seq].to_export(), "proof": proof["proof"]})
        return {"subject": subject, "tree_head": head.to_dict(), "proofs": proofs}
