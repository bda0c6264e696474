"""Chat backends over HTTP: the ``openai`` and ``local`` adapters, with the response cache.

The cache key is the hash of the full request (endpoint, model, messages, tools, response
format, temperature, token cap), so re-running or resuming a run never re-queries what was
already answered. Reads happen off the event loop; writes are queued.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.adapters.openai import OpenAIChat
from harness.agents import ChatReply
from ledger.store import Store
from mindledger.canonical import content_hash

__all__ = ["OpenAIBackend"]


class OpenAIBackend:
    """An OpenAI-compatible endpoint as a :class:`~harness.agents.ChatBackend`."""

    def __init__(
        self,
        base_url: str,
        model: str | None,
        *,
        api_key: str | None = None,
        concurrency: int = 64,
        rate_limit: float | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        store: Store | None = None,
        transport: Any = None,
        **client_options: Any,
    ):
        self.base_url = base_url
        self.model = model
        self.store = store
        self.client = OpenAIChat(
            base_url,
            model,
            api_key=api_key,
            concurrency=concurrency,
            rate_limit=rate_limit,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            **client_options,
        )

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        key = None
        if self.store is not None:
            key = content_hash(
                {
                    "endpoint": self.base_url,
                    "model": self.model,
                    "messages": messages,
                    "tools": tools,
                    "response_format": response_format,
                    "temperature": temperature,
                    "max_tokens": max_tokens,
                }
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
        result = await self.client.chat(
            messages,
            tools=tools,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        reply = ChatReply(
            message=dict(result.message),
            finish_reason=result.finish_reason,
            model=result.model,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            latency_s=result.latency_s,
            attempts=result.attempts,
        )
        if self.store is not None and key is not None:
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
        await self.client.aclose()
