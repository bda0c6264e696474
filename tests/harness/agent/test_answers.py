"""The answer protocol: building schemas and reading replies of every form."""

from __future__ import annotations

import json

import pytest

from harness.agent.answers import (
    answer_field,
    answer_tool,
    coerce,
    nudge_message,
    parse_reply,
    response_format,
)

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
        ('{\n  "answer": "blue box", "confidence": 0.5\n}', CHOICE, "blue_box"),
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
        ('{\n  "answer": "blue box"\n}', CHOICE),  # a JSON answer needs its confidence
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


# -- answers of the wrong type -----------------------------------------------------------------

ACTION = {"kind": "integer", "min": 0, "max": 2}


def call_of(tool: str, args: object) -> dict:
    return tool_msg(args) | {
        "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": tool, "arguments": args if isinstance(args, str) else json.dumps(args)}}]
    }  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "spec", "args", "problem"),
    [
        ("submit_action", ACTION, {"action": "0", "confidence": 0.5},
         'submit_action.action: expected an integer from 0 to 2, got the string "0"'),
        ("submit_action", ACTION, {"action": 1.5, "confidence": 0.5},
         "submit_action.action: expected an integer from 0 to 2, got the number 1.5"),
        ("submit_action", ACTION, {"action": True, "confidence": 0.5},
         "submit_action.action: expected an integer from 0 to 2, got the boolean true"),
        ("submit_action", ACTION, {"action": 3, "confidence": 0.5},
         "submit_action.action: expected an integer from 0 to 2, got the number 3"),
        ("submit_action", ACTION, {"answer": 1, "confidence": 0.5},
         "submit_action.action is missing: expected an integer from 0 to 2 "
         "(the arguments hold: answer, confidence)"),
        ("submit_answer", CHOICE, {"answer": 0, "confidence": 0.5},
         'submit_answer.answer: expected one of the strings "blue_box", "drawer", "safe", '
         "got the number 0"),
        ("submit_answer", YESNO, {"answer": True, "confidence": 0.5},
         'submit_answer.answer: expected the string "yes" or "no", got the boolean true'),
        ("submit_answer", {"kind": "open"}, {"answer": 42, "confidence": 0.5},
         "submit_answer.answer: expected a string of 1 to 200 characters, got the number 42"),
        ("submit_answer", {"kind": "distribution", "choices": ["a", "b"]},
         {"answer": [0.5, 0.5], "confidence": 0.5},
         "submit_answer.answer: expected an object with a probability (a number from 0 to 1) "
         'for each of "a", "b", got an array [0.5, 0.5]'),
        ("submit_answer", CHOICE, {"answer": "safe", "confidence": 50},
         "submit_answer.confidence: expected a number from 0 to 1, got the number 50"),
        ("submit_answer", CHOICE, {"answer": "safe", "confidence": "high"},
         'submit_answer.confidence: expected a number from 0 to 1, got the string "high"'),
        ("submit_answer", CHOICE, {"answer": "safe", "confidence": -0.1},
         "submit_answer.confidence: expected a number from 0 to 1, got the number -0.1"),
        ("submit_answer", CHOICE, {"answer": "safe"},
         "submit_answer.confidence is missing: expected a number from 0 to 1"),
        ("submit_answer", CHOICE, {"confidence": 0.5},
         'submit_answer.answer is missing: expected one of the strings "blue_box", "drawer", '
         '"safe" (the arguments hold: confidence)'),
        ("submit_action", ACTION, {"action": "1", "confidence": "1"},
         'submit_action.action: expected an integer from 0 to 2, got the string "1"; '
         'submit_action.confidence: expected a number from 0 to 1, got the string "1"'),
        ("submit_answer", CHOICE, [1], "submit_answer.arguments: expected a JSON object, got an array [1]"),
    ],
)  # fmt: skip
def test_a_tool_answer_of_the_wrong_type_is_unparsed_naming_field_expected_and_got(
    tool: str, spec: dict, args: object, problem: str
) -> None:
    """Before, "0" was read as 0, 50 as 0.5, a missing or unreadable confidence as none, and
    true as "yes": answers scored as if the agent had given them."""
    p = parse_reply(call_of(tool, args), spec, tool)
    assert (p.answer, p.confidence, p.via, p.problem) == (None, None, None, problem)


