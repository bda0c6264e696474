"""The ``[schedule.matrix]`` table of the settings: the prediction matrix the nightly job runs
beside each scheduled suite run (seed 002 §15.2, B7–B9), on a held-out seed, over the run's
agents (its ablation variants apart).

::

    [schedule.matrix]
    enabled = true            # run the matrix beside the nightly suite (needs the ledger)
    items = 20                # items the matrix keeps
    samples = 10              # K: each target's samples per item
    pilot = true              # false: the seed's arbitrary-choice items, unfiltered; "auto":
                              # pilot only when at least two agents take part
    kinds = ["arbitrary", "preference", "open", "nesttom", "games", "failure"]
    candidates = 100          # candidates the pilot puts through every target (default 5 × items)
    conditions = ["zero-shot", "observe:3", "simulate"]
    second_order = false      # also P predicting Q's prediction of T (B9)
    queue = "auto"            # "auto": queued for `mindledger worker` on PostgreSQL; true; false

The pilot is on by default: with two agents or more it keeps the candidates the targets
disagree on; with one (an agent without a control) it keeps those its agent answers
consistently enough for a test-retest ceiling (a one-target pilot, ``min_targets`` 1). Without a
pilot (``pilot = false``, or ``"auto"`` with one agent) the matrix takes the seed's
arbitrary-choice items unfiltered, and its record says so. Parsed by :func:`parse_matrix_schedule` (called by
:func:`harness.config.settings.load_settings`); used by :class:`harness.daemon.scheduler.DaemonContext`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mindledger.errors import ConfigError

__all__ = [
    "EVERY_SECONDS",
    "KNOWN_KINDS",
    "MatrixSchedule",
    "parse_every_seconds",
    "parse_matrix_schedule",
    "parse_schedule_table",
]

KNOWN_KINDS = ("arbitrary", "preference", "open", "nesttom", "games", "failure")
"""The pilot's candidate kinds (:data:`matrix.DEFAULT_KINDS`, which a test keeps
equal to this)."""
KEYS = ("candidates", "conditions", "enabled", "items", "kinds", "pilot", "queue", "samples",
        "second_order")
LIMITS = {"items": (1, 10_000), "samples": (2, 100), "candidates": (1, 100_000)}
"""The range of each count (inclusive): K ≥ 2 gives the test-retest ceiling."""
MAX_OBSERVED = 100
"""The most past answers an ``observe:M`` condition shows."""


@dataclass(frozen=True)
class MatrixSchedule:
    """How the nightly matrix is run."""

    enabled: bool = True
    """Run the matrix beside each nightly suite run."""
    items: int = 20
    """Items the matrix keeps (after the pilot)."""
    samples: int = 10
    """K: each target's samples on each item (seed 002 §15.2 asks for 10)."""
    pilot: bool | None = True
    """Pilot the candidates (None, ``"auto"``: only when at least two agents take part, the
    pilot then keeping items on which the targets disagree)."""
    kinds: tuple[str, ...] = KNOWN_KINDS
    """Candidate kinds the pilot draws."""
    candidates: int | None = None
    """Candidates the pilot puts through every target (None: 5 × items)."""
    conditions: tuple[str, ...] = ("zero-shot",)
    """Prediction conditions (zero-shot, simulate, observe:M)."""
    second_order: bool = False
    """Also second-order prediction (B9)."""
    queue: bool | None = None
    """Plan and run the matrix on queue workers (:mod:`harness.matrix.nightly`; needs
    PostgreSQL and ``mindledger worker``) instead of in the daemon (None: when the database
    is PostgreSQL)."""

    def queued(self, postgresql: bool) -> bool:
        """Whether the matrix goes to the queue, the database being PostgreSQL or not."""
        return self.queue if self.queue is not None else postgresql

    def pilots(self, n_agents: int) -> bool:
        """Whether a matrix over ``n_agents`` agents is piloted."""
        return self.pilot if self.pilot is not None else n_agents >= 2

    def public_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "items": self.items,
            "samples": self.samples,
            "pilot": "auto" if self.pilot is None else self.pilot,
            "kinds": list(self.kinds),
            "candidates": self.candidates,
            "conditions": list(self.conditions),
            "second_order": self.second_order,
            "queue": "auto" if self.queue is None else self.queue,
        }


def _bool(value: Any, *, source: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"expected true or false, got {value!r}", file=source, key=key)
    return value


