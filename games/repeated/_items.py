"""Episode items: a seed and params in, a content-addressed :class:`~mindledger.items.Item`
out (:func:`make_episode_item`, scripted or agent-seat), the episode itself
(:func:`make_episode`), and the episode rebuilt from an item's truth alone
(:func:`episode_from_item`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from games.repeated._common import (
    _NOISE_SPAN,
    COUNTERFACTUALS,
    DEFAULT_ROUNDS,
    FAMILY,
    GAMES,
    GENERATOR,
    MAX_ROUNDS,
    OPPONENTS,
    VERSION,
    _as_float,
)
from games.repeated._episode import Episode
from games.repeated._game import RepeatedGame, repeated_game
from games.repeated._opponents import _opponent_spec
from games.repeated._seats import AGENT_OPPONENTS, SeatEpisode, agent_seat
from mindledger.errors import InputError
from mindledger.items import Item


def _clean_params(params: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        raise InputError("params must be a mapping", where="params")
    game = params.get("game")
    if game not in GAMES:
        raise InputError(f"unknown game {game!r}; known: {', '.join(GAMES)}", where="game")
    cf = params.get("counterfactual", "default")
    if cf not in COUNTERFACTUALS:
        raise InputError(f"unknown counterfactual {cf!r}; known: {', '.join(COUNTERFACTUALS)}",
                         where="counterfactual")
    opp = params.get("opponent")
    if opp not in OPPONENTS[game] and opp not in AGENT_OPPONENTS:
        raise InputError(f"unknown opponent {opp!r} for {game}; known: "
                         f"{', '.join([*OPPONENTS[game], *AGENT_OPPONENTS])}", where="opponent")
    rounds = params.get("rounds", DEFAULT_ROUNDS[game])
    if rounds is None:
        rounds = DEFAULT_ROUNDS[game]
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise InputError(f"rounds must be an integer from 1 to {MAX_ROUNDS}", where="rounds")
    return {"game": game, "counterfactual": cf, "opponent": opp, "rounds": rounds}


def make_episode(seed: int, params: Mapping[str, Any]) -> Episode:
    """The episode of ``(seed, params)``, deterministic.

    ``params``: ``game`` (``pd`` | ``rps``), ``counterfactual`` (``default`` | ``label`` |
    ``payoff`` | ``joint``; default ``default``), ``opponent`` (a name from
    :data:`OPPONENTS`), ``rounds`` (default 16 for PD, 24 for RPS). The opponent's parameters
    (a biased bot's favourite, a switch round …) and then its per-round draws come from
    ``numpy.random.default_rng(seed)``.
    """
    clean = _clean_params(params)
    game = repeated_game(clean["game"], clean["counterfactual"])
    rng = np.random.default_rng(seed)
    spec = _opponent_spec(clean["opponent"], game, clean["rounds"], rng)
    noise = tuple(int(r) for r in rng.integers(0, _NOISE_SPAN, size=clean["rounds"]))
    return Episode(game, spec, clean["opponent"], clean["rounds"], noise)


def make_episode_item(seed: int, params: Mapping[str, Any]) -> Item:
    """The item of ``(seed, params)`` (family ``"repeated"``); see :func:`make_episode`.

    ``prompt`` is the rules text; ``answer`` the per-round spec ``{"kind": "choice",
    "choices": [labels]}``; ``truth`` everything needed to rebuild the episode (labels, payoff
    matrix, rounds, the resolved opponent spec and its draws) plus the benchmark figures;
    ``meta`` game, counterfactual, opponent, rounds (and the switch round).
    """
    clean = _clean_params(params)
    if clean["opponent"] in AGENT_OPPONENTS:
        return _seat_item(seed, clean)
    ep = make_episode(seed, clean)
    s0 = ep._bot.start()
    truth: dict[str, Any] = {
        "game": ep.game.name,
        "counterfactual": ep.game.counterfactual,
        "labels": list(ep.game.labels),
        "payoff": [list(row) for row in ep.game.payoff],
        "rounds": ep.rounds,
        "opponent": dict(ep.opponent),
        "opponent_name": ep.opponent_name,
        "noise": list(ep.noise),
        "benchmark": _as_float(ep._planner.value(0, s0)),
        "random_expected": _as_float(ep._planner.random_value(0, s0)),
        "stage_equilibrium": [_as_float(q) for q in ep.game.stage_equilibrium()],
    }
    meta: dict[str, Any] = {
        "game": clean["game"],
        "counterfactual": clean["counterfactual"],
        "opponent": clean["opponent"],
        "rounds": clean["rounds"],
    }
    if ep.switch_round is not None:
        meta["switch_round"] = ep.switch_round
    return Item(
        family=FAMILY,
        generator=GENERATOR,
        version=VERSION,
        seed=seed,
        params=clean,
        prompt=ep.intro(),
        answer=ep.answer_spec,
        truth=truth,
        meta=meta,
    )


def _seat_item(seed: int, clean: Mapping[str, Any]) -> Item:
    """An agent-seat item: the rules, and a truth with no script, draws or benchmark (both
    seats are agents); ``seed`` only names its matched set."""
    seat = AGENT_OPPONENTS[clean["opponent"]]
    ep = SeatEpisode(repeated_game(clean["game"], clean["counterfactual"]), seat,
                     clean["rounds"])
    truth: dict[str, Any] = {
        "game": ep.game.name,
        "counterfactual": ep.game.counterfactual,
        "labels": list(ep.game.labels),
        "payoff": [list(row) for row in ep.game.payoff],
        "rounds": ep.rounds,
        "opponent": {"kind": "agent", "seat": seat},
        "opponent_name": clean["opponent"],
        "stage_equilibrium": [_as_float(q) for q in ep.game.stage_equilibrium()],
    }
    meta = {"game": clean["game"], "counterfactual": clean["counterfactual"],
            "opponent": clean["opponent"], "seat": seat, "rounds": clean["rounds"]}
    return Item(family=FAMILY, generator=GENERATOR, version=VERSION, seed=seed, params=dict(clean),
                prompt=ep.intro(), answer=ep.answer_spec, truth=truth, meta=meta)


def episode_from_item(item: Item) -> Episode:
    """Rebuild an item's episode from its truth alone."""
    if item.family != FAMILY:
        raise InputError(f"not a repeated-game item (family {item.family!r})", where="item")
    if agent_seat(item) is not None:
        raise InputError("an agent-seat episode has no scripted opponent "
                         "(seat_episode_from_item rebuilds it)", where="item")
    t = item.truth
    try:
        game = RepeatedGame(str(t["game"]), str(t["counterfactual"]),
                            tuple(str(x) for x in t["labels"]),
                            tuple(tuple(int(v) for v in row) for row in t["payoff"]))
        return Episode(game, dict(t["opponent"]), str(t["opponent_name"]), int(t["rounds"]),
                       tuple(int(r) for r in t["noise"]))
    except KeyError as exc:
        raise InputError(f"item truth lacks {exc.args[0]!r}", where="truth") from None
