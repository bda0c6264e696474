"""The agent's own modules (issue 16, item 2): declared with the switch that turns each off,
ablated with ``--ablate`` as the reference scaffold's are, the switch reaching the agent's
endpoint (the fake OpenAI server sees it) or its program (a real subprocess reads it), the credit
in the profile, and ablations scheduled and requested through the API."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import games
import nesttom
from bench.bench_identical_agents import ORACLE, NoisyOracle
from harness.adapters import CachedBackend
from harness.agent.agents import ChatAgent, answer_tool_name
from harness.cli.main import cli as cli_main
from harness.config.settings import AgentConfig, ModuleSwitch, OwnModule, Settings, load_settings
from harness.daemon import BackgroundServer, DaemonContext, build_daemon, create_token
from harness.run.build import AgentSpec, built_agents, plan_agents
from harness.run.runs import create_run, execute_stored_run
from harness.testing import FakeOpenAI
from harness.testing.fake_openai import request_key
from ledger.db import open_engine
from ledger.store import Store
from mindledger.errors import ConfigError, UserError
from mindledger.items import Item
from reports import analyse, load_run

MYBOT = """
[agents.mybot]
adapter = "openai"
endpoint = "{endpoint}"
model = "mybot"
answer_mode = "tools"
headers = {{ "X-Team" = "research" }}

