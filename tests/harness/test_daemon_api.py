"""The daemon's HTTP API and query proxy, through real sockets on 127.0.0.1: uvicorn serves the
app on a thread, the proxy's target is the FakeOpenAI server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from harness.daemon import (
    PREDICTION_HEADER,
    BackgroundServer,
    Daemon,
    build_daemon,
    create_token,
    hash_token,
    sample_point,
)
from harness.settings import AgentConfig, Settings, load_settings
from harness.testing import FakeOpenAI
from ledger import commitment, new_salt, prediction_body

KEY = b"test sampling key"


@dataclass
class Env:
    daemon: Daemon
    url: str
    token: str
    fake: FakeOpenAI

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=10,
        )


def make_settings(home: Path, db_url: str, endpoint: str, **changes: Any) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(home)})
    agents = {
        "dusk": AgentConfig(
            name="dusk", adapter="openai", endpoint=endpoint, model="m", api_key_env="DUSK_KEY"
        ),
        "bot": AgentConfig(name="bot", adapter="reference", policy="oracle"),
    }
    return replace(settings, agents=agents, **changes)


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> Iterator[Env]:
    with FakeOpenAI() as fake:
        settings = make_settings(tmp_path / "home", db_url, fake.base_url, prediction_share=0.5)
        daemon = build_daemon(settings, scheduler=False, sampling_key=KEY)
        token = create_token(daemon.engine, "piper")
        try:
            with BackgroundServer(daemon.app) as server:
                yield Env(daemon, server.url, token, fake)
        finally:
            daemon.close()


def sampled_query(share: float, *, sampled: bool, caller: str = "piper") -> dict[str, Any]:
    """A chat request that the proxy's sampling puts in (or out of) the required share."""
    for n in range(1000):
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": f"Pick a number, try {n} [[answer: 7]]"}],
        }
        if (sample_point(KEY, caller, "dusk", body) < share) == sampled:
            return body
    raise AssertionError("no such request")


def commit(c: httpx.Client, query: str, dist: dict[str, float]) -> tuple[str, dict, bytes]:
    body = prediction_body(predictor="piper", target="dusk", query=query, distribution=dist)
    salt = new_salt()
    r = c.post(
        "/predictions",
        json={"target": "dusk", "query": query, "commitment": commitment(body, salt)},
    )
    assert r.status_code == 201, r.text
    return r.json()["id"], body, salt


def entries(daemon: Daemon) -> int:
    head = daemon.ledger.head()
    return 0 if head is None else head.seq


# -- health and auth ---------------------------------------------------------------------------


def test_health_needs_no_token(env: Env) -> None:
    r = httpx.get(env.url + "/health", timeout=5)
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "scheduler": "off"}


@pytest.mark.parametrize(
    "path", ["/metrics", "/runs", "/runs/x", "/predictions/p1", "/runs/x/profile"]
)
def test_every_other_path_needs_a_valid_token(env: Env, path: str) -> None:
    r = httpx.get(env.url + path, timeout=5)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert r.json()["error"]["field"] == "Authorization"
    r = httpx.get(env.url + path, headers={"Authorization": "Bearer mlt_forged"}, timeout=5)
    assert r.status_code == 401
    assert r.json()["error"]["message"] == "unknown token"


def test_tokens_are_stored_only_as_their_hash(env: Env) -> None:
    with env.daemon.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT token_hash, agent FROM api_tokens")).all()
    assert [tuple(r) for r in rows] == [(hash_token(env.token), "piper")]
    assert env.token not in repr(rows)
    with env.client() as c:
        r = c.get("/metrics")
    assert r.status_code == 200
    assert r.json()["runs"] == 0


# -- commit → proxy → reveal ---------------------------------------------------------------------


