"""Agent adapters: how the harness talks to the reasoners it evaluates.

The kinds of agent (``openai``, ``local``, ``command``, ``reference``) are in :data:`KINDS`,
one module each; :func:`build_agent` turns an :class:`~harness.config.settings.AgentConfig` into the
agent of its kind. Chat backends: :class:`OpenAIBackend` over an :class:`OpenAIChat` client, and
:class:`CachedBackend`, the response cache in front of any backend.
"""

from harness.adapters.cache import CachedBackend, ResponseStore
from harness.adapters.chat import OpenAIBackend
from harness.adapters.fast_transport import FastTransport
from harness.adapters.kinds import AdapterKind, Agent, BuildContext
from harness.adapters.openai import (
    RETRY_AFTER_CAP,
    ChatError,
    ChatPolicy,
    ChatResult,
    OpenAIChat,
    RateLimiter,
    parse_retry_after,
)
from harness.adapters.registry import KINDS, adapter_kind, build_agent
from harness.adapters.transports import TRANSPORT_KINDS, default_transport, make_transport

__all__ = [
    "KINDS",
    "RETRY_AFTER_CAP",
    "TRANSPORT_KINDS",
    "AdapterKind",
    "Agent",
    "BuildContext",
    "CachedBackend",
    "ChatError",
    "ChatPolicy",
    "ChatResult",
    "FastTransport",
    "OpenAIBackend",
    "OpenAIChat",
    "RateLimiter",
    "ResponseStore",
    "adapter_kind",
    "build_agent",
    "default_transport",
    "make_transport",
    "parse_retry_after",
]
