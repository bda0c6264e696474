"""The prediction ledger's one table (SQLModel). Append-only: no row is ever updated or deleted.

Every state change of every prediction is one row, an *entry*, in one gap-free order (``seq``).
Each entry's ``hash`` covers its content and the previous entry's hash and signature, so the
rows form one chain; ``signature`` is the service's Ed25519 signature over ``hash``. The
canonical form of an entry is in :mod:`ledger.chain` and ``docs/ledger.md``.

``seq`` is the primary key and ``prev_hash`` and ``hash`` are UNIQUE, so two writers that both
believed they held the head cannot fork the chain: the second insert fails.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["LedgerEntryRow", "LedgerTreeRow"]


class LedgerEntryRow(SQLModel, table=True):
    """One entry of the prediction ledger."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        UniqueConstraint("prev_hash", name="uq_ledger_entries_prev_hash"),
        UniqueConstraint("hash", name="uq_ledger_entries_hash"),
    )

    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """Position in the ledger: 1, 2, 3, … with no gaps."""
    subject: str = Field(index=True)
    """What the entry is about: a prediction id (``p…``), ``agent:NAME`` or ``ledger``."""
    kind: str = Field(index=True)
    """open, register, commit, observe, reveal, reject or expire."""
    payload_json: str = Field(sa_column=Column(Text, nullable=False))
    """The entry's content as canonical JSON."""
    time: str
    """When the service appended it (ISO 8601 UTC)."""
    prev_hash: str
    """``hash`` of the previous entry (a fixed genesis value for entry 1)."""
    prev_signature: str = Field(sa_column=Column(Text, nullable=False))
    """``signature`` of the previous entry (empty for entry 1)."""
    hash: str
    """``sha256:<hex>`` of the entry's canonical form."""
    signature: str = Field(sa_column=Column(Text, nullable=False))
    """The service's Ed25519 signature over the hash, hex."""


class LedgerTreeRow(SQLModel, table=True):
    """One stored node of the ledger's Merkle tree (RFC 6962; see :mod:`ledger.merkle`): the
    root of the perfect subtree over leaves ``[idx << level, (idx + 1) << level)``, where leaf
    ``i`` is entry ``i + 1``. Written once, in the transaction that appends its last leaf."""

    __tablename__ = "ledger_tree"

    level: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    """Height of the subtree (0: a leaf)."""
    idx: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """Position of the subtree among those of its level."""
    hash: str
    """The subtree's root hash, 64 hex digits."""
