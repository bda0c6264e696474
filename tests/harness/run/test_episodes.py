"""Playing repeated-game episodes: a chat agent round by round through the answer protocol
(with a fake backend), a reference agent without a model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from games.repeated import (
    episode_from_item,
    make_episode_item,
    reference_answer,
    score,
)
from harness.agent.agents import ChatAgent, ChatReply, ReferenceAgent
from harness.run.episodes import play_episode
from mindledger.canonical import content_hash
from mindledger.errors import AgentError, InputError
from mindledger.items import Item

Reply = Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


class FakeBackend:
    """A ChatBackend whose replies come from ``reply(messages, request)``; it records every
    request and charges 100 prompt and 10 completion tokens per turn."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.requests: list[dict[str, Any]] = []

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        sent = [dict(m) for m in messages]
        request = {"messages": sent, "tools": tools, "response_format": response_format}
        self.requests.append(request)
        message = self.reply(sent, request)
        return ChatReply(message=message, model="fake", finish_reason="stop", tokens_in=100,
                         tokens_out=10, latency_s=0.5)

    async def aclose(self) -> None:
        return None


def tool_call(move: str, confidence: float = 0.8) -> dict[str, Any]:
    args = json.dumps({"answer": move, "confidence": confidence})
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "submit_answer", "arguments": args}}]}


def round_of(messages: list[dict[str, Any]]) -> int:
    user = next(m["content"] for m in messages if m["role"] == "user")
    found = re.search(r"^Round (\d+) of \d+\.$", user, re.MULTILINE)
    assert found, user
    return int(found.group(1))


def agent(backend: FakeBackend, mode: str = "tools", **kw: Any) -> ChatAgent:
    return ChatAgent("fake", backend, spec={"adapter": "fake"}, answer_mode=mode, **kw)


PD_COOPERATOR = {"game": "pd", "opponent": "always-cooperate"}


async def test_a_chat_agent_plays_every_round_and_is_scored() -> None:
    item = make_episode_item(1, PD_COOPERATOR)
    backend = FakeBackend(lambda msgs, req: tool_call("defection"))
    att = await play_episode(agent(backend, system_prompt="You are careful."), item)
    assert att.error is None and att.parse_problem is None
    assert att.answer["moves"] == ["defection"] * 16
    assert att.turns == 16 and len(backend.requests) == 16
    assert (att.tokens_in, att.tokens_out) == (1600, 160)
    assert att.latency_s == pytest.approx(8.0)
    assert att.provider["models"] == ["fake"] * 16 and att.provider["attempts"] == 16
    assert att.confidence == pytest.approx(0.8)
    # each round is one fresh chat: system prompt, then rules + the rounds so far + how to answer
    for r, req in enumerate(backend.requests, 1):
        system, user = req["messages"]
        assert system == {"role": "system", "content": "You are careful."}
        assert user["content"].startswith(item.prompt)
        assert f"Round {r} of 16." in user["content"]
        assert "Answer by calling submit_answer" in user["content"]
        assert [t["function"]["name"] for t in req["tools"]] == ["submit_answer"]
        assert req["tools"][0]["function"]["parameters"]["properties"]["answer"]["enum"] == [
            "cooperation", "defection"]
    assert "Round 15: defection / cooperation: 6 / 1" in backend.requests[-1]["messages"][1][
        "content"]
    # the whole transcript, every message tagged with its round
    assert len(att.transcript) == 16 * 3
    assert [m["round"] for m in att.transcript] == [r for r in range(1, 17) for _ in range(3)]
    # the episode's score, and the family scorer agrees with it
    sc = att.answer["score"]
    assert att.answer["tokens"] == 1760
    assert sc["total"] == 96 and sc["benchmark"] == 96 and sc["exploitation"] == 1
    assert sc["efficiency"] == pytest.approx(96 / 1760 * 1000)
    again = score(item, att.answer)
    assert again.correct and again.details["total"] == 96
    assert again.details["efficiency"] == sc["efficiency"]


async def test_the_round_prompt_carries_the_history_an_agent_needs() -> None:
    """An agent that reads the opponent's last move off the prompt and beats the cycle it
    follows wins every round after the first."""
    item = make_episode_item(2, {"game": "rps", "opponent": "pattern"})
    ep = episode_from_item(item)
    g = ep.game

    def beats(x: str) -> str:
        return next(y for y in g.labels if g.payoff[g.index(y)][g.index(x)] > 0)

    def reply(msgs: list[dict[str, Any]], req: dict[str, Any]) -> dict[str, Any]:
        seen = re.findall(r"^Round \d+: \S+ / (\S+): ", msgs[-1]["content"], re.MULTILINE)
        if not seen:
            return {"role": "assistant", "content": "I will open with rock.\nANSWER: rock"}
        return {"role": "assistant", "content": f"ANSWER: {beats(beats(seen[-1]))}"}

    att = await play_episode(agent(FakeBackend(reply), mode="text"), item)
    sc = att.answer["score"]
    assert sc["payoffs"][1:] == [1] * 23
    assert sc["best_response_round"] == 1 and sc["comprehension_round"] == 1


