"""A lean stand-in for a remote model server, for benchmarks that measure the client.

It answers ``POST /v1/chat/completions`` after a fixed latency with the same reply as
:mod:`harness.testing.fake_openai` with ``answer=TEXT`` (a tool call, JSON content or text, as
the request asks; built by that module's ``_package``), and ``GET /health`` and
``GET /v1/models``; nothing else (no faults, no request log, no chunked request bodies).

Why a second server: a benchmark of the runner at 256 requests in flight on two cores shares
those cores with its stand-in. The full fake server spends 0.2–0.44 ms of CPU a request (asyncio
streams, a hash of the sorted JSON of every request for its fault schedule, a request log), as
much as the runner it serves; a real model server costs the runner's machine nothing. This one
is an ``asyncio.Protocol`` that parses the request's JSON once, keeps the reply for each
distinct answer spec (its tools, tool choice, response format and token limit) and sends it
from a timer: about 0.1 ms a request, most of it the system's TCP work and the event loop (on
uvloop when it is installed). The benchmark prints its CPU a request.

    python bench/lean_peer.py --latency 0.05 --answer 60     # prints "listening on URL"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import sys
from typing import Any

from harness.testing import ChildServer
from harness.testing.fake_openai import _package

_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:", re.IGNORECASE)
_CLOSE = re.compile(rb"\r\nconnection:[ \t]*close", re.IGNORECASE)
_MAX_HEAD = 65536


def _response(status: str, body: bytes, *, close: bool = False) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    ).encode("ascii") + body


class Replies:
    """The reply to a chat request: ``answer`` packaged as the request asks, built once per
    distinct (tools, tool choice, response format, token limit) and reused with a new id."""

    def __init__(self, answer: str, model: str = "lean-peer") -> None:
        self.answer = answer
        self.model = model
        self.serial = 0
        self._made: dict[str, tuple[bytes, bytes]] = {}

    def __call__(self, raw: bytes) -> bytes:
        body = json.loads(raw)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise ValueError("expected a JSON object with a list of messages")
        spec = {
            k: body.get(k)
            for k in ("tools", "tool_choice", "response_format", "max_tokens")
            if k in body
        }
        key = json.dumps(spec, sort_keys=True)
        made = self._made.get(key)
        if made is None:
            message, finish = _package(self.answer, spec | {"messages": []})
            tail = json.dumps(
                {
                    "object": "chat.completion",
                    "model": self.model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
                separators=(",", ":"),
            ).encode()
            made = self._made[key] = (b'{"id":"chatcmpl-lean-', b'",' + tail[1:])
        self.serial += 1
        head, tail = made
        return head + str(self.serial).encode() + tail


class _Connection(asyncio.Protocol):
    def __init__(self, latency: float, replies: Replies) -> None:
        self.latency = latency
        self.replies = replies
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _MAX_HEAD:
                    too_long = _response("431 Request Header Fields Too Large", b"{}", close=True)
                    self._send(too_long, True)
                return
            head = self.buffer[: end + 2]
            if _CHUNKED.search(head):
                self._send(_response("501 Not Implemented", b"{}", close=True), True)
                return
            length = _LENGTH.search(head)
            size = int(length.group(1)) if length else 0
            if len(self.buffer) < end + 4 + size:
                return
            body = self.buffer[end + 4 : end + 4 + size]
            self.buffer = self.buffer[end + 4 + size :]
            self._handle(head, body, close=_CLOSE.search(head) is not None)

    def _handle(self, head: bytes, body: bytes, *, close: bool) -> None:
        line = head[: head.find(b"\r\n")].split(b" ")
        method, path = (line[0], line[1].split(b"?")[0]) if len(line) == 3 else (b"", b"")
        if method == b"POST" and path == b"/v1/chat/completions":
            try:
                reply = _response("200 OK", self.replies(body), close=close)
            except ValueError as exc:
                error = json.dumps({"error": {"message": f"bad request: {exc}"}}).encode()
                self._send(_response("400 Bad Request", error, close=close), close)
                return
            self.loop.call_later(self.latency, self._send, reply, close)
        elif method == b"GET" and path == b"/health":
            self._send(_response("200 OK", b'{"status":"ok"}', close=close), close)
        elif method == b"GET" and path == b"/v1/models":
            models = {"object": "list", "data": [{"id": self.replies.model, "object": "model"}]}
            self._send(_response("200 OK", json.dumps(models).encode(), close=close), close)
        else:
            missing = b'{"error":{"message":"no route"}}'
            self._send(_response("404 Not Found", missing, close=close), close)

    def _send(self, data: bytes, close: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(data)
        if close:
            self.transport.close()


def _event_loop_runner() -> tuple[str, Any]:
    try:
        import uvloop
    except ImportError:
        return "asyncio", asyncio.run
    return "uvloop", uvloop.run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per chat request")
    parser.add_argument("--answer", default="ok", help="the answer text of every reply")
    args = parser.parse_args(argv)
    loop_name, run = _event_loop_runner()

    async def serve() -> None:
        replies = Replies(args.answer)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _Connection(args.latency, replies), "127.0.0.1", args.port, backlog=1024
        )
        port = server.sockets[0].getsockname()[1]
        print(f"listening on http://127.0.0.1:{port}/v1 ({loop_name})", flush=True)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        server.close()

    run(serve())


class LeanPeerProcess(ChildServer):
    """:func:`main` in a child process; ``base_url``, ``process`` and ``loop`` (the event loop
    it runs on) once started."""

    def __init__(self, latency: float, answer: str) -> None:
        super().__init__()
        self.latency = latency
        self.answer = answer

    def command(self) -> list[str]:
        return [sys.executable, __file__, "--latency", str(self.latency), "--answer", self.answer]

    @property
    def loop(self) -> str:
        match = re.search(r"\((\w+)\)", self.banner)
        return match.group(1) if match else "?"


if __name__ == "__main__":
    main()