[agents.mybot.own_modules.tom]
description = "theory-of-mind v1.0.1"
off.headers = {{ "X-ToM" = "off" }}
off.body = {{ "tom_enabled" = false }}
off.model = "mybot-no-tom"
"""


def settings_with(tmp_path: Path, text: str, **flags: Any) -> Settings:
    path = tmp_path / "mindledger.toml"
    path.write_text(text)
    return load_settings(path, env={}, flags=flags)


# -- the declaration -------------------------------------------------------------------------


def test_an_own_module_is_declared_with_its_switch_and_stored_with_the_run(
    tmp_path: Path,
) -> None:
    s = settings_with(tmp_path, MYBOT.format(endpoint="http://127.0.0.1:9/v1"))
    bot = s.agents["mybot"]
    assert bot.headers == {"X-Team": "research"}
    assert bot.own_modules == {
        "tom": OwnModule(
            "theory-of-mind v1.0.1",
            ModuleSwitch(
                headers={"X-ToM": "off"}, body={"tom_enabled": False}, model="mybot-no-tom"
            ),
        )
    }
    assert bot.module_names == ("tom",)
    planned = plan_agents(s, agents=("mybot",), ablate=("tom",))
    assert [(ra.name, ra.role, ra.base_agent) for ra in planned] == [
        ("mybot", "agent", None),
        ("mybot-control", "control", "mybot"),
        ("mybot-no-tom", "ablation", "mybot"),
    ]
    full, control, variant = (ra.spec for ra in planned)
    # the full agent and its control keep the module on: no switch in their specs
    assert full["own_modules"]["tom"]["off"]["model"] == "mybot-no-tom"
    assert full["model"] == control["model"] == "mybot" and "extra_body" not in full
    assert control["headers"] == {"X-Team": "research"}
    # the variant has the switch applied (over the agent's own headers) and the module gone
    assert variant["ablated"] == "tom" and "own_modules" not in variant
    assert variant["model"] == "mybot-no-tom"
    assert variant["headers"] == {"X-Team": "research", "X-ToM": "off"}
    assert variant["extra_body"] == {"tom_enabled": False}
    # every spec reads back typed and writes back the same
    for ra in planned:
        assert AgentSpec.from_json(ra.name, ra.spec).to_json() == ra.spec
    assert AgentSpec.from_json("mybot", full).config == replace(bot, name="mybot")


def test_specs_stored_before_own_modules_existed_still_load() -> None:
    old = {"adapter": "openai", "endpoint": "http://h/v1", "model": "m", "modules": ["perspective"]}
    spec = AgentSpec.from_json("old", old)
    assert spec.config.headers == {} and spec.config.own_modules == {}
    assert spec.to_json() == {**spec.to_json(), **old}
    assert not {"headers", "extra_body", "env", "own_modules"} & set(spec.to_json())
    with pytest.raises(ConfigError, match=r"stored agent 'old': headers"):
        AgentSpec.from_json("old", {**old, "headers": ["X-A"]})


BAD_DECLARATIONS = [
    (
        "[agents.b.own_modules.tom]\ndescription = 'x'\n",
        "agents.b.own_modules.tom.off: expected how",
    ),
    ("[agents.b.own_modules.tom]\noff = {}\n", "agents.b.own_modules.tom.off: switching it off"),
    (
        "[agents.b.own_modules.tom]\noff.volume = 0\n",
        r"off.volume: unknown switch \(known: headers",
    ),
    ("[agents.b.own_modules.tom]\noff.model = 3\n", "off.model: expected a string"),
    ("[agents.b.own_modules.tom]\nversion = 1\noff.model = 'm'\n", "tom.version: unknown key"),
    (
        "[agents.b.own_modules.tom]\noff.headers = { Authorization = 'Bearer k' }\n",
        "off.headers.Authorization: a header that carries a credential",
    ),
    (
        "[agents.b.own_modules.tom]\noff.headers = { X-A = 1 }\n",
        "off.headers.X-A: expected a string on one line",
    ),
    (
        "[agents.b.own_modules.tom]\noff.headers = { 'X A' = 'v' }\n",
        "off.headers.X A: expected a header name",
    ),
    (
        "[agents.b.own_modules.tom]\noff.body = { max_tokens = 5 }\n",
        "off.body.max_tokens: the harness sets this field itself",
    ),
    (
        "[agents.b.own_modules.tom]\noff.body = { when = 1979-05-27 }\n",
        "off.body.when: expected a JSON value",
    ),
    (
        "[agents.b.own_modules.tom]\noff.endpoint = 'http://u:pw@h/v1'\n",
        "off.endpoint: no credentials",
    ),
    ("[agents.b.own_modules.tom]\noff.endpoint = 'ftp://h'\n", "off.endpoint: expected an http"),
    ("[agents.b.own_modules.tom]\noff.env = { 1X = '0' }\n", "off.env.1X: expected a variable"),
    ("[agents.b.own_modules.'a b']\noff.model = 'm'\n", "own_modules.a b: expected a module name"),
    (
        "[agents.b.own_modules.perspective]\noff.model = 'm'\n",
        "own_modules.perspective: 'perspective' names a reference-scaffold module",
    ),
    ("[agents.b]\nheaders = { Host = 'h' }\n", "agents.b.headers.Host: the client sets"),
    ("[agents.b]\nextra_body = { stream = true }\n", "agents.b.extra_body.stream: the harness"),
    ("[agents.b]\nenv = 'TOM=0'\n", "agents.b.env: expected a table"),
    ("[schedule]\nablate = { nobody = ['tom'] }\n", r"schedule.ablate.nobody: no agent named"),
    ("[schedule]\nablate = { b = ['magic'] }\n", r"schedule.ablate.b: agent 'b' has no module"),
    ("[schedule]\nablate = { b = 'tom' }\n", "schedule.ablate.b: expected a list"),
    (
        "[schedule]\nat = 3\n",
        r"schedule.at: unknown key \(known: cron, every_seconds, ablate, matrix\)",
    ),
]


@pytest.mark.parametrize(("extra", "needle"), BAD_DECLARATIONS)
def test_a_bad_declaration_is_one_line_naming_the_field(
    tmp_path: Path, extra: str, needle: str
) -> None:
    text = "[agents.b]\nadapter = 'openai'\nendpoint = 'http://h/v1'\n"
    if extra.startswith("[agents.b]\n"):
        text, extra = text + extra.removeprefix("[agents.b]\n"), ""
    with pytest.raises(ConfigError, match=needle) as caught:
        settings_with(tmp_path, text + extra)
    assert "\n" not in str(caught.value)


def test_a_switch_the_adapter_cannot_apply_is_refused_when_planned(tmp_path: Path) -> None:
    s = settings_with(
        tmp_path,
        "[agents.cmd]\nadapter = 'command'\ncommand = ['true']\n"
        "[agents.cmd.own_modules.tom]\noff.headers = { X-ToM = 'off' }\n"
        "[agents.api]\nadapter = 'openai'\nendpoint = 'http://h/v1'\nenv = { A = '1' }\n"
        "[agents.emb]\nadapter = 'local'\n[agents.emb.own_modules.m]\noff.endpoint = 'http://h'\n",
    )
    with pytest.raises(
        ConfigError,
        match=r"agents.cmd.own_modules.tom.off.headers: the command "
        r"adapter cannot apply off.headers \(it applies: env\)",
    ):
        plan_agents(s, agents=("cmd",))
    with pytest.raises(ConfigError, match=r"agents.api.env: the openai adapter cannot apply env"):
        plan_agents(s, agents=("api",))
    with pytest.raises(ConfigError, match=r"agents.emb.own_modules.m.off.endpoint: the local"):
        plan_agents(s, agents=("emb",))


def test_an_unknown_module_names_both_kinds(tmp_path: Path) -> None:
    s = settings_with(
        tmp_path,
        MYBOT.format(endpoint="http://h/v1")
        + "\n[agents.plain]\nadapter = 'openai'\nendpoint = 'http://h/v1'\n",
    )
    with pytest.raises(
        UserError,
        match=r"--ablate: unknown module 'magic' \(expected one of the reference scaffold's: "
        r"perspective, witness_log, opponent_sim; mybot's own: tom\)",
    ):
        plan_agents(s, agents=("mybot",), ablate=("magic",))
    with pytest.raises(UserError, match=r"agent 'mybot' has no module 'perspective' .*\['tom'\]"):
        plan_agents(s, agents=("mybot",), ablate=("perspective",))
    with pytest.raises(UserError, match=r"agent 'plain' has no module 'tom' to ablate"):
        plan_agents(s, agents=("mybot", "plain"), ablate=("tom",))


def test_the_run_help_shows_an_own_module_ablation() -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(cli_main, ["run", "--help"]).output
    assert "own_modules" in out and "--ablate tom" in out


# -- acceptance: the switch reaches the endpoint, the profile credits the module -------------


def _answers(items: list[Item]) -> Any:
    """The fake server's answers: the oracle's while the module is on; with it off (the body
    says ``tom_enabled: false``), a reasoner that fails beyond depth 0 and in games."""
    by_prompt = sorted(((it.prompt, it) for it in items), key=lambda p: -len(p[0]))
    without = NoisyOracle(d50=0.0, slope=4.0, games=0.0)

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        user = next(m for m in reversed(body["messages"]) if m.get("role") == "user")
        item = next(it for prompt, it in by_prompt if str(user["content"]).startswith(prompt))
        policy = without if body.get("tom_enabled") is False else ORACLE
        rng = np.random.default_rng(int(request_key(body), 16))
        tool = answer_tool_name(item)
        field = "action" if tool == "submit_action" else "answer"
        args = {field: policy.answer(item, rng), "confidence": 0.9}
        call = {"name": tool, "arguments": json.dumps(args)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        }

    return answer


def test_ablating_an_own_module_sends_its_switch_and_the_profile_credits_it(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as server:
        settings = settings_with(
            tmp_path,
            MYBOT.format(endpoint=server.base_url),
            db_url=f"sqlite:///{tmp_path / 't.db'}",
            home=str(tmp_path),
        )
        store = Store(open_engine(settings.database_url))
        planned = plan_agents(settings, agents=("mybot",), ablate=("tom",))
        # quick's seven false-belief stories are too few for an interval: three per depth
        # (24 false, 24 true belief), and quick's games
        items = [
            *nesttom.b1_items(3, per_cell=3),
            *games.generate_items(3, 4, conditions=("recursive",), variants=True),
        ]
        run_id, _, n_items = create_run(
            store, settings, suite="quick", planned=planned, seed=3, items=items
        )
        server.configure(answer=_answers(list(store.run_items(run_id))))
        asyncio.run(execute_stored_run(store, settings, run_id))
        log = list(server.log)

    ablated = [r for r in log if r.body and r.body.get("model") == "mybot-no-tom"]
    others = [r for r in log if r.body and r.body.get("model") != "mybot-no-tom"]
    assert ablated and others and len(ablated) + len(others) == len(log)
    for r in ablated:  # the variant's requests, and only they, carry the switch
        assert r.headers is not None and r.headers.get("x-tom") == "off"
        assert r.body is not None and r.body["tom_enabled"] is False
    for r in others:
        assert r.headers is not None and "x-tom" not in r.headers
        assert r.body is not None and "tom_enabled" not in r.body and r.body["model"] == "mybot"
    # the agent's own header goes with every request, the control's included
    assert all(r.headers is not None and r.headers["x-team"] == "research" for r in log)

    trials = store.trials(run_id)
    assert len(trials) == 3 * n_items and all(t.status == "ok" for t in trials)
    profile = analyse(load_run(store, run_id), n_boot=200).profile
    doc = profile.to_json()
    credit = doc["agents"]["mybot"]["ablation_credit"]["tom"]
    assert credit["ablation_agent"] == "mybot-no-tom" and credit["available"]
    assert credit["direction"] == "mybot − mybot-no-tom"
    # the paired statistics of any ablation: the oracle against a reasoner stuck at depth 0
    fb = credit["metrics"]["false_belief_accuracy"]
    assert fb["full"] == 1.0 and fb["difference"] > 0.5 and fb["n"] >= 10, fb
    assert fb["status"] != "not_estimable" and fb["ci"][0] > 0 and fb["p"] < 0.05, fb
    games_credit = credit["metrics"]["games_accuracy"]
    assert games_credit["difference"] > 0 and games_credit["status"] == "not_estimable"
    assert doc["agents"]["mybot-no-tom"]["role"] == "ablation"


def test_the_response_cache_never_answers_a_variant_with_the_full_agents_replies(
    tmp_path: Path,
) -> None:
    """Same endpoint, model and request, but another header: another cache key."""
    s = settings_with(
        tmp_path,
        MYBOT.format(endpoint="http://127.0.0.1:9/v1").replace('off.model = "mybot-no-tom"\n', ""),
    )

    def key(cfg: AgentConfig) -> str:
        from harness.adapters.kinds import BuildContext
        from harness.adapters.registry import build_agent

        agent = build_agent(cfg, BuildContext(s, seed=1, cache=_NoStore()))
        assert isinstance(agent, ChatAgent) and isinstance(agent.backend, CachedBackend)
        request: dict[str, Any] = {"tools": None, "response_format": None}
        k = agent.backend.key(
            [{"role": "user", "content": "hi"}], **request, temperature=0.0, max_tokens=5
        )
        asyncio.run(agent.aclose())
        return k

    bot = s.agents["mybot"]
    variant = AgentSpec.of(bot, ablated="tom", **bot.module_off("tom")).config
    assert variant.model == bot.model
    assert key(bot) != key(variant)
    plain = replace(bot, headers={}, own_modules={})
    bare = CachedBackend(_NoStore(), _NoStore(), endpoint="http://127.0.0.1:9/v1", model="mybot")
    assert key(plain) == bare.key(  # no headers or fields: the key stored answers already have
        [{"role": "user", "content": "hi"}],
        tools=None,
        response_format=None,
        temperature=0.0,
        max_tokens=5,
    )


class _NoStore:
    def cache_get(self, key: str) -> dict[str, Any] | None:
        return None

    def cache_put(self, key: str, response: dict[str, Any]) -> None:
        return None

    async def chat(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise AssertionError("not called")

    async def aclose(self) -> None:  # pragma: no cover
        return None


# -- a command agent: the switch is an environment variable ----------------------------------

AGENT_PY = """
import json, os, sys
json.load(sys.stdin)
with open(os.environ["CALLS"], "a") as f:
    f.write(os.environ.get("TOM", "on") + "\\n")
