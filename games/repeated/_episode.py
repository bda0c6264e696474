"""One repeated game against a scripted opponent (:class:`Episode`): stepping through it
round by round, checking a history against the script, and the exact dynamic programme over the
opponent's states (:class:`_Planner`) that gives the benchmark and the best responses."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from games.repeated._common import _NOISE_SPAN, MAX_ROUNDS, Round
from games.repeated._game import RepeatedGame, _rounds_text
from games.repeated._opponents import _Bot, _build_bot, _draw
from mindledger.errors import InputError


class _Planner:
    """Exact dynamic programming over (round, opponent state): the optimal policy against the
    opponent's script (not knowing its coin flips) and uniform random play."""

    def __init__(self, episode: Episode):
        self.bot = episode._bot
        self.u = episode.game.payoff
        self.n = episode.game.n
        self.rounds = episode.rounds
        self._q: dict[tuple[int, Hashable], tuple[Fraction, ...]] = {}
        self._rand: dict[tuple[int, Hashable], Fraction] = {}

    def q_values(self, t: int, s: Hashable) -> tuple[Fraction, ...]:
        """Expected payoff to the end of each action now, playing optimally afterwards."""
        key = (t, s)
        q = self._q.get(key)
        if q is None:
            d = self.bot.dist(s, t)
            q = tuple(
                sum((p * (self.u[a][b] + self.value(t + 1, self.bot.update(s, t, a, b)))
                     for b, p in enumerate(d) if p), Fraction(0))
                for a in range(self.n)
            )
            self._q[key] = q
        return q

    def value(self, t: int, s: Hashable) -> Fraction:
        if t >= self.rounds:
            return Fraction(0)
        return max(self.q_values(t, s))

    def best(self, t: int, s: Hashable) -> tuple[int, ...]:
        q = self.q_values(t, s)
        top = max(q)
        return tuple(a for a in range(self.n) if q[a] == top)

    def myopic(self, t: int, s: Hashable) -> tuple[int, ...]:
        d = self.bot.dist(s, t)
        ev = [sum((p * self.u[a][b] for b, p in enumerate(d)), Fraction(0)) for a in range(self.n)]
        top = max(ev)
        return tuple(a for a in range(self.n) if ev[a] == top)

    def random_value(self, t: int, s: Hashable) -> Fraction:
        if t >= self.rounds:
            return Fraction(0)
        key = (t, s)
        if key not in self._rand:
            d = self.bot.dist(s, t)
            self._rand[key] = sum(
                (p * (self.u[a][b] + self.random_value(t + 1, self.bot.update(s, t, a, b)))
                 for a in range(self.n) for b, p in enumerate(d) if p),
                Fraction(0),
            ) / self.n
        return self._rand[key]


@dataclass(frozen=True)
class Episode:
    """One repeated game against one scripted opponent, fully determined by its fields.

    Fields: ``game`` (the stage game in its counterfactual setting), ``opponent`` (the resolved
    opponent spec, roles as integers), ``opponent_name``, ``rounds``, ``noise`` (one integer in
    [0, 2³²) per round: the opponent's random draws). Build one with :func:`make_episode` or
    :func:`episode_from_item`; the harness steps through it with :meth:`round_prompt`,
    :meth:`opponent_move` and :meth:`payoffs`.
    """

    game: RepeatedGame
    opponent: Mapping[str, Any]
    opponent_name: str
    rounds: int
    noise: tuple[int, ...]
    _bot: _Bot = field(init=False, repr=False, compare=False)
    _planner: _Planner = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise InputError(f"rounds must be from 1 to {MAX_ROUNDS}", where="rounds")
        if len(self.noise) != self.rounds or not all(
            isinstance(r, int) and 0 <= r < _NOISE_SPAN for r in self.noise
        ):
            raise InputError("noise must hold one integer in [0, 2**32) per round",
                             where="noise")
        object.__setattr__(self, "_bot", _build_bot(self.opponent, self.game, self.rounds))
        object.__setattr__(self, "_planner", _Planner(self))

    @property
    def labels(self) -> tuple[str, ...]:
        return self.game.labels

    @property
    def answer_spec(self) -> dict[str, Any]:
        """The per-round answer spec: one of the action labels."""
        return {"kind": "choice", "choices": list(self.game.labels)}

    @property
    def switch_round(self) -> int | None:
        """The first round of a switching opponent's second regime (1-based), else None."""
        at = self.opponent.get("at") if self.opponent.get("kind") == "switch" else None
        return int(at) if at is not None else None

    def intro(self) -> str:
        """The rules, written from this setting's own labels and payoffs (the item's prompt)."""
        return self.game.rules_text(self.rounds)

    # -- stepping

    def _roles(self, history: Sequence[Round]) -> list[tuple[int | None, int]]:
        if not isinstance(history, Sequence) or isinstance(history, str):
            raise InputError("history must be a list of (agent move, opponent move) pairs",
                             where="history")
        if len(history) > self.rounds:
            raise InputError(f"history has {len(history)} rounds; the game has {self.rounds}",
                             where="history")
        out: list[tuple[int | None, int]] = []
        for i, rnd in enumerate(history):
            if not isinstance(rnd, Sequence) or isinstance(rnd, str) or len(rnd) != 2:
                raise InputError("a round is a pair (agent move, opponent move)",
                                 where=f"history[{i}]")
            a, b = rnd
            out.append((None if a is None else self.game.index(a, f"history[{i}][0]"),
                        self.game.index(b, f"history[{i}][1]")))
        return out

    def _states(self, roles: Sequence[tuple[int | None, int]]) -> list[Hashable]:
        """The opponent's state before each round and after the last; checks that every
        recorded opponent move is the one its script plays."""
        bot = self._bot
        s = bot.start()
        states = [s]
        for t, (a, b) in enumerate(roles):
            scripted = _draw(bot.dist(s, t), self.noise[t])
            if b != scripted:
                raise InputError(
                    f"the opponent plays {self.game.labels[scripted]!r} in round {t + 1}, not "
                    f"{self.game.labels[b]!r}", where=f"history[{t}][1]")
            s = bot.update(s, t, a, b)
            states.append(s)
        return states

    def opponent_move(self, history: Sequence[Round]) -> str:
        """The opponent's move in the next round, given the rounds played so far (deterministic:
        its random draws are the episode's ``noise``)."""
        roles = self._roles(history)
        t = len(roles)
        if t >= self.rounds:
            raise InputError("the game is over", where="history")
        s = self._states(roles)[-1]
        return self.game.labels[_draw(self._bot.dist(s, t), self.noise[t])]

    def payoffs(self, a: str | None, b: str) -> tuple[int, int]:
        """(agent, opponent) points of one round; ``a=None`` is an invalid move, scored as the
        agent's worst outcome."""
        return self.game.outcome(None if a is None else self.game.index(a, "a"),
                                 self.game.index(b, "b"))

    def round_prompt(self, history: Sequence[Round]) -> str:
        """What the agent reads before choosing in the next round: the rounds so far with their
        points, the totals, and the request."""
        return _rounds_text(self.game, self.rounds, self._roles(history))

    def best_responses(self, history: Sequence[Round]) -> tuple[str, ...]:
        """The optimal actions for the next round against the opponent's script (the
        benchmark policy's choices; ties all listed)."""
        roles = self._roles(history)
        if len(roles) >= self.rounds:
            raise InputError("the game is over", where="history")
        s = self._states(roles)[-1]
        return tuple(self.game.labels[a] for a in self._planner.best(len(roles), s))
