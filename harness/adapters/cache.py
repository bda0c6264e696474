"""The response cache, as a wrapper around any chat backend.

The key is the hash of the full request (endpoint, model, messages, tools, response format,
temperature, token cap), so re-running or resuming a run never re-queries what was already
answered. It is a contract: a changed key would make every stored answer unreachable (the tests
pin two keys). Reads happen off the event loop, and so do writes.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from harness.agent.agents import ChatBackend, ChatReply
from mindledger.canonical import content_hash

__all__ = ["CachedBackend", "ResponseStore"]


class ResponseStore(Protocol):
    """Where cached replies live (:class:`ledger.store.Store`)."""

    def cache_get(self, key: str) -> dict[str, Any] | None: ...

    def cache_put(self, key: str, response: dict[str, Any]) -> None: ...


class CachedBackend:
    """``inner`` with the response cache in front: a request answered before (to the same
    ``endpoint`` and ``model``) is answered from ``store`` with ``cached=True``, no attempts and
    no latency; any other goes to ``inner`` and its reply is stored. ``variant`` (an agent's
    extra headers and body fields) joins the key when given, so that an ablation variant that
    differs only there is never answered with the full agent's replies; without it the key is
    as before."""

    def __init__(
        self,
        inner: ChatBackend,
        store: ResponseStore,
        *,
        endpoint: str,
        model: str | None,
        variant: dict[str, Any] | None = None,
    ):
        self.inner = inner
        self.store = store
        self.endpoint = endpoint
        self.model = model
        self.variant = variant

    def key(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int,
    ) -> str:
        """The cache key of one request."""
        request = {
            "endpoint": self.endpoint,
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "response_format": response_format,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if self.variant:
            request["variant"] = self.variant
        return content_hash(request)

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        key = self.key(
            messages,
            tools=tools,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        hit = await asyncio.to_thread(self.store.cache_get, key)
        if hit is not None:
            return ChatReply(
                message=hit["message"],
                finish_reason=hit.get("finish_reason"),
                model=hit.get("model"),
                tokens_in=hit.get("tokens_in", 0),
                tokens_out=hit.get("tokens_out", 0),
                latency_s=0.0,
                attempts=0,
                cached=True,
            )
        reply = await self.inner.chat(
            messages,
            tools=tools,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        await asyncio.to_thread(
            self.store.cache_put,
            key,
            {
                "message": reply.message,
                "finish_reason": reply.finish_reason,
                "model": reply.model,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
            },
        )
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()
