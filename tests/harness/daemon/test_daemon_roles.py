"""Issue 25, readers scoped: every route of the daemon × every kind of caller, through real
sockets on 127.0.0.1.

Two agents, ``ada`` and ``bea``, each have a token, a run of their own, predictions committed
through the API and answered through the query proxy (each answer observed), an unpredicted
call and a sampled, refused one; a third run is shared by both (each is under test in it). An
operator token and no token at all complete the callers. Every string of an agent's — its
questions, the target's answers to it, its prediction ids, commitments, query hashes, request
ids and run ids — is collected as the data is made.

Each cell of the matrix (an operation of :data:`harness.daemon.access.ACCESS` × a role) is one
test, run in both directions (ada's token on bea's things and bea's on ada's), asserting:

* the status this file's own table (``EXPECTED``) gives the cell — and a separate test checks
  that the table the route guards and the OpenAPI document use says the same;
* that an agent's answer, refused or not, contains none of the other agent's strings (nor any
  of the shared run's) but those it sent itself (the id it asked about), and an answer without
  a token none of anyone's;
* that an id of another agent's is answered word for word as an unknown id;
* that an agent reads its own things and an operator reads everyone's (the strings are there).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.config.seeds import is_held_out
from harness.config.settings import AgentConfig, load_settings
from harness.daemon import PREDICTION_HEADER, BackgroundServer, Daemon, build_daemon, create_token
from harness.daemon.access import ACCESS, ROLES, Role, access_of, markdown_table
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from harness.testing import FakeOpenAI
from ledger import commitment, new_salt, prediction_body
from ledger.cosign import WITNESS_DIR, WitnessStore
from ledger.protocol import query_hash
from mindledger.forecasts import forecast_body, parse_forecast

README = Path(__file__).resolve().parents[3] / "README.md"
SEEDS = iter(s for s in range(1_300_000_000, 1_300_010_000) if not is_held_out(s))
LOG = "lab.example/roles"
TARGET = "tgt"
PROXY = f"/proxy/{TARGET}/v1/chat/completions"
SAMPLED, PASSED = 0.0, 0.99
"""Dice values that sample an unpredicted call (share 0.5) and that let it pass."""

EXPECTED: dict[tuple[str, str], tuple[int, int, int | None, int]] = {
    # (no token, agent token on its own things, on another agent's, operator token)
    ("GET", "/health"): (200, 200, 200, 200),
    ("GET", "/openapi.json"): (200, 200, 200, 200),
    ("GET", "/metrics"): (401, 403, 403, 200),
    ("GET", "/whoami"): (401, 200, None, 200),
    ("GET", "/runs"): (401, 200, 200, 200),
    ("POST", "/runs"): (401, 202, 403, 202),
    ("GET", "/runs/{id}"): (401, 200, 404, 200),
    ("GET", "/runs/{id}/profile"): (401, 200, 404, 200),
    ("POST", "/predictions"): (401, 201, 403, 403),
    ("GET", "/predictions/{id}"): (401, 200, 404, 200),
    ("POST", "/predictions/{id}/observe"): (401, 403, 403, 201),
    ("POST", "/predictions/{id}/reveal"): (401, 200, 404, 403),
    ("POST", "/forecasts"): (401, 201, 404, 201),
    ("GET", "/forecasts"): (401, 200, 403, 200),
    ("GET", "/forecasts/{id}"): (401, 200, 404, 200),
    ("POST", "/forecasts/{id}/reveal"): (401, 200, 404, 403),
    ("GET", "/schedule/next"): (401, 200, 403, 200),
    ("GET", "/calls"): (401, 200, 403, 200),
    ("GET", "/ledger/head"): (401, 200, 200, 200),
    ("GET", "/ledger/proof"): (401, 200, 200, 200),
    ("GET", "/ledger/consistency"): (401, 200, 200, 200),
    ("POST", PROXY.replace(TARGET, "{target}")): (401, 200, 404, 403),
    ("POST", "/witness/cosign"): (200, 200, 200, 200),
    ("GET", "/witness/heads"): (200, 200, 200, 200),
}
"""What each caller gets, as this test states it independently of the code's table."""
FORECAST = {"form": "quantiles", "levels": [0.1, 0.5, 0.9], "values": [0.2, 0.5, 0.8]}


