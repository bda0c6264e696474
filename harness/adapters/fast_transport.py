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
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["FastTransport"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_EAGER_BODY = 256 * 1024
"""Bodies with a Content-Length up to this many bytes are read before the response is returned."""
_READ_SIZE = 64 * 1024
_HEAD_LIMIT = 64 * 1024
_NO_BODY_STATUS = frozenset({204, 304})

_LENGTH, _CHUNKED, _UNTIL_CLOSE = 0, 1, 2


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
        self, request: httpx.Request, pool_timeout: float | None, connect_timeout: float | None
    ) -> _Connection:
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
        try:
            now = time.monotonic()
            while self.idle:
                conn = self.idle.pop()
                if conn.usable(now, self.expiry):
                    return conn
                conn.abort()
            return await self._connect(request, connect_timeout)
        except BaseException:
            self.slots.release()
            raise

    async def _connect(self, request: httpx.Request, timeout: float | None) -> _Connection:
        server_hostname = None
        if self.ssl_context is not None:
            sni = request.extensions.get("sni_hostname")
            server_hostname = sni.decode() if isinstance(sni, bytes) else (sni or self.host)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=server_hostname,
                    limit=_HEAD_LIMIT,
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
        return _Connection(reader, writer)

    def release(self, conn: _Connection, reusable: bool) -> None:
        if reusable and not self.closed:
            now = time.monotonic()
            conn.idle_since = now
            self.idle.append(conn)
            # The oldest idle connection sits at the bottom of the LIFO: drop it once expired.
            if len(self.idle) > 1 and now - self.idle[0].idle_since >= self.expiry:
                self.idle.pop(0).abort()
        else:
            conn.abort()
        self.slots.release()

    def close(self) -> None:
        self.closed = True
        for conn in self.idle:
            conn.writer.close()
        self.idle.clear()


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
        url = request.url
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
                conn, request, read_timeout, close_requested
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


async def _send(conn: _Connection, request: httpx.Request, timeout: float | None) -> bool:
    """Write the request; True if it asks to close the connection afterwards."""
    raw_headers = request.headers.raw
    parts = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    chunked = close = False
    for name, value in raw_headers:
        lname = name.lower()
        if lname == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lname == b"connection":
            close = b"close" in value.lower()
        parts += [name, b": ", value, b"\r\n"]
    parts.append(b"\r\n")
    head = b"".join(parts)
    lines = len(raw_headers) + 2
    if head.count(b"\n") != lines or head.count(b"\r") != lines:
        raise httpx.LocalProtocolError(
            "a CR or LF inside the request line or a header", request=request
        )
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
    conn: _Connection, request: httpx.Request, timeout: float | None, close_requested: bool
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
            mode, length, keep = _framing(request, status, version, headers, close_requested)
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
    request: httpx.Request,
    status: int,
    version: bytes,
    headers: list[tuple[bytes, bytes]],
    close_requested: bool,
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
    if request.method == "HEAD" or status in _NO_BODY_STATUS or status < 200:
        return _LENGTH, 0, keep and status != 101
    if has_te:  # Transfer-Encoding wins over Content-Length
        return (_CHUNKED, 0, keep) if chunked else (_UNTIL_CLOSE, 0, False)
    if length is not None:
        return _LENGTH, length, keep
    return _UNTIL_CLOSE, 0, False


def _parse_head(
    head: bytes, request: httpx.Request
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
    conn: _Connection, request: httpx.Request, n: int, timeout: float | None
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


async def _read_line(conn: _Connection, request: httpx.Request, timeout: float | None) -> bytes:
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
        request: httpx.Request,
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
