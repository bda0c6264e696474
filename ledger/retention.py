"""Retention of old trials' transcripts: the bulky part of a run, and the only part that goes.

A trial's transcript (``trials.transcript_json``: every message sent and received, tool calls
and reasoning traces included) is most of a database's bytes and is read only when someone
looks at that trial. :func:`prune_transcripts` replaces the transcripts of trials stored before
a cutoff with a small marker, ``{"pruned_on": "YYYY-MM-DD", "bytes": N}`` (the day it was
pruned and the size of what it replaced), so that a report says "transcript pruned on DATE"
instead of showing nothing (:func:`pruned_transcript`).

What is never touched: the prediction ledger (its entries, tree heads and call records hash
their own bodies, never a trial's transcript, so ``mindledger ledger verify`` passes after a
prune); items (trials and the ledger refer to them by content hash); a trial's answer, reply
text, scores, correctness and counts (every report's figures come from these); the trials of
runs still ``running`` or ``queued``. Nothing about the schema changes.

SQLite keeps the freed pages for its next writes; ``VACUUM`` returns them to the file system.
PostgreSQL's autovacuum makes the space reusable.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger.clock import Clock, utc_now
from ledger.models import RunRow, TrialRow
from mindledger.errors import UserError

__all__ = [
    "ACTIVE_STATUSES",
    "PRUNED_KEY",
    "PruneReport",
    "cutoff_before",
    "prune_transcripts",
    "pruned_marker",
    "pruned_transcript",
]

PRUNED_KEY = "pruned_on"
"""The key of a pruned transcript's marker: the UTC day it was pruned."""
_MARKER_PREFIX = '{"bytes":'
"""How every marker's text begins (canonical JSON: keys sorted). A transcript is a JSON list,
so its text never begins so."""
ACTIVE_STATUSES = ("running", "queued")
"""Run statuses whose trials are never pruned: the run is still being written."""
BATCH = 500
"""Trials rewritten per transaction."""


@dataclass(frozen=True)
class PruneReport:
    """What :func:`prune_transcripts` did, or (``dry_run``) would do."""

    before: str
    """The cutoff: trials stored before it (ISO 8601 UTC)."""
    trials: int
    """Transcripts pruned (or that would be)."""
    runs: int
    """Runs they belong to."""
    bytes: int
    """Bytes of transcript text replaced (less the markers' own bytes)."""
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "trials": self.trials,
            "runs": self.runs,
            "bytes": self.bytes,
            "dry_run": self.dry_run,
        }

    def describe(self) -> str:
        verb = "would prune" if self.dry_run else "pruned"
        return (
            f"{verb} the transcripts of {self.trials:,} {'trial' if self.trials == 1 else 'trials'}"
            f" of {self.runs:,} {'run' if self.runs == 1 else 'runs'} stored "
            f"before {self.before}: {self.bytes:,} bytes"
        )


def pruned_marker(day: str, size: int) -> str:
    """The text that replaces a transcript of ``size`` bytes pruned on ``day`` (YYYY-MM-DD)."""
    return json.dumps({"bytes": size, PRUNED_KEY: day}, sort_keys=True, separators=(",", ":"))


def pruned_transcript(transcript: Any) -> str | None:
    """The day a trial's transcript was pruned, from its stored JSON (parsed, or its text); None
    when it was not pruned."""
    if isinstance(transcript, str):
        if not transcript.startswith(_MARKER_PREFIX):
            return None
        try:
            transcript = json.loads(transcript)
        except ValueError:
            return None
    if isinstance(transcript, dict) and isinstance(transcript.get(PRUNED_KEY), str):
        return str(transcript[PRUNED_KEY])
    return None


def cutoff_before(days: float, now: str) -> str:
    """The ISO 8601 UTC instant ``days`` days before ``now`` (an ISO 8601 UTC string)."""
    if not days > 0:
        raise UserError(f"a retention period must be a positive number of days, not {days}")
    moment = dt.datetime.fromisoformat(now) - dt.timedelta(days=days)
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds")


def _size(engine: Engine) -> Any:
    column = TrialRow.__table__.c.transcript_json  # type: ignore[attr-defined]
    if engine.dialect.name == "sqlite":
        return sa.func.length(sa.cast(column, sa.LargeBinary))
    return sa.func.octet_length(column)


def _candidates(engine: Engine, before: str) -> sa.Select[Any]:
    trials = TrialRow.__table__  # type: ignore[attr-defined]
    runs = RunRow.__table__  # type: ignore[attr-defined]
    return (
        sa.select(trials.c.id, trials.c.run_id, _size(engine).label("size"))
        .join(runs, runs.c.id == trials.c.run_id)
        .where(
            trials.c.created_at < before,
            runs.c.status.not_in(ACTIVE_STATUSES),
            sa.not_(trials.c.transcript_json.startswith(_MARKER_PREFIX, autoescape=True)),
        )
        .order_by(trials.c.id)
    )


def prune_transcripts(
    engine: Engine, *, before: str, dry_run: bool = False, clock: Clock = utc_now
) -> PruneReport:
    """Replace the transcript of every trial stored before ``before`` (ISO 8601 UTC) with the
    marker of :func:`pruned_marker` (today by ``clock``), a page of trials per transaction;
    trials of runs still running or queued, and transcripts already pruned, are left alone.
    With ``dry_run``, count what would go and change nothing. Safe to run again, and beside a
    daemon writing new trials."""
    day = clock()[:10]
    trials = TrialRow.__table__  # type: ignore[attr-defined]
    stmt = _candidates(engine, before)
    count = freed = 0
    runs: set[str] = set()
    for page in _pages(engine, stmt):
        marks = [(tid, pruned_marker(day, size)) for tid, _, size in page]
        if not dry_run:
            with engine.begin() as conn:
                conn.execute(
                    trials.update()
                    .where(
                        trials.c.id == sa.bindparam("tid"),
                        sa.not_(
                            trials.c.transcript_json.startswith(_MARKER_PREFIX, autoescape=True)
                        ),
                    )
                    .values(transcript_json=sa.bindparam("mark")),
                    [{"tid": tid, "mark": mark} for tid, mark in marks],
                )
        count += len(page)
        runs.update(run for _, run, _ in page)
        freed += sum(
            max(0, size - len(mark)) for (_, _, size), (_, mark) in zip(page, marks, strict=True)
        )
    return PruneReport(before=before, trials=count, runs=len(runs), bytes=freed, dry_run=dry_run)


def _pages(engine: Engine, stmt: sa.Select[Any]) -> Iterator[list[tuple[int, str, int]]]:
    """Pages read one at a time, each on its own connection, so a long prune holds no read
    transaction open while it writes."""
    trials = TrialRow.__table__  # type: ignore[attr-defined]
    last = -1
    while True:
        with engine.connect() as conn:
            rows = conn.execute(stmt.where(trials.c.id > last).limit(BATCH)).all()
        if not rows:
            return
        page = [(int(r.id), str(r.run_id), int(r.size or 0)) for r in rows]
        yield page
        last = page[-1][0]
