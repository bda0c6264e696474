"""The scripted opponents: finite-state machines (:class:`_Bot` and its kinds), built
from an opponent spec (:func:`_build_bot`) or resolved from an opponent's name with its
parameters drawn from a seed (:func:`_opponent_spec`), and the exact move of a distribution for
one pre-drawn integer (:func:`_draw`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any, cast

import numpy as np

from games.repeated._common import _NOISE_SPAN
from games.repeated._game import RepeatedGame
from mindledger.errors import InputError

Dist = tuple[Fraction, ...]


def _point(n: int, i: int) -> Dist:
    return tuple(Fraction(int(k == i)) for k in range(n))


def _uniform(n: int) -> Dist:
    return (Fraction(1, n),) * n


class _Bot(ABC):
    """A scripted opponent as a finite-state machine: ``dist(state, t)`` is its move
    distribution in round ``t`` (0-based), ``update`` its state after a round."""

    def __init__(self, game: RepeatedGame):
        self.game = game
        self.n = game.n

    def start(self) -> Hashable:
        return None

    @abstractmethod
    def dist(self, state: Any, t: int) -> Dist:
        """The bot's move distribution in round ``t`` from ``state``."""

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        return cast(Hashable, state)

    def reply(self, a: int) -> int:
        """The opponent's best reply to the agent's role ``a`` (first in role order on ties)."""
        n, u = self.n, self.game.payoff
        return max(range(n), key=lambda b: (u[b][a], -b))


class _Mixed(_Bot):
    def __init__(self, game: RepeatedGame, weights: Sequence[int]):
        super().__init__(game)
        total = sum(weights)
        self.d = tuple(Fraction(w, total) for w in weights)

    def dist(self, state: Any, t: int) -> Dist:
        return self.d


class _Pattern(_Bot):
    def __init__(self, game: RepeatedGame, sequence: Sequence[int]):
        super().__init__(game)
        self.seq = tuple(sequence)

    def dist(self, state: Any, t: int) -> Dist:
        return _point(self.n, self.seq[t % len(self.seq)])


class _TitForTat(_Bot):
    def start(self) -> Hashable:
        return 0

    def dist(self, state: Any, t: int) -> Dist:
        return _point(self.n, state)

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        return state if a is None else a


class _Grim(_Bot):
    def start(self) -> Hashable:
        return False

    def dist(self, state: Any, t: int) -> Dist:
        return _point(self.n, 1 if state else 0)

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        return bool(state or a == 1)


class _CounterLast(_Bot):
    def dist(self, state: Any, t: int) -> Dist:
        return _uniform(self.n) if state is None else _point(self.n, self.reply(state))

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        return state if a is None else a


class _CounterFrequent(_Bot):
    def start(self) -> Hashable:
        return (0,) * self.n

    def dist(self, state: Any, t: int) -> Dist:
        if not any(state):
            return _uniform(self.n)
        top = max(state)
        return _point(self.n, self.reply(state.index(top)))

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        if a is None:
            return cast(Hashable, state)
        return tuple(c + int(i == a) for i, c in enumerate(state))


class _WinStayLoseShift(_Bot):
    def __init__(self, game: RepeatedGame, shift: int):
        super().__init__(game)
        self.shift = shift

    def dist(self, state: Any, t: int) -> Dist:
        return _uniform(self.n) if state is None else _point(self.n, state)

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        mine, theirs = self.game.outcome(a, b)
        return b if theirs > mine else (b + self.shift) % self.n


class _Switch(_Bot):
    def __init__(self, game: RepeatedGame, first: _Bot, then: _Bot, at: int):
        super().__init__(game)
        self.first, self.then, self.k = first, then, at - 1

    def start(self) -> Hashable:
        return (0, self.first.start())

    def dist(self, state: Any, t: int) -> Dist:
        phase, s = state
        return self.first.dist(s, t) if phase == 0 else self.then.dist(s, t - self.k)

    def update(self, state: Any, t: int, a: int | None, b: int) -> Hashable:
        phase, s = state
        if phase == 0:
            if t + 1 >= self.k:
                return (1, self.then.start())
            return (0, self.first.update(s, t, a, b))
        return (1, self.then.update(s, t - self.k, a, b))


