"""What every part of the repeated-games family refers to: its names (family, generator,
games, settings, opponents, reference policies), its fixed figures (t_p, the efficiency scale,
the round limit, the span of an opponent's per-round draw), the :data:`Round` type, and two small
helpers (a count check; an exact figure as a JSON number)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from mindledger.errors import InputError

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


def _check_count(value: object, name: str) -> None:
    """Raise unless ``value`` (the argument ``name``) is a non-negative integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name} must be a non-negative integer", where=name)


def _as_float(q: Fraction) -> float | int:
    """An exact figure as a JSON number: an int when it is whole, else the nearest float."""
    return int(q) if q.denominator == 1 else float(q)
