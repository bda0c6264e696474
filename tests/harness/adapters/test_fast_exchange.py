"""FastTransport.exchange, the direct path OpenAIChat takes on FastTransport: for the same
bytes from a server it reads what httpx reads through ``handle_async_request`` (status,
headers, body, or the same error), on the same pools and limits; and OpenAIChat puts the same
bytes on the wire by it as through httpx's client."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.adapters import FastTransport, OpenAIChat
from harness.adapters.fast_transport import Reply, RequestHead
from harness.testing import FakeOpenAI, Faults

Serve = Callable[[list[bytes]], Awaitable[str]]

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()

REPLY = {
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


def head_for(url: str, method: str = "POST", *extra: tuple[bytes, bytes]) -> RequestHead:
    u = httpx.URL(url)
    return RequestHead(method, u, [(b"Host", u.netloc), *extra])


async def by_httpx(url: str, method: str = "POST") -> httpx.Response:
    async with httpx.AsyncClient(transport=FastTransport(), timeout=5) as c:
        return await c.request(method, url, content=b"")


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


GOOD = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nX-A: 2\r\n\r\nok",
    "empty": b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    "informational first": b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
    b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes",
    "chunked": chunked(b"part0;", b"p" * 70000, b"end"),
    "chunked with trailers": chunked(b"a", trailer=b"X-T: 1\r\nX-U: 2\r\n"),
    "chunk extension": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2;name=value\r\nok\r\n0\r\n\r\n",
    "until close": b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    "large": b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + bytes(range(256)) * 4096,
    "no content": b"HTTP/1.1 204 No Content\r\nServer: t\r\n\r\n",
    "error status": b"HTTP/1.1 503 Busy Now\r\nRetry-After: 7\r\nContent-Length: 4\r\n\r\nbusy",
    "gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
    % (len(gzip.compress(b"zipped")), gzip.compress(b"zipped")),
}


@pytest.mark.parametrize("reply", GOOD.values(), ids=GOOD.keys())
async def test_a_reply_reads_as_httpx_reads_it(canned: Serve, reply: bytes) -> None:
    expected = await by_httpx(await canned([reply]))
    base = await canned([reply])
    async with FastTransport() as transport:
        got = await transport.exchange(head_for(base), b"")
    assert isinstance(got, Reply)
    assert got.status_code == expected.status_code
    assert got.reason_phrase == expected.reason_phrase
    assert got.raw_headers == expected.headers.raw
    assert got.headers.multi_items() == expected.headers.multi_items()
    assert got.content == expected.content


async def test_a_head_request_reads_no_body(canned: Serve) -> None:
    base = await canned([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", GOOD["length"]])
    async with FastTransport(max_connections=1) as transport:
        got = await transport.exchange(head_for(base, "HEAD"), b"")
        assert got.content == b"" and got.headers["content-length"] == "5"
        assert (await transport.exchange(head_for(base), b"")).content == b"ok"  # in step
    assert len(canned.heads) == 2  # type: ignore[attr-defined]


async def test_through_a_proxy_the_head_names_the_absolute_url(canned: Serve) -> None:
    proxy = await canned([GOOD["length"], GOOD["chunked"]])
    url = "http://models.example.test:8000/v1/chat/completions"
    head = head_for(url)
    async with FastTransport(proxy=proxy.replace("http://", "http://u:p@")) as transport:
        assert (await transport.exchange(head, CHAT)).content == b"ok"
        assert (await transport.exchange(head, CHAT)).content.endswith(b"end")
    first, second = canned.heads  # type: ignore[attr-defined]
    assert first == second  # one connection, the head encoded once
    lines = first.split(b"\r\n")
    assert lines[0] == b"POST http://models.example.test:8000/v1/chat/completions HTTP/1.1"
    assert lines[1] == b"Host: models.example.test:8000"
    assert lines[2] == b"Proxy-Authorization: Basic dTpw"  # u:p
    assert lines[3] == b"Content-Length: %d" % len(CHAT)
    async with FastTransport() as plain:  # without a proxy, the same head names the path
        base = await canned([GOOD["length"]])
        assert (await plain.exchange(head_for(base + "/v1/chat/completions"), CHAT)).content
    assert canned.heads[-1].startswith(b"POST /v1/chat/completions HTTP/1.1")  # type: ignore[attr-defined]


BAD = {
    "bad status line": (b"HTCPCP/1.0 418 I'm a teapot\r\n\r\n", "bad status line"),
    "two lengths": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        "Content-Length",
    ),
    "bad length": (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nok", "Content-Length"),
    "folded header": (b"HTTP/1.1 200 OK\r\n folded: header\r\n\r\n", "bad header line"),
    "bad chunk size": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "chunk size",
    ),
    "bad chunk end": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
        "chunk terminator",
    ),
    "huge head": (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", "larger than"),
    "cut in the head": (b"HTTP/1.1 200 OK\r\nContent-Le", "middle of the response head"),
    "cut in the body": (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok", "complete message"),
    "cut in a chunk": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nok",
        "complete message body",
    ),
    "cut before the last chunk": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
        "incomplete chunked read",
    ),
    "nothing": (b"", "without sending a response"),
}


@pytest.mark.parametrize("reply, error", BAD.values(), ids=BAD.keys())
async def test_a_bad_reply_raises_what_httpx_raises(
    canned: Serve, reply: bytes, error: str
) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match=error):
        await by_httpx(await canned([reply]))
    base = await canned([reply])
    async with FastTransport() as transport:
        with pytest.raises(httpx.RemoteProtocolError, match=error):
            await transport.exchange(head_for(base), b"")


async def test_a_body_that_does_not_decode_is_a_decoding_error(canned: Serve) -> None:
    base = await canned(
        [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nnot"]
    )
    async with FastTransport() as transport:
        with pytest.raises(httpx.DecodingError):
            await transport.exchange(head_for(base), b"")


async def test_a_large_request_body_is_sent_whole(fake: FakeOpenAI) -> None:
    """Past the socket's buffer, so that the transport waits for it to drain."""
    text = "x" * (4 * 1024 * 1024)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    url = fake.base_url + "/chat/completions"
    async with FastTransport() as transport:
        head = head_for(url, "POST", (b"Content-Type", b"application/json"))
        got = await transport.exchange(head, body)
    assert got.status_code == 200
    assert json.loads(got.content)["choices"][0]["message"]["content"] == "ok"


