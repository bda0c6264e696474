"""The runner end to end with real storage: command and reference agents on games items."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import games
from harness.agent.agents import ChatAgent, CommandBackend, ReferenceAgent
from harness.run.runner import execute_run
from ledger.db import open_engine
from ledger.store import RunAgent, Store

AGENT = str(Path(__file__).parents[1] / "scripts" / "fixed_agent.py")


def make_store(url: str, items: list, names: list[str]) -> Store:
    store = Store(open_engine(url))
    store.create_run("r", suite="t", seed=1, held_out=False, params={},
                     agents=[RunAgent(n, "agent", {}) for n in names], items=items)
    return store


def test_reference_and_command_agents(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = games.generate_items(3, 6, conditions=("recursive",))
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("AGENT_LOG", str(log))
    monkeypatch.setenv("FIXED_ANSWER", str(items[0].truth["target_action"]))
    store = make_store(db_url, items, ["oracle", "cmd"])
    cmd = ChatAgent("cmd", CommandBackend([sys.executable, AGENT]), spec={}, answer_mode="tools")
    agents = [ReferenceAgent("oracle", "oracle", seed=1), cmd]
    summary = asyncio.run(execute_run(store, "r", agents, items, concurrency={"oracle": 4, "cmd": 2}))
    assert summary.attempted == 12
    trials = store.trials("r")
    assert len(trials) == 12
    oracle = [t for t in trials if t.agent == "oracle"]
    assert all(t.correct for t in oracle if not json.loads(t.score_json or "{}").get("details", {}).get("excluded"))
    by_item = {t.item_id: t for t in trials if t.agent == "cmd"}
    assert by_item[items[0].id].correct is True
    # the game's own system prompt reached the agent, and the answer tool was offered
    req = json.loads(log.read_text().splitlines()[0])
    assert req["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in req["tools"]] == ["submit_action"]  # the paper's name
    # running again attempts nothing: every pair is stored
    again = asyncio.run(execute_run(store, "r", agents, items, concurrency={"oracle": 4, "cmd": 2}))
    assert again.attempted == 0 and len(store.trials("r")) == 12


def test_api_errors_recorded_not_scored(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    items = games.generate_items(5, 3, conditions=("recursive",))
    monkeypatch.setenv("FIXED_ANSWER", "FAIL")
    store = make_store(sqlite_url, items, ["cmd"])
    cmd = ChatAgent("cmd", CommandBackend([sys.executable, AGENT]), spec={}, answer_mode="tools")
    summary = asyncio.run(execute_run(store, "r", [cmd], items, concurrency={"cmd": 3}))
    assert summary.per_agent["cmd"].api_errors == 3
    trials = store.trials("r")
    assert {t.status for t in trials} == {"api_error"}
    assert all(t.correct is None and "upstream exploded" in (t.error or "") for t in trials)


def test_unparseable_reply_nudged_once_then_incorrect(sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    items = games.generate_items(7, 1, conditions=("recursive",))
    log = tmp_path / "req.jsonl"
    monkeypatch.setenv("AGENT_LOG", str(log))
    monkeypatch.setenv("FIXED_ANSWER", "not-a-number")
    store = make_store(sqlite_url, items, ["cmd"])
    cmd = ChatAgent("cmd", CommandBackend([sys.executable, AGENT]), spec={}, answer_mode="tools")
    asyncio.run(execute_run(store, "r", [cmd], items, concurrency={"cmd": 1}))
    (trial,) = store.trials("r")
    assert trial.status == "ok" and trial.correct is False and trial.turns == 2
    assert len(log.read_text().splitlines()) == 2  # the answer turn and one nudge
    assert json.loads(trial.score_json or "{}")["primary_error"] == "no_answer"


def test_usage_recorded_per_turn(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    items = games.generate_items(7, 1, conditions=("recursive",))
    monkeypatch.setenv("FIXED_ANSWER", "not-a-number")  # forces the nudge: two turns
    store = make_store(sqlite_url, items, ["cmd"])
    cmd = ChatAgent("cmd", CommandBackend([sys.executable, AGENT]), spec={}, answer_mode="tools")
    asyncio.run(execute_run(store, "r", [cmd], items, concurrency={"cmd": 1}))
    (trial,) = store.trials("r")
    turns = json.loads(trial.provider_json or "{}")["turns"]
    assert len(turns) == trial.turns == 2
    assert [t["model"] for t in turns] == ["fixed", "fixed"]
    assert sum(t["tokens_in"] for t in turns) == trial.tokens_in == 20
    assert all(t["latency_s"] > 0 for t in turns)
