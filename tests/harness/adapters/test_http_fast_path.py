"""The shortcuts on the adapter's per-request path change nothing that is sent or read:
OpenAIChat's request, built from a head made once, is the one ``client.post`` would build;
what FastTransport hands httpx for a small body read with the head (set as read, without
httpx's decoder chain, unless it is content-encoded) is what ``httpx.Response(content=…)``
would be; and OpenAIChat keeps no cookies (the API uses none)."""

from __future__ import annotations

import gc
import gzip
import json
from collections.abc import Awaitable, Callable

import httpx
import pytest

from harness.adapters import FastTransport, OpenAIChat

REPLY = {
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


def reply(body: bytes, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
    return head + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


@pytest.mark.parametrize("encoded", [False, True])
async def test_a_read_body_is_what_httpx_would_have_read(
    canned: Callable[[list[bytes]], Awaitable[str]], encoded: bool
) -> None:
    body = json.dumps(REPLY).encode()
    wire = gzip.compress(body) if encoded else body
    extra = (b"Content-Encoding: gzip",) if encoded else ()
    base = await canned([reply(wire, b"Content-Type: application/json", *extra)])
    async with httpx.AsyncClient(transport=FastTransport()) as c:
        r = await c.post(base, content=b"{}")
    expected = httpx.Response(200, headers=r.headers.raw, content=wire)
    assert r.content == body and r.json() == REPLY
    assert r.headers.raw == expected.headers.raw
    assert r.is_closed and r.is_stream_consumed
    assert r.num_bytes_downloaded == expected.num_bytes_downloaded


async def test_an_empty_body_gets_no_content_length(
    canned: Callable[[list[bytes]], Awaitable[str]],
) -> None:
    base = await canned([b"HTTP/1.1 204 No Content\r\nServer: t\r\n\r\n"])
    async with httpx.AsyncClient(transport=FastTransport()) as c:
        r = await c.post(base, content=b"{}")
    assert r.status_code == 204 and r.content == b""
    assert r.headers.raw == [(b"Server", b"t")]


async def test_openai_chat_keeps_no_cookies(
    canned: Callable[[list[bytes]], Awaitable[str]],
) -> None:
    body = json.dumps(REPLY).encode()
    set_cookie = b"Set-Cookie: session=abc; Path=/"
    base = await canned([reply(body, set_cookie), reply(body, set_cookie)])
    async with OpenAIChat(base, "m") as chat:
        for _ in range(2):
            assert (await chat.chat([{"role": "user", "content": "hi"}])).message["content"] == "ok"
        assert not chat._client.cookies
    heads = canned.heads  # type: ignore[attr-defined]
    assert len(heads) == 2 and not any(b"cookie" in h.lower() for h in heads)


@pytest.mark.parametrize(
    "base", ["http://127.0.0.1:8000", "https://user:pw@api.example.com/v1/", "http://h:81/x?y=1"]
)
@pytest.mark.parametrize("api_key", [None, "sk-test"])
async def test_the_request_is_the_one_client_post_would_build(
    base: str, api_key: str | None
) -> None:
    async with OpenAIChat(base, "m", api_key=api_key) as chat:
        payload = json.dumps({"content": "é"}, ensure_ascii=False).encode()
        built = chat._request(payload)
        expected = chat._client.build_request("POST", chat.url, content=payload)
    assert built.method == expected.method and built.url == expected.url
    assert built.headers.raw == expected.headers.raw
    assert built.content == expected.content == payload
    assert built.extensions == expected.extensions


async def test_a_reply_leaves_no_reference_cycle_behind() -> None:
    """httpx's client links a response and its stream wrapper in a cycle; the adapter breaks it
    once the body is read, so that each request's objects are freed at once, not by the
    garbage collector (whose full collections walk the whole heap)."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=REPLY))
    async with OpenAIChat("http://endpoint.test/v1", "m", transport=transport) as chat:
        await chat.chat([{"role": "user", "content": "hi"}])  # warm up
        gc.collect()
        gc.disable()
        try:
            for _ in range(50):
                await chat.chat([{"role": "user", "content": "hi"}])
            unreachable = gc.collect()
        finally:
            gc.enable()
    assert unreachable < 50  # before: 23 objects in a cycle per request
