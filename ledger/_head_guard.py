"""The check before every append: is the head we are about to link to the real one?

The service refuses to build on a head that is not authentic, on a ledger shorter than the
head witness recorded (its tail was cut off), or on a ledger other than the one this data
directory witnessed (it was replaced). The head this process wrote last, with the witness it
wrote then, needs no check: :class:`HeadGuard` remembers it.
"""

from __future__ import annotations

from ledger._identity import LedgerIdentity
from ledger._table import Cursor
from ledger._witness import HeadWitness
from ledger.chain import Entry, Witness, entry_hash, signature_ok
from ledger.errors import LedgerIntegrityError

__all__ = ["HeadGuard"]


class HeadGuard:
    """The head checks of one ledger, with its head ``witness`` (None: no witness, and no
    detection of a cut-off tail)."""

    def __init__(self, identity: LedgerIdentity, witness: HeadWitness | None):
        self.identity = identity
        self.witness = witness
        self._trusted: tuple[int, str, str] | None = None
        """The head this process last wrote or verified: no need to check its signature."""
        self._bound = False
        """Whether this process checked that the data directory witnessed no other ledger."""

    def foreign_witnesses(self, lid: str | None) -> list[tuple[str, Witness]]:
        """Witnesses in this data directory of ledgers other than ``lid``."""
        if self.witness is None:
            return []
        return [(other, w) for other, w in self.witness.recorded() if other != lid]

    def check(self, cur: Cursor, head: Entry | None) -> None:
        """Refuse to build on a head that is not authentic, on a ledger shorter than the head
        witness, or on a ledger other than the one this data directory witnessed."""
        lid = self.identity.ledger_id(cur) if head is not None else None
        if self.witness is not None:
            self._check_witnessed(cur, head, lid, self.witness)
        if head is None:
            return
        signer = self.identity.signer_of(head)
        if entry_hash(head) != head.hash or (
            self._trusted != (head.seq, head.hash, head.signature)
            and (signer is None or not signature_ok(signer, head))
        ):
            raise LedgerIntegrityError(
                f"the ledger's last entry ({head.seq}) does not verify: it was changed or "
                "forged; refusing to append (run `mindledger ledger verify`)"
            )
        self.trust(head)

    def _check_witnessed(
        self, cur: Cursor, head: Entry | None, lid: str | None, witness: HeadWitness
    ) -> None:
        if not self._bound or head is None:
            self._check_not_replaced(lid)
            self._bound = lid is not None
        # the head this process wrote last, with the witness it wrote then: nothing to check
        ours = (
            lid is not None
            and head is not None
            and self._trusted == (head.seq, head.hash, head.signature)
            and witness.wrote_last(lid, head.seq)
        )
        if lid is None or ours:
            return
        w = witness.read(lid)
        if w is None:
            return
        assert head is not None
        if head.seq < w.seq or (head.seq == w.seq and head.hash != w.hash):
            raise LedgerIntegrityError(
                f"the ledger ends at entry {head.seq}, but {w.source} recorded "
                f"entry {w.seq} ({w.hash}): entries are missing or were "
                "rewritten; refusing to append (run `mindledger ledger verify`)"
            )
        if head.seq > w.seq:
            row = cur.one("SELECT hash FROM ledger_entries WHERE seq = ?", (w.seq,))
            if row is None or row[0] != w.hash:
                raise LedgerIntegrityError(
                    f"entry {w.seq} is not the one {w.source} recorded: the ledger "
                    "was rewritten; refusing to append (run `mindledger ledger verify`)"
                )

    def _check_not_replaced(self, lid: str | None) -> None:
        foreign = self.foreign_witnesses(lid)
        if foreign:
            other, seen = max(foreign, key=lambda t: t[1].seq)
            now = "is empty" if lid is None else f"holds ledger {lid}"
            raise LedgerIntegrityError(
                f"the database {now}, but {seen.source} recorded ledger {other} up to "
                f"entry {seen.seq}: the ledger was replaced; refusing to append (run "
                "`mindledger ledger verify`; to start a new ledger on purpose, use a "
                "new data directory)"
            )

    def trust(self, head: Entry) -> None:
        """``head`` was just written or checked: the next append need not check it again."""
        self._trusted = (head.seq, head.hash, head.signature)

    def forget(self) -> None:
        """Check the head again before the next append (another writer may have moved it)."""
        self._trusted = None

    def wrote(self, last: Entry, db_label: str) -> None:
        """This process appended up to ``last``: trust it, and advance the witness to it."""
        self.trust(last)
        lid = self.identity.known_ledger_id
        if self.witness is not None and lid is not None:
            self.witness.advance(lid, last, db_label)

    def witnessed(self, lid: str | None) -> Witness | None:
        """The witness of ledger ``lid`` (for an empty ledger, the furthest one recorded)."""
        if self.witness is None:
            return None
        if lid is not None:
            return self.witness.read(lid)
        recorded = self.witness.recorded()
        return max((w for _, w in recorded), key=lambda w: w.seq) if recorded else None
