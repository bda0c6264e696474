"""Messages the screens post up to the App, which owns navigation ("attributes down, messages
up")."""

from __future__ import annotations

from textual.message import Message

__all__ = ["CompareRequested", "HistoryRequested"]


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
