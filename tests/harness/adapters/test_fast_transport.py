"""FastTransport against real servers on 127.0.0.1: the fake OpenAI server (faults, chunked,
Connection: close, idle close), an aiohttp.web server (an independent HTTP implementation:
streaming, large bodies, HEAD/204/304, TLS) and canned byte-exact replies (odd framing)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import json
import logging
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web

from harness.adapters import FastTransport, default_transport, make_transport, transports
from harness.testing import FakeOpenAI, Faults


def chat_body(text: str = "hi") -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


def client(transport: FastTransport, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=transport, timeout=kw.pop("timeout", 5), **kw)


async def chat(c: httpx.AsyncClient, fake: FakeOpenAI, text: str = "hi") -> httpx.Response:
    return await c.post(fake.base_url + "/chat/completions", json=chat_body(text))


# -- against the fake OpenAI server ----------------------------------------------------------


async def test_keep_alive_reuses_one_connection(fake: FakeOpenAI) -> None:
    async with client(FastTransport()) as c:
        for i in range(20):
            r = await chat(c, fake, f"[[answer: {i}]]")
            assert r.status_code == 200
            assert r.json()["choices"][0]["message"]["content"] == str(i)
            assert r.http_version == "HTTP/1.1" and r.reason_phrase == "OK"
    assert fake.stats()["connections"] == 1


async def test_chunked_replies(fake: FakeOpenAI) -> None:
    fake.configure(chunked=True)
    async with client(FastTransport()) as c:
        for i in range(5):
            r = await chat(c, fake, f"[[answer: {i}]]")
            assert r.headers["transfer-encoding"] == "chunked"
            assert r.json()["choices"][0]["message"]["content"] == str(i)
    assert fake.stats()["connections"] == 1  # chunked bodies read to the end keep the connection


async def test_connection_close_replies_open_new_connections(fake: FakeOpenAI) -> None:
    fake.configure(keep_alive=False)
    async with client(FastTransport()) as c:
        for _ in range(4):
            assert (await chat(c, fake)).status_code == 200
    assert fake.stats()["connections"] == 4


@pytest.mark.parametrize("chunked", [False, True])
async def test_drop_mid_body_is_a_protocol_error_and_the_pool_recovers(
    fake: FakeOpenAI, chunked: bool
) -> None:
    fake.configure(faults=Faults(kinds=("drop",), first=1), chunked=chunked)
    async with client(FastTransport(max_connections=1)) as c:
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await chat(c, fake)
        assert (await chat(c, fake)).status_code == 200  # its retry, on a new connection
        fake.configure(faults=Faults())
        assert (await chat(c, fake, "other")).status_code == 200  # that one was kept alive
    assert fake.stats()["connections"] == 2


async def test_disconnect_before_reply(fake: FakeOpenAI) -> None:
    fake.configure(faults=Faults(kinds=("disconnect",), first=1))
    async with client(FastTransport(max_connections=1)) as c:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await chat(c, fake)
        assert (await chat(c, fake)).status_code == 200


async def test_reset_is_a_transport_error(fake: FakeOpenAI) -> None:
    fake.configure(faults=Faults(kinds=("reset",), first=1))
    async with client(FastTransport(max_connections=1)) as c:
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
            await chat(c, fake)
        assert (await chat(c, fake)).status_code == 200


async def test_read_timeout_frees_the_connection_slot(fake: FakeOpenAI) -> None:
    fake.configure(faults=Faults(kinds=("timeout",), first=1, hang=30))
    async with client(FastTransport(max_connections=1), timeout=0.2) as c:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await chat(c, fake)
        assert time.monotonic() - started < 25  # the client's timeout, not the 30 s hang
        assert (await chat(c, fake)).status_code == 200


async def test_connection_closed_by_the_server_while_idle_is_not_reused(
    fake: FakeOpenAI,
) -> None:
    fake.configure(idle_timeout=0.1)
    async with client(FastTransport()) as c:
        assert (await chat(c, fake)).status_code == 200
        await asyncio.sleep(0.3)
        assert (await chat(c, fake)).status_code == 200
    assert fake.stats()["connections"] == 2


async def test_keepalive_expiry_drops_old_idle_connections(fake: FakeOpenAI) -> None:
    async with client(FastTransport(keepalive_expiry=0.05)) as c:
        assert (await chat(c, fake)).status_code == 200
        await asyncio.sleep(0.1)
        assert (await chat(c, fake)).status_code == 200
    assert fake.stats()["connections"] == 2


async def test_per_host_connection_limit(fake: FakeOpenAI) -> None:
    fake.configure(latency=0.05)
    async with client(FastTransport(max_connections=3)) as c:
        replies = await asyncio.gather(*(chat(c, fake, f"{i}") for i in range(12)))
    assert all(r.status_code == 200 for r in replies)
    stats = fake.stats()
    assert stats["max_in_flight"] == 3 and stats["connections"] == 3


async def test_pool_timeout(fake: FakeOpenAI) -> None:
    fake.configure(latency=1.0)
    async with client(FastTransport(max_connections=1)) as c:
        slow = asyncio.create_task(chat(c, fake))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout):
            await c.post(
                fake.base_url + "/chat/completions",
                json=chat_body(),
                timeout=httpx.Timeout(5, pool=0.1),
            )
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow


async def test_cancelled_request_frees_its_slot(fake: FakeOpenAI) -> None:
    fake.configure(latency=0.5)
    async with client(FastTransport(max_connections=1)) as c:
        task = asyncio.create_task(chat(c, fake, "slow"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        fake.configure(latency=0.0)
        r = await asyncio.wait_for(chat(c, fake, "next"), 2)
        assert r.status_code == 200


async def test_connect_errors() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    async with client(FastTransport()) as c:
        with pytest.raises(httpx.ConnectError, match=r"connection refused \(nothing is listen"):
            await c.get(f"http://127.0.0.1:{port}/")  # said for a person, not as Errno 111
        with pytest.raises(httpx.UnsupportedProtocol):
            await c.get("ftp://127.0.0.1/")


async def test_streamed_chunked_request_body(fake: FakeOpenAI) -> None:
    payload = json.dumps(chat_body("[[answer: up]]")).encode()

    async def pieces() -> AsyncIterator[bytes]:
        yield payload[:7]
        yield payload[7:]

    async with client(FastTransport()) as c:
        r = await c.post(fake.base_url + "/chat/completions", content=pieces())
        assert r.json()["choices"][0]["message"]["content"] == "up"
        assert (await chat(c, fake)).status_code == 200  # connection still in step


async def test_header_injection_is_refused(fake: FakeOpenAI) -> None:
    async with client(FastTransport()) as c:
        with pytest.raises(httpx.LocalProtocolError):
            await c.get(fake.base_url + "/models", headers={"x-evil": "a\r\nx-injected: 1"})


# -- against aiohttp.web (an independent server) ---------------------------------------------

BIG = bytes(range(256)) * 4096  # 1 MiB: past the eager-read limit, so streamed


@pytest.fixture
async def aio_server() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> str:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


def aio_app(connections: list[object]) -> web.Application:
    async def big(request: web.Request) -> web.Response:
        connections.append(request.transport)
        return web.Response(body=BIG)

    async def slow_chunks(request: web.Request) -> web.StreamResponse:
        connections.append(request.transport)
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for i in range(3):
            await resp.write(b"part%d;" % i)
            await asyncio.sleep(0.1)
        await resp.write_eof()
        return resp

    async def empty(request: web.Request) -> web.Response:
        connections.append(request.transport)
        status = int(request.match_info["status"])
        return web.Response(status=status, headers={"x-status": str(status)})

    async def echo(request: web.Request) -> web.Response:
        connections.append(request.transport)
        return web.Response(body=await request.read())

    app = web.Application()
    app.router.add_get("/big", big)  # and HEAD
    app.router.add_get("/chunks", slow_chunks)
    app.router.add_get("/status/{status}", empty)
    app.router.add_post("/echo", echo)
    return app


async def test_large_body_is_streamed(aio_server: Callable[..., Awaitable[str]]) -> None:
    seen: list[object] = []
    base = await aio_server(aio_app(seen))
    async with client(FastTransport()) as c:
        r = await c.get(base + "/big")
        assert r.content == BIG
        async with c.stream("GET", base + "/big") as streamed:
            sizes = [len(chunk) async for chunk in streamed.aiter_raw()]
        assert sum(sizes) == len(BIG) and len(sizes) > 1
        echoed = await c.post(base + "/echo", content=BIG)
        assert echoed.content == BIG
    assert len({id(t) for t in seen}) == 1  # all on one kept-alive connection


async def test_chunks_arrive_as_they_are_sent(aio_server: Callable[..., Awaitable[str]]) -> None:
    base = await aio_server(aio_app([]))
    async with client(FastTransport()) as c, c.stream("GET", base + "/chunks") as r:
        arrivals = []
        body = b""
        async for chunk in r.aiter_raw():
            arrivals.append(time.monotonic())
            body += chunk
    assert body == b"part0;part1;part2;"
    assert arrivals[-1] - arrivals[0] >= 0.15  # streamed, not buffered to the end


async def test_bodiless_responses(aio_server: Callable[..., Awaitable[str]]) -> None:
    seen: list[object] = []
    base = await aio_server(aio_app(seen))
    async with client(FastTransport()) as c:
        head = await c.head(base + "/big")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(len(BIG))
        for status in (204, 304):
            r = await c.get(f"{base}/status/{status}")
            assert r.status_code == status and r.content == b""
        assert (await c.get(base + "/big")).content == BIG
    assert len({id(t) for t in seen}) == 1


async def test_partly_read_stream_does_not_go_back_to_the_pool(
    aio_server: Callable[..., Awaitable[str]],
) -> None:
    seen: list[object] = []
    base = await aio_server(aio_app(seen))
    async with client(FastTransport()) as c:
        async with c.stream("GET", base + "/big") as r:
            async for _ in r.aiter_raw():
                break
        assert (await c.get(base + "/big")).content == BIG
    assert len({id(t) for t in seen}) == 2


def self_signed(tmp: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_tls(aio_server: Callable[..., Awaitable[str]], tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    base = await aio_server(aio_app([]), server_ctx)
    trusting = ssl.create_default_context(cafile=str(cert))
    async with client(FastTransport(verify=trusting)) as c:
        assert (await c.get(base + "/big")).content == BIG
        assert (await c.post(base + "/echo", content=b"secret")).content == b"secret"
    async with client(FastTransport()) as c:  # default trust store: the self-signed cert fails
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await c.get(base + "/big")
    async with client(FastTransport(verify=False)) as c:
        assert (await c.get(base + "/status/204")).status_code == 204


# -- canned replies (byte-exact framing cases) -----------------------------------------------


async def test_body_until_close_and_informational_heads(
    canned: Callable[[list[bytes]], Awaitable[str]],
) -> None:
    base = await canned(
        [
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nX-A: 2\r\n\r\nok",
            b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
        ]
    )
    async with client(FastTransport()) as c:
        r = await c.get(base)
        assert r.content == b"ok" and r.headers.get_list("x-a") == ["1", "2"]
        r = await c.get(base)
        assert r.content == b"until the end"


async def test_a_chunk_larger_than_the_read_pause_mark_streams_to_a_slow_reader(
    canned: Callable[[list[bytes]], Awaitable[str]],
) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB in one chunk: more than is held before pausing
    reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    reply += b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
    base = await canned([reply, b"HTTP/1.1 204 No Content\r\n\r\n"])
    async with client(FastTransport(), timeout=10) as c:
        async with c.stream("GET", base) as r:
            await asyncio.sleep(0.2)  # the whole reply arrives before anyone reads
            assert await r.aread() == big
        assert (await c.get(base)).status_code == 204  # and the connection was kept


@pytest.mark.parametrize(
    "reply, error",
    [
        (b"HTCPCP/1.0 418 I'm a teapot\r\n\r\n", "bad status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nok", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\n folded: header\r\n\r\n", "bad header line"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", "larger than"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "middle of the response head"),
    ],
)
async def test_bad_replies_are_protocol_errors(
    canned: Callable[[list[bytes]], Awaitable[str]], reply: bytes, error: str
) -> None:
    base = await canned([reply])
    async with client(FastTransport()) as c:
        with pytest.raises(httpx.RemoteProtocolError, match=error):
            await c.get(base)


async def test_stream_outliving_its_transport_is_not_pooled(
    aio_server: Callable[..., Awaitable[str]],
) -> None:
    base = await aio_server(aio_app([]))
    transport = FastTransport()
    async with client(transport) as c, c.stream("GET", base + "/big") as r:
        await transport.aclose()
        assert len(await r.aread()) == len(BIG)
    assert all(not pool.idle for pool in transport._pools.values())


async def test_closed_transport_refuses_requests() -> None:
    transport = FastTransport()
    await transport.aclose()
    with pytest.raises(RuntimeError):
        await transport.handle_async_request(httpx.Request("GET", "http://127.0.0.1:1/"))


def test_default_transport_through_a_proxy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    monkeypatch.setattr(transports, "_told", set())
    plain = default_transport("https://api.example.test/v1")
    assert isinstance(plain, FastTransport) and plain._proxy is None
    # an https:// endpoint needs CONNECT: httpx's pool, said once, without the credentials
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example.test:3128")
    with caplog.at_level(logging.WARNING, logger="mindledger.transports"):
        first = default_transport("https://api.example.test/v1")
        again = default_transport("https://api.example.test/v1")
    assert isinstance(first, httpx.AsyncHTTPTransport)
    assert isinstance(again, httpx.AsyncHTTPTransport)
    said = [r.getMessage() for r in caplog.records if r.name == "mindledger.transports"]
    assert len(said) == 1
    assert "proxy.example.test:3128" in said[0] and "secret" not in said[0]
    # an http:// endpoint through an http:// proxy: FastTransport, sending to the proxy
    assert isinstance(default_transport("http://127.0.0.1:8000/v1"), FastTransport)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example.test:3128")
    via = default_transport("http://models.example.test:8000/v1")
    assert isinstance(via, FastTransport)
    assert via._proxy == httpx.URL("http://proxy.example.test:3128")
    monkeypatch.setenv("NO_PROXY", "api.example.test,models.example.test")
    for url in ("https://api.example.test/v1", "http://models.example.test:8000/v1"):
        direct = default_transport(url)
        assert isinstance(direct, FastTransport) and direct._proxy is None


async def test_requests_through_a_proxy_name_their_absolute_url(
    canned: Callable[[list[bytes]], Awaitable[str]],
) -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    proxy = await canned([ok, ok])
    with_credentials = proxy.replace("http://", "http://us%40er:pa%3Ass@")
    async with client(FastTransport(proxy=with_credentials)) as c:
        assert (await c.get("http://models.example.test:8000/v1/x?q=1")).content == b"ok"
        assert (await c.post("http://other.example.test/y", content=b"hi")).content == b"ok"
        with pytest.raises(httpx.UnsupportedProtocol, match="CONNECT"):
            await c.get("https://models.example.test/v1")
    heads = canned.heads  # type: ignore[attr-defined]
    assert len(heads) == 2  # one connection to the proxy, kept alive for both origins
    first, second = (head.split(b"\r\n") for head in heads)
    assert first[0] == b"GET http://models.example.test:8000/v1/x?q=1 HTTP/1.1"
    assert b"Host: models.example.test:8000" in first
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"us@er:pa:ss") in first
    assert second[0] == b"POST http://other.example.test/y HTTP/1.1"
    with pytest.raises(ValueError, match="http:// URL"):
        FastTransport(proxy="socks5://127.0.0.1:1080")


def test_make_transport_kinds() -> None:
    from httpx_aiohttp import AiohttpTransport

    assert isinstance(make_transport("fast", max_connections=8), FastTransport)
    assert isinstance(make_transport("aiohttp"), AiohttpTransport)
    assert isinstance(make_transport("httpx"), httpx.AsyncHTTPTransport)
    with pytest.raises(ValueError, match="unknown transport"):
        make_transport("curl")
    with pytest.raises(ValueError):
        FastTransport(max_connections=0)
    assert aiohttp.__version__


def test_aiohttp_transport_without_the_bench_extra_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from mindledger.errors import UserError

    monkeypatch.setitem(sys.modules, "httpx_aiohttp", None)  # as if not installed
    with pytest.raises(UserError, match=r"pip install -e \"\.\[bench\]\"") as caught:
        make_transport("aiohttp")
    assert isinstance(caught.value.__cause__, ImportError)
    assert isinstance(make_transport("fast"), FastTransport)  # the default needs nothing more