def test_commit_proxy_reveal_scores_and_the_ledger_verifies(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = sampled_query(0.5, sampled=True)
    query = request["messages"][0]["content"]
    with env.client() as c:
        pid, body, salt = commit(c, query, {"7": 0.75, "3": 0.25})
        r = c.post(
            "/proxy/dusk/v1/chat/completions", json=request, headers={PREDICTION_HEADER: pid}
        )
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "7"
        assert r.headers[PREDICTION_HEADER] == pid
        assert int(r.headers["X-Mindledger-Observed"]) > 0
        shown = c.get(f"/predictions/{pid}").json()
        assert (shown["state"], shown["observed"], shown["predictor"]) == (
            "observed",
            ["7"],
            "piper",
        )
        r = c.post(f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()})
        assert r.status_code == 200, r.text
        result = r.json()
        assert result["status"] == "scored"
        assert result["scores"]["top1_match"] in (1, 1.0, True)
        assert result["scores"]["confidence"] == 0.75
        assert result["scores"]["n_observed"] == 1
        assert c.get(f"/predictions/{pid}").json()["state"] == "scored"
        m = c.get("/metrics").json()
        assert m["predictions"] == 1
        assert m["ledger"]["entries"] == entries(env.daemon)
    assert env.fake.stats()["ok"] == 1
    assert env.daemon.ledger.verify() == []


def test_a_reveal_that_does_not_match_is_409_and_recorded(env: Env) -> None:
    with env.client() as c:
        pid, body, salt = commit(c, "q?", {"a": 1.0})
        assert c.post(f"/predictions/{pid}/observe", json={"answer": "b"}).status_code == 201
        other = {**body, "distribution": {"b": 1.0}, "top1": "b"}
        r = c.post(f"/predictions/{pid}/reveal", json={"prediction": other, "salt": salt.hex()})
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "reveal_rejected"
        assert r.json()["result"]["status"] == "rejected"
        assert c.get(f"/predictions/{pid}").json()["state"] == "rejected"
        # a second reveal conflicts with the final state
        r = c.post(f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()})
        assert r.status_code == 409
        assert r.json()["state"] == "rejected"
    assert env.daemon.ledger.verify() == []


def test_only_the_predictor_reveals_and_uses_its_commitment(env: Env) -> None:
    other = create_token(env.daemon.engine, "mallory")
    with env.client() as c, env.client(other) as m:
        pid, body, salt = commit(c, "q?", {"a": 1.0})
        r = m.post(f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()})
        assert r.status_code == 403
        r = m.post(
            "/proxy/dusk/v1/chat/completions",
            json=sampled_query(0.5, sampled=False, caller="mallory"),
            headers={PREDICTION_HEADER: pid},
        )
        assert r.status_code == 403
        r = m.post(
            "/predictions",
            json={"predictor": "piper", "target": "dusk", "query": "q", "commitment": "x"},
        )
        assert r.status_code == 403
        assert r.json()["error"]["field"] == "predictor"
    assert env.fake.stats()["requests"] == 0
    assert env.daemon.ledger.verify() == []


def test_sampled_call_without_a_commitment_gets_428_and_others_pass(env: Env) -> None:
    with env.client() as c:
        r = c.post("/proxy/dusk/v1/chat/completions", json=sampled_query(0.5, sampled=True))
        assert r.status_code == 428
        err = r.json()
        assert err["error"]["code"] == "prediction_required"
        assert err["error"]["field"] == PREDICTION_HEADER
        assert err["how"]["1_commit"]["path"] == "/predictions"
        assert env.fake.stats()["requests"] == 0
        # the same request is refused again: retrying does not dodge the sample
        r = c.post("/proxy/dusk/v1/chat/completions", json=sampled_query(0.5, sampled=True))
        assert r.status_code == 428
        r = c.post("/proxy/dusk/v1/chat/completions", json=sampled_query(0.5, sampled=False))
        assert r.status_code == 200
        assert "X-Mindledger-Observed" not in r.headers
    assert env.fake.stats()["requests"] == 1
    assert entries(env.daemon) == 0


def test_the_sampled_share_is_near_the_setting() -> None:
    bodies = [{"messages": [{"role": "user", "content": str(n)}]} for n in range(4000)]
    share = sum(sample_point(KEY, "a", "t", b) < 0.2 for b in bodies) / len(bodies)
    assert 0.18 < share < 0.22


def test_proxy_sends_the_target_key_from_its_environment_variable(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
        )

    monkeypatch.setenv("DUSK_KEY", "sk-secret")
    settings = make_settings(tmp_path, db_url, "http://dusk.invalid/v1", prediction_share=0.0)
    daemon = build_daemon(
        settings, scheduler=False, transport_factory=lambda _: httpx.MockTransport(reply)
    )
    token = create_token(daemon.engine, "piper")
    try:
        with BackgroundServer(daemon.app) as server:
            r = httpx.post(
                server.url + "/proxy/dusk/v1/chat/completions",
                json={"messages": []},
                headers={"Authorization": f"Bearer {token}"},
                timeout=5,
            )
    finally:
        daemon.close()
    assert r.status_code == 200
    assert str(seen[0].url) == "http://dusk.invalid/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-secret"
    assert "sk-secret" not in r.text


