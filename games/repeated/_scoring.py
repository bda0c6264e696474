"""Scoring episodes: every figure of a scripted episode (:func:`score_episode`) and of an
agent-seat episode, both seats (:func:`score_seats`), seed 003's comprehension rule
(:func:`_earliest_stable_round`), and the family's :func:`score` of an answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from games.repeated._common import EFFICIENCY_SCALE, T_P, Round, _as_float, _check_count
from games.repeated._episode import Episode
from games.repeated._game import RepeatedGame, _seat_outcome
from games.repeated._items import episode_from_item
from games.repeated._opponents import _draw
from games.repeated._seats import (
    NO_SWITCH,
    SEAT_BENCHMARK,
    SeatEpisode,
    agent_seat,
    seat_episode_from_item,
)
from mindledger.errors import InputError
from mindledger.items import Item, Score


def _earliest_stable_round(flags: Sequence[bool], t_p: Fraction) -> int:
    """Seed 003's m over per-round flags: the earliest round (1-based) such that the flag holds
    in at least ``t_p`` of the rounds from it to the end; ``len(flags) + 1`` when none does."""
    total = len(flags)
    good = 0
    best = total + 1
    for m in range(total, 0, -1):  # suffixes from the shortest, keeping the earliest success
        good += bool(flags[m - 1])
        if good * t_p.denominator >= t_p.numerator * (total - m + 1):
            best = m
    return best


def score_episode(
    episode: Episode,
    history: Sequence[Round],
    tokens: int | None = None,
    *,
    t_p: Fraction = T_P,
) -> dict[str, Any]:
    """Score one complete episode (see :mod:`games.repeated`, "Scoring", for every field).

    ``history`` holds every round as (agent move or None, opponent move); the opponent's moves
    must be the ones its script plays. ``tokens`` is the episode's total token count (prompt
    and completion); without it ``efficiency`` is None.
    """
    roles = episode._roles(history)
    if len(roles) != episode.rounds:
        raise InputError(f"history has {len(roles)} rounds; the game has {episode.rounds}",
                         where="history")
    if tokens is not None:
        _check_count(tokens, "tokens")
    game, plan, bot = episode.game, episode._planner, episode._bot
    states = episode._states(roles)
    lab = game.labels

    per_round: list[dict[str, Any]] = []
    mine: list[int] = []
    theirs: list[int] = []
    not_lower: list[bool] = []
    consistent: list[bool] = []
    for t, (a, b) in enumerate(roles):
        pa, pb = game.outcome(a, b)
        best = plan.best(t, states[t])
        ok = a is not None and a in best
        mine.append(pa)
        theirs.append(pb)
        not_lower.append(pa >= pb)
        consistent.append(ok)
        per_round.append({
            "round": t + 1,
            "agent": None if a is None else lab[a],
            "opponent": lab[b],
            "agent_payoff": pa,
            "opponent_payoff": pb,
            "best_responses": [lab[x] for x in best],
            "best_response": ok,
            "invalid": a is None,
        })

    # the benchmark policy (lowest-role optimal action) on this episode's draws
    s = states[0]
    realized = 0
    for t in range(episode.rounds):
        a_star = plan.best(t, s)[0]
        b_star = _draw(bot.dist(s, t), episode.noise[t])
        realized += game.payoff[a_star][b_star]
        s = bot.update(s, t, a_star, b_star)

    total = sum(mine)
    bench = plan.value(0, states[0])
    rand = plan.random_value(0, states[0])
    exploitation = None if bench == rand else _as_float((total - rand) / (bench - rand))
    rounds = episode.rounds
    m = _earliest_stable_round(not_lower, t_p)
    m_br = _earliest_stable_round(consistent, t_p)

    at = episode.switch_round
    latency: int | None = None
    before = after = None
    if at is not None:
        r = _earliest_stable_round(consistent[at - 1:], t_p)
        latency = r - 1 if r <= rounds - at + 1 else None
        before, after = sum(mine[: at - 1]), sum(mine[at - 1:])

    valid = [a for a, _ in roles if a is not None]
    counts = [valid.count(i) for i in range(game.n)]
    invalid = [t + 1 for t, (a, _) in enumerate(roles) if a is None]
    out: dict[str, Any] = {
        "game": game.name,
        "counterfactual": game.counterfactual,
        "opponent": episode.opponent_name,
        "rounds": rounds,
        "moves": [None if a is None else lab[a] for a, _ in roles],
        "opponent_moves": [lab[b] for _, b in roles],
        "per_round": per_round,
        "payoffs": mine,
        "opponent_payoffs": theirs,
        "total": total,
        "opponent_total": sum(theirs),
        "benchmark": _as_float(bench),
        "benchmark_realized": realized,
        "random_expected": _as_float(rand),
        "exploitation": exploitation,
        "regret": realized - total,
        "t_p": float(t_p),
        "comprehension_round": m,
        "comprehended": m <= rounds,
        "best_response_round": m_br,
        "best_response_rate": sum(consistent) / rounds,
        "switch_round": at,
        "adaptation_latency": latency,
        "adapted": None if at is None else latency is not None,
        "total_before_switch": before,
        "total_after_switch": after,
        "tokens": tokens,
        "efficiency": (None if not tokens else total / tokens * EFFICIENCY_SCALE),
        "action_counts": dict(zip(lab, counts, strict=True)),
        "action_shares": {x: (c / len(valid) if valid else None)
                          for x, c in zip(lab, counts, strict=True)},
        "stage_equilibrium": {x: _as_float(q)
                              for x, q in zip(lab, game.stage_equilibrium(), strict=True)},
        "invalid_rounds": invalid,
        "invalid_rate": len(invalid) / rounds,
    }
    if game.name == "pd":
        out["cooperation_rate"] = counts[0] / rounds
    return out


def _seat_figures(game: RepeatedGame, mine: Sequence[int | None], theirs: Sequence[int | None],
                  tokens: int | None, t_p: Fraction) -> dict[str, Any]:
    """One seat's figures in an agent-seat episode (see :func:`score_seats`)."""
    rounds = len(mine)
    lab = game.labels
    pays = [_seat_outcome(game, a, b) for a, b in zip(mine, theirs, strict=True)]
    own = [p for p, _ in pays]
    # what each action would have scored, round by round, against the moves actually played
    per_action = [[_seat_outcome(game, x, b)[0] for b in theirs] for x in range(game.n)]
    bench = max(sum(col) for col in per_action)
    rand = Fraction(sum(sum(col) for col in per_action), game.n)
    total = sum(own)
    best_rows = [game.best_replies(b) if b is not None else tuple(range(game.n))
                 for b in theirs]
    consistent = [a is not None and a in best for a, best in zip(mine, best_rows, strict=True)]
    m = _earliest_stable_round([p >= q for p, q in pays], t_p)
    valid = [a for a in mine if a is not None]
    counts = [valid.count(i) for i in range(game.n)]
    invalid = [t + 1 for t, a in enumerate(mine) if a is None]
    out: dict[str, Any] = {
        "moves": [None if a is None else lab[a] for a in mine],
        "payoffs": own,
        "total": total,
        "benchmark": bench,
        "benchmark_kind": "hindsight",
        "random_expected": _as_float(rand),
        "exploitation": None if bench == rand else _as_float((total - rand) / (bench - rand)),
        "regret": bench - total,
        "comprehension_round": m,
        "comprehended": m <= rounds,
        "best_response_round": _earliest_stable_round(consistent, t_p),
        "best_response_rate": sum(consistent) / rounds,
        "tokens": tokens,
        "efficiency": (None if not tokens else total / tokens * EFFICIENCY_SCALE),
        "action_counts": dict(zip(lab, counts, strict=True)),
        "invalid_rounds": invalid,
        "invalid_rate": len(invalid) / rounds,
    }
    if game.name == "pd":
        out["cooperation_rate"] = counts[0] / rounds
    return out


