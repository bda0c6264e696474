"""A/B/C strategic prediction: exact truths checked by brute force, scoring, separation."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import (
    generate_abc_items,
    make_abc_item,
    make_abc_scenario,
    reference_answer,
    score,
    summarize_abc,
    symmetric_equilibria,
)
from games._strategic_scenarios import beauty_best_response
from mindledger.items import Item

ITEMS = generate_abc_items(77, 18)


def _by(kind: str, question: str) -> list[Item]:
    return [i for i in ITEMS if i.meta["kind"] == kind and i.meta["question"] == question]


# -- beauty contest -------------------------------------------------------------------------


def _brute_beauty(target: str, p: Fraction, n: int, lo: int, hi: int,
                  dist: dict[int, Fraction]) -> tuple[int, ...]:
    """Expected squared loss by enumerating every profile of the others' choices."""
    # the distribution of the statistic the target uses (the others' sum or median)
    stat: dict[int, Fraction] = {}
    for profile in itertools.product(sorted(dist), repeat=n - 1):
        prob = math.prod((dist[v] for v in profile), start=Fraction(1))
        key = sum(profile) if target == "mean" else sorted(profile)[(n - 1) // 2]
        stat[key] = stat.get(key, Fraction(0)) + prob
    losses: dict[int, Fraction] = {}
    for x in range(lo, hi + 1):
        total = Fraction(0)
        for value, prob in stat.items():
            t = p * (x + value) / n if target == "mean" else p * value
            total += prob * (x - t) ** 2
        losses[x] = total
    best = min(losses.values())
    return tuple(x for x in range(lo, hi + 1) if losses[x] == best)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["mean", "median"]),
    st.sampled_from([30, 45, 50, 70, 85, 110, 125, 140]),
    st.integers(0, 3),
    st.lists(st.integers(0, 6), min_size=3, max_size=3),
    st.lists(st.integers(0, 12), min_size=1, max_size=3, unique=True),
)
def test_beauty_best_response_matches_brute_force(
    target: str, pct: int, uniform_weight: int, point_weights: list[int], points: list[int]
) -> None:
    lo, hi = 0, 12
    n = 4  # three others: small enough to enumerate every profile
    raw: dict[int, Fraction] = {}
    for v in range(lo, hi + 1):
        raw[v] = Fraction(uniform_weight, hi - lo + 1)
    for v, w in zip(points, point_weights, strict=False):
        raw[v] = raw.get(v, Fraction(0)) + w
    total = sum(raw.values())
    if total == 0:
        return
    dist = {v: w / total for v, w in raw.items() if w > 0}
    p = Fraction(pct, 100)
    assert beauty_best_response(target, p, n, lo, hi, dist) == _brute_beauty(
        target, p, n, lo, hi, dist)


def _beauty_loss(gp: dict[str, int | str], d: int, others: int) -> Fraction:
    """Own squared loss choosing ``d`` when every other player chooses ``others``."""
    p, n = Fraction(int(gp["p_percent"]), 100), int(gp["players"])
    t = p * (d + (n - 1) * others) / n if gp["target"] == "mean" else p * others
    return (d - t) ** 2


def test_beauty_truths() -> None:
    for item in _by("beauty", "B"):
        gp = dict(item.meta["game_params"])
        lo, hi = int(gp["lo"]), int(gp["hi"])
        # every stated equilibrium: no deviation does better when all others play it
        eqs = item.truth["target_action"]
        assert eqs
        for x in range(lo, hi + 1):
            best = min(_beauty_loss(gp, d, x) for d in range(lo, hi + 1))
            assert (x in eqs) == (_beauty_loss(gp, x, x) == best)
        # scripted levels: each best-responds to the level below (brute argmin)
        levels = item.truth["level_actions"]
        for k in (1, 2):
            losses = [_beauty_loss(gp, d, levels[k - 1]) for d in range(lo, hi + 1)]
            assert levels[k] == lo + losses.index(min(losses))
        assert item.truth["abc_differ"] is True


# -- 11-20 variants -------------------------------------------------------------------------


