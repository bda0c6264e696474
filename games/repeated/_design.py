"""The designs: seeded batches of episode items — the cells of :func:`generate_episodes`,
the balanced matched sets of :func:`counterfactual_design` (issue 15), B6's switching bots
(:func:`b6_episodes`) and the agent-seat matched sets (:func:`agent_seat_design`) — and the
matched set an item belongs to (:func:`matched_set`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from games.repeated._common import (
    B6_OPPONENTS,
    B6_PRESET,
    COUNTERFACTUALS,
    DEFAULT_ROUNDS,
    GAMES,
    OPPONENTS,
    PAPER_OPPONENTS,
    _check_count,
)
from games.repeated._items import make_episode_item
from games.repeated._seats import SEATS
from mindledger.errors import InputError
from mindledger.items import Item


def _check_games(games: Sequence[str]) -> None:
    for g in games:
        if g not in GAMES:
            raise InputError(f"unknown game {g!r}; known: {', '.join(GAMES)}", where="games")


def _seed_for(seed: int, index: int) -> int:
    """A per-item seed derived from the batch seed and the item's position."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def generate_episodes(
    seed: int,
    n: int,
    *,
    games: Sequence[str] = GAMES,
    counterfactuals: Sequence[str] = COUNTERFACTUALS,
    opponents: Sequence[str] = PAPER_OPPONENTS,
    rounds: int | None = None,
) -> list[Item]:
    """``n`` episode items, deterministic by ``seed``.

    The design cells are game × counterfactual × opponent (an opponent joins the games it is
    defined for); items cover them in a seeded order, cycling when ``n`` exceeds their number,
    so a multiple of the cell count is balanced. ``rounds`` overrides the games' defaults (B6:
    ``generate_episodes(seed, **B6_PRESET)``).
    """
    _check_count(n, "n")
    _check_games(games)
    for c in counterfactuals:
        if c not in COUNTERFACTUALS:
            raise InputError(f"unknown counterfactual {c!r}; known: {', '.join(COUNTERFACTUALS)}",
                             where="counterfactuals")
    for o in opponents:
        if not any(o in OPPONENTS[g] for g in games):
            raise InputError(f"opponent {o!r} plays none of {', '.join(games)}",
                             where="opponents")
    cells = [(g, c, o) for g in games for c in counterfactuals for o in opponents
             if o in OPPONENTS[g]]
    if not cells:
        raise InputError("the design is empty (no games, counterfactuals or opponents)")
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x4E9D])).permutation(len(cells))
    items: list[Item] = []
    for i in range(n):
        g, c, o = cells[int(order[i % len(cells)])]
        params: dict[str, Any] = {"game": g, "counterfactual": c, "opponent": o,
                                  "rounds": rounds if rounds is not None else DEFAULT_ROUNDS[g]}
        items.append(make_episode_item(_seed_for(seed, i), params))
    return items


MATCHED_SET_KEYS = ("game", "opponent", "rounds")
"""The params that, with the item seed, make a matched set: episodes with the same seed and
these params face the same opponent and the same draws, whatever their counterfactual setting."""


def matched_set(item: Item) -> str:
    """The matched set of an episode item: ``"<game>/<opponent>/<rounds>/<seed>"``. Episodes of
    one set differ only in their counterfactual setting (:func:`counterfactual_design` plays
    each set in every setting)."""
    return "/".join([*(str(item.params.get(k, "")) for k in MATCHED_SET_KEYS), str(item.seed)])


def counterfactual_design(
    seed: int,
    episodes_per_cell: int,
    *,
    games: Sequence[str] = GAMES,
    opponents: Sequence[str] = PAPER_OPPONENTS,
) -> list[Item]:
    """Exactly ``episodes_per_cell`` episodes in every counterfactual cell (game × setting),
    deterministic by ``seed`` (see :mod:`games.repeated`, "The balanced design").

    For each game, matched set ``j`` (0 … ``episodes_per_cell`` − 1) is one opponent and one
    episode seed, played in all four settings; the sets cycle through ``opponents`` (those the
    game defines) in a seeded order. Items come set by set (game, then setting, within a set),
    so a run cut short still has the same number of episodes in every cell, give or take one.
    """
    _check_count(episodes_per_cell, "episodes_per_cell")
    _check_games(games)
    pools: dict[str, list[str]] = {}
    for gi, g in enumerate(games):
        pool = [o for o in opponents if o in OPPONENTS[g]]
        if not pool:
            raise InputError(f"none of the opponents plays {g}", where="opponents")
        order = np.random.default_rng(np.random.SeedSequence([seed, 0xCF0, gi])).permutation(
            len(pool))
        pools[g] = [pool[int(k)] for k in order]
    items: list[Item] = []
    for j in range(episodes_per_cell):
        for gi, g in enumerate(games):
            opponent = pools[g][j % len(pools[g])]
            set_seed = int(np.random.SeedSequence([seed, 0xCF1, gi, j]).generate_state(1)[0])
            for c in COUNTERFACTUALS:
                items.append(make_episode_item(set_seed, {
                    "game": g, "counterfactual": c, "opponent": opponent,
                    "rounds": DEFAULT_ROUNDS[g]}))
    return items


def b6_episodes(seed: int, sessions_per_bot: int = 5) -> list[Item]:
    """Seed 002's B6 apart from the counterfactual cells: each of the four switching bots
    (:data:`B6_OPPONENTS`) in ``sessions_per_bot`` sessions of 30-round RPS (default settings).
    The items are :func:`generate_episodes` with :data:`B6_PRESET`."""
    _check_count(sessions_per_bot, "sessions_per_bot")
    return generate_episodes(seed, **{**B6_PRESET, "n": sessions_per_bot * len(B6_OPPONENTS)})


def agent_seat_design(
    seed: int,
    sets_per_game: int,
    *,
    games: Sequence[str] = GAMES,
    seats: Sequence[str] = SEATS,
    counterfactuals: Sequence[str] = COUNTERFACTUALS,
    rounds: int | None = None,
) -> list[Item]:
    """Agent-seat episodes in matched sets, deterministic by ``seed``: for each game and seat,
    ``sets_per_game`` matched sets, each played in every setting of ``counterfactuals`` — so
    every (game, seat, setting) cell holds exactly ``sets_per_game`` episodes and the
    counterfactual gap is a paired difference within sets. ``rounds`` overrides the games'
    defaults. Items come set by set, so a run cut short stays balanced give or take one set."""
    _check_count(sets_per_game, "sets_per_game")
    for seat in seats:
        if seat not in SEATS:
            raise InputError(f"unknown seat {seat!r}; known: {', '.join(SEATS)}", where="seats")
    items: list[Item] = []
    for j in range(sets_per_game):
        for gi, g in enumerate(games):
            for si, seat in enumerate(SEATS):
                if seat not in seats:
                    continue
                set_seed = int(np.random.SeedSequence([seed, 0x5EA7, gi, si, j])
                               .generate_state(1)[0])
                for c in counterfactuals:
                    items.append(make_episode_item(set_seed, {
                        "game": g, "counterfactual": c, "opponent": f"agent:{seat}",
                        "rounds": rounds if rounds is not None else DEFAULT_ROUNDS[g]}))
    return items
