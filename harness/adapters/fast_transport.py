"""A small, fast HTTP/1.1 transport for httpx on asyncio.

httpx's own connection pool (httpcore) does work per request that grows with the number of
pooled connections, so at the concurrency an evaluation run needs (64 requests in flight) one
``httpx.AsyncClient`` is CPU-bound long before the model endpoint is (see
shared/PERFORMANCE-NOTES.md and ``bench/bench_http.py``). :class:`FastTransport` keeps httpx's API
(it is an ``httpx.AsyncBaseTransport``) and replaces the pool:

* one pool per origin (scheme, host, port) with a hard limit on open connections, a LIFO list of
  idle keep-alive connections, and a keep-alive expiry (4 s, below the 5 s idle timeout of
  common servers, so we rarely reuse a connection the server is closing);
* HTTP/1.1 only, over TCP or TLS (SNI and certificate checks as in httpx); ``http://``
  requests through an ``http://`` proxy, no CONNECT tunnel (so no ``https://`` through a proxy:
  :func:`harness.adapters.transports.default_transport` says what it does then);
* one response parser, :class:`_ResponseParser` (no I/O: fed the bytes as they arrive), used
  by every request: bodies framed by ``Content-Length`` (gathered whole when small, so the
  connection goes back to the pool before httpx sees the response), ``Transfer-Encoding:
  chunked`` (extensions ignored, trailers dropped) or the end of the connection, streamed to
  httpx otherwise (reading pauses while the reader is behind); request bodies of known length
  or chunked; a ``Content-Encoding`` is left to httpx's decoders;
* httpx's timeouts (connect, read, write, pool; the read timeout covers a response's head and a
  small body together) and exception classes: a server that closes the
  connection shows as ``RemoteProtocolError`` (as in httpcore), a reset as ``ReadError``;
* cancellation-safe: a request cancelled at any point closes its connection and frees its slot.

A pooled connection that the server has closed (EOF seen) is discarded, never reused. A request
that fails on a connection is *not* retried here: retries belong to the caller, which counts them.

Each connection is an ``asyncio.Protocol`` (:class:`_Connection`) that hands what it receives to
its parser and wakes the waiting request once, when the response (or the head of one to be
streamed) is in. Beside httpx's interface, :meth:`FastTransport.exchange` is a direct path for a
caller that sends many requests with one head and an in-memory body and reads every response
whole (the ``openai`` adapter): the head is encoded once (:class:`RequestHead`) and no httpx
request or response objects are built (:class:`Reply`); same connections, pools, limits,
timeouts and exceptions. It costs about half the CPU of the same request through
``httpx.AsyncClient`` on this transport (``bench/bench_runner.py``: 0.07 ms a call against
0.15).
"""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

