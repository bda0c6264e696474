"""Obligations bound to the query and commitments over the whole request, played against the
query proxy through real sockets on 127.0.0.1 (uvicorn on a thread, the FakeOpenAI target):
the throwaway discharge, every answer-shaping field changed after a commit, and a commit
whose query text is not the question its messages ask."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.daemon import PREDICTION_HEADER, BackgroundServer, Daemon, build_daemon, create_token
from harness.testing import FakeOpenAI
from ledger import commitment, new_salt, prediction_body
from ledger.calls import ABANDON_AFTER
from ledger.protocol import query_hash
from tests.cli import run_main
from tests.harness.daemon.test_daemon_api import Dice, make_settings


class Clock:
    """The ledger's clock, moved by hand."""

    def __init__(self) -> None:
        self.t = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        return self.t.isoformat(timespec="microseconds")


@dataclass
class Env:
    daemon: Daemon
    url: str
    fake: FakeOpenAI
    clock: Clock
    home: Path
    db_url: str
    dice: Dice

    def client(self, agent: str) -> httpx.Client:
        token = create_token(self.daemon.engine, agent)
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )


def _env(db_url: str, tmp_path: Path, share: float, dice: Dice) -> Iterator[Env]:
    with FakeOpenAI() as fake:
        home = tmp_path / "home"
        settings = make_settings(home, db_url, fake.base_url, prediction_share=share,
                                 head_interval=0)  # fmt: skip
        daemon = build_daemon(settings, scheduler=False, draw=dice)
        clock = Clock()
        daemon.ledger.clock = clock
        try:
            with BackgroundServer(daemon.app) as server:
                yield Env(daemon, server.url, fake, clock, home, db_url, dice)
        finally:
            daemon.close()


@pytest.fixture
def half(db_url: str, tmp_path: Path) -> Iterator[Env]:
    """A daemon sampling half the calls with seeded dice."""
    yield from _env(db_url, tmp_path, 0.5, Dice(seed=25))


@pytest.fixture
def open_proxy(db_url: str, tmp_path: Path) -> Iterator[Env]:
    """A daemon that samples no call: only what a prediction is bound to matters."""
    yield from _env(db_url, tmp_path, 0.0, Dice(seed=1))


def ask(text: str, **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"{text} [[answer: 7]]"}],
            **fields}  # fmt: skip


def commit(c: httpx.Client, request: dict[str, Any], predictor: str, dist: dict[str, float]) -> str:
    """Commit a prediction of ``request``'s answer (the whole request); return its id."""
    query = request["messages"][-1]["content"]
    body = prediction_body(predictor=predictor, target="dusk", query=query, distribution=dist)
    r = c.post(
        "/predictions",
        json={"target": "dusk", "commitment": commitment(body, new_salt()), "request": request},
    )
    assert r.status_code == 201, r.text
    assert (r.json()["query"], r.json()["query_hash"]) == (query, query_hash(request))
    return str(r.json()["id"])


def call(c: httpx.Client, request: dict[str, Any], pid: str | None = None) -> httpx.Response:
    headers = {PREDICTION_HEADER: pid} if pid else {}
    return c.post("/proxy/dusk/v1/chat/completions", json=request, headers=headers)


def ledger_payloads(daemon: Daemon, kind: str, caller: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (e.seq, json.loads(e.payload_json))
        for e in daemon.ledger.entries()
        if e.kind == kind and e.subject == f"agent:{caller}"
    ]


# -- the throwaway discharge ----------------------------------------------------------------------


