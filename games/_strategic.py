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

The scenarios and their exact answers are drawn in :mod:`games._strategic_scenarios`; answers
are scored in :mod:`games._strategic_scoring`.

**How many scenarios** (issue 15). :func:`generate_abc_items` rotates the kinds, so ``n``
scenarios hold ``n // 3`` guessing scenarios, each with one K item. For 95% intervals narrower
than ±15 points: K accuracy (a Wilson interval, widest at 0.5) needs 39 items; A − B and B − C
(paired by scenario, Newcombe's paired interval) need 82 scenarios at accuracies near 0.5 with
independent answers, 120 for discordance up to 0.72. ``baseline`` draws 120 scenarios (40 K
items, 400 items in all).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from games._strategic_scenarios import (
    ABC_KINDS,
    Scenario,
    abc_differ,
    draw_int,
    fmt_mix,
    fmt_p,
    label_counts,
    scenario_of,
)
from mindledger.canonical import content_hash
from mindledger.errors import InputError
from mindledger.items import Item

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
]

ABC_GENERATOR = "games.abc"
"""Generator name stored in every A/B/C item (the module's former name); never change it."""
ABC_VERSION = "1"
_GAME_NAMES = {
    "beauty": "beauty-contest",
    "11-20": "11-20-variant",
    "guessing": "asymmetric-guessing",
}
_QUESTIONS = {"beauty": ("A", "B", "C"), "11-20": ("A", "B", "C"), "guessing": ("A", "B", "C", "K")}
POPULATION_KINDS: tuple[str, ...] = ("beauty", "11-20")
"""Games with an LLM-population condition C (seed 002 §15.1; not the two-role guessing games)."""
POPULATION_QUESTIONS: tuple[str, ...] = ("play", "C-llm")
POPULATION_SAMPLES = 5
"""K: how many times each agent of the run plays an LLM-population scenario."""
POPULATION_MIN_ANSWERS = 5
"""Fewest valid plays of the other agents (one agent's K plays) against which a C-llm
prediction is scored; below it the scenario is not estimable for that predictor."""


# -- items --------------------------------------------------------------------------------
def _history_text(sc: Scenario) -> str:
    lines = [f"Round {r + 1}: {list(choices)}" for r, choices in enumerate(sc.history)]
    return "\n".join(lines)


def _inference_line(index: int, g: Mapping[str, int], guess: int) -> str:
    return (
        f"Game {index}: the bot's guess had to be an integer from {g['own_lo']} to "
        f"{g['own_hi']} with target {fmt_p(g['own_p'])} times the other player's guess; the "
        f"other player's guess had to be an integer from {g['other_lo']} to {g['other_hi']} "
        f"with target {fmt_p(g['other_p'])} times the bot's guess. The bot guessed {guess}."
    )


def _prompt_a(sc: Scenario) -> str:
    if sc.kind == "beauty":
        who = f"each of the other players is, independently, {fmt_mix(sc.mix, 'bot')}"
    elif sc.kind == "11-20":
        who = f"your opponent is {fmt_mix(sc.mix, 'bot')}"
    else:
        who = f"your partner is {fmt_mix(sc.mix, 'bot')}"
    return (
        f"{sc.intro}\n\nSuppose {who}. Which integer maximizes your expected payoff (that is, "
        "gives you the best expected outcome)?"
    )


def _prompt_b(sc: Scenario) -> str:
    head = (
        f"{sc.intro}\n\nNow forget the bots: suppose instead that all players are fully "
        "rational and this is common knowledge."
    )
    if sc.kind == "11-20":
        return (
            head + " Give a symmetric Nash equilibrium of this game (it may be in mixed "
            "strategies): the probability with which each player requests each amount."
        )
    if sc.kind == "beauty":
        return (
            head + " In a symmetric Nash equilibrium every player chooses the same "
            "number. Which integer is it? If there are several, give any one."
        )
    return (
        head + " Which integer do you guess in a Nash equilibrium of this game? If there "
        "are several, give any one."
    )


def _prompt_c(sc: Scenario) -> str:
    if sc.kind == "beauty":
        who = f"The other {len(sc.realised)} players are always the same bots"
    elif sc.kind == "11-20":
        who = f"Your opponent is drawn at random from a population of {len(sc.realised)} bots"
    else:
        who = (
            f"Your partner is drawn at random from a population of {len(sc.realised)} "
            "bots, all playing in the partner's role"
        )
    return (
        f"{sc.intro}\n\n{who}. Each bot keeps its level from round to round; level-0 bots "
        f"draw afresh every round. In the previous {len(sc.history)} rounds the bots chose:\n"
        f"{_history_text(sc)}\n\nPredict the coming round: give, for each of the following "
        "choices, the probability that a randomly picked bot chooses it (the probabilities "
        "sum to 1): " + ", ".join(sc.labels) + "."
    )


def _prompt_k(sc: Scenario) -> str:
    task = sc.extra["inference"]
    lines = [
        _inference_line(i + 1, g, guess)
        for i, (g, guess) in enumerate(zip(task["games"], task["guesses"], strict=True))
    ]
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
    sc = scenario_of(seed, str(kind))
    if question not in _QUESTIONS[sc.kind]:
        raise InputError(
            f"question must be one of {_QUESTIONS[sc.kind]} for {kind}", where="question"
        )
    scenario_id = content_hash({"generator": ABC_GENERATOR, "kind": kind, "seed": seed})[7:23]
    own_lo, own_hi = sc.own_space
    counts = label_counts(sc)
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
        "abc_differ": abc_differ(sc),
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


