"""The item family of the prediction matrix (:class:`mindledger.family.Family`), one of the
built-in families (:data:`mindledger.family.BUILTIN`), as NestToM's and the games' are.

A matrix run stores two kinds of item of family ``matrix``: the questions put to every target
(the run's items: the divergent arbitrary-choice items of :func:`matrix.make_items` and every
candidate kind of :data:`matrix.KINDS`, preference, open, NestToM, game and failure items) and
the questions put to a predictor about a target (generators ``matrix.prediction`` and
``matrix.failure-prediction``, one per item, predictor, target and condition, stored with the
trials that answer them). None has a right answer: what an answer is worth is decided by the
matrix (the ledger scores a prediction against the target's samples), so
:meth:`MatrixFamily.score` only says so. Every run item regenerates from its kind's generator,
seed and params (``mindledger runs --verify``); a prediction item is rebuilt from its base
item, not from a seed, so it does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from matrix._base import FAMILY
from matrix._kinds import KINDS, regenerate
from mindledger.design import DesignRecord, answer_choices
from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score

__all__ = ["GENERATORS", "ITEM_FAMILIES", "MATRIX_FAMILY", "MatrixFamily"]

GENERATORS: tuple[str, ...] = tuple(kind.generator for kind in KINDS.values())
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
        return regenerate(item)

    def design(self, item: Item) -> DesignRecord:
        meta: Mapping[str, Any] = item.meta if isinstance(item.meta, Mapping) else {}
        role = "prediction" if meta.get("role") == "prediction" else "choice"
        return DesignRecord(
            question=role,
            group=str(meta.get("template", "")),
            n_choices=answer_choices(item.answer),
        )


MATRIX_FAMILY = MatrixFamily()
"""The matrix's item family."""

ITEM_FAMILIES: tuple[Family, ...] = (MATRIX_FAMILY,)
"""The families this module declares (:data:`mindledger.family.BUILTIN` loads them)."""
