"""A/B/C strategic prediction: keep apart three answers.

- **A** — the normative best response to a *stated* opponent mix (computation);
- **B** — the equilibrium (computation, no model of the actual opponent);
- **C** — the predicted distribution of what a particular *scripted population* actually plays
  (agent modelling; scored by log score and Brier against the population's realised choices);
- **K** — the inferred level of one opponent from its play (asymmetric guessing games).

C has a second population (seed 002 §15.1, "LLM populations"): the agents of the run itself.
A scenario drawn for it (:func:`generate_population_items`, beauty contests and 11–20 variants)
has :data:`POPULATION_SAMPLES` = K play items — the game's own question, which every agent of
the run answers K times — and one C-llm item asking for the distribution of the other agents'
plays. Neither can be scored one answer at a time (``Score.correct`` is None); the profile
scores each C-llm prediction against the run's plays (``reports._population``), with
:func:`population_prediction_scores`, the scripted C's log and Brier scores.

Scenarios are drawn fresh from a seed, so canonical answers (33, 22, 0) cannot be retrieved:

- ``beauty`` — generalised beauty contest: ``p ∈ [0.3, 1.4]``, bounds, N players, target
  ``p·mean`` of all choices or ``p·median`` of the others' choices;
- ``11-20`` — 11–20 money-request variants (range, bonus size, adjacency gap);
- ``guessing`` — two-person asymmetric guessing games in the style of Costa-Gomes & Crawford
  (2006): each player has own limits and target ``p·(partner's guess)``.

Every answer has exact ground truth. Losses are squared distances, so a best response to any
belief is the integer nearest to ``p·E[·]`` (clipped to the limits; both integers at an exact
half). Scripted bots: a level-0 bot picks uniformly at random; a level-k bot (k = 1…3)
best-responds to the belief that everyone else is level k−1, taking the smaller number at a
tie. A population is a fixed set of such bots; level-0 bots draw afresh every round.

**How many scenarios** (issue 15). :func:`generate_abc_items` rotates the kinds, so ``n``
scenarios hold ``n // 3`` guessing scenarios, each with one K item. For 95% intervals narrower
than ±15 points: K accuracy (a Wilson interval, widest at 0.5) needs 39 items; A − B and B − C
(paired by scenario, Newcombe's paired interval) need 82 scenarios at accuracies near 0.5 with
independent answers, 120 for discordance up to 0.72. ``baseline`` draws 120 scenarios (40 K
items, 400 items in all).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from games._equilibrium import symmetric_equilibria
from mindledger.canonical import content_hash
from mindledger.errors import InputError
from mindledger.items import Item, Score

__all__ = [
    "ABC_GENERATOR",
    "ABC_KINDS",
    "ABC_VERSION",
    "POPULATION_KINDS",
    "POPULATION_MIN_ANSWERS",
    "POPULATION_QUESTIONS",
    "POPULATION_SAMPLES",
    "abc_reference",
    "generate_abc_items",
    "generate_population_items",
    "make_abc_item",
    "make_abc_scenario",
    "make_population_item",
    "make_population_scenario",
    "population_prediction_scores",
    "score_abc_answer",
    "summarize_abc",
]

ABC_GENERATOR = "games.abc"
"""Generator name stored in every A/B/C item (the module's former name); never change it."""
ABC_VERSION = "1"
ABC_KINDS: tuple[str, ...] = ("beauty", "11-20", "guessing")
_GAME_NAMES = {"beauty": "beauty-contest", "11-20": "11-20-variant",
               "guessing": "asymmetric-guessing"}
_QUESTIONS = {"beauty": ("A", "B", "C"), "11-20": ("A", "B", "C"),
              "guessing": ("A", "B", "C", "K")}
HISTORY_ROUNDS = 2
B_TOLERANCE = 0.05
"""Largest total-variation distance at which a stated mixed equilibrium counts as correct."""
LOG_FLOOR = 1e-9
"""Probability floor in the log score (a zero on a realised choice scores ``ln 1e-9``)."""
POPULATION_KINDS: tuple[str, ...] = ("beauty", "11-20")
"""Games with an LLM-population condition C (seed 002 §15.1; not the two-role guessing games)."""
POPULATION_QUESTIONS: tuple[str, ...] = ("play", "C-llm")
POPULATION_SAMPLES = 5
"""K: how many times each agent of the run plays an LLM-population scenario."""
POPULATION_MIN_ANSWERS = 5
"""Fewest valid plays of the other agents (one agent's K plays) against which a C-llm
prediction is scored; below it the scenario is not estimable for that predictor."""


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


def _fmt_p(pct: int) -> str:
    whole, rest = divmod(pct, 100)
    return f"{whole}.{rest:02d}".rstrip("0").rstrip(".") if rest else f"{whole}"


def _fmt_mix(mix: Sequence[int], noun: str) -> str:
    parts = [f"a level-{k} {noun} with probability {w}%" for k, w in enumerate(mix)]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _int(rng: np.random.Generator, lo: int, hi: int) -> int:
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


# -- scenario ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scenario:
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
        return tuple(
            _int(rng, *space) if lv == 0 else int(levels[lv]) for lv in assigned
        )

    history = tuple(play() for _ in range(HISTORY_ROUNDS))
    return assigned, history, play()


def _labels_for(space: tuple[int, int], binned: bool) -> tuple[tuple[str, ...],
                                                               tuple[tuple[int, int], ...]]:
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


def _beauty(rng: np.random.Generator) -> _Scenario:
    target = "mean" if rng.random() < 0.5 else "median"
    n_players = _int(rng, 6, 15) * 2 + (1 if target == "mean" and rng.random() < 0.5 else 0)
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
    ps = _fmt_p(pct)
    if target == "mean":
        target_text = (f"The target is {ps} times the average of all {n_players} chosen "
                       "numbers (yours included).")
    else:
        target_text = (f"The target is {ps} times the median of the other {others} players"
                       "\u2019 numbers (your own number does not count towards it).")
    rules = (
        f"You are one of {n_players} players in a number-guessing game. Each player "
        f"simultaneously chooses an integer from {lo} to {hi}. {target_text} Each player "
        "loses points equal to the square of the distance between their own number and the "
        "target, so the closer to the target, the better."
    )
    intro = (
        f"{rules}\n\n"
        f"The other {others} players are scripted bots, each of a fixed level. A level-0 bot "
        f"picks an integer uniformly at random from {lo} to {hi}. "
        + _LEVEL_RULE_PLURAL
    )
    return _Scenario(
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


def _eleven_twenty(rng: np.random.Generator) -> _Scenario:
    for _ in range(100):
        lo = _int(rng, 5, 60)
        width = _int(rng, 9, 15)
        hi = lo + width
        gap = int(rng.choice([1, 1, 2, 3]))
        bonus = _int(rng, width + 1, 2 * width + 4)
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
    size = _int(rng, 15, 40)
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
        f"uniformly at random from {lo} to {hi}. "
        + _LEVEL_RULE_SINGULAR
    )
    return _Scenario(
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
        "own_lo": int(rng.choice(lows)), "own_hi": int(rng.choice(highs)),
        "own_p": int(rng.choice(pcts)),
        "other_lo": int(rng.choice(lows)), "other_hi": int(rng.choice(highs)),
        "other_p": int(rng.choice(pcts)),
    }


def _guessing_levels(g: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """Level 1–3 actions of the agent's role and of the partner's role (index 0 unused)."""
    pi, pj = Fraction(g["own_p"], 100), Fraction(g["other_p"], 100)
    mine, theirs = [-1], [-1]
    mine.append(_nearest(pi * Fraction(g["other_lo"] + g["other_hi"], 2),
                         g["own_lo"], g["own_hi"])[0])
    theirs.append(_nearest(pj * Fraction(g["own_lo"] + g["own_hi"], 2),
                           g["other_lo"], g["other_hi"])[0])
    for k in (2, 3):
        mine.append(_nearest(pi * theirs[k - 1], g["own_lo"], g["own_hi"])[0])
        theirs.append(_nearest(pj * mine[k - 1], g["other_lo"], g["other_hi"])[0])
    return mine, theirs


def _guessing_rules(g: Mapping[str, int]) -> str:
    return (
        f"Your guess must be an integer from {g['own_lo']} to {g['own_hi']} and your target is "
        f"{_fmt_p(g['own_p'])} times your partner\u2019s guess; your partner\u2019s guess must "
        f"be an integer from {g['other_lo']} to {g['other_hi']} and its target is "
        f"{_fmt_p(g['other_p'])} times your guess."
    )


def _guessing(rng: np.random.Generator) -> _Scenario:
    while True:
        g = _guessing_game(rng)
        mine, theirs = _guessing_levels(g)
        if len(set(mine[1:])) == 3:
            break
    pi, pj = Fraction(g["own_p"], 100), Fraction(g["other_p"], 100)
    lo_i, hi_i, lo_j, hi_j = g["own_lo"], g["own_hi"], g["other_lo"], g["other_hi"]
    mix = _draw_mix(rng)
    mean = Fraction(mix[0], 100) * Fraction(lo_j + hi_j, 2) + sum(
        (Fraction(mix[k], 100) * theirs[k] for k in (1, 2, 3)), Fraction(0))
    a_truth = _nearest(pi * mean, lo_i, hi_i)
    b_points = tuple(
        x for x in range(lo_i, hi_i + 1)
        if any(x in _nearest(pi * y, lo_i, hi_i) for y in _nearest(pj * x, lo_j, hi_j))
    )
    size = _int(rng, 15, 40)
    assigned, history, realised = _population(rng, size, (lo_j, hi_j), theirs)
    labels, ranges = _labels_for((lo_j, hi_j), True)
    intro = (
        "You and a partner each simultaneously guess a number. " + _guessing_rules(g)
        + " Each player loses points equal to the square of the distance between their own "
        "guess and their own target, so the closer to the target, the better.\n\n"
        "Your partner is a scripted bot of a fixed level. A level-0 bot guesses an integer "
        "uniformly at random within its own limits. "
        + _LEVEL_RULE_SINGULAR
    )
    extra: dict[str, Any] = {"inference": _inference_task(rng)}
    return _Scenario(
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
    level = _int(rng, 0, 3)
    while True:
        specs = [_guessing_game(rng) for _ in range(games)]
        # the bot sits in the "own" role of each game
        predicted = [[_guessing_levels(g)[0][k] for g in specs] for k in (1, 2, 3)]
        if len({tuple(p) for p in predicted}) < 3:
            continue
        if level == 0:
            guesses = [_int(rng, g["own_lo"], g["own_hi"]) for g in specs]
        else:
            guesses = predicted[level - 1]
        matching = [k for k in (1, 2, 3) if predicted[k - 1] == guesses]
        if (level == 0 and not matching) or matching == [level]:
            return {"level": level, "games": specs, "guesses": guesses,
                    "predicted": {str(k): predicted[k - 1] for k in (1, 2, 3)}}


_BUILDERS = {"beauty": _beauty, "11-20": _eleven_twenty, "guessing": _guessing}


SCENARIO_ATTEMPTS = 40
"""Draws per scenario seed before settling for one whose A, B and C truths coincide."""


@lru_cache(maxsize=64)
def _scenario(seed: int, kind: str) -> _Scenario:
    """The scenario of ``seed``: the first draw whose A, B and C truths differ (seed 002's
    point is to keep them apart), else the last of :data:`SCENARIO_ATTEMPTS` draws."""
    if kind not in _BUILDERS:
        raise InputError(f"unknown A/B/C kind {kind!r}; known: {', '.join(ABC_KINDS)}",
                         where="kind")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xABC]))
    for _ in range(SCENARIO_ATTEMPTS):
        sc = _BUILDERS[kind](rng)
        if _differ(sc):
            break
    return sc


