"""The questions put to a predictor: its prediction of a target under a condition
(:func:`prediction_item`) and its second-order prediction of another predictor's
(:func:`second_order_item`). Pure: each is rebuilt from its base item and its arguments, and
its id is the hash of its content."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from matrix._base import FAMILY, PREDICTION, VERSION, describe_target
from matrix._conditions import SIMULATE, ZERO_SHOT, observed_count
from matrix._kinds import failure_prediction_item, is_failure
from mindledger.items import Item

__all__ = ["Observation", "prediction_item", "second_order_item"]

Observation = tuple[str, str, str]
"""(item id, question, the target's recorded answer): one past answer a predictor is shown."""


def prediction_item(
    item: Item,
    predictor: str,
    target: str,
    samples: int,
    condition: str = ZERO_SHOT,
    observed: Sequence[Observation] = (),
) -> Item:
    """The question put to ``predictor`` under ``condition``: a probability for each of
    ``item``'s choices that ``target`` gives it as its answer (for a failure item,
    :func:`matrix.failure_prediction_item`: that ``target`` answers the underlying question
    correctly). ``zero-shot`` is the plain question; ``simulate`` prefixes an explicit
    instruction to simulate the target; ``observe:m`` appends ``observed``, the target's
    recorded answers to other items of the run (at most m are shown; the item's params name
    them)."""
    base = _plain_prediction_item(item, predictor, target, samples)
    if condition == ZERO_SHOT:
        return base
    mine = predictor == target
    name = "your copy" if mine else target
    params: dict[str, Any] = {**base.params, "condition": condition}
    if condition == SIMULATE:
        prompt = (
            f"Simulate {describe_target(predictor, target)}: imagine that you are {name}, "
            f"receiving the question below in a new conversation, reason as {name} would, and "
            "report the distribution of the answers it gives, not what you would answer.\n\n"
            + base.prompt
        )
    else:
        m = observed_count(condition)
        assert m is not None  # check_conditions refused anything else
        shown = list(observed)[:m]
        params["observed"] = [[iid, answer] for iid, _, answer in shown]
        lines = [
            f"{i}. Question: {question}\n   Answer: {answer}"
            for i, (_, question, answer) in enumerate(shown, 1)
        ]
        prompt = base.prompt + (
            f"\n\nFor reference, here are the answers {name} gave to {len(shown)} other "
            "question(s), each in a new conversation:\n" + "\n".join(lines)
            if shown
            else f"\n\n(No past answers of {name} could be shown.)"
        )
    return replace(base, prompt=prompt, params=params, id="")


def _plain_prediction_item(item: Item, predictor: str, target: str, samples: int) -> Item:
    if is_failure(item):
        return failure_prediction_item(item, predictor, target)
    choices = [str(c) for c in item.answer["choices"]]
    who = describe_target(predictor, target)
    prompt = (
        f"Predict how {who} answers a question. It will be asked the question below "
        f"{samples} time{'s' if samples != 1 else ''}, each time in a new conversation, and must "
        f"answer with one of: {', '.join(choices)}.\n\n"
        f"--- the question ---\n{item.prompt}\n--- end of the question ---\n\n"
        "Do not answer the question yourself. Give, for each choice, the probability that "
        f"{'your copy' if predictor == target else target} answers it; the probabilities must "
        "sum to 1."
    )
    return Item(
        family=FAMILY,
        generator=PREDICTION,
        version=VERSION,
        seed=item.seed,
        params={"item": item.id, "predictor": predictor, "target": target, "samples": samples},
        prompt=prompt,
        answer={"kind": "distribution", "choices": choices},
        truth={},
        meta={"role": "prediction", "self": predictor == target},
    )


def second_order_item(item: Item, predictor: str, about: str, target: str, samples: int) -> Item:
    """The second-order question put to ``predictor`` P (seed 002 §15.2 protocol step 5,
    B9): the distribution that ``about`` Q (≠ P) gives when asked, zero-shot, its
    :func:`prediction_item` about ``target`` T. Its answer is a distribution over the choices
    of Q's question; its ground truth is Q's committed distribution."""
    first = prediction_item(item, about, target, samples)
    choices = [str(c) for c in first.answer["choices"]]
    who = describe_target(predictor, about)
    prompt = (
        f"Predict a prediction. {who[:1].upper() + who[1:]} is given the "
        "request below in a new conversation, and answers it with a probability for each of: "
        f"{', '.join(choices)}.\n\n"
        f"--- the request to {about} ---\n{first.prompt}\n--- end of the request ---\n\n"
        f"Do not answer the request yourself. Give, for each choice, the probability you expect "
        f"{about} to give it; your probabilities must sum to 1."
    )
    return Item(
        family=FAMILY,
        generator=PREDICTION,
        version=VERSION,
        seed=item.seed,
        params={
            "item": item.id,
            "predictor": predictor,
            "about": about,
            "target": target,
            "samples": samples,
            "order": 2,
        },
        prompt=prompt,
        answer={"kind": "distribution", "choices": choices},
        truth={},
        meta={"role": "second_order", "self": False},
    )
