"""The daemon's HTTP API and query proxy, through real sockets on 127.0.0.1: uvicorn serves the
app on a thread, the proxy's target is the FakeOpenAI server. The service's dice are a seeded
generator here, so which calls are sampled is the same on every run."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import sqlalchemy as sa

from harness.config.settings import AgentConfig, Settings, load_settings
from harness.daemon import (
    PREDICTION_HEADER,
    BackgroundServer,
    Daemon,
    build_daemon,
    create_token,
    hash_token,
)
from harness.daemon.client import DaemonClient, DaemonError
from harness.testing import FakeOpenAI
from ledger import commitment, new_salt, prediction_body
from ledger.protocol import query_hash, response_hash


class Dice:
    """The service's dice, scripted: the given values first, then a seeded generator."""

    def __init__(self, *values: float, seed: int = 7):
        self.values = list(values)
        self.rng = np.random.default_rng(seed)
        self.drawn = 0

    def __call__(self) -> float:
        self.drawn += 1
        return self.values.pop(0) if self.values else float(self.rng.random())


SAMPLED, PASSED = 0.0, 0.99
"""Dice values that sample a call (below any share > 0) and that let it pass."""


@dataclass
class Env:
    daemon: Daemon
    url: str
    token: str
    fake: FakeOpenAI
    dice: Dice

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=10,
        )

    def token_for(self, agent: str | None = None, **kw: Any) -> str:
        return create_token(self.daemon.engine, agent, **kw)


def make_settings(home: Path, db_url: str, endpoint: str, **changes: Any) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(home)})
    agents = {
        "dusk": AgentConfig(
            name="dusk", adapter="openai", endpoint=endpoint, model="m", api_key_env="DUSK_KEY"
        ),
        "wren": AgentConfig(name="wren", adapter="openai", endpoint=endpoint, model="w"),
        "bot": AgentConfig(name="bot", adapter="reference", policy="oracle"),
    }
    # tests not about the rate limit must not depend on how fast this machine sends requests
    changes.setdefault("api_rate_limit", 100_000.0)
    return replace(settings, agents=agents, **changes)


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> Iterator[Env]:
    with FakeOpenAI() as fake:
        settings = make_settings(
            tmp_path / "home", db_url, fake.base_url, prediction_share=0.2, head_interval=0
        )
        dice = Dice()
        daemon = build_daemon(settings, scheduler=False, draw=dice)
        token = create_token(daemon.engine, "piper")
        try:
            with BackgroundServer(daemon.app) as server:
                yield Env(daemon, server.url, token, fake, dice)
        finally:
            daemon.close()


def ask(n: int | str = 1, answer: str = "7") -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": f"Pick a number, try {n} [[answer: {answer}]]"}],
    }


def commit(
    c: httpx.Client,
    request: dict[str, Any],
    dist: dict[str, float],
    *,
    target: str = "dusk",
    predictor: str = "piper",
) -> tuple[str, dict[str, Any], bytes]:
    """Commit a prediction of ``request``'s answer (naming the whole request); return (id,
    body, salt)."""
    query = request["messages"][-1]["content"]
    body = prediction_body(predictor=predictor, target=target, query=query, distribution=dist)
    salt = new_salt()
    r = c.post(
        "/predictions",
        json={
            "target": target,
            "query": query,
            "commitment": commitment(body, salt),
            "request": request,
        },
    )
    assert r.status_code == 201, r.text
    assert r.json()["query_hash"] == query_hash(request)
    return r.json()["id"], body, salt


def proxy(
    c: httpx.Client, request: Any, pid: str | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    sent = {**(headers or {}), **({PREDICTION_HEADER: pid} if pid else {})}
    return c.post("/proxy/dusk/v1/chat/completions", json=request, headers=sent)


def entries(daemon: Daemon) -> int:
    head = daemon.ledger.head()
    return 0 if head is None else head.seq


# -- health and auth ---------------------------------------------------------------------------


def test_health_needs_no_token(env: Env) -> None:
    r = httpx.get(env.url + "/health", timeout=5)
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "scheduler": "off"}


