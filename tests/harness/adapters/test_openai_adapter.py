"""The openai adapter: request building and reply parsing, Retry-After, backoff bounds and error
kinds with httpx.MockTransport and a fake sleep; then every fault against the real fake server on
127.0.0.1 (retries then success, retries exhausted, attempts counted on both sides), the
concurrency and rate limits as the server sees them, and nothing lost or duplicated."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pytest

from harness.adapters import (
    ChatError,
    ChatPolicy,
    ChatResult,
    OpenAIChat,
    RateLimiter,
    make_transport,
    parse_retry_after,
)
from harness.testing import FAULT_KINDS, FakeOpenAI, Faults, request_key
from mindledger.errors import AgentError

USER = [{"role": "user", "content": "Where is the ball? [[answer: basket]]"}]
REPLY = {
    "id": "chatcmpl-1",
    "model": "served-model-2026",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "basket"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


class Sleeps:
    """A fake sleep that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def client(base_url: str, model: str | None, **kw: Any) -> OpenAIChat:
    """An adapter whose :class:`ChatPolicy` fields (``max_retries=0``, …) are given in ``kw``
    beside its own arguments."""
    named = {f.name for f in fields(ChatPolicy)}
    policy = ChatPolicy(**{k: kw.pop(k) for k in list(kw) if k in named})
    return OpenAIChat(base_url, model, policy=policy, **kw)


def mock(
    handler: Callable[[httpx.Request], Any], **kw: Any
) -> tuple[OpenAIChat, list[httpx.Request], Sleeps]:
    """An adapter over MockTransport(handler), recording requests and sleeps."""
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> Any:
        seen.append(request)
        return handler(request)

    sleeps = Sleeps()
    kw.setdefault("rng", np.random.default_rng(0))
    chat = client(
        kw.pop("base_url", "http://endpoint.test/v1"),
        kw.pop("model", "m"),
        transport=httpx.MockTransport(record),
        sleep=sleeps,
        **kw,
    )
    return chat, seen, sleeps


Reply = httpx.Response | Exception | Callable[[], httpx.Response]


def script(*replies: Reply) -> Callable[[httpx.Request], httpx.Response]:
    """A handler giving the replies in order (an exception is raised, a callable called), then
    the last one forever."""
    queue = list(replies)

    def handler(request: httpx.Request) -> httpx.Response:
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Exception):
            raise reply
        return reply if isinstance(reply, httpx.Response) else reply()

    return handler


GZIP = {"content-encoding": "gzip"}


