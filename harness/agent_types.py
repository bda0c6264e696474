"""The values the agents and the scaffold share, below both: an :class:`Attempt` (what an agent
did with one item) and :class:`TurnTaker` (an agent that can take one model turn, which is all the
scaffold asks of :class:`~harness.agents.ChatAgent`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Attempt", "TurnTaker"]


@dataclass
class Attempt:
    """What an agent did with one item."""

    answer: Any = None
    confidence: float | None = None
    raw_text: str | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    not_applicable: bool = False
    """The agent does not apply to this item (a reference policy of another family)."""
    parse_problem: str | None = None
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    provider: dict[str, Any] = field(default_factory=dict)


class TurnTaker(Protocol):
    """An agent that can take one model turn within an attempt."""

    async def turn(
        self,
        messages: list[dict[str, Any]],
        att: Attempt,
        *,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Send ``messages``, record the turn on ``att``, append the reply to ``messages``."""
        ...