def score_seats(
    episode: SeatEpisode,
    moves: Sequence[Any],
    opponent_moves: Sequence[Any],
    tokens: int | None = None,
    opponent_tokens: int | None = None,
    *,
    t_p: Fraction = T_P,
) -> dict[str, Any]:
    """Score an agent-seat episode from both seats' moves (a move that is not an action, or is
    missing, is invalid): the agent's figures at the top level, the opponent seat's under
    ``opponent_seat``.

    The figures of :func:`score_episode` where they carry over: payoffs and totals; the
    comprehension round *m* (the same rule, each seat against the other); ``benchmark`` is
    :data:`SEAT_BENCHMARK` — the best fixed action in hindsight, so ``exploitation`` = (total −
    E[random play]) ÷ (that benchmark − E[random play]) over the moves actually played (in the
    Prisoner's Dilemma always defecting is that action, and mutual cooperation scores −1) and
    ``regret`` its shortfall; ``best_response_round`` uses the stage game's best replies to the
    other seat's actual moves; ``efficiency`` each seat's points per 1,000 of its own tokens.
    ``adaptation_latency`` is None with ``not_estimable`` saying why (no scripted switch).
    """
    for name, tok in (("tokens", tokens), ("opponent_tokens", opponent_tokens)):
        if tok is not None:
            _check_count(tok, name)
    rounds = episode.rounds
    mine = [episode._role(moves[t] if t < len(moves) else None) for t in range(rounds)]
    theirs = [episode._role(opponent_moves[t] if t < len(opponent_moves) else None)
              for t in range(rounds)]
    game = episode.game
    lab = game.labels
    agent = _seat_figures(game, mine, theirs, tokens, t_p)
    other = _seat_figures(game, theirs, mine, opponent_tokens, t_p)
    per_round = [{
        "round": t + 1,
        "agent": agent["moves"][t],
        "opponent": other["moves"][t],
        "agent_payoff": agent["payoffs"][t],
        "opponent_payoff": other["payoffs"][t],
        "best_responses": ([lab[x] for x in game.best_replies(b)] if b is not None
                           else list(lab)),
        "invalid": a is None,
        "opponent_invalid": b is None,
    } for t, (a, b) in enumerate(zip(mine, theirs, strict=True))]
    out: dict[str, Any] = {
        "game": game.name,
        "counterfactual": game.counterfactual,
        "opponent": episode.opponent_name,
        "seat": episode.seat,
        "rounds": rounds,
        **{k: v for k, v in agent.items() if k != "moves"},
        "moves": agent["moves"],
        "opponent_moves": other["moves"],
        "per_round": per_round,
        "opponent_payoffs": other["payoffs"],
        "opponent_total": other["total"],
        "joint_total": agent["total"] + other["total"],
        "benchmark_definition": SEAT_BENCHMARK,
        "t_p": float(t_p),
        "switch_round": None,
        "adaptation_latency": None,
        "adapted": None,
        "not_estimable": {"adaptation_latency": NO_SWITCH},
        "action_shares": {x: (c / (rounds - len(agent["invalid_rounds"]))
                              if rounds > len(agent["invalid_rounds"]) else None)
                          for x, c in agent["action_counts"].items()},
        "stage_equilibrium": {x: _as_float(q)
                              for x, q in zip(lab, game.stage_equilibrium(), strict=True)},
        "opponent_seat": other,
    }
    if game.name == "pd":
        out["mutual_cooperation_rate"] = sum(a == 0 and b == 0 for a, b in zip(
            mine, theirs, strict=True)) / rounds
    return out