# -- items --------------------------------------------------------------------------------


def _history_text(sc: _Scenario) -> str:
    lines = [f"Round {r + 1}: {list(choices)}" for r, choices in enumerate(sc.history)]
    return "\n".join(lines)


def _differ(sc: _Scenario) -> bool:
    counts = _label_counts(sc)
    top = max(counts.values())
    modes = {lab for lab, c in counts.items() if c == top}
    a_labels = {sc.label_of(a) for a in sc.a_truth if sc.bot_space[0] <= a <= sc.bot_space[1]}
    b_labels = {sc.label_of(b) for b in sc.b_points if sc.bot_space[0] <= b <= sc.bot_space[1]}
    return (not set(sc.a_truth) & set(sc.b_points)) and not (a_labels | b_labels) & modes


def _label_counts(sc: _Scenario) -> dict[str, int]:
    counts = {lab: 0 for lab in sc.labels}
    for v in sc.realised:
        counts[sc.label_of(v)] += 1
    return counts


def _inference_line(index: int, g: Mapping[str, int], guess: int) -> str:
    return (
        f"Game {index}: the bot's guess had to be an integer from {g['own_lo']} to "
        f"{g['own_hi']} with target {_fmt_p(g['own_p'])} times the other player's guess; the "
        f"other player's guess had to be an integer from {g['other_lo']} to {g['other_hi']} "
        f"with target {_fmt_p(g['other_p'])} times the bot's guess. The bot guessed {guess}."
    )


