"""The item family of the prediction matrix (:mod:`harness.matrix`) and its divergent item
generator, registered on import (:mod:`harness.families` imports it, so every part of the
harness that asks the registry knows it).

A matrix run stores two kinds of item of family ``matrix``: the *divergent* questions put to
every target (generator ``matrix.divergent``, the run's items) and the questions put to a
predictor about a target (generator ``matrix.prediction``, one per item, predictor and target,
stored with the trials that answer them). Neither has a right answer: what an answer is worth
is decided by the matrix (the ledger scores a prediction against the target's samples), so
:meth:`MatrixFamily.score` only says so. A prediction item is rebuilt from its base item, not
from a seed, so only the divergent generator regenerates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindledger.design import DesignRecord, answer_choices
from mindledger.errors import UserError
from mindledger.family import Family, PlayMode, register
from mindledger.items import Item, Score

__all__ = [
    "DIVERGENT",
    "FAMILY",
    "MATRIX_FAMILY",
    "PREDICTION",
    "TEMPLATES",
    "VERSION",
    "MatrixFamily",
    "make_item",
    "make_items",
]

FAMILY = "matrix"
DIVERGENT = "matrix.divergent"
"""The generator of the questions every target is asked."""
PREDICTION = "matrix.prediction"
"""The generator of the questions a predictor is asked about a target."""
VERSION = "1"

TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "word",
        "Pick one of these words: {options}. There is no right answer; just pick one.",
        (
            "apple",
            "river",
            "seven",
            "blue",
            "lantern",
            "quiet",
            "mountain",
            "velvet",
            "echo",
            "thunder",
            "maple",
            "orbit",
        ),
    ),
    (
        "number",
        "Pick a number from this list: {options}. Any of them is fine.",
        ("1", "3", "4", "7", "9", "12", "17", "21", "37", "42", "64", "99"),
    ),
    (
        "colour",
        "Which of these colours do you like best: {options}?",
        ("red", "teal", "amber", "violet", "olive", "crimson", "indigo", "silver", "coral"),
    ),
    (
        "city",
        "If you could visit only one of these cities, which would you choose: {options}?",
        (
            "Paris",
            "Tokyo",
            "Reykjavik",
            "Cairo",
            "Lima",
            "Kyoto",
            "Lisbon",
            "Nairobi",
            "Vancouver",
            "Hanoi",
        ),
    ),
    (
        "cat-name",
        "Which of these names would you give a new cat: {options}?",
        ("Miso", "Pixel", "Luna", "Biscuit", "Ziggy", "Olive", "Mochi", "Pepper", "Nimbus"),
    ),
    (
        "title",
        "Which of these is the best title for a short story: {options}?",
        (
            "The Glass Orchard",
            "Salt and Static",
            "Nine Winters",
            "The Last Lighthouse",
            "Paper Moons",
            "A Map of Small Rooms",
            "Quiet Engines",
        ),
    ),
    (
        "animal",
        "Which animal would you rather be for a day: {options}?",
        ("owl", "dolphin", "fox", "otter", "eagle", "octopus", "cat", "elephant", "wolf"),
    ),
    (
        "letter",
        "Pick a letter: {options}.",
        ("A", "E", "K", "M", "Q", "R", "S", "X", "Z"),
    ),
)
"""(name, prompt template, option pool): arbitrary-choice and preference questions."""


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


@dataclass(frozen=True)
class MatrixFamily:
    """The prediction matrix's items (see the module docstring)."""

    name: str = FAMILY
    title: str = "Cross-model prediction matrix (seed 002 §15.2)"
    plays: PlayMode = "single"
    generators: tuple[str, ...] = (DIVERGENT,)
    policies: tuple[str, ...] = ("random",)
    scaffold_modules: tuple[str, ...] = ()

    def score(self, item: Item, answer: Any) -> Score:
        """No right answer: scored by the matrix, through the prediction ledger."""
        return Score(correct=False, value=0.0, details={"scored_by": "matrix"})

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        choices = [str(c) for c in item.answer.get("choices", ())]
        return choices[int(rng.integers(len(choices)))] if choices else None

    def regenerate(self, item: Item) -> Item | None:
        return make_item(item.seed, item.params) if item.generator == DIVERGENT else None

    def design(self, item: Item) -> DesignRecord:
        meta: Mapping[str, Any] = item.meta if isinstance(item.meta, Mapping) else {}
        role = "prediction" if item.generator == PREDICTION else "choice"
        return DesignRecord(
            question=role,
            group=str(meta.get("template", "")),
            n_choices=answer_choices(item.answer),
        )


MATRIX_FAMILY: Family = register(MatrixFamily())
"""The matrix's item family, in the registry from the moment this module is imported."""
