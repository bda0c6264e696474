"""The A/B/C/K scenarios (:mod:`games._strategic`): a game drawn from a seed (a generalised
beauty contest, an 11–20 variant or an asymmetric guessing game), its scripted level-k bots and
population, and the exact answers A, B, C and K — all before any prompt is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from games._equilibrium import symmetric_equilibria
from mindledger.errors import InputError

__all__ = [
    "ABC_KINDS",
    "SCENARIO_ATTEMPTS",
    "Scenario",
    "abc_differ",
    "beauty_best_response",
    "draw_int",
    "fmt_mix",
    "fmt_p",
    "label_counts",
    "scenario_of",
]

ABC_KINDS: tuple[str, ...] = ("beauty", "11-20", "guessing")
HISTORY_ROUNDS = 2
"""Rounds of the scripted population's past play shown in a C question."""


# -- small exact helpers -----------------------------------------------------------------


def _nearest(x: Fraction, lo: int, hi: int) -> tuple[int, ...]:
    """Integers in ``[lo, hi]`` nearest to ``x`` (two at an exact half), ascending."""
    if x <= lo:
        return (lo,)
    if x >= hi:
        return (hi,)
    f = math.floor(x)
    frac = x - f
    if frac < Fraction(1, 2):
        return (f,)
    if frac > Fraction(1, 2):
        return (f + 1,)
    return (f, f + 1)


def fmt_p(pct: int) -> str:
    whole, rest = divmod(pct, 100)
    return f"{whole}.{rest:02d}".rstrip("0").rstrip(".") if rest else f"{whole}"


def fmt_mix(mix: Sequence[int], noun: str) -> str:
    parts = [f"a level-{k} {noun} with probability {w}%" for k, w in enumerate(mix)]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def draw_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _draw_mix(rng: np.random.Generator) -> tuple[int, int, int, int]:
    """A stated mix in tens of percent with at least two levels present."""
    while True:
        tens = rng.multinomial(10, [0.25] * 4)
        if (tens > 0).sum() >= 2:
            return (int(tens[0]) * 10, int(tens[1]) * 10, int(tens[2]) * 10, int(tens[3]) * 10)


