"""Typed agents: the stored spec is the AgentConfig's JSON and reads back typed (old runs'
specs too), one registry of adapter kinds builds every agent, and the response cache wraps any
backend."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import games
from harness.adapters import (
    KINDS,
    BuildContext,
    CachedBackend,
    ChatPolicy,
    OpenAIBackend,
    OpenAIChat,
    adapter_kind,
    build_agent,
)
from harness.agent.agents import ChatAgent, ChatReply, ReferenceAgent
from harness.config.settings import ADAPTERS, AgentConfig, Settings, load_settings
from harness.run.build import (
    AgentSpec,
    built_agents,
    concurrency_of,
    needs_local_model,
    plan_agents,
)
from harness.testing import FakeOpenAI
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.errors import ConfigError, UserError

SETTINGS = """
[agents.bot]
adapter = "openai"
endpoint = "http://user:pw@127.0.0.1:9/v1?x=1"
model = "m"
api_key_env = "BOT_KEY"
system_prompt = "Think hard."
modules = ["perspective", "witness_log"]
temperature = 0.7
max_tokens = 300
concurrency = 3
rate_limit = 2.5
answer_mode = "json"

[agents.cmd]
adapter = "command"
command = ["python", "agent.py"]
control = "bare"

[agents.bare]
adapter = "openai"
endpoint = "http://h/v1"

[agents.scripted]
adapter = "reference"
policy = "oracle"
"""


def settings_from(tmp_path: Path, text: str = SETTINGS, **changes: Any) -> Settings:
    path = tmp_path / "m.toml"
    path.write_text(text)
    settings = load_settings(path, env={})
    return settings if not changes else _replace(settings, **changes)


def _replace(settings: Settings, **changes: Any) -> Settings:
    from dataclasses import replace

    return replace(settings, **changes)


def chat_spec(**fields: Any) -> dict[str, Any]:
    """A chat agent's spec in the shape stored before typed agents (every field, in order)."""
    spec: dict[str, Any] = {
        "adapter": "openai",
        "endpoint": None,
        "model": None,
        "api_key_env": None,
        "system_prompt": None,
        "modules": [],
        "command": [],
        "policy": None,
        "answer_mode": "auto",
        "temperature": 0.0,
        "max_tokens": 512,
        "concurrency": None,
        "rate_limit": None,
    }
    spec.update(fields)
    return spec


# What plan_agents stored before typed agents, recorded from that version: the stored shape
# (and so what the profile shows of each agent, and what a run comparison diffs) is unchanged.
PLANNED_BEFORE = [
    (
        "bot",
        "agent",
        chat_spec(
            endpoint="http://127.0.0.1:9/v1?x=1",
            model="m",
            api_key_env="BOT_KEY",
            system_prompt="Think hard.",
            modules=["perspective", "witness_log"],
            answer_mode="json",
            temperature=0.7,
            max_tokens=300,
            concurrency=3,
            rate_limit=2.5,
            endpoint_credentials_from="bot",
        ),
        None,
    ),
    (
        "bot-control",
        "control",
        chat_spec(
            endpoint="http://127.0.0.1:9/v1?x=1",
            model="m",
            api_key_env="BOT_KEY",
            system_prompt="Answer the question.",
            answer_mode="json",
            temperature=0.7,
            max_tokens=300,
            concurrency=3,
            rate_limit=2.5,
            endpoint_credentials_from="bot",
        ),
        "bot",
    ),
    (
        "bot-no-perspective",
        "ablation",
        chat_spec(
            endpoint="http://127.0.0.1:9/v1?x=1",
            model="m",
            api_key_env="BOT_KEY",
            system_prompt="Think hard.",
            modules=["witness_log"],
            answer_mode="json",
            temperature=0.7,
            max_tokens=300,
            concurrency=3,
            rate_limit=2.5,
            endpoint_credentials_from="bot",
            ablated="perspective",
        ),
        "bot",
    ),
    ("cmd", "agent", chat_spec(adapter="command", command=["python", "agent.py"]), None),
    ("bare", "control", chat_spec(endpoint="http://h/v1"), "cmd"),
    ("scripted", "agent", chat_spec(adapter="reference", policy="oracle"), None),
    ("ref:oracle", "reference", {"adapter": "reference", "policy": "oracle"}, None),
]


