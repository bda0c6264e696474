"""A chat agent's answer turns: the nudge after an unreadable answer, tool calls it must answer,
and what the trial keeps of why an answer could not be read."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import games
from harness.agent.agents import MAX_TURNS, ChatAgent
from tests.harness.command_examples import assistant_call as call
from tests.harness.command_examples import game_item, inductive_item
from tests.harness.run.test_episodes import FakeBackend


def scripted(*messages: dict[str, Any]) -> FakeBackend:
    """A backend answering with ``messages`` in turn (the last one again after that)."""
    replies = itertools.chain(messages, itertools.repeat(messages[-1]))
    return FakeBackend(lambda sent, request: copy.deepcopy(next(replies)))


async def test_a_refused_answer_call_is_answered_before_the_nudge_that_says_why() -> None:
    """The nudge used to follow an answer-tool call with no tool message for it (a request an
    OpenAI endpoint refuses with 400), and said only that no answer was found."""
    wrong = call("submit_action", {"action": "30", "confidence": 0.6})
    right = call("submit_action", {"action": 30, "confidence": 0.6}, "c2")
    backend = scripted(wrong, right)
    att = await ChatAgent("bot", backend).attempt(game_item())
    assert (att.answer, att.confidence, att.parse_problem, att.turns) == (30, 0.6, None, 2)
    said = 'submit_action.action: expected an integer from 0 to 65, got the string "30"'
    *_, assistant, tool, nudge = backend.requests[1]["messages"]
    assert assistant == {k: v for k, v in wrong.items() if v is not None}
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": f"not accepted: {said}"}
    assert nudge["role"] == "user" and f"What was wrong: {said}." in nudge["content"]


async def test_when_the_nudge_fails_too_the_trial_keeps_both_reasons() -> None:
    first = call("submit_action", {"action": "30", "confidence": 0.6})
    second = call("submit_action", {"action": 30}, "c2")
    att = await ChatAgent("bot", scripted(first, second)).attempt(game_item())
    assert att.answer is None and att.turns == 2
    assert att.parse_problem == (
        "submit_action.confidence is missing: expected a number from 0 to 1; before the nudge: "
        'submit_action.action: expected an integer from 0 to 65, got the string "30"'
    )
    same = await ChatAgent("bot", scripted(first)).attempt(game_item())
    assert same.parse_problem == (
        'submit_action.action: expected an integer from 0 to 65, got the string "30"'
    )


async def test_an_unknown_tool_is_told_the_tools_there_are() -> None:
    """A call of a tool the request does not offer (submit_answer where the games ask for
    submit_action) was answered "unknown tool" alone, and the agent kept calling it."""
    backend = scripted(
        call("submit_answer", {"answer": 30, "confidence": 0.6}),
        call("submit_action", {"action": 4, "confidence": 0.6}, "c2"),
    )
    att = await ChatAgent("bot", backend).attempt(inductive_item())
    assert att.answer == 4 and att.parse_problem is None
    assert backend.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "unknown tool 'submit_answer'; the tools are: submit_action, "
        "query_opponent_history",
    }


async def test_calling_only_other_tools_runs_into_the_turn_cap_with_a_reason() -> None:
    item = games.generate_items(4, 5, games=("all-pay",), conditions=("inductive",))[0]
    backend = scripted(call("query_opponent_history", {}))
    att = await ChatAgent("bot", backend).attempt(item)
    assert att.answer is None and att.turns == MAX_TURNS
    assert att.parse_problem == (
        f"the turn cap of {MAX_TURNS} was reached before submit_action was called"
    )
    # every call was answered with the item's result
    results = [m for m in att.transcript if m.get("role") == "tool"]
    assert len(results) == MAX_TURNS
    assert {m["content"] for m in results} == {item.tool_results["query_opponent_history"]}
