"""Runs, items and trials in the database: the only code that writes them.

Every write that belongs together happens in one transaction: a run is created with its agents
and items at once; a trial is written alone, as it completes, and at most once per
``(run, agent, item)`` (the database enforces it, so a batch of trials can be retried anywhere).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from ledger.db import Clock, utc_now
from ledger.models import (
    AgentRow,
    ItemRow,
    ResponseCacheRow,
    RunAgentRow,
    RunItemRow,
    RunRow,
    TrialRow,
)
from mindledger.canonical import canonical_json, content_hash
from mindledger.errors import NotFoundError
from mindledger.items import Item

__all__ = ["RunAgent", "Store", "TrialRecord"]


_TRIAL_COLUMNS = (
    "run_id", "agent", "item_id", "status", "answer_json", "raw_text", "transcript_json",
    "confidence", "correct", "score_value", "primary_error", "score_json", "error", "turns",
    "tokens_in", "tokens_out", "latency_s", "provider_json", "created_at",
)  # fmt: skip


def _json(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


@dataclass(frozen=True)
class RunAgent:
    """An agent's part in a run: its role (agent, control, reference, ablation) and the spec
    the harness needs to rebuild its adapter when the run is resumed."""

    name: str
    role: str
    spec: dict[str, Any]
    base_agent: str | None = None


@dataclass
class TrialRecord:
    """What the runner learned from one agent on one item."""

    run_id: str
    agent: str
    item_id: str
    status: str
    transcript: list[dict[str, Any]]
    answer: Any = None
    raw_text: str | None = None
    confidence: float | None = None
    correct: bool | None = None
    score_value: float | None = None
    primary_error: str | None = None
    score: dict[str, Any] | None = None
    error: str | None = None
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    provider: dict[str, Any] = field(default_factory=dict)


class Store:
    """Runs, items, trials and the response cache over one engine."""

    def __init__(self, engine: Engine, clock: Clock = utc_now):
        self.engine = engine
        self.clock = clock

    # -- runs -----------------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        *,
        suite: str,
        seed: int,
        held_out: bool,
        params: dict[str, Any],
        agents: Sequence[RunAgent],
        items: Sequence[Item],
    ) -> RunRow:
        """Store a run with its agents and items in one transaction. Items already stored (by
        content hash) are not written again."""
        now = self.clock()
        with Session(self.engine) as s:
            run = RunRow(
                id=run_id,
                suite=suite,
                seed=seed,
                held_out=held_out,
                params_json=_json(params),
                status="running",
                created_at=now,
            )
            s.add(run)
            s.flush()
            for a in agents:
                s.add(
                    RunAgentRow(
                        run_id=run_id,
                        agent=a.name,
                        role=a.role,
                        base_agent=a.base_agent,
                        spec_json=_json(a.spec),
                    )
                )
                public = {k: v for k, v in a.spec.items() if k != "api_key"}
                existing = s.get(AgentRow, a.name)
                if existing is None:
                    s.add(
                        AgentRow(
                            name=a.name,
                            adapter=str(a.spec.get("adapter", "?")),
                            config_json=_json(public),
                            config_hash=content_hash(public),
                            created_at=now,
                        )
                    )
            ids = [it.id for it in items]
            have: set[str] = set()
            for chunk in _chunks(ids, 500):
                have.update(s.exec(select(ItemRow.id).where(col(ItemRow.id).in_(chunk))).all())
            seen: set[str] = set()
            for it in items:
                if it.id not in have and it.id not in seen:
                    s.add(
                        ItemRow(
                            id=it.id,
                            family=it.family,
                            generator=it.generator,
                            version=it.version,
                            seed=it.seed,
                            body_json=_json(it.to_dict()),
                        )
                    )
                seen.add(it.id)
            s.flush()
            seen.clear()
            for position, it in enumerate(items):
                if it.id not in seen:
                    s.add(RunItemRow(run_id=run_id, item_id=it.id, position=position))
                seen.add(it.id)
            s.commit()
            s.refresh(run)
            return run

    def get_run(self, run_id: str) -> RunRow:
        with Session(self.engine) as s:
            run = s.get(RunRow, run_id)
            if run is None:
                raise NotFoundError(f"no run with id {run_id!r} (see `mindledger runs`)")
            return run

    def list_runs(self, limit: int = 50) -> list[RunRow]:
        with Session(self.engine) as s:
            stmt = select(RunRow).order_by(col(RunRow.created_at).desc()).limit(limit)
            return list(s.exec(stmt).all())

    def set_run_status(self, run_id: str, status: str, *, finished: bool = False) -> None:
        with Session(self.engine) as s:
            run = s.get(RunRow, run_id)
            if run is None:
                raise NotFoundError(f"no run with id {run_id!r}")
            run.status = status
            run.finished_at = self.clock() if finished else None
            s.add(run)
            s.commit()

    def complete_but_unmarked_runs(self) -> list[str]:
        """Ids of runs not marked ``complete`` that have a trial for every (agent, item) pair:
        whoever stored the last trial stopped before saying so."""
        stmt = sa.text(
            "SELECT r.id FROM runs r WHERE r.status <> 'complete' AND ("
            " SELECT count(*) FROM trials t"
            " JOIN run_agents a ON a.run_id = t.run_id AND a.agent = t.agent"
            " JOIN run_items i ON i.run_id = t.run_id AND i.item_id = t.item_id"
            " WHERE t.run_id = r.id"
            ") = (SELECT count(*) FROM run_agents a WHERE a.run_id = r.id)"
            " * (SELECT count(*) FROM run_items i WHERE i.run_id = r.id)"
            " ORDER BY r.created_at"
        )
        with self.engine.connect() as conn:
            return [run_id for (run_id,) in conn.execute(stmt)]

    def run_agents(self, run_id: str) -> list[RunAgent]:
        with Session(self.engine) as s:
            rows = s.exec(select(RunAgentRow).where(RunAgentRow.run_id == run_id)).all()
            return [RunAgent(r.agent, r.role, json.loads(r.spec_json), r.base_agent) for r in rows]

    def run_items(self, run_id: str) -> list[Item]:
        """The run's items in order, rebuilt from storage (their ids are re-checked)."""
        with Session(self.engine) as s:
            stmt = (
                select(ItemRow.body_json)
                .join(RunItemRow, col(RunItemRow.item_id) == col(ItemRow.id))
                .where(RunItemRow.run_id == run_id)
                .order_by(col(RunItemRow.position))
            )
            return [Item.from_dict(json.loads(body)) for body in s.exec(stmt).all()]

    # -- trials ---------------------------------------------------------------------------

    def done_pairs(self, run_id: str) -> set[tuple[str, str]]:
        """(agent, item id) pairs that already have a trial in this run."""
        with Session(self.engine) as s:
            rows = s.exec(
                select(TrialRow.agent, TrialRow.item_id).where(TrialRow.run_id == run_id)
            ).all()
            return {(a, i) for a, i in rows}

    def record_trial(self, rec: TrialRecord) -> bool:
        """Write one trial in its own transaction. Returns False (and writes nothing) when the
        run already has a trial for this agent and item."""
        with self.trial_writer() as write:
            return write(rec)

    @contextmanager
    def trial_writer(self) -> Iterator[Callable[[TrialRecord], bool]]:
        """A function that writes one trial per call, each in its own transaction, over one
        connection held for the duration (the runner's writer thread uses it).

        It goes beneath the ORM: a trial is one plain INSERT, and at thousands of trials a
        second the ORM's per-row cost would be the runner's bottleneck. On SQLite the
        connection commits with ``synchronous=NORMAL``: in WAL mode a committed trial survives
        the process being killed (what resuming relies on); only a power cut can lose the
        last few, and those are simply re-run on resume. (The prediction ledger keeps FULL.)
        """
        raw = self.engine.raw_connection()
        sqlite = self.engine.dialect.name == "sqlite"
        mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"
        sql = (
            f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) "
            f"VALUES ({', '.join([mark] * len(_TRIAL_COLUMNS))})"
        )
        integrity = self.engine.dialect.loaded_dbapi.IntegrityError
        if sqlite:
            cur = raw.cursor()
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        def write(rec: TrialRecord) -> bool:
            values = (
                rec.run_id,
                rec.agent,
                rec.item_id,
                rec.status,
                None if rec.answer is None else _json(rec.answer),
                rec.raw_text,
                _json(rec.transcript),
                rec.confidence,
                rec.correct,
                rec.score_value,
                rec.primary_error,
                None if rec.score is None else _json(rec.score),
                rec.error,
                rec.turns,
                rec.tokens_in,
                rec.tokens_out,
                rec.latency_s,
                _json(rec.provider),
                self.clock(),
            )
            cur = raw.cursor()
            try:
                cur.execute(sql, values)
                raw.commit()
            except integrity:
                raw.rollback()
                if (rec.agent, rec.item_id) in self._pairs(rec.run_id, rec.agent, rec.item_id):
                    return False
                raise
            except BaseException:
                raw.rollback()
                raise
            finally:
                cur.close()
            return True

        try:
            yield write
        finally:
            if sqlite:
                with suppress(Exception):
                    cur = raw.cursor()
                    cur.execute("PRAGMA synchronous=FULL")
                    cur.close()
            raw.close()

    def _pairs(self, run_id: str, agent: str, item_id: str) -> set[tuple[str, str]]:
        with Session(self.engine) as s:
            rows = s.exec(
                select(TrialRow.agent, TrialRow.item_id).where(
                    TrialRow.run_id == run_id, TrialRow.agent == agent, TrialRow.item_id == item_id
                )
            ).all()
            return {(a, i) for a, i in rows}

    def trials(self, run_id: str, agent: str | None = None) -> list[TrialRow]:
        with Session(self.engine) as s:
            stmt = select(TrialRow).where(TrialRow.run_id == run_id)
            if agent is not None:
                stmt = stmt.where(TrialRow.agent == agent)
            return list(s.exec(stmt.order_by(col(TrialRow.id))).all())

    def trial_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per agent: trials by status, and how many were correct."""
        out: dict[str, dict[str, int]] = {}
        with Session(self.engine) as s:
            stmt = (
                select(TrialRow.agent, TrialRow.status, TrialRow.correct, sa.func.count())
                .where(TrialRow.run_id == run_id)
                .group_by(col(TrialRow.agent), col(TrialRow.status), col(TrialRow.correct))
            )
            for agent, status, correct, n in s.exec(stmt).all():
                d = out.setdefault(agent, {"ok": 0, "api_error": 0, "not_applicable": 0, "correct": 0})
                d[status] = d.get(status, 0) + n
                if correct:
                    d["correct"] += n
        return out

    # -- response cache -------------------------------------------------------------------

    def cache_get(self, key: str) -> dict[str, Any] | None:
        with Session(self.engine) as s:
            row = s.get(ResponseCacheRow, key)
            return None if row is None else json.loads(row.response_json)

    def cache_put(self, key: str, response: dict[str, Any]) -> None:
        try:
            with Session(self.engine) as s:
                s.add(
                    ResponseCacheRow(
                        key=key, response_json=_json(response), created_at=self.clock()
                    )
                )
                s.commit()
        except IntegrityError:
            pass


def _chunks(seq: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
