"""Property tests (hypothesis) of the semantics and the generator.

The semantics are checked against :func:`naive_answer`, a direct, slow transcription of the
rules with sets (no bit masks, no precomputation), on random valid stories.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nesttom import (
    BELIEF_TYPES,
    DEPTHS,
    MECHANISMS,
    Design,
    answer_chain,
    chain_answers,
    feasible,
    generate_items,
    validate_story,
)
from nesttom._tables import belief_table

CONTAINERS = ["c0", "c1", "c2", "c3"]


def naive_answer(story: dict[str, Any], chain: list[str], obj: str) -> str:
    """The rules of issue 3, transcribed literally."""
    belief = story["objects"][obj]
    present = set(story.get("present", story["agents"]))
    for ev in story["events"]:
        kind = ev["type"]
        if kind == "leave":
            present.discard(ev["agent"])
        elif kind == "enter":
            present.add(ev["agent"])
        elif kind == "move" and ev["object"] == obj:
            hidden = set(ev.get("hidden", []))
            observers = present | hidden
            if not chain:
                belief = ev["to"]  # reality: every move
            elif chain[0] in observers and all(
                a in observers and a not in hidden for a in chain[1:]
            ):
                belief = ev["to"]
        elif kind == "tell" and ev["object"] == obj and chain:
            parties = {ev["from"], ev["to"]}
            if all(a in parties for a in chain):
                if chain == [ev["from"]]:
                    pass  # a tell never changes its sender's own belief
                elif chain[0] == ev["from"]:
                    belief = ev["claimed"]
                else:
                    belief = ev.get("received", ev["claimed"])
    return belief


@st.composite
def stories(draw: st.DrawFn) -> dict[str, Any]:
    """A random valid story: 2–5 agents, 1–2 objects, up to 24 events of every kind."""
    agents = ["A", "B", "C", "D", "E"][: draw(st.integers(2, 5))]
    objects = {
        o: draw(st.sampled_from(CONTAINERS)) for o in ["key", "coin"][: draw(st.integers(1, 2))]
    }
    present = [a for a in agents if draw(st.booleans())] or [agents[0]]
    story: dict[str, Any] = {"agents": agents, "objects": objects, "present": list(present)}
    here = set(present)
    events: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["move", "move", "leave", "enter", "tell"]))
        away = [a for a in agents if a not in here]
        if kind == "move" and here:
            hidden = draw(st.lists(st.sampled_from(away), unique=True, max_size=2)) if away else []
            events.append(
                {
                    "type": "move",
                    "agent": draw(st.sampled_from(sorted(here))),
                    "object": draw(st.sampled_from(sorted(objects))),
                    "to": draw(st.sampled_from(CONTAINERS)),
                    "hidden": hidden,
                }
            )
        elif kind == "leave" and here:
            who = draw(st.sampled_from(sorted(here)))
            here.discard(who)
            events.append({"type": "leave", "agent": who})
        elif kind == "enter" and away:
            who = draw(st.sampled_from(away))
            here.add(who)
            events.append({"type": "enter", "agent": who})
        elif kind == "tell":
            sender, recipient = draw(st.permutations(agents))[:2]
            claimed = draw(st.sampled_from(CONTAINERS))
            ev = {
                "type": "tell",
                "from": sender,
                "to": recipient,
                "object": "key",
                "claimed": claimed,
            }
            if draw(st.booleans()):
                ev["received"] = draw(st.sampled_from(CONTAINERS))
            events.append(ev)
    story["events"] = events
    return story


def chains_of(agents: list[str], max_len: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for n in range(1, max_len + 1):
        out += [
            list(c)
            for c in product(agents, repeat=n)
            if all(c[i] != c[i + 1] for i in range(n - 1))
        ]
    return out


@settings(max_examples=150, deadline=None)
@given(stories())
def test_semantics_match_the_literal_rules(story: dict[str, Any]) -> None:
    s = validate_story(story)
    for obj in story["objects"]:
        for chain in chains_of(story["agents"], 3):
            assert answer_chain(s, chain, obj) == naive_answer(story, chain, obj), (chain, obj)


@settings(max_examples=100, deadline=None)
@given(stories())
def test_empty_chain_is_reality(story: dict[str, Any]) -> None:
    s = validate_story(story)
    for obj, start in story["objects"].items():
        moves = [ev["to"] for ev in story["events"] if ev["type"] == "move" and ev["object"] == obj]
        assert answer_chain(s, [], obj) == (moves[-1] if moves else start)


@settings(max_examples=60, deadline=None)
@given(stories())
def test_prefix_answers_in_one_pass(story: dict[str, Any]) -> None:
    s = validate_story(story)
    for chain in chains_of(story["agents"], 4):
        answers = chain_answers(s, chain, "key")
        assert answers == [naive_answer(story, chain[:k], "key") for k in range(len(chain) + 1)]


@settings(max_examples=100, deadline=None)
@given(stories())
def test_generator_table_matches_the_semantics(story: dict[str, Any]) -> None:
    # the generator selects chains from a table of every (first agent, tail set) belief
    s = validate_story(story)
    comp = s.compiled
    table = belief_table(len(s.agents), comp.initial["key"], comp.records["key"])
    for chain in chains_of(story["agents"], 4)[1:]:
        tail = 0
        for a in chain[1:]:
            tail |= 1 << comp.index[a]
        assert table[comp.index[chain[0]]][tail] == answer_chain(s, chain, "key"), chain


@settings(max_examples=100, deadline=None)
@given(stories())
def test_round_trip_through_json_form(story: dict[str, Any]) -> None:
    s = validate_story(story)
    assert validate_story(s.to_dict()) == s


cells = st.tuples(
    st.sampled_from(DEPTHS),
    st.sampled_from(BELIEF_TYPES),
    st.sampled_from(MECHANISMS),
    st.sampled_from([6, 12, 20]),
    st.integers(3, 5),
).filter(lambda c: feasible(c[0], c[2]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), cells)
def test_generated_items_hold_their_invariants(seed: int, cell: tuple[Any, ...]) -> None:
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
        companions=True,
    )
    main = items[0]
    truth, meta = main.truth, main.meta
    story = validate_story(truth["story"])  # every generated story passes the validator
    assert len(story.events) == length and len(story.agents) == agents
    answers = chain_answers(story, truth["chain"], truth["object"])
    assert truth["answer"] == answers[-1] and truth["reality"] == answers[0]
    assert (
        truth["prefix_answers"] == answers[1:-1]
        if truth["chain"]
        else truth["prefix_answers"] == []
    )
    assert meta["depth"] == depth and len(truth["chain"]) == meta["depth_n"]
    if depth != "R0":
        if belief == "true":
            assert truth["answer"] == truth["reality"]
        else:
            assert truth["answer"] != truth["reality"]
            assert truth["answer"] not in truth["prefix_answers"]
            if depth == "R2-self":
                assert truth["answer"] != truth["self_belief"]
    else:
        own = [answer_chain(story, [a], truth["object"]) for a in story.agents]
        assert any(b != truth["reality"] for b in own) == (belief == "false")
    for item in items:  # companions and applied items share the story
        assert item.meta["story_id"] == meta["story_id"]
        assert validate_story(item.truth["story"]) == story
    # determinism: the same call gives byte-identical items
    again = generate_items(
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
        companions=True,
    )
    assert [i.to_dict() for i in again] == [i.to_dict() for i in items]