def _count(value: Any, *, source: str, key: str, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ConfigError(
            f"expected a whole number from {least} to {most:,}, got {value!r}",
            file=source, key=key,
        )
    return value


def _names(value: Any, *, source: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError("expected a non-empty list of strings", file=source, key=key)
    return tuple(dict.fromkeys(value))


def _condition(name: str, *, source: str, key: str) -> str:
    if name in ("zero-shot", "simulate"):
        return name
    head, _, count = name.partition(":")
    if head == "observe" and count.isdigit() and 1 <= int(count) <= MAX_OBSERVED:
        return f"observe:{int(count)}"
    raise ConfigError(
        f"unknown condition {name!r} (expected zero-shot, simulate or observe:M with M from 1 "
        f"to {MAX_OBSERVED})",
        file=source, key=key,
    )


EVERY_SECONDS = (0.1, 86_400.0)
"""The range of ``[schedule] every_seconds`` (inclusive), the test-only acceleration."""


def parse_every_seconds(value: Any, *, source: str) -> float:
    """``[schedule] every_seconds``: for tests only, the nightly job fires every this many
    seconds instead of by the cron expression (ConfigError names the key and the range)."""
    low, high = EVERY_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(
            f"expected a number of seconds from {low:g} to {high:g} (for tests: the nightly "
            f"job fires that often instead of by cron), got {value!r}",
            file=source,
            key="schedule.every_seconds",
        )
    return float(value)


def parse_matrix_schedule(table: Any, *, source: str) -> MatrixSchedule:
    """The ``[schedule.matrix]`` table, every key checked (ConfigError names the key)."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table", file=source, key="schedule.matrix")
    values: dict[str, Any] = {}
    for k, v in table.items():
        key = f"schedule.matrix.{k}"
        if k in ("enabled", "second_order"):
            values[k] = _bool(v, source=source, key=key)
        elif k in LIMITS:
            least, most = LIMITS[k]
            values[k] = _count(v, source=source, key=key, least=least, most=most)
        elif k in ("pilot", "queue"):
            if v == "auto":
                values[k] = None
            elif isinstance(v, bool):
                values[k] = v
            else:
                raise ConfigError(
                    f'expected "auto", true or false, got {v!r}', file=source, key=key
                )
        elif k == "kinds":
            kinds = _names(v, source=source, key=key)
            unknown = [x for x in kinds if x not in KNOWN_KINDS]
            if unknown:
                raise ConfigError(
                    f"unknown kind {unknown[0]!r} (known: {', '.join(KNOWN_KINDS)})",
                    file=source, key=key,
                )
            values[k] = kinds
        elif k == "conditions":
            values[k] = tuple(dict.fromkeys(
                _condition(c, source=source, key=key) for c in _names(v, source=source, key=key)
            ))
        else:
            raise ConfigError(f"unknown key (known: {', '.join(KEYS)})", file=source, key=key)
    schedule = MatrixSchedule(**values)
    if schedule.second_order and "zero-shot" not in schedule.conditions:
        raise ConfigError(
            "second-order prediction needs the zero-shot condition (its ground truth is the "
            "other predictor's zero-shot prediction)",
            file=source, key="schedule.matrix.second_order",
        )
    return schedule


def parse_schedule_table(
    table: Any, modules: Mapping[str, Sequence[str]], *, source: str
) -> tuple[str | None, float | None, dict[str, tuple[str, ...]], MatrixSchedule]:
    """The ``[schedule]`` table: its cron expression (None if not given), its test-only
    ``every_seconds`` (None if not given), the modules ablated in each agent's nightly run,
    each checked against the agent's modules (``modules``: each declared agent's), and the nightly matrix (``[schedule.matrix]``)."""
    cron: str | None = None
    every: float | None = None
    ablations: dict[str, tuple[str, ...]] = {}
    matrix = MatrixSchedule()
    for k, v in table.items():
        if k == "every_seconds":
            every = parse_every_seconds(v, source=source)
        elif k == "cron":
            if not isinstance(v, str):
                raise ConfigError(
                    f"expected a string, got {_short(v)}", file=source, key=f"schedule.{k}"
                )
            cron = v
        elif k == "ablate":
            if not isinstance(v, Mapping):
                raise ConfigError(
                    f"expected a table of agents and their modules, got {_short(v)}",
                    file=source,
                    key="schedule.ablate",
                )
            for name, wanted in v.items():
                where = f"schedule.ablate.{name}"
                if name not in modules:
                    known = ", ".join(sorted(modules)) or "none"
                    raise ConfigError(
                        f"no agent named {name!r} (declared: {known})", file=source, key=where
                    )
                if not isinstance(wanted, list) or not all(isinstance(m, str) for m in wanted):
                    raise ConfigError("expected a list of module names", file=source, key=where)
                have = modules[name]
                for m in wanted:
                    if m not in have:
                        raise ConfigError(
                            f"agent {name!r} has no module {m!r} (it has: "
                            f"{', '.join(have) or 'none'})",
                            file=source,
                            key=where,
                        )
                ablations[name] = tuple(dict.fromkeys(wanted))
        elif k == "matrix":
            matrix = parse_matrix_schedule(v, source=source)
        else:
            raise ConfigError(
                "unknown key (known: cron, every_seconds, ablate, matrix)",
                file=source,
                key=f"schedule.{k}",
            )
    return cron, every, ablations, matrix


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