def test_the_stored_spec_keeps_its_shape_and_reads_back_typed(tmp_path: Path) -> None:
    settings = settings_from(tmp_path)
    planned = plan_agents(
        settings, agents=("bot", "cmd", "scripted"), references=("oracle",), ablate=()
    )
    planned[2:2] = plan_agents(settings, agents=("bot",), ablate=("perspective",))[2:]
    assert [(ra.name, ra.role, ra.spec, ra.base_agent) for ra in planned] == PLANNED_BEFORE
    for ra in planned:
        spec = AgentSpec.from_json(ra.name, ra.spec)
        assert spec.config.name == ra.name
        assert spec.to_json(defaults=ra.role != "reference") == ra.spec  # a round trip
    bot = AgentSpec.from_json("bot", planned[0].spec)
    assert bot.config == AgentConfig(
        "bot",
        endpoint="http://127.0.0.1:9/v1?x=1",
        model="m",
        api_key_env="BOT_KEY",
        system_prompt="Think hard.",
        modules=("perspective", "witness_log"),
        answer_mode="json",
        temperature=0.7,
        max_tokens=300,
        concurrency=3,
        rate_limit=2.5,
    )
    assert bot.endpoint_credentials_from == "bot" and bot.ablated is None
    # the credentials come back from the declaration, never from storage
    assert bot.resolved(settings).endpoint == "http://user:pw@127.0.0.1:9/v1?x=1"
    assert "pw" not in repr([ra.spec for ra in planned])


def test_a_stored_spec_of_the_wrong_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"stored agent 'a': temperature"):
        AgentSpec.from_json("a", chat_spec(temperature="hot"))
    with pytest.raises(ConfigError, match=r"stored agent 'a': modules"):
        AgentSpec.from_json("a", chat_spec(modules="perspective"))


def test_every_settings_adapter_has_a_kind_and_an_unknown_kind_names_the_known() -> None:
    assert tuple(KINDS) == tuple(ADAPTERS)
    assert {name: kind.name for name, kind in KINDS.items()} == {name: name for name in KINDS}
    with pytest.raises(ConfigError, match=r"unknown adapter 'telepathy' \(known: .*reference"):
        adapter_kind("telepathy")
    facts = {
        name: (kind.paired_with_control, kind.needs_local_model, kind.proxy_target)
        for name, kind in KINDS.items()
    }
    assert facts == {
        "openai": (True, False, True),
        "local": (True, True, False),
        "command": (True, False, False),
        "reference": (False, False, False),
    }


async def test_an_unknown_kind_in_a_stored_spec_is_a_config_error(tmp_path: Path) -> None:
    planned = [RunAgent("odd", "agent", chat_spec(adapter="telepathy"))]
    with pytest.raises(ConfigError, match=r"unknown adapter 'telepathy' \(known: openai, "):
        async with built_agents(planned, settings_from(tmp_path), seed=1):
            pass  # pragma: no cover


def test_concurrency_and_the_embedded_model_are_asked_of_the_kind(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, concurrency=17)
    by = {ra.name: ra for ra in plan_agents(settings, agents=("bot", "cmd", "local"))}
    assert concurrency_of(by["bot"], settings) == 3  # its own
    assert concurrency_of(by["cmd"], settings) == 17  # the settings' default
    assert concurrency_of(by["local"], settings) == 4  # the embedded model's default
    ref = plan_agents(settings, agents=(), references=("random",))
    assert concurrency_of(ref[0], settings) == 64
    assert needs_local_model(list(by.values())) and not needs_local_model([by["bot"], *ref])


