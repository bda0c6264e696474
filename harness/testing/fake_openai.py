"""An OpenAI-compatible test server on 127.0.0.1 with switches for latency and faults.

It speaks HTTP/1.1 on raw asyncio streams, so that every fault can be placed byte-exactly: a 429
with ``Retry-After``, a 500 or 503, a hang longer than the client's timeout, a connection closed
half-way through the body (``drop``), closed before any response byte (``disconnect``) or reset
(``reset``, a TCP RST), and a 200 whose JSON body is cut short (``malformed``). Faults are
scheduled deterministically, never by arrival order:

* ``Faults(kinds=("429", "500"), first=2)`` fails the first two attempts of *each distinct
  request* (same JSON body, keys sorted) with a 429 and then a 500, and answers the third;
* ``Faults(kinds=("drop",), rate=0.1, seed=7)`` fails each attempt with probability 0.1, decided
  by a hash of (seed, request, attempt number), so the same run faults the same attempts however
  the requests interleave.

Replies come from an *answer function* (``dict`` request body → answer text, or a complete
assistant message as a ``dict``). The default, :func:`marker_answer`, answers the text found in a
``[[answer: …]]`` marker in the last user message, else ``"ok"``. A text answer is sent as a call of
the requested (or first) tool when the request has ``tools``, as a JSON object when it asks for a
``response_format`` of JSON (both typed and keyed as the tool's or format's schema asks, with a
confidence of 1 when it asks for one), and is cut to ``max_tokens`` words with
``finish_reason="length"``.

Every chat request is logged (:class:`LoggedRequest`) and counted (:meth:`FakeOpenAI.stats`), so a
test can assert attempts, faults, successes per request (no duplicates) and the most requests
ever in flight at once.

Three ways to run it:

* ``with FakeOpenAI(latency=0.05) as server:`` — on a background thread with its own event loop;
* ``async with FakeOpenAI() as server:`` — in the running event loop;
* ``with FakeOpenAIProcess(latency=0.05) as server:`` — in a child process
  (``python -m harness.testing.fake_openai --port 0 --latency 0.05``), for benchmarks, so the
  server does not share the client's CPU. It is reconfigured and read over HTTP
  (``POST /_fake/config``, ``GET /_fake/stats``, ``POST /_fake/reset``).

Besides ``/v1/chat/completions`` it serves ``/v1/models`` and ``/health``.
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Self

import httpx

from harness.model.local_model import die_with_parent
from mindledger.errors import UserError

__all__ = [
    "FAULT_KINDS",
    "Answer",
    "ChildServer",
    "FakeConfig",
    "FakeOpenAI",
    "FakeOpenAIProcess",
    "Faults",
    "LoggedRequest",
    "fixed_answer",
    "marker_answer",
    "request_key",
]

FAULT_KINDS = ("429", "500", "503", "timeout", "drop", "disconnect", "reset", "malformed")
"""Fault switches: HTTP 429/500/503, a hang, a connection closed mid-body, closed before any
response byte, reset (RST), and a 200 with a truncated JSON body."""

Answer = Callable[[dict[str, Any]], "str | dict[str, Any]"]
"""Request body → answer text, or a complete assistant message."""

MAX_BODY = 16 * 1024 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_MARKER = re.compile(r"\[\[answer:(.*?)\]\]", re.DOTALL)


def marker_answer(body: dict[str, Any]) -> str:
    """The text inside ``[[answer: …]]`` in the last user message that has one, else ``"ok"``."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            match = _MARKER.search(_text_of(message.get("content")))
            if match:
                return match.group(1).strip()
    return "ok"


def fixed_answer(text: str) -> Answer:
    """An answer function that always answers ``text``."""

    def answer(body: dict[str, Any]) -> str:
        return text

    return answer


