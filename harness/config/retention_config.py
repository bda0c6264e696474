"""The ``[retention]`` table of the settings: how long old runs' bulky parts are kept.

::

    [retention]
    transcripts_days = 90     # trials' transcripts older than this are pruned nightly

Only transcripts are ever pruned (:mod:`ledger.retention`: never the ledger, items, answers or
scores). Read by :func:`harness.config.settings.load_settings` into
``Settings.retention_transcripts_days``; applied by the daemon's nightly job and by
``mindledger db prune``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindledger.errors import ConfigError

__all__ = ["KEYS", "retention_days"]

KEYS = ("transcripts_days",)


def retention_days(table: Any, *, source: str) -> int | None:
    """The ``[retention]`` table's ``transcripts_days`` (None when not given), a whole number
    of days of at least 1; ConfigError names the key."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table [retention]", file=source, key="retention")
    for k in table:
        if k not in KEYS:
            raise ConfigError(
                f"unknown key (known: {', '.join(KEYS)})", file=source, key=f"retention.{k}"
            )
    days = table.get("transcripts_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 1):
        raise ConfigError(
            f"expected a whole number of days of at least 1, got {days!r}",
            file=source,
            key="retention.transcripts_days",
        )
    return days
