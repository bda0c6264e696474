"""The prediction ledger's one table (SQLModel). Append-only: no row is ever updated or deleted.

Every state change of every prediction is one row, an *entry*, in one gap-free order (``seq``).
Each entry's ``hash`` covers its content and the previous entry's hash and signature, so the
rows form one chain; ``signature`` is the service's Ed25519 signature over ``hash``. The
canonical form of an entry is in :mod:`ledger.chain` and ``docs/ledger.md``.

``seq`` is the primary key and ``prev_hash`` and ``hash`` are UNIQUE, so two writers that both
believed they held the head cannot fork the chain: the second insert fails.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["LedgerEntryRow"]


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
