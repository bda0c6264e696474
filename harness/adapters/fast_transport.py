"""A small, fast HTTP/1.1 transport for httpx on asyncio streams.

httpx's own connection pool (httpcore) does work per request that grows with the number of
pooled connections, so at the concurrency an evaluation run needs (64 requests in flight) one
``httpx.AsyncClient`` is CPU-bound long before the model endpoint is (see
shared/PERFORMANCE-NOTES.md and ``bench/bench_http.py``). :class:`FastTransport` keeps httpx's API
(it is an ``httpx.AsyncBaseTransport``) and replaces the pool:

* one pool per origin (scheme, host, port) with a hard limit on open connections, a LIFO list of
  idle keep-alive connections, and a keep-alive expiry (4 s, below the 5 s idle timeout of
  common servers, so we rarely reuse a connection the server is closing);
* HTTP/1.1 only, over TCP or TLS (SNI and certificate checks as in httpx); no proxies
  (:func:`harness.adapters.transports.default_transport` uses httpx's pool when one is set);
* response bodies framed by ``Content-Length`` (read in one go when small, so the connection goes
  back to the pool before httpx sees the response), ``Transfer-Encoding: chunked`` or the end of
  the connection, streamed to httpx otherwise; request bodies of known length or chunked;
* httpx's timeouts (connect, read, write, pool; the read timeout covers a response's head and a
  small body together) and exception classes: a server that closes the
  connection shows as ``RemoteProtocolError`` (as in httpcore), a reset as ``ReadError``;
* cancellation-safe: a request cancelled at any point closes its connection and frees its slot.

A pooled connection that the server has closed (EOF seen) is discarded, never reused. A request
that fails on a connection is *not* retried here: retries belong to the caller, which counts them.

Beside httpx's interface, :meth:`FastTransport.exchange` is a direct path for a caller that
sends many requests with one head and an in-memory body and reads every response whole (the
``openai`` adapter): the head is encoded once (:class:`RequestHead`), and the response is parsed
as it arrives by an ``asyncio.Protocol`` (:class:`_Direct`) that wakes the request once, with all
of it (:class:`Reply`), by the same framing rules, on the same pools, limits and timeouts,
raising the same httpx exceptions. It costs about half the CPU of the same request through
``httpx.AsyncClient`` on this transport (``bench/bench_runner.py``: 0.07 ms a call against
0.15).
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import httpx

__all__ = ["FastTransport", "Reply", "RequestHead"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_EAGER_BODY = 256 * 1024
"""Bodies with a Content-Length up to this many bytes are read before the response is returned."""
_READ_SIZE = 64 * 1024
_HEAD_LIMIT = 64 * 1024
_NO_BODY_STATUS = frozenset({204, 304})

_LENGTH, _CHUNKED, _UNTIL_CLOSE = 0, 1, 2

_P = TypeVar("_P", bound=asyncio.BaseProtocol)
_C = TypeVar("_C", "_Connection", "_Direct")


class _Connection:
    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float, expiry: float) -> bool:
        """Not closed by either side (no EOF seen) and not idle too long."""
        return (
            not self.writer.transport.is_closing()
            and not self.reader.at_eof()
            and self.reader.exception() is None
            and now - self.idle_since < expiry
        )

    def abort(self) -> None:
        self.writer.transport.abort()

    def close(self) -> None:
        self.writer.close()


_Response = tuple[int, bytes, list[tuple[bytes, bytes]], bool, bytes]
"""status, reason, headers, whether the connection is reusable, body"""


class _Direct(asyncio.Protocol):
    """A keep-alive connection for :meth:`FastTransport.exchange`: the response is gathered
    and parsed as it arrives, with the rules (and errors) of :func:`_receive` and
    :class:`_BodyStream`, and the waiting request is woken once, with the whole of it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # connection_made
        self.buffer = bytearray()
        self.idle_since = 0.0
        self.eof = False
        self.error: BaseException | None = None
        self.paused = False
        self._drained: asyncio.Future[None] | None = None
        self._reply: asyncio.Future[_Response] | None = None
        self._close_requested = False
        self._head_only = False
        # the response being read: its head, then (chunked) the chunks read and what is left
        self._head: tuple[int, bytes, list[tuple[bytes, bytes]], int, int, bool] | None = None
        self._chunks: list[bytes] = []
        self._chunk_left = -1  # -1: a chunk-size line is next
        self._trailers = False

    def usable(self, now: float, expiry: float) -> bool:
        """Not closed by either side, nothing unasked-for received, not idle too long."""
        return (
            not self.eof
            and not self.buffer
            and not self.transport.is_closing()
            and now - self.idle_since < expiry
        )

    def abort(self) -> None:
        self.transport.abort()

    def close(self) -> None:
        self.transport.close()

    def expect(self, close_requested: bool, head_only: bool) -> asyncio.Future[_Response]:
        """Get ready for the response to the request about to be sent; it comes in the
        future returned (or an httpx error)."""
        self._close_requested = close_requested
        self._head_only = head_only
        if not self.buffer:  # a fresh one: not holding on to the room a large body took
            self.buffer = bytearray()
        self._head = None
        self._chunks = []
        self._chunk_left = -1
        self._trailers = False
        self._reply = reply = asyncio.get_running_loop().create_future()
        return reply

    async def drained(self) -> None:
        """Return once the transport takes writes again (raise if the connection is lost)."""
        while self.paused:
            if self.error is not None or self.eof:
                raise httpx.WriteError(
                    f"connection failed while sending: {self.error or 'Connection lost'}"
                )
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self._reply is not None:
            self._advance()

    def eof_received(self) -> bool:
        self.eof = True
        if self._reply is not None:
            self._advance()
        return False  # close the transport: nothing more can be read

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None:
            self.error = exc
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._reply is not None:
            self._advance()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- reading the response

    def _advance(self) -> None:
        reply = self._reply
        assert reply is not None
        if reply.done():  # its request was cancelled
            self._reply = None
            return
        try:
            response = self._parse()
        except Exception as exc:
            self._reply = None
            if not isinstance(exc, httpx.HTTPError):  # a bug here must not hang the request
                exc = httpx.RemoteProtocolError(f"unreadable response ({exc!r})")
            reply.set_exception(exc)
            return
        if response is not None:
            self._reply = None
            reply.set_result(response)

    def _parse(self) -> _Response | None:
        """The whole response if it is in, None if more is to come; raises what
        :func:`_receive` and :class:`_BodyStream` raise for the same bytes."""
        buf = self.buffer
        head = self._head
        while head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0 or end + 4 > _HEAD_LIMIT:
                if end >= 0 or len(buf) > _HEAD_LIMIT:
                    raise httpx.RemoteProtocolError(
                        f"response head larger than {_HEAD_LIMIT} bytes"
                    )
                self._check_open(
                    "Server disconnected in the middle of the response head."
                    if buf
                    else "Server disconnected without sending a response."
                )
                return None
            status, reason, version, headers = _parse_head(bytes(buf[: end + 4]), None)
            del buf[: end + 4]
            if status >= 200 or status == 101:  # skip 1xx informational heads
                mode, length, keep = _framing(
                    None, status, version, headers, self._close_requested, self._head_only
                )
                self._head = head = (status, reason, headers, mode, length, keep)
        status, reason, headers, mode, length, keep = head
        if mode == _LENGTH:
            if len(buf) < length:
                self._check_open("peer closed connection without sending complete message body")
                return None
            body = bytes(buf[:length])
            del buf[:length]
        elif mode == _CHUNKED:
            chunked = self._chunked()
            if chunked is None:
                return None
            body = chunked
        else:  # until the connection closes
            if self.error is not None:
                raise httpx.ReadError(f"connection failed while reading: {self.error}")
            if not self.eof:
                return None
            body = bytes(buf)
            buf.clear()
        return status, reason, headers, keep, body

    def _chunked(self) -> bytes | None:
        buf = self.buffer
        while True:
            if self._chunk_left < 0:  # a chunk-size line, or a trailer line
                end = buf.find(b"\r\n")
                if end < 0 or end + 2 > _HEAD_LIMIT:
                    if end >= 0 or len(buf) > _HEAD_LIMIT or self.eof:
                        if self.error is not None:
                            raise httpx.ReadError(
                                f"connection failed while reading: {self.error}"
                            )
                        raise httpx.RemoteProtocolError(
                            "peer closed connection without sending complete message body "
                            "(incomplete chunked read)"
                        )
                    return None
                line = bytes(buf[: end + 2])
                del buf[: end + 2]
                if self._trailers:
                    if line == b"\r\n":
                        return b"".join(self._chunks)
                    continue  # trailers are dropped
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise httpx.RemoteProtocolError(
                        f"bad chunk size line {line[:40]!r}"
                    ) from None
                if size == 0:
                    self._trailers = True
                else:
                    self._chunk_left = size
            else:
                need = self._chunk_left + 2
                if len(buf) < need:
                    self._check_open(
                        "peer closed connection without sending complete message body"
                    )
                    return None
                data = bytes(buf[:need])
                del buf[:need]
                if data[-2:] != b"\r\n":
                    raise httpx.RemoteProtocolError("bad chunk terminator")
                self._chunks.append(data[:-2])
                self._chunk_left = -1

    def _check_open(self, closed: str) -> None:
        """Raise if nothing more can arrive: ReadError after a failure (a reset), else
        RemoteProtocolError saying ``closed``."""
        if self.error is not None:
            raise httpx.ReadError(f"connection failed while reading: {self.error}")
        if self.eof:
            raise httpx.RemoteProtocolError(closed)