@pytest.mark.parametrize(
    "path",
    [
        "/metrics",
        "/whoami",
        "/runs",
        "/runs/x",
        "/predictions/p1",
        "/runs/x/profile",
        "/calls",
        "/ledger/head",
        "/ledger/proof?seq=1",
        "/ledger/consistency?old=0",
    ],
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
        rows = conn.execute(sa.text("SELECT token_hash, agent, scope FROM api_tokens")).all()
    assert [tuple(r) for r in rows] == [(hash_token(env.token), "piper", "agent")]
    assert env.token not in repr(rows)
    with env.client() as c:
        who = c.get("/whoami").json()
        assert (who["scope"], who["agent"]) == ("agent", "piper")


def test_revoked_and_expired_tokens_are_refused(env: Env) -> None:
    from harness.daemon import revoke_token, token_id_of

    token = env.token_for("wren")
    with env.client(token) as c:
        assert c.get("/whoami").status_code == 200
        revoke_token(env.daemon.engine, token_id_of(token))
        assert c.get("/whoami").status_code == 401
    lapsed = env.token_for(
        "wren", expires_at="2020-01-01T00:00:00Z", clock=lambda: "2019-12-01T00:00:00+00:00"
    )
    with env.client(lapsed) as c:
        assert c.get("/whoami").status_code == 401


# -- commit → proxy → reveal ---------------------------------------------------------------------


def test_a_predicted_call_is_answered_recorded_with_provenance_and_scored(env: Env) -> None:
    env.dice.values = [PASSED] * 10
    with DaemonClient(env.url, env.token) as ml:
        request = ask(1)
        with ml.predict("dusk", request["messages"], {"7": 0.75, "3": 0.25}) as p:
            reply = p.ask(model="m")
        assert reply["choices"][0]["message"]["content"] == "7"
        assert p.scores is not None
        assert p.scores["top1_match"] in (1, 1.0, True)
        assert p.scores["confidence"] == 0.75
    state = env.daemon.ledger.prediction(p.id)
    assert (state.state, state.observed, state.predictor) == ("scored", ["7"], "piper")
    (source,) = state.provenance
    assert source["by"] == "proxy" and source["caller"] == "piper"
    assert source["request"] == state.proxied
    # the hash of the target's raw response, as the proxy received it
    raw = env.fake.stats()
    assert raw["ok"] == 1
    assert source["response"].startswith("sha256:") and len(source["response"]) == 71
    kinds = [e.kind for e in env.daemon.ledger.entries()]
    assert kinds == ["open", "commit", "call", "observe", "reveal"]
    assert env.daemon.ledger.verify() == []


def test_the_proxy_sends_the_declared_model_and_records_the_response_hash(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[httpx.Request] = []
    payload = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=json.dumps(payload).encode())

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
                json={"model": "cheaper-model", "messages": [{"role": "user", "content": "q"}]},
                headers={"Authorization": f"Bearer {token}"},
                timeout=5,
            )
    finally:
        daemon.close()
    assert r.status_code == 200
    assert str(seen[0].url) == "http://dusk.invalid/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-secret"
    assert json.loads(seen[0].content)["model"] == "m"  # the declared target, not the caller's
    assert "sk-secret" not in r.text
    (call,) = [e for e in daemon.ledger.entries() if e.kind == "call"]
    assert call.payload["response"] == response_hash(json.dumps(payload).encode())
    assert call.payload["prediction"] is None and call.payload["status"] == 200


# -- obligations: no dodging ---------------------------------------------------------------------


