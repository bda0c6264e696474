"""The item family of the prediction matrix (:mod:`harness.matrix`), registered on import
(:mod:`harness.families` imports it, so every part of the harness that asks the registry knows
it).

A matrix run stores two kinds of item of family ``matrix``: the questions put to every target
(the run's items: the divergent arbitrary-choice items of :mod:`harness.matrix_base` and every
candidate kind of :mod:`harness.matrix_items`, preference, open, NestToM, game and failure
items) and the questions put to a predictor about a target (generators ``matrix.prediction``
and ``matrix.failure-prediction``, one per item, predictor, target and condition, stored with
the trials that answer them). None has a right answer: what an answer is worth is decided by
the matrix (the ledger scores a prediction against the target's samples), so
:meth:`MatrixFamily.score` only says so. Every run item regenerates from its kind's generator,
seed and params (``mindledger runs --verify``); a prediction item is rebuilt from its base
item, not from a seed, so it does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import matrix_items
from harness.matrix_base import (
    DIVERGENT,
    FAMILY,
    PREDICTION,
    TEMPLATES,
    VERSION,
    make_item,
    make_items,
)
from mindledger.design import DesignRecord, answer_choices
from mindledger.family import Family, PlayMode, register
from mindledger.items import Item, Score

__all__ = [
    "DIVERGENT",
    "FAMILY",
    "GENERATORS",
    "MATRIX_FAMILY",
    "PREDICTION",
    "TEMPLATES",
    "VERSION",
    "MatrixFamily",
    "make_item",
    "make_items",
]

GENERATORS: tuple[str, ...] = tuple(kind.generator for kind in matrix_items.KINDS.values())
"""Every generator of a matrix run's items (the divergent one first), each regenerable."""


@dataclass(frozen=True)
class MatrixFamily:
    """The prediction matrix's items (see the module docstring)."""

    name: str = FAMILY
    title: str = "Cross-model prediction matrix (seed 002 §15.2)"
    plays: PlayMode = "single"
    generators: tuple[str, ...] = GENERATORS
    policies: tuple[str, ...] = ("random",)
    scaffold_modules: tuple[str, ...] = ()

    def score(self, item: Item, answer: Any) -> Score:
        """No right answer: scored by the matrix, through the prediction ledger."""
        return Score(correct=False, value=0.0, details={"scored_by": "matrix"})

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        choices = [str(c) for c in item.answer.get("choices", ())]
        return choices[int(rng.integers(len(choices)))] if choices else None

    def regenerate(self, item: Item) -> Item | None:
        """A run item rebuilt by its kind's generator; None for a prediction item."""
        if item.generator not in GENERATORS:
            return None
        return matrix_items.regenerate(item)

    def design(self, item: Item) -> DesignRecord:
        meta: Mapping[str, Any] = item.meta if isinstance(item.meta, Mapping) else {}
        role = "prediction" if meta.get("role") == "prediction" else "choice"
        return DesignRecord(
            question=role,
            group=str(meta.get("template", "")),
            n_choices=answer_choices(item.answer),
        )


MATRIX_FAMILY: Family = register(MatrixFamily())
"""The matrix's item family, in the registry from the moment this module is imported."""