print(json.dumps({"content": '{"answer": 3, "confidence": 0.5}'}))
"""


async def test_ablating_a_command_agents_module_sets_its_environment(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT_PY)
    calls = tmp_path / "calls.txt"
    s = settings_with(
        tmp_path,
        f"[agents.cmd]\nadapter = 'command'\ncommand = [{json.dumps(sys.executable)}, "
        f"{json.dumps(str(script))}]\nanswer_mode = 'json'\n"
        f"env = {{ CALLS = {json.dumps(str(calls))} }}\n"
        "[agents.cmd.own_modules.tom]\ndescription = 'theory-of-mind v1.0.1'\n"
        "off.env = { TOM = '0' }\n",
    )
    planned = plan_agents(s, agents=("cmd",), ablate=("tom",), no_control=True)
    assert [ra.name for ra in planned] == ["cmd", "cmd-no-tom"]
    assert planned[1].spec["env"] == {"CALLS": str(calls), "TOM": "0"}
    item = games.generate_items(4, 5, games=("all-pay",), conditions=("recursive",))[0]
    async with built_agents(planned, s, seed=1) as (full, variant):
        assert (await full.attempt(item)).answer == 3
        assert calls.read_text().splitlines() == ["on"]
        assert (await variant.attempt(item)).answer == 3
    assert calls.read_text().splitlines() == ["on", "0"]


# -- scheduled and requested through the API -------------------------------------------------


def _wait_for(check: Any, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_scheduled_run_includes_the_configured_ablations(tmp_path: Path) -> None:
    with FakeOpenAI(answer="3") as server:
        s = settings_with(
            tmp_path,
            MYBOT.format(endpoint=server.base_url) + '\n[schedule]\nablate = { mybot = ["tom"] }\n',
            db_url=f"sqlite:///{tmp_path / 't.db'}",
            home=str(tmp_path),
        )
        assert s.schedule_ablations == {"mybot": ("tom",)}
        assert s.schedule == "0 3 * * *"  # the table without cron keeps the default
        store = Store(open_engine(s.database_url))
        ctx = DaemonContext(s, store)  # no ledger: no matrix beside
        run_id, matrix = ctx.nightly(suite="quick", agents=("mybot",))
        assert matrix is None
        agents = {ra.name: ra for ra in store.run_agents(run_id)}
        assert set(agents) == {"mybot", "mybot-control", "mybot-no-tom"}
        assert agents["mybot-no-tom"].spec["ablated"] == "tom"
        assert store.get_run(run_id).held_out
        variant_calls = [r for r in server.log if r.headers and r.headers.get("x-tom") == "off"]
        assert variant_calls and all(
            r.body and r.body["tom_enabled"] is False for r in variant_calls
        )
    store.engine.dispose()


def test_a_schedule_table_sets_the_cron_too(tmp_path: Path) -> None:
    s = settings_with(tmp_path, "[schedule]\ncron = '30 1 * * *'\n")
    assert (s.schedule, s.sources["schedule"], s.schedule_ablations) == (
        "30 1 * * *",
        str(tmp_path / "mindledger.toml"),
        {},
    )
    assert s.public_dict()["schedule_ablations"] == {}


def test_an_ablation_requested_through_the_api_runs_with_the_switch(
    db_url: str, tmp_path: Path
) -> None:
    with FakeOpenAI(answer="3") as server:
        s = settings_with(
            tmp_path, MYBOT.format(endpoint=server.base_url), db_url=db_url, home=str(tmp_path)
        )
        s = replace(s, api_rate_limit=100_000.0)
        daemon = build_daemon(s, scheduler_options={"expire_every": None})
        assert daemon.scheduler is not None
        daemon.scheduler.start()
        operator = create_token(daemon.engine, None, scope="operator")
        try:
            with (
                BackgroundServer(daemon.app) as web,
                httpx.Client(
                    base_url=web.url, headers={"Authorization": f"Bearer {operator}"}, timeout=30
                ) as c,
            ):
                doc = c.get("/openapi.json").json()
                schema = doc["paths"]["/runs"]["post"]["requestBody"]["content"][
                    "application/json"
                ]["schema"]
                assert "tom" in schema["properties"]["ablate"]["items"]["enum"]
                assert schema["dependentRequired"]["ablate"] == ["agent"]
                bad: list[tuple[dict[str, Any], str, str]] = [
                    ({"agent": "mybot", "ablate": ["magic"]}, "ablate", "unknown module 'magic'"),
                    ({"agent": "mybot", "ablate": "tom"}, "ablate", "expected a list"),
                    ({"agent": "mybot", "ablate": ["tom", "tom"]}, "ablate", "distinct"),
                    ({"references": ["oracle"], "ablate": ["tom"]}, "agent", "the agent whose"),
                ]
                for body, field, needle in bad:
                    r = c.post("/runs", json={"suite": "quick", **body})
                    assert r.status_code == 400, r.text
                    assert r.json()["error"]["field"] == field
                    assert needle in r.json()["error"]["message"]
                assert c.get("/runs").json()["runs"] == []  # nothing was stored

                r = c.post("/runs", json={"suite": "quick", "agent": "mybot", "ablate": ["tom"]})
                assert r.status_code == 202, r.text
                run_id = r.json()["run"]["id"]

                def finished() -> Any:
                    run = c.get(f"/runs/{run_id}").json()
                    return run if run["status"] in ("complete", "incomplete") else None

                run = _wait_for(finished)
                assert run["status"] == "complete"
                assert set(run["trial_counts"]) == {"mybot", "mybot-control", "mybot-no-tom"}
                profile = c.get(f"/runs/{run_id}/profile").json()
                assert profile["agents"]["mybot"]["ablation_credit"]["tom"]["ablation_agent"] == (
                    "mybot-no-tom"
                )
        finally:
            daemon.close()
        variant_calls = [r for r in server.log if r.headers and r.headers.get("x-tom") == "off"]
        assert variant_calls and all(
            r.body and r.body["model"] == "mybot-no-tom" for r in variant_calls
        )