def _bins(lo: int, hi: int, count: int = 10) -> list[tuple[int, int]]:
    width = hi - lo + 1
    edges = [lo + (i * width) // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1] - 1) for i in range(count) if edges[i + 1] > edges[i]]


def _median_expectation(dist: Mapping[int, Fraction], n: int) -> Fraction:
    """``E[median]`` of ``n`` (odd) i.i.d. draws from ``dist`` (exact)."""
    m = (n + 1) // 2
    values = sorted(dist)
    cum = Fraction(0)
    prev_cdf = Fraction(0)
    expect = Fraction(0)
    for v in values:
        cum += dist[v]
        cdf = sum(
            (math.comb(n, i) * cum**i * (1 - cum) ** (n - i) for i in range(m, n + 1)),
            Fraction(0),
        )
        expect += v * (cdf - prev_cdf)
        prev_cdf = cdf
    return expect


# -- scenarios ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    kind: str
    params: dict[str, Any]
    intro: str
    own_space: tuple[int, int]
    bot_space: tuple[int, int]
    bot_levels: tuple[int, ...]  # scripted actions of bot levels 1..3 (index 0 unused: -1)
    own_levels: tuple[int, ...]  # the level-k action in the agent's own role
    labels: tuple[str, ...]
    label_ranges: tuple[tuple[int, int], ...]
    mix: tuple[int, int, int, int]
    a_truth: tuple[int, ...]
    b_points: tuple[int, ...]
    b_mixed: tuple[tuple[float, ...], ...]  # mixed equilibria (11-20 only), per own action
    population_levels: tuple[int, ...]
    history: tuple[tuple[int, ...], ...]
    realised: tuple[int, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def label_of(self, value: int) -> str:
        for label, (a, b) in zip(self.labels, self.label_ranges, strict=True):
            if a <= value <= b:
                return label
        raise ValueError(f"{value} outside the answer ranges")


def _population(
    rng: np.random.Generator, size: int, space: tuple[int, int], levels: Sequence[int]
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], tuple[int, ...]]:
    weights = rng.dirichlet([1.2] * 4)
    assigned = tuple(int(x) for x in rng.choice(4, size=size, p=weights))

    def play() -> tuple[int, ...]:
        return tuple(draw_int(rng, *space) if lv == 0 else int(levels[lv]) for lv in assigned)

    history = tuple(play() for _ in range(HISTORY_ROUNDS))
    return assigned, history, play()


def _labels_for(
    space: tuple[int, int], binned: bool
) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    if not binned:
        vals = range(space[0], space[1] + 1)
        return tuple(str(v) for v in vals), tuple((v, v) for v in vals)
    ranges = tuple(_bins(*space))
    return tuple(f"{a}-{b}" if a != b else str(a) for a, b in ranges), ranges


_LEVEL_RULE_PLURAL = (
    "A level-1 bot chooses the number that is best for it if all the other players are "
    "level-0 bots; a level-2 bot does the same assuming all the other players are level-1 "
    "bots; a level-3 bot assumes all the other players are level-2 bots. When two numbers are "
    "equally good, a bot takes the smaller one."
)
_LEVEL_RULE_SINGULAR = (
    "A level-1 bot chooses the number that is best for it if the other player is a level-0 "
    "bot; a level-2 bot does the same assuming the other player is a level-1 bot; a level-3 "
    "bot assumes the other player is a level-2 bot. When two numbers are equally good, a bot "
    "takes the smaller one."
)


def beauty_best_response(
    target: str, p: Fraction, n_players: int, lo: int, hi: int, others: Mapping[int, Fraction]
) -> tuple[int, ...]:
    """The integers minimising the expected squared distance to the beauty-contest target
    when each of the other ``n_players - 1`` players draws independently from ``others``.

    ``"mean"``: target ``p·(x + S)/N`` with S the others' sum, so the minimiser is
    ``x* = p·E[S]/(N − p)``; ``"median"``: target ``p·median(others)`` (an odd number of
    others), minimised at ``x* = p·E[median]``. The loss is a convex quadratic in ``x``, so the
    best integers are those nearest to ``x*`` clipped to ``[lo, hi]``.
    """
    n_others = n_players - 1
    if target == "mean":
        mean = sum((v * w for v, w in others.items()), Fraction(0))
        return _nearest(p * n_others * mean / (n_players - p), lo, hi)
    if target == "median":
        if n_others % 2 == 0:
            raise ValueError("the median target needs an odd number of other players")
        return _nearest(p * _median_expectation(others, n_others), lo, hi)
    raise ValueError(f"unknown target {target!r}")


def _beauty(rng: np.random.Generator) -> Scenario:
    target = "mean" if rng.random() < 0.5 else "median"
    n_players = draw_int(rng, 6, 15) * 2 + (1 if target == "mean" and rng.random() < 0.5 else 0)
    if target == "median" and (n_players - 1) % 2 == 0:
        n_players += 1
    pct = int(rng.choice([x for x in range(30, 145, 5) if not 95 <= x <= 105]))
    p = Fraction(pct, 100)
    lo = int(rng.choice([0, 0, 1, 10, 20]))
    hi = lo + int(rng.choice([50, 60, 80, 100, 100, 120, 150]))
    others = n_players - 1
    uniform = {v: Fraction(1, hi - lo + 1) for v in range(lo, hi + 1)}

    def best(dist: Mapping[int, Fraction]) -> tuple[int, ...]:
        return beauty_best_response(target, p, n_players, lo, hi, dist)

    levels = [-1, best(uniform)[0]]
    for _ in range(2):
        levels.append(best({levels[-1]: Fraction(1)})[0])
    mix = _draw_mix(rng)
    mixture: dict[int, Fraction] = {v: Fraction(mix[0], 100) * w for v, w in uniform.items()}
    for k in (1, 2, 3):
        mixture[levels[k]] = mixture.get(levels[k], Fraction(0)) + Fraction(mix[k], 100)
    a_truth = best(mixture)
    b_points = tuple(x for x in range(lo, hi + 1) if x in best({x: Fraction(1)}))
    assigned, history, realised = _population(rng, others, (lo, hi), levels)
    labels, ranges = _labels_for((lo, hi), True)
    ps = fmt_p(pct)
    if target == "mean":
        target_text = (
            f"The target is {ps} times the average of all {n_players} chosen "
            "numbers (yours included)."
        )
    else:
        target_text = (
            f"The target is {ps} times the median of the other {others} players"
            "\u2019 numbers (your own number does not count towards it)."
        )
    rules = (
        f"You are one of {n_players} players in a number-guessing game. Each player "
        f"simultaneously chooses an integer from {lo} to {hi}. {target_text} Each player "
        "loses points equal to the square of the distance between their own number and the "
        "target, so the closer to the target, the better."
    )
    intro = (
        f"{rules}\n\n"
        f"The other {others} players are scripted bots, each of a fixed level. A level-0 bot "
        f"picks an integer uniformly at random from {lo} to {hi}. " + _LEVEL_RULE_PLURAL
    )
    return Scenario(
        kind="beauty",
        params={"players": n_players, "lo": lo, "hi": hi, "p_percent": pct, "target": target},
        intro=intro,
        own_space=(lo, hi),
        bot_space=(lo, hi),
        bot_levels=tuple(levels),
        own_levels=tuple(levels),
        labels=labels,
        label_ranges=ranges,
        mix=mix,
        a_truth=a_truth,
        b_points=b_points,
        b_mixed=(),
        population_levels=assigned,
        history=history,
        realised=realised,
        extra={"rules": rules},
    )


def _eleven_twenty(rng: np.random.Generator) -> Scenario:
    for _ in range(100):
        lo = draw_int(rng, 5, 60)
        width = draw_int(rng, 9, 15)
        hi = lo + width
        gap = int(rng.choice([1, 1, 2, 3]))
        bonus = draw_int(rng, width + 1, 2 * width + 4)
        acts = list(range(lo, hi + 1))
        u = [[s + bonus * (s == a - gap) for a in acts] for s in acts]
        eqs = symmetric_equilibria(u)
        if eqs:
            break
    else:  # pragma: no cover - the ranges above always admit one
        raise RuntimeError("no 11-20 variant with an interval-support equilibrium")
    n = len(acts)
    # level 1 best-responds to a uniform level 0: maximise the row sum
    sums = [sum(row) for row in u]
    levels = [-1, acts[sums.index(max(sums))]]
    for _ in range(2):
        col = levels[-1] - lo
        column = [u[s][col] for s in range(n)]
        levels.append(acts[column.index(max(column))])
    mix = _draw_mix(rng)
    expected = [
        Fraction(mix[0], 100) * Fraction(sums[s], n)
        + sum((Fraction(mix[k], 100) * u[s][levels[k] - lo] for k in (1, 2, 3)), Fraction(0))
        for s in range(n)
    ]
    top = max(expected)
    a_truth = tuple(acts[s] for s in range(n) if expected[s] == top)
    b_mixed = tuple(tuple(float(p) for p in e) for e in eqs)
    b_points = tuple(sorted({acts[i] for e in eqs for i in range(n) if e[i] == max(e)}))
    size = draw_int(rng, 15, 40)
    assigned, history, realised = _population(rng, size, (lo, hi), levels)
    labels, ranges = _labels_for((lo, hi), False)
    less = "1 less" if gap == 1 else f"{gap} less"
    rules = (
        f"Two players each simultaneously request an integer amount from {lo} to {hi}. Each "
        f"player receives the amount they request. A player who requests exactly {less} than "
        f"the other player receives an additional bonus of {bonus}. Each player wants as much "
        "as possible."
    )
    intro = (
        f"{rules}\n\n"
        "Your opponent is a scripted bot of a fixed level. A level-0 bot requests an amount "
        f"uniformly at random from {lo} to {hi}. " + _LEVEL_RULE_SINGULAR
    )
    return Scenario(
        kind="11-20",
        params={"lo": lo, "hi": hi, "bonus": bonus, "gap": gap},
        intro=intro,
        own_space=(lo, hi),
        bot_space=(lo, hi),
        bot_levels=tuple(levels),
        own_levels=tuple(levels),
        labels=labels,
        label_ranges=ranges,
        mix=mix,
        a_truth=a_truth,
        b_points=b_points,
        b_mixed=b_mixed,
        population_levels=assigned,
        history=history,
        realised=realised,
        extra={"rules": rules},
    )


def _guessing_game(rng: np.random.Generator) -> dict[str, int]:
    pcts = [x for x in range(30, 160, 10) if x != 100]
    lows, highs = [100, 150, 200, 250, 300], [500, 600, 700, 800, 900]
    return {
        "own_lo": int(rng.choice(lows)),
        "own_hi": int(rng.choice(highs)),
        "own_p": int(rng.choice(pcts)),
        "other_lo": int(rng.choice(lows)),
        "other_hi": int(rng.choice(highs)),
        "other_p": int(rng.choice(pcts)),
    }


def _guessing_levels(g: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """Level 1–3 actions of the agent's role and of the partner's role (index 0 unused)."""
    pi, pj = Fraction(g["own_p"], 100), Fraction(g["other_p"], 100)
    mine, theirs = [-1], [-1]
    mine.append(
        _nearest(pi * Fraction(g["other_lo"] + g["other_hi"], 2), g["own_lo"], g["own_hi"])[0]
    )
    theirs.append(
        _nearest(pj * Fraction(g["own_lo"] + g["own_hi"], 2), g["other_lo"], g["other_hi"])[0]
    )
    for k in (2, 3):
        mine.append(_nearest(pi * theirs[k - 1], g["own_lo"], g["own_hi"])[0])
        theirs.append(_nearest(pj * mine[k - 1], g["other_lo"], g["other_hi"])[0])
    return mine, theirs


def _guessing_rules(g: Mapping[str, int]) -> str:
    return (
        f"Your guess must be an integer from {g['own_lo']} to {g['own_hi']} and your target is "
        f"{fmt_p(g['own_p'])} times your partner\u2019s guess; your partner\u2019s guess must "
        f"be an integer from {g['other_lo']} to {g['other_hi']} and its target is "
        f"{fmt_p(g['other_p'])} times your guess."
    )


def _guessing(rng: np.random.Generator) -> Scenario:
    while True:
        g = _guessing_game(rng)
        mine, theirs = _guessing_levels(g)
        if len(set(mine[1:])) == 3:
            break
    pi, pj = Fraction(g["own_p"], 100), Fraction(g["other_p"], 100)
    lo_i, hi_i, lo_j, hi_j = g["own_lo"], g["own_hi"], g["other_lo"], g["other_hi"]
    mix = _draw_mix(rng)
    mean = Fraction(mix[0], 100) * Fraction(lo_j + hi_j, 2) + sum(
        (Fraction(mix[k], 100) * theirs[k] for k in (1, 2, 3)), Fraction(0)
    )
    a_truth = _nearest(pi * mean, lo_i, hi_i)
    b_points = tuple(
        x
        for x in range(lo_i, hi_i + 1)
        if any(x in _nearest(pi * y, lo_i, hi_i) for y in _nearest(pj * x, lo_j, hi_j))
    )
    size = draw_int(rng, 15, 40)
    assigned, history, realised = _population(rng, size, (lo_j, hi_j), theirs)
    labels, ranges = _labels_for((lo_j, hi_j), True)
    intro = (
        "You and a partner each simultaneously guess a number. "
        + _guessing_rules(g)
        + " Each player loses points equal to the square of the distance between their own "
        "guess and their own target, so the closer to the target, the better.\n\n"
        "Your partner is a scripted bot of a fixed level. A level-0 bot guesses an integer "
        "uniformly at random within its own limits. " + _LEVEL_RULE_SINGULAR
    )
    extra: dict[str, Any] = {"inference": _inference_task(rng)}
    return Scenario(
        kind="guessing",
        params=dict(g),
        intro=intro,
        own_space=(lo_i, hi_i),
        bot_space=(lo_j, hi_j),
        bot_levels=tuple(theirs),
        own_levels=tuple(mine),
        labels=labels,
        label_ranges=ranges,
        mix=mix,
        a_truth=a_truth,
        b_points=b_points,
        b_mixed=(),
        population_levels=assigned,
        history=history,
        realised=realised,
        extra=extra,
    )


def _inference_task(rng: np.random.Generator, games: int = 4) -> dict[str, Any]:
    """One bot of a drawn level plays ``games`` guessing games; its level is identifiable:
    its guesses equal exactly one level's predictions (none, for level 0)."""
    level = draw_int(rng, 0, 3)
    while True:
        specs = [_guessing_game(rng) for _ in range(games)]
        # the bot sits in the "own" role of each game
        predicted = [[_guessing_levels(g)[0][k] for g in specs] for k in (1, 2, 3)]
        if len({tuple(p) for p in predicted}) < 3:
            continue
        if level == 0:
            guesses = [draw_int(rng, g["own_lo"], g["own_hi"]) for g in specs]
        else:
            guesses = predicted[level - 1]
        matching = [k for k in (1, 2, 3) if predicted[k - 1] == guesses]
        if (level == 0 and not matching) or matching == [level]:
            return {
                "level": level,
                "games": specs,
                "guesses": guesses,
                "predicted": {str(k): predicted[k - 1] for k in (1, 2, 3)},
            }


_BUILDERS = {"beauty": _beauty, "11-20": _eleven_twenty, "guessing": _guessing}


SCENARIO_ATTEMPTS = 40
"""Draws per scenario seed before settling for one whose A, B and C truths coincide."""


@lru_cache(maxsize=64)
def scenario_of(seed: int, kind: str) -> Scenario:
    """The scenario of ``seed``: the first draw whose A, B and C truths differ (seed 002's
    point is to keep them apart), else the last of :data:`SCENARIO_ATTEMPTS` draws."""
    if kind not in _BUILDERS:
        raise InputError(
            f"unknown A/B/C kind {kind!r}; known: {', '.join(ABC_KINDS)}", where="kind"
        )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xABC]))
    for _ in range(SCENARIO_ATTEMPTS):
        sc = _BUILDERS[kind](rng)
        if abc_differ(sc):
            break
    return sc


def abc_differ(sc: Scenario) -> bool:
    counts = label_counts(sc)
    top = max(counts.values())
    modes = {lab for lab, c in counts.items() if c == top}
    a_labels = {sc.label_of(a) for a in sc.a_truth if sc.bot_space[0] <= a <= sc.bot_space[1]}
    b_labels = {sc.label_of(b) for b in sc.b_points if sc.bot_space[0] <= b <= sc.bot_space[1]}
    return (not set(sc.a_truth) & set(sc.b_points)) and not (a_labels | b_labels) & modes


def label_counts(sc: Scenario) -> dict[str, int]:
    counts = {lab: 0 for lab in sc.labels}
    for v in sc.realised:
        counts[sc.label_of(v)] += 1
    return counts
