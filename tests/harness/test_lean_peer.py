"""``bench/lean_peer.py``, the runner benchmark's stand-in for a model server: it must answer
what the full fake server answers (or the benchmark would time a different job), speak enough
HTTP/1.1 for the adapter (keep-alive, bodies split across reads, ``Connection: close``), and
refuse what it does not serve."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import games
from harness.adapters import ChatPolicy, OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent
from harness.testing.fake_openai import FakeConfig, FakeOpenAI, fixed_answer

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lean_peer.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lean_peer", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lean_peer = _module()


@pytest.fixture(scope="module")
def peer() -> Iterator[Any]:
    with lean_peer.LeanPeerProcess(latency=0.01, answer="60") as running:
        yield running


def _exchange(port: int, *chunks: bytes, reads: int = 1) -> list[bytes]:
    """Send ``chunks`` one by one on one connection; read ``reads`` responses (each whole, by
    its Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for chunk in chunks:
            sock.sendall(chunk)
        out, buffer = [], b""
        while len(out) < reads:
            while b"\r\n\r\n" not in buffer:
                data = sock.recv(65536)
                if not data:
                    return out
                buffer += data
            head, _, rest = buffer.partition(b"\r\n\r\n")
            size = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < size:
                rest += sock.recv(65536)
            out.append(head + b"\r\n\r\n" + rest[:size])
            buffer = rest[size:]
        return out


def _post(body: bytes, *, extra: bytes = b"") -> bytes:
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\n" % len(body)
        + extra
        + b"\r\n"
        + body
    )


REQUESTS: list[dict[str, Any]] = [
    {  # a tool to call, with an integer argument
        "messages": [{"role": "user", "content": "Pick."}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "submit_action",
                    "parameters": {
                        "type": "object",
                        "properties": {"action": {"type": "integer"}},
                        "required": ["action"],
                    },
                },
            }
        ],
    },
    {  # JSON content under a schema that also asks for a confidence
        "messages": [{"role": "user", "content": "Pick."}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "schema": {
                    "type": "object",
                    "properties": {"answer": {"type": "number"}, "confidence": {}},
                    "required": ["answer", "confidence"],
                }
            },
        },
    },
    {"messages": [{"role": "user", "content": "Say it."}]},  # plain text
]


@pytest.mark.parametrize("request_body", REQUESTS)
def test_it_answers_what_the_full_fake_server_answers(request_body: dict[str, Any]) -> None:
    reply = json.loads(lean_peer.Replies("60")(json.dumps(request_body).encode()))
    config = FakeConfig(answer=fixed_answer("60"))
    full = FakeOpenAI(config)._completion(request_body, config)
    assert reply["choices"] == full["choices"]
    assert reply["object"] == "chat.completion" and reply["id"].startswith("chatcmpl-")


def test_each_reply_has_its_own_id() -> None:
    replies = lean_peer.Replies("60")
    raw = json.dumps(REQUESTS[0]).encode()
    ids = {json.loads(replies(raw))["id"] for _ in range(3)}
    assert len(ids) == 3


def test_a_chat_agent_gets_its_answers_through_it(peer: Any) -> None:
    items = games.generate_items(5, 6, games=("11-20",), conditions=("recursive",))

    async def attempts() -> list[Any]:
        chat = OpenAIChat(peer.base_url, "bench", policy=ChatPolicy(concurrency=4))
        agent = ChatAgent("lean", OpenAIBackend(chat), spec={}, answer_mode="tools")
        try:
            return await asyncio.gather(*(agent.attempt(item) for item in items))
        finally:
            await agent.aclose()

    done = asyncio.run(attempts())
    assert [(a.error, a.answer) for a in done] == [(None, 60)] * len(items)


def test_keep_alive_split_bodies_and_close(peer: Any) -> None:
    body = json.dumps(REQUESTS[2]).encode()
    request = _post(body)
    # two requests on one connection, the first split mid-head and mid-body
    first, second = _exchange(
        peer.port, request[:20], request[20:-5], request[-5:] + request, reads=2
    )
    for response in (first, second):
        assert response.startswith(b"HTTP/1.1 200 OK\r\n")
        assert json.loads(response.split(b"\r\n\r\n", 1)[1])["choices"][0]["message"] == {
            "role": "assistant",
            "content": "60",
        }
    (closing,) = _exchange(peer.port, _post(body, extra=b"Connection: close\r\n"))
    assert b"\r\nConnection: close\r\n" in closing


def test_what_it_does_not_serve_is_refused(peer: Any) -> None:
    (missing,) = _exchange(peer.port, b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert missing.startswith(b"HTTP/1.1 404 ")
    (bad,) = _exchange(peer.port, _post(b'{"messages": "not a list"}'))
    assert bad.startswith(b"HTTP/1.1 400 ") and b"list of messages" in bad
    (chunked,) = _exchange(
        peer.port,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    assert chunked.startswith(b"HTTP/1.1 501 ")
    (health,) = _exchange(peer.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert health.endswith(b'{"status":"ok"}')