ERROR_CODES: tuple[str, ...] = ("invalid_moves", "no_comprehension", "not_best_response")
"""Error codes of an episode, in priority order."""


def _answer_moves(answer: Any) -> tuple[list[Any], int | None]:
    tokens: int | None = None
    if isinstance(answer, Mapping):
        raw = answer.get("tokens")
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            tokens = raw
        answer = answer.get("moves")
    if not isinstance(answer, Sequence) or isinstance(answer, str):
        return [], tokens
    return list(answer), tokens


def play_moves(episode: Episode, moves: Sequence[Any]) -> list[Round]:
    """Replay the agent's ``moves`` against the opponent: the full history. A move that is not
    one of the labels (or is missing) is an invalid move."""
    history: list[Round] = []
    for t in range(episode.rounds):
        raw = moves[t] if t < len(moves) else None
        move = raw if isinstance(raw, str) and raw in episode.labels else None
        history.append((move, episode.opponent_move(history)))
    return history


def score(item: Item, answer: Any) -> Score:
    """Score an episode answer (pure): ``{"moves": [...], "tokens": n}`` or a bare list of moves.

    ``correct``: the agent's move was a best response to the actual opponent (an optimal
    action of the benchmark policy) in at least t_p = 90% of the rounds — against an opponent
    that cannot be exploited every move is; ``value``: exploitation clipped to [0, 1] (when
    nothing beyond random play can be exploited, 1.0 if correct else 0.0); ``details``:
    :func:`score_episode`. Error codes, in order: ``invalid_moves``, ``no_comprehension`` (m
    beyond the game), ``not_best_response``.
    """
    if agent_seat(item) is not None:
        return _score_seat_answer(item, answer)
    ep = episode_from_item(item)
    moves, tokens = _answer_moves(answer)
    details = score_episode(ep, play_moves(ep, moves), tokens)
    details["answer_length"] = len(moves)
    hits = sum(bool(r["best_response"]) for r in details["per_round"])
    correct = hits * T_P.denominator >= T_P.numerator * ep.rounds
    ex = details["exploitation"]
    value = (1.0 if correct else 0.0) if ex is None else min(1.0, max(0.0, float(ex)))
    codes: list[str] = []
    if details["invalid_rounds"]:
        codes.append("invalid_moves")
    if not details["comprehended"]:
        codes.append("no_comprehension")
    if not correct:
        codes.append("not_best_response")
    return Score(correct=correct, value=value, error_codes=tuple(codes),
                 primary_error=codes[0] if codes else None, details=details)


