"""Planning a run's agents (control pairing, ablations, references) and the response cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import games
from harness.adapters import CachedBackend, OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent, ChatBackend
from harness.config.settings import Settings, load_settings
from harness.run.build import plan_agents
from harness.run.runner import execute_run
from harness.testing import FakeOpenAI
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.errors import ConfigError, UserError


def settings_with(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "m.toml"
    path.write_text(text)
    return load_settings(path, env={})


BOT = """
[agents.bot]
adapter = "openai"
endpoint = "http://127.0.0.1:9/v1"
model = "m"
system_prompt = "Think hard."
modules = ["perspective", "witness_log"]
"""


def test_control_is_derived_and_ablations_added(tmp_path: Path) -> None:
    s = settings_with(tmp_path, BOT)
    planned = plan_agents(s, agents=("bot",), references=("oracle",), ablate=("perspective",))
    by = {ra.name: ra for ra in planned}
    assert [ra.role for ra in planned] == ["agent", "control", "ablation", "reference"]
    ctl = by["bot-control"]
    assert ctl.base_agent == "bot" and ctl.spec["modules"] == [] and ctl.spec["model"] == "m"
    assert ctl.spec["system_prompt"] != "Think hard."
    abl = by["bot-no-perspective"]
    assert abl.spec["modules"] == ["witness_log"] and abl.spec["ablated"] == "perspective"
    assert by["ref:oracle"].spec == {"adapter": "reference", "policy": "oracle"}


def test_declared_control_is_used(tmp_path: Path) -> None:
    s = settings_with(
        tmp_path,
        BOT.replace('modules = ["perspective", "witness_log"]', 'control = "bare"')
        + '\n[agents.bare]\nadapter = "openai"\nendpoint = "http://h/v1"\nmodel = "m0"\n',
    )
    planned = plan_agents(s, agents=("bot",))
    assert [(ra.name, ra.role, ra.base_agent) for ra in planned] == [
        ("bot", "agent", None),
        ("bare", "control", "bot"),
    ]


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        (
            {"agents": ("nobody",)},
            ConfigError,
            r"no agent named 'nobody' \(known: [^)]*\); declare it as \[agents\.nobody\] in "
            r"the settings file",
        ),
        (
            {"agents": ("depth-capped:2",)},
            ConfigError,
            "'depth-capped:2' is a reference agent: give it as --reference depth-capped:2",
        ),
        ({"agents": ("bot",), "ablate": ("magic",)}, UserError, "unknown module 'magic'"),
        ({"agents": ("bot",), "ablate": ("opponent_sim",)}, UserError, "has no module"),
        ({"agents": (), "references": ("psychic",)}, UserError, "unknown reference agent"),
        ({"agents": ()}, UserError, "nothing to run"),
    ],
)
def test_bad_plans_say_why(tmp_path: Path, kwargs: dict, error: type, needle: str) -> None:
    s = settings_with(tmp_path, BOT)
    with pytest.raises(error, match=needle):
        plan_agents(s, **kwargs)


def test_cache_answers_a_rerun_without_querying(sqlite_url: str) -> None:
    items = games.generate_items(4, 5, games=("all-pay",), conditions=("recursive",))
    store = Store(open_engine(sqlite_url))
    for run_id in ("r1", "r2"):
        store.create_run(
            run_id,
            suite="t",
            seed=1,
            held_out=False,
            params={},
            agents=[RunAgent("a", "agent", {})],
            items=items,
        )

    def go(run_id: str, base_url: str, cache: bool) -> None:
        async def inner() -> None:
            backend: ChatBackend = OpenAIBackend(OpenAIChat(base_url, "m"))
            if cache:
                backend = CachedBackend(backend, store, endpoint=base_url, model="m")
            agent = ChatAgent("a", backend, spec={}, answer_mode="tools")
            try:
                await execute_run(store, run_id, [agent], items, concurrency={"a": 2})
            finally:
                await agent.aclose()

        asyncio.run(inner())

    with FakeOpenAI(answer=lambda body: "5") as server:
        go("r1", server.base_url, cache=True)
        first = server.stats()["requests"]
        go("r2", server.base_url, cache=True)
        assert server.stats()["requests"] == first  # every request answered from the cache
    assert [t.answer_json for t in store.trials("r2")] == [
        t.answer_json for t in store.trials("r1")
    ]
    cached = [t for t in store.trials("r2")]
    assert all('"cached":1' in (t.provider_json or "") for t in cached)