__all__ = ["FastTransport", "Reply", "RequestHead"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_EAGER_BODY = 256 * 1024
"""Bodies with a Content-Length up to this many bytes are read before the response is returned."""
_READ_HIGH = 256 * 1024
"""A streamed body's reader is behind once this many bytes wait: reading pauses."""
_HEAD_LIMIT = 64 * 1024
_NO_BODY_STATUS = frozenset({204, 304})

_LENGTH, _CHUNKED, _UNTIL_CLOSE = 0, 1, 2
_PROXY_KEY = ("proxy", "", 0)
"""Where FastTransport's pools keep the one to its proxy (beside each origin sent through it)."""


_Head = tuple[int, bytes, list[tuple[bytes, bytes]], int, int, bool]
"""status, reason, headers, body framing (mode, length), whether the connection is reusable"""

_Response = tuple[int, bytes, list[tuple[bytes, bytes]], bool, bytes | None]
"""status, reason, headers, whether the connection is reusable, body (None: to be streamed)"""


class _ResponseParser:
    """The one HTTP/1.1 response parser: no I/O, fed the bytes a connection receives
    (``buffer``, with ``eof`` and ``error`` set when the connection ends). :meth:`head` returns
    the final head once it is in (1xx informational heads skipped); :meth:`body` then returns
    the body, whole or as it comes. Both return None while more is needed and raise httpx's
    errors: ``RemoteProtocolError`` for a malformed response or one the server cut short,
    ``ReadError`` once the connection failed (a reset)."""

    __slots__ = (
        "_chunk_left",
        "_chunks",
        "_close_requested",
        "_head_only",
        "_left",
        "_trailers",
        "buffer",
        "eof",
        "error",
        "framing",
    )

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.start(False, False)

    def start(self, close_requested: bool, head_only: bool) -> None:
        """Get ready for the next response, to a request that asked to close the connection
        (``close_requested``) or was a HEAD (``head_only``)."""
        if not self.buffer:  # a fresh one: not holding on to the room a large body took
            self.buffer = bytearray()
        self._close_requested = close_requested
        self._head_only = head_only
        self.framing: _Head | None = None
        self._left = 0  # Content-Length bytes still to come
        self._chunks: list[bytes] = []
        self._chunk_left = -1  # -1: a chunk-size (or trailer) line is next
        self._trailers = False

    def head(self) -> _Head | None:
        """The response's head (and its body's framing) once it is in."""
        buf = self.buffer
        while self.framing is None:
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
                self.framing = (status, reason, headers, mode, length, keep)
                self._left = length
        return self.framing

    def body(self, whole: bool) -> tuple[bytes, bool] | None:
        """After :meth:`head`: (bytes, whether the body is complete), or None if nothing new
        is in. ``whole``: only the whole body, once it is all in; else what has come since
        the last call (whole chunks of a chunked body)."""
        framing = self.framing
        assert framing is not None
        buf = self.buffer
        mode = framing[3]
        if mode == _LENGTH:
            left = self._left
            if len(buf) < left and (whole or not buf):
                self._check_open("peer closed connection without sending complete message body")
                return None
            n = min(left, len(buf))
            data = bytes(buf[:n])
            del buf[:n]
            self._left = left - n
            return data, n == left
        if mode == _CHUNKED:
            done = self._chunked()
            if not (done or (self._chunks and not whole)):
                return None
            data = b"".join(self._chunks)
            self._chunks = []
            return data, done
        # until the connection closes
        if self.error is not None:
            raise httpx.ReadError(f"connection failed while reading: {self.error}")
        if not (self.eof or (buf and not whole)):
            return None
        data = bytes(buf)
        buf.clear()
        return data, self.eof

    def _chunked(self) -> bool:
        """Read the chunks that are in into ``_chunks``; True once the last one and the
        trailers (dropped) are read."""
        buf = self.buffer
        while True:
            if self._chunk_left < 0:  # a chunk-size line, or a trailer line
                end = buf.find(b"\r\n")
                if end < 0 or end + 2 > _HEAD_LIMIT:
                    if end >= 0 or len(buf) > _HEAD_LIMIT:
                        raise httpx.RemoteProtocolError(
                            f"chunk line longer than {_HEAD_LIMIT} bytes"
                        )
                    self._check_open(
                        "peer closed connection without sending complete message body "
                        "(incomplete chunked read)"
                    )
                    return False
                line = bytes(buf[: end + 2])
                del buf[: end + 2]
                if self._trailers:
                    if line == b"\r\n":
                        return True
                    continue  # trailers are dropped
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise httpx.RemoteProtocolError(f"bad chunk size line {line[:40]!r}") from None
                if size < 0:
                    raise httpx.RemoteProtocolError(f"bad chunk size line {line[:40]!r}")
                if size == 0:
                    self._trailers = True
                else:
                    self._chunk_left = size
            else:
                need = self._chunk_left + 2
                if len(buf) < need:
                    self._check_open("peer closed connection without sending complete message body")
                    return False
                if buf[need - 2 : need] != b"\r\n":
                    raise httpx.RemoteProtocolError("bad chunk terminator")
                self._chunks.append(bytes(buf[: need - 2]))
                del buf[:need]
                self._chunk_left = -1

    def _check_open(self, closed: str) -> None:
        """Raise if nothing more can arrive: ReadError after a failure (a reset), else
        RemoteProtocolError saying ``closed``."""
        if self.error is not None:
            raise httpx.ReadError(f"connection failed while reading: {self.error}")
        if self.eof:
            raise httpx.RemoteProtocolError(closed)


class _Connection(asyncio.Protocol):
    """A keep-alive connection: what it receives goes to its :class:`_ResponseParser` as it
    arrives, and the waiting request is woken once, when the response (or, for a body to be
    streamed, its head; then each part of the body) is in."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # connection_made
        self.parser = _ResponseParser()
        self.idle_since = 0.0
        self.paused = False
        self._drained: asyncio.Future[None] | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._eager: int | None = None
        self._streaming = False
        self._reading_paused = False

    def usable(self, now: float, expiry: float) -> bool:
        """Not closed by either side, nothing unasked-for received, not idle too long."""
        p = self.parser
        return (
            not p.eof
            and not p.buffer
            and not self.transport.is_closing()
            and now - self.idle_since < expiry
        )

    def abort(self) -> None:
        self.transport.abort()

    def close(self) -> None:
        self.transport.close()

    def expect(
        self, close_requested: bool, head_only: bool, eager: int | None
    ) -> asyncio.Future[_Response]:
        """Get ready for the response to the request about to be sent; it comes in the
        future returned (or an httpx error), with its whole body if ``eager`` is None or the
        body is framed by a Content-Length of at most ``eager`` bytes, else with None, and the
        body is then read by :meth:`read_body`."""
        self.parser.start(close_requested, head_only)
        self._eager = eager
        self._streaming = False
        self._waiter = reply = asyncio.get_running_loop().create_future()
        return reply

    async def read_body(
        self, timeout: float | None, request: httpx.Request | None
    ) -> tuple[bytes, bool]:
        """The part of a streamed body that has come since the last call, and whether the
        body is complete."""
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        self._advance()
        try:
            async with asyncio.timeout(timeout):
                got: tuple[bytes, bool] = await waiter
        except TimeoutError:
            raise httpx.ReadTimeout(
                f"body not received within {timeout} s", request=request
            ) from None
        return got

    async def drained(self) -> None:
        """Return once the transport takes writes again (raise if the connection is lost)."""
        while self.paused:
            p = self.parser
            if p.error is not None or p.eof:
                raise httpx.WriteError(
                    f"connection failed while sending: {p.error or 'Connection lost'}"
                )
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.parser.buffer
        buf += data
        if self._waiter is not None:
            self._advance()
        elif self._streaming and len(buf) > _READ_HIGH and not self._reading_paused:
            self._reading_paused = True  # the stream's reader is behind
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.parser.eof = True
        if self._waiter is not None:
            self._advance()
        return False  # close the transport: nothing more can be read

    def connection_lost(self, exc: Exception | None) -> None:
        self.parser.eof = True
        if exc is not None:
            self.parser.error = exc
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._waiter is not None:
            self._advance()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- reading the response

    def _advance(self) -> None:
        waiter = self._waiter
        assert waiter is not None
        if waiter.done():  # its request was cancelled
            self._waiter = None
            return
        try:
            got = self._step()
        except Exception as exc:
            self._waiter = None
            if not isinstance(exc, httpx.HTTPError):  # a bug here must not hang the request
                exc = httpx.RemoteProtocolError(f"unreadable response ({exc!r})")
            waiter.set_exception(exc)
            return
        if got is not None:
            self._waiter = None
            waiter.set_result(got)
        # the reader caught up, or is waiting for more than is held (a chunk larger than that)
        if self._reading_paused and (got is None or len(self.parser.buffer) <= _READ_HIGH):
            self._reading_paused = False
            self.transport.resume_reading()

    def _step(self) -> _Response | tuple[bytes, bool] | None:
        parser = self.parser
        if self._streaming:
            return parser.body(whole=False)
        head = parser.head()
        if head is None:
            return None
        status, reason, headers, mode, length, keep = head
        eager = self._eager
        if eager is not None and (mode != _LENGTH or length > eager):
            self._streaming = True
            return status, reason, headers, keep, None
        body = parser.body(whole=True)
        return None if body is None else (status, reason, headers, keep, body[0])


class _Pool:
    """Connections to one origin: at most ``limit`` open, idle ones kept for reuse."""

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
        self.closed = False

    async def acquire(
        self,
        request: httpx.Request | None,
        pool_timeout: float | None,
        connect_timeout: float | None,
    ) -> _Connection:
        """A connection, reused or new."""
        await self._slot(request, pool_timeout)
        try:
            conn = self._reuse()
            if conn is None:
                conn = await self._open(request, connect_timeout)
            return conn
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

    def _reuse(self) -> _Connection | None:
        now = time.monotonic()
        idle = self.idle
        while idle:
            conn = idle.pop()
            if conn.usable(now, self.expiry):
                return conn
            conn.abort()
        return None

    async def _open(self, request: httpx.Request | None, timeout: float | None) -> _Connection:
        server_hostname = None
        if self.ssl_context is not None:
            sni = None if request is None else request.extensions.get("sni_hostname")
            server_hostname = sni.decode() if isinstance(sni, bytes) else (sni or self.host)
        try:
            async with asyncio.timeout(timeout):
                _, conn = await asyncio.get_running_loop().create_connection(
                    _Connection,
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
                f"cannot connect to {self.host}:{self.port}: {_connect_reason(exc)}",
                request=request,
            ) from exc
        return conn

    def release(self, conn: _Connection, reusable: bool) -> None:
        if reusable and not self.closed:
            idle = self.idle
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
        for conn in self.idle:
            conn.close()
        self.idle.clear()


class FastTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 keep-alive transport for ``httpx.AsyncClient`` on asyncio.

    ``max_connections`` limits open connections *per origin*; ``keepalive_expiry`` is how long
    an idle connection is kept; ``verify`` is an ``ssl.SSLContext`` or a bool, as in httpx
    (True: ``SSL_CERT_FILE``/``SSL_CERT_DIR`` if set, else certifi's CA bundle). ``proxy``, an
    ``http://`` URL (with ``user:password@`` for Basic proxy authentication), sends every
    request to that proxy with its absolute URL as the target; only ``http://`` URLs can go
    through it (an ``https://`` one would need a CONNECT tunnel, which is not spoken here:
    ``httpx.UnsupportedProtocol``).
    """

    def __init__(
        self,
        *,
        max_connections: int = 100,
        keepalive_expiry: float = 4.0,
        verify: ssl.SSLContext | bool = True,
        proxy: str | httpx.URL | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self._proxy: httpx.URL | None = None
        self._proxy_headers: list[tuple[bytes, bytes]] | None = None  # added for the proxy
        if proxy is not None:
            self._proxy_headers = []
            url = httpx.URL(proxy)
            if url.scheme != "http" or not url.host:
                raise ValueError("FastTransport's proxy must be an http:// URL with a host")
            if url.userinfo:
                auth = base64.b64encode(f"{url.username}:{url.password or ''}".encode())
                self._proxy_headers.append((b"Proxy-Authorization", b"Basic " + auth))
            self._proxy = url.copy_with(username=None, password=None)
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
        if pool is not None:
            return pool
        if self._proxy is None:
            ctx = self._ssl() if scheme == "https" else None
            pool = _Pool(scheme, url.host, port, self.max_connections, self.keepalive_expiry, ctx)
        elif scheme != "http":
            raise httpx.UnsupportedProtocol(
                "FastTransport sends only http:// requests through a proxy (an https:// one "
                "needs a CONNECT tunnel)",
                request=request,
            )
        else:  # one pool of connections to the proxy, for every origin
            pool = self._pools.get(_PROXY_KEY)
            if pool is None:
                proxy = self._proxy
                proxy_port = proxy.port or _DEFAULT_PORTS["http"]
                pool = _Pool(
                    "http",
                    proxy.host,
                    proxy_port,
                    self.max_connections,
                    self.keepalive_expiry,
                    None,
                )
                self._pools[_PROXY_KEY] = pool
        self._pools[key] = pool
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport has been closed")
        pool = self._pool(request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read")
        conn = await pool.acquire(request, timeouts.get("pool"), timeouts.get("connect"))
        close_requested = False
        for name, value in request.headers.raw:
            if name.lower() == b"connection" and b"close" in value.lower():
                close_requested = True
        reply = conn.expect(close_requested, request.method == "HEAD", _EAGER_BODY)
        try:
            await _send(conn, request, timeouts.get("write"), self._proxy_headers)
            try:
                async with asyncio.timeout(read_timeout):
                    status, reason, headers, keep, body = await reply
            except TimeoutError:
                raise httpx.ReadTimeout(
                    f"no complete response within {read_timeout} s", request=request
                ) from None
        except BaseException as exc:
            _forget(reply)
            pool.release(conn, reusable=False)
            if isinstance(exc, httpx.RequestError) and exc._request is None:
                exc.request = request
            raise
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1", "reason_phrase": reason}
        if body is not None:
            pool.release(conn, keep)
            return _read_response(status, headers, body, request, extensions)
        stream = _BodyStream(pool, conn, request, keep, read_timeout)
        return httpx.Response(
            status, headers=headers, stream=stream, request=request, extensions=extensions
        )

    async def aclose(self) -> None:
        self._closed = True
        for pool in {id(pool): pool for pool in self._pools.values()}.values():
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
        conn = await pool.acquire(None, pool_timeout, connect_timeout)
        reply = conn.expect(head.close, head.head_only, None)
        try:
            data = head.data if self._proxy_headers is None else head.via(self._proxy_headers)
            conn.transport.write(b"%s%d\r\n\r\n%s" % (data, len(content), content))
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
            _forget(reply)
            pool.release(conn, reusable=False)
            raise
        pool.release(conn, keep)
        assert body is not None  # expected whole (eager None)
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

    __slots__ = ("_headers", "_method", "_via", "close", "data", "head_only", "origin", "url")

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
        self._method = method
        self._headers = [*headers, (b"Content-Length", b"")]
        self.data = _encode_head(method, url.raw_path, self._headers, None)
        self.data = self.data[: -len(b"\r\n\r\n")]  # the length goes here, per request
        self._via: tuple[list[tuple[bytes, bytes]], bytes] | None = None

    def via(self, proxy_headers: list[tuple[bytes, bytes]]) -> bytes:
        """``data`` for a proxy: the absolute URL as the target, ``proxy_headers`` before
        ``Content-Length`` (encoded once per list of proxy headers)."""
        if self._via is None or self._via[0] is not proxy_headers:
            target = _absolute_target(self.url)
            headers = [*self._headers[:-1], *proxy_headers, self._headers[-1]]
            data = _encode_head(self._method, target, headers, None)[: -len(b"\r\n\r\n")]
            self._via = (proxy_headers, data)
        return self._via[1]


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


async def _send(
    conn: _Connection,
    request: httpx.Request,
    timeout: float | None,
    proxy_headers: list[tuple[bytes, bytes]] | None,
) -> None:
    """Write the request (to a proxy if ``proxy_headers`` is not None: its target the
    absolute URL, those headers added)."""
    raw_headers = request.headers.raw
    chunked = False
    for name, value in raw_headers:
        if name.lower() == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    url = request.url
    if proxy_headers is None:
        head = _encode_head(request.method, url.raw_path, raw_headers, request)
    else:
        target = _absolute_target(url)
        head = _encode_head(request.method, target, [*raw_headers, *proxy_headers], request)
    write = conn.transport.write
    try:
        content: bytes | None = request.content
    except httpx.RequestNotRead:
        content = None
    try:
        if content is not None:
            write(head + content)
            if conn.paused:  # the kernel did not take it all
                async with asyncio.timeout(timeout):
                    await conn.drained()
            return
        async with asyncio.timeout(timeout):
            write(head)
            assert isinstance(request.stream, httpx.AsyncByteStream)
            async for chunk in request.stream:
                if chunk:
                    write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    await conn.drained()
            if chunked:
                write(b"0\r\n\r\n")
            await conn.drained()
    except TimeoutError:
        raise httpx.WriteTimeout(
            f"writing the request took over {timeout} s", request=request
        ) from None


def _absolute_target(url: httpx.URL) -> bytes:
    """The request target in absolute form, as a proxy is sent it (RFC 9112 §3.2.2)."""
    return b"%s://%s%s" % (url.raw_scheme, url.netloc, url.raw_path)


def _forget(reply: asyncio.Future[Any]) -> None:
    """Drop a reply no one will wait for (its error, if any, seen)."""
    if reply.done():
        if not reply.cancelled():
            reply.exception()
    else:
        reply.cancel()


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


class _BodyStream(httpx.AsyncByteStream):
    """A response body read from the connection as httpx iterates; frees the connection on
    close (back to the pool only if the body was read to its end)."""

    def __init__(
        self,
        pool: _Pool,
        conn: _Connection,
        request: httpx.Request,
        keep: bool,
        timeout: float | None,
    ) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._request = request
        self._keep = keep
        self._timeout = timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            raise httpx.StreamClosed()
        request, timeout = self._request, self._timeout
        done = False
        while not done:
            try:
                data, done = await conn.read_body(timeout, request)
            except httpx.RequestError as exc:
                if exc._request is None:
                    exc.request = request
                raise
            if data:
                yield data
        self._complete = True

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, self._keep and self._complete)


def _connect_reason(exc: BaseException) -> str:
    """Why a connection failed, for a person: ``connection refused (nothing is listening
    there: is the server running?)`` rather than ``[Errno 111] Connect call failed ('127.0.0.1',
    9)``; other errors as they read."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing is listening there: is the server running?)"
    return str(exc) or type(exc).__name__