def test_a_sampled_call_leaves_an_obligation_that_no_change_of_the_call_lifts(env: Env) -> None:
    env.dice.values = [SAMPLED]
    with env.client() as c:
        r = proxy(c, ask(1))
        assert r.status_code == 428
        err = r.json()
        assert err["error"]["code"] == "prediction_required"
        assert err["error"]["field"] == PREDICTION_HEADER
        assert err["how"]["1_commit"]["path"] == "/predictions"
        assert err["how"]["1_commit"]["json"]["query_hash"] == query_hash(ask(1))
        assert err["owed"] == {"query_hash": query_hash(ask(1)), "since": err["refusal"]}
        drawn = env.dice.drawn
        dodges = [
            {**ask(1), "user": "n1"},  # an ignored field
            {**ask(1), "messages": [{"role": "user", "content": ask(1)["messages"][0]["content"]
                                     + " "}]},  # whitespace
            ask(2),  # another query altogether
            {**ask(1), "temperature": 0.3},
        ]
        for body in dodges:
            r = proxy(c, body)
            assert r.status_code == 428, body
            assert r.json()["error"]["code"] == "prediction_required"
        r = proxy(c, ask(1), headers={"X-Forwarded-For": "10.0.0.9", "Connection": "close"})
        assert r.status_code == 428
    with env.client() as fresh:  # a new connection
        assert proxy(fresh, ask(1)).status_code == 428
    # refusals under an obligation roll no dice: nothing about the call matters any more
    assert env.dice.drawn == drawn
    assert env.fake.stats()["requests"] == 0
    # a prediction of another query unlocks its own call and leaves the obligation open
    env.dice.values = [PASSED, PASSED]
    with env.client() as c:
        pid, _, _ = commit(c, ask(3), {"7": 1.0})
        assert proxy(c, ask(3), pid).status_code == 200
        r = proxy(c, ask(4))
        assert r.status_code == 428 and r.json()["owed"]["query_hash"] == query_hash(ask(1))
        # a prediction bound to the sampled query meets it, and calls pass again
        pid, _, _ = commit(c, ask(1), {"7": 1.0})
        assert proxy(c, ask(1), pid).status_code == 200
        assert proxy(c, ask(4)).status_code == 200
    assert env.dice.drawn == drawn + 1
    tally = env.client().get("/calls").json()["agents"]["piper"]
    assert tally["refused"] == 8 and tally["calls"] == 3 and tally["predicted"] == 2
    assert tally["refusals"] == {"obligation": 7, "sampled": 1}
    assert tally["open_obligations"] == []
    assert tally["obligations"] == {"opened": 1, "met": 1, "pending": 0, "abandoned": 0}
    assert env.daemon.ledger.verify() == []


def test_a_prediction_unlocks_only_its_own_call_once(env: Env) -> None:
    mallory = env.token_for("mallory")
    env.dice.values = [SAMPLED]
    with env.client() as c, env.client(mallory) as m:
        assert proxy(c, ask(1)).status_code == 428
        other, _, _ = commit(c, ask(2), {"7": 1.0})  # a prediction about another query
        r = proxy(c, ask(1), other)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "query_mismatch")
        assert proxy(c, ask(1)).status_code == 428  # still owed
        # another caller's prediction: answered as an unknown one, word for word (its id is
        # not confirmed), and recorded as what it was
        theirs, _, _ = commit(m, ask(1), {"7": 1.0}, predictor="mallory")
        r = proxy(c, ask(1), theirs)
        unknown = proxy(c, ask(1), "p" + "f" * 20)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "unknown_prediction")
        assert r.json()["error"]["message"].replace(theirs, "ID") == unknown.json()["error"][
            "message"
        ].replace("p" + "f" * 20, "ID")
        refused = {"obligation": 1, "query_mismatch": 1, "sampled": 1}
        mine = c.get("/calls").json()["agents"]["piper"]["refusals"]
        assert mine == {**refused, "unknown_prediction": 2}
        with env.client(env.token_for(scope="operator")) as o:  # operators read the reason
            seen = o.get("/calls").json()["agents"]["piper"]["refusals"]
            assert seen == {**refused, "unknown_prediction": 1, "wrong_predictor": 1}
        # a prediction about another target
        wren, _, _ = commit(c, ask(1), {"7": 1.0}, target="wren")
        r = proxy(c, ask(1), wren)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "wrong_target")
        # an unknown id
        r = proxy(c, ask(1), "p" + "0" * 20)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "unknown_prediction")
        # the right one passes, once
        pid, body, salt = commit(c, ask(1), {"7": 1.0})
        r = proxy(c, ask(1), pid)
        assert r.status_code == 200 and r.headers[PREDICTION_HEADER] == pid
        assert int(r.headers["X-Mindledger-Observed"]) > 0
        r = proxy(c, ask(1), pid)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "prediction_used")
        # and a revealed one is closed
        assert c.post(
            f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()}
        ).status_code == 200
        r = proxy(c, ask(1), pid)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "prediction_closed")
    assert env.fake.stats()["ok"] == 1
    assert env.daemon.ledger.prediction(pid).observed == ["7"]
    assert env.daemon.ledger.prediction(other).observed == []
    reasons = [
        e.payload["reason"] for e in env.daemon.ledger.entries() if e.kind == "refuse"
    ]
    assert reasons == [
        "sampled",
        "query_mismatch",
        "obligation",
        "wrong_predictor",
        "unknown_prediction",
        "wrong_target",
        "unknown_prediction",
        "prediction_used",
        "prediction_closed",
    ]
    assert env.daemon.ledger.verify() == []