def _hex() -> str:
    return uuid.uuid4().hex


@dataclass
class Side:
    """One agent's token and things, and every string of its own that others must not see."""

    name: str
    token: str
    run: str
    pid: str = ""
    """An open prediction whose answer the proxy observed."""
    body: dict[str, Any] = field(default_factory=dict)
    salt: bytes = b""
    request: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    observed_seq: int = 0
    open_run: str = ""
    """A run of its own that has not started: it takes forecasts (issue 29)."""
    forecast: str = ""
    """A forecast of its own for its finished run, revealed by nobody yet."""
    forecast_body: dict[str, Any] = field(default_factory=dict)
    forecast_salt: str = ""
    secrets: set[str] = field(default_factory=set)


@dataclass
class World:
    daemon: Daemon
    url: str
    operator: str
    sides: dict[str, Side]
    shared_run: str

    def token(self, caller: str | None) -> str | None:
        if caller is None:
            return None
        return self.operator if caller == "operator" else self.sides[caller].token

    def hidden_from(self, caller: str | None) -> set[str]:
        """The strings ``caller``'s answers must not contain: everything for no token, the other
        agent's and the shared run's for an agent, nothing for the operator."""
        if caller == "operator":
            return set()
        theirs = [s for name, s in self.sides.items() if name != caller]
        return {self.shared_run}.union(*(s.secrets for s in theirs))

    def send(self, method: str, path: str, caller: str | None, **kw: Any) -> httpx.Response:
        token = self.token(caller)
        headers = {**kw.pop("headers", {})}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.request(method, self.url + path, headers=headers, timeout=120, **kw)


def _ask(side: Side, what: str) -> dict[str, Any]:
    """A chat request of ``side``'s whose question and answer are its secrets."""
    answer = f"{side.name}-{what}-answer-{_hex()}"
    question = f"{side.name} asks {what} {_hex()} [[answer: {answer}]]"
    side.secrets |= {question, answer}
    return {"model": "m", "messages": [{"role": "user", "content": question}]}


def _commit(w: World, side: Side, request: dict[str, Any]) -> tuple[str, dict[str, Any], bytes]:
    query = request["messages"][-1]["content"]
    body = prediction_body(predictor=side.name, target=TARGET, query=query,
                           distribution={"yes": 0.5, "no": 0.5})  # fmt: skip
    salt = new_salt()
    sealed = commitment(body, salt)
    r = w.send("POST", "/predictions", side.name,
               json={"target": TARGET, "request": request, "commitment": sealed})  # fmt: skip
    assert r.status_code == 201, r.text
    side.secrets |= {r.json()["id"], sealed, query_hash(request)}
    return r.json()["id"], body, salt


def _call(w: World, side: Side, request: dict[str, Any], pid: str | None = None) -> httpx.Response:
    headers = {PREDICTION_HEADER: pid} if pid else {}
    r = w.send("POST", PROXY, side.name, json=request, headers=headers)
    side.secrets.add(r.headers["X-Mindledger-Request"])
    return r


@dataclass
class Predicted:
    pid: str
    body: dict[str, Any]
    salt: bytes
    request: dict[str, Any]
    answered: httpx.Response


