"""An OpenAI-compatible endpoint as a chat backend: :class:`OpenAIBackend` turns the results of
one :class:`~harness.adapters.openai.OpenAIChat` client into the agents'
:class:`~harness.agent.agents.ChatReply`."""

from __future__ import annotations

from typing import Any

from harness.adapters.openai import OpenAIChat
from harness.agent.agents import ChatReply

__all__ = ["OpenAIBackend"]


class OpenAIBackend:
    """A :class:`~harness.agent.agents.ChatBackend` over one :class:`OpenAIChat` client (which holds
    the endpoint, model, key, limits and retries); closing the backend closes the client."""

    def __init__(self, client: OpenAIChat):
        self.client = client

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.client!r})"

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        result = await self.client.chat(
            messages,
            tools=tools,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        return ChatReply(
            message=result.message,  # the result (and the raw reply holding it) ends here
            finish_reason=result.finish_reason,
            model=result.model,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            latency_s=result.latency_s,
            attempts=result.attempts,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
