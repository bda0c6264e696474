"""What an agent did with one item (:class:`Attempt`), in a module of its own below the agents
(:mod:`harness.agent.agents` re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Attempt"]


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

