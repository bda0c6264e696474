"""The story validator: defaults, round trip, and every rejection naming its place."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mindledger.errors import InputError
from nesttom import Move, Tell, answer_chain, answer_questions, validate_story

BASE: dict[str, Any] = {
    "agents": ["Ann", "Ben", "Cal"],
    "objects": {"key": "drawer"},
    "present": ["Ann", "Ben", "Cal"],
    "events": [
        {"type": "leave", "agent": "Cal"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": ["Cal"]},
        {"type": "enter", "agent": "Cal"},
        {"type": "tell", "from": "Ann", "to": "Ben", "object": "key", "claimed": "box"},
    ],
    "questions": [{"chain": ["Ann", "Cal"], "object": "key"}, {"chain": [], "object": "key"}],
}


def edited(path: list[Any], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    story = copy.deepcopy(BASE)
    node: Any = story
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return story


def test_defaults() -> None:
    story = copy.deepcopy(BASE)
    del story["present"]
    del story["events"][1]["hidden"]
    s = validate_story(story)
    assert s.present == ("Ann", "Ben", "Cal")  # everyone
    assert s.events[1] == Move("Ann", "key", "safe", ())  # no hidden watchers
    assert s.events[3] == Tell("Ann", "Ben", "key", "box", "box")  # received = claimed
    # without the hidden list, Cal was absent and did not watch: the old place
    assert answer_chain(s, ["Cal"], "key") == "drawer"


def test_round_trip() -> None:
    s = validate_story(BASE)
    assert validate_story(s.to_dict()) == s


@pytest.mark.parametrize(
    ("story", "where", "needle"),
    [
        (edited(["agents"], None, delete=True), "story", "missing field 'agents'"),
        (edited(["events"], None, delete=True), "story", "missing field 'events'"),
        (edited(["events", 1, "to"], None, delete=True), "events[1]", "missing field 'to'"),
        (
            edited(["events", 3, "claimed"], None, delete=True),
            "events[3]",
            "missing field 'claimed'",
        ),
        (edited(["events", 0, "type"], None, delete=True), "events[0]", "missing field 'type'"),
        (
            edited(["questions", 0, "object"], None, delete=True),
            "questions[0]",
            "missing field 'object'",
        ),
        (edited(["events", 1, "agent"], "Zed"), "events[1].agent", "unknown agent 'Zed'"),
        (edited(["events", 3, "to"], "Zed"), "events[3].to", "unknown agent 'Zed'"),
        (edited(["events", 1, "object"], "coin"), "events[1].object", "unknown object 'coin'"),
        (
            edited(["questions", 1, "object"], "coin"),
            "questions[1].object",
            "unknown object 'coin'",
        ),
        (
            edited(["questions", 0, "chain"], ["Ann", "Zed"]),
            "questions[0].chain[1]",
            "unknown agent",
        ),
        (
            edited(["events", 1, "agent"], "Cal"),
            "events[1].agent",
            "Cal moves the key but is not present",
        ),
        (
            edited(["events", 1, "hidden"], ["Ben"]),
            "events[1].hidden[0]",
            "hidden watcher Ben is present",
        ),
        (
            edited(["questions", 0, "chain"], ["Ann", "Cal", "Cal"]),
            "questions[0].chain",
            "twice in a row",
        ),
        (edited(["events", 0, "agent"], "Zed"), "events[0].agent", "unknown agent"),
        (edited(["events", 2, "type"], "leave"), "events[2].agent", "leaves but is not present"),
        (edited(["events", 0, "type"], "enter"), "events[0].agent", "already present"),
        (edited(["events", 3, "to"], "Ann"), "events[3].to", "themself"),
        (edited(["events", 0, "type"], "teleport"), "events[0].type", "unknown event type"),
        (edited(["events", 1, "hiden"], ["Cal"]), "events[1].hiden", "unknown field 'hiden'"),
        (edited(["events", 1, "to"], ""), "events[1].to", "non-empty string"),
        (edited(["events", 1, "to"], 3), "events[1].to", "non-empty string"),
        (edited(["agents"], ["Ann", "Ann"]), "agents[1]", "listed twice"),
        (edited(["present"], ["Ann", "Zed"]), "present[1]", "unknown agent"),
        (edited(["objects"], {}), "objects", "non-empty"),
        (edited(["events"], {"type": "leave"}), "events", "expected a list"),
    ],
)
def test_rejections_name_the_place(story: dict[str, Any], where: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        validate_story(story)
    assert info.value.where == where
    assert needle in str(info.value)
    assert str(info.value).startswith(where + ": ")


def test_not_an_object() -> None:
    with pytest.raises(InputError, match="must be a JSON object"):
        validate_story([1, 2])


def test_answer_questions_needs_questions_and_echoes_extra_keys() -> None:
    story = copy.deepcopy(BASE)
    story["questions"][0]["id"] = "q1"
    out = answer_questions(story)
    assert out[0] == {"chain": ["Ann", "Cal"], "object": "key", "id": "q1", "answer": "drawer"}
    del story["questions"]
    with pytest.raises(InputError, match="missing field 'questions'"):
        answer_questions(story)


def test_answer_chain_checks_its_arguments() -> None:
    s = validate_story(BASE)
    with pytest.raises(InputError, match="twice in a row"):
        answer_chain(s, ["Ann", "Ann"], "key")
    with pytest.raises(InputError, match="unknown agent"):
        answer_chain(s, ["Zed"], "key")
    with pytest.raises(InputError, match="unknown object"):
        answer_chain(s, [], "coin")
    # a dict is validated on the way in
    assert answer_chain(BASE, ["Ann", "Cal"], "key") == "drawer"


def test_event_annotations_are_ignored_but_near_misses_refused() -> None:
    story = {
        "agents": ["Ann", "Ben"],
        "objects": {"key": "drawer"},
        "events": [
            {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "note": "distractor"},
            {
                "type": "tell",
                "from": "Ann",
                "to": "Ben",
                "object": "key",
                "claimed": "box",
                "lie": True,
            },
        ],
    }
    validate_story(story)  # annotations do not change the answer: accepted
    story["events"][1]["recieved"] = "bag"  # type: ignore[index]
    with pytest.raises(InputError, match="did you mean 'received'"):
        validate_story(story)
