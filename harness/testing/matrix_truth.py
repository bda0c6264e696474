"""The true normalised skill S of the matrix's reference predictors on reference targets, whose
answer distributions are known (:func:`harness.matrix.runs.answer_distribution`): what an estimate of
S is checked against (``tests/harness/matrix/test_matrix_reference.py``) and what the calibration
benchmark (``bench/bench_matrix_calibration.py``) measures its intervals' coverage of.

"True" means in expectation over the sampling, on the given items: ``S = (E[acc] − base) /
(E[ceiling] − base)`` with every mean over the items and ``base`` the better of the expected
population-modal and projection matches — the ledger's formula (:mod:`ledger.scoring`) with each
per-item term replaced by its expectation. The target's K samples are enumerated exactly (every
composition of K over the choices, with its multinomial probability); the population's modal
answer, whose agents have different distributions, has its law from a seeded simulation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.agent.agents import ReferenceAgent
from harness.matrix.runs import answer_distribution
from ledger.scoring import default_top1, retest_agreement, top1_match
from mindledger.items import Item

__all__ = [
    "expected_matches",
    "expected_terms",
    "population_mode_law",
    "predictor_guess_law",
    "true_skill",
]

MODE_DRAWS = 40_000
"""Simulated draws of the population per item for the law of its modal answer."""


def _compositions(k: int, m: int) -> list[tuple[int, ...]]:
    return [c for c in itertools.product(range(k + 1), repeat=m) if sum(c) == k]


def expected_matches(
    p: np.ndarray, choices: Sequence[str], k: int
) -> tuple[dict[str, float], float]:
    """For ``k`` samples from ``p`` over ``choices``: the exact ``E[top1_match(g, samples)]``
    for every choice g, and the exact expected leave-one-out test-retest agreement."""
    match = dict.fromkeys(choices, 0.0)
    retest = 0.0
    for counts in _compositions(k, len(choices)):
        prob = math.factorial(k) * math.prod(
            pi**c / math.factorial(c) for pi, c in zip(p, counts, strict=True)
        )
        observed = [a for a, c in zip(choices, counts, strict=True) for _ in range(c)]
        for g in choices:
            match[g] += prob * top1_match(g, observed)
        value = retest_agreement(observed).value
        assert value is not None
        retest += prob * value
    return match, retest


def population_mode_law(
    dists: Sequence[np.ndarray], k: int, rng: np.random.Generator, draws: int = MODE_DRAWS
) -> np.ndarray:
    """P(the population's first modal answer is choice j), by simulation: each of ``dists``
    answers ``k`` times; ties go to the first choice in code-point order (choices sorted)."""
    m = dists[0].size
    counts = np.zeros((draws, m))
    for d in dists:
        counts += rng.multinomial(k, d, size=draws)
    law: np.ndarray = np.bincount(counts.argmax(axis=1), minlength=m) / draws
    return law


def predictor_guess_law(
    agent: ReferenceAgent, target: ReferenceAgent, item: Item, choices: Sequence[str]
) -> np.ndarray:
    """The law of a reference predictor's top-1 guess about ``target`` on ``item`` (as
    :func:`harness.matrix.asking.reference_prediction` makes it): the clairvoyant draws it from the
    target's distribution; projection names its own habit's most probable answer, as habit does
    about itself; random, and habit about another agent, the uniform distribution's (the first
    choice)."""
    if agent.policy == "clairvoyant":
        dist = answer_distribution(target, item)
        return np.array([dist[c] for c in choices])
    if agent.policy == "projection" or (agent.policy == "habit" and agent is target):
        guess = default_top1(answer_distribution(agent, item))
    else:
        guess = default_top1(dict.fromkeys(choices, 1.0))
    law = np.zeros(len(choices))
    law[list(choices).index(guess)] = 1.0
    return law


def expected_terms(
    items: Sequence[Item],
    agents: Mapping[str, ReferenceAgent],
    predictor: str,
    target: str,
    *,
    samples: int,
    seed: int = 12345,
    draws: int = MODE_DRAWS,
) -> dict[str, float]:
    """The expected means over ``items`` of S's terms for ``predictor`` → ``target`` (K =
    ``samples`` answers of every agent per item): ``acc`` (top-1 match), ``population`` and
    ``projection`` (the baselines' matches) and ``ceiling`` (test-retest agreement). The
    projection baseline is one answer of the predictor's own, drawn from its distribution; the
    population is every other agent's K answers."""
    rng = np.random.default_rng(seed)
    acc, pop, proj, ceil = [], [], [], []
    for item in items:
        choices = sorted(str(c) for c in item.answer["choices"])
        law = {n: np.array([answer_distribution(a, item)[c] for c in choices])
               for n, a in agents.items()}
        match, retest = expected_matches(law[target], choices, samples)
        e = np.array([match[c] for c in choices])
        guess = predictor_guess_law(agents[predictor], agents[target], item, choices)
        acc.append(float(guess @ e))
        proj.append(float(law[predictor] @ e))
        others = [law[n] for n in agents if n != target]
        pop.append(float(population_mode_law(others, samples, rng, draws) @ e))
        ceil.append(retest)
    return {"acc": float(np.mean(acc)), "population": float(np.mean(pop)),
            "projection": float(np.mean(proj)), "ceiling": float(np.mean(ceil))}


def true_skill(
    items: Sequence[Item], agents: Mapping[str, ReferenceAgent], predictor: str, target: str,
    *, samples: int, **options: Any,
) -> float:
    """S of ``predictor`` → ``target`` in expectation over the sampling, on these items: the
    ledger's formula over :func:`expected_terms` (``options``: its ``seed`` and ``draws``),
    base the better of the two baselines."""
    t = expected_terms(items, agents, predictor, target, samples=samples, **options)
    base = max(t["population"], t["projection"])
    return (t["acc"] - base) / (t["ceiling"] - base)