def test_a_query_already_asked_cannot_be_predicted_after_its_answer_is_known(env: Env) -> None:
    """Asking first and predicting after would score a prediction made knowing the answer."""
    env.dice.values = [PASSED, PASSED]
    with env.client() as c:
        assert proxy(c, ask(5)).status_code == 200  # not sampled: the caller sees "7"
        pid, _, _ = commit(c, ask(5), {"7": 1.0})
        r = proxy(c, ask(5), pid)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "query_asked")
        # a query it has not asked is fine
        fresh, _, _ = commit(c, ask(6), {"7": 1.0})
        assert proxy(c, ask(6), fresh).status_code == 200
    assert env.fake.stats()["ok"] == 2
    assert env.daemon.ledger.verify() == []


def test_verify_flags_a_prediction_of_a_query_already_asked(env: Env) -> None:
    """Written past the proxy (as a second daemon without its cache might): verify says so."""
    led = env.daemon.ledger
    qh = query_hash(ask(7)["messages"])
    led.record_call("piper", "dusk", request="r1", query_hash=qh, status=200)
    p = led.client("piper").predict("dusk", ask(7)["messages"][0]["content"], {"7": 1.0})
    p.commit()
    led.record_call(
        "piper", "dusk", request="r2", query_hash=qh, status=200, prediction=p.id, answer="7",
        response=response_hash("{}"),
    )  # fmt: skip
    problems = [f for f in led.verify() if f.problem == "invalid-entry"]
    assert problems and "already made" in problems[0].message


def test_obligations_survive_a_restart_of_the_daemon(db_url: str, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        settings = make_settings(tmp_path / "home", db_url, fake.base_url, head_interval=0)
        daemon = build_daemon(settings, scheduler=False, draw=Dice(SAMPLED))
        token = create_token(daemon.engine, "piper")
        try:
            with BackgroundServer(daemon.app) as server, httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
            ) as c:
                assert proxy(c, ask(1)).status_code == 428
        finally:
            daemon.close()
        daemon = build_daemon(settings, scheduler=False, draw=Dice(PASSED))
        try:
            with BackgroundServer(daemon.app) as server, httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
            ) as c:
                r = proxy(c, ask(1))
                assert (r.status_code, r.json()["error"]["code"]) == (428, "prediction_required")
                assert "owe" in r.json()["error"]["message"]
        finally:
            daemon.close()
        assert fake.stats()["requests"] == 0


def test_a_thousand_calls_sample_near_the_share_and_a_caller_that_never_predicts_is_stopped(
    sqlite_url: str, tmp_path: Path
) -> None:
    with FakeOpenAI() as fake:
        settings = make_settings(tmp_path / "home", sqlite_url, fake.base_url, head_interval=0)
        daemon = build_daemon(settings, scheduler=False, draw=Dice(seed=2026))
        honest = create_token(daemon.engine, "piper")
        shirker = create_token(daemon.engine, "mallory")
        try:
            with BackgroundServer(daemon.app) as server:
                with DaemonClient(server.url, honest) as ml:
                    sampled = 0
                    for n in range(1000):
                        try:
                            ml.chat("dusk", ask(n)["messages"])
                        except DaemonError as exc:
                            assert exc.status == 428
                            sampled += 1
                            with ml.predict("dusk", ask(n)["messages"], {"7": 0.9, "3": 0.1}) as p:
                                p.ask()
                with httpx.Client(
                    base_url=server.url, headers={"Authorization": f"Bearer {shirker}"}
                ) as m:
                    codes = [proxy(m, ask(f"m{n}")).status_code for n in range(100)]
        finally:
            daemon.close()
        # exactly the calls the service's dice picked were sampled: replay the dice
        replay = np.random.default_rng(2026).random(1000)
        assert sampled == int((replay < 0.2).sum())
        # and that is the share (binomial: 4 standard deviations are ±5 points)
        assert 0.15 <= sampled / 1000 <= 0.25, sampled
        first = codes.index(428)
        assert set(codes[first:]) == {428}
        calls = {t.caller: t for t in daemon.ledger.calls()}
        assert calls["piper"].sampled == sampled and calls["piper"].predicted == sampled
        assert calls["piper"].calls == 1000 and calls["piper"].obligation is None
        assert calls["mallory"].calls == first and calls["mallory"].obligation is not None
        assert fake.stats()["ok"] == 1000 + first