def _prompt_a(sc: _Scenario) -> str:
    if sc.kind == "beauty":
        who = f"each of the other players is, independently, {_fmt_mix(sc.mix, 'bot')}"
    elif sc.kind == "11-20":
        who = f"your opponent is {_fmt_mix(sc.mix, 'bot')}"
    else:
        who = f"your partner is {_fmt_mix(sc.mix, 'bot')}"
    return (
        f"{sc.intro}\n\nSuppose {who}. Which integer maximizes your expected payoff (that is, "
        "gives you the best expected outcome)?"
    )


def _prompt_b(sc: _Scenario) -> str:
    head = (f"{sc.intro}\n\nNow forget the bots: suppose instead that all players are fully "
            "rational and this is common knowledge.")
    if sc.kind == "11-20":
        return (head + " Give a symmetric Nash equilibrium of this game (it may be in mixed "
                "strategies): the probability with which each player requests each amount.")
    if sc.kind == "beauty":
        return (head + " In a symmetric Nash equilibrium every player chooses the same "
                "number. Which integer is it? If there are several, give any one.")
    return (head + " Which integer do you guess in a Nash equilibrium of this game? If there "
            "are several, give any one.")


def _prompt_c(sc: _Scenario) -> str:
    if sc.kind == "beauty":
        who = f"The other {len(sc.realised)} players are always the same bots"
    elif sc.kind == "11-20":
        who = (f"Your opponent is drawn at random from a population of {len(sc.realised)} "
               "bots")
    else:
        who = (f"Your partner is drawn at random from a population of {len(sc.realised)} "
               "bots, all playing in the partner's role")
    return (
        f"{sc.intro}\n\n{who}. Each bot keeps its level from round to round; level-0 bots "
        f"draw afresh every round. In the previous {len(sc.history)} rounds the bots chose:\n"
        f"{_history_text(sc)}\n\nPredict the coming round: give, for each of the following "
        "choices, the probability that a randomly picked bot chooses it (the probabilities "
        "sum to 1): " + ", ".join(sc.labels) + "."
    )


