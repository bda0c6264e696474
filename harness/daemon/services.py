"""What the API's handlers work over: one :class:`Services` value holding the daemon's store,
ledger, settings, scheduler, proxy, witness store, request quota and clocks.

A handler is a plain function ``(services, call) -> answer`` (:mod:`harness.daemon.endpoint`),
so a test can build a ``Services`` over a temporary database and call one handler alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from harness.config.settings import Settings
from harness.daemon.proxy import Proxy
from harness.daemon.scheduler import DaemonScheduler
from harness.daemon.telemetry import Telemetry
from ledger.cosign import WitnessStore
from ledger.db import Clock, utc_now
from ledger.predictions import Ledger
from ledger.store import Store

__all__ = ["RequestQuota", "Services"]


class RequestQuota:
    """How many requests each caller (an API token, a client address) may make: ``rate`` a
    second, in bursts of up to ``burst`` — a token bucket per key. It refuses rather than
    waits: ``take`` spends one request and returns 0, or the seconds until one is available
    (the API answers 429 with ``Retry-After``).

    Not :class:`harness.adapters.openai.RateLimiter`, which paces the harness's own outgoing
    calls by sleeping until each may go."""

    def __init__(self, rate: float, *, burst: float, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> float:
        now = self.clock()
        level, then = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - then) * self.rate)
        if level < 1:
            self._buckets[key] = (level, now)
            return (1 - level) / self.rate
        self._buckets[key] = (level - 1, now)
        return 0.0


@dataclass
class Services:
    """The daemon's parts, as the API's handlers use them."""

    settings: Settings
    store: Store
    ledger: Ledger
    proxy: Proxy
    quota: RequestQuota
    witness: WitnessStore
    """The heads this daemon cosigned as a witness of other ledgers."""
    scheduler: DaemonScheduler | None = None
    """Where run-now requests go (None: they get a 503)."""
    clock: Clock = utc_now
    """The ledger's time (ISO 8601), for a prediction's state and token expiry."""
    now: Callable[[], float] = time.time
    """POSIX seconds: the time of a cosignature."""
    profile_boot: int = 2000
    """Bootstrap resamples of a profile served by ``GET /runs/{id}/profile``."""
    document: Mapping[str, Any] = field(default_factory=dict)
    """This daemon's OpenAPI document (``GET /openapi.json``)."""
    telemetry: Telemetry | None = None
    """The daemon's metrics (``GET /metrics``) and its last verification of the ledger."""

    @property
    def engine(self) -> Engine:
        return self.store.engine

    @property
    def home(self) -> Path:
        return Path(self.settings.home)
