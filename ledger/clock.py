"""The clock the ledger stamps rows with: :data:`Clock` and :func:`utc_now` (re-exported by
:mod:`ledger.db`), apart from it so that readers which skip SQLAlchemy can take a clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

__all__ = ["Clock", "utc_now"]

Clock = Callable[[], str]
"""A function returning the current time as an ISO 8601 UTC string."""


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string with microseconds (the stored form)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
