"""A toy item family, defined the way any new family is: one module with a class satisfying
:class:`mindledger.family.Family`. Its items ask for the sum of two numbers and have an exact
truth; ``oracle`` answers it, ``random`` guesses in the answer range. Its design record says
the question is a ``"sum"`` and groups items by their larger term."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindledger.design import DesignRecord, answer_choices
from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score

NAME = "toy-sum"
GENERATOR = "toy.sum"
LARGEST = 20


def make_item(seed: int, params: Mapping[str, Any]) -> Item:
    rng = np.random.default_rng(seed)
    a, b = (int(x) for x in rng.integers(0, LARGEST // 2 + 1, size=2))
    return Item(
        family=NAME,
        generator=GENERATOR,
        version="1",
        seed=seed,
        params=dict(params),
        prompt=f"What is {a} + {b}? Answer with a number.",
        answer={"kind": "integer", "min": 0, "max": LARGEST},
        truth={"answer": a + b},
        meta={"terms": [a, b]},
    )


def generate(seed: int, n: int) -> list[Item]:
    return [make_item(seed * 1000 + i, {}) for i in range(n)]


@dataclass(frozen=True)
class ToySum:
    name: str = NAME
    title: str = "Toy sums (a test family)"
    plays: PlayMode = "single"
    generators: tuple[str, ...] = (GENERATOR,)
    policies: tuple[str, ...] = ("oracle", "random")
    scaffold_modules: tuple[str, ...] = ()

    def score(self, item: Item, answer: Any) -> Score:
        try:
            correct = int(answer) == item.truth["answer"]
        except (TypeError, ValueError):
            correct = False
        return Score(correct=correct, value=float(correct),
                     error_codes=() if correct else ("wrong_sum",),
                     primary_error=None if correct else "wrong_sum")

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        if policy == "oracle":
            return item.truth["answer"]
        return int(rng.integers(0, LARGEST + 1))

    def regenerate(self, item: Item) -> Item | None:
        return make_item(item.seed, item.params)

    def design(self, item: Item) -> DesignRecord:
        return DesignRecord(question="sum", group=f"max-{max(item.meta['terms'])}",
                            n_choices=answer_choices(item.answer),
                            truth_answer=item.truth["answer"])


TOY: Family = ToySum()