class NotGzip(httpx.AsyncByteStream):
    """A body that claims to be gzip and is not (read lazily, so httpx fails on reading)."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"plain text"


def ok() -> httpx.Response:
    return httpx.Response(200, json=REPLY)


# -- MockTransport: building and parsing -----------------------------------------------------


async def test_request_body_headers_and_url() -> None:
    chat, seen, _ = mock(script(ok()), api_key="sk-secret")
    tools = [{"type": "function", "function": {"name": "submit_answer", "parameters": {}}}]
    await chat.chat(
        USER,
        tools=tools,
        tool_choice="required",
        response_format={"type": "json_object"},
        temperature=0.7,
        max_tokens=64,
        seed=5,
        extra={"top_p": 0.5, "max_tokens": 32},
    )
    request = seen[0]
    assert request.method == "POST"
    assert str(request.url) == "http://endpoint.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-secret"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {
        "model": "m",
        "messages": USER,
        "temperature": 0.7,
        "max_tokens": 32,  # extra wins
        "tools": tools,
        "tool_choice": "required",
        "response_format": {"type": "json_object"},
        "seed": 5,
        "top_p": 0.5,
    }
    await chat.aclose()


async def test_minimal_request_and_bare_base_url() -> None:
    chat, seen, _ = mock(script(ok()), base_url="http://endpoint.test:8000", model=None)
    await chat.chat(USER, tool_choice="auto")
    assert str(seen[0].url) == "http://endpoint.test:8000/v1/chat/completions"
    assert "authorization" not in seen[0].headers
    assert json.loads(seen[0].content) == {"messages": USER, "temperature": 0.0, "max_tokens": 512}


async def test_result_fields() -> None:
    chat, _, sleeps = mock(script(ok()))
    async with chat:
        result = await chat.chat(USER)
    assert isinstance(result, ChatResult)
    assert result.message == {"role": "assistant", "content": "basket"}
    assert result.finish_reason == "stop"
    assert result.model == "served-model-2026"
    assert (result.tokens_in, result.tokens_out) == (12, 3)
    assert result.attempts == 1 and 0 <= result.latency_s < 5
    assert result.raw == REPLY and sleeps.delays == []


async def test_missing_usage_and_model_are_zero_and_none() -> None:
    bare = {"choices": [{"message": {"role": "assistant", "content": "x"}}]}
    chat, _, _ = mock(script(httpx.Response(200, json=bare)))
    result = await chat.chat(USER)
    assert (result.tokens_in, result.tokens_out, result.model, result.finish_reason) == (
        0,
        0,
        None,
        None,
    )


# -- Retry-After and backoff -----------------------------------------------------------------


def test_parse_retry_after() -> None:
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    date = email.utils.format_datetime(now + timedelta(seconds=30), usegmt=True)
    past = email.utils.format_datetime(now - timedelta(seconds=30), usegmt=True)
    cases = {
        "7": 7.0,
        "1.5": 1.5,
        "-3": 0.0,
        date: 30.0,
        past: 0.0,
        "soon": None,
        "": None,
        "nan": None,
    }
    for value, expected in cases.items():
        assert parse_retry_after(httpx.Headers({"retry-after": value}), now) == expected, value
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert parse_retry_after(httpx.Headers()) is None


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_is_honoured(status: int) -> None:
    busy = httpx.Response(status, headers={"Retry-After": "7"}, json={"error": "busy"})
    chat, seen, sleeps = mock(script(busy, ok()), backoff_base=0.1)
    result = await chat.chat(USER)
    assert result.attempts == 2 and len(seen) == 2
    assert sleeps.delays == [7.0]


async def test_retry_after_http_date_is_honoured() -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    busy = httpx.Response(429, headers={"Retry-After": when})
    chat, _, sleeps = mock(script(busy, ok()), backoff_base=0.1)
    await chat.chat(USER)
    assert 18.0 <= sleeps.delays[0] <= 20.0


async def test_retry_after_is_capped() -> None:
    busy = httpx.Response(429, headers={"Retry-After": "86400"})
    chat, _, sleeps = mock(script(busy, ok()))
    await chat.chat(USER)
    assert sleeps.delays == [120.0]


async def test_backoff_is_full_jitter_under_an_exponential_ceiling() -> None:
    failing = httpx.Response(500, json={"error": {"message": "boom"}})
    runs = []
    for _ in range(2):
        chat, seen, sleeps = mock(
            script(failing),
            max_retries=8,
            backoff_base=0.5,
            backoff_max=4.0,
            rng=np.random.default_rng(42),
        )
        with pytest.raises(ChatError):
            await chat.chat(USER)
        assert len(seen) == 9
        runs.append(sleeps.delays)
    delays = runs[0]
    assert runs[0] == runs[1]  # seeded: reproducible
    ceilings = [min(4.0, 0.5 * 2**i) for i in range(8)]
    assert len(delays) == 8
    assert all(0.0 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    assert len(set(delays)) == 8 and max(delays) > 1.0  # jittered, and the ceiling grows


def test_retry_delay_statistics() -> None:
    chat = client("http://x.test/v1", "m", rng=np.random.default_rng(1), backoff_base=1.0)
    draws = np.array([chat.retry_delay(3) for _ in range(4000)])
    assert draws.min() >= 0 and draws.max() <= 4.0
    assert abs(draws.mean() - 2.0) < 0.1  # uniform on [0, 4]
    assert chat.retry_delay(3, retry_after=9.0) == 9.0
    assert chat.retry_delay(1000) <= 30.0  # no overflow, capped at backoff_max


# -- error kinds -----------------------------------------------------------------------------


def status(code: int, **kw: Any) -> httpx.Response:
    return httpx.Response(code, **kw)


@pytest.mark.parametrize(
    "reply, kind, code, attempts",
    [
        (status(429, json={"error": {"message": "slow down"}}), "rate_limited", 429, 3),
        (status(500, text="<html>oops</html>"), "server_error", 500, 3),
        (status(502), "server_error", 502, 3),
        (status(503), "server_error", 503, 3),
        (status(408), "timeout", 408, 3),
        (status(409, json={"error": "conflict"}), "client_error", 409, 3),
        (status(400, json={"error": {"message": "bad tools"}}), "client_error", 400, 1),
        (status(404), "client_error", 404, 1),
        (status(422, json={"detail": "nope"}), "client_error", 422, 1),
        (status(200, content=b'{"choices": [{"mess'), "malformed", 200, 3),
        (status(200, content=b"\xff\xfe"), "malformed", 200, 3),
        (status(200, json={"choices": []}), "malformed", 200, 3),
        (status(200, json=[1, 2]), "malformed", 200, 3),
        (status(200, json={"error": {"message": "upstream failed"}}), "server_error", 200, 3),
        (lambda: httpx.Response(200, headers=GZIP, stream=NotGzip()), "malformed", None, 3),
        (httpx.ConnectError("refused"), "connection", None, 3),
        (httpx.RemoteProtocolError("Server disconnected"), "connection", None, 3),
        (httpx.ReadError("reset"), "connection", None, 3),
        (httpx.ReadTimeout("slow"), "timeout", None, 3),
        (httpx.ConnectTimeout("slow"), "timeout", None, 3),
        (httpx.UnsupportedProtocol("ftp"), "connection", None, 1),
    ],
)
async def test_error_kinds(reply: Reply, kind: str, code: int | None, attempts: int) -> None:
    chat, seen, sleeps = mock(script(reply), max_retries=2, backoff_base=0.01)
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    err = caught.value
    assert isinstance(err, AgentError)
    assert (err.kind, err.status, err.attempts) == (kind, code, attempts)
    assert len(seen) == attempts and len(sleeps.delays) == attempts - 1
    assert f"after {attempts} attempt" in str(err) and "endpoint.test" in str(err)


async def test_error_message_carries_the_server_message() -> None:
    reply = status(400, json={"error": {"message": "tool schema invalid"}})
    chat, _, _ = mock(script(reply))
    with pytest.raises(ChatError, match="HTTP 400 Bad Request: tool schema invalid"):
        await chat.chat(USER)


HTML_ERROR_PAGE = """<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
        <style>body { color: red }</style>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method (&#x27;POST&#x27;).</p>
    </body>
</html>
"""


async def test_an_html_error_page_is_said_on_one_line_and_a_501_is_not_asked_again() -> None:
    # a web server that is not an API (python -m http.server answers POST so)
    chat, seen, _ = mock(script(status(501, text=HTML_ERROR_PAGE)), max_retries=5)
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    err = caught.value
    assert (err.kind, err.status, err.attempts, len(seen)) == ("server_error", 501, 1, 1)
    message = str(err)
    assert "\n" not in message and "<" not in message and "color: red" not in message
    assert message.startswith(
        "HTTP 501 Not Implemented: an HTML page: Error response Error code: 501 "
        "Message: Unsupported method ('POST'). (is the agent's endpoint the base URL of an "
        "OpenAI-compatible API"
    )
    assert message.endswith("/chat/completions, failed after 1 attempt)")
    # a proxy's error page with a long style sheet in its head says its text all the same
    page = HTML_ERROR_PAGE.replace("color: red }", "color: red }" + " .x { margin: 0 }" * 2000)
    chat, _, _ = mock(script(status(502, text=page)), max_retries=0)
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    assert "HTTP 502 Bad Gateway: an HTML page: Error response Error code: 501" in str(caught.value)
    assert "margin" not in str(caught.value)


async def test_a_long_error_body_is_cut_and_a_404_asks_whether_the_endpoint_is_an_api() -> None:
    chat, seen, _ = mock(script(status(404, text="no such page\n" + "x" * 5000)), max_retries=5)
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    message = str(caught.value)
    assert len(seen) == 1
    assert "HTTP 404 Not Found: no such page " + "x" * 100 in message
    assert "x" * 200 not in message and "…" in message
    assert "is the agent's endpoint the base URL of an OpenAI-compatible API" in message


async def test_retries_then_success_counts_attempts() -> None:
    chat, seen, sleeps = mock(
        script(status(500), httpx.ReadError("reset"), status(429), ok()), max_retries=3
    )
    result = await chat.chat(USER)
    assert result.attempts == 4 and len(seen) == 4 and len(sleeps.delays) == 3


async def test_no_retries_when_max_retries_is_zero() -> None:
    chat, seen, _ = mock(script(status(500)), max_retries=0)
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    assert caught.value.attempts == 1 and len(seen) == 1


async def test_api_key_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    reply = status(401, json={"error": {"message": "Incorrect API key provided"}})
    chat, _, _ = mock(script(status(500), reply), api_key="sk-very-secret")
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    assert caught.value.kind == "client_error" and caught.value.status == 401
    assert "API key" in str(caught.value)
    shown = [str(caught.value), repr(chat), caplog.text, repr(caught.value)]
    assert not any("sk-very-secret" in text for text in shown)
    assert "retry 1/5" in caplog.text


async def test_credentials_in_the_url_are_not_shown() -> None:
    chat, seen, _ = mock(script(status(500)), base_url="http://user:pw@endpoint.test/v1?key=k1")
    with pytest.raises(ChatError) as caught:
        await chat.chat(USER)
    assert seen[0].url.password == "pw" and seen[0].url.params["key"] == "k1"
    for text in (str(caught.value), caught.value.url, repr(chat)):
        assert "pw" not in text and "k1" not in text and "endpoint.test/v1" in text


async def test_total_timeout_per_attempt() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        return ok()

    chat, _, _ = mock(hang, timeout=0.05, max_retries=1)
    with pytest.raises(ChatError) as caught:
        await asyncio.wait_for(chat.chat(USER), 5)
    assert caught.value.kind == "timeout" and caught.value.attempts == 2


async def test_concurrency_limit_with_mock_transport() -> None:
    in_flight = peak = 0

    async def slow(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return ok()

    chat, seen, _ = mock(slow, concurrency=3)
    await asyncio.gather(*(chat.chat(USER) for _ in range(20)))
    assert peak == 3 and len(seen) == 20


async def test_rate_limiter_spaces_requests() -> None:
    clock = [100.0]
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    limiter = RateLimiter(4.0, clock=lambda: clock[0], sleep=sleep)
    for _ in range(4):
        await limiter.acquire()
    assert slept == pytest.approx([0.25, 0.5, 0.75])
    clock[0] += 10.0  # idle: no debt carried over
    slept.clear()
    await limiter.acquire()
    assert slept == []

    bursty = RateLimiter(4.0, burst=3, clock=lambda: clock[0], sleep=sleep)
    for _ in range(4):
        await bursty.acquire()
    assert slept == pytest.approx([0.25])
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_bad_arguments() -> None:
    for kw in ({"concurrency": 0}, {"timeout": 0}, {"max_retries": -1}, {"rate_limit": 0.0}):
        with pytest.raises(ValueError):
            OpenAIChat("http://x.test/v1", "m", policy=ChatPolicy(**kw))  # type: ignore[arg-type]


# -- against the real fake server ------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


def fault_timeout(fault: str) -> float:
    """The client's timeout for a fault test: short for the ``timeout`` fault (each attempt waits
    it out), generous for the others, which fail on their own. A client that times out before a
    loaded server has even read its request leaves an attempt the server never saw, and the
    server's count no longer matches the client's."""
    return 0.75 if fault == "timeout" else 10.0


def real(server: FakeOpenAI, **kw: Any) -> tuple[OpenAIChat, Sleeps]:
    sleeps = Sleeps()
    kw.setdefault("timeout", 0.5)
    kw.setdefault("rng", np.random.default_rng(7))
    return client(server.base_url, "m", sleep=sleeps, **kw), sleeps


async def settled(server: FakeOpenAI) -> dict[str, Any]:
    """The server's stats once it has seen every connection the client closed."""
    for _ in range(200):
        stats = server.stats()
        if stats["in_flight"] == 0:
            return stats
        await asyncio.sleep(0.01)
    raise AssertionError(f"requests still in flight at the server: {stats}")