async def test_keep_alive_and_the_connection_limit(fake: FakeOpenAI) -> None:
    fake.configure(latency=0.05)
    url = fake.base_url + "/chat/completions"
    body = CHAT
    async with FastTransport(max_connections=3) as transport:
        replies = await asyncio.gather(
            *(transport.exchange(head_for(url), body) for _ in range(12))
        )
        # the limit is per origin, whichever path takes the connections
        async with httpx.AsyncClient(transport=transport) as c:
            both = await asyncio.gather(
                *(transport.exchange(head_for(url), body) for _ in range(3)),
                *(c.post(url, content=body) for _ in range(3)),
            )
    assert all(r.status_code == 200 for r in [*replies, *both])
    stats = fake.stats()
    assert stats["max_in_flight"] == 3


async def test_pool_timeout_and_a_cancelled_request_frees_its_slot(fake: FakeOpenAI) -> None:
    fake.configure(latency=1.0)
    url = fake.base_url + "/chat/completions"
    async with FastTransport(max_connections=1) as transport:
        slow = asyncio.create_task(transport.exchange(head_for(url), CHAT))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout):
            await transport.exchange(head_for(url), CHAT, pool_timeout=0.1)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        fake.configure(latency=0.0)
        got = await asyncio.wait_for(transport.exchange(head_for(url), CHAT), 10)
        assert got.status_code == 200


async def test_read_timeout(fake: FakeOpenAI) -> None:
    fake.configure(faults=Faults(kinds=("timeout",), first=1, hang=30))
    url = fake.base_url + "/chat/completions"
    async with FastTransport(max_connections=1) as transport:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await transport.exchange(head_for(url), CHAT, read_timeout=0.2)
        assert time.monotonic() - started < 25  # the timeout, not the 30 s hang
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200


