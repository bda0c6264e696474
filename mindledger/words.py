"""Counted nouns in messages: ``1 problem``, ``3 problems``, never ``problem(s)``."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for one: ``counted(1, "trial")`` is ``"1 trial"``,
    ``counted(3, "trial")`` ``"3 trials"``; ``plural`` for a noun whose plural is not ``noun +
    "s"`` (``counted(2, "query", "queries")``). A noun of several words takes the plural on
    its last (``counted(2, "cache hit")`` is ``"2 cache hits"``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