async def test_runs_stored_by_older_versions_resume(tmp_path: Path, sqlite_url: str) -> None:
    """Specs as earlier versions stored them (today's shape, and an older one with fields
    missing or None) are rebuilt into the same agents, which send the same requests."""
    item = games.generate_items(4, 5, games=("all-pay",), conditions=("recursive",))[0]
    store = Store(open_engine(sqlite_url))
    async with FakeOpenAI(answer=lambda body: "3") as server:
        url = server.base_url
        planned = [
            RunAgent(
                "full",
                "agent",
                chat_spec(
                    endpoint=url,
                    model="m1",
                    system_prompt="Be brief.",
                    modules=["opponent_sim"],
                    answer_mode="json",
                    temperature=0.3,
                    max_tokens=40,
                ),
            ),
            RunAgent(
                "sparse",
                "agent",
                {
                    "adapter": "openai",
                    "endpoint": url,
                    "model": "m2",
                    "modules": None,
                    "temperature": None,
                    "max_tokens": None,
                    "system_prompt": None,
                },
            ),
            RunAgent("ref:oracle", "reference", {"adapter": "reference", "policy": "oracle"}),
            RunAgent(
                "cmd",
                "agent",
                chat_spec(adapter="command", command=[sys.executable, "-c", "print(1)"]),
            ),
        ]
        store.create_run(
            "old", suite="t", seed=1, held_out=False, params={}, agents=planned, items=[item]
        )
        by_name = {ra.name: ra for ra in store.run_agents("old")}
        stored = [by_name[ra.name] for ra in planned]
        assert [ra.spec for ra in stored] == [ra.spec for ra in planned]
        settings = settings_from(tmp_path, cache=False)
        async with built_agents(stored, settings, seed=1) as agents:
            full, sparse, ref, cmd = agents
            assert isinstance(ref, ReferenceAgent) and ref.policy == "oracle"
            assert isinstance(cmd, ChatAgent) and cmd.mode == "tools"
            assert isinstance(full, ChatAgent) and isinstance(sparse, ChatAgent)
            assert (full.mode, full.temperature, full.max_tokens) == ("json", 0.3, 40)
            assert (sparse.mode, sparse.temperature, sparse.max_tokens) == ("tools", 0.0, 512)
            assert (await full.attempt(item)).answer == 3
            assert (await sparse.attempt(item)).answer == 3
        bodies = [entry.body or {} for entry in server.log]
    first, answer, plain = bodies
    # the opponent-simulation step, then the answer in JSON; the sparse agent answers by tool
    assert first["model"] == "m1" and first["messages"][0] == {
        "role": "system",
        "content": f"Be brief.\n\n{item.meta['system_prompt']}",
    }
    # the scaffold's step (256 tokens at most) within the agent's own cap of 40
    assert (first["temperature"], first["max_tokens"]) == (0.3, 40)
    assert "response_format" in answer and answer["max_tokens"] == 40
    assert plain["model"] == "m2" and (plain["temperature"], plain["max_tokens"]) == (0.0, 512)
    assert [t["function"]["name"] for t in plain["tools"]] == [item.meta["answer_tool"]]


async def test_credentials_and_keys_reach_the_endpoint_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = games.generate_items(4, 5, games=("all-pay",), conditions=("recursive",))[0]
    async with FakeOpenAI(answer=lambda body: "3", api_key="sekrit") as server:
        text = f'[agents.k]\nendpoint = "{server.base_url}"\napi_key_env = "K_KEY"\n'
        settings = settings_from(tmp_path, text)
        planned = plan_agents(settings, agents=("k",), no_control=True)
        assert planned[0].spec["api_key_env"] == "K_KEY"
        monkeypatch.delenv("K_KEY", raising=False)
        with pytest.raises(ConfigError, match=r"\$K_KEY is not set"):
            async with built_agents(planned, settings, seed=1):
                pass  # pragma: no cover
        monkeypatch.setenv("K_KEY", "sekrit")
        async with built_agents(planned, settings, seed=1) as (agent,):
            assert (await agent.attempt(item)).answer == 3
            assert "sekrit" not in repr(getattr(agent, "spec", None))


async def test_the_local_kind_needs_the_embedded_model_running(tmp_path: Path) -> None:
    planned = plan_agents(settings_from(tmp_path), agents=("local",), no_control=True)
    with pytest.raises(UserError, match="the embedded model is not running"):
        async with built_agents(planned, settings_from(tmp_path), seed=1):
            pass  # pragma: no cover
    context = BuildContext(settings_from(tmp_path), seed=1, local_base_url="http://127.0.0.1:9")
    agent = build_agent(AgentSpec.from_json("local", planned[0].spec).config, context)
    try:
        assert isinstance(agent, ChatAgent) and agent.mode == "json"  # llama.cpp: no tools
        assert isinstance(agent.backend, OpenAIBackend)
        assert agent.backend.client.base_url == "http://127.0.0.1:9/v1"
    finally:
        await agent.aclose()