# -- bad input -----------------------------------------------------------------------------------

GOOD_COMMITMENT = "sha256:" + "ab" * 32

MALFORMED: list[tuple[str, str | bytes, str]] = [
    ("/predictions", b"{not json", "body"),
    ("/predictions", b"", "body"),
    ("/predictions", b"[1, 2]", "body"),
    ("/predictions", b"\xff\xfe", "body"),
    ("/predictions", json.dumps({"query": "q", "commitment": GOOD_COMMITMENT}), "target"),
    (
        "/predictions",
        json.dumps({"target": 3, "query": "q", "commitment": GOOD_COMMITMENT}),
        "target",
    ),
    (
        "/predictions",
        json.dumps({"target": "dusk", "query": "", "commitment": GOOD_COMMITMENT}),
        "query",
    ),
    (
        "/predictions",
        json.dumps({"target": "dusk", "query": "q", "commitment": "md5:1"}),
        "commitment",
    ),
    (
        "/predictions",
        json.dumps({"target": "dusk", "query": "q", "commitment": ["x"]}),
        "commitment",
    ),
    (
        "/predictions",
        json.dumps({"target": "d", "query": "q", "commitment": GOOD_COMMITMENT, "x": 1}),
        "x",
    ),
    ("/predictions/{pid}/observe", json.dumps({"answer": 7}), "answer"),
    ("/predictions/{pid}/observe", b"null", "body"),
    ("/predictions/{pid}/reveal", json.dumps({"prediction": "x", "salt": "00"}), "prediction"),
    ("/predictions/{pid}/reveal", json.dumps({"prediction": {}, "salt": 12}), "salt"),
    ("/runs", json.dumps({"suite": 5}), "suite"),
    ("/runs", json.dumps({"suite": "nope", "references": ["oracle"]}), "suite"),
    ("/runs", json.dumps({"references": "oracle"}), "references"),
    ("/proxy/dusk/v1/chat/completions", b"{", "body"),
    ("/proxy/dusk/v1/chat/completions", json.dumps({"messages": [], "stream": True}), "stream"),
]


def test_malformed_bodies_give_400_naming_the_field_and_write_nothing(env: Env) -> None:
    with env.client() as c:
        pid, _, _ = commit(c, "q?", {"a": 1.0})
        before = entries(env.daemon)
        for path, body, field in MALFORMED:
            r = c.post(
                path.format(pid=pid), content=body, headers={"Content-Type": "application/json"}
            )
            assert r.status_code == 400, (path, body, r.text)
            err = r.json()["error"]
            assert err["field"] == field, (path, body, err)
            assert err["message"].strip(), (path, body)
        assert entries(env.daemon) == before
        assert c.get("/health").status_code == 200
    assert env.fake.stats()["requests"] == 0
    assert env.daemon.ledger.verify() == []


def test_unknown_ids_and_targets_are_404(env: Env) -> None:
    with env.client() as c:
        for path in ("/predictions/pnothing", "/runs/nothing", "/runs/nothing/profile"):
            r = c.get(path)
            assert r.status_code == 404, path
            assert r.json()["error"]["code"] == "not_found"
        r = c.post("/predictions/pnothing/reveal", json={"prediction": {}, "salt": "00"})
        assert r.status_code == 404
        r = c.post("/predictions/pnothing/observe", json={"answer": "a"})
        assert r.status_code == 404
        r = c.post("/proxy/bot/v1/chat/completions", json={"messages": []})
        assert r.status_code == 404
        assert r.json()["error"]["field"] == "target"
        r = c.post(
            "/proxy/dusk/v1/chat/completions",
            json={"messages": []},
            headers={PREDICTION_HEADER: "pnothing"},
        )
        assert r.status_code == 404
        assert c.get("/nowhere").status_code == 404
        assert c.delete("/runs").status_code == 405
        assert c.get("/runs?limit=zero").json()["error"]["field"] == "limit"
        r = c.post("/runs", json={"references": ["oracle"]})
        assert r.status_code == 503  # no scheduler in this daemon
    assert env.daemon.ledger.verify() == []
