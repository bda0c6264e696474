"""Identifiable lures (issue 11): the wrong answers the error coder names — reality, the
projection and the truncations — differ from one another and from the answer, so a wrong answer
says which failure it was; what stays ambiguous is listed in ``meta["ambiguous"]``; and
``meta["causes"]`` names the mechanisms behind a false belief.

The properties are checked against the reference semantics (``chain_answers``) on the finished
stories, not against the generator's own tables."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindledger.items import Item
from nesttom import (
    DEPTHS,
    MECHANISMS,
    Design,
    ambiguities,
    answer_chain,
    b1_items,
    b2_items,
    b4_items,
    chain_answers,
    error_codes,
    feasible,
    generate_items,
    generate_story,
    regenerate,
    sender_beliefs,
    validate_story,
    verify_items,
)

TYPES = ("reality_leak", "projection", "truncation")


def lures(item: Item) -> tuple[str, str, list[str], str]:
    """(reality, projection, truncations, answer) of a belief or behaviour item at depth 2 or
    more, from its story."""
    t = item.truth
    answers = chain_answers(validate_story(t["story"]), t["chain"], t["object"])
    return answers[0], answers[1], answers[2:-1], answers[-1]


def assert_identifiable(item: Item) -> None:
    if item.meta["depth_n"] < 2:  # no projection, no truncation: reality is the only lure
        assert (item.truth["answer"] != item.truth["reality"]) == (
            item.meta["belief"] == "false" and item.meta["depth_n"] == 1
        )
        return
    reality, projection, truncations, answer = lures(item)
    if item.meta["belief"] == "false":
        # pairwise distinct, and none is the answer
        assert answer not in (reality, projection, *truncations)
        assert reality != projection
        assert reality not in truncations and projection not in truncations
    else:  # a true-belief control: the answer is reality; a wrong truncation is not the projection
        assert answer == reality
        for t in truncations:
            assert t == reality or t != projection
    pairs = [tag.split("=") for tag in item.meta["ambiguous"]]
    assert not [p for p in pairs if p[0] in TYPES and p[1] in TYPES]


cells = st.tuples(
    st.sampled_from([d for d in DEPTHS if d not in ("R0", "R1")]),
    st.sampled_from(["false", "true"]),
    st.sampled_from(MECHANISMS),
    st.sampled_from([6, 12, 20]),
    st.integers(3, 5),
).filter(lambda c: feasible(c[0], c[2]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), cells)
def test_required_lures_are_identifiable(seed: int, cell: tuple[Any, ...]) -> None:
    depth, belief, mechanism, length, agents = cell
    items = generate_items(
        seed,
        1,
        Design(
            depths=(depth,),
            belief_types=(belief,),
            mechanisms=(mechanism,),
            lengths=(length,),
            agents=(agents,),
        ),
        applied=True,
        lures="require",
    )
    main = items[0]
    assert main.meta["belief"] == belief and main.params["lures"] == "require"
    for item in items:
        if item.meta["question"] != "judgment":  # the same chain asked as a behaviour question
            assert_identifiable(item)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from(["R2", "R3", "R3-loop", "R4", "R5"]))
def test_a_required_false_belief_is_coded_as_what_answered_it(seed: int, depth: str) -> None:
    item = generate_items(
        seed, 1, Design(depths=(depth,), belief_types=("false",)), lures="require"
    )[0]
    reality, projection, truncations, _ = lures(item)
    assert error_codes(item, reality) == (("reality_leak",), "reality_leak")
    assert error_codes(item, projection) == (("projection",), "projection")
    for k, t in enumerate(truncations, start=2):
        codes, primary = error_codes(item, t)
        assert primary is not None and primary.startswith("truncation:")
        assert f"truncation:{k}" in codes and {c.split(":")[0] for c in codes} == {"truncation"}


@pytest.mark.parametrize(
    "items",
    [
        pytest.param(lambda: b1_items(7, per_cell=6, companions=True), id="B1"),
        pytest.param(lambda: b2_items(7, per_cell=6), id="B2"),
        pytest.param(lambda: b4_items(7, per_cell=6), id="B4"),
    ],
)
def test_the_blocks_require_identifiable_lures(items: Any) -> None:
    built = items()
    for item in built:
        assert item.params["lures"] == "require"
        if item.meta["question"] == "judgment":
            # two answers for three lures: a "yes" answered "no" matches every lure
            continue
        if item.meta["selection"] == "companion":
            continue  # a prefix of an identifiable chain; its lures are the main item's
        assert_identifiable(item)
    assert verify_items(built[:40]) == []


def test_the_main_lures_make_companions_identifiable_too() -> None:
    for item in b1_items(3, per_cell=4, companions=("false",)):
        if item.meta["selection"] == "companion" and item.meta["belief"] == "false":
            tags = [t for t in item.meta["ambiguous"] if "own_belief" not in t]
            assert tags == [], item.meta


def test_prefer_falls_back_and_says_so() -> None:
    items = generate_items(11, 96)
    assert {i.params["lures"] for i in items} == {"prefer"}
    tagged = [i for i in items if i.meta["ambiguous"]]
    for item in items:
        assert item.meta["ambiguous"] == ambiguities(item.truth, item.answer)
    # most items have identifiable lures even when they are only preferred
    error_tags = [i for i in tagged if any("own_belief" not in t for t in i.meta["ambiguous"])]
    assert len(error_tags) < len(items) // 5


def test_require_needs_long_enough_stories() -> None:
    with pytest.raises(ValueError, match="at least 6 events"):
        generate_items(0, 1, Design(depths=("R3",), lengths=(5,)), lures="require")
    with pytest.raises(ValueError, match="unknown lures"):
        generate_items(0, 1, lures="always")
    # depth 0 and 1 have nothing to tell apart beyond the adversarial filter
    assert generate_items(0, 2, Design(depths=("R1",), lengths=(4,)), lures="require")


def test_regeneration_keeps_block_and_lures() -> None:
    items = b1_items(5, per_cell=1, companions=True, block="quick") + b4_items(5, per_cell=1)
    assert {i.meta["block"] for i in items} == {"quick", "B4"}
    for item in items[:30]:
        assert regenerate(item) == item
    assert verify_items(items) == []


# ----------------------------------------------------------------------------------------------
# ambiguities(): hand-built truths


def truth(**kw: Any) -> dict[str, Any]:
    base = {
        "answer": "box",
        "reality": "safe",
        "chain": ["Ann", "Ben", "Cal"],
        "prefix_answers": ["tin", "jar"],
        "projection": "tin",
    }
    return {**base, **kw}


CHOICE = {"kind": "choice", "choices": ["box", "safe", "tin", "jar", "bag"]}


def test_ambiguities_of_choice_questions() -> None:
    assert ambiguities(truth(), CHOICE) == []
    # the depth-2 truncation is where it really is
    assert ambiguities(truth(prefix_answers=["tin", "safe"]), CHOICE) == ["reality_leak=truncation"]
    # Ann saw the last move: the projection is reality
    assert ambiguities(truth(prefix_answers=["safe", "tin"], projection="safe"), CHOICE) == [
        "reality_leak=projection"
    ]
    # two truncations with one answer: the type is still known
    deep = truth(chain=["A", "B", "C", "D"], prefix_answers=["tin", "jar", "jar"])
    assert ambiguities(deep, CHOICE) == []
    # a true-belief control: reality is the answer, not a lure
    control = truth(answer="safe", prefix_answers=["tin", "tin"])
    assert ambiguities(control, CHOICE) == ["projection=truncation"]


def test_ambiguities_of_r2_self_and_judgments() -> None:
    r2_self = truth(chain=["Ann", "you"], prefix_answers=["tin"], self_belief="safe")
    assert ambiguities(r2_self, CHOICE) == ["reality_leak=own_belief"]
    assert ambiguities({**r2_self, "self_belief": "bag"}, CHOICE) == []
    assert ambiguities({**r2_self, "answer": "safe", "self_belief": "safe"}, CHOICE) == [
        "own_belief=answer"
    ]
    # "Cal looked in the box (where Ann thinks Ben thinks Cal believes it is): reasonable?"
    yes = truth(answer="yes", looked="box", belief="box")
    # answered "no", any lure would have said so
    assert ambiguities(yes, {"kind": "yesno"}) == [
        "reality_leak=projection",
        "reality_leak=truncation",
        "projection=truncation",
    ]
    # looked where it really is: only judging by reality says "yes"
    no = truth(answer="no", looked="safe", belief="box")
    assert ambiguities(no, {"kind": "yesno"}) == []


# ----------------------------------------------------------------------------------------------
# causes: re-derived by neutralising each mechanism in the story itself


def present_at_moves(story: dict[str, Any], who: Any) -> dict[str, Any]:
    """The story with, before every move, exactly ``who(move)`` present (the rest absent), and
    no other leaves or enters."""
    agents = story["agents"]
    here = set(story.get("present", agents))
    events: list[dict[str, Any]] = []
    for ev in story["events"]:
        if ev["type"] in ("leave", "enter"):
            continue
        if ev["type"] == "move":
            want = who(ev, here)
            for a in agents:
                if a in here and a not in want:
                    events.append({"type": "leave", "agent": a})
                    here.discard(a)
            for a in agents:
                if a not in here and a in want:
                    events.append({"type": "enter", "agent": a})
                    here.add(a)
        events.append(ev)
    return {**story, "events": events}


def with_presence(story: dict[str, Any]) -> list[tuple[dict[str, Any], set[str]]]:
    """Each event with the agents present just before it."""
    here = set(story.get("present", story["agents"]))
    out = []
    for ev in story["events"]:
        out.append((ev, set(here)))
        if ev["type"] == "leave":
            here.discard(ev["agent"])
        elif ev["type"] == "enter":
            here.add(ev["agent"])
    return out


def neutral_stories(story: dict[str, Any], mechanism: str) -> list[dict[str, Any]]:
    everyone = set(story["agents"])
    if mechanism == "absence":  # every absent agent who is not a secret watcher sees the move
        return [present_at_moves(story, lambda ev, here: everyone - set(ev.get("hidden", [])))]
    if mechanism == "secret-observation":
        seen = {id(ev): here for ev, here in with_presence(story)}
        unwatched = [{**ev, "hidden": []} if ev["type"] == "move" else ev for ev in story["events"]]
        openly = present_at_moves(story, lambda ev, here: seen[id(ev)] | set(ev.get("hidden", [])))
        openly["events"] = [
            {**ev, "hidden": []} if ev["type"] == "move" else ev for ev in openly["events"]
        ]
        return [{**story, "events": unwatched}, openly]
    own = sender_beliefs(story)
    events = []
    told: set[str] = set()
    for ev, belief in zip(story["events"], own, strict=True):
        if ev["type"] == "tell":
            if mechanism == "lie":
                ev = {**ev, "claimed": belief, "received": belief}
            elif mechanism == "garble":
                ev = {**ev, "received": ev["claimed"]}
            elif ev["to"] in told:  # stale-then-corrected: no corrections
                continue
            told.add(ev["to"])
        events.append(ev)
    return [{**story, "events": events}]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from(DEPTHS), st.sampled_from(MECHANISMS))
def test_causes_are_the_mechanisms_whose_neutralisation_changes_the_answer(
    seed: int, depth: str, mechanism: str
) -> None:
    if not feasible(depth, mechanism):
        mechanism = "secret-observation"
    drawn = generate_story(
        np.random.default_rng(seed), depth=depth, belief="false", mechanism=mechanism
    )
    story = drawn.story.to_dict(questions=False)
    assert len(drawn.causes) == len(drawn.chain) + 1 and drawn.causes[0] == ()
    for k in range(1, len(drawn.chain) + 1):
        chain = drawn.chain[:k]
        answer = answer_chain(story, chain, drawn.object)
        expected = []
        for m in MECHANISMS:
            if m not in drawn.features:
                continue
            if m in ("lie", "garble", "stale-then-corrected") and m != drawn.mechanism:
                continue
            if any(
                answer_chain(validate_story(s), chain, drawn.object) != answer
                for s in neutral_stories(story, m)
            ):
                expected.append(m)
        assert list(drawn.causes[k]) == expected, (k, chain)
    if mechanism != "absence" and depth != "R0":
        assert drawn.decisive == (mechanism in drawn.causes[-1])


def test_items_report_causes_of_false_beliefs_only() -> None:
    items = generate_items(4, 160, companions=True)
    seen: Counter[str] = Counter()
    for item in items:
        m = item.meta
        if m["belief"] == "true" or m["reality_check"]:
            assert m["causes"] == []
        else:
            assert set(m["causes"]) <= set(m["features"])
            seen.update(m["causes"])
    assert set(seen) == set(MECHANISMS)