def test_the_throwaway_strategy_at_share_half_gets_no_obligated_query_answered_unpredicted(
    half: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25's attack: after a 428 on a hard query Q, commit a prediction of an easy Q′,
    call Q′ with it, then retry Q without one. It worked 12 times out of 12; now the retry is
    refused, the one way to get Q answered is a prediction bound to Q, and an obligation the
    agent walks away from is counted as abandoned in /calls and by `ledger verify`."""
    hard = [ask(f"hard question {i}") for i in range(12)]
    by_hash = {query_hash(q): q for q in hard}
    answered_unpredicted: list[int] = []
    throwaways = 0
    gave_in: list[int] = []
    with half.client("mallory") as m:
        for i, q in enumerate(hard):
            r = call(m, q)
            if r.status_code == 200:
                answered_unpredicted.append(i)
                continue
            assert (r.status_code, r.json()["error"]["code"]) == (428, "prediction_required")
            owed = r.json()["owed"]["query_hash"]
            # the throwaway: an easy query's prediction unlocks that query's call only
            easy = ask(f"easy question {i}")
            pid = commit(m, easy, "mallory", {"7": 1.0})
            assert call(m, easy, pid).status_code == 200
            throwaways += 1
            for retry in (q, {**q, "user": "someone else"}, {**q, "temperature": 0.5}):
                r = call(m, retry)
                assert r.status_code == 428, (i, retry)
                assert r.json()["owed"]["query_hash"] == owed
            if i in (5, 9):  # now and then it gives in and predicts the query it owes
                q_owed = by_hash[owed]
                pid = commit(m, {"messages": q_owed["messages"]}, "mallory", {"7": 0.5, "3": 0.5})
                assert call(m, q_owed, pid).status_code == 200  # model is not hashed
                gave_in.append(hard.index(q_owed))
    # an honest agent beside it: predicts each query the service samples, and only that one
    with half.client("piper") as p:
        honest_sampled = 0
        for i in range(12):
            q = ask(f"piper's question {i}")
            r = call(p, q)
            if r.status_code == 428:
                honest_sampled += 1
                assert call(p, q, commit(p, q, "piper", {"7": 0.9, "3": 0.1})).status_code == 200
            else:
                assert r.status_code == 200
    # the seeded dice: mallory is sampled on hard 0, then (after giving in) on 6 and 10;
    # piper 7 times in 12
    assert (answered_unpredicted, gave_in, throwaways) == ([], [0, 6], 12)
    assert honest_sampled == 7

    # every query that opened an obligation and was then answered was answered with a
    # prediction bound to it, and nothing was answered unpredicted while one was owed
    led = half.daemon.ledger
    for caller in ("mallory", "piper"):
        sampled = {
            pl["query_hash"]: seq
            for seq, pl in ledger_payloads(half.daemon, "refuse", caller)
            if pl["reason"] == "sampled"
        }
        assert sampled
        for seq, pl in ledger_payloads(half.daemon, "call", caller):
            if pl["query_hash"] in sampled and pl["status"] == 200:
                assert seq > sampled[pl["query_hash"]]
                assert pl["prediction"] is not None
                assert led.prediction(pl["prediction"]).query_hash == pl["query_hash"]
    answered = [
        (hard.index(by_hash[pl["query_hash"]]), pl["prediction"] is not None)
        for _, pl in ledger_payloads(half.daemon, "call", "mallory")
        if pl["query_hash"] in by_hash and pl["status"] == 200
    ]
    assert answered == [(0, True), (6, True)]  # the hard queries it got: each predicted
    assert led.verify() == []

    with half.client("mallory") as m:
        tally = m.get("/calls").json()["agents"]["mallory"]
    assert tally["obligations"] == {"opened": 3, "met": 2, "pending": 1, "abandoned": 0}
    assert tally["open_obligations"] == ["dusk"] and tally["unpredicted"] == 0

    # a day on (by the ledger's own clock: its last entry), mallory never came back
    half.clock.t += ABANDON_AFTER + dt.timedelta(seconds=1)
    with half.client("mallory") as m:
        assert call(m, hard[-1]).status_code == 428
        calls = m.get("/calls").json()
    tally = calls["agents"]["mallory"]
    assert tally["obligations"] == {"opened": 3, "met": 2, "pending": 0, "abandoned": 1}
    (gone,) = tally["abandoned_obligations"]
    assert (gone["target"], gone["query_hash"]) == ("dusk", query_hash(hard[10]))
    (pair,) = calls["pairs"]
    assert pair["obligation_abandoned"] and pair["obligations_opened"] == 3
    with half.client("piper") as p:
        honest = p.get("/calls").json()["agents"]["piper"]["obligations"]
    assert honest == {"opened": honest_sampled, "met": honest_sampled, "pending": 0,
                      "abandoned": 0}  # fmt: skip

    # `ledger verify`: a warning with the counts, not a failure of the chain
    v = led.verification()
    assert v.ok and len(v.warnings) == 1 and "'mallory' abandoned 1 obligation" in v.warnings[0]
    monkeypatch.setenv("MINDLEDGER_HOME", str(half.home))
    code, out, err = run_main(capsys, "--db", half.db_url, "ledger", "verify")
    assert code == 0, err
    assert out.startswith("ok: ")
    assert err.startswith("warning: 'mallory' abandoned 1 obligation:")
    assert "obligations opened 3, met 2, pending 0, abandoned 1" in err
    code, out, err = run_main(capsys, "--db", half.db_url, "ledger", "verify", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["warnings"] == v.warnings
    assert report["calls"]["mallory"]["obligations"]["abandoned"] == 1


def test_a_query_the_caller_has_seen_answered_is_not_sampled(half: Env) -> None:
    """Its answer is known, so a prediction of it would be refused (query_asked): sampling it
    would open an obligation nothing could meet. No dice are rolled for it."""
    q = ask("once")
    with half.client("piper") as c:
        r = call(c, q)
        if r.status_code == 428:  # sampled: it predicts it, as it owes
            assert call(c, q, commit(c, q, "piper", {"7": 1.0})).status_code == 200
        drawn = half.dice.drawn
        for _ in range(20):
            assert call(c, q).status_code == 200
        assert half.dice.drawn == drawn
        assert call(c, ask("a new one")).status_code in (200, 428)
        assert half.dice.drawn == drawn + 1
    assert half.daemon.ledger.verify() == []


# -- the commitment covers the whole request ------------------------------------------------------

TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "parameters": {"type": "object", "properties": {"a": {"enum": ["alpha"]}}},
    },
}
SHAPING = {
    "max_tokens": ({"max_tokens": 64}, 1),
    "tools": ({}, [TOOL]),
    "tool_choice": ({"tools": [TOOL], "tool_choice": "auto"},
                    {"type": "function", "function": {"name": "answer"}}),
    "logit_bias": ({}, {"1234": 100}),
    "response_format": ({}, {"type": "json_object"}),
    "temperature": ({"temperature": 0.0}, 1.0),
    "seed": ({}, 7),
    "n": ({}, 2),
    "stop": ({}, ["\n"]),
    "top_p": ({}, 0.1),
}  # fmt: skip
"""Per field: the committed request's extra fields, and the value the call then sends."""


@pytest.mark.parametrize("field", sorted(SHAPING))
def test_changing_an_answer_shaping_field_after_the_commit_is_a_query_mismatch(
    open_proxy: Env, field: str
) -> None:
    committed, changed = SHAPING[field]
    request = ask(f"shaped by {field}", **committed)
    with open_proxy.client("piper") as c:
        pid = commit(c, request, "piper", {"alpha": 1.0})
        r = call(c, {**request, field: changed}, pid)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "query_mismatch")
        assert r.json()["error"]["field"] == PREDICTION_HEADER
        assert open_proxy.fake.stats()["requests"] == 0  # the target was never asked
        # the committed request itself still goes through, with the prediction unused
        assert call(c, request, pid).status_code == 200
    (refusal,) = [pl for _, pl in ledger_payloads(open_proxy.daemon, "refuse", "piper")]
    assert refusal["reason"] == "query_mismatch" and refusal["prediction"] == pid
    assert refusal["query_hash"] == query_hash({**request, field: changed})
    assert len(open_proxy.daemon.ledger.prediction(pid).observed) == 1  # the one answer
    assert open_proxy.daemon.ledger.verify() == []