def request_key(body: Mapping[str, Any]) -> str:
    """Identity of a distinct request: a hash of its JSON body with sorted keys."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Faults:
    """Which faults to inject, and when (deterministically)."""

    kinds: tuple[str, ...] = ()
    """Fault kinds to draw from (see FAULT_KINDS); attempt i of the first ``first`` gets
    ``kinds[(i - 1) % len(kinds)]``."""
    first: int = 0
    """Fail the first N attempts of each distinct request."""
    rate: float = 0.0
    """After those, fail each attempt with this probability (seeded hash, order-independent)."""
    seed: int = 0
    """Seed of the probabilistic faults."""
    retry_after: str | None = "1"
    """Value of the ``Retry-After`` header on 429 and 503 (None: no header)."""
    hang: float = 300.0
    """How long a ``timeout`` fault holds the request (or until the client hangs up)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(self.kinds))
        unknown = [k for k in self.kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
        if self.first < 0 or not 0.0 <= self.rate <= 1.0:
            raise ValueError("first must be >= 0 and rate in [0, 1]")
        if (self.first or self.rate) and not self.kinds:
            raise ValueError("first/rate given but no fault kinds")

    def pick(self, key: str, attempt: int) -> str | None:
        """The fault for attempt number ``attempt`` (1-based) of request ``key``, or None."""
        if not self.kinds:
            return None
        if attempt <= self.first:
            return self.kinds[(attempt - 1) % len(self.kinds)]
        if self.rate > 0.0:
            digest = hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).digest()
            if int.from_bytes(digest[:8], "big") / 2.0**64 < self.rate:
                return self.kinds[digest[8] % len(self.kinds)]
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Faults:
        values: dict[str, Any] = {k: (tuple(v) if k == "kinds" else v) for k, v in data.items()}
        return cls(**values)


@dataclass(frozen=True)
class FakeConfig:
    """The server's switches. Change them while it runs with :meth:`FakeOpenAI.configure`."""

    latency: float = 0.0
    """Seconds every chat request waits before its reply (or fault)."""
    faults: Faults = field(default_factory=Faults)
    """Fault schedule."""
    chunked: bool = False
    """Send bodies with ``Transfer-Encoding: chunked`` (in three chunks) instead of a length."""
    keep_alive: bool = True
    """Keep connections open between requests (else ``Connection: close`` on every reply)."""
    idle_timeout: float | None = None
    """Close a keep-alive connection idle for this many seconds (None: never)."""
    served_model: str | None = None
    """Model name reported in replies (default: the requested one, else ``fake-model``)."""
    api_key: str | None = None
    """If set, /v1 routes require ``Authorization: Bearer <api_key>``."""
    answer: Answer = marker_answer
    """The answer function."""
    log_bodies: bool = True
    """Keep each request body in the log."""

    def public_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("answer", "api_key")}
        out["faults"]["kinds"] = list(self.faults.kinds)
        out["api_key"] = "***" if self.api_key else None
        return out


@dataclass(frozen=True)
class LoggedRequest:
    """One chat-completion request as the server saw it."""

    key: str
    """request_key of the body: equal for retries of the same request."""
    attempt: int
    """1 for the first time this key arrived, 2 for its first retry, …"""
    fault: str | None
    """The fault injected, or None."""
    outcome: str
    """``ok``, the fault's name, ``client_gone`` (hung up before the reply was written) or
    ``stopped`` (the server stopped first)."""
    started: float
    """time.monotonic() when the request was read."""
    finished: float
    """time.monotonic() when the reply was written (or the connection closed)."""
    body: dict[str, Any] | None
    """The parsed request body (None unless log_bodies)."""
    headers: dict[str, str] | None = None
    """The request headers, names in lower case, ``authorization`` left out (None unless
    log_bodies)."""


class _BadRequest(UserError):
    """A malformed HTTP request; answered 400."""


