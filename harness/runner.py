"""The suite runner: fans trials out concurrently and stores each one as it completes.

A run is stored first (its agents and items, in one transaction); then every (agent, item) pair
without a trial is attempted. Each agent has its own pool of workers (its concurrency limit), so
a slow endpoint does not hold up a fast one. Attempts are scored with the item family's pure
scorer and handed to a single writer thread that writes each trial in its own transaction, so
the event loop never waits on the disk. The database enforces one trial per (run, agent, item):
``resume`` simply runs the pairs that have none, and a batch retried elsewhere cannot duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from harness import families
from harness.agents import Attempt
from harness.episodes import play_episode
from ledger.store import Store, TrialRecord
from mindledger import family as registry
from mindledger.items import Item

__all__ = ["AgentLike", "ProgressSink", "RunSummary", "TrialWriter", "execute_run"]


class AgentLike(Protocol):
    name: str

    async def attempt(self, item: Item) -> Attempt: ...

    async def aclose(self) -> None: ...


class ProgressSink(Protocol):
    """Receives progress: totals per agent at the start, then one call per stored trial."""

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None: ...

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None: ...

    def stop(self) -> None: ...


class NullProgress:
    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        return None

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None:
        return None

    def stop(self) -> None:
        return None


@dataclass
class AgentTally:
    trials: int = 0
    correct: int = 0
    scored: int = 0
    api_errors: int = 0
    unparsed: int = 0
    duplicates: int = 0


@dataclass
class RunSummary:
    """What one call of :func:`execute_run` did."""

    run_id: str
    wall_s: float
    attempted: int
    skipped: int
    per_agent: dict[str, AgentTally] = field(default_factory=dict)


class TrialWriter:
    """One thread that writes trials, each in its own transaction, in completion order."""

    def __init__(self, store: Store):
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trial-writer")
        self._pending: list[Future[bool]] = []
        self._lock = threading.Lock()
        self._writer = contextlib.ExitStack()
        self._write: Callable[[TrialRecord], bool] | None = None

    def _record(self, rec: TrialRecord) -> bool:  # on the writer thread only
        if self._write is None:
            self._write = self._writer.enter_context(self.store.trial_writer())
        return self._write(rec)

    def submit(self, rec: TrialRecord, done: Callable[[bool], None]) -> None:
        fut = self._pool.submit(self._record, rec)
        fut.add_done_callback(lambda f: done(f.result()) if f.exception() is None else None)
        with self._lock:
            self._pending.append(fut)

    def flush(self) -> None:
        """Wait for every submitted write; re-raise the first failure."""
        with self._lock:
            pending, self._pending = self._pending, []
        for fut in pending:
            fut.result()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._pool.submit(self._writer.close).result()
            self._pool.shutdown(wait=True)


def score_attempt(run_id: str, agent: str, item: Item, att: Attempt) -> TrialRecord:
    """Turn an attempt into a trial record: API errors are recorded unscored; everything else
    is scored by the family's scorer (no answer scores incorrect)."""
    rec = TrialRecord(
        run_id=run_id,
        agent=agent,
        item_id=item.id,
        status="not_applicable" if att.not_applicable else "api_error" if att.error else "ok",
        transcript=att.transcript,
        answer=att.answer,
        raw_text=att.raw_text,
        confidence=att.confidence,
        error=att.error,
        turns=att.turns,
        tokens_in=att.tokens_in,
        tokens_out=att.tokens_out,
        latency_s=att.latency_s,
        provider=att.provider,
    )
    if att.error or att.not_applicable:
        return rec
    result = families.score(item, att.answer)
    details = dict(result.details)
    if att.parse_problem and att.answer is None:
        details["parse_problem"] = att.parse_problem
    rec.correct = result.correct
    rec.score_value = result.value
    rec.primary_error = result.primary_error
    rec.score = result.to_dict() | {"details": details}
    return rec


async def execute_run(
    store: Store,
    run_id: str,
    agents: Sequence[AgentLike],
    items: Sequence[Item],
    *,
    concurrency: Mapping[str, int],
    progress: ProgressSink | None = None,
) -> RunSummary:
    """Attempt every (agent, item) pair of the run that has no trial yet, storing each trial as
    it completes. Safe to call again after an interruption: finished pairs are skipped."""
    progress = progress or NullProgress()
    # every family is known before the first trial (UnknownFamilyError names the registered ones)
    plays = {name: registry.get(name).plays for name in {it.family for it in items}}
    done = store.done_pairs(run_id)
    todo: dict[str, list[Item]] = {
        a.name: [it for it in items if (a.name, it.id) not in done] for a in agents
    }
    totals = {a.name: len(items) for a in agents}
    already = {a.name: len(items) - len(todo[a.name]) for a in agents}
    summary = RunSummary(run_id, 0.0, sum(len(v) for v in todo.values()), len(done))
    summary.per_agent = {a.name: AgentTally() for a in agents}
    writer = TrialWriter(store)
    loop = asyncio.get_running_loop()
    progress.start(totals, already)
    start = time.perf_counter()

    def stored(agent: str, rec: TrialRecord) -> Callable[[bool], None]:
        def _cb(inserted: bool) -> None:
            tally = summary.per_agent[agent]
            if not inserted:
                tally.duplicates += 1
                return
            tally.trials += 1
            if rec.status == "api_error":
                tally.api_errors += 1
            elif rec.status == "not_applicable":
                pass
            else:
                tally.scored += 1
                tally.correct += int(bool(rec.correct))
                tally.unparsed += int(rec.answer is None)
            loop.call_soon_threadsafe(
                functools.partial(
                    progress.advance, agent, correct=rec.correct, error=rec.status == "api_error"
                )
            )

        return _cb

    async def worker(agent: AgentLike, queue: list[Item]) -> None:
        while queue:
            item = queue.pop()
            if plays[item.family] == "episode":
                att = await play_episode(agent, item)
            else:
                att = await agent.attempt(item)
            rec = score_attempt(run_id, agent.name, item, att)
            writer.submit(rec, stored(agent.name, rec))

    tasks: list[asyncio.Task[None]] = []
    try:
        for agent in agents:
            queue = list(reversed(todo[agent.name]))
            n = max(1, min(concurrency.get(agent.name, 1), len(queue)))
            tasks.extend(
                asyncio.create_task(worker(agent, queue)) for _ in range(n if queue else 0)
            )
        if tasks:
            await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(writer.close)
        progress.stop()
    summary.wall_s = time.perf_counter() - start
    return summary