KIND_OF_FAULT = {
    "429": ("rate_limited", 429),
    "500": ("server_error", 500),
    "503": ("server_error", 503),
    "timeout": ("timeout", None),
    "drop": ("connection", None),
    "disconnect": ("connection", None),
    "reset": ("connection", None),
    "malformed": ("malformed", 200),
}


@pytest.mark.parametrize("transport", ["fast", "aiohttp", "httpx"])
@pytest.mark.parametrize("fault", FAULT_KINDS)
async def test_each_fault_is_retried_then_succeeds(
    server: FakeOpenAI, fault: str, transport: str
) -> None:
    server.configure(faults=Faults(kinds=(fault,), first=2, retry_after="0", hang=5))
    chat, sleeps = real(server, timeout=fault_timeout(fault), transport=make_transport(transport))
    async with chat:
        result = await chat.chat(USER)
    assert result.message["content"] == "basket" and result.attempts == 3
    assert len(sleeps.delays) == 2
    await settled(server)
    log = sorted(server.attempts_of(request_key(server.log[0].body or {})), key=lambda e: e.attempt)
    assert [(e.attempt, e.outcome) for e in log] == [(1, fault), (2, fault), (3, "ok")]


@pytest.mark.parametrize("transport", ["fast", "aiohttp", "httpx"])
@pytest.mark.parametrize("fault", FAULT_KINDS)
async def test_each_fault_exhausts_retries_with_its_kind(
    server: FakeOpenAI, fault: str, transport: str
) -> None:
    server.configure(faults=Faults(kinds=(fault,), first=10, retry_after="0", hang=5))
    chat, _ = real(
        server, timeout=fault_timeout(fault), max_retries=2, transport=make_transport(transport)
    )
    async with chat:
        with pytest.raises(ChatError) as caught:
            await chat.chat(USER)
    kind, code = KIND_OF_FAULT[fault]
    assert (caught.value.kind, caught.value.status, caught.value.attempts) == (kind, code, 3)
    stats = await settled(server)
    assert stats["requests"] == 3 and stats["ok"] == 0 and stats["outcomes"] == {fault: 3}


