"""Which httpx transport an adapter's ``httpx.AsyncClient`` gets.

Measured side by side by ``bench/bench_http.py`` (2,000 calls, 50 ms server, 64 in flight):
:class:`~harness.adapters.fast_transport.FastTransport` is the default, also through an
``http://`` proxy set in the environment for an ``http://`` endpoint; httpx's own pool is kept
for the proxies FastTransport does not speak (an ``https://`` endpoint, which needs a CONNECT
tunnel, or a proxy that is not ``http://``), which is logged once per proxy; both it and
httpx-aiohttp's ``AiohttpTransport`` remain selectable for comparison (the latter needs the ``bench`` extra:
``pip install -e ".[bench]"``). On FastTransport the ``openai`` adapter sends by its direct path
(:meth:`~harness.adapters.fast_transport.FastTransport.exchange`), not through httpx's client.
"""

from __future__ import annotations

import logging
import urllib.request

import httpx

from harness.adapters.fast_transport import FastTransport
from mindledger.errors import UserError

__all__ = ["TRANSPORT_KINDS", "default_transport", "make_transport"]

log = logging.getLogger("mindledger.transports")
_told: set[tuple[str, str]] = set()
"""(endpoint scheme, proxy without credentials) already logged as going through httpx's pool."""

TRANSPORT_KINDS = ("fast", "aiohttp", "httpx")
"""fast: FastTransport; aiohttp: httpx-aiohttp's AiohttpTransport; httpx: httpx's own pool."""


def make_transport(kind: str = "fast", *, max_connections: int = 64) -> httpx.AsyncBaseTransport:
    """A transport of the given kind allowing ``max_connections`` open connections."""
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    if kind == "fast":
        return FastTransport(max_connections=max_connections)
    if kind == "aiohttp":
        try:  # only for comparison: an optional dependency, imported when asked for
            from httpx_aiohttp import AiohttpTransport
        except ImportError as exc:
            raise UserError(
                "the aiohttp transport needs httpx-aiohttp, kept only for comparison: "
                'pip install -e ".[bench]"'
            ) from exc
        return AiohttpTransport(limits=limits)
    if kind == "httpx":
        return httpx.AsyncHTTPTransport(limits=limits)
    raise ValueError(f"unknown transport {kind!r} (expected one of {', '.join(TRANSPORT_KINDS)})")


def env_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``…) sets for url."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


def default_transport(base_url: str, *, max_connections: int = 64) -> httpx.AsyncBaseTransport:
    """The fastest correct transport for ``base_url``: FastTransport, through the proxy the
    environment sets for that URL if it is an ``http://`` proxy and an ``http://`` URL; else,
    when a proxy is set, httpx's own pool through it (logged once: slower, see the module
    docstring)."""
    url = httpx.URL(base_url)
    proxy = env_proxy(url)
    if proxy is None:
        return make_transport("fast", max_connections=max_connections)
    proxy_url = httpx.URL(proxy)
    if url.scheme == "http" and proxy_url.scheme == "http" and proxy_url.host:
        return FastTransport(max_connections=max_connections, proxy=proxy_url)
    shown = str(proxy_url.copy_with(username=None, password=None))
    if (url.scheme, shown) not in _told:
        _told.add((url.scheme, shown))
        log.warning(
            "%s:// requests go through httpx's connection pool to the proxy %s (FastTransport "
            "sends only http:// requests through an http:// proxy, without CONNECT): expect "
            "more CPU per request",
            url.scheme,
            shown,
        )
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return httpx.AsyncHTTPTransport(limits=limits, proxy=proxy)