def _prompt_k(sc: _Scenario) -> str:
    task = sc.extra["inference"]
    lines = [_inference_line(i + 1, g, guess)
             for i, (g, guess) in enumerate(zip(task["games"], task["guesses"], strict=True))]
    return (
        f"{sc.intro}\n\nA different scripted bot of a fixed level (0, 1, 2 or 3, levels as "
        "defined above) played the following guessing games, each against a different "
        "player:\n" + "\n".join(lines) + "\n\nWhat is this bot's level?"
    )


def make_abc_item(seed: int, params: Mapping[str, Any]) -> Item:
    """One A/B/C/K item from its scenario seed and ``{"kind", "question"}``; the questions
    about the run's own LLM population (``"play"``, ``"C-llm"``) are
    :func:`make_population_item`'s."""
    kind = params.get("kind")
    question = params.get("question")
    if question in POPULATION_QUESTIONS:
        return make_population_item(seed, params)
    sc = _scenario(seed, str(kind))
    if question not in _QUESTIONS[sc.kind]:
        raise InputError(f"question must be one of {_QUESTIONS[sc.kind]} for {kind}",
                         where="question")
    scenario_id = content_hash({"generator": ABC_GENERATOR, "kind": kind, "seed": seed})[7:23]
    own_lo, own_hi = sc.own_space
    counts = _label_counts(sc)
    truth: dict[str, Any] = {
        "level_actions": list(sc.bot_levels[1:]),
        "own_level_actions": list(sc.own_levels[1:]),
        "a_best_responses": list(sc.a_truth),
        "equilibria": list(sc.b_points),
        "mixed_equilibria": [list(e) for e in sc.b_mixed],
        "labels": list(sc.labels),
        "label_ranges": [list(r) for r in sc.label_ranges],
        "realised": list(sc.realised),
        "realised_counts": counts,
        "population_levels": list(sc.population_levels),
        "abc_differ": _differ(sc),
        "stated_mix": list(sc.mix),
    }
    answer: dict[str, Any]
    if question == "A":
        prompt = _prompt_a(sc)
        answer = {"kind": "integer", "min": own_lo, "max": own_hi}
        truth["target_action"] = list(sc.a_truth)
    elif question == "B":
        prompt = _prompt_b(sc)
        if sc.kind == "11-20":
            answer = {"kind": "distribution", "choices": list(sc.labels)}
        else:
            answer = {"kind": "integer", "min": own_lo, "max": own_hi}
        truth["target_action"] = list(sc.b_points)
    elif question == "C":
        prompt = _prompt_c(sc)
        answer = {"kind": "distribution", "choices": list(sc.labels)}
        top = max(counts.values())
        truth["target_action"] = [lab for lab in sc.labels if counts[lab] == top]
    else:
        prompt = _prompt_k(sc)
        answer = {"kind": "choice", "choices": ["0", "1", "2", "3"]}
        truth["target_action"] = str(sc.extra["inference"]["level"])
        truth["inference"] = copy.deepcopy(sc.extra["inference"])
    meta = {
        "game": _GAME_NAMES[sc.kind],
        "kind": sc.kind,
        "question": question,
        "scenario": scenario_id,
        "condition": "abc",
        "variant": True,
        "game_params": dict(sc.params),
    }
    return Item(
        family="games",
        generator=ABC_GENERATOR,
        version=ABC_VERSION,
        seed=seed,
        params={"kind": sc.kind, "question": question},
        prompt=prompt,
        answer=answer,
        truth=truth,
        meta=meta,
    )


def make_abc_scenario(seed: int, kind: str) -> list[Item]:
    """The A, B, C (and, for guessing games, K) items of one scenario."""
    return [make_abc_item(seed, {"kind": kind, "question": q}) for q in _QUESTIONS[kind]]


def generate_abc_items(
    seed: int, n: int, *, kinds: Sequence[str] = ABC_KINDS
) -> list[Item]:
    """Items for ``n`` scenarios (3–4 items each), kinds in rotation, deterministic by seed."""
    for k in kinds:
        if k not in ABC_KINDS:
            raise InputError(f"unknown A/B/C kind {k!r}; known: {', '.join(ABC_KINDS)}",
                             where="kinds")
    items: list[Item] = []
    for i in range(n):
        sub = int(np.random.SeedSequence([seed, 0x5CE, i]).generate_state(1)[0])
        items.extend(make_abc_scenario(sub, kinds[i % len(kinds)]))
    return items


# -- the run's own LLM population ----------------------------------------------------------


def _population_scenario_id(seed: int, kind: str) -> str:
    return content_hash({"generator": ABC_GENERATOR, "kind": kind, "seed": seed,
                         "population": "llm"})[7:23]


