"""The NestToM and Hi-ToM item families (:class:`mindledger.family.Family`).

Both are belief questions scored by :func:`nesttom._scoring.score` and answered by the same
reference reasoners; NestToM items are regenerated from their seed, Hi-ToM items are imported and
have no generator to rerun.

Their design records (:meth:`BeliefFamily.design`) read the generator's meta: ``depth`` (a
label of :data:`~nesttom._generator.DEPTHS`, or Hi-ToM's order as ``"R<n>"``; a bare number is
read as ``R<n>``), ``depth_n`` (else the label's number, :func:`depth_number`), ``belief``,
``question`` (``"belief"`` when absent), ``story_id``, ``length``, ``selection``,
``mechanism``, ``form`` and ``ambiguous``; NestToM items also name their baseline test
(``block``, or the older ``suite_block`` and ``suite``), the generator stream that drew them
(``params["stream"]``), and flag R0 reality checks and R2-self questions (``reality_check`` and
``r2_self``, else read from the depth label).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindledger.design import DesignRecord, answer_choices, number, text
from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score
from nesttom._generator import DEPTH_N, GENERATOR, regenerate
from nesttom._hitom import HITOM_GENERATOR
from nesttom._scoring import reference_answer, score

__all__ = ["BLOCK_KEYS", "HITOM", "ITEM_FAMILIES", "NESTTOM", "BeliefFamily", "depth_number"]

BELIEF_POLICIES = ("oracle", "random", "depth-capped", "reality-leak", "not-reality", "noisy")
"""Reference policy kinds that answer belief questions."""

BLOCK_KEYS = ("block", "suite_block", "suite")
"""Meta keys, in order, that name a NestToM item's baseline test ("B1", "B2", "B4", ...)."""
_BASELINE_TEST = re.compile(r"^B\d+$", re.IGNORECASE)
_DEPTH_NUMBER = re.compile(r"^R(\d+)")


def depth_number(label: str) -> float:
    """The numeric depth of a label: ``R3-loop`` → 3; ``R7`` → 7; unknown → nan."""
    n = DEPTH_N.get(label)
    if n is not None:
        return float(n)
    m = _DEPTH_NUMBER.match(label)
    return float(m.group(1)) if m else math.nan


def _baseline_test(meta: Mapping[str, Any]) -> str:
    for key in BLOCK_KEYS:
        v = meta.get(key)
        if type(v) is str and _BASELINE_TEST.match(v.strip()):
            return v.strip().upper()
    return ""


@dataclass(frozen=True)
class BeliefFamily:
    """A family of belief questions about a story."""

    name: str
    title: str
    generators: tuple[str, ...]
    rebuildable: bool
    in_blocks: bool
    """Its items belong to the baseline tests and carry the NestToM generator's design (block,
    stream, R0 reality checks, R2-self)."""
    plays: PlayMode = "single"
    policies: tuple[str, ...] = BELIEF_POLICIES
    scaffold_modules: tuple[str, ...] = ("witness_log", "perspective")

    def score(self, item: Item, answer: Any) -> Score:
        return score(item, answer)

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        return reference_answer(item, policy, rng)

    def regenerate(self, item: Item) -> Item | None:
        return regenerate(item) if self.rebuildable else None

    def design(self, item: Item) -> DesignRecord:
        meta = item.meta
        depth = meta.get("depth")
        if isinstance(depth, int | float) and not isinstance(depth, bool):
            label = f"R{int(depth)}"
        else:
            label = text(depth)
        depth_n = number(meta.get("depth_n"))
        if math.isnan(depth_n):
            depth_n = depth_number(label)
        amb = meta.get("ambiguous")
        blocks = self.in_blocks
        block = meta.get("block")
        stream = item.params.get("stream") if blocks else None
        rc, rs = meta.get("reality_check"), meta.get("r2_self")
        return DesignRecord(
            depth=label,
            depth_n=depth_n,
            belief=text(meta.get("belief")).lower(),
            question=text(meta.get("question")) or "belief",
            story=text(meta.get("story_id")),
            length=number(meta.get("length")),
            n_choices=answer_choices(item.answer),
            truth_answer=item.truth.get("answer"),
            in_blocks=blocks,
            block=_baseline_test(meta) if blocks else "",
            block_name=block if blocks and type(block) is str else None,
            stream="" if stream is None else str(stream),
            selection=text(meta.get("selection")).lower(),
            mechanism=text(meta.get("mechanism")),
            form=text(meta.get("form")),
            reality_check=blocks and (rc is True if isinstance(rc, bool) else depth_n == 0),
            r2_self=blocks and (rs is True if isinstance(rs, bool) else label == "R2-self"),
            ambiguous=tuple(str(x) for x in amb) if isinstance(amb, list) else (),
        )


NESTTOM = BeliefFamily("nesttom", "NestToM nested-belief stories", (GENERATOR,), True, True)
HITOM = BeliefFamily("hitom", "Hi-ToM stories (imported)", (HITOM_GENERATOR,), False, False)

ITEM_FAMILIES: tuple[Family, ...] = (NESTTOM, HITOM)
