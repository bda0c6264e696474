"""Runs, items and trials in the database: the only code that writes them.

Every write that belongs together happens in one transaction: a run is created with its agents
and items at once; a trial is written alone, as it completes, and at most once per
``(run, agent, item)`` (the database enforces it, so a batch of trials can be retried anywhere).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, overload

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from ledger import _judgements
from ledger._item_bodies import ItemPage, SharedMatrices, bodies_query, stored_item
from ledger._judgements import JudgementRecord
from ledger.catalog import FailureCounts, ListedAgent, ListedRun
from ledger.db import Clock, utc_now
from ledger.models import (
    AgentRow,
    ApiRunRequestRow,
    ItemRow,
    NotificationRow,
    ResponseCacheRow,
    RunAgentRow,
    RunItemRow,
    RunRow,
    TrialRow,
)
from ledger.reader import Reader, RunAgent
from mindledger.canonical import canonical_json, content_hash
from mindledger.disclosure import disclosed_prediction
from mindledger.errors import NotFoundError
from mindledger.items import Item

__all__ = [
    "FINISHED_STATUSES",
    "FailureCounts",
    "JudgementRecord",
    "RunAgent",
    "Store",
    "StoredItems",
    "TrialOutcome",
    "TrialRecord",
]

FINISHED_STATUSES = frozenset({"complete", "incomplete"})
"""Run statuses that stamp ``finished_at``: every trial stored, or no work left pending."""


_TRIAL_COLUMNS = (
    "run_id", "agent", "item_id", "status", "answer_json", "raw_text", "transcript_json",
    "confidence", "correct", "score_value", "primary_error", "score_json", "error", "turns",
    "tokens_in", "tokens_out", "latency_s", "provider_json", "created_at",
)  # fmt: skip


def _json(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


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


def _owned_by(agent: str, token_id: str | None) -> Any:
    """The runs ``agent`` owns (see :meth:`Store.owns_run`), as a condition on ``runs.id``."""
    runs = RunRow.__table__  # type: ignore[attr-defined]
    ra = RunAgentRow.__table__  # type: ignore[attr-defined]
    under_test = sa.select(ra.c.run_id).where(
        sa.or_(sa.and_(ra.c.agent == agent, ra.c.role == "agent"), ra.c.base_agent == agent)
    )
    shared = sa.select(ra.c.run_id).where(
        sa.or_(
            sa.and_(ra.c.role == "agent", ra.c.agent != agent),
            sa.and_(ra.c.base_agent.is_not(None), ra.c.base_agent != agent),
        )
    )
    owned = runs.c.id.in_(under_test)
    if token_id is not None:
        req = ApiRunRequestRow.__table__  # type: ignore[attr-defined]
        asked = sa.select(req.c.run_id).where(req.c.token_id == token_id)
        owned = sa.or_(owned, runs.c.id.in_(asked))
    return sa.and_(owned, runs.c.id.not_in(shared))


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
        params: dict[str, Any] | Callable[[], dict[str, Any]],
        agents: Sequence[RunAgent],
        items: Iterable[Item],
    ) -> RunRow:
        """Store a run with its agents and items in one transaction: all of it, or nothing if
        anything fails (reading ``items`` included).

        ``items`` is read once, a chunk at a time, and each chunk is written before the next is
        read, so a generator's items are never all in memory. Items already stored (by content
        hash) are not written again; an item given twice is in the run once, at its first
        position. ``params`` may be a function, called once every item has been read (for
        params that describe the items, such as their counts)."""
        now = self.clock()
        with Session(self.engine) as s:
            run = RunRow(
                id=run_id,
                suite=suite,
                seed=seed,
                held_out=held_out,
                params_json="{}" if callable(params) else _json(params),
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
            s.flush()
            conn = s.connection()
            run_item_table = RunItemRow.__table__  # type: ignore[attr-defined]
            seen: set[str] = set()
            position = 0
            for chunk in _batches(items, _ITEM_CHUNK):
                new: dict[str, Item] = {}
                placed: list[dict[str, Any]] = []
                for it in chunk:
                    if it.id not in seen:
                        seen.add(it.id)
                        new[it.id] = it
                        placed.append({"run_id": run_id, "item_id": it.id, "position": position})
                    position += 1
                if not new:
                    continue
                _insert_new_items(conn, new)
                conn.execute(sa.insert(run_item_table), placed)
            if callable(params):
                run.params_json = _json(params())
                s.add(run)
            s.commit()
            s.refresh(run)
            return run

    def get_run(self, run_id: str) -> RunRow:
        with Session(self.engine) as s:
            run = s.get(RunRow, run_id)
            if run is None:
                raise NotFoundError(f"no run with id {run_id!r} (see `mindledger runs`)")
            return run

    def resolve_run(self, ref: str) -> str:
        """The id of the run ``ref`` names: an id; ``latest`` (the newest run) or ``latest~N``
        (the N-th before it); or the start of exactly one id (``20261203-0425``).

        Raises NotFoundError (a user error) naming the newest runs when nothing matches, and
        the matching ids when a prefix is ambiguous."""
        ref = ref.strip()
        runs = RunRow.__table__  # type: ignore[attr-defined]
        newest = sa.select(runs.c.id).order_by(runs.c.created_at.desc(), runs.c.id.desc())
        with self.engine.connect() as conn:
            if ref == "latest" or ref.startswith("latest~"):
                back = ref.removeprefix("latest").removeprefix("~") or "0"
                if not back.isdigit() or len(back) > 6:
                    raise NotFoundError(
                        f"{ref!r} is not a run reference: write latest, or latest~N for the "
                        "N-th run before the newest (latest~1)"
                    )
                row = conn.execute(newest.offset(int(back)).limit(1)).first()
                if row is None:
                    total = conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar()
                    raise NotFoundError(
                        "no runs are stored yet (start one with `mindledger run` or "
                        "`mindledger quickstart`)"
                        if not total
                        else f"{ref!r}: only one run is stored (`latest`)"
                        if total == 1
                        else f"{ref!r}: only {total} runs are stored (latest~{int(total) - 1} "
                        "is the oldest)"
                    )
                return str(row[0])
            if conn.execute(sa.select(runs.c.id).where(runs.c.id == ref)).first() is not None:
                return ref
            if ref:
                like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                matches = [
                    str(r[0])
                    for r in conn.execute(
                        newest.where(runs.c.id.like(like, escape="\\")).limit(6)
                    )
                ]
                if len(matches) == 1:
                    return matches[0]
                if matches:
                    shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
                    raise NotFoundError(f"{ref!r} matches several runs ({shown}): give more of the id")
            recent = [str(r[0]) for r in conn.execute(newest.limit(5))]
        if not recent:
            raise NotFoundError(f"no run with id {ref!r}: no runs are stored yet")
        raise NotFoundError(
            f"no run with id {ref!r} (newest: {', '.join(recent)}; `mindledger runs` lists them "
            "all, and `latest` names the newest)"
        )

    def stored_agent_names(self) -> list[str]:
        """Every agent name that takes part in a stored run, sorted."""
        ra = RunAgentRow.__table__  # type: ignore[attr-defined]
        with self.engine.connect() as conn:
            return [str(r[0]) for r in conn.execute(sa.select(ra.c.agent).distinct().order_by(ra.c.agent))]

    def list_runs(
        self, limit: int = 50, *, owner: str | None = None, token_id: str | None = None
    ) -> list[RunRow]:
        """The latest runs, newest first; with ``owner``, only those :meth:`owns_run` says
        that agent (and the API token ``token_id``) owns."""
        with Session(self.engine) as s:
            stmt = select(RunRow).order_by(col(RunRow.created_at).desc()).limit(limit)
            if owner is not None:
                stmt = stmt.where(_owned_by(owner, token_id))
            return list(s.exec(stmt).all())

    def run_listing(self, limit: int = 50) -> list[ListedRun]:
        """The ``limit`` newest runs with their agents and failure counts, as
        :func:`ledger.catalog.read_run_listing` reads them without the ORM (for a database that
        may need creating or migrating first)."""
        runs = self.list_runs(limit)
        counts = self.failure_counts([r.id for r in runs])
        return [
            ListedRun(
                id=r.id,
                suite=r.suite,
                seed=r.seed,
                held_out=r.held_out,
                status=r.status,
                created_at=r.created_at,
                finished_at=r.finished_at,
                agents=tuple(ListedAgent(a.name, a.role) for a in self.run_agents(r.id)),
                counts=tuple(counts.get(r.id, {}).items()),
            )
            for r in runs
        ]

    def owns_run(self, run_id: str, agent: str, token_id: str | None = None) -> bool:
        """Whether run ``run_id`` is ``agent``'s alone: the agent is its agent under test (role
        ``agent``) or the base of one of its agents (its control, its ablations), or the API
        token ``token_id`` requested it — and no other agent is under test in it (a run shared
        with another agent holds that agent's trials too: it is nobody's alone). Reference
        agents own nothing."""
        runs = RunRow.__table__  # type: ignore[attr-defined]
        stmt = sa.select(runs.c.id).where(runs.c.id == run_id, _owned_by(agent, token_id))
        with self.engine.connect() as conn:
            return conn.execute(stmt).first() is not None

    def disclosed_predictions(
        self, records: Sequence[Mapping[str, Any]], *, reveal_held_out: bool = False
    ) -> list[dict[str, Any]]:
        """Ledger predictions (``PredictionState.to_dict``) as a reader may see them: those made
        on an item of a held-out run without their query, item and observed answers unless
        ``reveal_held_out`` (:func:`mindledger.disclosure.disclosed_prediction`)."""
        held = set() if reveal_held_out else self.held_out_items(r.get("item") for r in records)
        return [
            disclosed_prediction(r, held_out=r.get("item") in held, reveal_held_out=reveal_held_out)
            for r in records
        ]

    def held_out_items(self, ids: Iterable[str | None]) -> set[str]:
        """Those of ``ids`` that are items of a held-out run (their bodies, answers and ids
        are withheld: :mod:`mindledger.disclosure`)."""
        wanted = sorted({i for i in ids if i})
        runs = RunRow.__table__  # type: ignore[attr-defined]
        ri = RunItemRow.__table__  # type: ignore[attr-defined]
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                stmt = (
                    sa.select(ri.c.item_id)
                    .join(runs, runs.c.id == ri.c.run_id)
                    .where(runs.c.held_out.is_(True), ri.c.item_id.in_(wanted[start : start + 500]))
                    .distinct()
                )
                found.update(str(r[0]) for r in conn.execute(stmt))
        return found

    def transition_run(self, run_id: str, to: str, *, unless: Iterable[str] = ()) -> bool:
        """Set the run's status to ``to`` unless it is one of ``unless``, in one conditional
        UPDATE (a compare-and-set: of two callers racing, the database decides). ``finished_at``
        is set to now for ``complete`` and ``incomplete`` and cleared for any other status.

        Returns True if this call changed the row; False if its status is in ``unless``
        (NotFoundError when there is no such run)."""
        finished = to in FINISHED_STATUSES
        table = RunRow.__table__  # type: ignore[attr-defined]
        stmt = (
            sa.update(table)
            .where(table.c.id == run_id)
            .values(status=to, finished_at=self.clock() if finished else None)
        )
        refused = sorted(set(unless))
        if refused:
            stmt = stmt.where(table.c.status.not_in(refused))
        with self.engine.begin() as conn:
            if conn.execute(stmt).rowcount:
                return True
            if conn.execute(sa.select(table.c.id).where(table.c.id == run_id)).first() is None:
                raise NotFoundError(f"no run with id {run_id!r} (see `mindledger runs`)")
            return False

    def set_run_status(self, run_id: str, status: str, *, finished: bool = False) -> None:
        """Set the run's status whatever it is (fixtures and tools; the harness moves a run
        only by :meth:`transition_run`)."""
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

    def totals(self) -> dict[str, int]:
        """How many runs and trials are stored: ``{"runs": n, "trials": n}``."""
        with Session(self.engine) as s:
            runs = s.exec(select(sa.func.count()).select_from(RunRow)).one()
            trials = s.exec(select(sa.func.count()).select_from(TrialRow)).one()
        return {"runs": int(runs), "trials": int(trials)}

    def missing_pairs(self, run_id: str) -> list[tuple[str, str]]:
        """(agent, item id) pairs of the run without a trial, agents in the order stored and
        items in the run's order."""
        done = self.done_pairs(run_id)
        item_ids = self.run_item_ids(run_id)
        return [
            (ra.name, item_id)
            for ra in self.run_agents(run_id)
            for item_id in item_ids
            if (ra.name, item_id) not in done
        ]

    def items_by_id(self, ids: Sequence[str]) -> list[Item]:
        """The stored items ``ids``, in that order, rebuilt from storage (their ids are
        re-checked); NotFoundError names the first id not stored."""
        bodies = self.item_bodies(ids)
        for item_id in ids:
            if item_id not in bodies:
                raise NotFoundError(f"no item with id {item_id!r}")
        loads = SharedMatrices()
        return [stored_item(item_id, bodies[item_id], loads=loads) for item_id in ids]

    def run_item_ids(self, run_id: str) -> list[str]:
        """The ids of the run's items, in the run's order (no item is read)."""
        with Session(self.engine) as s:
            stmt = (
                select(RunItemRow.item_id)
                .where(RunItemRow.run_id == run_id)
                .order_by(col(RunItemRow.position))
            )
            return list(s.exec(stmt).all())

    def run_agents(self, run_id: str) -> list[RunAgent]:
        """The run's agents (:meth:`ledger.reader.Reader.run_agents`)."""
        with self.reader() as r:
            return r.run_agents(run_id)

    def run_items(self, run_id: str) -> StoredItems:
        """The run's items in order, rebuilt from storage (their ids are re-checked) a page at
        a time as they are used (:class:`StoredItems`)."""
        with Session(self.engine) as s:
            stmt = (
                select(RunItemRow.item_id, ItemRow.family)
                .join(ItemRow, col(RunItemRow.item_id) == col(ItemRow.id))
                .where(RunItemRow.run_id == run_id)
                .order_by(col(RunItemRow.position))
            )
            ids: list[str] = []
            families: list[str] = []
            names: dict[str, str] = {}
            for item_id, family in s.exec(stmt):
                ids.append(item_id)
                families.append(names.setdefault(family, family))
        return StoredItems(self, ids, families)

    def item_bodies(self, ids: Sequence[str]) -> dict[str, bytes]:
        """The stored canonical JSON of the items ``ids`` (UTF-8), by id (absent ids are left
        out)."""
        out: dict[str, bytes] = {}
        stmt = bodies_query(self.engine.dialect.name)
        with self.engine.connect() as conn:
            for chunk in _chunks(ids, 500):
                out.update((item_id, body) for item_id, body in conn.execute(stmt, {"ids": chunk}))
        return out

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
        connection held for the duration. Returns False (and writes nothing) when the run
        already has a trial for this agent and item. See :meth:`trial_group_writer` for the
        connection's durability."""
        with self._trial_connection() as conn:
            yield conn.write_one

    @contextmanager
    def trial_group_writer(self) -> Iterator[Callable[[Sequence[TrialRecord]], list[TrialOutcome]]]:
        """A function that writes a group of trials in one transaction (a group commit), over
        one connection held for the duration (the runner's writer thread uses it).

        It returns one outcome per trial, in order: True (stored), False (the run already had
        a trial for this agent and item: nothing written) or the exception that kept that
        trial out. One bad trial does not cost the others: if the group's transaction fails,
        it is rolled back and each trial is written again in its own transaction, so every
        trial that can be stored is. Every trial reported True is committed when the function
        returns.

        It goes beneath the ORM: trials are plain INSERTs, and at thousands of trials a
        second the ORM's per-row cost would be the runner's bottleneck. On SQLite the
        connection commits with ``synchronous=NORMAL``: in WAL mode a committed trial survives
        the process being killed (what resuming relies on); only a power cut can lose the
        last few, and those are simply re-run on resume. (The prediction ledger keeps FULL.)
        """
        with self._trial_connection() as conn:
            yield conn.write_group

    @contextmanager
    def _trial_connection(self) -> Iterator[_TrialConnection]:
        raw = self.engine.raw_connection()
        sqlite = self.engine.dialect.name == "sqlite"
        try:
            if sqlite:
                cur = raw.cursor()
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.close()
            yield _TrialConnection(self, raw)
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
        """Per agent: trials by status, and how many were correct
        (:meth:`ledger.reader.Reader.trial_counts`)."""
        with self.reader() as r:
            return r.trial_counts(run_id)

    def failure_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, FailureCounts]]:
        """Per run of ``run_ids`` and agent with trials: its trials and failures, in one
        aggregate query (:meth:`ledger.reader.Reader.failure_counts`; no trial is read)."""
        with self.reader() as r:
            return r.failure_counts(run_ids)

    @contextmanager
    def reader(self) -> Iterator[Reader]:
        """A :class:`~ledger.reader.Reader` over one of the engine's pooled connections: the
        same SQL the dashboard asks without SQLAlchemy (returned to the pool afterwards)."""
        conn = self.engine.raw_connection()
        try:
            yield Reader(conn, "?" if self.engine.dialect.name == "sqlite" else "%s")
        finally:
            conn.close()

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

    def add_items(self, items: Iterable[Item]) -> int:
        """Store items that belong to no run's item list (the questions a matrix run puts to
        its predictors, which its trials answer); items already stored are left as they are.
        Returns how many were written."""
        written = 0
        with self.engine.begin() as conn:
            for chunk in _batches(items, _ITEM_CHUNK):
                written += _insert_new_items(conn, {it.id: it for it in chunk})
        return written

    # -- judgements (the extraction judge's readings; see harness.run.judging) ------------------

    def record_judgement(self, rec: JudgementRecord) -> bool:
        """Store one judgement in its own transaction. Returns False (and writes nothing) when
        this judge has already judged this trial."""
        return _judgements.record_judgement(self.engine, rec, self.clock())

    def judged_pairs(self, run_id: str, judge: str | None = None) -> set[tuple[str, str]]:
        """(agent, item id) pairs of the run that have a judgement (by ``judge``, if given)."""
        return _judgements.judged_pairs(self.engine, run_id, judge)

    def judgements(self, run_id: str) -> list[JudgementRecord]:
        """The run's judgements, oldest first."""
        return _judgements.judgements(self.engine, run_id)

    # -- agent history and regression notifications (see reports.history, harness.publish.notify) ---

    def agent_runs(self, agent: str, *, suite: str | None = None) -> list[str]:
        """Ids of the finished suite runs (not matrix runs) in which ``agent`` is the agent
        under test, oldest first (``suite``: that suite's only)."""
        runs = RunRow.__table__  # type: ignore[attr-defined]
        ra = RunAgentRow.__table__  # type: ignore[attr-defined]
        stmt = (
            sa.select(runs.c.id)
            .join(ra, ra.c.run_id == runs.c.id)
            .where(ra.c.agent == agent, ra.c.role == "agent", runs.c.suite != "matrix",
                   runs.c.status.in_(sorted(FINISHED_STATUSES)))
            .order_by(runs.c.created_at, runs.c.id)
        )
        if suite is not None:
            stmt = stmt.where(runs.c.suite == suite)
        with self.engine.connect() as conn:
            return [str(r[0]) for r in conn.execute(stmt)]

    def record_notification(
        self, *, agent: str, run_id: str, channel: str, target: str, status: str,
        attempts: int, error: str | None, payload: Any,
    ) -> bool:
        """Record one notification in its own transaction; False (nothing written) when this
        (agent, run, channel) has one already."""
        row = NotificationRow(
            agent=agent, run_id=run_id, channel=channel, target=target, status=status,
            attempts=attempts, error=error, payload_json=_json(payload), created_at=self.clock(),
        )
        try:
            with Session(self.engine) as s:
                s.add(row)
                s.commit()
        except IntegrityError:
            if any(n.channel == channel for n in self.notifications(agent, run_id=run_id)):
                return False
            raise
        return True

    def notifications(self, agent: str | None = None, *, run_id: str | None = None
                      ) -> list[NotificationRow]:
        """Recorded notifications (of ``agent``, of ``run_id``), oldest first."""
        with Session(self.engine) as s:
            stmt = select(NotificationRow).order_by(col(NotificationRow.id))
            if agent is not None:
                stmt = stmt.where(NotificationRow.agent == agent)
            if run_id is not None:
                stmt = stmt.where(NotificationRow.run_id == run_id)
            return list(s.exec(stmt).all())

