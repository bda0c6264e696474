"""The embedded model's agents spread conversations over its server processes: a new
conversation to the least busy server, every later turn of it to the same one (whose prompt
cache holds it); no client timeout for the embedded model; scaffold steps capped like any
turn. Unit tests of the balancer, then the `local` kind over two real fake servers."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from harness.adapters.balanced import BalancedBackend
from harness.adapters.kinds import BuildContext
from harness.adapters.openai import ChatPolicy, OpenAIChat
from harness.adapters.registry import build_agent
from harness.agent.agents import ChatAgent, ChatReply
from harness.config.settings import load_settings
from harness.run.build import BUILTIN_AGENTS
from harness.run.suites import get_suite
from harness.testing.fake_openai import FakeOpenAI


class Recorder:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[dict[str, Any]] = []
        self.delay = delay
        self.closed = False

    async def chat(self, messages: list[dict[str, Any]], **kw: Any) -> ChatReply:
        self.calls.append({"messages": [dict(m) for m in messages], **kw})
        await asyncio.sleep(self.delay)
        return ChatReply(message={"role": "assistant", "content": "ok"})

    async def aclose(self) -> None:
        self.closed = True


def conversation(n: int) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "s"}, {"role": "user", "content": f"question {n}"}]


async def test_new_conversations_go_to_the_least_busy_and_later_turns_stay() -> None:
    a, b = Recorder(delay=0.05), Recorder(delay=0.05)
    balanced = BalancedBackend([a, b])
    await asyncio.gather(*(balanced.chat(conversation(n)) for n in range(6)))
    assert (len(a.calls), len(b.calls)) == (3, 3)  # in flight: spread evenly
    home = {c["messages"][1]["content"]: "a" for c in a.calls}
    home |= {c["messages"][1]["content"]: "b" for c in b.calls}
    # the second turn of each conversation (its reply and a new user turn appended)
    for n in range(6):
        later = [*conversation(n), {"role": "assistant", "content": "ok"},
                 {"role": "user", "content": "now answer"}]
        await balanced.chat(later)
    for recorder, name in ((a, "a"), (b, "b")):
        for call in recorder.calls[3:]:
            assert home[call["messages"][1]["content"]] == name
    assert balanced.in_flight == [0, 0]
    await balanced.aclose()
    assert a.closed and b.closed


async def test_a_finished_request_frees_its_server_for_the_next_conversation() -> None:
    a, b = Recorder(), Recorder()
    balanced = BalancedBackend([a, b])
    for n in range(4):  # one at a time: ties go by how many each was sent
        await balanced.chat(conversation(n))
    assert (len(a.calls), len(b.calls)) == (2, 2)


def test_a_balanced_backend_needs_a_backend() -> None:
    with pytest.raises(ValueError):
        BalancedBackend([])


def test_no_timeout_is_allowed_and_a_bad_one_refused() -> None:
    assert OpenAIChat("http://127.0.0.1:9/v1", "m", policy=ChatPolicy(timeout=None)).timeout is None
    with pytest.raises(ValueError, match="timeout must be positive"):
        ChatPolicy(timeout=0)


async def test_scaffold_steps_are_capped_by_the_agents_own_max_tokens() -> None:
    item = next(it for it in get_suite("quick").items(4) if it.family == "nesttom")
    for max_tokens, step in ((96, 96), (512, 256)):
        backend = Recorder()
        agent = ChatAgent("a", backend, modules=("perspective",), answer_mode="json",
                          max_tokens=max_tokens)
        await agent.attempt(item)
        assert backend.calls[0]["max_tokens"] == step  # the perspective step
        assert backend.calls[1]["max_tokens"] == max_tokens  # the answer turn


async def test_the_local_agent_spreads_over_the_servers_it_is_given(tmp_path: Any) -> None:
    settings = load_settings(None, env={}, flags={"home": str(tmp_path)})
    items = [it for it in get_suite("quick").items(4) if it.family == "nesttom"][:8]
    async with FakeOpenAI(log_bodies=True) as one, FakeOpenAI(log_bodies=True) as two:
        config = replace(BUILTIN_AGENTS["local"], concurrency=4)
        agent = build_agent(config, BuildContext(settings, seed=0,
                                                 local_base_url=(one.base_url, two.base_url)))
        assert isinstance(agent, ChatAgent)
        assert isinstance(agent.backend, BalancedBackend)
        # the embedded model is only ever busy, never gone: no timeout cancels its work
        assert [b.client.timeout for b in agent.backend.backends] == [None, None]  # type: ignore[attr-defined]
        try:
            await asyncio.gather(*(agent.attempt(it) for it in items))
        finally:
            await agent.aclose()
    assert one.log and two.log  # both servers were used
    for server in (one, two):
        for logged in server.log:
            assert logged.body is not None
            question = next(m["content"] for m in logged.body["messages"] if m["role"] == "user")
            # every turn of a conversation went to the server that had its first turn
            other = two if server is one else one
            assert all(
                question != next(m["content"] for m in o.body["messages"] if m["role"] == "user")
                for o in other.log if o.body is not None
            )
