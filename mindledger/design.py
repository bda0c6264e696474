"""The :class:`DesignRecord`: what an item's design says about it, in one typed value.

Reports group and stratify trials by their items' design factors (a story's depth and belief,
a game's condition and target depth, the scenario that ties A, B and C questions together …).
Each family knows how its own items spell those factors, so each declares
:meth:`mindledger.family.Family.design`, which maps an item to this record; reports read the
record and never an item's ``meta`` keys.

A factor an item does not have keeps its default: ``""`` for text, ``nan`` for numbers,
``False`` for flags, ``None`` for :attr:`DesignRecord.abc_differ` and
:attr:`DesignRecord.truth_answer`, ``()`` for tags. An item of a family no one registered gets
:func:`common_design`: only what every item carries by the :class:`~mindledger.items.Item`
contract, so a statistic that needs a factor finds none and says so.

The helpers (:func:`text`, :func:`number`, :func:`answer_choices`) read raw JSON values the
same way for every family.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindledger.items import Item

__all__ = ["DesignRecord", "answer_choices", "common_design", "number", "text"]


@dataclass(frozen=True, slots=True)
class DesignRecord:
    """One item's design factors, as reports read them (defaults: the factor is absent)."""

    depth: str = ""
    """Depth label: NestToM's ``"R0"`` … ``"R5"``, ``"R2-self"``, ``"R3-loop"``; Hi-ToM's order
    as ``"R<n>"``."""
    depth_n: float = math.nan
    """The depth as a number (``R3-loop`` → 3)."""
    belief: str = ""
    """``"true"`` or ``"false"`` (lower case)."""
    question: str = ""
    """Question kind: ``"belief"``, ``"behaviour"``, ``"judgment"`` (stories); ``"A"``, ``"B"``,
    ``"C"``, ``"K"`` (A/B/C scenarios); ``""`` for a level-k trial."""
    story: str = ""
    """The story the question is about (questions on one story share it)."""
    length: float = math.nan
    """Story length in events."""
    game: str = ""
    """The game (level-k trials, A/B/C scenarios, repeated games)."""
    condition: str = ""
    """Level-k condition (``"recursive"``, ``"inductive"`` …; ``"abc"`` for scenarios)."""
    target_depth: float = math.nan
    """Level-k target depth K."""
    lam: float = math.nan
    """The inductive condition's λ."""
    group: str = ""
    """What ties the items about one scenario together (the A, B and C questions)."""
    n_choices: float = math.nan
    """How many answers the answer spec allows (chance is one in this)."""
    resolve_chance: float = math.nan
    """Level-k trials: the share of the action space a uniformly random action resolves to one
    depth of the IDR sequence (the chance rate of K_B and K_L resolving)."""
    excluded: bool = False
    """Left out of the family's accuracy (a level-k trial whose K_B would be ambiguous)."""
    truth_answer: Any = None
    """The correct answer as the truth states it (compared across a scenario's questions)."""
    abc_differ: bool | None = None
    """Whether the scenario's A, B and C truths differ (None: not a scenario, or not said)."""
    in_blocks: bool = False
    """The item belongs to one of the baseline tests (B1 depth curve, B2 length sweep, B4
    applied); reports infer the block when :attr:`block` is ``""``."""
    block: str = ""
    """The baseline test the item names (``"B1"``, ``"B2"``, ``"B4"``; ``""``: none named)."""
    block_name: str | None = None
    """The item's block as written, baseline test or not (``"quick"``, ``"B1"`` …)."""
    stream: str = ""
    """The generator stream that drew the item (``""``: one stream)."""
    selection: str = ""
    """Item selection: ``"adversarial"``, ``"control"``, ``"companion"`` (a shallower question
    asked on a story only for joint accuracy)."""
    mechanism: str = ""
    """How the belief went false (``"absence"``, ``"lie"`` …)."""
    form: str = ""
    """Surface form of the story (``"narrative"``, ``"log"`` …)."""
    reality_check: bool = False
    """The question asks where the object really is (R0)."""
    r2_self: bool = False
    """R2-self: "what does X think *you* believe?"."""
    ambiguous: tuple[str, ...] = ()
    """What the error coding cannot tell apart (e.g. ``"reality_leak=own_belief"``)."""
    counterfactual: str = ""
    """A repeated game's counterfactual setting (seed 003): ``"default"``, ``"label"``,
    ``"payoff"`` or ``"joint"`` (``""`` for a B6 episode, which is in none of these cells)."""
    opponent: str = ""
    """A repeated game's scripted opponent."""
    matched: str = ""
    """A repeated game's matched set: episodes that share it face the same opponent and the
    same draws and differ only in their counterfactual setting (``""``: none)."""
    b6: bool = False
    """A B6 episode (a switching bot, seed 002): reported on its own, outside the
    counterfactual cells."""


def text(v: Any) -> str:
    """A JSON value as text: None → ``""``, anything else ``str(v)``."""
    return "" if v is None else str(v)


def number(v: Any) -> float:
    """A JSON value as a number: numbers and numeric strings → float, anything else (booleans
    too) → nan."""
    if isinstance(v, bool):
        return math.nan
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def answer_choices(answer: Mapping[str, Any]) -> float:
    """How many answers an answer spec allows (nan when it does not say)."""
    kind = answer.get("kind")
    if kind in ("choice", "distribution") and isinstance(answer.get("choices"), list):
        return float(len(answer["choices"])) or math.nan
    if kind == "yesno":
        return 2.0
    if kind == "integer":
        try:
            return float(int(answer["max"]) - int(answer["min"]) + 1)
        except (KeyError, TypeError, ValueError):
            return math.nan
    return math.nan


def common_design(item: Item) -> DesignRecord:
    """What any item says by the :class:`~mindledger.items.Item` contract alone: the number of
    choices its answer spec allows and the truth's ``answer``. Reports use it for items of a
    family no one registered."""
    truth = item.truth if isinstance(item.truth, Mapping) else {}
    answer = item.answer if isinstance(item.answer, Mapping) else {}
    return DesignRecord(n_choices=answer_choices(answer), truth_answer=truth.get("answer"))