TrialOutcome = bool | Exception
"""What storing one trial came to: True (stored), False (already stored), or why it was not."""


def _refuse_to_encode(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # None without the C module
_CANONICAL_PARTS: Any = (
    _make_encoder(
        None, _refuse_to_encode, json.encoder.encode_basestring, None, ":", ",", True, False, False
    )
    if _make_encoder is not None
    else None
)
"""The C encoder that :func:`~mindledger.canonical.canonical_json` runs (sorted keys, compact,
non-ASCII as itself, no NaN), made once instead of per call, and without its check for
circular references (what it refuses is refused again by ``canonical_json``, see
:func:`_trial_json`)."""


def _trial_json(value: Any) -> str:
    """``_json(value)``, the text of the canonical JSON, at a quarter less CPU (a trial stores
    four such values on the writer thread, which shares the GIL with the event loop): the same
    encoder (:data:`_CANONICAL_PARTS`) called directly, and text that is ASCII not encoded
    to UTF-8 and back. Whatever it cannot encode (NaN, a type JSON lacks, a cycle) is handed
    to ``_json``, which raises what it always raised; a lone surrogate, which UTF-8 cannot
    carry, raises ``UnicodeEncodeError`` as there."""
    if _CANONICAL_PARTS is None:
        return _json(value)
    try:
        text = "".join(_CANONICAL_PARTS(value, 0))
    except Exception:
        return _json(value)
    if not text.isascii():
        text.encode("utf-8")
    return text


class _TrialConnection:
    """Trial INSERTs over one raw DB-API connection (see :meth:`Store.trial_group_writer`)."""

    def __init__(self, store: Store, raw: Any) -> None:
        engine = store.engine
        mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self.store = store
        self.raw = raw
        self.sql = (
            f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) "
            f"VALUES ({', '.join([mark] * len(_TRIAL_COLUMNS))})"
        )
        self.integrity: type[Exception] = engine.dialect.loaded_dbapi.IntegrityError

    def values(self, rec: TrialRecord, now: Any) -> tuple[Any, ...]:
        """The row of ``rec``, in :data:`_TRIAL_COLUMNS` order, stamped ``now``."""
        return (
            rec.run_id,
            rec.agent,
            rec.item_id,
            rec.status,
            None if rec.answer is None else _trial_json(rec.answer),
            rec.raw_text,
            _trial_json(rec.transcript),
            rec.confidence,
            rec.correct,
            rec.score_value,
            rec.primary_error,
            None if rec.score is None else _trial_json(rec.score),
            rec.error,
            rec.turns,
            rec.tokens_in,
            rec.tokens_out,
            rec.latency_s,
            _trial_json(rec.provider),
            now,
        )

    def write_one(self, rec: TrialRecord) -> bool:
        return self._insert(rec, self.values(rec, self.store.clock()))

    def write_group(self, recs: Sequence[TrialRecord]) -> list[TrialOutcome]:
        outcomes: list[TrialOutcome] = []
        rows: list[tuple[Any, ...]] = []
        now = self.store.clock()  # the group is one transaction: its trials are stored at once
        for rec in recs:
            try:
                rows.append(self.values(rec, now))
                outcomes.append(True)
            except Exception as exc:  # e.g. a NaN in a transcript: canonical JSON refuses it
                outcomes.append(exc)
        if not rows:
            return outcomes
        cur = self.raw.cursor()
        try:
            if len(rows) == 1:
                cur.execute(self.sql, rows[0])
            else:
                cur.executemany(self.sql, rows)
            self.raw.commit()
            return outcomes
        except Exception:
            self.raw.rollback()
        finally:
            cur.close()
        # The group failed as a whole (a duplicate, a missing item, ...): one at a time, so
        # that each trial gets its own outcome and no storable trial is lost.
        todo = iter(rows)
        for i, outcome in enumerate(outcomes):
            if outcome is True:
                try:
                    outcomes[i] = self._insert(recs[i], next(todo))
                except Exception as exc:
                    outcomes[i] = exc
        return outcomes

    def _insert(self, rec: TrialRecord, values: tuple[Any, ...]) -> bool:
        cur = self.raw.cursor()
        try:
            cur.execute(self.sql, values)
            self.raw.commit()
        except self.integrity:
            self.raw.rollback()
            if (rec.agent, rec.item_id) in self.store._pairs(rec.run_id, rec.agent, rec.item_id):
                return False
            raise
        except BaseException:
            self.raw.rollback()
            raise
        finally:
            cur.close()
        return True


