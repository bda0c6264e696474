"""Chat backends over HTTP, where callers have always found them: :class:`OpenAIBackend` (an
:class:`~harness.adapters.openai.OpenAIChat` client as a chat backend) and
:class:`CachedBackend` (the response cache in front of any backend). Both live in
:mod:`harness.adapters`."""

from __future__ import annotations

from harness.adapters.cache import CachedBackend
from harness.adapters.chat import OpenAIBackend

__all__ = ["CachedBackend", "OpenAIBackend"]