def test_the_service_dice_are_uniform_and_cannot_be_replayed() -> None:
    from harness.daemon import system_draw

    draws = np.array([system_draw() for _ in range(100_000)])
    assert ((draws >= 0) & (draws < 1)).all()
    # the sampled share at the default 20%: sd 0.13 points, so ±0.6 points is 4.7 sd
    assert abs((draws < 0.2).mean() - 0.2) < 0.006
    assert len(set(draws[:1000].tolist())) == 1000


# -- who records answers -------------------------------------------------------------------------


def test_only_an_operator_records_an_answer_and_it_names_its_provenance(env: Env) -> None:
    target = env.token_for("dusk")
    operator = env.token_for(scope="operator", label="alice")
    with env.client() as c, env.client(target) as t, env.client(operator) as o:
        pid, _, _ = commit(c, ask(1), {"7": 0.9, "3": 0.1})
        for who in (c, t):
            r = who.post(f"/predictions/{pid}/observe", json={"answer": "7"})
            assert r.status_code == 403, r.text
            assert "operator" in r.json()["error"]["message"]
        r = o.post(f"/predictions/{pid}/observe", json={"answer": "7", "request": "ticket-42"})
        assert r.status_code == 201, r.text
        source = r.json()["provenance"]
        assert source["by"] == "operator" and source["operator"] == "operator:alice"
        assert source["request"] == "ticket-42" and source["response"] == response_hash("7")
        # an operator token does not act as an agent
        assert o.post("/predictions", json={}).status_code == 403
        assert proxy(o, ask(1)).status_code == 403
    state = env.daemon.ledger.prediction(pid)
    assert state.observed == ["7"] and state.provenance == [source]
    assert env.daemon.ledger.verify() == []


def test_only_the_predictor_reveals_and_commits_as_itself(env: Env) -> None:
    other = env.token_for("mallory")
    with env.client() as c, env.client(other) as m:
        pid, body, salt = commit(c, ask(1), {"a": 1.0})
        r = m.post(f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()})
        # another agent's prediction is answered as an unknown one: its id is not confirmed
        unknown = m.post("/predictions/pffffffffffffffffffff/reveal",
                         json={"prediction": body, "salt": salt.hex()})  # fmt: skip
        assert r.status_code == unknown.status_code == 404
        assert r.json()["error"]["message"].replace(pid, "ID") == unknown.json()["error"][
            "message"
        ].replace("pffffffffffffffffffff", "ID")
        assert m.get(f"/predictions/{pid}").status_code == 404
        assert c.get(f"/predictions/{pid}").status_code == 200
        r = m.post(
            "/predictions",
            json={"predictor": "piper", "target": "dusk", "query": "q", "commitment": "x"},
        )
        assert r.status_code == 403
        assert r.json()["error"]["field"] == "predictor"
    assert env.fake.stats()["requests"] == 0
    assert env.daemon.ledger.verify() == []


def test_a_reveal_that_does_not_match_is_409_and_recorded(env: Env) -> None:
    operator = env.token_for(scope="operator")
    with env.client() as c, env.client(operator) as o:
        pid, body, salt = commit(c, ask(1), {"a": 1.0})
        assert o.post(f"/predictions/{pid}/observe", json={"answer": "b"}).status_code == 201
        other = {**body, "distribution": {"b": 1.0}, "top1": "b"}
        r = c.post(f"/predictions/{pid}/reveal", json={"prediction": other, "salt": salt.hex()})
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "reveal_rejected"
        assert r.json()["result"]["status"] == "rejected"
        assert c.get(f"/predictions/{pid}").json()["state"] == "rejected"
        r = c.post(f"/predictions/{pid}/reveal", json={"prediction": body, "salt": salt.hex()})
        assert r.status_code == 409
        assert r.json()["state"] == "rejected"
    assert env.daemon.ledger.verify() == []


# -- the proxy's record and the transparency log -------------------------------------------------