def _predicted(w: World, side: Side) -> Predicted:
    """A new prediction of ``side``'s, committed and answered through the proxy."""
    request = _ask(side, "predicted")
    pid, body, salt = _commit(w, side, request)
    r = _call(w, side, request, pid)
    assert r.status_code == 200, r.text
    return Predicted(pid, body, salt, request, r)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("roles")
    url = f"sqlite:///{home / 'r.db'}"
    with FakeOpenAI() as fake:
        base = load_settings(None, env={}, flags={"db_url": url, "home": str(home)})
        agents = {
            n: AgentConfig(name=n, adapter="openai", endpoint=fake.base_url, model="m")
            for n in ("ada", "bea", TARGET)
        }
        settings = replace(
            base,
            agents=agents,
            head_interval=0,
            api_rate_limit=100_000.0,
            api_max_queued_runs=4,
            prediction_share=0.5,
            schedule="0 0 1 1 *",  # no nightly job fires while the test runs
        )
        runs = {"ada": f"run-ada-{_hex()}", "bea": f"run-bea-{_hex()}"}
        shared = f"run-shared-{_hex()}"
        open_runs = {"ada": f"run-ada-open-{_hex()}", "bea": f"run-bea-open-{_hex()}"}
        dice: list[float] = []  # the service's dice: scripted, then every call passes
        daemon = build_daemon(
            settings,
            draw=lambda: dice.pop(0) if dice else PASSED,
            scheduler_options={"expire_every": None},
        )
        forecasts: dict[str, tuple[str, dict[str, Any], str]] = {}
        for names, run_id in ((("ada",), runs["ada"]), (("bea",), runs["bea"]),
                              (("ada", "bea"), shared), (("ada",), open_runs["ada"]),
                              (("bea",), open_runs["bea"])):  # fmt: skip
            planned = plan_agents(settings, agents=names)
            create_run(daemon.store, settings, suite="quick", planned=planned, seed=next(SEEDS),
                       run_id=run_id)  # fmt: skip
            if run_id in open_runs.values():
                continue
            if len(names) == 1:  # a forecast of its own, committed before the run, revealed after
                body = forecast_body(parse_forecast(FORECAST), f"{names[0]}-reason-{_hex()}")
                salt = new_salt()
                state = daemon.ledger.commit_forecast(names[0], run_id, "false_belief_accuracy",
                                                      commitment(body, salt))  # fmt: skip
                forecasts[names[0]] = (state.id, body, salt.hex())
            asyncio.run(execute_stored_run(daemon.store, settings, run_id, ledger=daemon.ledger))
        assert daemon.scheduler is not None
        daemon.scheduler.start()
        WitnessStore(home / WITNESS_DIR).add_log(
            LOG, daemon.ledger.public_key_hex, now=dt.datetime.now(dt.UTC).isoformat()
        )
        sides = {}
        for n in ("ada", "bea"):
            fid, body, salt = forecasts[n]
            sides[n] = Side(n, create_token(daemon.engine, n), runs[n], open_run=open_runs[n],
                            forecast=fid, forecast_body=body, forecast_salt=salt,
                            secrets={runs[n], open_runs[n], fid, body["reason"]})  # fmt: skip
        operator = create_token(daemon.engine, None, scope="operator", label="ops")
        try:
            with BackgroundServer(daemon.app) as server:
                w = World(daemon, server.url, operator, sides, shared)
                for side in sides.values():
                    made = _predicted(w, side)
                    side.pid, side.body, side.salt = made.pid, made.body, made.salt
                    side.request = made.request
                    side.answer = made.answered.json()["choices"][0]["message"]["content"]
                    side.observed_seq = int(made.answered.headers["X-Mindledger-Observed"])
                    dice.extend([PASSED, SAMPLED])
                    assert _call(w, side, _ask(side, "unpredicted")).status_code == 200
                    assert _call(w, side, _ask(side, "sampled")).status_code == 428
                    assert not dice
                assert w.send("POST", "/witness/cosign", None, json=_cosign_body(w)).is_success
                yield w
        finally:
            daemon.close()


def _cosign_body(w: World) -> dict[str, Any]:
    """A cosign request of the daemon's current head, from the head last cosigned."""
    last = w.send("GET", "/witness/heads", None, params={"log": LOG})
    old = last.json()["tree_head"]["tree_head"]["size"] if last.status_code == 200 else 0
    head = w.send("GET", "/ledger/head", "operator").json()
    size = head["tree_head"]["size"]
    proof = w.send("GET", "/ledger/consistency", "operator", params={"old": old, "new": size})
    return {"log": LOG, "old": old, "proof": proof.json()["proof"], "tree_head": head}


# -- the probes: one request (or a few) per operation, as a caller, about a subject's things ---

Seen = list[tuple[httpx.Response, set[str]]]
"""The answers a probe got, each with the strings it must contain (what the caller reads)."""
Probe = Callable[[World, "str | None", Side, Role], Seen]


def _as_unknown(r: httpx.Response, asked: str, unknown: httpx.Response, nothing: str) -> None:
    """``r`` (about another agent's id ``asked``) is word for word the answer to an id that
    names nothing."""
    assert r.status_code == unknown.status_code
    assert r.json()["error"] == json.loads(unknown.text.replace(nothing, asked))["error"]