def _score_seat_answer(item: Item, answer: Any) -> Score:
    """Score an agent-seat answer ``{"moves", "opponent_moves", "tokens", "opponent_tokens"}``
    (:func:`score_seats`). With no script there is no best response to hold the agent to:
    ``correct`` is seed 003's comprehension (m within the game) and ``value`` is 1.0 or 0.0
    accordingly. Error codes: ``invalid_moves``, ``no_comprehension``."""
    ep = seat_episode_from_item(item)
    moves, tokens = _answer_moves(answer)
    theirs: list[Any] = []
    opp_tokens: int | None = None
    if isinstance(answer, Mapping):
        raw = answer.get("opponent_moves")
        theirs = list(raw) if isinstance(raw, Sequence) and not isinstance(raw, str) else []
        t = answer.get("opponent_tokens")
        if isinstance(t, int) and not isinstance(t, bool) and t >= 0:
            opp_tokens = t
    details = score_seats(ep, moves, theirs, tokens, opp_tokens)
    details["answer_length"] = len(moves)
    if isinstance(answer, Mapping) and isinstance(answer.get("opponent_agent"), str):
        details["opponent_agent"] = answer["opponent_agent"]
    correct = bool(details["comprehended"])
    codes: list[str] = []
    if details["invalid_rounds"]:
        codes.append("invalid_moves")
    if not correct:
        codes.append("no_comprehension")
    return Score(correct=correct, value=1.0 if correct else 0.0, error_codes=tuple(codes),
                 primary_error=codes[0] if codes else None, details=details)
