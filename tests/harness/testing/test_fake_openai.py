"""The fake OpenAI server: replies, every fault switch as seen on the wire by independent HTTP
clients (httpx's h11 and aiohttp), deterministic fault scheduling, counters, and its two ways of
running (thread, separate process)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.testing import FakeOpenAI, FakeOpenAIProcess, Faults, fixed_answer, request_key


def chat_body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:  # httpx's own transport: h11, an independent parser
        yield c


def post(client: httpx.Client, server: FakeOpenAI, body: dict[str, Any]) -> httpx.Response:
    return client.post(server.base_url + "/chat/completions", json=body)


def test_answer_from_marker_with_usage_and_model(server: FakeOpenAI, client: httpx.Client) -> None:
    r = post(client, server, chat_body("Where is the ball? [[answer: basket]]"))
    assert r.status_code == 200
    data = r.json()
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "basket"}
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["model"] == "m"
    assert data["usage"]["completion_tokens"] == 1
    assert data["usage"]["prompt_tokens"] > 0
    plain = post(client, server, chat_body("no marker")).json()
    assert plain["choices"][0]["message"]["content"] == "ok"
    server.configure(served_model="served-v2", answer=fixed_answer("fixed reply"))
    data = post(client, server, chat_body("[[answer: x]]")).json()
    assert data["model"] == "served-v2"
    assert data["choices"][0]["message"]["content"] == "fixed reply"


def test_tool_call_when_tools_are_offered(server: FakeOpenAI, client: httpx.Client) -> None:
    tools = [
        {"type": "function", "function": {"name": "first", "parameters": {}}},
        {"type": "function", "function": {"name": "submit_answer", "parameters": {}}},
    ]
    data = post(client, server, chat_body("[[answer: 42]]", tools=tools)).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "first"
    assert json.loads(call["function"]["arguments"]) == {"answer": "42"}

    named = {"type": "function", "function": {"name": "submit_answer"}}
    body = chat_body('[[answer: {"answer": "box", "confidence": 0.9}]]', tools=tools)
    data = post(client, server, {**body, "tool_choice": named}).json()
    call = data["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "submit_answer"
    assert json.loads(call["function"]["arguments"]) == {"answer": "box", "confidence": 0.9}

    data = post(client, server, chat_body("[[answer: 42]]", tools=tools, tool_choice="none"))
    assert data.json()["choices"][0]["message"]["content"] == "42"


def test_response_format_gives_json_content(server: FakeOpenAI, client: httpx.Client) -> None:
    fmt = {"type": "json_object"}
    data = post(client, server, chat_body("[[answer: basket]]", response_format=fmt)).json()
    assert json.loads(data["choices"][0]["message"]["content"]) == {"answer": "basket"}
    schema = {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}
    body = chat_body('[[answer: {"answer": 3}]]', response_format=schema)
    data = post(client, server, body).json()
    assert json.loads(data["choices"][0]["message"]["content"]) == {"answer": 3}


def test_max_tokens_cuts_the_reply(server: FakeOpenAI, client: httpx.Client) -> None:
    data = post(client, server, chat_body("[[answer: one two three four]]", max_tokens=2)).json()
    assert data["choices"][0]["message"]["content"] == "one two"
    assert data["choices"][0]["finish_reason"] == "length"


def test_answer_function_may_return_a_whole_message(
    server: FakeOpenAI, client: httpx.Client
) -> None:
    message = {"role": "assistant", "content": "hi", "refusal": None}
    server.configure(answer=lambda body: message)
    assert post(client, server, chat_body()).json()["choices"][0]["message"] == message


def test_models_health_and_errors(server: FakeOpenAI, client: httpx.Client) -> None:
    assert client.get(server.base_url + "/models").json()["data"][0]["id"] == "fake-model"
    assert client.get(f"http://127.0.0.1:{server.port}/health").json() == {"status": "ok"}
    assert client.get(server.base_url + "/nothing").status_code == 404
    assert client.get(server.base_url + "/chat/completions").status_code == 405
    bad = client.post(server.base_url + "/chat/completions", content=b"{not json")
    assert bad.status_code == 400
    assert server.stats()["requests"] == 0


def test_api_key_is_required_when_set(server: FakeOpenAI, client: httpx.Client) -> None:
    server.configure(api_key="sk-test")
    r = post(client, server, chat_body())
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = client.post(
        server.base_url + "/chat/completions",
        json=chat_body(),
        headers={"Authorization": "Bearer sk-test"},
    )
    assert r.status_code == 200
    assert client.get(f"http://127.0.0.1:{server.port}/health").status_code == 200


def test_first_attempts_of_each_distinct_request_fail_in_order(
    server: FakeOpenAI, client: httpx.Client
) -> None:
    server.configure(faults=Faults(kinds=("429", "500"), first=2, retry_after="3"))
    for text in ("a", "b"):
        first, second, third = (post(client, server, chat_body(text)) for _ in range(3))
        assert first.status_code == 429 and first.headers["retry-after"] == "3"
        assert second.status_code == 500 and "retry-after" not in second.headers
        assert third.status_code == 200
    key = request_key(chat_body("a"))
    assert [(r.attempt, r.outcome) for r in server.attempts_of(key)] == [
        (1, "429"),
        (2, "500"),
        (3, "ok"),
    ]
    stats = server.stats()
    assert stats["requests"] == 6 and stats["distinct"] == 2 and stats["ok"] == 2
    assert stats["outcomes"] == {"429": 2, "500": 2, "ok": 2}
    assert stats["max_attempts"] == 3 and stats["duplicates"] == 0


def test_probabilistic_faults_are_seeded_and_independent_of_order() -> None:
    faults = Faults(kinds=("500", "drop"), rate=0.25, seed=11)
    keys = [f"k{i}" for i in range(400)]
    picks = {(k, a): faults.pick(k, a) for k in keys for a in (1, 2, 3)}
    again = {(k, a): faults.pick(k, a) for k in reversed(keys) for a in (3, 2, 1)}
    assert picks == again
    share = sum(p is not None for p in picks.values()) / len(picks)
    assert 0.2 < share < 0.3
    assert {p for p in picks.values() if p} == {"500", "drop"}
    other = Faults(kinds=("500", "drop"), rate=0.25, seed=12)
    assert picks != {(k, a): other.pick(k, a) for k in keys for a in (1, 2, 3)}
    with pytest.raises(ValueError):
        Faults(kinds=("teapot",))
    with pytest.raises(ValueError):
        Faults(first=1)


def test_status_and_malformed_faults_on_the_wire(server: FakeOpenAI, client: httpx.Client) -> None:
    server.configure(faults=Faults(kinds=("503", "malformed"), first=2, retry_after="1"))
    r = post(client, server, chat_body())
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["error"]["message"]
    r = post(client, server, chat_body())
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        r.json()
    assert post(client, server, chat_body()).status_code == 200


@pytest.mark.parametrize("chunked", [False, True])
def test_drop_closes_mid_body(server: FakeOpenAI, client: httpx.Client, chunked: bool) -> None:
    server.configure(faults=Faults(kinds=("drop",), first=1), chunked=chunked)
    with pytest.raises(httpx.RemoteProtocolError, match=r"complete message body"):
        post(client, server, chat_body())
    assert post(client, server, chat_body()).status_code == 200
    assert server.stats()["outcomes"] == {"drop": 1, "ok": 1}


def test_disconnect_sends_nothing(server: FakeOpenAI, client: httpx.Client) -> None:
    server.configure(faults=Faults(kinds=("disconnect",), first=1))
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        post(client, server, chat_body())
    assert post(client, server, chat_body()).status_code == 200


def test_reset_sends_a_tcp_reset(server: FakeOpenAI) -> None:
    server.configure(faults=Faults(kinds=("reset",), first=1))
    payload = json.dumps(chat_body()).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
            % (len(payload), payload)
        )
        with pytest.raises(ConnectionResetError):
            while sock.recv(65536):
                pass


def test_timeout_hangs_until_the_client_gives_up(server: FakeOpenAI, client: httpx.Client) -> None:
    server.configure(faults=Faults(kinds=("timeout",), first=1, hang=30))
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.post(server.base_url + "/chat/completions", json=chat_body(), timeout=0.3)
    deadline = time.monotonic() + 5
    while server.stats()["requests"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    entry = server.log[0]
    # the server let go when the client hung up, not after its 30 s hang
    assert entry.outcome == "timeout" and entry.finished - entry.started < 25
    assert time.monotonic() - started < 25
    assert server.stats()["in_flight"] == 0
    assert post(client, server, chat_body()).status_code == 200


def test_chunked_replies_parse_in_h11_and_aiohttp(server: FakeOpenAI, client: httpx.Client) -> None:
    server.configure(chunked=True)
    r = post(client, server, chat_body("[[answer: chunky]]"))
    assert r.headers["transfer-encoding"] == "chunked" and "content-length" not in r.headers
    assert r.json()["choices"][0]["message"]["content"] == "chunky"

    async def with_aiohttp() -> dict[str, Any]:
        import aiohttp

        async with (
            aiohttp.ClientSession() as session,
            session.post(server.base_url + "/chat/completions", json=chat_body()) as resp,
        ):
            data: dict[str, Any] = await resp.json()
            return data

    assert asyncio.run(with_aiohttp())["choices"][0]["message"]["content"] == "ok"


def test_chunked_request_body_is_decoded(server: FakeOpenAI, client: httpx.Client) -> None:
    payload = json.dumps(chat_body("[[answer: streamed]]")).encode()
    pieces = iter([payload[:10], payload[10:]])
    r = client.post(server.base_url + "/chat/completions", content=pieces)
    assert r.request.headers["transfer-encoding"] == "chunked"
    assert r.json()["choices"][0]["message"]["content"] == "streamed"


def test_keep_alive_switch(server: FakeOpenAI, client: httpx.Client) -> None:
    for _ in range(3):
        assert post(client, server, chat_body()).headers["connection"] == "keep-alive"
    assert server.stats()["connections"] == 1
    server.configure(keep_alive=False)
    for _ in range(3):
        assert post(client, server, chat_body()).headers["connection"] == "close"
    # the first "close" reply still rides the kept-alive connection; each later one needs a new one
    assert server.stats()["connections"] == 3


def test_idle_keep_alive_connections_are_closed(server: FakeOpenAI) -> None:
    server.configure(idle_timeout=0.1)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        time.sleep(0.3)
        assert sock.recv(10) == b""


async def test_runs_in_the_running_loop_and_counts_in_flight() -> None:
    async with FakeOpenAI(latency=0.1) as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        replies = await asyncio.gather(
            *(client.post(url, json=chat_body(f"[[answer: {i}]]")) for i in range(8))
        )
        assert [r.json()["choices"][0]["message"]["content"] for r in replies] == [
            str(i) for i in range(8)
        ]
        stats = server.stats()
        assert stats["max_in_flight"] == 8 and stats["in_flight"] == 0
        assert all(e.finished - e.started >= 0.1 for e in server.log)
        server.reset()
        assert server.stats()["requests"] == 0


def test_separate_process_is_configured_over_http() -> None:
    options = {"faults": Faults(kinds=("500",), first=1), "served_model": "proc", "answer": "yes"}
    with FakeOpenAIProcess(**options) as proc:
        url = proc.base_url + "/chat/completions"
        assert httpx.post(url, json=chat_body()).status_code == 500
        r = httpx.post(url, json=chat_body())
        assert r.status_code == 200 and r.json()["model"] == "proc"
        assert r.json()["choices"][0]["message"]["content"] == "yes"
        stats = proc.stats()
        assert stats["requests"] == 2 and stats["outcomes"] == {"500": 1, "ok": 1}
        config = proc.configure(latency=0.05, faults=Faults(kinds=("429",), first=1), answer="no")
        assert config["latency"] == 0.05 and config["faults"]["kinds"] == ["429"]
        proc.reset()
        started = time.monotonic()
        assert httpx.post(url, json=chat_body("new")).status_code == 429
        assert time.monotonic() - started >= 0.05
        r = httpx.post(url, json=chat_body("new"))
        assert r.json()["choices"][0]["message"]["content"] == "no"
        assert proc.stats()["requests"] == 2
        pid = proc.process.pid if proc.process else None
    assert pid is not None and proc.process is None


def test_public_api() -> None:
    import harness.testing as testing
    import harness.testing.fake_openai as module

    assert testing.__all__ == module.__all__
    assert all(getattr(testing, name) is getattr(module, name) for name in testing.__all__)
    with pytest.raises(AttributeError):
        _ = testing.nothing_here