class FakeOpenAI:
    """The fake server. Use it as a context manager (thread) or async context manager (loop)."""

    def __init__(self, config: FakeConfig | None = None, /, **options: Any) -> None:
        self.config = config or FakeConfig()
        self.configure(**options)
        self.host = "127.0.0.1"
        self.port = 0
        self.log: list[LoggedRequest] = []
        self.connections = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._attempts: dict[str, int] = {}
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._serial = 0

    # -- control -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``"""
        return f"http://{self.host}:{self.port}/v1"

    def configure(self, **changes: Any) -> None:
        """Change switches (latency=…, faults=Faults(…) or a dict, chunked=…, answer=a function
        or a fixed text, …) while running."""
        if isinstance(changes.get("faults"), Mapping):
            changes["faults"] = Faults.from_dict(changes["faults"])
        if isinstance(changes.get("answer"), str):
            changes["answer"] = fixed_answer(changes["answer"])
        self.config = replace(self.config, **changes)

    def reset(self) -> None:
        """Forget the log, the counters and the attempt numbers."""
        self.log = []
        self._attempts = {}
        self.connections = 0
        self.max_in_flight = self._in_flight

    def stats(self) -> dict[str, Any]:
        """Counters: requests, outcomes, attempts, duplicates, in flight, connections."""
        log = list(self.log)
        ok_per_key = Counter(r.key for r in log if r.outcome == "ok")
        attempts = Counter(r.key for r in log)
        return {
            "requests": len(log),
            "distinct": len(attempts),
            "ok": sum(ok_per_key.values()),
            "outcomes": dict(Counter(r.outcome for r in log)),
            "max_attempts": max(attempts.values(), default=0),
            "duplicates": sum(n - 1 for n in ok_per_key.values() if n > 1),
            "in_flight": self._in_flight,
            "max_in_flight": self.max_in_flight,
            "connections": self.connections,
        }

    def attempts_of(self, key: str) -> list[LoggedRequest]:
        """The logged attempts of one distinct request, in arrival order."""
        return [r for r in list(self.log) if r.key == key]

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Listen on host:port (0: a free port) in the running loop; returns the port."""
        self.host = host
        self._server = await asyncio.start_server(self._serve_connection, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Stop listening and close every connection (hanging requests included)."""
        if self._server is not None:
            self._server.close()
        await asyncio.sleep(0)  # connections accepted just now start their tasks
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for _ in range(2):
            await asyncio.sleep(0)  # let the closed transports release their sockets

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __enter__(self) -> FakeOpenAI:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the caller below
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.stop())
                leftover = asyncio.all_tasks(loop)
                for task in leftover:
                    task.cancel()
                if leftover:
                    loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None
            self._loop = None

    # -- HTTP --------------------------------------------------------------------------------

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                idle = self.config.idle_timeout
                try:
                    async with asyncio.timeout(idle):
                        head = await reader.readuntil(b"\r\n\r\n")
                except TimeoutError:
                    return  # idle keep-alive connection: the server hangs up
                try:
                    method, target, version, headers = _parse_head(head)
                    body = await _read_body(reader, headers)
                except _BadRequest as exc:
                    await _respond(writer, 400, _error_body(str(exc)), keep=False, chunked=False)
                    return
                keep = (
                    self.config.keep_alive
                    and version == "HTTP/1.1"
                    and "close" not in headers.get("connection", "").lower()
                )
                keep = await self._route(method, target, headers, body, keep, reader, writer)
                if not keep:
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return
        except asyncio.CancelledError:
            # Only stop() cancels these tasks; ending quietly keeps asyncio.streams (3.11) from
            # logging the cancellation as an unhandled error.
            return
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        keep: bool,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        cfg = self.config
        path = target.split("?", 1)[0].rstrip("/")
        routes = {
            "/health": "GET",
            "/v1/models": "GET",
            "/v1/chat/completions": "POST",
            "/_fake/stats": "GET",
            "/_fake/config": "POST",
            "/_fake/reset": "POST",
        }
        if path not in routes:
            await _respond(writer, 404, _error_body(f"no route {path}"), keep, cfg.chunked)
            return keep
        if method != routes[path]:
            await _respond(writer, 405, _error_body(f"use {routes[path]}"), keep, cfg.chunked)
            return keep
        authorized = headers.get("authorization") == f"Bearer {cfg.api_key}"
        if path.startswith("/v1/") and cfg.api_key is not None and not authorized:
            denied = _error_body("Incorrect API key provided", code="invalid_api_key")
            await _respond(writer, 401, denied, keep, cfg.chunked)
            return keep
        if path == "/v1/chat/completions":
            return await self._chat(body, keep, reader, writer, headers)
        payload: Any
        if path == "/health":
            payload = {"status": "ok"}
        elif path == "/v1/models":
            model = cfg.served_model or "fake-model"
            payload = {
                "object": "list",
                "data": [{"id": model, "object": "model", "owned_by": "mindledger-fake"}],
            }
        elif path == "/_fake/stats":
            payload = self.stats()
        elif path == "/_fake/reset":
            self.reset()
            payload = {"reset": True}
        else:  # /_fake/config
            try:
                changes = json.loads(body or b"{}")
                self.configure(**changes)
            except (ValueError, TypeError) as exc:
                await _respond(writer, 400, _error_body(str(exc)), keep, cfg.chunked)
                return keep
            payload = self.config.public_dict()
        await _respond(writer, 200, _dumps(payload), keep, cfg.chunked)
        return keep

    async def _chat(
        self,
        raw: bytes,
        keep: bool,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        headers: dict[str, str] | None = None,
    ) -> bool:
        cfg = self.config
        started = time.monotonic()
        body: dict[str, Any]
        try:
            body = json.loads(raw)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("expected a JSON object with a list of messages")
        except ValueError as exc:
            await _respond(writer, 400, _error_body(f"bad request: {exc}"), keep, cfg.chunked)
            return keep
        key = request_key(body)
        attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
        fault = cfg.faults.pick(key, attempt)
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        recorded = False

        def record(outcome: str) -> None:
            # Called just before the last byte goes out (or the connection closes), so that a
            # client that has seen the reply also sees it counted.
            nonlocal recorded
            if recorded:
                return
            recorded = True
            self._in_flight -= 1
            self.log.append(
                LoggedRequest(
                    key=key,
                    attempt=attempt,
                    fault=fault,
                    outcome=outcome,
                    started=started,
                    finished=time.monotonic(),
                    body=body if cfg.log_bodies else None,
                    headers=(
                        {k: v for k, v in headers.items() if k != "authorization"}
                        if cfg.log_bodies and headers is not None
                        else None
                    ),
                )
            )

        try:
            if cfg.latency > 0:
                await asyncio.sleep(cfg.latency)
            if fault is None:
                self._serial += 1
                payload = _dumps(self._completion(body, cfg))
                record("ok")
                await _respond(writer, 200, payload, keep, cfg.chunked)
                return keep
            if fault in ("429", "500", "503"):
                status = int(fault)
                extra = []
                if status != 500 and cfg.faults.retry_after is not None:
                    extra.append(("Retry-After", cfg.faults.retry_after))
                message = {429: "Rate limit reached", 500: "internal error"}.get(
                    status, "overloaded"
                )
                record(fault)
                await _respond(writer, status, _error_body(message), keep, cfg.chunked, extra)
                return keep
            if fault == "malformed":
                payload = (
                    b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind'
                )
                record(fault)
                await _respond(writer, 200, payload, keep, cfg.chunked)
                return keep
            if fault == "drop":
                payload = _dumps(self._completion(body, cfg))
                head = _head(200, len(payload), keep=True, chunked=cfg.chunked)
                partial = payload[: len(payload) // 2]
                if cfg.chunked:
                    partial = b"%x\r\n%s\r\n" % (len(partial), partial)
                writer.write(head + partial)
                await writer.drain()
                record(fault)
                writer.close()
                return False
            if fault == "disconnect":
                record(fault)
                writer.close()
                return False
            if fault == "reset":
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                record(fault)
                writer.transport.abort()
                return False
            # "timeout": hold the request until the client hangs up or `hang` passes.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(cfg.faults.hang):
                    while await reader.read(65536):
                        pass
            record(fault)
            writer.close()
            return False
        except ConnectionError:
            record("client_gone")
            return False
        finally:
            record("stopped")

    def _completion(self, body: dict[str, Any], cfg: FakeConfig) -> dict[str, Any]:
        reply = cfg.answer(body)
        if isinstance(reply, dict):
            message = reply
            finish = "tool_calls" if reply.get("tool_calls") else "stop"
        else:
            message, finish = _package(str(reply), body)
        out_text = message.get("content") or json.dumps(message.get("tool_calls") or "")
        completion_tokens = max(1, len(str(out_text).split()))
        prompt_tokens = sum(
            3 + len(_text_of(m.get("content")).split())
            for m in body["messages"]
            if isinstance(m, dict)
        )
        return {
            "id": f"chatcmpl-fake-{self._serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": cfg.served_model or body.get("model") or "fake-model",
            "system_fingerprint": "fp_mindledger_fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _package(text: str, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Wrap an answer text as a tool call, JSON content or plain content, as the request asks."""
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if tools and choice != "none":
        if isinstance(choice, dict):
            name = choice.get("function", {}).get("name", "submit_answer")
        else:
            name = (tools[0].get("function") or {}).get("name", "submit_answer")
        spec = next((t.get("function") or {} for t in tools
                     if (t.get("function") or {}).get("name") == name), {})
        arguments = _answer_object(text, spec.get("parameters"))
        call_id = "call_" + hashlib.sha256(arguments.encode()).hexdigest()[:12]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        return message, "tool_calls"
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        text = _answer_object(text, (fmt.get("json_schema") or {}).get("schema"))
    finish = "stop"
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    words = text.split()
    if isinstance(limit, int) and 0 < limit < len(words):
        text = " ".join(words[:limit])
        finish = "length"
    return {"role": "assistant", "content": text}, finish


def _answer_object(text: str, schema: Any) -> str:
    """``text`` as a model that follows ``schema`` (a tool's parameters, a response format's
    schema) would send it: the text itself when it is a JSON object; else the text under the
    schema's first required key other than ``confidence`` (``answer`` when it names none), a
    number where that key's type is ``integer`` or ``number`` and the text is one, and
    ``confidence`` 1 when the schema requires it."""
    if _is_json_object(text):
        return text
    schema = schema if isinstance(schema, dict) else {}
    required = [k for k in schema.get("required") or () if isinstance(k, str)]
    key = next((k for k in required if k != "confidence"), "answer")
    value: Any = text
    kind = ((schema.get("properties") or {}).get(key) or {}).get("type")
    if kind in ("integer", "number"):
        with contextlib.suppress(ValueError):
            value = int(text) if kind == "integer" else float(text)
    args: dict[str, Any] = {key: value}
    if "confidence" in required:
        args["confidence"] = 1.0
    return json.dumps(args)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def _error_body(message: str, *, code: str | None = None) -> bytes:
    return _dumps({"error": {"message": message, "type": "fake_error", "code": code}})


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"bad request line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(f"bad header line {line[:80]!r}")
        name = name.lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return parts[0], parts[1], parts[2], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        total = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _BadRequest("bad chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise _BadRequest("body too large")
            data = await reader.readexactly(size + 2)
            if data[-2:] != b"\r\n":
                raise _BadRequest("bad chunk terminator")
            chunks.append(data[:-2])
    length = headers.get("content-length")
    if length is None:
        return b""
    if not length.isdigit() or int(length) > MAX_BODY:
        raise _BadRequest(f"bad content-length {length!r}")
    return await reader.readexactly(int(length))


def _head(
    status: int,
    length: int,
    *,
    keep: bool,
    chunked: bool,
    extra: list[tuple[str, str]] | None = None,
) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        "Content-Type: application/json",
        "Server: mindledger-fake",
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}",
        "Connection: keep-alive" if keep else "Connection: close",
    ]
    lines += [f"{k}: {v}" for k, v in extra or ()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _respond(
    writer: asyncio.StreamWriter,
    status: int,
    payload: bytes,
    keep: bool,
    chunked: bool,
    extra: list[tuple[str, str]] | None = None,
) -> None:
    head = _head(status, len(payload), keep=keep, chunked=chunked, extra=extra)
    if chunked:
        third = max(1, len(payload) // 3)
        pieces = [payload[i : i + third] for i in range(0, len(payload), third)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    else:
        body = payload
    writer.write(head + body)
    await writer.drain()


# -- separate process ------------------------------------------------------------------------


class ChildServer(abc.ABC):
    """A test server in a child process, started by :meth:`command` (which must print
    ``listening on http://127.0.0.1:PORT…`` as its first line, kept as ``banner``, and serve
    ``GET /health``); ``start`` waits until it answers. The child dies with its parent on
    Linux."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.banner = ""

    @abc.abstractmethod
    def command(self) -> list[str]:
        """The child's command line."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 20.0) -> None:
        self.process = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        assert self.process.stdout is not None
        self.banner = line = self.process.stdout.readline().decode()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"{type(self).__name__} did not start: {line!r}")
        self.port = int(match.group(1))
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeOpenAIProcess(ChildServer):
    """The fake server in a child process (``python -m harness.testing.fake_openai``).

    Takes the options of :class:`FakeConfig` that can be given on a command line (latency,
    faults, chunked, keep_alive, idle_timeout, served_model, log_bodies, and ``answer`` as a fixed
    text); ``configure``, ``stats`` and ``reset`` work over HTTP.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "harness.testing.fake_openai", "--port", "0"]
        return cmd + _options_to_argv(self.options)

    def configure(self, **changes: Any) -> dict[str, Any]:
        if isinstance(changes.get("faults"), Faults):
            faults = changes["faults"]
            changes["faults"] = {**asdict(faults), "kinds": list(faults.kinds)}
        r = httpx.post(f"http://127.0.0.1:{self.port}/_fake/config", json=changes, timeout=5)
        r.raise_for_status()
        result: dict[str, Any] = r.json()
        return result

    def stats(self) -> dict[str, Any]:
        r = httpx.get(f"http://127.0.0.1:{self.port}/_fake/stats", timeout=5)
        r.raise_for_status()
        result: dict[str, Any] = r.json()
        return result

    def reset(self) -> None:
        httpx.post(f"http://127.0.0.1:{self.port}/_fake/reset", timeout=5).raise_for_status()



def _options_to_argv(options: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    for name, value in options.items():
        if name == "faults":
            faults = value if isinstance(value, Faults) else Faults.from_dict(value)
            if faults.kinds:
                argv += ["--faults", ",".join(faults.kinds)]
            argv += ["--first", str(faults.first), "--rate", str(faults.rate)]
            argv += ["--seed", str(faults.seed), "--hang", str(faults.hang)]
            if faults.retry_after is None:
                argv += ["--no-retry-after"]
            else:
                argv += ["--retry-after", faults.retry_after]
        elif name == "latency":
            argv += ["--latency", str(value)]
        elif name == "chunked":
            argv += ["--chunked"] if value else []
        elif name == "keep_alive":
            argv += [] if value else ["--no-keep-alive"]
        elif name == "idle_timeout":
            argv += [] if value is None else ["--idle-timeout", str(value)]
        elif name == "served_model":
            argv += ["--model", str(value)]
        elif name == "log_bodies":
            argv += [] if value else ["--no-log-bodies"]
        elif name == "answer" and isinstance(value, str):
            argv += ["--answer", value]
        else:
            raise ValueError(f"option {name!r} cannot be passed to a separate process")
    return argv


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m harness.testing.fake_openai",
        description="OpenAI-compatible fault-injecting test server on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat request")
    parser.add_argument("--faults", default="", help=f"comma list of {','.join(FAULT_KINDS)}")
    parser.add_argument("--first", type=int, default=0, help="fail the first N attempts")
    parser.add_argument("--rate", type=float, default=0.0, help="then fail with this probability")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after", default="1")
    parser.add_argument("--no-retry-after", action="store_true")
    parser.add_argument("--hang", type=float, default=300.0)
    parser.add_argument("--chunked", action="store_true")
    parser.add_argument("--no-keep-alive", action="store_true")
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("--model", default=None, help="served model name")
    parser.add_argument("--api-key-env", default=None, help="require the key in this variable")
    parser.add_argument("--no-log-bodies", action="store_true")
    parser.add_argument("--answer", default=None, help="always answer this text (default: marker)")
    args = parser.parse_args(argv)
    faults = Faults(
        kinds=tuple(k for k in args.faults.split(",") if k),
        first=args.first,
        rate=args.rate,
        seed=args.seed,
        retry_after=None if args.no_retry_after else args.retry_after,
        hang=args.hang,
    )
    config = FakeConfig(
        latency=args.latency,
        faults=faults,
        chunked=args.chunked,
        keep_alive=not args.no_keep_alive,
        idle_timeout=args.idle_timeout,
        served_model=args.model,
        api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
        log_bodies=not args.no_log_bodies,
        answer=marker_answer if args.answer is None else fixed_answer(args.answer),
    )

    async def serve() -> None:
        server = FakeOpenAI(config)
        await server.start(args.port)
        print(f"listening on {server.base_url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
