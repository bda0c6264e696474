"""Who hears of an adapter's retries: a failed request that will be sent again is said to the
listener of the task that made it, so that a run's progress can say why nothing is finishing
(an endpoint that hangs costs ``timeout × (1 + max_retries)`` plus backoff before its first
trial fails: twelve minutes at the defaults, all of them "0 errors").

The runner sets each worker's listener (:func:`listen`; a task's context is its own, so the
listener names the worker's agent); :func:`retried` is called by the adapters' retry loops. A
listener's failure is logged, never raised into the request."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["RetryListener", "listen", "retried"]

log = logging.getLogger(__name__)

RetryListener = Callable[[str, str], None]
"""Called with a failed attempt's kind (``timeout``, ``rate_limited``, ``server_error``,
``connection``, ``malformed``, ``client_error``) and what happened, e.g. ``timed out: no reply
within 120 s``."""

_LISTENER: ContextVar[RetryListener | None] = ContextVar("retry_listener", default=None)


def listen(listener: RetryListener | None) -> None:
    """Send the retries of requests made in this context (this task, and the tasks it starts
    from now on) to ``listener``; None: to nobody."""
    _LISTENER.set(listener)


def retried(kind: str, what: str) -> None:
    """Say to this context's listener, if any, that an attempt failed with ``kind`` and will be
    retried."""
    listener = _LISTENER.get()
    if listener is None:
        return
    try:
        listener(kind, what)
    except Exception:  # the progress display must never fail a request
        log.exception("retry listener failed")
