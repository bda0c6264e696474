"""The matrix's candidate items and the pilot filter (seed 002 §15.2, issue 14 item 2): the
filter on hand-built answer tables, the lexical clustering of open answers, the generators'
determinism and item shape, and a pilot run over reference agents."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import matrix as mi
from harness.agent.agents import ReferenceAgent
from harness.matrix.asking import ask as matrix_ask
from harness.matrix.pilot import run_pilot
from mindledger.canonical import canonical_json
from mindledger.errors import UserError
from mindledger.items import Item

COUNTS = {"arbitrary": 3, "preference": 3, "open": 3, "nesttom": 2, "games": 2, "failure": 2}


def _table_item(index: int) -> Item:
    return mi.make_item(0, {"index": index})


def _rule(**kw: Any) -> mi.PilotFilter:
    return mi.PilotFilter(**{"min_items": 1, **kw})


# -- the filter on hand-built tables --------------------------------------------------------------


def test_filter_drops_agreement_and_noise_and_keeps_a_divergent_consistent_item() -> None:
    same, noisy, divergent = (_table_item(i) for i in range(3))
    a0, a1 = (str(c) for c in same.answer["choices"][:2])
    n0, n1, n2 = (str(c) for c in noisy.answer["choices"][:3])
    d0, d1, d2 = (str(c) for c in divergent.answer["choices"][:3])
    answers = {
        "t1": {same.id: [a0] * 10, noisy.id: [n0] * 10, divergent.id: [d0] * 9 + [d1]},
        "t2": {same.id: [a0] * 10, noisy.id: [n1] * 10, divergent.id: [d1] * 10},
        # t3 answers `noisy` at random: its samples rarely agree with each other
        "t3": {
            same.id: [a0] * 9 + [a1],
            noisy.id: [n0, n1, n2] * 3 + [n0],
            divergent.id: [d2] * 10,
        },
    }
    kept, record = mi.apply_filter([same, noisy, divergent], answers, _rule())

    assert [i.id for i in kept] == [divergent.id] == list(record.kept)
    figures = {f.id: f for f in record.candidates}
    assert [d.code for d in figures[same.id].drops] == ["agreement"]
    assert figures[same.id].disagreement == pytest.approx(0.0)
    assert [d.code for d in figures[noisy.id].drops] == ["inconsistent"]
    assert "t3" in figures[noisy.id].drops[0].detail
    assert figures[noisy.id].consistency["t3"] == pytest.approx((4 * 3 + 3 * 2 + 3 * 2) / 90)
    assert figures[divergent.id].kept and figures[divergent.id].drops == ()
    assert figures[divergent.id].disagreement > 0.9
    assert record.dropped == {"agreement": 1, "inconsistent": 1}
    assert record.divergent and record.verdict == "divergent: 1 of 3 candidates kept"


def test_consistency_and_disagreement_figures_by_hand() -> None:
    item = _table_item(0)
    a, b = (str(c) for c in item.answer["choices"][:2])
    answers = {"s": {item.id: [a, a, a, b]}, "t": {item.id: [b, b, b, b]}}
    _, record = mi.apply_filter([item], answers, _rule())
    (f,) = record.candidates
    # W_s = 3·2 / (4·3) = 0.5, W_t = 1; B = p_s(b)·p_t(b) = 0.25; D = 1 − 0.25 / 0.75
    assert f.consistency == {"s": pytest.approx(0.5), "t": pytest.approx(1.0)}
    assert f.between == pytest.approx(0.25)
    assert f.within == pytest.approx(0.75)
    assert f.disagreement == pytest.approx(2 / 3)
    assert f.modal_disagreement == pytest.approx(1.0)
    assert f.consistency_min == pytest.approx(0.5)
    assert f.kept


def test_a_one_target_pilot_keeps_what_its_target_answers_consistently() -> None:
    steady, noisy = _table_item(0), _table_item(1)
    s0 = str(steady.answer["choices"][0])
    n0, n1, n2 = (str(c) for c in noisy.answer["choices"][:3])
    answers = {"t": {steady.id: [s0] * 5, noisy.id: [n0, n1, n2, n0, n1]}}
    kept, record = mi.apply_filter([steady, noisy], answers, _rule(min_targets=1))
    assert [i.id for i in kept] == [steady.id]
    figures = {f.id: f for f in record.candidates}
    assert figures[steady.id].within == figures[steady.id].consistency["t"] == 1.0
    assert figures[steady.id].disagreement is None  # one target: nothing to compare
    assert [d.code for d in figures[noisy.id].drops] == ["inconsistent"]
    # the default filter needs two targets, as before
    _, two = mi.apply_filter([steady], answers, _rule())
    assert [d.code for d in two.candidates[0].drops] == ["targets"]
    assert two.candidates[0].within is None
    with pytest.raises(UserError):
        mi.PilotFilter(min_targets=0)


def test_identical_distributions_have_no_disagreement() -> None:
    """K samples of one distribution give E[B] = E[W], so D is near 0 however noisy."""
    item = _table_item(0)
    choices = [str(c) for c in item.answer["choices"][:2]]
    rng = np.random.default_rng(3)
    answers = {t: {item.id: list(rng.choice(choices, size=400, p=[0.7, 0.3]))} for t in "uvw"}
    _, record = mi.apply_filter([item], answers, _rule())
    assert record.candidates[0].disagreement < 0.05


def test_the_record_lists_its_thresholds_and_every_reason() -> None:
    items = [_table_item(i) for i in range(3)]
    c = [str(x) for x in items[2].answer["choices"]]
    answers = {
        "t1": {items[0].id: ["x"], items[2].id: [c[0]] * 5},
        "t2": {items[0].id: ["y", "y"], items[2].id: [c[1]] * 5},
    }
    rule = _rule(d_min=0.4, c_min=0.6, c_max=0.9, other_max=0.2, min_items=3)
    _, record = mi.apply_filter(items, answers, rule, samples=5, errors={"t1": 1})
    data = json.loads(canonical_json(record.to_dict()))
    assert data["method"] == mi.METHOD
    assert data["filter"] == {
        "d_min": 0.4,
        "c_min": 0.6,
        "c_max": 0.9,
        "other_max": 0.2,
        "min_samples": 2,
        "min_targets": 2,
        "min_items": 3,
    }
    assert data["samples"] == 5 and data["errors"] == {"t1": 1}
    reasons = {c["id"]: [d["code"] for d in c["drops"]] for c in data["candidates"]}
    assert reasons[items[0].id] == ["samples"]  # t1 answered once
    assert reasons[items[1].id] == ["targets"]  # nobody answered
    # every target deterministic and apart: kept but for the upper consistency bound
    assert reasons[items[2].id] == ["too-consistent"]
    assert data["dropped"] == {"targets": 1, "samples": 1, "too-consistent": 1}
    assert data["by_kind"] == {"arbitrary": {"candidates": 3, "kept": 0}}
    assert mi.PilotRecord.from_dict(data) == record
    assert mi.PilotRecord.from_dict(data).digest == record.digest


def test_all_dropped_says_not_divergent_with_the_reason() -> None:
    items = [_table_item(i) for i in range(4)]
    rng = np.random.default_rng(0)
    answers: dict[str, dict[str, list[str]]] = {"steady": {}, "noisy": {}}
    for item in items:
        choices = [str(c) for c in item.answer["choices"]]
        answers["steady"][item.id] = [choices[0]] * 10
        answers["noisy"][item.id] = [choices[i % len(choices)] for i in rng.permutation(10)]
    kept, record = mi.apply_filter(items, answers, _rule(min_items=2))
    assert kept == [] and not record.divergent
    assert record.verdict.startswith("not divergent: 0 of 4 candidates kept (minimum 2)")
    assert "4 inconsistent" in record.verdict
    assert "most often inconsistent: noisy (4 candidates)" in record.verdict


def test_too_few_kept_is_not_divergent_even_when_some_survive() -> None:
    item = _table_item(0)
    a, b = (str(c) for c in item.answer["choices"][:2])
    answers = {"s": {item.id: [a] * 4}, "t": {item.id: [b] * 4}}
    kept, record = mi.apply_filter([item], answers, mi.PilotFilter(min_items=20))
    assert kept == [item] and not record.divergent
    assert record.verdict == "not divergent: 1 of 1 candidates kept (minimum 20)"


def test_open_items_dominated_by_other_are_dropped() -> None:
    (item,) = mi.candidates(1, {"open": 1})
    label = str(item.answer["choices"][0])
    answers = {
        "s": {item.id: [mi.OTHER] * 8 + [label] * 2},
        "t": {item.id: [label] * 3 + [mi.OTHER] * 7},
    }
    _, record = mi.apply_filter([item], answers, _rule(d_min=0.0))
    (f,) = record.candidates
    assert f.outside_share == pytest.approx(0.75)
    assert [d.code for d in f.drops] == ["other"]


@pytest.mark.parametrize(
    "kw",
    [{"d_min": 1.5}, {"c_min": -0.1}, {"c_min": 0.8, "c_max": 0.5}, {"min_samples": 1}],
)
def test_bad_thresholds_are_user_errors(kw: dict[str, Any]) -> None:
    with pytest.raises(UserError):
        mi.PilotFilter(**kw)


# -- clustering -----------------------------------------------------------------------------------


def _open(template: str) -> Item:
    items = mi.candidates(5, {"open": len(mi.OPEN_TEMPLATES)})
    return next(i for i in items if i.meta["template"] == template)


@pytest.mark.parametrize(
    ("template", "answers", "label"),
    [
        ("fruit", ["Apple", "apples", "An apple.", "  APPLE!! ", "I'd pick apples"], "apple"),
        ("fruit", ["Cherries", "cherry", "The cherry"], "cherry"),
        ("fruit", ["kiwi fruit", "Kiwifruit", "kiwis"], "kiwi"),
        ("fruit", ["Mangoes", "mango"], "mango"),
        ("fruit", ["Water-melon", "watermelon"], "watermelon"),
        ("colour", ["Gray", "grey", "GREY."], "grey"),
        ("city", ["NYC", "New York City", "new york"], "new york"),
        ("scientist", ["Albert Einstein", "Einstein", "einstein."], "einstein"),
        ("planet", ["Mars", "mars!"], "mars"),
        ("animal", ["Wolves", "a wolf"], "wolf"),
        ("animal", ["Foxes", "fox"], "fox"),
    ],
)
def test_variants_map_to_one_label(template: str, answers: list[str], label: str) -> None:
    item = _open(template)
    assert {mi.cluster_answer(item, a) for a in answers} == {label}


@pytest.mark.parametrize(
    ("template", "answers"),
    [
        ("fruit", ["apple", "pineapple", "grape", "grapefruit", "pear", "peach"]),
        ("colour", ["red", "orange", "purple", "violet", "pink"]),
        ("animal", ["cat", "dog", "owl", "wolf", "fox"]),
    ],
)
def test_distinct_words_do_not_share_a_label(template: str, answers: list[str]) -> None:
    item = _open(template)
    labels = [mi.cluster_answer(item, a) for a in answers]
    named = [x for x in labels if x != mi.OTHER]
    assert len(set(named)) == len(named)


def test_unknown_or_ambiguous_answers_are_other() -> None:
    item = _open("fruit")
    for answer in ("durian", "apple or banana", "", "!!!", "I don't eat fruit"):
        assert mi.cluster_answer(item, answer) == mi.OTHER


def test_every_label_clusters_to_itself_and_no_two_labels_share_a_variant() -> None:
    for item in mi.candidates(0, {"open": len(mi.OPEN_TEMPLATES)}):
        labels = [str(c) for c in item.answer["choices"]]
        assert labels[-1] == mi.OTHER
        for label in labels:
            assert mi.cluster_answer(item, label) == label
        keys = [
            mi.normalise_answer(v)
            for label, variants in item.answer["clusters"].items()
            for v in (label, *variants)
        ]
        assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("apples", "apple"),
        ("cherries", "cherry"),
        ("mangoes", "mango"),
        ("peaches", "peach"),
        ("boxes", "box"),
        ("glass", "glass"),
        ("octopus", "octopus"),
        ("kiwis", "kiwi"),
        ("gas", "gas"),
        ("pie", "pie"),
    ],
)
def test_stem(word: str, stem: str) -> None:
    assert mi.stem(word) == stem


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_clustering_is_total_and_lands_in_the_answer_set(text: str) -> None:
    item = _open("fruit")
    assert mi.cluster_answer(item, text) in item.answer["choices"]


# -- generators -----------------------------------------------------------------------------------


def test_candidates_are_deterministic_per_seed_and_differ_across_seeds() -> None:
    first = mi.candidates(11, COUNTS)
    again = mi.candidates(11, COUNTS)
    other = mi.candidates(12, COUNTS)
    assert [i.to_dict() for i in first] == [i.to_dict() for i in again]
    assert {i.id for i in first}.isdisjoint({i.id for i in other})
    assert [mi.kind_of(i) for i in first] == [k for k, n in COUNTS.items() for _ in range(n)]


def test_candidates_are_valid_matrix_items() -> None:
    for item in mi.candidates(3, COUNTS):
        assert item.family == mi.FAMILY
        assert item.verify() == []
        assert Item.from_dict(json.loads(canonical_json(item.to_dict()))) == item
        assert mi.regenerate(item) == item
        choices = item.answer["choices"]
        assert choices and all(isinstance(c, str) for c in choices)
        assert len(set(choices)) == len(choices)
        assert item.meta["options"] == len(choices)
        # what the matrix does with a candidate: a distribution over its choices
        pred = mi.prediction_item(item, "p", "t", 10)
        assert pred.answer == {"kind": "distribution", "choices": list(choices)}
        kind = mi.kind_of(item)
        if kind == "open":
            assert item.answer["kind"] == "open" and choices[-1] == mi.OTHER
        else:
            assert item.answer["kind"] == "choice"
        if kind in ("nesttom", "games", "failure"):
            assert item.meta["source_family"] in ("nesttom", "games")
            assert item.truth["correct"] in (choices if kind != "failure" else item.truth.values())
        if kind == "failure":
            assert choices == ["yes", "no"]


def test_arbitrary_candidates_are_make_item_unchanged() -> None:
    assert mi.candidates(4, {"arbitrary": 3}) == mi.make_items(4, 3)


def test_nesttom_and_game_candidates_carry_their_source_question() -> None:
    import games
    import nesttom

    (n_item,) = mi.candidates(9, {"nesttom": 1})
    (g_item,) = mi.candidates(9, {"games": 1})
    n_src = nesttom.generate_items(9, 1)[0]
    g_src = games.generate_items(9, 1, conditions=("recursive",))[0]
    assert n_item.prompt == n_src.prompt and n_item.meta["source"] == n_src.id
    assert n_item.truth["correct"] == n_src.truth["answer"]
    assert g_item.prompt == g_src.prompt and g_item.meta["source"] == g_src.id
    assert g_item.meta["system_prompt"] == g_src.meta["system_prompt"]
    lo, hi = g_src.answer["min"], g_src.answer["max"]
    assert g_item.answer["choices"] == [str(a) for a in range(lo, hi + 1)]


def test_candidates_refuse_unknown_kinds_and_too_many_open_items() -> None:
    with pytest.raises(UserError, match="unknown matrix item kind"):
        mi.candidates(0, {"trivia": 1})
    with pytest.raises(UserError, match="only"):
        mi.candidates(0, {"open": len(mi.OPEN_TEMPLATES) + 1})


def test_failure_answers_come_from_the_targets_trials() -> None:
    item = mi.candidates(2, {"failure": 1})[0]
    source = str(item.meta["source"])
    assert mi.failure_answers(item, {source: True}) == ("yes",)
    assert mi.failure_answers(item, {source: [True, False, False]}) == ("yes", "no", "no")
    assert mi.failure_answers(item, {"sha256:other": True}) == ()


def test_failure_prediction_item_asks_about_correctness() -> None:
    item = mi.candidates(2, {"failure": 1})[0]
    pred = mi.failure_prediction_item(item, "p", "t")
    assert pred.answer == {"kind": "distribution", "choices": ["yes", "no"]}
    assert "answers the question below correctly" in pred.prompt
    assert "another AI model called t" in pred.prompt
    assert mi.failure_prediction_item(item, "t", "t").meta["self"] is True


def test_observed_answer() -> None:
    (choice,) = mi.candidates(0, {"games": 1})
    (open_item,) = [i for i in mi.candidates(0, {"open": 10}) if i.meta["template"] == "fruit"]
    assert mi.observed_answer(choice, 3) == "3"
    assert mi.observed_answer(choice, "3") == "3"
    assert mi.observed_answer(choice, None) == mi.NO_ANSWER
    assert mi.observed_answer(choice, {"3": 1.0}) == mi.NO_ANSWER
    assert mi.observed_answer(open_item, "Bananas!") == "banana"


# -- the pilot run --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pool() -> list[Item]:
    return mi.candidates(
        21, {"arbitrary": 12, "preference": 8, "open": 4, "nesttom": 2, "games": 2}
    )


async def test_pilot_with_habit_targets_keeps_divergent_items(pool: list[Item]) -> None:
    agents = {n: ReferenceAgent(n, "habit", seed=5) for n in ("h1", "h2", "h3")}
    calls: list[tuple[str, str, tuple[Any, ...]]] = []

    async def ask(agent: ReferenceAgent, item: Item, *key: Any) -> Any:
        calls.append((agent.name, item.id, key))
        return await matrix_ask(agent, item, *key)

    rule = mi.PilotFilter(min_items=5)
    kept, record = await run_pilot(agents, pool, 10, ask, rule=rule)
    assert len(calls) == 3 * len(pool) * 10
    assert record.targets == ("h1", "h2", "h3") and record.samples == 10
    assert all(n == 10 for f in record.candidates for n in f.answers.values())
    assert record.divergent and len(kept) >= 5
    for f in record.candidates:
        assert f.kept == (
            f.disagreement is not None
            and f.disagreement >= rule.d_min
            and f.consistency_min is not None
            and f.consistency_min >= rule.c_min
            and (f.outside_share or 0.0) <= rule.other_max
        )
    again = await run_pilot(agents, pool, 10, matrix_ask, rule=rule)
    assert again[1] == record  # seeded reference agents: the same pilot


async def test_pilot_with_a_random_target_says_not_divergent(pool: list[Item]) -> None:
    agents = {
        "h1": ReferenceAgent("h1", "habit", seed=5),
        "h2": ReferenceAgent("h2", "habit", seed=5),
        "rnd": ReferenceAgent("rnd", "random", seed=5),
    }
    kept, record = await run_pilot(agents, pool, 10, matrix_ask, rule=mi.PilotFilter(min_items=5))
    assert not record.divergent and len(kept) < 5
    assert record.verdict.startswith("not divergent:")
    assert "most often inconsistent: rnd" in record.verdict


async def test_pilot_counts_errors_and_takes_failure_answers_from_trials() -> None:
    items = mi.candidates(8, {"arbitrary": 2, "failure": 2})
    failure = [i for i in items if mi.kind_of(i) == "failure"]
    agents = {n: ReferenceAgent(n, "habit", seed=1) for n in ("a", "b")}

    class Reply:
        def __init__(self, answer: Any, error: str | None = None) -> None:
            self.answer, self.error = answer, error

    async def ask(agent: ReferenceAgent, item: Item, *key: Any) -> Reply:
        if agent.name == "b" and key[-1] == 0:
            return Reply(None, "timeout")
        reply = await matrix_ask(agent, item, *key)
        return Reply(reply.answer)

    trials = {
        "a": {str(f.meta["source"]): [True] * 4 for f in failure},
        "b": {str(f.meta["source"]): [False] * 4 for f in failure},
    }
    _, record = await run_pilot(
        agents, items, 4, ask, rule=mi.PilotFilter(min_items=1), trials=trials
    )
    # b's first sample of each asked item errs; failure answers come from the trials
    assert record.errors == {"a": 0, "b": 2}
    figures = {f.id: f for f in record.candidates}
    for f in failure:
        assert figures[f.id].answers == {"a": 4, "b": 4}
        assert figures[f.id].modes == {"a": ("yes",), "b": ("no",)}
        assert figures[f.id].kept
    for item in items:
        if item not in failure:
            assert figures[item.id].answers == {"a": 4, "b": 3}


async def test_pilot_scores_failure_candidates_by_asking_the_underlying_question() -> None:
    """Without trials, a target is asked the NestToM / game question itself and each answer is
    scored: one that always answers correctly gives "yes", one that never does gives "no"."""
    items = mi.candidates(8, {"failure": 4})
    assert {i.meta["source_family"] for i in items} == {"nesttom", "games"}
    agents = {n: ReferenceAgent(n, "habit", seed=1) for n in ("right", "wrong")}
    asked: list[str] = []

    class Reply:
        def __init__(self, answer: Any) -> None:
            self.answer, self.error = answer, None

    async def ask(agent: ReferenceAgent, item: Item, *key: Any) -> Reply:
        asked.append(mi.kind_of(item))
        correct = str(item.truth["correct"])
        if agent.name == "right":
            return Reply(correct)
        return Reply(next(str(c) for c in item.answer["choices"] if str(c) != correct))

    _, record = await run_pilot(agents, items, 3, ask, rule=mi.PilotFilter(min_items=1))
    assert set(asked) == {"nesttom", "games"}  # the questions, not the failure items
    for f in record.candidates:
        assert f.modes == {"right": ("yes",), "wrong": ("no",)}
        assert f.answers == {"right": 3, "wrong": 3}
        assert f.kept


async def test_pilot_needs_two_samples() -> None:
    with pytest.raises(UserError):
        await run_pilot({"a": ReferenceAgent("a", "habit")}, [], 1, matrix_ask)