def test_model_stream_and_user_are_left_out_of_the_commitment(open_proxy: Env) -> None:
    """The allow-list: the proxy sends the target's declared model whatever the call says, a
    call that streams is refused, and ``user`` only labels the caller for the provider."""
    request = {"messages": ask("allow-listed")["messages"]}
    with open_proxy.client("piper") as c:
        pid = commit(c, request, "piper", {"7": 1.0})
        r = call(c, {**request, "model": "another-model", "stream": False, "user": "u-42"}, pid)
        assert r.status_code == 200, r.text
        r = call(c, {**request, "stream": True}, pid)
        assert (r.status_code, r.json()["error"]["field"]) == (400, "stream")
    assert open_proxy.daemon.ledger.prediction(pid).observed == ["7"]


# -- the commit's query text ----------------------------------------------------------------------


def test_a_commit_whose_query_is_not_its_messages_question_is_refused(open_proxy: Env) -> None:
    """The ledger states the question that was asked: the last user message's text."""
    request = ask("What is 2 + 2?")
    asked = request["messages"][-1]["content"]
    daemon = open_proxy.daemon
    before = daemon.ledger.head()
    with open_proxy.client("piper") as c:

        def post(**body: Any) -> httpx.Response:
            return c.post("/predictions", json={"target": "dusk", "commitment": "sha256:"
                                                + "ab" * 32, **body})  # fmt: skip

        r = post(query="What is the capital of France?", request=request)
        assert r.status_code == 400
        err = r.json()["error"]
        assert (err["code"], err["field"]) == ("query_mismatch", "query")
        assert "What is 2 + 2?" in err["message"] and "capital of France" in err["message"]
        r = post(query="What is the capital of France?", messages=request["messages"])
        assert (r.status_code, r.json()["error"]["field"]) == (400, "query")
        # a bare query hash ties the text to nothing: the request must come with it
        r = post(query="What is the capital of France?", query_hash=query_hash(request))
        assert (r.status_code, r.json()["error"]["field"]) == (400, "request")
        r = post(request=request, query_hash=query_hash(ask("another")))
        assert (r.status_code, r.json()["error"]["field"]) == (400, "query_hash")
        r = post(request={"max_tokens": 1})
        assert (r.status_code, r.json()["error"]["field"]) == (400, "request.messages")
        assert daemon.ledger.head() == before  # nothing was written
        # the text may be left out (it is derived) or given as it is
        r = post(request=request)
        assert r.status_code == 201 and r.json()["query"] == asked
        r = c.post("/predictions", json={"target": "dusk", "commitment": "sha256:" + "cd" * 32,
                                         "query": asked, "request": request})  # fmt: skip
        assert r.status_code == 201
    assert daemon.ledger.prediction(r.json()["id"]).query == asked
    assert daemon.ledger.verify() == []
