"""Hand-built stories with answers derived by hand from the semantics (issue 3, acceptance).

Each expected answer is reasoned out in a comment; none is computed by the code under test.
Reminder of the rules: a chain [a1..an] perceives a move iff a1 saw it (present or hidden
watcher) and every later agent saw it while present (not hidden); it perceives a tell iff every
agent of the chain is the sender or the recipient; a perceived tell gives ``claimed`` when a1 is
the sender (except the chain [sender] alone, which keeps its belief) and ``received`` when a1 is
the recipient; the empty chain is reality.
"""

from __future__ import annotations

from typing import Any

import pytest

from nesttom import answer_chain, answer_questions, chain_answers, sender_beliefs, validate_story


def ask(story: dict[str, Any], *chain: str, obj: str = "key") -> str:
    return answer_chain(validate_story(story), list(chain), obj)


# --- classic first-order false belief (Sally-Anne) -------------------------------------------

SALLY_ANNE = {
    "agents": ["Sally", "Anne"],
    "objects": {"marble": "basket"},
    "events": [
        {"type": "leave", "agent": "Sally"},
        {"type": "move", "agent": "Anne", "object": "marble", "to": "box"},
        {"type": "enter", "agent": "Sally"},
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        # reality: the only move put the marble in the box
        ((), "box"),
        # Sally was out during the move; coming back shows nothing (containers are opaque)
        (("Sally",), "basket"),
        # Anne made the move herself
        (("Anne",), "box"),
        # Anne saw Sally leave, so Anne knows Sally did not see the move
        (("Anne", "Sally"), "basket"),
        # Sally saw nothing, so her model of Anne has no move either
        (("Sally", "Anne"), "basket"),
    ],
)
def test_classic_false_belief(chain: tuple[str, ...], expected: str) -> None:
    assert ask(SALLY_ANNE, *chain, obj="marble") == expected


# --- second order, and the depth-3 / depth-4 staircase ---------------------------------------

# Everyone sees the ring go to the bowl; then Dan, Cat and Bob leave one by one, each missing
# one more move: bowl (A,B,C,D present), vase (A,B,C), jar (A,B), tin (A alone).
STAIRCASE = {
    "agents": ["Ana", "Bob", "Cat", "Dan"],
    "objects": {"ring": "cup"},
    "events": [
        {"type": "move", "agent": "Ana", "object": "ring", "to": "bowl"},
        {"type": "leave", "agent": "Dan"},
        {"type": "move", "agent": "Ana", "object": "ring", "to": "vase"},
        {"type": "leave", "agent": "Cat"},
        {"type": "move", "agent": "Ana", "object": "ring", "to": "jar"},
        {"type": "leave", "agent": "Bob"},
        {"type": "move", "agent": "Ana", "object": "ring", "to": "tin"},
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        ((), "tin"),
        (("Ana",), "tin"),
        (("Bob",), "jar"),  # Bob left before the tin move
        # second order: Ana saw Bob present for the jar move and saw him leave before the tin move
        (("Ana", "Bob"), "jar"),
        # Bob saw Ana make the jar move; he knows nothing after
        (("Bob", "Ana"), "jar"),
        # Cat saw bowl and vase with Bob present: her model of Bob ends at the vase
        (("Cat", "Bob"), "vase"),
        # depth 3: the moves all of Ana, Bob and Cat watched together: bowl, vase
        (("Ana", "Bob", "Cat"), "vase"),
        # depth 3 from Dan: Dan saw only the bowl move (all present)
        (("Dan", "Bob", "Ana"), "bowl"),
        # depth 4: only the bowl move was seen by all four
        (("Ana", "Bob", "Cat", "Dan"), "bowl"),
        # a loop without secret watching is no deeper than its prefix [Ana, Bob]: jar
        (("Ana", "Bob", "Ana"), "jar"),
    ],
)
def test_staircase_second_third_fourth_order(chain: tuple[str, ...], expected: str) -> None:
    assert ask(STAIRCASE, *chain, obj="ring") == expected


def test_staircase_prefix_answers_in_one_pass() -> None:
    # reality, then [Ana], [Ana, Bob], [Ana, Bob, Cat], [Ana, Bob, Cat, Dan] as derived above:
    # every prefix answer differs, which is what the adversarial filter asks of an R4 item
    assert chain_answers(validate_story(STAIRCASE), ["Ana", "Bob", "Cat", "Dan"], "ring") == [
        "tin",
        "tin",
        "jar",
        "vase",
        "bowl",
    ]


# --- hidden (secret) watchers ----------------------------------------------------------------

