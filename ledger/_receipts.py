"""What the prediction ledger hands back, and what a client needs of it.

:class:`CommitReceipt` and :class:`RevealResult` are the values :class:`~ledger.predictions.Ledger`
returns from a commit and a reveal; :class:`LedgerService` is the part of it that
:class:`~ledger.client.LedgerClient` calls. They live below both, so that the ledger can hand out
clients and the client can call the ledger without the two modules importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["CommitReceipt", "LedgerService", "RevealResult"]


@dataclass(frozen=True)
class CommitReceipt:
    """What the committer gets back. The salt is not in it: it never leaves the committer."""

    id: str
    commitment: str
    seq: int
    entry: str
    deadline: str
    committed_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "commitment": self.commitment,
            "seq": self.seq,
            "entry": self.entry,
            "deadline": self.deadline,
            "committed_at": self.committed_at,
        }


@dataclass(frozen=True)
class RevealResult:
    """The outcome of a reveal: ``scored``, or ``rejected`` (does not match its commitment) or
    ``expired`` (too late), both recorded with the worst-case penalty."""

    id: str
    status: str
    scores: dict[str, Any]
    reason: str | None
    seq: int
    entry: str

    @property
    def accepted(self) -> bool:
        return self.status == "scored"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "scores": self.scores,
            "reason": self.reason,
            "seq": self.seq,
            "entry": self.entry,
        }


class LedgerService(Protocol):
    """The ledger's operations that a :class:`~ledger.client.LedgerClient` calls."""

    def register_agent(self, predictor: str, public_key: str) -> object: ...

    def commit(
        self,
        predictor: str,
        target: str,
        query: str,
        commitment: str,
        *,
        item: str | None = None,
        condition: Any = None,
        agent_signature: str | None = None,
        query_hash: str | None = None,
    ) -> CommitReceipt: ...

    def observe(self, prediction: str, answer: str, provenance: Mapping[str, Any]) -> object: ...

    def reveal(
        self, prediction: str, revealed: Mapping[str, Any], salt: bytes | str
    ) -> RevealResult: ...