def _population_text(sc: _Scenario, samples: int) -> str:
    """The paragraph that says, truthfully, who the players are."""
    plays = f"{samples} time{'s' if samples != 1 else ''}"
    agents = ("the agents evaluated in this run (AI agents, and possibly scripted reference "
              f"players), each of which plays this game {plays}, each time in a new "
              "conversation")
    if sc.kind == "beauty":
        return (f"The other {sc.params['players'] - 1} players are drawn at random from the "
                f"choices of {agents}.")
    return f"Your opponent is drawn at random from the requests of {agents}."


def _prompt_play(sc: _Scenario, sample: int, samples: int) -> str:
    ask = ("Which integer do you choose?" if sc.kind == "beauty"
           else "Which amount do you request?")
    return (f"{sc.extra['rules']}\n\n{_population_text(sc, samples)} This is play "
            f"{sample + 1} of {samples}. {ask}")


def _prompt_c_llm(sc: _Scenario, samples: int) -> str:
    who = "choose" if sc.kind == "beauty" else "request"
    return (
        f"{sc.extra['rules']}\n\n{_population_text(sc, samples)}\n\nPredict what the other "
        f"agents {who} (your own plays are not counted): give, for each of the following "
        "choices, the probability that a randomly picked play of theirs falls in it (the "
        "probabilities sum to 1): " + ", ".join(sc.labels) + "."
    )


def _count(params: Mapping[str, Any], key: str, default: int) -> int:
    v = params.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InputError(f"{key} must be a whole number of at least 1, got {v!r}", where=key)
    return v


def make_population_item(seed: int, params: Mapping[str, Any]) -> Item:
    """A question about the run's own LLM population (seed 002 §15.1: condition C against
    "LLM populations") from its scenario seed and params:

    - ``{"kind", "question": "play", "sample": i, "samples": K}`` — the game's own move
      question, the ``i``-th of ``K`` plays (0 ≤ i < K). Every agent of the run answers it, so
      the run's agents form the population. The prompt says which play it is: the response
      cache keys on the whole request, so ``K`` identical prompts would be one answer ``K``
      times.
    - ``{"kind", "question": "C-llm", "samples": K}`` — condition C against that population:
      the predicted distribution of the other agents' plays, in the scripted C's answer
      format. Its truth holds no realised choices (they do not exist when the item is drawn);
      :func:`population_prediction_scores` scores it at report time.

    ``kind`` is one of :data:`POPULATION_KINDS`; ``K`` defaults to :data:`POPULATION_SAMPLES`.
    The game is the scripted scenario of the same seed (:func:`make_abc_scenario`), without
    its bots.
    """
    kind = params.get("kind")
    question = params.get("question")
    if kind not in POPULATION_KINDS:
        raise InputError(f"kind must be one of {POPULATION_KINDS} for an LLM-population "
                         f"question, got {kind!r}", where="kind")
    if question not in POPULATION_QUESTIONS:
        raise InputError(f"question must be one of {POPULATION_QUESTIONS}, got {question!r}",
                         where="question")
    samples = _count(params, "samples", POPULATION_SAMPLES)
    sc = _scenario(seed, str(kind))
    lo, hi = sc.own_space
    truth: dict[str, Any] = {
        "population": "llm",
        "samples": samples,
        "level_actions": list(sc.bot_levels[1:]),
        "own_level_actions": list(sc.own_levels[1:]),
        "equilibria": list(sc.b_points),
        "mixed_equilibria": [list(e) for e in sc.b_mixed],
        "labels": list(sc.labels),
        "label_ranges": [list(r) for r in sc.label_ranges],
    }
    meta: dict[str, Any] = {
        "game": _GAME_NAMES[sc.kind],
        "kind": sc.kind,
        "question": question,
        "scenario": _population_scenario_id(seed, str(kind)),
        "condition": "abc-llm",
        "population": "llm",
        "samples": samples,
        "variant": True,
        "game_params": dict(sc.params),
        "labels": list(sc.labels),
    }
    out_params: dict[str, Any] = {"kind": sc.kind, "question": question, "samples": samples}
    answer: dict[str, Any]
    if question == "play":
        sample = params.get("sample")
        if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < samples:
            raise InputError(f"sample must be a whole number from 0 to {samples - 1}, got "
                             f"{sample!r}", where="sample")
        prompt = _prompt_play(sc, sample, samples)
        answer = {"kind": "integer", "min": lo, "max": hi}
        meta["sample"] = sample
        out_params["sample"] = sample
    else:
        prompt = _prompt_c_llm(sc, samples)
        answer = {"kind": "distribution", "choices": list(sc.labels)}
    return Item(family="games", generator=ABC_GENERATOR, version=ABC_VERSION, seed=seed,
                params=out_params, prompt=prompt, answer=answer, truth=truth, meta=meta)


def make_population_scenario(seed: int, kind: str, samples: int = POPULATION_SAMPLES) -> list[
    Item
]:
    """The ``samples`` play items and the C-llm item of one LLM-population scenario."""
    plays = [make_population_item(seed, {"kind": kind, "question": "play", "sample": i,
                                         "samples": samples}) for i in range(samples)]
    return [*plays, make_population_item(seed, {"kind": kind, "question": "C-llm",
                                                "samples": samples})]