HIDDEN = {
    "agents": ["Ann", "Ben", "Cal", "Dee"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "Cal"},
        {"type": "leave", "agent": "Dee"},
        # Ann and Ben present; Cal and Dee each watch in secret
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": ["Cal", "Dee"]},
        {"type": "enter", "agent": "Cal"},
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        ((), "safe"),
        (("Cal",), "safe"),  # Cal watched, in secret
        (("Ben",), "safe"),  # Ben was present
        # nobody knows Cal saw it: Ann and Ben think Cal believes the old place
        (("Ann", "Cal"), "drawer"),
        (("Ben", "Cal"), "drawer"),
        # Cal saw Ann (present, the mover) see the move, so Cal knows Ann knows
        (("Cal", "Ann"), "safe"),
        (("Cal", "Ben"), "safe"),
        # R3-loop: Cal knows Ann does not know Cal saw it
        (("Cal", "Ann", "Cal"), "drawer"),
        # Cal does not know Dee watched too (hidden watchers are unseen by everyone)
        (("Cal", "Dee"), "drawer"),
        (("Dee",), "safe"),
    ],
)
def test_hidden_watcher(chain: tuple[str, ...], expected: str) -> None:
    assert ask(HIDDEN, *chain) == expected


# --- a lie ---------------------------------------------------------------------------------------

LIE = {
    "agents": ["Ann", "Ben", "Cal"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "Ben"},
        {"type": "leave", "agent": "Cal"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe"},
        # Ann believes "safe" and says "box": a lie
        {"type": "tell", "from": "Ann", "to": "Ben", "object": "key", "claimed": "box"},
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        ((), "safe"),
        (("Ann",), "safe"),  # a tell never changes its sender's own belief
        (("Ben",), "box"),  # the recipient trusts the message
        (("Ann", "Ben"), "box"),  # the sender believes the recipient believes what was claimed
        (("Ben", "Ann"), "box"),  # the recipient believes the sender believes what was received
        # every agent of [Ann, Ben, Ann] is a party; a1 is the sender: claimed
        (("Ann", "Ben", "Ann"), "box"),
        (("Cal",), "drawer"),  # Cal saw nothing and was told nothing
        (("Ann", "Cal"), "drawer"),  # Cal is no party to the message
        (("Ben", "Cal"), "drawer"),
    ],
)
def test_lie(chain: tuple[str, ...], expected: str) -> None:
    assert ask(LIE, *chain) == expected


def test_lie_is_detected_against_the_senders_belief() -> None:
    # at the tell (event 3) Ann's own belief is "safe": "box" is a lie
    assert sender_beliefs(validate_story(LIE)) == [None, None, None, "safe"]


# --- a garbled message ---------------------------------------------------------------------------

GARBLE = {
    "agents": ["Ann", "Ben"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "Ben"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe"},
        # truthful, but Ben reads "box"
        {
            "type": "tell",
            "from": "Ann",
            "to": "Ben",
            "object": "key",
            "claimed": "safe",
            "received": "box",
        },
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        (("Ben",), "box"),  # the recipient's own perspective uses what was received
        (("Ann", "Ben"), "safe"),  # the sender does not know it was garbled: claimed
        (("Ben", "Ann"), "box"),  # Ben believes Ann believes what Ben read
        (("Ann",), "safe"),
        (("Ben", "Ann", "Ben"), "box"),  # a1 is the recipient: received
        ((), "safe"),
    ],
)
def test_garble(chain: tuple[str, ...], expected: str) -> None:
    assert ask(GARBLE, *chain) == expected


def test_garble_prefix_answers_in_one_pass() -> None:
    # reality safe; [Ann] safe; [Ann, Ben] and [Ann, Ben, Ann]: a1 is the sender, so what was
    # claimed (safe), not what Ben read
    s = validate_story(GARBLE)
    assert chain_answers(s, ["Ann", "Ben", "Ann"], "key") == ["safe", "safe", "safe", "safe"]
    # from Ben's side every level has what Ben read
    assert chain_answers(s, ["Ben", "Ann", "Ben"], "key") == ["safe", "box", "box", "box"]


# --- a stale message, then a correction ----------------------------------------------------------

STALE: dict[str, Any] = {
    "agents": ["Ann", "Ben", "Cal"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "Ben"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe"},  # Ann, Cal see it
        {"type": "tell", "from": "Ann", "to": "Ben", "object": "key", "claimed": "safe"},
        {"type": "leave", "agent": "Cal"},
        # Ann alone sees this: what Ben was told ("safe") is now stale
        {"type": "move", "agent": "Ann", "object": "key", "to": "box"},
    ],
}
CORRECTED = {
    **STALE,
    "events": [
        *STALE["events"],
        # a second message to the same recipient: the correction
        {"type": "tell", "from": "Ann", "to": "Ben", "object": "key", "claimed": "box"},
    ],
}


def test_stale_message_before_the_correction() -> None:
    assert ask(STALE, "Ben") == "safe"  # told "safe", missed the move to the box
    assert ask(STALE, "Ann", "Ben") == "safe"  # Ann knows what she said and that Ben was out
    assert ask(STALE, "Cal") == "safe"  # Cal left before the box move


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        (("Ben",), "box"),  # the later message replaces the stale one
        (("Ann", "Ben"), "box"),
        (("Ben", "Ann"), "box"),
        (("Cal",), "safe"),  # Cal saw the safe move, not the box move, and no message
        # Cal is no party to the messages, and Ben was out for both moves
        (("Cal", "Ben"), "drawer"),
        (("Cal", "Ann"), "safe"),  # Cal saw Ann make the safe move, then left
        ((), "box"),
    ],
)
def test_correction(chain: tuple[str, ...], expected: str) -> None:
    assert ask(CORRECTED, *chain) == expected