@pytest.mark.parametrize(
    ("tool", "spec", "args", "answer"),
    [
        ("submit_action", ACTION, {"action": 2, "confidence": 1}, 2),
        ("submit_action", ACTION, {"action": 2.0, "confidence": 0}, 2),  # integral, as in JSON Schema
        ("submit_answer", CHOICE, {"answer": "The Blue Box", "confidence": 0.5}, "blue_box"),
        ("submit_answer", YESNO, {"answer": "Yes", "confidence": 0.5}, "yes"),
        ("submit_answer", {"kind": "distribution", "choices": ["a", "b"]},
         {"answer": {"a": 1, "b": 3}, "confidence": 0.5}, {"a": 0.25, "b": 0.75}),
        ("submit_answer", CHOICE, {"answer": "safe", "confidence": 0.5, "why": "extra keys ignored"},
         "safe"),
    ],
)  # fmt: skip
def test_answers_of_the_right_type_are_read_as_before(
    tool: str, spec: dict, args: object, answer: object
) -> None:
    p = parse_reply(call_of(tool, args), spec, tool)
    assert (p.answer, p.via, p.problem) == (answer, "tool", None)
    assert p.confidence == float(args["confidence"])  # type: ignore[index]


@pytest.mark.parametrize(
    ("content", "spec", "problem"),
    [
        ('{"answer": "0", "confidence": 0.5}', ACTION,
         'content.answer: expected an integer from 0 to 2, got the string "0"'),
        ('Thinking.\n{"action": "0", "confidence": 0.5}', ACTION,
         'content.action: expected an integer from 0 to 2, got the string "0"'),
        ('{"answer": 1, "confidence": 300}', ACTION,
         "content.confidence: expected a number from 0 to 1, got the number 300"),
        ('{"answer": 1}', ACTION, "content.confidence is missing: expected a number from 0 to 1"),
        ('{"answer": ["safe"], "confidence": 0.5}', CHOICE,
         'content.answer: expected one of the strings "blue_box", "drawer", "safe", '
         'got an array ["safe"]'),
    ],
)  # fmt: skip
def test_a_json_answer_of_the_wrong_type_is_unparsed(content: str, spec: dict, problem: str) -> None:
    p = parse_reply({"role": "assistant", "content": content}, spec)
    assert (p.answer, p.problem) == (None, problem)


@pytest.mark.parametrize(
    ("content", "answer", "confidence", "problem"),
    [
        ("ANSWER: 0", 0, None, None),  # text is text: "0" is 0
        ("ANSWER: 1\nCONFIDENCE: 0.25", 1, 0.25, None),
        ("ANSWER: 1\nCONFIDENCE: 80%", 1, 0.8, None),
        ("ANSWER: 1\nCONFIDENCE: 7", None, None,
         'the CONFIDENCE line: expected a number from 0 to 1 (or a percentage such as 80%), got "7"'),
        ("ANSWER: 1\nCONFIDENCE: high", None, None,
         "the CONFIDENCE line: expected a number from 0 to 1 (or a percentage such as 80%), "
         'got "high"'),
        ("ANSWER: 5", None, None,
         'the ANSWER line: expected a whole number from 0 to 2, got the string "5"'),
        ("I pick one or two.", None, None,
         "no ANSWER line, and the last line is not an answer: expected a whole number from 0 to "
         '2, got the string "I pick one or two."'),
    ],
)  # fmt: skip
def test_text_answers_are_read_leniently_but_a_bad_confidence_line_is_a_problem(
    content: str, answer: object, confidence: float | None, problem: str | None
) -> None:
    """A CONFIDENCE line of 7 was read as 0.07, and one of "high" was dropped."""
    p = parse_reply({"role": "assistant", "content": content}, ACTION)
    assert (p.answer, p.confidence, p.problem) == (answer, confidence, problem)


def test_the_nudge_says_what_was_wrong() -> None:
    problem = 'submit_action.action: expected an integer from 0 to 2, got the string "0"'
    nudge = nudge_message(ACTION, "tools", "submit_action", problem)
    assert nudge == (
        "I could not find an answer in your reply. What was wrong: " + problem + ". Answer by "
        "calling submit_action with your answer (a whole number from 0 to 2) and your confidence."
    )
    assert nudge_message(ACTION, "text").startswith("I could not find an answer in your reply. End")


def test_the_answer_tool_names_its_field_as_the_parser_reads_it() -> None:
    for tool in ("submit_answer", "submit_action", "my_tool"):
        params = answer_tool(ACTION, tool)["function"]["parameters"]
        assert params["required"] == [answer_field(tool), "confidence"]
        ok = {answer_field(tool): 1, "confidence": 0.5}
        assert parse_reply(call_of(tool, ok), ACTION, tool).answer == 1
