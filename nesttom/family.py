"""The NestToM and Hi-ToM item families (:class:`mindledger.family.Family`).

Both are belief questions scored by :func:`nesttom.scoring.score` and answered by the same
reference reasoners; NestToM items are regenerated from their seed, Hi-ToM items are imported and
have no generator to rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score
from nesttom.generator import GENERATOR, regenerate
from nesttom.hitom import HITOM_GENERATOR
from nesttom.scoring import reference_answer, score

__all__ = ["HITOM", "ITEM_FAMILIES", "NESTTOM", "BeliefFamily"]

BELIEF_POLICIES = ("oracle", "random", "depth-capped", "reality-leak", "not-reality")
"""Reference policy kinds that answer belief questions."""


@dataclass(frozen=True)
class BeliefFamily:
    """A family of belief questions about a story."""

    name: str
    title: str
    generators: tuple[str, ...]
    rebuildable: bool
    plays: PlayMode = "single"
    policies: tuple[str, ...] = BELIEF_POLICIES
    scaffold_modules: tuple[str, ...] = ("witness_log", "perspective")

    def score(self, item: Item, answer: Any) -> Score:
        return score(item, answer)

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        return reference_answer(item, policy, rng)

    def regenerate(self, item: Item) -> Item | None:
        return regenerate(item) if self.rebuildable else None


NESTTOM = BeliefFamily("nesttom", "NestToM nested-belief stories", (GENERATOR,), True)
HITOM = BeliefFamily("hitom", "Hi-ToM stories (imported)", (HITOM_GENERATOR,), False)

ITEM_FAMILIES: tuple[Family, ...] = (NESTTOM, HITOM)
