"""The daemon as a witnessed ledger: :class:`HeadSender` sends each head the daemon signs to the
ledger's witnesses (``[[witnesses]]``), again with the next head when one was down. (The daemon
as a witness of other ledgers is :mod:`harness.daemon.routes.witness`.)
"""

from __future__ import annotations

from pathlib import Path

from harness.config.settings import Settings
from harness.publish.witnesses import COSIGNATURES_FILE, CosignatureLog, WitnessOutcome, send_head
from ledger.predictions import Ledger
from ledger.tree import TreeHead

__all__ = ["HeadSender"]


class HeadSender:
    """Sends the ledger's newest signed head to its witnesses when it grew past what each
    cosigned, or when the last attempt failed (a witness that was down gets the next head)."""

    def __init__(self, settings: Settings, ledger: Ledger):
        self.settings = settings
        self.ledger = ledger
        self.kept = CosignatureLog(Path(settings.home) / COSIGNATURES_FILE)
        self._cosigned: dict[str, int] = {}
        """Per witness URL: the size it last cosigned in this process."""

    def send(self, head: TreeHead | None) -> list[WitnessOutcome]:
        """Send ``head`` to every witness that has not cosigned it (or a larger one)."""
        if head is None:
            return []
        due = [w for w in self.settings.witnesses if self._cosigned.get(w.url, -1) < head.size]
        if not due:
            return []
        outcomes = send_head(self.ledger, head, due, self.kept)
        for outcome in outcomes:
            if outcome.cosigned is not None:
                self._cosigned[outcome.witness.url] = outcome.cosigned.tree_head.size
        return outcomes