def test_arad_rubinstein_equilibrium() -> None:
    acts = list(range(11, 21))
    u = [[s + 20 * (s == a - 1) for a in acts] for s in acts]
    (eq,) = symmetric_equilibria(u)
    assert eq == tuple(Fraction(x, 20) for x in (0, 0, 0, 0, 5, 5, 4, 3, 2, 1))


def _u1120(gp: dict[str, int], s: int, a: int) -> int:
    return s + gp["bonus"] * (s == a - gp["gap"])


def test_eleven_twenty_truths() -> None:
    for item in _by("11-20", "B"):
        gp = dict(item.meta["game_params"])
        acts = list(range(gp["lo"], gp["hi"] + 1))
        for eq in item.truth["mixed_equilibria"]:
            x = [Fraction(v).limit_denominator(10**6) for v in eq]
            assert sum(x) == 1 and min(x) >= 0
            values = [sum((x[j] * _u1120(gp, s, a) for j, a in enumerate(acts)), Fraction(0))
                      for s in acts]
            top = max(values)
            assert all(values[i] == top for i in range(len(acts)) if x[i] > 0)
        assert item.answer["kind"] == "distribution"
    for item in _by("11-20", "A"):
        gp = dict(item.meta["game_params"])
        acts = list(range(gp["lo"], gp["hi"] + 1))
        mix = item.truth["stated_mix"]
        levels = item.truth["level_actions"]
        eu = {}
        for s in acts:
            uniform = sum((Fraction(_u1120(gp, s, a), len(acts)) for a in acts), Fraction(0))
            eu[s] = Fraction(mix[0], 100) * uniform + sum(
                (Fraction(mix[k], 100) * _u1120(gp, s, levels[k - 1]) for k in (1, 2, 3)),
                Fraction(0))
        best = max(eu.values())
        assert item.truth["target_action"] == [s for s in acts if eu[s] == best]


# -- asymmetric guessing games --------------------------------------------------------------


def test_guessing_truths_by_brute_force() -> None:
    for item in _by("guessing", "A"):
        g = item.meta["game_params"]
        xs = np.arange(g["own_lo"], g["own_hi"] + 1, dtype=np.int64)
        ys = np.arange(g["other_lo"], g["other_hi"] + 1, dtype=np.int64)
        # B: pure equilibria over every pair, exact integer arithmetic (losses scaled by 1e4)
        lx = (100 * xs[:, None] - g["own_p"] * ys[None, :]) ** 2  # my loss, [x, y]
        ly = (100 * ys[None, :] - g["other_p"] * xs[:, None]) ** 2  # partner's loss, [x, y]
        my_best = lx == lx.min(axis=0, keepdims=True)
        their_best = ly == ly.min(axis=1, keepdims=True)
        eq_x = sorted({int(xs[i]) for i, _ in zip(*np.nonzero(my_best & their_best),
                                                  strict=True)})
        assert item.truth["equilibria"] == eq_x
        # A: expected loss against the stated mix (level 0 uniform over the partner's range)
        mix = item.truth["stated_mix"]
        weights = np.full(len(ys), mix[0] * 1, dtype=np.int64)  # x len(ys) common denominator
        for k in (1, 2, 3):
            weights[int(item.truth["level_actions"][k - 1] - g["other_lo"])] += mix[k] * len(ys)
        expected = (lx * weights[None, :]).sum(axis=1)
        a_star = [int(v) for v in xs[expected == expected.min()]]
        assert item.truth["a_best_responses"] == a_star == item.truth["target_action"]


