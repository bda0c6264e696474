"""What every module of the prediction matrix shares, below them all: the family's name and
generators, the divergent (arbitrary-choice) item generator, the answer recorded for a reply with
no answer and how a prediction prompt names its target.

:mod:`harness.matrix_items` (the candidate kinds and the pilot), :mod:`harness.matrix_family`
(the registered family, which regenerates every kind) and :mod:`harness.matrix` (the run) all
depend on this module, and it on none of them, so none imports another in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix_unreadable import NO_ANSWER

__all__ = [
    "DIVERGENT",
    "FAMILY",
    "NO_ANSWER",
    "PREDICTION",
    "TEMPLATES",
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




def describe_target(predictor: str, target: str) -> str:
    """How the prediction prompt names the target."""
    if predictor == target:
        return (
            "a fresh copy of yourself (the same model with the same instructions, in a new "
            "conversation that knows nothing of this one)"
        )
    return f"another AI model called {target}"