def generate_abc_items(seed: int, n: int, *, kinds: Sequence[str] = ABC_KINDS) -> list[Item]:
    """Items for ``n`` scenarios (3–4 items each), kinds in rotation, deterministic by seed."""
    for k in kinds:
        if k not in ABC_KINDS:
            raise InputError(
                f"unknown A/B/C kind {k!r}; known: {', '.join(ABC_KINDS)}", where="kinds"
            )
    items: list[Item] = []
    for i in range(n):
        sub = int(np.random.SeedSequence([seed, 0x5CE, i]).generate_state(1)[0])
        items.extend(make_abc_scenario(sub, kinds[i % len(kinds)]))
    return items


# -- the run's own LLM population ----------------------------------------------------------


def _population_scenario_id(seed: int, kind: str) -> str:
    return content_hash(
        {"generator": ABC_GENERATOR, "kind": kind, "seed": seed, "population": "llm"}
    )[7:23]


def _population_text(sc: Scenario, samples: int) -> str:
    """The paragraph that says, truthfully, who the players are."""
    plays = f"{samples} time{'s' if samples != 1 else ''}"
    agents = (
        "the agents evaluated in this run (AI agents, and possibly scripted reference "
        f"players), each of which plays this game {plays}, each time in a new "
        "conversation"
    )
    if sc.kind == "beauty":
        return (
            f"The other {sc.params['players'] - 1} players are drawn at random from the "
            f"choices of {agents}."
        )
    return f"Your opponent is drawn at random from the requests of {agents}."


def _prompt_play(sc: Scenario, sample: int, samples: int) -> str:
    ask = "Which integer do you choose?" if sc.kind == "beauty" else "Which amount do you request?"
    return (
        f"{sc.extra['rules']}\n\n{_population_text(sc, samples)} This is play "
        f"{sample + 1} of {samples}. {ask}"
    )


def _prompt_c_llm(sc: Scenario, samples: int) -> str:
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
        raise InputError(
            f"kind must be one of {POPULATION_KINDS} for an LLM-population question, got {kind!r}",
            where="kind",
        )
    if question not in POPULATION_QUESTIONS:
        raise InputError(
            f"question must be one of {POPULATION_QUESTIONS}, got {question!r}", where="question"
        )
    samples = _count(params, "samples", POPULATION_SAMPLES)
    sc = scenario_of(seed, str(kind))
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
            raise InputError(
                f"sample must be a whole number from 0 to {samples - 1}, got {sample!r}",
                where="sample",
            )
        prompt = _prompt_play(sc, sample, samples)
        answer = {"kind": "integer", "min": lo, "max": hi}
        meta["sample"] = sample
        out_params["sample"] = sample
    else:
        prompt = _prompt_c_llm(sc, samples)
        answer = {"kind": "distribution", "choices": list(sc.labels)}
    return Item(
        family="games",
        generator=ABC_GENERATOR,
        version=ABC_VERSION,
        seed=seed,
        params=out_params,
        prompt=prompt,
        answer=answer,
        truth=truth,
        meta=meta,
    )


def make_population_scenario(seed: int, kind: str, samples: int = POPULATION_SAMPLES) -> list[Item]:
    """The ``samples`` play items and the C-llm item of one LLM-population scenario."""
    plays = [
        make_population_item(
            seed, {"kind": kind, "question": "play", "sample": i, "samples": samples}
        )
        for i in range(samples)
    ]
    return [
        *plays,
        make_population_item(seed, {"kind": kind, "question": "C-llm", "samples": samples}),
    ]


def generate_population_items(
    seed: int,
    n: int,
    *,
    kinds: Sequence[str] = POPULATION_KINDS,
    samples: int = POPULATION_SAMPLES,
) -> list[Item]:
    """Items for ``n`` LLM-population scenarios (``samples`` + 1 items each), kinds in
    rotation, deterministic by seed; a stream of the seed apart from
    :func:`generate_abc_items`'."""
    for k in kinds:
        if k not in POPULATION_KINDS:
            raise InputError(
                f"unknown LLM-population kind {k!r}; known: {', '.join(POPULATION_KINDS)}",
                where="kinds",
            )
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(
            f"samples must be a whole number of at least 1, got {samples!r}", where="samples"
        )
    items: list[Item] = []
    for i in range(n):
        sub = int(np.random.SeedSequence([seed, 0x909, i]).generate_state(1)[0])
        items.extend(make_population_scenario(sub, kinds[i % len(kinds)], samples))
    return items


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
        return draw_int(rng, spec["min"], spec["max"])
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
            return draw_int(rng, spec["min"], spec["max"])
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
            return draw_int(rng, spec["min"], spec["max"])
        return truth["own_level_actions"][level - 1]
    if level == 0:
        return {lab: 1.0 / len(labels) for lab in labels}
    return _point_mass(labels, truth["label_ranges"], truth["own_level_actions"][level - 1])


def _point_mass(
    labels: Sequence[str], ranges: Sequence[Sequence[int]], value: int
) -> dict[str, float]:
    hit = next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)
    return {lab: (1.0 if i == hit else 0.0) for i, lab in enumerate(labels)}
