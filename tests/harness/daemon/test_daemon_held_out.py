"""Held-out seeds never leave the daemon except to an operator who asks: every route of the API,
walked with the token of the run's own agent through real sockets, and the daemon's log, show
neither a held-out run's seed nor an item seed or body from which its items regenerate. An
operator's token sees the seed when it asks with ?reveal_held_out=true (so the walk can fail),
and not otherwise."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace

import httpx
import pytest
from starlette.routing import Route

import games
from harness.config.seeds import is_held_out
from harness.config.settings import AgentConfig, load_settings
from harness.daemon import BackgroundServer, Daemon, build_daemon, create_token
from harness.run.build import plan_agents
from harness.run.runs import execute_stored_run
from harness.run.suites import get_suite
from harness.testing import FakeOpenAI
from mindledger import canonical_json

HELD_SEED = next(s for s in range(1_234_567_890, 1_234_568_890) if is_held_out(s))
REFERENCES = ("oracle", "random")


@dataclass
class Env:
    daemon: Daemon
    url: str
    agent: str
    operator: str
    secrets: list[str]

    def leaks(self, text: str) -> list[str]:
        return [s for s in self.secrets if s in text]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("held-daemon")
    url = f"sqlite:///{home / 'h.db'}"
    with FakeOpenAI() as fake:
        settings = load_settings(None, env={}, flags={"db_url": url, "home": str(home)})
        agents = {"dusk": AgentConfig(name="dusk", adapter="openai", endpoint=fake.base_url)}
        settings = replace(settings, agents=agents, head_interval=0)
        daemon = build_daemon(settings, scheduler=False)
        store = daemon.store
        planned = plan_agents(settings, agents=("dusk",), references=REFERENCES)
        items = get_suite("quick").build(HELD_SEED) + games.generate_abc_items(HELD_SEED, 2)
        store.create_run(
            "held", suite="quick", seed=HELD_SEED, held_out=True,
            params={"suite": "quick", "seed": HELD_SEED}, agents=planned, items=items,
        )  # fmt: skip
        asyncio.run(execute_stored_run(store, settings, "held"))
        stored = store.run_items("held")
        seeds = {HELD_SEED} | {i.seed for i in stored}
        assert all(s >= 10_000_000 for s in seeds)
        secrets = [form for s in sorted(seeds) for form in (str(s), f"{s:x}")]
        for item in stored:
            secrets += [canonical_json(item.to_dict()).decode(), json.dumps(item.to_dict())]
            secrets.append(canonical_json(dict(item.params)).decode())
        agent = create_token(daemon.engine, "dusk")
        operator = create_token(daemon.engine, None, scope="operator", label="ops")
        try:
            with BackgroundServer(daemon.app) as server:
                yield Env(daemon, server.url, agent, operator, secrets)
        finally:
            daemon.close()


def _get(env: Env, token: str, path: str) -> httpx.Response:
    return httpx.get(env.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def test_every_route_hides_a_held_out_seed_from_an_agent(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    routes = [r for r in env.daemon.app.routes if isinstance(r, Route)]
    seen = 0
    for route in routes:
        for method in sorted(route.methods or ()):
            if method == "HEAD":
                continue
            path = route.path.replace("{id}", "held").replace("{target}", "dusk")
            if method == "GET":
                query = {"/ledger/proof": "?seq=1", "/ledger/consistency": "?old=0"}
                r = _get(env, env.agent, path + query.get(route.path, ""))
            else:
                r = httpx.request(
                    method, env.url + path, json={}, timeout=60,
                    headers={"Authorization": f"Bearer {env.agent}"},
                )  # fmt: skip
            assert r.status_code < 500, (method, path, r.text)
            assert env.leaks(r.text) == [], (method, path)
            assert env.leaks(json.dumps(dict(r.headers))) == [], (method, path)
            seen += 1
    assert seen >= len(routes)
    # the run's own routes answered with the run, not an error
    detail = _get(env, env.agent, "/runs/held").json()
    assert detail["held_out"] is True and detail["seed"] is None and detail["seed_withheld"]
    listed = _get(env, env.agent, "/runs").json()["runs"]
    assert [r["seed"] for r in listed] == [None]
    profile = _get(env, env.agent, "/runs/held/profile")
    assert profile.status_code == 200 and "agents" in profile.json()
    assert env.leaks(caplog.text) == []


def test_an_operator_sees_the_held_out_seed_when_it_asks(env: Env) -> None:
    reveal = "?reveal_held_out=true"
    detail = _get(env, env.operator, "/runs/held" + reveal).json()
    assert detail["seed"] == HELD_SEED and not detail["seed_withheld"]
    assert str(HELD_SEED) in _get(env, env.operator, "/runs/held/profile" + reveal).text
    assert str(HELD_SEED) in _get(env, env.operator, "/runs" + reveal).text
    for path in ("/runs/held", "/runs/held/profile", "/runs"):
        assert env.leaks(_get(env, env.operator, path).text) == [], path
        assert _get(env, env.agent, path + reveal).status_code == 403, path