def test_calls_are_counted_per_agent_and_agents_see_only_their_own(env: Env) -> None:
    env.dice.values = [PASSED, SAMPLED, PASSED]
    mallory = env.token_for("mallory")
    operator = env.token_for(scope="operator")
    with env.client() as c, env.client(mallory) as m, env.client(operator) as o:
        assert proxy(c, ask(1)).status_code == 200
        assert proxy(c, ask(2)).status_code == 428
        assert proxy(m, ask(3)).status_code == 200
        mine = c.get("/calls").json()
        assert set(mine["agents"]) == {"piper"}
        assert mine["agents"]["piper"] == {
            "calls": 1,
            "predicted": 0,
            "unpredicted": 1,
            "refused": 1,
            "refusals": {"sampled": 1},
            "open_obligations": ["dusk"],
            "obligations": {"opened": 1, "met": 0, "pending": 1, "abandoned": 0},
            "abandoned_obligations": [],
        }
        assert c.get("/calls?agent=mallory").status_code == 403
        everyone = o.get("/calls").json()["agents"]
        assert set(everyone) == {"piper", "mallory"}
        assert everyone["mallory"]["calls"] == 1


def test_tree_heads_and_proofs_are_served_and_verify(env: Env) -> None:
    from ledger.merkle import leaf_hash, verify_consistency, verify_inclusion
    from ledger.tree import TreeHead, digest_bytes

    with env.client() as c:
        assert c.get("/ledger/head").status_code == 404  # empty ledger
        commit(c, ask(1), {"7": 1.0})
        first = TreeHead.from_dict(c.get("/ledger/head").json())
        assert first.signature_ok() and first.size == 2
        assert c.get("/ledger/head").json() == first.to_dict()  # not re-signed: nothing new
        for n in range(2, 6):
            commit(c, ask(n), {"7": 1.0})
        head = TreeHead.from_dict(c.get("/ledger/head").json())
        assert head.size == 6 and head.ledger == first.ledger
        entry = env.daemon.ledger.entries()[2]
        proof = c.get(f"/ledger/proof?seq=3&size={head.size}").json()
        assert proof["entry"] == entry.hash and proof["root"] == head.root
        assert verify_inclusion(
            leaf_hash(digest_bytes(entry.hash)),
            2,
            head.size,
            [digest_bytes(h) for h in proof["proof"]],
            digest_bytes(head.root),
        )
        cons = c.get(f"/ledger/consistency?old={first.size}&new={head.size}").json()
        assert verify_consistency(
            first.size,
            head.size,
            digest_bytes(first.root),
            digest_bytes(head.root),
            [digest_bytes(h) for h in cons["proof"]],
        )
        for bad in ("/ledger/proof?seq=x", "/ledger/proof", "/ledger/consistency?old=-1"):
            r = c.get(bad)
            assert r.status_code == 400, bad
        for missing in ("/ledger/proof?seq=0", "/ledger/proof?seq=9", "/ledger/consistency?old=7"):
            r = c.get(missing)
            assert r.status_code == 404, missing
    # every head it signed is in the heads file
    heads = [h for _, h in env.daemon.ledger.heads.read()]  # type: ignore[union-attr]
    assert [h.size for h in heads if isinstance(h, TreeHead)] == [2, 6]


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
    (
        "/predictions",
        json.dumps(
            {"target": "d", "query": "q", "commitment": GOOD_COMMITMENT, "query_hash": "x"}
        ),
        "query_hash",
    ),
    (
        "/predictions",
        json.dumps({"target": "d", "query": "q", "commitment": GOOD_COMMITMENT, "messages": []}),
        "messages",
    ),
    (
        "/predictions",
        json.dumps(
            {"target": "d", "query": "q", "commitment": GOOD_COMMITMENT, "messages": [{"a": 1}]}
        ),
        "messages[0]",
    ),
    ("/predictions/{pid}/reveal", json.dumps({"prediction": "x", "salt": "00"}), "prediction"),
    ("/predictions/{pid}/reveal", json.dumps({"prediction": {}, "salt": 12}), "salt"),
    ("/runs", json.dumps({"suite": 5}), "suite"),
    ("/runs", json.dumps({"suite": "nope", "references": ["oracle"]}), "suite"),
    ("/runs", json.dumps({"references": "oracle"}), "references"),
    ("/proxy/dusk/v1/chat/completions", b"{", "body"),
    ("/proxy/dusk/v1/chat/completions", json.dumps({"messages": [], "stream": True}), "stream"),
    ("/proxy/dusk/v1/chat/completions", json.dumps({"messages": "hi"}), "messages"),
    # hostile documents (issue 12): never a 500
    ("/predictions", "[" * 5000 + "]" * 5000, "body"),
    ("/predictions", '{"target": "dusk", "query": "\\ud800", "commitment": "x"}', "body"),
    ("/proxy/dusk/v1/chat/completions", '{"messages": [{"role": "user", "content": "\\udfff"}]}',
     "body"),
    ("/proxy/dusk/v1/chat/completions", "{" * 3000, "body"),
    ("/predictions", '{"target": "dusk", "query": "q", "commitment": NaN}', "body"),
    ("/predictions/{pid}/reveal", '{"prediction": {"a": ' + "9" * 5000 + '}, "salt": "00"}',
     "body"),
    ("/proxy/dusk/v1/chat/completions", json.dumps({"model": "m"}), "messages"),
]