def _role_list(value: Any, where: str, *, nonempty: bool = True) -> list[int]:
    if (not isinstance(value, list | tuple) or (nonempty and not value)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise InputError("expected a list of integers", where=where)
    return [int(v) for v in value]


def _build_bot(spec: Any, game: RepeatedGame, rounds: int, where: str = "opponent") -> _Bot:
    """The state machine of an opponent spec (see :func:`make_episode`); InputError names the
    offending field."""
    if not isinstance(spec, Mapping):
        raise InputError("an opponent spec is a mapping with a 'kind'", where=where)
    kind, n = spec.get("kind"), game.n
    if kind == "mixed":
        w = _role_list(spec.get("weights"), f"{where}.weights")
        if len(w) != n or any(x < 0 for x in w) or sum(w) <= 0:
            raise InputError(f"weights must be {n} non-negative integers, not all 0",
                             where=f"{where}.weights")
        return _Mixed(game, w)
    if kind == "pattern":
        seq = _role_list(spec.get("sequence"), f"{where}.sequence")
        if any(not 0 <= x < n for x in seq):
            raise InputError(f"moves are roles 0…{n - 1}", where=f"{where}.sequence")
        return _Pattern(game, seq)
    if kind in ("tit-for-tat", "grim"):
        if game.name != "pd":
            raise InputError(f"{kind} is a Prisoner's Dilemma opponent", where=f"{where}.kind")
        return _TitForTat(game) if kind == "tit-for-tat" else _Grim(game)
    if kind == "counter-last":
        return _CounterLast(game)
    if kind == "counter-frequent":
        return _CounterFrequent(game)
    if kind == "wsls":
        shift = spec.get("shift")
        if shift not in (1, -1) or isinstance(shift, bool):
            raise InputError("shift must be 1 or -1", where=f"{where}.shift")
        return _WinStayLoseShift(game, int(shift))
    if kind == "switch":
        at = spec.get("at")
        if isinstance(at, bool) or not isinstance(at, int) or not 2 <= at <= rounds:
            raise InputError(f"at must be a round from 2 to {rounds}", where=f"{where}.at")
        return _Switch(game, _build_bot(spec.get("first"), game, rounds, f"{where}.first"),
                       _build_bot(spec.get("then"), game, rounds, f"{where}.then"), at)
    raise InputError(f"unknown opponent kind {kind!r}", where=f"{where}.kind")


def _weights(mix: Sequence[Fraction]) -> list[int]:
    """Integer weights of a rational mix (the smallest common denominator)."""
    den = 1
    for q in mix:
        den = den * q.denominator // math.gcd(den, q.denominator)
    return [int(q * den) for q in mix]


def _opponent_spec(name: str, game: RepeatedGame, rounds: int,
                   rng: np.random.Generator) -> dict[str, Any]:
    """Resolve a named opponent into its spec, drawing its parameters from ``rng``."""
    n = game.n
    if name == "equilibrium":
        return {"kind": "mixed", "weights": _weights(game.stage_equilibrium())}
    if name == "pattern":
        return {"kind": "pattern", "sequence": [1, 0] if n == 2 else [2, 0, 1]}
    if name in ("counter-frequent", "counter-last", "tit-for-tat", "grim"):
        return {"kind": name}
    if name == "always-cooperate":
        return {"kind": "pattern", "sequence": [0]}
    if name == "always-defect":
        return {"kind": "pattern", "sequence": [1]}
    if name == "wsls":
        return {"kind": "wsls", "shift": 1}

    def biased(fav: int) -> dict[str, Any]:
        return {"kind": "mixed", "weights": [3 if i == fav else 1 for i in range(n)]}

    if name == "biased":
        return biased(int(rng.integers(n)))
    if rounds < 6:
        raise InputError("a switching opponent needs at least 6 rounds", where="rounds")
    at = rounds // 2 + 1 + int(rng.integers(-2, 3))
    if name == "biased-switch":
        x = int(rng.integers(n))
        y = (x + 1 + int(rng.integers(n - 1))) % n
        first, then = biased(x), biased(y)
    elif name == "cycle-switch":
        s, e = int(rng.integers(n)), int(rng.integers(n))
        first = {"kind": "pattern", "sequence": [(s + i) % n for i in range(n)]}
        then = {"kind": "pattern", "sequence": [(e - i) % n for i in range(n)]}
    elif name == "wsls-switch":
        first, then = {"kind": "wsls", "shift": 1}, {"kind": "wsls", "shift": -1}
    elif name == "counter-switch":
        first, then = {"kind": "counter-last"}, {"kind": "counter-frequent"}
    else:  # pragma: no cover - names are checked by the caller
        raise InputError(f"unknown opponent {name!r}", where="opponent")
    return {"kind": "switch", "first": first, "then": then, "at": at}


def _draw(dist: Dist, r: int) -> int:
    """The move a distribution gives for the pre-drawn integer ``r`` ∈ [0, 2³²) (exact)."""
    x = Fraction(r, _NOISE_SPAN)
    cum = Fraction(0)
    for i, p in enumerate(dist):
        cum += p
        if p and x < cum:
            return i
    return max(i for i, p in enumerate(dist) if p)
