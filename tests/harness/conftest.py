"""Fixtures the harness tests share (the database fixtures are in ``tests/conftest.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

Serve = Callable[[list[bytes]], Awaitable[str]]
"""Start a canned server on the replies given; its base URL."""


@pytest.fixture
async def canned() -> AsyncIterator[Serve]:
    """A server answering each request on a connection with the next canned reply (byte for
    byte), then closing it; ``canned.heads`` holds the request heads it read."""
    servers: list[asyncio.Server] = []
    heads: list[bytes] = []

    async def start(replies: list[bytes]) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                for reply in replies:
                    head = await reader.readuntil(b"\r\n\r\n")
                    heads.append(head)
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            await reader.readexactly(int(line.split(b":")[1]))
                    writer.write(reply)
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    start.heads = heads  # type: ignore[attr-defined]
    yield start
    for server in servers:
        server.close()
        await server.wait_closed()
