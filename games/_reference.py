"""Reference agents for the games: scripted answers that the suite must diagnose correctly.

- ``oracle`` — the exact answer;
- ``random`` — uniform over the answer space (a uniformly random distribution for
  distribution answers);
- ``level:K`` — the scripted level-K bot: plays ``a(K)`` of the game's IDR sequence, whatever
  the opponent, so it is correct exactly at target depth K; for K ≥ 1 it also states the
  belief of a level-K player, that its opponent is level K−1 and plays ``a(K−1)``, with the
  chain ``a(0) … a(K−1)`` that leads there, so ``K_B = K_L = K`` and its action is a best
  response to its belief;
- ``believer:K`` — states the same level-K belief and chain as ``level:K`` but plays uniformly
  at random over the action space, so ``K_L = K`` while its best-response consistency is at
  chance (``believer:0`` states nothing: a level-0 player holds no belief);
- ``depth-capped:N`` — reasons correctly up to depth N, then stops: plays
  ``a(min(k_target, N))``.

A stated belief travels in the answer as the fields the scorer reads
(:func:`games._scoring.score_reply`): ``{"action", "final_belief_point", "chain"}``.

On A/B/C items (:mod:`games._strategic`) ``level:K`` and ``depth-capped:N`` play the action of
a level-K (resp. level-min(·, N)) scripted bot of that game; see
:func:`games._strategic.abc_reference`; ``believer:K`` plays as ``random`` there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from games._idr import idr_sequence
from games._scoring import spec_from_truth
from games._strategic import ABC_GENERATOR, abc_reference
from games._trials import GENERATOR as TRIAL_GENERATOR
from mindledger.errors import InputError
from mindledger.items import Item

__all__ = ["POLICIES", "parse_policy", "reference_answer"]

POLICIES: tuple[str, ...] = ("oracle", "random", "level:K", "depth-capped:N", "believer:K")


def parse_policy(policy: str) -> tuple[str, int | None]:
    """``"level:3"`` -> ``("level", 3)``; ``"oracle"`` -> ``("oracle", None)``."""
    name, _, arg = policy.partition(":")
    if name in ("oracle", "random") and not arg:
        return name, None
    if name in ("level", "depth-capped", "believer") and arg.isdigit():
        return name, int(arg)
    raise InputError(f"unknown reference policy {policy!r}; known: {', '.join(POLICIES)}",
                     where="policy")


def _level_action(item: Item, level: int) -> Any:
    idr = item.truth["idr"]
    if level < len(idr):
        return idr[level]
    return idr_sequence(spec_from_truth(item.truth), level)[level]


def _stated(item: Item, level: int, action: Any) -> Any:
    """``action`` with the belief and chain a level-``level`` player states (none at 0)."""
    if level < 1:
        return action
    chain = [_level_action(item, d) for d in range(level)]
    return {"action": action, "final_belief_point": chain[-1], "chain": chain}


def _random_action(item: Item, rng: np.random.Generator) -> Any:
    actions = item.truth["actions"]
    return actions[int(rng.integers(len(actions)))]


def reference_answer(item: Item, policy: str, rng: np.random.Generator) -> Any:
    """The answer reference agent ``policy`` gives to ``item`` (``rng`` for ``random`` and
    ``believer:K``)."""
    name, arg = parse_policy(policy)
    if item.generator != TRIAL_GENERATOR:
        if item.generator == ABC_GENERATOR:
            if name == "believer":
                name, arg = "random", None
            return abc_reference(item, name, arg, rng)
        raise InputError(f"not a games item: generator {item.generator!r}", where="item")
    if name == "oracle":
        return item.truth["target_action"]
    if name == "random":
        return _random_action(item, rng)
    assert arg is not None
    if name == "level":
        return _stated(item, arg, _level_action(item, arg))
    if name == "believer":
        return _stated(item, arg, _random_action(item, rng))
    return _level_action(item, min(int(item.truth["target_depth"]), arg))