def test_inferred_level_items_are_identifiable() -> None:
    ks = _by("guessing", "K")
    assert ks
    for item in ks:
        task = item.truth["inference"]
        level = int(item.truth["target_action"])
        predicted = []
        for g in task["games"]:
            # brute-force level chain: L1 answers the partner's midpoint, Lk answers L(k-1)
            def best(lo: int, hi: int, pct: int, y: Fraction) -> int:
                losses = [(100 * d - pct * y) ** 2 for d in range(lo, hi + 1)]
                return lo + losses.index(min(losses))

            mine = [best(g["own_lo"], g["own_hi"], g["own_p"],
                         Fraction(g["other_lo"] + g["other_hi"], 2))]
            theirs = [best(g["other_lo"], g["other_hi"], g["other_p"],
                           Fraction(g["own_lo"] + g["own_hi"], 2))]
            for _ in range(2):
                mine_next = best(g["own_lo"], g["own_hi"], g["own_p"], Fraction(theirs[-1]))
                theirs.append(best(g["other_lo"], g["other_hi"], g["other_p"],
                                   Fraction(mine[-1])))
                mine.append(mine_next)
            predicted.append(mine)
        profiles = {k: [p[k - 1] for p in predicted] for k in (1, 2, 3)}
        matching = [k for k, prof in profiles.items() if prof == task["guesses"]]
        assert matching == ([] if level == 0 else [level])
        assert item.answer == {"kind": "choice", "choices": ["0", "1", "2", "3"]}


# -- C scoring, determinism, separation ------------------------------------------------------


def test_c_scores_against_the_realised_choices() -> None:
    item = _by("beauty", "C")[0]
    counts = item.truth["realised_counts"]
    n = sum(counts.values())
    labels = item.answer["choices"]
    uniform = {lab: 1 / len(labels) for lab in labels}
    s = score(item, uniform)
    assert s.details["log_score"] == pytest.approx(math.log(1 / len(labels)))
    assert s.details["brier"] == pytest.approx(1 - 1 / len(labels))
    assert not s.correct  # no unique predicted mode
    oracle = score(item, reference_answer(item, "oracle", np.random.default_rng(0)))
    freq = {lab: c / n for lab, c in counts.items()}
    assert oracle.details["log_score"] == pytest.approx(
        sum(f * math.log(f) for f in freq.values() if f))
    assert oracle.details["brier"] == pytest.approx(
        sum(f * (1 - 2 * f + sum(g * g for g in freq.values())) for f in freq.values()))
    assert oracle.details["log_score"] > s.details["log_score"]
    mode = max(counts, key=lambda lab: counts[lab])
    point = {lab: (1.0 if lab == mode else 0.0) for lab in labels}
    sharp = score(item, point)
    assert sharp.correct
    assert sharp.details["zero_probability_hits"] == n - counts[mode]
    assert score(item, {"nonsense": 1.0}).primary_error == "invalid_action"
    assert score(item, {labels[0]: -1.0, labels[1]: 2.0}).primary_error == "invalid_action"


def test_abc_items_are_deterministic_and_regenerable() -> None:
    again = generate_abc_items(77, 18)
    assert [i.id for i in again] == [i.id for i in ITEMS]
    for item in ITEMS:
        assert item.verify() == []
        assert make_abc_item(item.seed, item.params) == item
        assert Item.from_dict(json.loads(json.dumps(item.to_dict()))) == item
        assert item.meta["question"] in ("A", "B", "C", "K")
        assert item.family == "games"
    assert len(make_abc_scenario(ITEMS[0].seed, ITEMS[0].meta["kind"])) in (3, 4)


def _separation(policy: str) -> dict[str, object]:
    rng = np.random.default_rng(3)
    pairs = [(i, score(i, reference_answer(i, policy, rng))) for i in ITEMS]
    return summarize_abc(pairs)


def test_oracle_separates_every_scenario_and_bots_do_not() -> None:
    oracle = _separation("oracle")
    assert oracle["separation"] == {"n": 18, "correct": 18, "rate": 1.0}
    assert all(v["rate"] == 1.0 for v in oracle["accuracy"].values())  # type: ignore[union-attr]
    for policy in ("random", "level:1", "level:2", "level:3"):
        result = _separation(policy)
        assert result["separation"]["rate"] < 0.5, policy  # type: ignore[index]


def test_a_level_bot_answering_the_equilibrium_is_coded() -> None:
    item = _by("guessing", "A")[0]
    eq = item.truth["equilibria"][0]
    s = score(item, eq)
    assert not s.correct and s.primary_error == "answered_equilibrium"
    b = next(i for i in _by("guessing", "B") if i.meta["scenario"] == item.meta["scenario"])
    assert score(b, eq).correct
