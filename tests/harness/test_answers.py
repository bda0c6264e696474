"""The answer protocol: building schemas and reading replies of every form."""

from __future__ import annotations

import json

import pytest

from harness.answers import answer_tool, coerce, parse_reply, response_format

CHOICE = {"kind": "choice", "choices": ["blue_box", "drawer", "safe"]}
INT = {"kind": "integer", "min": 11, "max": 20}
YESNO = {"kind": "yesno"}


def tool_msg(args: object) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "submit_answer",
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        ],
    }


def test_tool_call_preferred() -> None:
    p = parse_reply(
        tool_msg({"answer": "Drawer", "confidence": 0.8}) | {"content": "ANSWER: safe"}, CHOICE
    )
    assert (p.answer, p.confidence, p.via) == ("drawer", 0.8, "tool")


def test_tool_call_bad_json_is_a_problem_not_a_crash() -> None:
    p = parse_reply(tool_msg("{not json"), CHOICE)
    assert p.answer is None and "not JSON" in (p.problem or "")


@pytest.mark.parametrize(
    ("content", "spec", "expected"),
    [
        ('{"answer": "safe", "confidence": 0.4}', CHOICE, "safe"),
        ('{\n  "answer": "blue box"\n}', CHOICE, "blue_box"),
        ("Let me think.\nAnn was out.\nANSWER: the drawer\nCONFIDENCE: 70%", CHOICE, "drawer"),
        ("Thinking...\nThe key is in the safe.", CHOICE, "safe"),
        ("I choose 17.", INT, 17),
        ('{"answer": 19, "confidence": 1}', INT, 19),
        ("Answer: Yes.", YESNO, "yes"),
    ],
)
def test_free_forms(content: str, spec: dict, expected: object) -> None:
    assert parse_reply({"role": "assistant", "content": content}, spec).answer == expected


@pytest.mark.parametrize(
    ("content", "spec"),
    [
        ("", CHOICE),
        ("It could be the drawer or the safe.", CHOICE),
        ("ANSWER: 25", INT),  # out of range
        ("ANSWER: 12 or 13", INT),
        ('{"answer": "attic"}', CHOICE),
    ],
)
def test_unparseable_gives_none_with_problem(content: str, spec: dict) -> None:
    p = parse_reply({"role": "assistant", "content": content}, spec)
    assert p.answer is None and p.problem


def test_confidence_parsing() -> None:
    p = parse_reply({"content": "ANSWER: safe\nCONFIDENCE: 0.25"}, CHOICE)
    assert p.confidence == 0.25
    assert (
        parse_reply({"content": '{"answer": "safe", "confidence": 300}'}, CHOICE).confidence is None
    )


def test_distribution_normalised() -> None:
    spec = {"kind": "distribution", "choices": ["a", "b"]}
    assert coerce({"a": 1, "b": 3}, spec) == ({"a": 0.25, "b": 0.75}, None)
    assert coerce({"a": -1, "b": 3}, spec)[0] is None


def test_schemas_are_well_formed() -> None:
    tool = answer_tool(CHOICE)
    assert tool["function"]["parameters"]["properties"]["answer"]["enum"] == CHOICE["choices"]
    fmt = response_format(INT)
    ans = fmt["json_schema"]["schema"]["properties"]["answer"]
    assert ans == {"type": "integer", "minimum": 11, "maximum": 20}


OPEN = {"kind": "open", "choices": ["banana", "apple", "other"]}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"answer": "  A ripe   banana ", "confidence": 0.9}', "A ripe banana"),
        ("Hmm, fruit.\nANSWER: mango\nCONFIDENCE: 0.5", "mango"),
    ],
)
def test_open_answers_are_kept_as_free_text(content: str, expected: str) -> None:
    """An open answer is any short text (the item's clusters label it later), trimmed."""
    p = parse_reply({"role": "assistant", "content": content}, OPEN)
    assert (p.answer, p.problem) == (expected, None)


def test_open_answers_refuse_empty_long_and_non_text() -> None:
    assert coerce("   ", OPEN)[0] is None and "empty" in (coerce("   ", OPEN)[1] or "")
    assert coerce("x" * 201, OPEN)[0] is None
    assert coerce(["banana"], OPEN)[0] is None and coerce(True, OPEN)[0] is None
    assert coerce(42, OPEN) == ("42", None)
    schema = answer_tool(OPEN)["function"]["parameters"]["properties"]["answer"]
    assert schema == {"type": "string", "minLength": 1, "maxLength": 200}
    assert response_format(OPEN)["json_schema"]["schema"]["properties"]["answer"] == schema
