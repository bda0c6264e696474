"""The matrix's reference agents (scripted, no model): which take part, and the *habit* their
answers are drawn from, known exactly so that the truth of every figure is known too (the
agents themselves, which answer and predict, are :mod:`harness.matrix.runs`'s)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mindledger.canonical import content_hash
from mindledger.items import Item

__all__ = ["HABIT_OWN", "HABIT_SHARED", "MATRIX_POLICIES", "habit", "reference_distribution"]

MATRIX_POLICIES = ("random", "habit", "clairvoyant", "projection")
"""The reference agents of the prediction matrix; ``habit``, ``clairvoyant`` and
``projection`` mean nothing to an item family (they never apply)."""

HABIT_SHARED = 3.0
"""Weight of the taste every habit shares on an item (makes the population baseline informative)."""
HABIT_OWN = 6.0
"""Weight of an agent's own taste on an item (makes its habit peaked: a high test-retest ceiling)."""


def _normal(*key: Any, size: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    digest = int(content_hash(["matrix.habit", *key])[7:23], 16)
    return np.random.default_rng(digest).standard_normal(size)


def habit(item: Item, name: str) -> dict[str, float]:
    """The habit of the reference agent ``name`` on ``item``: softmax over the choices of
    ``HABIT_SHARED·z(item) + HABIT_OWN·w(item, name)``, z and w standard normals derived from
    the item id (and the name). Pure: the same arguments give the same distribution."""
    choices = [str(c) for c in item.answer["choices"]]
    logits = HABIT_SHARED * _normal(item.id, size=len(choices)) + HABIT_OWN * _normal(
        item.id, name, size=len(choices)
    )
    w = np.exp(logits - logits.max())
    w /= w.sum()
    return {c: float(p) for c, p in zip(choices, w, strict=True)}


def reference_distribution(policy: str, name: str, item: Item) -> dict[str, float]:
    """The distribution the answers of the reference agent ``name`` (of ``policy``) to
    ``item`` are drawn from: uniform for ``random``, else its habit."""
    if policy == "random":
        choices = [str(c) for c in item.answer["choices"]]
        return {c: 1.0 / len(choices) for c in choices}
    return habit(item, name)
