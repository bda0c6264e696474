"""Reference agents on repeated games (``oracle``, ``myopic``, ``random``; no model):
their moves, whole played episodes and answers in the form :func:`score` takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from games.repeated._common import REFERENCE_POLICIES, Round
from games.repeated._episode import Episode
from games.repeated._items import episode_from_item
from games.repeated._seats import agent_seat, seat_episode_from_item
from mindledger.errors import InputError
from mindledger.items import Item


def reference_move(episode: Episode, policy: str, history: Sequence[Round],
                   rng: np.random.Generator) -> str:
    """The next move of reference agent ``policy``:

    - ``oracle``: the best response to the actual opponent given its script — the benchmark
      policy's action (lowest role among ties); against an opponent that ignores the agent this
      is the best reply to its next-move distribution;
    - ``myopic``: the best reply to the opponent's next-move distribution only, ignoring how it
      reacts later (differs from ``oracle`` against ``tit-for-tat`` and ``grim``);
    - ``random``: uniform, drawn from ``rng``.
    """
    if policy not in REFERENCE_POLICIES:
        raise InputError(f"reference policy {policy!r} does not play repeated games; known: "
                         f"{', '.join(REFERENCE_POLICIES)}", where="policy")
    roles = episode._roles(history)
    t = len(roles)
    if t >= episode.rounds:
        raise InputError("the game is over", where="history")
    if policy == "random":
        return episode.labels[int(rng.integers(episode.game.n))]
    s = episode._states(roles)[-1]
    plan = episode._planner
    best = plan.best(t, s) if policy == "oracle" else plan.myopic(t, s)
    return episode.labels[best[0]]


def play_reference(episode: Episode, policy: str, rng: np.random.Generator) -> list[Round]:
    """A whole episode played by reference agent ``policy``."""
    history: list[Round] = []
    for _ in range(episode.rounds):
        move = reference_move(episode, policy, history, rng)
        history.append((move, episode.opponent_move(history)))
    return history


def reference_answer(item: Item, policy: str, rng: np.random.Generator) -> dict[str, Any]:
    """The answer of reference agent ``policy`` to an episode item: ``{"moves", "tokens": 0}``
    (the form :func:`score` takes). On an agent-seat item only ``random`` plays (both seats:
    the reference and its second instance draw from ``rng`` in turn, round by round); the
    others best-respond to a script, and there is none."""
    if agent_seat(item) is not None:
        if policy != "random":
            raise InputError(f"reference policy {policy!r} needs a scripted opponent; an "
                             "agent-seat episode has none (only 'random' plays it)",
                             where="policy")
        ep = seat_episode_from_item(item)
        draws = rng.integers(ep.game.n, size=(ep.rounds, 2))
        return {"moves": [ep.labels[int(a)] for a, _ in draws],
                "opponent_moves": [ep.labels[int(b)] for _, b in draws],
                "tokens": 0, "opponent_tokens": 0}
    history = play_reference(episode_from_item(item), policy, rng)
    return {"moves": [a for a, _ in history], "tokens": 0}
