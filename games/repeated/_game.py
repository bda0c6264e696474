"""The stage games in their counterfactual settings (:class:`RepeatedGame`,
:func:`repeated_game`): labels and payoff matrices, the stage equilibrium, the rules text, and
what a player reads before each round (:func:`_rounds_text`, from its own side)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from games.repeated._common import COUNTERFACTUALS, GAMES
from mindledger.errors import InputError

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
