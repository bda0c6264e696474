"""Messages the screens post up to the App, which owns navigation ("attributes down, messages
up")."""

from __future__ import annotations

from textual.message import Message

__all__ = ["CompareRequested", "HistoryRequested", "TranscriptRequested", "TrialsRequested"]


class CompareRequested(Message):
    """Show run ``run_a`` (A) against run ``run_b`` (B)."""

    def __init__(self, run_a: str, run_b: str) -> None:
        self.run_a = run_a
        self.run_b = run_b
        super().__init__()


class HistoryRequested(Message):
    """Show ``agent``'s history."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        super().__init__()


class TrialsRequested(Message):
    """Show ``agent``'s trials in run ``run_id``."""

    def __init__(self, run_id: str, agent: str) -> None:
        self.run_id = run_id
        self.agent = agent
        super().__init__()


class TranscriptRequested(Message):
    """Show one trial whole: ``agent``'s trial of ``item`` (its id) in run ``run_id``;
    ``position`` is the item's place in the run."""

    def __init__(self, run_id: str, agent: str, item: str, position: int | None = None) -> None:
        self.run_id = run_id
        self.agent = agent
        self.item = item
        self.position = position
        super().__init__()