def generate_population_items(
    seed: int, n: int, *, kinds: Sequence[str] = POPULATION_KINDS,
    samples: int = POPULATION_SAMPLES,
) -> list[Item]:
    """Items for ``n`` LLM-population scenarios (``samples`` + 1 items each), kinds in
    rotation, deterministic by seed; a stream of the seed apart from
    :func:`generate_abc_items`'."""
    for k in kinds:
        if k not in POPULATION_KINDS:
            raise InputError(f"unknown LLM-population kind {k!r}; known: "
                             f"{', '.join(POPULATION_KINDS)}", where="kinds")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"samples must be a whole number of at least 1, got {samples!r}",
                         where="samples")
    items: list[Item] = []
    for i in range(n):
        sub = int(np.random.SeedSequence([seed, 0x909, i]).generate_state(1)[0])
        items.extend(make_population_scenario(sub, kinds[i % len(kinds)], samples))
    return items


def population_prediction_scores(
    prediction: Sequence[float], labels: Sequence[str], counts: Mapping[str, int]
) -> dict[str, Any]:
    """A C prediction scored against a population's realised choices (pure): the mean log
    score (the probability floored at :data:`LOG_FLOOR`, as for a scripted population), the
    mean Brier score, the uniform prediction's two, and ``top1`` — whether the prediction has a
    unique most likely choice and it is a modal choice of the population (the scripted C's
    ``correct``). ``counts`` maps labels to how many plays fell in them (at least one)."""
    if len(prediction) != len(labels):
        raise ValueError("one probability per label")
    out = _distribution_scores(prediction, {"labels": list(labels), "realised_counts": counts})
    top = max(counts.values())
    modes = {lab for lab, c in counts.items() if c == top}
    best = max(prediction)
    predicted = [lab for lab, p in zip(labels, prediction, strict=True) if p == best]
    out["top1"] = len(predicted) == 1 and predicted[0] in modes
    out["population_modes"] = sorted(modes, key=list(labels).index)
    return out


# -- scoring ------------------------------------------------------------------------------


def _parse_int(answer: Any) -> int | None:
    if isinstance(answer, Mapping):
        answer = answer.get("answer", answer.get("action"))
    if isinstance(answer, bool) or answer is None:
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, float) and math.isfinite(answer) and answer.is_integer():
        return int(answer)
    if isinstance(answer, str):
        try:
            return int(answer.strip())
        except ValueError:
            return None
    return None


def _read_distribution(
    answer: Any, choices: Sequence[str], details: dict[str, Any], codes: list[str]
) -> tuple[list[float], list[str]] | None:
    """Parse a distribution ``answer`` over ``choices`` into ``details`` (the parse note, the
    prediction and its single mode, if any): the probabilities and the modal labels, or None
    with ``no_action``/``invalid_action`` added to ``codes``."""
    probs, note = _parse_distribution(answer, choices)
    details["parse"] = note
    if probs is None:
        codes.append("no_action" if answer is None else "invalid_action")
        return None
    details["prediction"] = probs
    top = max(probs)
    modes = [lab for lab, p in zip(choices, probs, strict=True) if p == top]
    details["predicted_mode"] = modes[0] if len(modes) == 1 else None
    return probs, modes


def _parse_distribution(answer: Any, labels: Sequence[str]) -> tuple[list[float] | None, str]:
    if isinstance(answer, Mapping) and "distribution" in answer:
        answer = answer["distribution"]
    probs: list[float]
    if isinstance(answer, Mapping):
        index = {lab: i for i, lab in enumerate(labels)}
        probs = [0.0] * len(labels)
        for key, w in answer.items():
            if str(key) not in index:
                return None, f"unknown choice {key!r}"
            if not isinstance(w, int | float) or isinstance(w, bool):
                return None, f"probability for {key!r} is not a number"
            probs[index[str(key)]] += float(w)
    elif isinstance(answer, Sequence) and not isinstance(answer, str):
        if len(answer) != len(labels):
            return None, "wrong number of probabilities"
        if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in answer):
            return None, "probabilities must be numbers"
        probs = [float(w) for w in answer]
    else:
        return None, "no distribution"
    if any(not math.isfinite(w) or w < 0 for w in probs):
        return None, "probabilities must be finite and non-negative"
    total = sum(probs)
    if total <= 0:
        return None, "probabilities sum to zero"
    note = "renormalised" if abs(total - 1) > 0.01 else "ok"
    return [w / total for w in probs], note


def _distribution_scores(probs: Sequence[float], truth: Mapping[str, Any]) -> dict[str, Any]:
    labels: list[str] = truth["labels"]
    counts: Mapping[str, int] = truth["realised_counts"]
    n = sum(counts.values())
    index = {lab: i for i, lab in enumerate(labels)}
    log_score = 0.0
    brier = 0.0
    zero_hits = 0
    for lab, c in counts.items():
        if not c:
            continue
        p = probs[index[lab]]
        zero_hits += c if p == 0 else 0
        log_score += c * math.log(max(p, LOG_FLOOR))
        brier += c * (sum(q * q for q in probs) - 2 * p + 1)
    uniform = 1.0 / len(labels)
    return {
        "log_score": log_score / n,
        "brier": brier / n,
        "uniform_log_score": math.log(uniform),
        "uniform_brier": 1 - uniform,
        "zero_probability_hits": zero_hits,
        "n_realised": n,
    }


