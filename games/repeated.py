"""Repeated games with counterfactual payoffs against scripted opponents.

Built on a paper on counterfactual strategic reasoning ("the paper" below; see
docs/architecture.md, "Where the specifications come from"):
the Repeated Prisoner's Dilemma (16 rounds) and Rock-Paper-Scissors (24 rounds), each in four
settings — default, label, payoff and joint counterfactual — played against algorithmic
opponents; and on the baseline test B6 (30-round RPS against four biased bots that switch
strategy mid-game; exploitation and adaptation latency). Pure code: no I/O, no clock, no global
random state.

**Games** (role order ``a, b[, c]``; the agent is the row player and the games are symmetric, so
the opponent's payoff for ``(a, b)`` is the agent's for ``(b, a)``):

- ``pd`` default: ``cooperation``/``defection`` with (C,C)=(4,4), (C,D)=(1,6), (D,C)=(6,1),
  (D,D)=(2,2) — 16 rounds score 16…96; ``label``: the same payoffs under the labels ``stag``/
  ``hare``; ``payoff``: ``cooperation``/``defection`` with the Stag Hunt payoffs (6,6), (1,4),
  (4,1), (2,2), so defection no longer dominates; ``joint``: both (``stag``/``hare`` with the Stag
  Hunt payoffs). These are the paper code's ``pd``, ``sh-alt``, ``pd-alt`` and ``sh`` settings.
- ``rps`` default: rock/paper/scissors, win +1, loss −1, tie 0 — 24 rounds score −24…24;
  ``payoff``: "increases the magnitude of the Rock-Paper combination to 3", which moves the
  equilibrium to π*(R)=0.2, π*(P)=0.2, π*(S)=0.6; ``label``: two labels swapped (paper and rock
  trade roles), so the rules read "rock beats paper, scissors beats rock, paper beats scissors"
  — the familiar relation reversed, the strategic structure unchanged; ``joint``: both (the
  amplified pair is then "rock beats paper" for 3). The paper's own code rotates the labels
  instead, which leaves every "X beats Y" rule as usual; the swap makes label anchoring visible.

**Opponents** (scripted; the paper's SREP, PP, MF/AP and its "TFT" are ``equilibrium``,
``pattern``, ``counter-frequent`` and ``counter-last``):

- ``equilibrium`` — plays the stage game's symmetric equilibrium mix every round (PD: always
  defect; Stag Hunt: the mixed equilibrium, stag with probability 1/3 — the indifference
  condition; the paper's code computes 3/7; RPS: uniform, or (0.2, 0.2, 0.6) under the payoff
  counterfactual);
- ``pattern`` — a fixed cycle (PD: defect, cooperate, …; RPS: scissors, rock, paper, … in role
  terms, each move beating the one before);
- ``counter-frequent`` — best response to the agent's most frequent move so far (ties: first in
  role order; uniform before any move);
- ``counter-last`` — best response to the agent's previous move (uniform in round 1);
- PD only: ``tit-for-tat`` (cooperate, then copy), ``grim`` (cooperate until the agent defects
  once), ``always-cooperate``, ``always-defect``;
- RPS only: ``biased`` (3:1:1 towards one move drawn from the seed), ``wsls`` (win-stay,
  lose-or-tie-shift to the move that beats its own last move), and B6's switching bots
  ``biased-switch`` (biased to X, then to Y ≠ X), ``cycle-switch`` (forward cycle, then
  backward), ``wsls-switch`` (shift forward, then backward), ``counter-switch``
  (``counter-last``, then ``counter-frequent``). A switching bot changes regime at a round drawn
  from the middle five of the game and starts its new regime afresh.

An invalid agent move is invisible to ``tit-for-tat``, ``grim`` and the counter bots (they react
to valid moves only); ``wsls`` counts the round as its win.

**Determinism.** An opponent is a finite-state machine whose random choices come from one
pre-drawn integer per round, part of the item: the agent and its control face the very same
draws, and every figure below is exact.

**Scoring** (:func:`score_episode`):

- per-round and total payoffs; an invalid move scores the game's worst outcome for the agent
  (it gets its minimum payoff, the opponent its payoff in that outcome: PD (1, 6), RPS (−1, 1) or
  (−3, 3));
- ``benchmark``: the expected total of the best response to the actual opponent — the optimal
  policy against its script, knowing the script but not its coin flips (dynamic programming
  over the opponent's states). Against an opponent that does not react to the agent this is
  the best response to its next move each round; against ``tit-for-tat`` it is to cooperate and
  defect in the last round. ``benchmark_realized`` is what that policy scores on this episode's
  draws (the ``oracle`` reference agent's total);
- ``exploitation`` = (total − E[random play]) / (benchmark − E[random play]): 1 in expectation
  for the best response (exactly 1 against an opponent without coin flips), 0 in expectation for
  uniform random play, None when the two coincide (nothing to exploit, e.g. the RPS
  equilibrium player); ``regret`` = benchmark_realized − total;
- ``comprehension_round`` *m*, exactly as the paper defines it: "the earliest round such that
  from that round until the end of the game, the LLM achieves a payoff no lower than the
  opponent's in at least t_p = 90% of the subsequent rounds … if m exceeds the game length, it
  is determined that no stable understanding was reached" — rounds counted from 1, the suffix
  includes round m, the threshold is compared exactly; no such round gives m = rounds + 1;
- ``best_response_round``: the same rule applied to "the agent's move is a best response (an
  optimal action of the benchmark policy) to the opponent in that round";
- ``adaptation_latency`` (switching bots): rounds from the switch until the best-response rule
  above holds from there to the end (0 = adapted at once; None = never);
- ``efficiency``: "points/tokens × c (default c = 1000)", tokens being all prompt and completion
  tokens of the episode; action shares, cooperation rate (PD) and invalid rounds.

**The balanced design** (:func:`counterfactual_design`, issue 15). Seed 003's counterfactual
cells are game × label condition × payoff condition: ``pd`` and ``rps``, each in ``default``
(familiar labels and payoffs), ``label`` (counterfactual labels), ``payoff`` (counterfactual
payoffs) and ``joint`` (both) — 8 cells. Every cell gets exactly ``episodes_per_cell`` episodes.
Episodes come in *matched sets*: set ``j`` of a game is one opponent and one episode seed,
played in all four settings, so the four episodes face the same opponent and the very same
draws and differ only in labels and payoffs (a paired counterfactual gap, not a comparison of
two opponent mixes). A game's sets cycle through the paper's four opponents in a seeded order,
so a multiple of 4 episodes per cell balances them exactly. The presets
(``harness/suites.py``): ``baseline`` 8 per cell — 64 episodes, 2 matched sets per opponent
and game, 32 × 16 PD rounds + 32 × 24 RPS rounds = 1,280 agent turns; ``quick`` none (one
per cell would be 160 turns, six times the rest of ``quick``).

B6's switching-bot episodes (:func:`b6_episodes`: 4 bots × 5 sessions of 30-round RPS, 600
turns) are generated apart from these cells; their design record says ``b6`` and reports keep
them out of the counterfactual cells and report them on their own.

**Agents as opponents** (issue 15 item 4; seed 003's LLM-vs-LLM setting). The opponent
``agent:control`` or ``agent:self`` (:data:`AGENT_OPPONENTS`) is not a script but another agent
of the run, in a *seat* the harness resolves: the agent's control, or a second instance of the
agent. The item holds the rules and ``{"kind": "agent", "seat": ...}`` (no draws, no benchmark);
:class:`SeatEpisode` gives each seat its own view of the history, and :func:`score_seats`
scores both seats' moves: payoffs, *m*, efficiency per seat's own tokens, and exploitation
against the best fixed action in hindsight (:data:`SEAT_BENCHMARK`); adaptation latency has no
switch to measure from. :func:`agent_seat_design` lays them out in matched sets (one seed per
set, played in every setting), so the counterfactual gap is paired there too.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, cast

import numpy as np

from mindledger.errors import InputError
from mindledger.items import Item, Score

__all__ = [
    "AGENT_OPPONENTS",
    "B6_OPPONENTS",
    "B6_PRESET",
    "COUNTERFACTUALS",
    "DEFAULT_ROUNDS",
    "EFFICIENCY_SCALE",
    "ERROR_CODES",
    "FAMILY",
    "GAMES",
    "GENERATOR",
    "MATCHED_SET_KEYS",
    "OPPONENTS",
    "PAPER_OPPONENTS",
    "REFERENCE_POLICIES",
    "SEATS",
    "SEAT_BENCHMARK",
    "T_P",
    "VERSION",
    "Episode",
    "RepeatedGame",
    "Round",
    "SeatEpisode",
    "agent_seat",
    "agent_seat_design",
    "b6_episodes",
    "counterfactual_design",
    "episode_from_item",
    "generate_episodes",
    "make_episode",
    "make_episode_item",
    "matched_set",
    "play_moves",
    "play_reference",
    "reference_answer",
    "reference_move",
    "repeated_game",
    "score",
    "score_episode",
    "score_seats",
    "seat_episode_from_item",
]

FAMILY = "repeated"
GENERATOR = "games.repeated"
VERSION = "1"
GAMES: tuple[str, ...] = ("pd", "rps")
COUNTERFACTUALS: tuple[str, ...] = ("default", "label", "payoff", "joint")
DEFAULT_ROUNDS: Mapping[str, int] = {"pd": 16, "rps": 24}
T_P = Fraction(9, 10)
"""Seed 003's consistency threshold t_p = 90%."""
EFFICIENCY_SCALE = 1000
"""Seed 003's c: efficiency is points per ``c`` tokens."""
MAX_ROUNDS = 100