class StoredItems(Sequence[Item]):
    """A run's items in order, as stored: the ids and families are held, and the items are
    read from storage a page at a time, when asked for, each rebuilt (its id re-checked) when
    first asked for (:class:`ledger._item_bodies.ItemPage`, the matrices its items share parsed
    once: :class:`ledger._item_bodies.SharedMatrices`); only the last few pages used are
    kept. Iterating reads every page once, keeping none. Compares equal
    to any sequence of the same items."""

    PAGE = 256
    PAGES_KEPT = 8

    def __init__(self, store: Store, ids: list[str], families: list[str]) -> None:
        self.store = store
        self.ids = ids
        """The items' ids, in order."""
        self.families = families
        """The items' families, in order."""
        self._pages: OrderedDict[int, ItemPage] = OrderedDict()
        self._loads = SharedMatrices()

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> list[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | list[Item]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.ids)))]
        n = len(self.ids)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("item index out of range")
        number, offset = divmod(index, self.PAGE)
        page = self._pages.get(number)
        if page is None:
            page = self._pages[number] = self._load(number)
            if len(self._pages) > self.PAGES_KEPT:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        return page[offset]

    def __iter__(self) -> Iterator[Item]:
        for number in range(-(-len(self.ids) // self.PAGE)):
            yield from self._pages.get(number) or self._load(number)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<StoredItems: {len(self.ids)} items>"

    def _load(self, number: int) -> ItemPage:
        ids = self.ids[number * self.PAGE : (number + 1) * self.PAGE]
        bodies = self.store.item_bodies(ids)
        return ItemPage(ids, [bodies[item_id] for item_id in ids], loads=self._loads)


_ITEM_CHUNK = 500
"""Items read, and written, at a time when a run is created."""


def _insert_new_items(conn: sa.Connection, items: Mapping[str, Item]) -> int:
    """Insert the items (by id) that the items table does not hold yet, in the caller's
    transaction; those already stored are left as they are. Returns how many were written."""
    table = ItemRow.__table__  # type: ignore[attr-defined]
    have = set(conn.execute(sa.select(table.c.id).where(table.c.id.in_(list(items)))).scalars())
    rows = [
        {
            "id": it.id,
            "family": it.family,
            "generator": it.generator,
            "version": it.version,
            "seed": it.seed,
            "body_json": _json(it.to_dict()),
        }
        for item_id, it in items.items()
        if item_id not in have
    ]
    if rows:
        conn.execute(sa.insert(table), rows)
    return len(rows)


def _batches(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _chunks(seq: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]