def score_abc_answer(item: Item, answer: Any) -> Score:
    """Score an answer to an A/B/C/K item (pure).

    A and B (integer): correct when the answer is one of the exact best responses /
    equilibrium choices. B (distribution, 11–20): correct when its total-variation distance to
    an exact symmetric equilibrium is at most :data:`B_TOLERANCE`. C: correct when the
    prediction has a unique most likely choice and it is a modal choice of the realised
    population; details carry the log score and Brier score against the realised choices (and
    the uniform prediction's, for reference). K: correct when the stated level is the bot's.

    The LLM-population questions (:func:`make_population_item`) cannot be judged one answer at
    a time: their ``correct`` is None and ``details["status"]`` says why — ``"population_play"``
    for a play (``details["label"]`` is the answer range it falls in, None when the answer is
    not a valid number), ``"pending_population"`` for a C-llm prediction (``details
    ["prediction"]`` is scored at report time by :func:`population_prediction_scores`); their
    ``value`` is 0 and means nothing.
    """
    q = item.meta["question"]
    if q in POPULATION_QUESTIONS:
        return _score_population_answer(item, answer)
    truth = item.truth
    spec = item.answer
    details: dict[str, Any] = {"question": q, "scenario": item.meta.get("scenario"),
                               "abc_differ": truth.get("abc_differ")}
    correct = False
    codes: list[str] = []
    if spec["kind"] == "integer":
        value = _parse_int(answer)
        details["answer"] = value
        if value is None:
            codes.append("no_action" if answer is None else "invalid_action")
        else:
            correct = value in truth["target_action"]
            levels = truth["own_level_actions"]
            details["matches_level"] = [k + 1 for k, a in enumerate(levels) if a == value]
            details["is_equilibrium"] = value in truth["equilibria"]
            details["is_best_response_to_mix"] = value in truth["a_best_responses"]
            details["distance"] = min(abs(value - t) for t in truth["target_action"])
            if not correct:
                if q == "A" and details["is_equilibrium"]:
                    codes.append("answered_equilibrium")
                elif q == "B" and details["is_best_response_to_mix"]:
                    codes.append("answered_best_response")
                codes.append("wrong_value")
    elif spec["kind"] == "distribution":
        read = _read_distribution(answer, spec["choices"], details, codes)
        if read is not None:
            probs, modes = read
            if q == "B":
                tvs = [0.5 * sum(abs(a - b) for a, b in zip(probs, e, strict=True))
                       for e in truth["mixed_equilibria"]]
                details["tv_distance"] = min(tvs) if tvs else None
                correct = bool(tvs) and min(tvs) <= B_TOLERANCE
            else:
                details.update(_distribution_scores(probs, truth))
                correct = len(modes) == 1 and modes[0] in truth["target_action"]
            if not correct:
                codes.append("wrong_distribution")
    else:
        chosen = answer.get("answer") if isinstance(answer, Mapping) else answer
        label = None if chosen is None else str(chosen).strip()
        details["answer"] = label
        if not label:
            codes.append("no_action")
        else:
            correct = label == truth["target_action"]
            if not correct:
                codes.append("wrong_level")
    return Score(correct=correct, value=1.0 if correct else 0.0, error_codes=tuple(codes),
                 primary_error=codes[0] if codes else None, details=details)


def _score_population_answer(item: Item, answer: Any) -> Score:
    q = item.meta["question"]
    truth = item.truth
    details: dict[str, Any] = {"question": q, "scenario": item.meta.get("scenario"),
                               "population": "llm"}
    codes: list[str] = []
    if q == "play":
        details["status"] = "population_play"
        details["sample"] = item.meta.get("sample")
        value = _parse_int(answer)
        lo, hi = item.answer["min"], item.answer["max"]
        if value is not None and not lo <= value <= hi:
            value = None
            codes.append("out_of_range")
        details["answer"] = value
        details["label"] = None
        if value is None:
            if not codes:
                codes.append("no_action" if answer is None else "invalid_action")
        else:
            ranges = truth["label_ranges"]
            hit = next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)
            details["label"] = truth["labels"][hit]
            details["matches_level"] = [
                k + 1 for k, a in enumerate(truth["own_level_actions"]) if a == value]
            details["is_equilibrium"] = value in truth["equilibria"]
    else:
        details["status"] = "pending_population"
        _read_distribution(answer, item.answer["choices"], details, codes)
    return Score(correct=None, value=0.0, error_codes=tuple(codes),
                 primary_error=codes[0] if codes else None, details=details)


