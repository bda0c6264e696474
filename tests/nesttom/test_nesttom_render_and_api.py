"""Question wording, the second person for "you", and the public surface."""

from __future__ import annotations

import nesttom
from nesttom import render_story, validate_story
from nesttom._render import behaviour_question, belief_question, judgment_question

SELF_STORY = {
    "agents": ["Ann", "you"],
    "objects": {"key": "drawer"},
    "events": [
        {"type": "leave", "agent": "you"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": ["you"]},
        {"type": "enter", "agent": "you"},
        {
            "type": "tell",
            "from": "you",
            "to": "Ann",
            "object": "key",
            "claimed": "box",
            "received": "tin",
        },
    ],
}


def test_questions() -> None:
    assert belief_question([], "key") == "Where is the key really?"
    assert belief_question(["Ann"], "key") == "Where does Ann think the key is?"
    assert belief_question(["Ann", "you"], "key") == "Where does Ann think you think the key is?"
    assert belief_question(["you", "Ann"], "key") == "Where do you think Ann thinks the key is?"
    assert (
        belief_question(["Ann", "Ben", "Ann"], "key")
        == "Where does Ann think Ben thinks Ann thinks the key is?"
    )
    assert behaviour_question(["Ben"], "key") == "Where will Ben look for the key first?"
    assert (
        behaviour_question(["Ann", "Ben"], "key")
        == "Where does Ann think Ben will look for the key first?"
    )
    assert judgment_question(["Ben"], "key", "box") == (
        "Ben looks for the key in the box first. Is that reasonable, given what Ben has seen and been told?"
    )
    assert judgment_question(["Ann", "Ben"], "key", "box") == (
        "Ben looks for the key in the box first. Does Ann think that is reasonable, "
        "given what Ann thinks Ben has seen and been told?"
    )


def test_you_in_every_form() -> None:
    story = validate_story(SELF_STORY)
    narrative = render_story(story, "narrative")
    assert "You leave the room." in narrative
    assert "you secretly watch from outside" in narrative
    assert (
        'You send Ann a private message: "The key is in the box." It arrives garbled, and Ann reads'
        in narrative
    )
    assert "You are one of the people" in narrative
    chat = render_story(story, "chat")
    assert "*** You have left the chat ***" in chat and "[Direct message] You -> Ann" in chat
    log = render_story(story, "log")
    assert "1 leave agent=you" in log and "secret_watchers=you" in log and "delivered=tin" in log


def test_public_api() -> None:
    for name in nesttom.__all__:
        assert hasattr(nesttom, name), name
    for name in (
        "answer_chain",
        "validate_story",
        "answer_questions",
        "generate_items",
        "b1_items",
        "score",
        "reference_answer",
        "import_hitom",
    ):
        assert callable(getattr(nesttom, name))