PAPER_OPPONENTS: tuple[str, ...] = ("equilibrium", "pattern", "counter-frequent", "counter-last")
"""The paper's algorithmic opponents (SREP, PP, MF/AP, its TFT), valid in both games."""
B6_OPPONENTS: tuple[str, ...] = ("biased-switch", "cycle-switch", "wsls-switch", "counter-switch")
"""Seed 002 B6: four biased RPS bots with a mid-game switch."""
OPPONENTS: Mapping[str, tuple[str, ...]] = {
    "pd": (*PAPER_OPPONENTS, "tit-for-tat", "grim", "always-cooperate", "always-defect"),
    "rps": (*PAPER_OPPONENTS, "biased", "wsls", *B6_OPPONENTS),
}
B6_PRESET: Mapping[str, Any] = {
    "n": 20,
    "games": ("rps",),
    "counterfactuals": ("default",),
    "opponents": B6_OPPONENTS,
    "rounds": 30,
}
"""Keyword arguments of :func:`generate_episodes` for B6: 30-round RPS, 4 bots × 5 sessions."""
REFERENCE_POLICIES: tuple[str, ...] = ("oracle", "random", "myopic")

Round = tuple[str | None, str]
"""One played round: the agent's move (None when it gave no valid move) and the opponent's."""

