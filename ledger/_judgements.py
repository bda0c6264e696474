"""The extraction judge's readings in the database (``judgements``; see :mod:`harness.run.judging`).

A judgement is written once per (run, agent, item, judge) and never changed; the trial it reads
is never changed either. :class:`~ledger.store.Store` reads and writes them through these
functions (``record_judgement``, ``judged_pairs``, ``judgements``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from ledger.models import JudgementRow
from mindledger.canonical import canonical_json

__all__ = ["JudgementRecord", "judged_pairs", "judgements", "record_judgement"]


@dataclass
class JudgementRecord:
    """The extraction judge's reading of one trial (a row of ``judgements``): the reply, the
    extraction in it, what entered the metrics, the trial re-scored with it, and its counts."""

    run_id: str
    agent: str
    item_id: str
    judge: str
    judge_hash: str
    status: str
    """``ok`` or ``parse_error``."""
    cached: bool = False
    reply_text: str | None = None
    extraction: dict[str, Any] | None = None
    reading: dict[str, Any] | None = None
    score: dict[str, Any] | None = None
    grounded: int = 0
    ungrounded: int = 0
    """Quoted values whose quote is not in the chain of thought."""
    dropped: int = 0
    """Values left out of the metrics for that (quotes are required)."""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    created_at: str | None = None
    """Set when read back."""


def _json(value: Any) -> str | None:
    return None if value is None else canonical_json(value).decode("utf-8")


def record_judgement(engine: Engine, rec: JudgementRecord, now: str) -> bool:
    """Store one judgement, made at ``now``, in its own transaction. Returns False (and writes
    nothing) when this judge has already judged this trial."""
    row = JudgementRow(
        run_id=rec.run_id,
        agent=rec.agent,
        item_id=rec.item_id,
        judge=rec.judge,
        judge_hash=rec.judge_hash,
        status=rec.status,
        cached=rec.cached,
        reply_text=rec.reply_text,
        extraction_json=_json(rec.extraction),
        reading_json=_json(rec.reading),
        score_json=_json(rec.score),
        grounded=rec.grounded,
        ungrounded=rec.ungrounded,
        dropped=rec.dropped,
        tokens_in=rec.tokens_in,
        tokens_out=rec.tokens_out,
        latency_s=rec.latency_s,
        created_at=now,
    )
    try:
        with Session(engine) as s:
            s.add(row)
            s.commit()
    except IntegrityError:
        if judged_pairs(engine, rec.run_id, rec.judge) >= {(rec.agent, rec.item_id)}:
            return False
        raise
    return True


def judged_pairs(engine: Engine, run_id: str, judge: str | None = None) -> set[tuple[str, str]]:
    """(agent, item id) pairs of the run that have a judgement (by ``judge``, if given)."""
    table = JudgementRow.__table__  # type: ignore[attr-defined]
    stmt = sa.select(table.c.agent, table.c.item_id).where(table.c.run_id == run_id)
    if judge is not None:
        stmt = stmt.where(table.c.judge == judge)
    with engine.connect() as conn:
        return {(a, i) for a, i in conn.execute(stmt)}


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def judgements(engine: Engine, run_id: str) -> list[JudgementRecord]:
    """The run's judgements, oldest first."""
    table = JudgementRow.__table__  # type: ignore[attr-defined]
    stmt = sa.select(table).where(table.c.run_id == run_id).order_by(table.c.id)
    with engine.connect() as conn:
        return [
            JudgementRecord(
                run_id=r.run_id,
                agent=r.agent,
                item_id=r.item_id,
                judge=r.judge,
                judge_hash=r.judge_hash,
                status=r.status,
                cached=bool(r.cached),
                reply_text=r.reply_text,
                extraction=_load(r.extraction_json),
                reading=_load(r.reading_json),
                score=_load(r.score_json),
                grounded=int(r.grounded),
                ungrounded=int(r.ungrounded),
                dropped=int(r.dropped),
                tokens_in=int(r.tokens_in),
                tokens_out=int(r.tokens_out),
                latency_s=float(r.latency_s),
                created_at=r.created_at,
            )
            for r in conn.execute(stmt)
        ]
