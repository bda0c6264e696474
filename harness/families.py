"""Dispatch from an item's family to its pure scorer and its reference answers."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mindledger.errors import UserError
from mindledger.items import Item, Score

__all__ = ["POLICIES", "applies", "check_policy", "reference_answer", "score"]

POLICIES = ("oracle", "random", "depth-capped:N", "reality-leak", "not-reality", "level:K")
_POLICY = re.compile(r"^(oracle|random|reality-leak|not-reality|depth-capped:\d+|level:\d+)$")


def check_policy(policy: str) -> None:
    """Raise a UserError unless ``policy`` names a reference agent."""
    if not _POLICY.match(policy):
        raise UserError(
            f"unknown reference agent {policy!r} (expected one of {', '.join(POLICIES)})"
        )


def _module(family: str) -> Any:
    if family in ("nesttom", "hitom"):
        import nesttom

        return nesttom
    if family == "games":
        import games

        return games
    if family == "repeated":
        import games.repeated as repeated

        return repeated
    raise ValueError(f"no scorer for item family {family!r}")


def score(item: Item, answer: Any) -> Score:
    """Score ``answer`` to ``item`` with its family's pure scorer (None scores incorrect)."""
    if answer is None:
        return Score(
            correct=False, value=0.0, error_codes=("no_answer",), primary_error="no_answer"
        )
    result: Score = _module(item.family).score(item, answer)
    return result


def applies(item: Item, policy: str) -> bool:
    """Whether the reference agent ``policy`` means anything on ``item``'s family (``level:K``
    plays games; ``reality-leak`` and ``not-reality`` answer belief questions)."""
    kind = policy.split(":", 1)[0]
    if item.family in ("nesttom", "hitom"):
        return kind in ("oracle", "random", "depth-capped", "reality-leak", "not-reality")
    if item.family == "games":
        return kind in ("oracle", "random", "depth-capped", "level")
    return kind in ("oracle", "random")


def reference_answer(item: Item, policy: str, rng: np.random.Generator) -> Any:
    """The answer a scripted reasoner gives to ``item``."""
    return _module(item.family).reference_answer(item, policy, rng)