_NOISE_SPAN = 1 << 32

# ----------------------------------------------------------------------------------- games

_PD_PAYOFF = ((4, 1), (6, 2))
_SH_PAYOFF = ((6, 1), (4, 2))
_PD_LABELS = ("cooperation", "defection")
_SH_LABELS = ("stag", "hare")
_RPS_LABELS = ("rock", "paper", "scissors")
_RPS_SWAPPED = ("paper", "rock", "scissors")


def _rps_payoff(ac: int, ba: int, cb: int) -> tuple[tuple[int, ...], ...]:
    """Row payoffs for roles a, b, c where a beats c (``ac``), b beats a (``ba``), c beats b."""
    return ((0, -ba, ac), (ba, 0, -cb), (-ac, cb, 0))


_VARIANTS: Mapping[tuple[str, str], tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]] = {
    ("pd", "default"): (_PD_LABELS, _PD_PAYOFF),
    ("pd", "label"): (_SH_LABELS, _PD_PAYOFF),
    ("pd", "payoff"): (_PD_LABELS, _SH_PAYOFF),
    ("pd", "joint"): (_SH_LABELS, _SH_PAYOFF),
    ("rps", "default"): (_RPS_LABELS, _rps_payoff(1, 1, 1)),
    ("rps", "label"): (_RPS_SWAPPED, _rps_payoff(1, 1, 1)),
    ("rps", "payoff"): (_RPS_LABELS, _rps_payoff(1, 3, 1)),
    ("rps", "joint"): (_RPS_SWAPPED, _rps_payoff(1, 3, 1)),
}