def test_malformed_bodies_give_400_naming_the_field_and_write_nothing(env: Env) -> None:
    operator = env.token_for(scope="operator")
    with env.client() as c, env.client(operator) as o:
        pid, _, _ = commit(c, ask(1), {"a": 1.0})
        before = entries(env.daemon)
        for path, body, field in MALFORMED:
            r = c.post(
                path.format(pid=pid), content=body, headers={"Content-Type": "application/json"}
            )
            assert r.status_code == 400, (path, body, r.text)
            err = r.json()["error"]
            assert err["field"] == field, (path, body, err)
            assert err["message"].strip(), (path, body)
        for body, field in ((json.dumps({"answer": 7}), "answer"), (b"null", "body")):
            r = o.post(f"/predictions/{pid}/observe", content=body)
            assert (r.status_code, r.json()["error"]["field"]) == (400, field)
        assert entries(env.daemon) == before
        assert c.get("/health").status_code == 200
    assert env.fake.stats()["requests"] == 0
    assert env.daemon.ledger.verify() == []


def test_a_request_that_is_not_valid_http_gets_the_json_error_body(env: Env) -> None:
    """uvicorn refuses malformed HTTP before the app sees it; its plain-text 400 was the one
    answer outside the document (schemathesis drew ``Content-Length: ^``)."""
    port = int(env.url.rsplit(":", 1)[1])
    for head in (
        b"GET /calls HTTP/1.1\r\nHost: x\r\nContent-Length: ^\r\n\r\n",
        b"GET /calls HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head)
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
        status, _, rest = raw.partition(b"\r\n")
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 400"), raw
        assert b"content-type: application/json" in headers.lower(), raw
        error = json.loads(body)["error"]
        assert error["code"] == "bad_http" and error["field"] is None
        assert "expected a valid HTTP/1.1 request" in error["message"]
    with env.client() as c:
        assert c.get("/health").status_code == 200


def test_unknown_ids_and_targets_are_404(env: Env) -> None:
    operator = env.token_for(scope="operator")
    with env.client() as c, env.client(operator) as o:
        for path in ("/predictions/pnothing", "/runs/nothing", "/runs/nothing/profile"):
            r = c.get(path)
            assert r.status_code == 404, path
            assert r.json()["error"]["code"] == "not_found"
        r = c.post("/predictions/pnothing/reveal", json={"prediction": {}, "salt": "00"})
        assert r.status_code == 404
        r = o.post("/predictions/pnothing/observe", json={"answer": "a"})
        assert r.status_code == 404
        r = c.post("/proxy/bot/v1/chat/completions", json={"messages": []})
        assert r.status_code == 404  # a reference agent is no proxy target
        assert r.json()["error"]["field"] == "target"
        targets = r.json()["error"]["message"].split("(targets: ")[1]
        assert "dusk" in targets and "bot" not in targets
        r = c.get("/nowhere")
        assert r.status_code == 404  # and says where the routes are
        assert r.json()["error"]["message"] == (
            "no such route: GET /nowhere (the daemon's routes are listed in GET /openapi.json; "
            "GET /health says whether it is well)")
        assert c.delete("/runs").status_code == 405
        assert c.get("/runs?limit=zero").json()["error"]["field"] == "limit"
        r = c.post("/runs", json={"references": ["oracle"]})
        assert r.status_code == 503  # no scheduler in this daemon
        r = c.post("/runs", json={"references": ["noisy:0.75"]})
        assert r.status_code == 503  # a valid reference: only the scheduler is missing
    assert env.daemon.ledger.verify() == []


def test_errors_name_the_body_field_and_never_a_command_line_flag(env: Env) -> None:
    """Issue 23: the run planner is shared with the command line, which says --agent; through
    the API a bad name is the body's field, and a 404 points at no command."""
    operator = env.token_for(scope="operator")
    known = "(known: bot, dusk, local, wren)"
    bad: list[tuple[dict[str, Any], str, str]] = [
        ({"agent": "cmdbto"}, "agent", f"agent: no agent named 'cmdbto' {known}"),
        ({"references": ["psychic"]}, "references", "references: unknown reference agent "
         "'psychic' (expected one of "),
        # a good agent beside a bad reference: the reference is at fault
        ({"agent": "dusk", "references": ["oracle", "psychic"]}, "references",
         "references: unknown reference agent 'psychic'"),
        ({"agent": "dusk", "ablate": ["magic"]}, "ablate", "ablate: unknown module 'magic' "
         "(expected one of the reference scaffold's: "),
    ]
    with env.client(operator) as o:
        for body, field, message in bad:
            r = o.post("/runs", json={"suite": "quick", **body})
            assert r.status_code == 400, r.text
            err = r.json()["error"]
            assert (err["code"], err["field"]) == ("invalid_field", field), body
            assert err["message"].startswith(message), err
            assert "--" not in err["message"], err
        for path in ("/runs/cmdbto", "/runs/cmdbto/profile", "/predictions/pnothing"):
            err = o.get(path).json()["error"]
            assert err["code"] == "not_found" and err["message"].startswith("no "), path
            assert "mindledger" not in err["message"], err
        assert o.get("/runs").json()["runs"] == []  # nothing was stored


def test_a_token_over_its_rate_is_told_to_wait(db_url: str, tmp_path: Path) -> None:
    from harness.daemon.services import RequestQuota

    t = [0.0]
    limiter = RequestQuota(2.0, burst=4, clock=lambda: t[0])
    assert [limiter.take("a") for _ in range(4)] == [0.0] * 4
    assert limiter.take("a") == pytest.approx(0.5)
    assert limiter.take("b") == 0.0  # per token
    t[0] += 0.5
    assert limiter.take("a") == 0.0
    settings = make_settings(tmp_path, db_url, "http://dusk.invalid/v1", api_rate_limit=1.0)
    daemon = build_daemon(settings, scheduler=False)
    token = create_token(daemon.engine, "piper")
    try:
        with BackgroundServer(daemon.app) as server, httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
        ) as c:
            codes = [c.get("/whoami").status_code for _ in range(4)]
            assert codes[:2] == [200, 200] and codes[-1] == 429
            r = c.get("/whoami")
            assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
            assert c.get("/health").status_code == 200  # no token, no limit
    finally:
        daemon.close()


