"""The generator: B1/B2/B4 cells, determinism, item contents, surface forms, regeneration."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from mindledger.canonical import canonical_json
from mindledger.items import Item
from nesttom import (
    DEPTHS,
    FORMS,
    MECHANISMS,
    VERSION,
    Design,
    Move,
    Tell,
    b1_items,
    b2_items,
    b4_items,
    chain_answers,
    feasible,
    generate_items,
    generate_story,
    regenerate,
    render_story,
    sender_beliefs,
    validate_story,
    verify_items,
)
from nesttom._render import event_lines

META_KEYS = {
    "depth",
    "depth_n",
    "belief",
    "mechanism",
    "length",
    "agents",
    "form",
    "question",
    "story_id",
}
TRUTH_KEYS = {"answer", "reality", "chain", "object", "prefix_answers", "projection"}


@pytest.fixture(scope="module")
def b1() -> list[Item]:
    return b1_items(11)


def test_b1_has_every_depth_cell(b1: list[Item]) -> None:
    cells = Counter((i.meta["depth"], i.meta["belief"]) for i in b1)
    assert cells == {(d, b): 60 for d in DEPTHS for b in ("false", "true")}
    assert {i.meta["length"] for i in b1} == {12} and {i.meta["agents"] for i in b1} == {4}
    # crossed within each depth: mechanisms (the feasible ones) and forms equally often
    for depth in DEPTHS:
        mine = [i for i in b1 if i.meta["depth"] == depth]
        mechs = Counter(i.meta["mechanism"] for i in mine)
        assert set(mechs) == {m for m in MECHANISMS if feasible(depth, m)}
        assert len(set(mechs.values())) == 1
        assert Counter(i.meta["form"] for i in mine) == {f: 40 for f in FORMS}


def test_b1_items_are_ground_truthed(b1: list[Item]) -> None:
    for item in b1:
        t, m = item.truth, item.meta
        assert set(m) >= META_KEYS and set(t) >= TRUTH_KEYS
        assert item.family == "nesttom" and item.version == VERSION
        assert item.answer == {"kind": "choice", "choices": sorted(item.answer["choices"])}
        story = validate_story(t["story"])
        assert item.answer["choices"] == story.containers()
        assert t["answer"] in item.answer["choices"] and t["reality"] in item.answer["choices"]
        answers = chain_answers(story, t["chain"], t["object"])
        assert answers[0] == t["reality"] and answers[-1] == t["answer"]
        if m["depth"] == "R0":
            assert t["chain"] == [] and t["prefix_answers"] == [] and t["projection"] is None
            continue
        assert answers[1:-1] == t["prefix_answers"]
        assert t["projection"] == answers[1]
        if m["belief"] == "true":
            assert t["answer"] == t["reality"]
        else:  # the adversarial filter
            assert t["answer"] != t["reality"] and t["answer"] not in t["prefix_answers"]
    assert verify_items(b1[:200]) == []


def test_b1_false_belief_rows_differ_from_every_prefix_at_depth(b1: list[Item]) -> None:
    deep = [i for i in b1 if i.meta["depth"] == "R5" and i.meta["belief"] == "false"]
    for item in deep:
        t = item.truth
        assert len(t["chain"]) == 5 and len(t["prefix_answers"]) == 4
        assert t["answer"] not in {t["reality"], *t["prefix_answers"]}


def test_depth_shapes(b1: list[Item]) -> None:
    for item in b1:
        chain, depth = item.truth["chain"], item.meta["depth"]
        assert all(a != b for a, b in pairwise(chain))
        if depth == "R3-loop":
            assert chain[0] == chain[2] and chain[0] != chain[1]
        elif depth == "R3":
            assert len(set(chain)) == 3
        elif depth == "R2-self":
            assert chain[1] == "you" and "you" in item.truth["story"]["agents"]
            assert "You are one of the people" in item.prompt
            if item.meta["belief"] == "false":  # differs from your own true belief
                assert item.truth["answer"] != item.truth["self_belief"]
        else:
            assert "you" not in item.truth["story"]["agents"]


def test_mechanisms_are_present_and_decisive_where_feasible(b1: list[Item]) -> None:
    for item in b1:
        mech, features = item.meta["mechanism"], item.meta["features"]
        assert mech in features or mech == "absence"
        events = item.truth["story"]["events"]
        hidden = any(e.get("hidden") for e in events)
        tells = [e for e in events if e["type"] == "tell"]
        if mech == "absence":
            assert not hidden and not tells
        if mech == "secret-observation":
            assert hidden and not tells
        own = [b for b in sender_beliefs(item.truth["story"]) if b is not None]
        lies = [e["claimed"] != b for e, b in zip(tells, own, strict=True)]
        garbles = [e["received"] != e["claimed"] for e in tells]
        if mech == "lie":
            assert any(lies) and not any(garbles)
        if mech == "garble":
            assert any(garbles) and not any(lies)
        if mech == "stale-then-corrected":
            assert not any(lies) and not any(garbles)
            # a later message to the same recipient, saying something else
            last: dict[str, str] = {}
            corrected = False
            for e in tells:
                corrected |= e["to"] in last and last[e["to"]] != e["received"]
                last[e["to"]] = e["received"]
            assert corrected
        if item.meta["depth"] == "R3-loop":  # a loop differs from its prefix only by a secret watch
            assert hidden
    decisive = Counter(
        (i.meta["depth"], i.truth["decisive"])
        for i in b1
        if i.meta["belief"] == "false" and i.meta["mechanism"] in ("lie", "garble")
    )
    # messages can decide R1/R2/R2-self/R3-loop answers, never an R3 one (three distinct agents)
    assert decisive[("R1", False)] == decisive[("R2", False)] == 0
    assert decisive[("R3", True)] == 0


def test_deterministic_and_seed_dependent() -> None:
    a = generate_items(3, 24, applied=True, companions=True)
    b = generate_items(3, 24, applied=True, companions=True)
    assert b"\n".join(canonical_json(i.to_dict()) for i in a) == b"\n".join(
        canonical_json(i.to_dict()) for i in b
    )
    c = generate_items(4, 24)
    assert [i.id for i in c] != [i.id for i in a if i.params["role"] == "main"]
    # the main items do not depend on whether applied or companion items were asked for
    plain = generate_items(3, 24)
    assert [i.id for i in plain] == [i.id for i in a if i.params["role"] == "main"]


def test_version_is_in_every_item_and_regeneration_checks_it() -> None:
    item = generate_items(5, 1)[0]
    assert item.version == VERSION and item.generator == "nesttom"
    assert regenerate(item) == item
    older = Item.from_dict({**item.to_dict(), "id": "", "version": "0.9"})
    with pytest.raises(ValueError, match=r"version 0\.9"):
        regenerate(older)
    tampered = replace(item, truth={**item.truth, "answer": "nowhere"}, id="")
    assert verify_items([tampered]) != []


def test_surface_forms_render_the_same_events() -> None:
    drawn = generate_story(
        np.random.default_rng(8),
        depth="R2",
        belief="false",
        mechanism="garble",
        length=20,
        agents=5,
    )
    story = drawn.story
    for form in FORMS:
        lines = event_lines(story, form)
        assert len(lines) == len(story.events)
        for line, ev in zip(lines, story.events, strict=True):
            if isinstance(ev, Move):
                assert ev.agent in line and ev.object in line and ev.to in line
                assert all(h in line for h in ev.hidden)
            elif isinstance(ev, Tell):
                assert ev.sender in line and ev.recipient in line and ev.claimed in line
                garbled = "garbled" in line or "delivered=" in line
                assert ev.received in line and garbled == (ev.received != ev.claimed)
            else:
                assert ev.agent in line
        text = render_story(story, form)
        for line in lines:
            assert line in text
    # the same index tells the same story in every form
    items = {f: generate_items(9, 1, Design(forms=(f,)))[0] for f in FORMS}
    assert len({i.meta["story_id"] for i in items.values()}) == 1
    assert len({i.prompt for i in items.values()}) == 3


def test_prompt_ends_with_question_and_instruction(b1: list[Item]) -> None:
    for item in b1[:50]:
        *_, question, how = item.prompt.split("\n")
        assert question.startswith("Question: Where ") and question.endswith("?")
        assert (
            how
            == "Answer with the name of one container: " + ", ".join(item.answer["choices"]) + "."
        )


def test_applied_items_balance_yes_and_no() -> None:
    items = generate_items(2, 96, Design(depths=("R1", "R2", "R3")), applied=True)
    judgments = [i for i in items if i.meta["question"] == "judgment"]
    behaviour = [i for i in items if i.meta["question"] == "behaviour"]
    assert len(judgments) == len(behaviour) == 96
    for depth in ("R1", "R2", "R3"):
        answers = Counter(i.truth["answer"] for i in judgments if i.meta["depth"] == depth)
        assert answers["yes"] == answers["no"] == 16
    for item in judgments:
        t = item.truth
        assert item.answer == {"kind": "yesno"}
        assert t["answer"] == ("yes" if t["looked"] == t["belief"] else "no")
        assert re.search(r"looks? for the \w+ in the \w+ first\.", item.prompt)
    for item in behaviour:
        assert "look for the" in item.prompt and item.truth["answer"] in item.answer["choices"]
    assert verify_items(judgments[:20] + behaviour[:20]) == []


def test_b2_and_b4_builders() -> None:
    b2 = b2_items(1, per_cell=4)
    assert Counter((i.meta["length"], i.meta["belief"], i.meta["depth"]) for i in b2) == {
        (n, b, "R2"): 4 for n in (6, 12, 20) for b in ("false", "true")
    }
    b4 = b4_items(1, per_cell=6)
    assert Counter((i.meta["depth"], i.meta["question"]) for i in b4) == {
        (d, q): 6 for d in ("R1", "R2", "R3") for q in ("behaviour", "judgment")
    }
    # on B1's own stories: the same story ids as B1 belief items of the same seed
    b1_ids = {i.meta["story_id"] for i in b1_items(1, per_cell=3)}
    assert {i.meta["story_id"] for i in b4 if i.meta["depth"] == "R1"} & b1_ids


def test_companions_give_every_prefix_on_the_same_story() -> None:
    items = generate_items(6, 8, Design(depths=("R4",)), companions=True)
    main = items[0]
    mine = [i for i in items if i.meta["story_id"] == main.meta["story_id"]]
    assert [i.meta["depth_n"] for i in mine] == [4, 0, 1, 2, 3]
    assert [i.truth["chain"] for i in mine[1:]] == [main.truth["chain"][:k] for k in range(4)]
    assert {i.meta["selection"] for i in mine[1:]} == {"companion"}
    assert [i.truth["answer"] for i in mine[1:]] == [
        main.truth["reality"],
        *main.truth["prefix_answers"],
    ]


def test_a_design_crosses_the_levels_it_is_given_and_refuses_unknown_or_missing_ones() -> None:
    design = Design(depths=["R1", "R2"], lengths=[6, 20], agents=[3])  # lists are kept as tuples
    assert design == Design(depths=("R1", "R2"), lengths=(6, 20), agents=(3,))
    assert hash(design) == hash(Design(depths=("R1", "R2"), lengths=(6, 20), agents=(3,)))
    cells = [design.cell(i)[0] for i in range(8)]
    assert {c[0] for c in cells} == {"R1", "R2"} and {c[1] for c in cells} == {"false", "true"}
    assert {c[3] for c in cells} == {6, 20} and {c[4] for c in cells} == {3}
    items = generate_items(1, 4, design)
    assert [(i.meta["depth"], i.meta["length"], i.meta["agents"]) for i in items] == [
        ("R1", 6, 3),
        ("R2", 6, 3),
        ("R1", 6, 3),
        ("R2", 6, 3),
    ]
    for factors, match in (
        ({"depths": ()}, "no depth given"),
        ({"forms": ("telegram",)}, "unknown form 'telegram'"),
        ({"belief_types": ("maybe",)}, "unknown belief type"),
        ({"agents": ()}, "no length or agent count"),
    ):
        with pytest.raises(ValueError, match=match):
            Design(**factors)


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="infeasible"):
        generate_story(
            np.random.default_rng(0), depth="R3-loop", belief="false", mechanism="absence"
        )
    with pytest.raises(ValueError, match="no feasible mechanism"):
        generate_items(0, 1, Design(depths=("R3-loop",), mechanisms=("absence",)))
    with pytest.raises(ValueError, match="seed"):
        generate_items(-1, 1)
    with pytest.raises(ValueError, match="unknown depth"):
        generate_items(0, 1, Design(depths=("R9",)))