@pytest.mark.parametrize(
    "fault, error",
    [
        ("drop", httpx.RemoteProtocolError),
        ("disconnect", httpx.RemoteProtocolError),
        ("reset", (httpx.ReadError, httpx.RemoteProtocolError)),
    ],
)
async def test_a_failed_connection_is_an_error_and_the_pool_recovers(
    fake: FakeOpenAI, fault: str, error: Any
) -> None:
    fake.configure(faults=Faults(kinds=(fault,), first=1))
    url = fake.base_url + "/chat/completions"
    async with FastTransport(max_connections=1) as transport:
        with pytest.raises(error):
            await transport.exchange(head_for(url), CHAT)
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200
        fake.configure(faults=Faults())
        other = CHAT.replace(b"hi", b"other")
        assert (await transport.exchange(head_for(url), other)).status_code == 200
    assert fake.stats()["connections"] == 2  # the one after the failure was kept alive


async def test_idle_connections_closed_or_expired_are_not_reused(fake: FakeOpenAI) -> None:
    url = fake.base_url + "/chat/completions"
    fake.configure(idle_timeout=0.1)
    async with FastTransport() as transport:
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200
        await asyncio.sleep(0.3)  # the server closes it meanwhile
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200
    fake.configure(idle_timeout=None)
    async with FastTransport(keepalive_expiry=0.05) as transport:
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200
        await asyncio.sleep(0.1)
        assert (await transport.exchange(head_for(url), CHAT)).status_code == 200
    assert fake.stats()["connections"] == 4


async def test_connection_close_is_honoured(fake: FakeOpenAI) -> None:
    url = fake.base_url + "/chat/completions"
    async with FastTransport() as transport:
        for _ in range(3):
            head = head_for(url, "POST", (b"Connection", b"close"))
            assert (await transport.exchange(head, CHAT)).status_code == 200
    assert fake.stats()["connections"] == 3


async def test_a_closed_transport_and_bad_heads_are_refused() -> None:
    transport = FastTransport()
    await transport.aclose()
    with pytest.raises(RuntimeError):
        await transport.exchange(head_for("http://127.0.0.1:1/"), b"")
    with pytest.raises(ValueError, match="added per request"):
        head_for("http://127.0.0.1:1/", "POST", (b"Content-Length", b"3"))
    with pytest.raises(httpx.LocalProtocolError):
        head_for("http://127.0.0.1:1/", "POST", (b"X-Evil", b"a\r\nX-Injected: 1"))
    async with FastTransport() as open_transport:
        with pytest.raises(httpx.UnsupportedProtocol):
            await open_transport.exchange(head_for("ftp://127.0.0.1/"), b"")


# -- OpenAIChat on the direct path ------------------------------------------------------------


def reply(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.mark.parametrize("api_key", [None, "sk-test"])
async def test_openai_chat_sends_the_same_bytes_as_through_httpx(
    canned: Serve, api_key: str | None
) -> None:
    body = json.dumps(REPLY).encode()
    base = await canned([reply(body)] * 4)
    heads: list[bytes] = canned.heads  # type: ignore[attr-defined]
    async with OpenAIChat(base, "m", api_key=api_key) as chat:
        assert chat._direct is not None  # FastTransport: the direct path
        first = await chat.chat([{"role": "user", "content": "é"}])
        chat._direct = None  # now through httpx's client
        second = await chat.chat([{"role": "user", "content": "é"}])
    assert first.message == second.message == REPLY["choices"][0]["message"]  # type: ignore[index]
    assert (first.tokens_in, first.model) == (second.tokens_in, second.model) == (3, "m")
    assert len(heads) == 2 and heads[0] == heads[1]


async def test_openai_chat_with_credentials_in_the_url_goes_through_httpx(canned: Serve) -> None:
    body = json.dumps(REPLY).encode()
    base = await canned([reply(body)])
    url = base.replace("http://", "http://user:pw@")
    async with OpenAIChat(url, "m") as chat:
        assert chat._direct is None
        await chat.chat([{"role": "user", "content": "hi"}])
    assert b"authorization: basic" in canned.heads[0].lower()  # type: ignore[attr-defined]