def test_the_proxy_sends_the_targets_declared_headers_and_body_fields(
    db_url: str, tmp_path: Path
) -> None:
    """A target declared with ``headers`` and ``extra_body`` gets them through the query proxy
    as it does from the harness's own adapter (real sockets, the fake server's log)."""
    with FakeOpenAI(answer="7") as fake:
        settings = make_settings(tmp_path / "home", db_url, fake.base_url, prediction_share=0.0)
        dusk = replace(settings.agents["dusk"], headers={"X-Team": "research"},
                       extra_body={"top_k": 1})
        settings = replace(settings, agents={**settings.agents, "dusk": dusk})
        daemon = build_daemon(settings, scheduler=False)
        token = create_token(daemon.engine, "piper")
        try:
            with BackgroundServer(daemon.app) as server:
                r = httpx.post(
                    server.url + "/proxy/dusk/v1/chat/completions",
                    json={"model": "x", "messages": [{"role": "user", "content": "q"}],
                          "temperature": 0.3},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=10,
                )
        finally:
            daemon.close()
        assert r.status_code == 200, r.text
        (call,) = fake.log
    assert call.headers is not None and call.headers.get("x-team") == "research"
    assert call.body is not None
    assert (call.body["top_k"], call.body["model"], call.body["temperature"]) == (1, "m", 0.3)