class _Pool:
    """Connections to one origin: at most ``limit`` open, idle ones kept for reuse (those on
    streams, for httpx's requests, and those for :meth:`FastTransport.exchange`, apart)."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        limit: int,
        expiry: float,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.expiry = expiry
        self.ssl_context = ssl_context
        self.slots = asyncio.Semaphore(limit)
        self.idle: list[_Connection] = []
        self.direct_idle: list[_Direct] = []
        self.closed = False

    async def acquire(
        self,
        request: httpx.Request | None,
        pool_timeout: float | None,
        connect_timeout: float | None,
    ) -> _Connection:
        """A connection on streams (for httpx's requests), reused or new."""
        await self._slot(request, pool_timeout)
        try:
            conn = self._reuse(self.idle)
            return conn if conn is not None else await self._connect(request, connect_timeout)
        except BaseException:
            self.slots.release()
            raise

    async def acquire_direct(
        self, pool_timeout: float | None, connect_timeout: float | None
    ) -> _Direct:
        """A connection for :meth:`FastTransport.exchange`, reused or new (under the same
        limit as the others)."""
        await self._slot(None, pool_timeout)
        try:
            conn = self._reuse(self.direct_idle)
            if conn is not None:
                return conn
            _, proto = await self._open(None, connect_timeout, _Direct)
            return proto
        except BaseException:
            self.slots.release()
            raise

    async def _slot(self, request: httpx.Request | None, pool_timeout: float | None) -> None:
        if self.slots.locked():
            try:
                async with asyncio.timeout(pool_timeout):
                    await self.slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout(
                    f"no connection to {self.host}:{self.port} free within {pool_timeout} s",
                    request=request,
                ) from None
        else:
            await self.slots.acquire()  # returns at once: a slot is free

    def _reuse(self, idle: list[_C]) -> _C | None:
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.usable(now, self.expiry):
                return conn
            conn.abort()
        return None

    async def _connect(self, request: httpx.Request | None, timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_HEAD_LIMIT, loop=loop)
        transport, proto = await self._open(
            request, timeout, lambda: asyncio.StreamReaderProtocol(reader, loop=loop)
        )
        return _Connection(reader, asyncio.StreamWriter(transport, proto, reader, loop))

    async def _open(
        self,
        request: httpx.Request | None,
        timeout: float | None,
        protocol: Callable[[], _P],
    ) -> tuple[asyncio.Transport, _P]:
        server_hostname = None
        if self.ssl_context is not None:
            sni = None if request is None else request.extensions.get("sni_hostname")
            server_hostname = sni.decode() if isinstance(sni, bytes) else (sni or self.host)
        try:
            async with asyncio.timeout(timeout):
                transport, proto = await asyncio.get_running_loop().create_connection(
                    protocol,
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=server_hostname,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"connecting to {self.host}:{self.port} took longer than {timeout} s",
                request=request,
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(
                f"cannot connect to {self.host}:{self.port}: {exc}", request=request
            ) from exc
        return transport, proto  # type: ignore[return-value]

    def release(self, conn: _Connection | _Direct, reusable: bool) -> None:
        if reusable and not self.closed:
            idle: list[Any] = self.direct_idle if type(conn) is _Direct else self.idle
            now = time.monotonic()
            conn.idle_since = now
            idle.append(conn)
            # The oldest idle connection sits at the bottom of the LIFO: drop it once expired.
            if len(idle) > 1 and now - idle[0].idle_since >= self.expiry:
                idle.pop(0).abort()
        else:
            conn.abort()
        self.slots.release()

    def close(self) -> None:
        self.closed = True
        conns: list[_Connection | _Direct] = [*self.idle, *self.direct_idle]
        for conn in conns:
            conn.close()
        self.idle.clear()
        self.direct_idle.clear()


class FastTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive transport for ``httpx.AsyncClient`` on asyncio streams.

    ``max_connections`` limits open connections *per origin*; ``keepalive_expiry`` is how long
    an idle connection is kept; ``verify`` is an ``ssl.SSLContext`` or a bool, as in httpx
    (True: ``SSL_CERT_FILE``/``SSL_CERT_DIR`` if set, else certifi's CA bundle).
    """

    def __init__(
        self,
        *,
        max_connections: int = 100,
        keepalive_expiry: float = 4.0,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.max_connections = max_connections
        self.keepalive_expiry = keepalive_expiry
        self._verify = verify
        self._ssl_context: ssl.SSLContext | None = None
        self._pools: dict[tuple[str, str, int], _Pool] = {}
        self._closed = False

    def _ssl(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            if isinstance(self._verify, ssl.SSLContext):
                self._ssl_context = self._verify
            else:
                import certifi

                # As httpx does: SSL_CERT_FILE / SSL_CERT_DIR if set, else certifi's bundle.
                cafile = os.environ.get("SSL_CERT_FILE")
                capath = os.environ.get("SSL_CERT_DIR")
                if not (cafile and os.path.isfile(cafile)):
                    cafile = None if capath and os.path.isdir(capath) else certifi.where()
                ctx = ssl.create_default_context(cafile=cafile, capath=capath or None)
                if not self._verify:
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                self._ssl_context = ctx
        return self._ssl_context

    def _pool(self, request: httpx.Request) -> _Pool:
        return self._origin_pool(request.url, request)

    def _origin_pool(self, url: httpx.URL, request: httpx.Request | None) -> _Pool:
        scheme = url.scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(
                f"FastTransport speaks http and https, not {scheme!r}", request=request
            )
        port = url.port or _DEFAULT_PORTS[scheme]
        key = (scheme, url.host, port)
        pool = self._pools.get(key)
        if pool is None:
            ctx = self._ssl() if scheme == "https" else None
            pool = _Pool(scheme, url.host, port, self.max_connections, self.keepalive_expiry, ctx)
            self._pools[key] = pool
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport has been closed")
        pool = self._pool(request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read")
        conn = await pool.acquire(request, timeouts.get("pool"), timeouts.get("connect"))
        try:
            close_requested = await _send(conn, request, timeouts.get("write"))
            status, reason, headers, mode, length, keep, body = await _receive(
                conn, request, read_timeout, close_requested, request.method == "HEAD"
            )
        except BaseException:
            pool.release(conn, reusable=False)
            raise
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1", "reason_phrase": reason}
        if body is not None:
            pool.release(conn, keep)
            return _read_response(status, headers, body, request, extensions)
        stream = _BodyStream(pool, conn, request, mode, length, keep, read_timeout)
        return httpx.Response(
            status, headers=headers, stream=stream, request=request, extensions=extensions
        )

    async def aclose(self) -> None:
        self._closed = True
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    async def exchange(
        self,
        head: RequestHead,
        content: bytes,
        *,
        pool_timeout: float | None = None,
        connect_timeout: float | None = None,
        write_timeout: float | None = None,
        read_timeout: float | None = None,
    ) -> Reply:
        """Send a request whose head was encoded once (``head``) with ``content`` as its body
        (``Content-Length`` is added) and read the whole response: what
        ``handle_async_request`` and ``httpx.AsyncClient.send`` together do for a request with
        an in-memory body, on the same pools, limits and timeouts, raising the same httpx
        exceptions (with no request attached), without building httpx's request and response
        objects. A ``Content-Encoding`` is undone as httpx would (``httpx.DecodingError`` if it
        does not decode)."""
        if self._closed:
            raise RuntimeError("the transport has been closed")
        pool = self._pools.get(head.origin) or self._origin_pool(head.url, None)
        conn = await pool.acquire_direct(pool_timeout, connect_timeout)
        try:
            reply = conn.expect(head.close, head.head_only)
            conn.transport.write(b"%s%d\r\n\r\n%s" % (head.data, len(content), content))
            if conn.paused:  # the kernel did not take it all, and more waits to be sent
                try:
                    async with asyncio.timeout(write_timeout):
                        await conn.drained()
                except TimeoutError:
                    raise httpx.WriteTimeout(
                        f"writing the request took over {write_timeout} s"
                    ) from None
            if read_timeout is None:
                status, reason, headers, keep, body = await reply
            else:
                try:
                    async with asyncio.timeout(read_timeout):
                        status, reason, headers, keep, body = await reply
                except TimeoutError:
                    raise httpx.ReadTimeout(
                        f"no complete response within {read_timeout} s"
                    ) from None
        except BaseException:
            pool.release(conn, reusable=False)
            raise
        pool.release(conn, keep)
        for name, _ in headers:
            if name.lower() == b"content-encoding":  # httpx's decoders undo it
                body = httpx.Response(status, headers=headers, content=body).content
                break
        return Reply(status, reason, headers, body)


class RequestHead:
    """A request's line and headers, encoded once for many :meth:`FastTransport.exchange`
    calls: ``method`` on ``url`` (its path and query as the target) with ``headers`` in order,
    then ``Content-Length`` (added per request: ``headers`` must not hold it, nor a
    ``Transfer-Encoding``). A CR or LF inside a name or value is refused
    (``httpx.LocalProtocolError``), as for any request."""

    __slots__ = ("close", "data", "head_only", "origin", "url")

    def __init__(self, method: str, url: httpx.URL, headers: Sequence[tuple[bytes, bytes]]):
        for name, _ in headers:
            if name.lower() in (b"content-length", b"transfer-encoding"):
                raise ValueError(f"{name.decode('ascii', 'replace')} is added per request")
        self.url = url
        scheme = url.scheme
        self.origin = (scheme, url.host, url.port or _DEFAULT_PORTS.get(scheme, 0))
        self.head_only = method == "HEAD"
        self.close = any(
            name.lower() == b"connection" and b"close" in value.lower() for name, value in headers
        )
        self.data = _encode_head(method, url.raw_path, [*headers, (b"Content-Length", b"")], None)
        self.data = self.data[: -len(b"\r\n\r\n")]  # the length goes here, per request


class Reply:
    """A whole response read by :meth:`FastTransport.exchange`, with what a caller reads of an
    ``httpx.Response``: ``status_code``, ``reason_phrase``, ``headers`` (built when asked for)
    and ``content`` (decoded)."""

    __slots__ = ("content", "raw_headers", "reason", "status_code")

    def __init__(
        self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]], content: bytes
    ) -> None:
        self.status_code = status
        self.reason = reason
        self.raw_headers = headers
        self.content = content

    @property
    def headers(self) -> httpx.Headers:
        return httpx.Headers(self.raw_headers)

    @property
    def reason_phrase(self) -> str:
        return self.reason.decode("ascii", errors="ignore")


def _read_response(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    request: httpx.Request,
    extensions: dict[str, Any],
) -> httpx.Response:
    """The response with its body read, as ``httpx.Response(content=body)`` makes it (and the
    client's ``aread`` then finds it): a body with no ``Content-Encoding`` to undo is set as
    read directly, without a pass through httpx's decoder and chunker (a tenth of the client's
    CPU per request); an encoded one goes through them, as before."""
    for name, _ in headers:
        if name.lower() == b"content-encoding":
            return httpx.Response(
                status, headers=headers, content=body, request=request, extensions=extensions
            )
    response = httpx.Response(
        status,
        headers=headers,
        stream=httpx.ByteStream(body),
        request=request,
        extensions=extensions,
    )
    # What Response.read() leaves behind once it has iterated the stream.
    response._content = body
    response.is_stream_consumed = True
    response.is_closed = True
    return response


def _encode_head(
    method: str,
    target: bytes,
    headers: Sequence[tuple[bytes, bytes]],
    request: httpx.Request | None,
) -> bytes:
    """The request line and headers, up to the blank line that ends them."""
    parts = [method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in headers:
        parts += [name, b": ", value, b"\r\n"]
    parts.append(b"\r\n")
    head = b"".join(parts)
    lines = len(headers) + 2
    if head.count(b"\n") != lines or head.count(b"\r") != lines:
        raise httpx.LocalProtocolError(
            "a CR or LF inside the request line or a header", request=request
        )
    return head


async def _send(conn: _Connection, request: httpx.Request, timeout: float | None) -> bool:
    """Write the request; True if it asks to close the connection afterwards."""
    raw_headers = request.headers.raw
    chunked = close = False
    for name, value in raw_headers:
        lname = name.lower()
        if lname == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lname == b"connection":
            close = b"close" in value.lower()
    head = _encode_head(request.method, request.url.raw_path, raw_headers, request)
    writer = conn.writer
    try:
        content: bytes | None = request.content
    except httpx.RequestNotRead:
        content = None
    try:
        if content is not None:
            writer.write(head + content)
            if writer.transport.get_write_buffer_size():  # the kernel did not take it all
                async with asyncio.timeout(timeout):
                    await writer.drain()
            return close
        async with asyncio.timeout(timeout):
            writer.write(head)
            assert isinstance(request.stream, httpx.AsyncByteStream)
            async for chunk in request.stream:
                if chunk:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    await writer.drain()
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
        return close
    except TimeoutError:
        raise httpx.WriteTimeout(
            f"writing the request took over {timeout} s", request=request
        ) from None
    except OSError as exc:
        raise httpx.WriteError(f"connection failed while sending: {exc}", request=request) from exc


async def _receive(
    conn: _Connection,
    request: httpx.Request | None,
    timeout: float | None,
    close_requested: bool,
    head_only: bool,
) -> tuple[int, bytes, list[tuple[bytes, bytes]], int, int, bool, bytes | None]:
    """Read the response head and, if it is small and framed by Content-Length, the body (one
    read timeout for both). Returns status, reason, headers, body framing (mode, length),
    whether the connection is reusable after the body, and the body if read."""
    reader = conn.reader
    got_head = False
    try:
        async with asyncio.timeout(timeout):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                status, reason, version, headers = _parse_head(head, request)
                if status >= 200 or status == 101:
                    break  # skip 1xx informational heads (100 Continue, 103 Early Hints)
            got_head = True
            mode, length, keep = _framing(
                request, status, version, headers, close_requested, head_only
            )
            body = None
            if mode == _LENGTH and length <= _EAGER_BODY:
                body = await reader.readexactly(length) if length else b""
    except TimeoutError:
        raise httpx.ReadTimeout(
            f"no complete response within {timeout} s", request=request
        ) from None
    except asyncio.IncompleteReadError as exc:
        if got_head:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body", request=request
            ) from None
        if not exc.partial:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        raise httpx.RemoteProtocolError(
            "Server disconnected in the middle of the response head.", request=request
        ) from None
    except asyncio.LimitOverrunError:
        raise httpx.RemoteProtocolError(
            f"response head larger than {_HEAD_LIMIT} bytes", request=request
        ) from None
    except OSError as exc:
        raise httpx.ReadError(f"connection failed while reading: {exc}", request=request) from exc
    return status, reason, headers, mode, length, keep, body


def _framing(
    request: httpx.Request | None,
    status: int,
    version: bytes,
    headers: list[tuple[bytes, bytes]],
    close_requested: bool,
    head_only: bool,
) -> tuple[int, int, bool]:
    """Body framing (RFC 9112 §6.3) and keep-alive: (mode, length, reusable)."""
    keep = version == b"HTTP/1.1" and not close_requested
    length: int | None = None
    chunked = False
    has_te = False
    for name, value in headers:
        lname = name.lower()
        if lname == b"content-length":
            if not value.isdigit() or (length is not None and int(value) != length):
                raise httpx.RemoteProtocolError(f"bad Content-Length {value!r}", request=request)
            length = int(value)
        elif lname == b"transfer-encoding":
            has_te = True
            chunked = value.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
        elif lname == b"connection":
            tokens = {t.strip() for t in value.lower().split(b",")}
            if b"close" in tokens:
                keep = False
            elif b"keep-alive" in tokens and version == b"HTTP/1.0" and not close_requested:
                keep = True
    if head_only or status in _NO_BODY_STATUS or status < 200:
        return _LENGTH, 0, keep and status != 101
    if has_te:  # Transfer-Encoding wins over Content-Length
        return (_CHUNKED, 0, keep) if chunked else (_UNTIL_CLOSE, 0, False)
    if length is not None:
        return _LENGTH, length, keep
    return _UNTIL_CLOSE, 0, False


def _parse_head(
    head: bytes, request: httpx.Request | None
) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if (
        len(parts) < 2
        or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0")
        or len(parts[1]) != 3
        or not parts[1].isdigit()
    ):
        raise httpx.RemoteProtocolError(f"bad status line {lines[0][:80]!r}", request=request)
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name[-1:] in (b" ", b"\t") or line[:1] in (b" ", b"\t"):
            raise httpx.RemoteProtocolError(f"bad header line {line[:80]!r}", request=request)
        headers.append((name, value.strip(b" \t")))
    reason = parts[2] if len(parts) == 3 else b""
    return int(parts[1]), reason, parts[0], headers


async def _read_exactly(
    conn: _Connection, request: httpx.Request | None, n: int, timeout: float | None
) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await conn.reader.readexactly(n)
    except TimeoutError:
        raise httpx.ReadTimeout(f"body not received within {timeout} s", request=request) from None
    except asyncio.IncompleteReadError:
        raise httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body", request=request
        ) from None
    except OSError as exc:
        raise httpx.ReadError(f"connection failed while reading: {exc}", request=request) from exc


async def _read_line(
    conn: _Connection, request: httpx.Request | None, timeout: float | None
) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await conn.reader.readuntil(b"\r\n")
    except TimeoutError:
        raise httpx.ReadTimeout(f"body not received within {timeout} s", request=request) from None
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body (incomplete chunked "
            "read)",
            request=request,
        ) from None
    except OSError as exc:
        raise httpx.ReadError(f"connection failed while reading: {exc}", request=request) from exc


class _BodyStream(httpx.AsyncByteStream):
    """A response body read from the connection as httpx iterates; frees the connection on
    close (back to the pool only if the body was read to its end)."""

    def __init__(
        self,
        pool: _Pool,
        conn: _Connection,
        request: httpx.Request | None,
        mode: int,
        length: int,
        keep: bool,
        timeout: float | None,
    ) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._request = request
        self._mode = mode
        self._length = length
        self._keep = keep
        self._timeout = timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            raise httpx.StreamClosed()
        request, timeout = self._request, self._timeout
        if self._mode == _LENGTH:
            remaining = self._length
            while remaining:
                chunk = await _read_exactly(conn, request, min(remaining, _READ_SIZE), timeout)
                remaining -= len(chunk)
                yield chunk
        elif self._mode == _CHUNKED:
            while True:
                line = await _read_line(conn, request, timeout)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise httpx.RemoteProtocolError(
                        f"bad chunk size line {line[:40]!r}", request=request
                    ) from None
                if size == 0:
                    while await _read_line(conn, request, timeout) != b"\r\n":
                        pass  # trailers are dropped
                    break
                data = await _read_exactly(conn, request, size + 2, timeout)
                if data[-2:] != b"\r\n":
                    raise httpx.RemoteProtocolError("bad chunk terminator", request=request)
                yield data[:-2]
        else:
            while True:
                try:
                    async with asyncio.timeout(timeout):
                        data = await conn.reader.read(_READ_SIZE)
                except TimeoutError:
                    raise httpx.ReadTimeout(
                        f"body not received within {timeout} s", request=request
                    ) from None
                except OSError as exc:
                    raise httpx.ReadError(
                        f"connection failed while reading: {exc}", request=request
                    ) from exc
                if not data:
                    break
                yield data
        self._complete = True

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, self._keep and self._complete)
