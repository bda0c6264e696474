"""Repeated-game items and scores are pinned: the ground truth of a stored run must not move.

The digest covers the canonical JSON of items from each design (ids included), the reference
agents' answers and their scores. A change to generation or scoring shows here first; if the
change is intended, it needs a new generator ``VERSION``, not just a new digest."""

from __future__ import annotations

import hashlib

import numpy as np

from games.repeated import (
    REFERENCE_POLICIES,
    agent_seat,
    agent_seat_design,
    b6_episodes,
    counterfactual_design,
    generate_episodes,
    reference_answer,
    score,
)
from mindledger.canonical import canonical_json

PINNED = "sha256:4e8afc6643f19b5bf3ceefc542778b7fd9d0c69f5a1ff9f089437c070b5929e1"


def _record() -> list[object]:
    items = (
        generate_episodes(3, 10, rounds=6)
        + counterfactual_design(5, 1)
        + b6_episodes(2, 1)
        + agent_seat_design(4, 1, rounds=5)
    )
    out: list[object] = []
    for k, item in enumerate(items):
        out.append(item.to_dict())
        policies = ("random",) if agent_seat(item) is not None else REFERENCE_POLICIES
        for p, policy in enumerate(policies):
            answer = reference_answer(item, policy, np.random.default_rng([k, p]))
            out.append(answer)
            out.append(score(item, {**answer, "tokens": 100 + k}).to_dict())
    return out


def test_items_and_scores_are_pinned() -> None:
    digest = "sha256:" + hashlib.sha256(canonical_json(_record())).hexdigest()
    assert digest == PINNED