async def test_a_temperature_given_to_the_plan_is_the_built_agents(tmp_path: Path) -> None:
    """The matrix's --temperature goes into the plan; nothing patches an agent after build."""
    settings = settings_from(tmp_path)
    planned = plan_agents(
        settings,
        agents=("cmd", "scripted"),
        references=("random",),
        no_control=True,
        temperature=1.3,
    )
    assert [ra.spec.get("temperature") for ra in planned] == [1.3, 1.3, None]
    assert plan_agents(settings, agents=("cmd",), no_control=True)[0].spec["temperature"] == 0.0
    async with built_agents(planned, settings, seed=1) as (cmd, _, _):
        assert isinstance(cmd, ChatAgent) and cmd.temperature == 1.3


class Counting:
    """A chat backend that answers every request with its number, counting them."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        self.calls += 1
        return ChatReply(
            message={"role": "assistant", "content": f"reply {self.calls}"},
            finish_reason="stop",
            model="x",
            tokens_in=3,
            tokens_out=2,
            latency_s=0.25,
        )

    async def aclose(self) -> None:
        self.closed = True


class DictStore:
    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    def cache_get(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def cache_put(self, key: str, response: dict[str, Any]) -> None:
        self.data[key] = response


async def test_the_cache_wraps_any_backend() -> None:
    inner, store = Counting(), DictStore()
    cached = CachedBackend(inner, store, endpoint="http://127.0.0.1:9/v1", model="m")
    ask = [{"role": "user", "content": "x"}]
    first = await cached.chat(ask, temperature=0.5, max_tokens=7)
    again = await cached.chat(ask, temperature=0.5, max_tokens=7)
    other = await cached.chat(ask, temperature=0.5, max_tokens=8)  # another request
    assert inner.calls == 2
    assert (first.cached, first.attempts, first.latency_s) == (False, 1, 0.25)
    assert (again.cached, again.attempts, again.latency_s) == (True, 0, 0.0)
    assert again.message == first.message and (again.tokens_in, again.tokens_out) == (3, 2)
    assert other.message["content"] == "reply 2"
    # the keys are those of the cache before it was a wrapper: stored answers still answer
    assert "sha256:672db40b12088344340b288572b53f17175e3e375e15f3c2452fbbe6502217d0" in store.data
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert cached.key(ask, tools=tools, response_format=None, temperature=0.0, max_tokens=512) == (
        "sha256:6e2b3b68600150c4c59522cd31aaf353ab91dc16117d16c77617b395904965c3"
    )
    await cached.aclose()
    assert inner.closed


async def test_built_agents_use_the_cache_only_when_the_settings_keep_it(
    tmp_path: Path, sqlite_url: str
) -> None:
    store = Store(open_engine(sqlite_url))
    planned = plan_agents(settings_from(tmp_path), agents=("bare", "cmd"), no_control=True)
    for cache in (True, False):
        settings = settings_from(tmp_path, cache=cache)
        async with built_agents(planned, settings, seed=1, store=store) as (bare, cmd):
            assert isinstance(bare, ChatAgent) and isinstance(cmd, ChatAgent)
            assert isinstance(bare.backend, CachedBackend if cache else OpenAIBackend)
            assert not isinstance(cmd.backend, CachedBackend)  # a program's replies never are
        if cache:
            assert isinstance(bare.backend, CachedBackend)
            assert bare.backend.endpoint == "http://h/v1" and bare.backend.store is store


async def test_openai_backend_takes_its_client() -> None:
    async with FakeOpenAI(answer=lambda body: "hello") as server:
        backend = OpenAIBackend(OpenAIChat(server.base_url, "m", policy=ChatPolicy(max_retries=0)))
        reply = await backend.chat([{"role": "user", "content": "hi"}], max_tokens=9)
        await backend.aclose()
        (body,) = [entry.body for entry in server.log]
    assert reply.message == {"role": "assistant", "content": "hello"} and reply.attempts == 1
    assert body is not None and (body["model"], body["max_tokens"]) == ("m", 9)