def _solve(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """Exact Gaussian elimination; None when the system is singular."""
    n = len(rhs)
    m = [[*row, r] for row, r in zip(matrix, rhs, strict=True)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


@dataclass(frozen=True)
class RepeatedGame:
    """A symmetric two-player stage game in one counterfactual setting.

    ``payoff[i][j]`` is the agent's payoff when it plays role ``i`` and the opponent role ``j``;
    the opponent's is ``payoff[j][i]``. ``labels[i]`` is role ``i``'s name in this setting.
    """

    name: str
    counterfactual: str
    labels: tuple[str, ...]
    payoff: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return len(self.labels)

    def index(self, label: str, where: str = "move") -> int:
        """The role of ``label``; InputError naming ``where`` when it is not an action."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise InputError(
                f"{label!r} is not an action of this game ({', '.join(self.labels)})", where=where
            ) from None

    def outcome(self, a: int | None, b: int) -> tuple[int, int]:
        """(agent, opponent) payoffs for roles ``a`` and ``b``; ``a=None`` (an invalid move) is
        the agent's worst outcome: its minimum payoff, and the opponent's payoff there."""
        if a is None:
            return self.worst_outcome
        return self.payoff[a][b], self.payoff[b][a]

    @property
    def worst_outcome(self) -> tuple[int, int]:
        low = min(min(row) for row in self.payoff)
        return low, max(
            self.payoff[j][i] for i in range(self.n) for j in range(self.n)
            if self.payoff[i][j] == low
        )

    def best_replies(self, b: int) -> tuple[int, ...]:
        """The agent's best replies to the opponent's role ``b`` (stage game)."""
        top = max(self.payoff[a][b] for a in range(self.n))
        return tuple(a for a in range(self.n) if self.payoff[a][b] == top)

    def stage_equilibrium(self) -> tuple[Fraction, ...]:
        """The stage game's symmetric equilibrium mix: the completely mixed one when it exists
        (Stag Hunt: stag 1/3; RPS: ∝ the stakes), else the strictly dominant action (PD)."""
        n = self.n
        rows = [[Fraction(self.payoff[i][j]) for j in range(n)] + [Fraction(-1)]
                for i in range(n)]
        rows.append([Fraction(1)] * n + [Fraction(0)])
        rhs = [Fraction(0)] * n + [Fraction(1)]
        sol = _solve(rows, rhs)
        if sol is not None and all(q > 0 for q in sol[:n]):
            return tuple(sol[:n])
        for a in range(n):
            if all(self.payoff[a][j] > self.payoff[o][j]
                   for o in range(n) if o != a for j in range(n)):
                return tuple(Fraction(int(i == a)) for i in range(n))
        raise InputError("this stage game has no completely mixed or dominant equilibrium",
                         where="payoff")

    def rules_text(self, rounds: int) -> str:
        """The rules as the agent reads them, written from this setting's labels and payoffs."""
        lab = self.labels
        lines = [
            f"You are playing a repeated game against one opponent for {rounds} rounds. In each "
            "round you and your opponent each choose one action at the same time, without "
            "seeing the other's choice; then both choices are revealed and both of you score "
            "points. You face the same opponent in every round, and after each round you see "
            "what it chose.",
            "",
            "Actions: " + ", ".join(lab) + ".",
        ]
        if self.name == "rps":
            lines += ["", "Rules:"]
            for i, j in itertools.permutations(range(self.n), 2):
                if self.payoff[i][j] > 0:
                    s = self.payoff[i][j]
                    lines.append(f"- {lab[i]} beats {lab[j]}: the winner scores {s} and the "
                                 f"loser scores {-s}.")
            lines.append("- If both choose the same action, the round is a tie and both score 0.")
        lines += ["", "Points in one round, for every pair of choices:"]
        for i in range(self.n):
            for j in range(self.n):
                mine, theirs = self.outcome(i, j)
                lines.append(f"- you choose {lab[i]} and your opponent chooses {lab[j]}: you "
                             f"score {mine}, your opponent scores {theirs}.")
        lines += ["", f"Your goal is to score as many points as you can over all {rounds} "
                      "rounds."]
        return "\n".join(lines)


def repeated_game(game: str, counterfactual: str = "default") -> RepeatedGame:
    """The stage game ``game`` (``pd`` | ``rps``) in setting ``counterfactual``."""
    if game not in GAMES:
        raise InputError(f"unknown game {game!r}; known: {', '.join(GAMES)}", where="game")
    if counterfactual not in COUNTERFACTUALS:
        raise InputError(f"unknown counterfactual {counterfactual!r}; known: "
                         f"{', '.join(COUNTERFACTUALS)}", where="counterfactual")
    labels, payoff = _VARIANTS[(game, counterfactual)]
    return RepeatedGame(game, counterfactual, labels, payoff)


# -------------------------------------------------------------------------------- opponents

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


# ---------------------------------------------------------------------------------- episode


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


def _rounds_text(game: RepeatedGame, rounds: int,
                 roles: Sequence[tuple[int | None, int | None]]) -> str:
    """What a player reads before choosing in the next round, from its own side: the rounds so
    far (its move first) with their points, the totals, and the request."""
    r = len(roles) + 1
    if r > rounds:
        raise InputError("the game is over", where="history")
    lab = game.labels
    lines = [f"Round {r} of {rounds}."]
    if not roles:
        lines.append("No rounds have been played yet.")
    else:
        lines.append("Rounds so far (your action / your opponent's action: your points / "
                     "your opponent's points):")
        mine = theirs = 0
        for i, (a, b) in enumerate(roles, 1):
            pa, pb = _seat_outcome(game, a, b)
            mine, theirs = mine + pa, theirs + pb
            you = "(no valid action)" if a is None else lab[a]
            them = "(no valid action)" if b is None else lab[b]
            lines.append(f"Round {i}: {you} / {them}: {pa} / {pb}")
        lines.append(f"Total so far: you {mine}, your opponent {theirs}.")
    lines.append(f"Choose your action for round {r}: one of {', '.join(lab)}.")
    return "\n".join(lines)


def _seat_outcome(game: RepeatedGame, a: int | None, b: int | None) -> tuple[int, int]:
    """(this player, other player) points when either may have given no valid move: an invalid
    move is its player's worst outcome (:attr:`RepeatedGame.worst_outcome`, seen from that
    player's side); both invalid, both get the game's lowest payoff."""
    if b is not None:
        return game.outcome(a, b)
    if a is None:
        low = game.worst_outcome[0]
        return low, low
    theirs, mine = game.worst_outcome
    return mine, theirs


# ------------------------------------------------------------------------------- agent seats

AGENT_OPPONENTS: Mapping[str, str] = {"agent:control": "control", "agent:self": "self"}
"""Opponents that are agents of the run, by their ``opponent`` param, and the seat each names:
``control`` — the agent's bare-model control (the run's control of the agent's base agent);
``self`` — a second, independent instance of the agent itself (each seat its own chats and its
own history). The harness resolves the seat to an agent (:mod:`harness.episodes`)."""
SEATS: tuple[str, ...] = ("control", "self")
SEAT_BENCHMARK = ("the best fixed action in hindsight against the opponent's actual moves "
                  "(the moves taken as given: how the opponent would have reacted is unknown)")
"""What ``benchmark`` means in an agent-seat episode (there is no script to best-respond to)."""
NO_SWITCH = ("not estimable: the opponent is an agent with no scripted switch, so there is no "
             "switch round to adapt from")


@dataclass(frozen=True)
class SeatEpisode:
    """A repeated game between two agents of the run (opponent ``agent:control`` or
    ``agent:self``): the same stage game and rules for both seats, no script and no draws.

    Each seat sees the game from its own side (its own move first, its own points first,
    :meth:`round_prompt`); the game is symmetric, so both read the same rules."""

    game: RepeatedGame
    seat: str
    rounds: int

    def __post_init__(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise InputError(f"rounds must be from 1 to {MAX_ROUNDS}", where="rounds")
        if self.seat not in SEATS:
            raise InputError(f"unknown seat {self.seat!r}; known: {', '.join(SEATS)}",
                             where="opponent.seat")

    @property
    def opponent_name(self) -> str:
        return f"agent:{self.seat}"

    @property
    def labels(self) -> tuple[str, ...]:
        return self.game.labels

    @property
    def answer_spec(self) -> dict[str, Any]:
        return {"kind": "choice", "choices": list(self.game.labels)}

    def intro(self) -> str:
        return self.game.rules_text(self.rounds)

    def _role(self, move: Any) -> int | None:
        """The role of ``move``; None when it is not an action of the game (invalid)."""
        labels = self.game.labels
        return labels.index(move) if isinstance(move, str) and move in labels else None

    def round_prompt(self, mine: Sequence[Any], theirs: Sequence[Any]) -> str:
        """What the seat whose moves are ``mine`` reads before the next round (moves that are
        not actions of the game are shown as invalid)."""
        if len(mine) != len(theirs):
            raise InputError("both seats must have played the same rounds", where="history")
        return _rounds_text(self.game, self.rounds,
                            [(self._role(a), self._role(b)) for a, b in zip(mine, theirs,
                                                                             strict=True)])


def agent_seat(item: Item) -> str | None:
    """The seat an episode item's opponent sits in (``control`` | ``self``), None for a scripted
    opponent."""
    if item.family != FAMILY:
        return None
    spec = item.truth.get("opponent") if isinstance(item.truth, Mapping) else None
    if isinstance(spec, Mapping) and spec.get("kind") == "agent":
        seat = spec.get("seat")
        return str(seat) if seat in SEATS else None
    return None


def seat_episode_from_item(item: Item) -> SeatEpisode:
    """Rebuild an agent-seat item's episode from its truth alone."""
    seat = agent_seat(item)
    if seat is None:
        raise InputError("not an agent-seat episode (its opponent is scripted)", where="item")
    t = item.truth
    try:
        game = RepeatedGame(str(t["game"]), str(t["counterfactual"]),
                            tuple(str(x) for x in t["labels"]),
                            tuple(tuple(int(v) for v in row) for row in t["payoff"]))
        return SeatEpisode(game, seat, int(t["rounds"]))
    except KeyError as exc:
        raise InputError(f"item truth lacks {exc.args[0]!r}", where="truth") from None


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


def _check_count(value: object, name: str) -> None:
    """Raise unless ``value`` (the argument ``name``) is a non-negative integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name} must be a non-negative integer", where=name)


def _check_games(games: Sequence[str]) -> None:
    for g in games:
        if g not in GAMES:
            raise InputError(f"unknown game {g!r}; known: {', '.join(GAMES)}", where="games")


def _seed_for(seed: int, index: int) -> int:
    """A per-item seed derived from the batch seed and the item's position."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


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


def _as_float(q: Fraction) -> float | int:
    return int(q) if q.denominator == 1 else float(q)


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
    deterministic by ``seed`` (see the module docstring, "The balanced design").

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


# ------------------------------------------------------------------------------------ scoring


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
    """Score one complete episode (see the module docstring for every field).

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


# ----------------------------------------------------------------------------- reference agents


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
