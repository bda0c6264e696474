"""Agent adapters: how the harness talks to the reasoners it evaluates."""

from harness.adapters.fast_transport import FastTransport
from harness.adapters.openai import (
    RETRY_AFTER_CAP,
    ChatError,
    ChatResult,
    OpenAIChat,
    RateLimiter,
    parse_retry_after,
)
from harness.adapters.transports import TRANSPORT_KINDS, default_transport, make_transport

__all__ = [
    "RETRY_AFTER_CAP",
    "TRANSPORT_KINDS",
    "ChatError",
    "ChatResult",
    "FastTransport",
    "OpenAIChat",
    "RateLimiter",
    "default_transport",
    "make_transport",
    "parse_retry_after",
]