async def test_retry_after_from_the_server(server: FakeOpenAI) -> None:
    server.configure(faults=Faults(kinds=("429", "503"), first=2, retry_after="3"))
    chat, sleeps = real(server, backoff_base=0.01)
    async with chat:
        result = await chat.chat(USER)
    assert result.attempts == 3 and sleeps.delays == [3.0, 3.0]


async def test_timeout_is_per_attempt_wall_time(server: FakeOpenAI) -> None:
    server.configure(faults=Faults(kinds=("timeout",), first=1, hang=30))
    chat, _ = real(server, timeout=1.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with chat:
        result = await chat.chat(USER)
    # the first attempt waited out its own timeout, far short of the server's 30 s hang
    assert result.attempts == 2 and 1.0 <= loop.time() - started < 25
    assert result.latency_s < loop.time() - started - 1.0 + 0.01  # the successful attempt only


async def test_concurrency_limit_seen_by_the_server(server: FakeOpenAI) -> None:
    server.configure(latency=0.05)
    chat, _ = real(server, concurrency=5)
    async with chat:
        results = await asyncio.gather(
            *(chat.chat([{"role": "user", "content": f"[[answer: {i}]]"}]) for i in range(30))
        )
    assert [r.message["content"] for r in results] == [str(i) for i in range(30)]
    assert server.stats()["max_in_flight"] == 5
    assert server.stats()["connections"] <= 5


async def test_rate_limit_seen_by_the_server(server: FakeOpenAI) -> None:
    chat = client(server.base_url, "m", concurrency=8, rate_limit=25.0)
    async with chat:
        await asyncio.gather(
            *(chat.chat([{"role": "user", "content": f"q{i}"}]) for i in range(10))
        )
    starts = sorted(e.started for e in server.log)
    assert len(starts) == 10
    for i, t in enumerate(starts):  # the i-th request no earlier than i / rate after the first
        assert t - starts[0] >= i / 25.0 - 0.01
    # no upper bound: how soon the requests go on a loaded machine is the scheduler's, not the
    # limiter's (an upper bound of 9/25 + 0.3 s failed under load); bench_http measures speed


async def test_api_key_reaches_the_server(server: FakeOpenAI) -> None:
    server.configure(api_key="sk-test")
    good, _ = real(server, api_key="sk-test")
    bad, _ = real(server, api_key="sk-wrong")
    async with good, bad:
        assert (await good.chat(USER)).message["content"] == "basket"
        with pytest.raises(ChatError) as caught:
            await bad.chat(USER)
    assert (caught.value.kind, caught.value.status, caught.value.attempts) == (
        "client_error",
        401,
        1,
    )


async def test_many_calls_under_random_faults_lose_and_duplicate_nothing(
    server: FakeOpenAI,
) -> None:
    kinds = tuple(k for k in FAULT_KINDS if k != "timeout")
    server.configure(faults=Faults(kinds=kinds, rate=0.3, seed=3, retry_after="0"))
    chat = OpenAIChat(
        server.base_url,
        "m",
        policy=ChatPolicy(concurrency=16, max_retries=12, backoff_base=0.001, backoff_max=0.01),
        rng=np.random.default_rng(5),
    )
    n = 200
    async with chat:
        results = await asyncio.gather(
            *(chat.chat([{"role": "user", "content": f"[[answer: {i}]]"}]) for i in range(n))
        )
    assert [r.message["content"] for r in results] == [str(i) for i in range(n)]
    stats = server.stats()
    assert stats["ok"] == n and stats["duplicates"] == 0 and stats["distinct"] == n
    assert stats["requests"] == sum(r.attempts for r in results)
    assert sum(r.attempts > 1 for r in results) > n // 5  # faults really happened
    assert set(stats["outcomes"]) == {"ok", *kinds}


def test_public_api() -> None:
    import harness.adapters as adapters

    assert set(adapters.__all__) == {
        "KINDS",
        "RETRY_AFTER_CAP",
        "TRANSPORT_KINDS",
        "AdapterKind",
        "Agent",
        "BuildContext",
        "CachedBackend",
        "ChatError",
        "ChatPolicy",
        "ChatResult",
        "FastTransport",
        "OpenAIBackend",
        "OpenAIChat",
        "RateLimiter",
        "ResponseStore",
        "adapter_kind",
        "build_agent",
        "default_transport",
        "make_transport",
        "parse_retry_after",
    }
    assert all(hasattr(adapters, name) for name in adapters.__all__)
    assert issubclass(adapters.ChatError, AgentError)
