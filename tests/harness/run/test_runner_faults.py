"""The runner against the fault-injecting OpenAI-compatible server on 127.0.0.1: retries and
backoff, errors recorded and counted, nothing lost, no trial duplicated."""

from __future__ import annotations

import asyncio
import json

import pytest

import games
from harness.adapters import ChatPolicy, OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent
from harness.run.runner import execute_run
from harness.testing import FakeOpenAI, Faults
from ledger.db import open_engine
from ledger.store import RunAgent, Store

N = 12


def setup(url: str) -> tuple[Store, list]:
    items = games.generate_items(11, N, games=("11-20",), conditions=("recursive",))
    store = Store(open_engine(url))
    store.create_run("r", suite="t", seed=1, held_out=False, params={},
                     agents=[RunAgent("a", "agent", {})], items=items)
    return store, items


class Retries:
    """A progress sink that keeps the retries it is told of."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str, str]] = []
        self.failures: list[tuple[str, str]] = []

    def start(self, totals: object, done: object) -> None: ...

    def advance(self, agent: str, *, correct: object, error: bool) -> None: ...

    def failed(self, agent: str, what: str) -> None:
        self.failures.append((agent, what))

    def retried(self, agent: str, kind: str, what: str) -> None:
        self.heard.append((agent, kind, what))

    def stop(self) -> None: ...


def run(
    store: Store, items: list, base_url: str, progress: object = None, **client: object
) -> object:
    async def go() -> object:
        policy = ChatPolicy(
            concurrency=4, timeout=2.0, max_retries=3, backoff_base=0.01, backoff_max=0.05
        )
        backend = OpenAIBackend(OpenAIChat(base_url, "m", policy=policy, **client))
        agent = ChatAgent("a", backend, spec={}, answer_mode="tools")
        try:
            return await execute_run(store, "r", [agent], items, concurrency={"a": 4},
                                     progress=progress)  # type: ignore[arg-type]  # fmt: skip
        finally:
            await agent.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("kind", ["429", "500", "drop", "disconnect", "malformed", "timeout"])
def test_transient_faults_are_retried_and_nothing_is_lost(sqlite_url: str, kind: str) -> None:
    store, items = setup(sqlite_url)
    faults = Faults(kinds=(kind,), first=2, retry_after="0", hang=5.0)
    with FakeOpenAI(answer=lambda body: "60", faults=faults) as server:
        summary = run(store, items, server.base_url)
        stats = server.stats()
    trials = store.trials("r")
    assert len(trials) == N and len({t.item_id for t in trials}) == N  # none lost, none doubled
    assert all(t.status == "ok" for t in trials)
    # each distinct request body fails twice, then succeeds (items with identical prompts share
    # a body, so only the first of them meets the faults)
    attempts = [json.loads(t.provider_json or "{}")["attempts"] for t in trials]
    assert sum(attempts) == stats["requests"] == N + 2 * stats["distinct"]
    assert attempts.count(3) == stats["distinct"]
    assert stats["outcomes"]["ok"] == N
    assert summary.per_agent["a"].api_errors == 0  # type: ignore[attr-defined]


def test_persistent_faults_are_recorded_and_counted(sqlite_url: str) -> None:
    store, items = setup(sqlite_url)
    faults = Faults(kinds=("500",), first=99)
    heard = Retries()
    with FakeOpenAI(answer=lambda body: "60", faults=faults) as server:
        summary = run(store, items, server.base_url, progress=heard)
        assert server.stats()["requests"] == 4 * N  # 1 + max_retries attempts each
    # each failed attempt but the last of each trial was said to the progress, with the agent's
    # name and the cause, while the run went on
    assert len(heard.heard) == 3 * N
    assert {(a, k) for a, k, _ in heard.heard} == {("a", "server_error")}
    assert all(what.startswith("server error: ") for _, _, what in heard.heard)
    trials = store.trials("r")
    # and each trial that failed, with what went wrong as it is stored
    assert sorted(heard.failures) == sorted(("a", t.error or "") for t in trials)
    assert len(trials) == N
    assert all(t.status == "api_error" and t.correct is None for t in trials)
    assert all("server_error" in (t.error or "") for t in trials)
    assert summary.per_agent["a"].api_errors == N  # type: ignore[attr-defined]
    # a resumed run does not retry what was recorded: the pair has its trial
    again = run(store, items, "http://127.0.0.1:9/v1")
    assert again.attempted == 0 and len(store.trials("r")) == N  # type: ignore[attr-defined]


def test_mixed_faults_at_a_rate(sqlite_url: str) -> None:
    store, items = setup(sqlite_url)
    faults = Faults(kinds=("429", "500", "drop", "malformed"), rate=0.3, seed=5, retry_after="0")
    with FakeOpenAI(answer=lambda body: "60", faults=faults, latency=0.01) as server:
        summary = run(store, items, server.base_url)
    trials = store.trials("r")
    pairs = [(t.agent, t.item_id) for t in trials]
    assert len(pairs) == len(set(pairs)) == N
    api_errors = sum(t.status == "api_error" for t in trials)
    assert summary.per_agent["a"].api_errors == api_errors  # type: ignore[attr-defined]
    assert all(t.correct is not None for t in trials if t.status == "ok")
