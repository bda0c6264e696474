"""What every module of the matrix package shares, below them all: the family's name and
generators, the divergent (arbitrary-choice) item generator, the answer recorded for a reply with
no answer and how a prediction prompt names its target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from matrix._templates import TEMPLATES
from mindledger.errors import UserError
from mindledger.items import Item

__all__ = [
    "DIVERGENT",
    "FAMILY",
    "NO_ANSWER",
    "PREDICTION",
    "VERSION",
    "describe_target",
    "make_item",
    "make_items",
]

FAMILY = "matrix"
DIVERGENT = "matrix.divergent"
"""The generator of the questions every target is asked."""
PREDICTION = "matrix.prediction"
"""The generator of the questions a predictor is asked about a target."""
VERSION = "1"
"""Version of the matrix's generators (``matrix.divergent``, ``matrix.preference``, …)."""

NO_ANSWER = "(no answer)"
"""The answer recorded for a target reply with no readable answer (it *is* what the target did;
:mod:`reports.matrix_unreadable` says when there are too many of them to measure anything)."""


def make_item(seed: int, params: Mapping[str, Any]) -> Item:
    """The divergent item number ``params["index"]`` of ``seed`` (3–5 options from one
    template's pool, in a seeded order). Pure: the same arguments give the same item."""
    index = int(params["index"])
    rng = np.random.default_rng([seed, index])
    name, template, pool = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
    k = int(rng.integers(3, 6))
    options = [str(o) for o in rng.choice(np.array(pool, dtype=object), size=k, replace=False)]
    return Item(
        family=FAMILY,
        generator=DIVERGENT,
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=template.format(options=", ".join(options)),
        answer={"kind": "choice", "choices": options},
        truth={},
        meta={"template": name, "options": len(options)},
    )


def make_items(seed: int, n: int) -> list[Item]:
    """``n`` distinct divergent items from ``seed`` (indexes 0, 1, …, skipping duplicates)."""
    if n < 1:
        raise UserError("the matrix needs at least one item")
    items: list[Item] = []
    seen: set[str] = set()
    index = 0
    while len(items) < n:
        item = make_item(seed, {"index": index})
        index += 1
        if item.id not in seen:
            seen.add(item.id)
            items.append(item)
    return items


def describe_target(predictor: str, target: str) -> str:
    """How the prediction prompt names the target."""
    if predictor == target:
        return (
            "a fresh copy of yourself (the same model with the same instructions, in a new "
            "conversation that knows nothing of this one)"
        )
    return f"another AI model called {target}"
