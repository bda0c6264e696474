"""Which httpx transport an adapter's ``httpx.AsyncClient`` gets.

Measured side by side by ``bench/bench_http.py`` (2,000 calls, 50 ms server, 64 in flight):
:class:`~harness.adapters.fast_transport.FastTransport` is the default; httpx's own pool is kept
for proxies (which FastTransport does not speak) and both it and httpx-aiohttp's
``AiohttpTransport`` remain selectable for comparison (the latter needs the ``bench`` extra:
``pip install -e ".[bench]"``). On FastTransport the ``openai`` adapter sends by its direct path
(:meth:`~harness.adapters.fast_transport.FastTransport.exchange`), not through httpx's client.
"""

from __future__ import annotations

import urllib.request

import httpx

from harness.adapters.fast_transport import FastTransport
from mindledger.errors import UserError

__all__ = ["TRANSPORT_KINDS", "default_transport", "make_transport"]

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
    """The fastest correct transport for ``base_url``: FastTransport, or httpx's own pool through
    the proxy when the environment sets one for that URL."""
    proxy = env_proxy(httpx.URL(base_url))
    if proxy is not None:
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        return httpx.AsyncHTTPTransport(limits=limits, proxy=proxy)
    return make_transport("fast", max_connections=max_connections)