def test_correction_from_another_sender_is_private_to_its_parties() -> None:
    story = {
        **STALE,
        "events": [
            *STALE["events"][:3],
            # Cal, who saw the safe move, writes too; then Ann alone moves it to the box
            {"type": "tell", "from": "Cal", "to": "Ben", "object": "key", "claimed": "safe"},
            {"type": "leave", "agent": "Cal"},
            {"type": "move", "agent": "Ann", "object": "key", "to": "box"},
            {"type": "tell", "from": "Cal", "to": "Ben", "object": "key", "claimed": "tin"},
        ],
    }
    # Ben's last message (Cal's, claiming tin) wins for Ben
    assert ask(story, "Ben") == "tin"
    # Ann is party only to her own message: her model of Ben stops at "safe"
    assert ask(story, "Ann", "Ben") == "safe"
    # Cal's model of Ben: both of Cal's messages, the last "tin"
    assert ask(story, "Cal", "Ben") == "tin"


# --- a relayed message ---------------------------------------------------------------------------

RELAY: dict[str, Any] = {
    "agents": ["Ann", "Ben", "Cal"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "Ben"},
        {"type": "leave", "agent": "Cal"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe"},
        {"type": "tell", "from": "Ann", "to": "Ben", "object": "key", "claimed": "safe"},
        # Ben passes on what he heard; Cal's copy is garbled
        {
            "type": "tell",
            "from": "Ben",
            "to": "Cal",
            "object": "key",
            "claimed": "safe",
            "received": "box",
        },
    ],
}


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        (("Cal",), "box"),  # what Cal received
        (("Ben", "Cal"), "safe"),  # Ben believes Cal got what Ben claimed
        (("Cal", "Ben"), "box"),  # Cal believes Ben believes what Cal received
        (("Ben",), "safe"),  # relaying does not change the relayer's belief
        # Ann is no party to the relay and saw Cal leave: Cal still has the start
        (("Ann", "Cal"), "drawer"),
        # Cal is no party to Ann's message and was out for the move
        (("Cal", "Ann"), "drawer"),
        # three distinct agents are never all parties to one message: only moves count, and
        # Ben and Cal were out for the only move
        (("Ann", "Ben", "Cal"), "drawer"),
        (("Ann", "Ben"), "safe"),
    ],
)
def test_relayed_message(chain: tuple[str, ...], expected: str) -> None:
    assert ask(RELAY, *chain) == expected


# --- distractors and the issue's own example -----------------------------------------------------


def test_moves_of_other_objects_are_distractors() -> None:
    story = {
        "agents": ["Ann", "Ben"],
        "objects": {"key": "drawer", "coin": "jar"},
        "events": [
            {"type": "leave", "agent": "Ben"},
            {"type": "move", "agent": "Ann", "object": "coin", "to": "drawer"},
            {"type": "tell", "from": "Ann", "to": "Ben", "object": "coin", "claimed": "drawer"},
        ],
    }
    assert ask(story, "Ben") == "drawer"  # the key never moved
    assert ask(story, "Ben", obj="coin") == "drawer"  # told
    assert ask(story, obj="coin") == "drawer"
    assert ask(story, "Ann", "Ben", obj="coin") == "drawer"


def test_issue_example() -> None:
    story = {
        "agents": ["Ann", "Ben", "Cal"],
        "objects": {"key": "drawer"},
        "present": ["Ann", "Ben", "Cal"],
        "events": [
            {"type": "leave", "agent": "Cal"},
            {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": ["Cal"]},
            {"type": "enter", "agent": "Cal"},
            {
                "type": "tell",
                "from": "Ann",
                "to": "Ben",
                "object": "key",
                "claimed": "box",
                "received": "box",
            },
        ],
        "questions": [{"chain": ["Ann", "Cal"], "object": "key"}, {"chain": [], "object": "key"}],
    }
    # Ann does not know Cal watched: drawer; reality is the safe (tells move nothing)
    assert answer_questions(story) == [
        {"chain": ["Ann", "Cal"], "object": "key", "answer": "drawer"},
        {"chain": [], "object": "key", "answer": "safe"},
    ]


def test_agents_absent_at_the_start() -> None:
    story: dict[str, Any] = {
        "agents": ["Ann", "Ben"],
        "objects": {"key": "drawer"},
        "present": ["Ann"],
        "events": [
            {"type": "move", "agent": "Ann", "object": "key", "to": "safe"},
            {"type": "enter", "agent": "Ben"},
            {"type": "move", "agent": "Ben", "object": "key", "to": "box"},
        ],
    }
    # Ben missed the first move but made the second, seen by both
    assert ask(story, "Ben") == "box"
    assert ask(story, "Ben", "Ann") == "box"
    # the initial container is common knowledge even to Ben, absent at the start
    assert ask({**story, "events": story["events"][:2]}, "Ben") == "drawer"