def summarize_abc(pairs: Iterable[tuple[Item, Score]]) -> dict[str, Any]:
    """Per-question accuracy and the separation figure.

    ``separation`` is the fraction of scenarios whose A, B and C truths differ
    (``truth["abc_differ"]``) in which the agent answered all three correctly; since the
    truths differ, correct answers are necessarily distinct. Also reports K accuracy and the
    mean log and Brier scores of C. LLM-population questions are left out (they are scored
    against a whole run's answers, by the profile).
    """
    by_scenario: dict[str, dict[str, bool]] = {}
    differ: dict[str, bool] = {}
    per_q: dict[str, list[bool]] = {}
    logs: list[float] = []
    briers: list[float] = []
    for item, score in pairs:
        q = str(item.meta["question"])
        if q in POPULATION_QUESTIONS or score.correct is None:
            continue  # scored against the run's population at report time
        sid = str(item.meta["scenario"])
        by_scenario.setdefault(sid, {})[q] = score.correct
        differ[sid] = bool(item.truth.get("abc_differ"))
        per_q.setdefault(q, []).append(score.correct)
        if q == "C" and "log_score" in score.details:
            logs.append(float(score.details["log_score"]))
            briers.append(float(score.details["brier"]))
    eligible = [sid for sid, qs in by_scenario.items()
                if differ[sid] and all(x in qs for x in "ABC")]
    separated = [sid for sid in eligible if all(by_scenario[sid][x] for x in "ABC")]
    return {
        "scenarios": len(by_scenario),
        "separation": {
            "n": len(eligible),
            "correct": len(separated),
            "rate": (len(separated) / len(eligible)) if eligible else None,
        },
        "accuracy": {q: {"n": len(v), "rate": sum(v) / len(v)} for q, v in sorted(per_q.items())},
        "c_log_score": {"n": len(logs), "mean": (sum(logs) / len(logs)) if logs else None},
        "c_brier": {"n": len(briers), "mean": (sum(briers) / len(briers)) if briers else None},
    }


# -- reference answers ---------------------------------------------------------------------


def abc_reference(item: Item, name: str, arg: int | None, rng: np.random.Generator) -> Any:
    """Reference answers on A/B/C/K items (see :func:`games._reference.reference_answer`).

    ``oracle`` gives the exact answer (for C, the realised frequencies); ``random`` a uniform
    draw (a Dirichlet(1) distribution for distribution answers). ``level:K`` (and
    ``depth-capped:N``, the same with K = N) is a scripted level-K reasoner (K capped at 3):
    on A and B it plays its own level-K action (a uniform draw at level 0; a point mass on
    the action for a distribution answer); it believes everyone else is level K−1, so on C it
    predicts a point mass on the level-(K−1) bots' action (uniform for K ≤ 1) and on K items
    it answers K−1.

    On the LLM-population questions ``level:K`` plays its level-K action and predicts C-llm as
    C; ``oracle`` plays an equilibrium action (for 11–20 a draw from the mixed equilibrium)
    and, since no one knows the population's plays when the item is answered, predicts a
    uniform C-llm distribution.
    """
    spec = item.answer
    truth = item.truth
    q = item.meta["question"]
    labels: list[str] = list(spec.get("choices", []))
    if q == "C-llm":
        q = "C"
        if name == "oracle":
            return {lab: 1.0 / len(labels) for lab in labels}
    elif q == "play" and name == "oracle":
        mixed = truth["mixed_equilibria"]
        if mixed:
            w = np.asarray(mixed[0], dtype=float)
            return int(spec["min"]) + int(rng.choice(w.size, p=w / w.sum()))
        if truth["equilibria"]:
            return truth["equilibria"][0]
        return _int(rng, spec["min"], spec["max"])
    if name == "oracle":
        if spec["kind"] == "integer":
            return truth["target_action"][0]
        if spec["kind"] == "choice":
            return truth["target_action"]
        if q == "B":
            return dict(zip(labels, truth["mixed_equilibria"][0], strict=True))
        counts = truth["realised_counts"]
        total = sum(counts.values())
        return {lab: c / total for lab, c in counts.items()}
    if name == "random":
        if spec["kind"] == "integer":
            return _int(rng, spec["min"], spec["max"])
        if spec["kind"] == "choice":
            return labels[int(rng.integers(len(labels)))]
        w = rng.dirichlet([1.0] * len(labels))
        return {lab: float(p) for lab, p in zip(labels, w, strict=True)}
    assert arg is not None
    level = min(arg, 3)
    if spec["kind"] == "choice":
        return str(max(level - 1, 0))
    if q == "C":
        believed = level - 1
        if believed <= 0:
            return {lab: 1.0 / len(labels) for lab in labels}
        return _point_mass(labels, truth["label_ranges"], truth["level_actions"][believed - 1])
    if spec["kind"] == "integer":
        if level == 0:
            return _int(rng, spec["min"], spec["max"])
        return truth["own_level_actions"][level - 1]
    if level == 0:
        return {lab: 1.0 / len(labels) for lab in labels}
    return _point_mass(labels, truth["label_ranges"], truth["own_level_actions"][level - 1])


def _point_mass(labels: Sequence[str], ranges: Sequence[Sequence[int]], value: int) -> dict[
    str, float
]:
    hit = next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)
    return {lab: (1.0 if i == hit else 0.0) for i, lab in enumerate(labels)}