def _health(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    r = w.send("GET", "/health", caller)
    # the checks' findings (the ledger's head, the last nightly run) are an operator's to read
    assert ("checks" in r.json()) == (role == "operator"), r.text
    return [(r, {'"status":"ok"'})]


def _openapi(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [(w.send("GET", "/openapi.json", caller), {"x-roles"})]


def _metrics(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [
        (w.send("GET", "/metrics", caller), {"mindledger_runs{"} if role == "operator" else set())
    ]


def _whoami(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    shows = {f'"agent":"{subject.name}"'} if role == "agent" else set()
    return [
        (
            w.send("GET", "/whoami", caller),
            shows | ({'"operator"'} if role == "operator" else set()),
        )
    ]


def _list_runs(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    shows = {subject.run} if role == "agent" else set()
    if role == "operator":
        shows = {w.shared_run, *(s.run for s in w.sides.values())}
    return [(w.send("GET", "/runs", caller), shows)]


def _post_run(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    r = w.send("POST", "/runs", caller, json={"suite": "quick", "agent": subject.name})
    if r.status_code == 202:
        subject.secrets.add(r.json()["run"]["id"])
    return [(r, set())]


def _run(tail: str) -> Probe:
    def probe(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
        reads = role in ("agent", "operator")
        seen: Seen = [(w.send("GET", f"/runs/{subject.run}{tail}", caller),
                       {subject.run} if reads else set())]  # fmt: skip
        if role in ("other_agent", "operator"):  # the run shared by both agents
            shared = w.send("GET", f"/runs/{w.shared_run}{tail}", caller)
            seen.append((shared, {w.shared_run} if role == "operator" else set()))
        if role == "other_agent":
            nothing = f"run-{_hex()}"
            unknown = w.send("GET", f"/runs/{nothing}{tail}", caller)
            for (r, _), asked in zip(seen, (subject.run, w.shared_run), strict=True):
                _as_unknown(r, asked, unknown, nothing)
        return seen

    return probe


def _commit_probe(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    request = _ask(subject, "committed")
    sealed = "sha256:" + _hex() + _hex()
    r = w.send("POST", "/predictions", caller, json={
        "predictor": subject.name, "target": TARGET, "request": request, "commitment": sealed,
    })  # fmt: skip
    subject.secrets.add(sealed)
    if r.status_code == 201:
        subject.secrets.add(r.json()["id"])
    return [(r, set())]


def _show(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    r = w.send("GET", f"/predictions/{subject.pid}", caller)
    if role == "other_agent":
        nothing = "p" + "0" * 20
        _as_unknown(r, subject.pid, w.send("GET", f"/predictions/{nothing}", caller), nothing)
    reads = role in ("agent", "operator")
    return [(r, {subject.pid, subject.answer} if reads else set())]


def _observe(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    answer = f"operator-typed-answer-{_hex()}"
    subject.secrets.add(answer)  # an observation about the subject's prediction
    r = w.send("POST", f"/predictions/{subject.pid}/observe", caller, json={"answer": answer})
    return [(r, set())]


def _reveal(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    if role == "agent":  # its own new prediction, answered, then revealed
        made = _predicted(w, subject)
        sent = {"prediction": made.body, "salt": made.salt.hex()}
        r = w.send("POST", f"/predictions/{made.pid}/reveal", caller, json=sent)
        return [(r, {made.pid, '"scores"'})]
    sent = {"prediction": subject.body, "salt": subject.salt.hex()}  # the right ones, even
    r = w.send("POST", f"/predictions/{subject.pid}/reveal", caller, json=sent)
    if role == "other_agent":
        nothing = "p" + "0" * 20
        unknown = w.send("POST", f"/predictions/{nothing}/reveal", caller, json=sent)
        _as_unknown(r, subject.pid, unknown, nothing)
    return [(r, set())]


def _commit_forecast(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    sealed = "sha256:" + _hex() + _hex()
    body = {"run": subject.open_run, "figure": "d50", "commitment": sealed}
    if role == "operator":
        body["predictor"] = subject.name
    r = w.send("POST", "/forecasts", caller, json=body)
    subject.secrets.add(sealed)
    if r.status_code == 201:
        subject.secrets.add(r.json()["id"])
    if role == "other_agent":
        nothing = f"run-{_hex()}"
        unknown = w.send("POST", "/forecasts", caller, json={**body, "run": nothing})
        _as_unknown(r, subject.open_run, unknown, nothing)
    return [(r, {subject.open_run} if r.status_code == 201 else set())]


def _list_forecasts(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    if role == "other_agent":
        return [(w.send("GET", "/forecasts", caller, params={"agent": subject.name}), set())]
    if role == "operator":
        return [(w.send("GET", "/forecasts", caller),
                 {s.forecast for s in w.sides.values()})]  # fmt: skip
    return [(w.send("GET", "/forecasts", caller), {subject.forecast} if role == "agent" else set())]


def _show_forecast(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    r = w.send("GET", f"/forecasts/{subject.forecast}", caller)
    if role == "other_agent":
        nothing = "f" + "0" * 20
        _as_unknown(r, subject.forecast, w.send("GET", f"/forecasts/{nothing}", caller), nothing)
    return [(r, {subject.forecast} if role in ("agent", "operator") else set())]


def _reveal_forecast(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    body = subject.forecast_body
    sent = {"forecast": body["forecast"], "reason": body["reason"], "salt": subject.forecast_salt}
    r = w.send("POST", f"/forecasts/{subject.forecast}/reveal", caller, json=sent)
    if role == "other_agent":
        nothing = "f" + "0" * 20
        unknown = w.send("POST", f"/forecasts/{nothing}/reveal", caller, json=sent)
        _as_unknown(r, subject.forecast, unknown, nothing)
    # revealed (scored, or void when the run has no value of the figure: the note says why)
    return [(r, {subject.forecast, '"revealed_at":"'} if role == "agent" else set())]


def _schedule(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    if role == "other_agent":
        return [(w.send("GET", "/schedule/next", caller, params={"agent": subject.name}), set())]
    shows = {f'"agent":"{subject.name}"'} if role in ("agent", "operator") else set()
    if role == "operator":
        shows = {f'"agent":"{s}"' for s in w.sides}
    return [(w.send("GET", "/schedule/next", caller), shows)]


def _calls(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    if role == "other_agent":
        return [(w.send("GET", "/calls", caller, params={"agent": subject.name}), set())]
    if role == "operator":
        one = w.send("GET", "/calls", caller, params={"agent": subject.name})
        return [(w.send("GET", "/calls", caller), {'"ada":', '"bea":'}),
                (one, {f'"{subject.name}":'})]  # fmt: skip
    return [(w.send("GET", "/calls", caller), {f'"{subject.name}":'} if role == "agent" else set())]


def _head(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [(w.send("GET", "/ledger/head", caller), set())]


def _proof(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    """The audit path of the entry holding the target's answer to the subject."""
    r = w.send("GET", "/ledger/proof", caller, params={"seq": subject.observed_seq})
    return [(r, {'"entry":"sha256:'} if caller is not None else set())]


def _consistency(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [(w.send("GET", "/ledger/consistency", caller, params={"old": 1}), set())]


def _proxy(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    if role == "agent":  # its own new prediction unlocks its call
        request = _ask(subject, "proxied")
        pid, _, _ = _commit(w, subject, request)
        r = _call(w, subject, request, pid)
        return [(r, {request["messages"][0]["content"].split("[[answer: ")[1][:-2]})]
    # the subject's own committed call, unlocked (it would be) by the subject's prediction
    r = w.send("POST", PROXY, caller, json=subject.request,
               headers={PREDICTION_HEADER: subject.pid})  # fmt: skip
    if role == "other_agent":
        nothing = "p" + "f" * 20
        unknown = w.send("POST", PROXY, caller, json=subject.request,
                         headers={PREDICTION_HEADER: nothing})  # fmt: skip
        _as_unknown(r, subject.pid, unknown, nothing)
    return [(r, set())]


def _cosign(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [(w.send("POST", "/witness/cosign", caller, json=_cosign_body(w)), {"cosignature"})]


def _witnessed(w: World, caller: str | None, subject: Side, role: Role) -> Seen:
    return [(w.send("GET", "/witness/heads", caller, params={"log": LOG}), {LOG})]


PROBES: dict[tuple[str, str], Probe] = {
    ("GET", "/health"): _health,
    ("GET", "/openapi.json"): _openapi,
    ("GET", "/metrics"): _metrics,
    ("GET", "/whoami"): _whoami,
    ("GET", "/runs"): _list_runs,
    ("POST", "/runs"): _post_run,
    ("GET", "/runs/{id}"): _run(""),
    ("GET", "/runs/{id}/profile"): _run("/profile"),
    ("POST", "/predictions"): _commit_probe,
    ("GET", "/predictions/{id}"): _show,
    ("POST", "/predictions/{id}/observe"): _observe,
    ("POST", "/predictions/{id}/reveal"): _reveal,
    ("POST", "/forecasts"): _commit_forecast,
    ("GET", "/forecasts"): _list_forecasts,
    ("GET", "/forecasts/{id}"): _show_forecast,
    ("POST", "/forecasts/{id}/reveal"): _reveal_forecast,
    ("GET", "/schedule/next"): _schedule,
    ("GET", "/calls"): _calls,
    ("GET", "/ledger/head"): _head,
    ("GET", "/ledger/proof"): _proof,
    ("GET", "/ledger/consistency"): _consistency,
    ("POST", "/proxy/{target}/v1/chat/completions"): _proxy,
    ("POST", "/witness/cosign"): _cosign,
    ("GET", "/witness/heads"): _witnessed,
}
PAIRS: dict[Role, list[tuple[str | None, str]]] = {
    "anonymous": [(None, "ada"), (None, "bea")],
    "agent": [("ada", "ada"), ("bea", "bea")],
    "other_agent": [("ada", "bea"), ("bea", "ada")],
    "operator": [("operator", "ada"), ("operator", "bea")],
}
"""Who calls, about whose things, for each role: both directions."""
CELLS = [
    pytest.param(key, role, id=f"{key[0]} {key[1]} | {role}")
    for key, statuses in EXPECTED.items()
    for role, status in zip(ROLES, statuses, strict=True)
    if status is not None
]


@pytest.mark.parametrize(("key", "role"), CELLS)
def test_the_cell(world: World, key: tuple[str, str], role: Role) -> None:
    expected = EXPECTED[key][ROLES.index(role)]
    for caller, subject in PAIRS[role]:
        hidden = world.hidden_from(caller)
        for r, shows in PROBES[key](world, caller, world.sides[subject], role):
            where = f"{caller or 'no token'} on {subject}'s: {r.text[:300]}"
            assert r.status_code == expected, where
            # an answer may repeat what its caller sent (the id it asked about), nothing more
            sent = str(r.request.url) + r.request.content.decode() + str(r.request.headers)
            said = r.text + json.dumps(dict(r.headers))
            assert sorted(s for s in hidden if s in said and s not in sent) == [], where
            assert sorted(s for s in shows if s not in r.text) == [], where


# -- the table, the document and the README say what the cells check -------------------------


def test_the_table_the_guards_use_says_what_the_cells_check() -> None:
    stated = {
        a.key: tuple(None if c is None else c.status for c in map(a.cell, ROLES)) for a in ACCESS
    }
    assert stated == EXPECTED
    for a in ACCESS:  # a scope refused is refused whatever it names
        if a.agent.status == 403:
            assert a.other_agent is not None and a.other_agent.status == 403, a.key
        assert a.refused or 403 not in (a.agent.status, a.operator.status), a.key


def test_every_route_has_a_row_and_the_document_states_it(world: World) -> None:
    routes = {(m, r.path) for r in world.daemon.app.routes for m in getattr(r, "methods", ())
              if m != "HEAD"}  # fmt: skip
    assert routes == {a.key for a in ACCESS} == set(PROBES)
    document = httpx.get(world.url + "/openapi.json", timeout=30).json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            access = access_of(method.upper(), path)
            assert operation["x-roles"] == access.x_roles(), (method, path)
            missing = {str(s) for s in access.statuses()} - set(operation["responses"])
            assert missing == set(), (method, path)
    assert "x-roles" in document["info"]["description"]


def test_the_readme_shows_the_table() -> None:
    assert markdown_table() in README.read_text()


def test_a_run_shared_with_another_agent_is_neither_agents_alone(world: World) -> None:
    store = world.daemon.store
    assert store.owns_run(world.sides["ada"].run, "ada")
    assert not store.owns_run(world.sides["bea"].run, "ada")
    assert not store.owns_run(world.shared_run, "ada")
    assert not store.owns_run(world.shared_run, "bea")
    assert world.daemon.ledger.verify() == []