async def test_an_unparseable_reply_gets_one_nudge_then_counts_as_an_invalid_move() -> None:
    item = make_episode_item(3, {"game": "pd", "opponent": "always-cooperate", "rounds": 4})
    calls: dict[int, int] = {}

    def reply(msgs: list[dict[str, Any]], req: dict[str, Any]) -> dict[str, Any]:
        r = round_of(msgs)
        calls[r] = calls.get(r, 0) + 1
        if r == 2 and calls[r] == 1:  # garbage, then a valid move after the nudge
            return {"role": "assistant", "content": "Hmm, let me think about it."}
        if r == 3:  # a bad tool call, then garbage again: invalid
            return tool_call("betray") if calls[r] == 1 else {"role": "assistant",
                                                              "content": "no idea"}
        return tool_call("cooperation")

    backend = FakeBackend(reply)
    att = await play_episode(agent(backend), item)
    assert calls == {1: 1, 2: 2, 3: 2, 4: 1}
    assert att.turns == 6
    assert att.answer["moves"] == ["cooperation", "cooperation", None, "cooperation"]
    sc = att.answer["score"]
    assert sc["invalid_rounds"] == [3]
    assert sc["payoffs"] == [4, 4, 1, 4]  # the invalid round scores the worst outcome (1, 6)
    assert sc["opponent_payoffs"][2] == 6
    assert att.parse_problem is not None and att.parse_problem.startswith("round 3:")
    # the nudge follows a tool message answering the rejected call
    nudged = backend.requests[4]["messages"]
    assert [m["role"] for m in nudged] == ["user", "assistant", "tool", "user"]
    assert nudged[2]["tool_call_id"] == "call_1"
    assert nudged[3]["content"].startswith("I could not find an answer in your reply.")
    # the next round shows the invalid round to the agent
    assert "Round 3: (no valid action) / cooperation: 1 / 6" in backend.requests[5]["messages"][
        0]["content"]


async def test_json_answer_mode() -> None:
    item = make_episode_item(4, {"game": "pd", "opponent": "tit-for-tat", "rounds": 3})
    backend = FakeBackend(lambda msgs, req: {
        "role": "assistant", "content": json.dumps({"answer": "cooperation", "confidence": 1})})
    att = await play_episode(agent(backend, mode="json"), item)
    assert att.answer["moves"] == ["cooperation"] * 3
    assert backend.requests[0]["response_format"]["type"] == "json_schema"
    assert backend.requests[0]["tools"] is None


async def test_an_api_error_ends_the_episode_with_the_moves_so_far() -> None:
    item = make_episode_item(5, {"game": "pd", "opponent": "grim", "rounds": 5})

    def reply(msgs: list[dict[str, Any]], req: dict[str, Any]) -> dict[str, Any]:
        if round_of(msgs) == 3:
            raise AgentError("upstream exploded", kind="server_error", status=502)
        return tool_call("cooperation")

    att = await play_episode(agent(FakeBackend(reply)), item)
    assert att.error == "server_error: upstream exploded (round 3)"
    assert att.answer == {"moves": ["cooperation", "cooperation"], "tokens": 220}
    assert att.turns == 2 and {m["round"] for m in att.transcript} == {1, 2, 3}


async def test_the_turn_cap_applies_per_round() -> None:
    """30 rounds with a nudge in each is 60 turns: far above one item's cap, fine here."""
    item = make_episode_item(6, {"game": "rps", "opponent": "biased-switch", "rounds": 30})
    state = {"n": 0}

    def reply(msgs: list[dict[str, Any]], req: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        return ({"role": "assistant", "content": "thinking..."} if state["n"] % 2
                else tool_call("paper"))

    att = await play_episode(agent(FakeBackend(reply)), item)
    assert att.error is None and att.turns == 60
    assert att.answer["moves"] == ["paper"] * 30
    assert att.answer["score"]["switch_round"] == item.meta["switch_round"]


async def test_a_reference_agent_plays_without_a_model() -> None:
    item = make_episode_item(7, {"game": "pd", "opponent": "tit-for-tat"})
    att = await play_episode(ReferenceAgent("oracle", "oracle", seed=3), item)
    sc = att.answer["score"]
    assert att.turns == 0 and att.tokens_in == 0 and att.error is None
    assert sc["total"] == sc["benchmark"] == 66 and sc["efficiency"] is None
    assert att.answer["tokens"] == 0 and len(att.transcript) == 16
    assert score(item, att.answer).correct
    # the random reference agent draws from the generator ReferenceAgent.attempt derives
    rand = await play_episode(ReferenceAgent("random", "random", seed=3), item)
    digest = int(content_hash([3, "random", item.id])[7:23], 16)
    expected = reference_answer(item, "random", np.random.default_rng([3, digest]))
    assert rand.answer["moves"] == expected["moves"]
    again = await play_episode(ReferenceAgent("random", "random", seed=3), item)
    assert again.answer == rand.answer


async def test_only_repeated_items_and_reference_policies_that_play() -> None:
    other = Item(family="games", generator="g", version="1", seed=0, params={}, prompt="p",
                 answer={"kind": "yesno"}, truth={})
    with pytest.raises(InputError):
        await play_episode(ReferenceAgent("o", "oracle"), other)
    item = make_episode_item(8, {"game": "rps", "opponent": "wsls"})
    att = await play_episode(ReferenceAgent("l", "level:2"), item)
    assert att.not_applicable and att.answer is None and att.error is None
