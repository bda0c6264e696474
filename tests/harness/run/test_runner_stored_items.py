"""A run whose items are read back from storage (``Store.run_items``, as ``mindledger run``
executes a run) stores exactly the trials of the same run given its items in memory: the same
requests reach the agent, and the same answers get the same scores and rows."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

import games
import nesttom
from harness.agent.agents import ChatAgent, ChatReply, ReferenceAgent
from harness.run.runner import AgentLike, execute_run
from ledger.db import open_engine
from ledger.store import RunAgent, Store, StoredItems
from mindledger.items import Item

ITEMS: list[Item] = [
    *games.generate_items(11, 10, conditions=("recursive",)),
    *nesttom.generate_items(11, 10),
]


class Deterministic:
    """A chat backend that answers from a hash of the whole request: a value the answer tool
    allows (right for some items, wrong for others), and the same reply to the same request."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        request = json.dumps([messages, tools, response_format], sort_keys=True)
        self.requests.append(request)
        h = int(hashlib.sha256(request.encode()).hexdigest()[:8], 16)
        tool = (tools or [])[0]["function"]
        name = tool["parameters"]["required"][0]
        schema = tool["parameters"]["properties"][name]
        value = (
            schema["enum"][h % len(schema["enum"])]
            if "enum" in schema
            else schema["minimum"] + h % (schema["maximum"] - schema["minimum"] + 1)
        )
        call = {
            "id": "1",
            "type": "function",
            "function": {
                "name": tool["name"],
                "arguments": json.dumps({name: value, "confidence": 0.5}),
            },
        }
        return ChatReply(
            message={"role": "assistant", "content": None, "tool_calls": [call]},
            model="deterministic",
            tokens_in=10,
            tokens_out=2,
        )

    async def aclose(self) -> None:
        return None


def run(store: Store, run_id: str, items: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Execute ``run_id`` over ``items`` with a chat agent and a random reference; return the
    requests the chat agent received (sorted) and the trials as stored, without the run id,
    times and latencies."""
    backend = Deterministic()
    agents: list[AgentLike] = [
        ChatAgent("chat", backend, spec={}, answer_mode="tools"),
        ReferenceAgent("random", "random", seed=5),
    ]
    asyncio.run(execute_run(store, run_id, agents, items, concurrency={"chat": 3, "random": 2}))
    trials = sorted(
        (
            t.agent,
            t.item_id,
            t.status,
            t.answer_json,
            t.raw_text,
            t.confidence,
            t.correct,
            t.score_value,
            t.primary_error,
            t.score_json,
            t.transcript_json,
            t.turns,
            t.tokens_in,
            t.tokens_out,
            t.error,
            t.provider_json,
        )
        for t in store.trials(run_id)
    )
    return sorted(backend.requests), trials


def test_items_read_from_storage_give_the_trials_of_items_in_memory(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(StoredItems, "PAGE", 3)  # several pages, read as the workers reach them
    monkeypatch.setattr(StoredItems, "PAGES_KEPT", 2)
    store = Store(open_engine(db_url))
    for run_id in ("memory", "stored"):
        store.create_run(
            run_id,
            suite="t",
            seed=1,
            held_out=False,
            params={},
            agents=[RunAgent("chat", "agent", {}), RunAgent("random", "reference", {})],
            items=ITEMS,
        )
    stored = store.run_items("stored")
    assert isinstance(stored, StoredItems)
    memory_requests, memory_trials = run(store, "memory", ITEMS)
    stored_requests, stored_trials = run(store, "stored", stored)

    assert len(memory_trials) == 2 * len(ITEMS)
    assert stored_requests == memory_requests
    assert stored_trials == memory_trials
    outcomes = {t[6] for t in memory_trials if t[0] == "chat"}
    assert outcomes == {True, False}  # the comparison covers right and wrong answers
