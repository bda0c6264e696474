"""One chat backend over several interchangeable ones: the embedded model's server processes
(:class:`harness.model.local_model.LocalModelPool`).

Each conversation goes to one server: the first request of a trial goes to the server with the
fewest requests in flight, and every later turn of the same conversation (same opening
messages) to the same server, whose prompt cache already holds the conversation so far — a
preliminary scaffold step and its answer turn share some 400 tokens of prompt, which a
135M model on one CPU thread reads in about three seconds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from harness.agent.agents import ChatBackend, ChatReply
from mindledger.canonical import content_hash

__all__ = ["BalancedBackend"]


class BalancedBackend:
    """A :class:`~harness.agent.agents.ChatBackend` that spreads conversations over ``backends``
    (see the module docstring); closing it closes them all."""

    MAX_REMEMBERED = 4096
    """Conversations whose server is remembered (the oldest are forgotten first)."""

    def __init__(self, backends: Sequence[ChatBackend]):
        if not backends:
            raise ValueError("a balanced backend needs at least one backend")
        self.backends = tuple(backends)
        self.in_flight = [0] * len(self.backends)
        self.sent = [0] * len(self.backends)
        self._home: OrderedDict[str, int] = OrderedDict()

    def __repr__(self) -> str:
        return f"BalancedBackend({list(self.backends)!r})"

    def pick(self, messages: list[dict[str, Any]]) -> int:
        """The index of the backend for a request with ``messages``: the conversation's own,
        else the least busy (fewest in flight, then fewest sent, then first)."""
        key = _conversation(messages)
        home = self._home.get(key)
        if home is not None:
            self._home.move_to_end(key)
            return home
        home = min(range(len(self.backends)), key=lambda i: (self.in_flight[i], self.sent[i], i))
        self._home[key] = home
        if len(self._home) > self.MAX_REMEMBERED:
            self._home.popitem(last=False)
        return home

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        i = self.pick(messages)
        self.in_flight[i] += 1
        self.sent[i] += 1
        try:
            return await self.backends[i].chat(
                messages,
                tools=tools,
                response_format=response_format,
                temperature=temperature,
                max_tokens=max_tokens,
            )
        finally:
            self.in_flight[i] -= 1

    async def aclose(self) -> None:
        for backend in self.backends:
            await backend.aclose()


def _conversation(messages: list[dict[str, Any]]) -> str:
    """What identifies a conversation across its turns: its messages up to and including the
    first user message (the system prompt and the question)."""
    opening: list[Any] = []
    for message in messages:
        opening.append(message)
        if message.get("role") == "user":
            break
    return content_hash(opening)
