"""The suite runner: fans trials out concurrently and stores each one as it completes.

A run is stored first (its agents and items, in one transaction); then every (agent, item) pair
without a trial is attempted. Each agent has its own pool of workers (its concurrency limit), so
a slow endpoint does not hold up a fast one. Attempts are scored with the item family's pure
scorer and handed to a single writer thread that stores them with group commit (whatever has
arrived since its last commit, in one transaction), so the event loop never waits on the disk
and a trial is durable before its progress is reported. The database enforces one trial per
(run, agent, item): ``resume`` simply runs the pairs that have none, and a batch retried
elsewhere cannot duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.agent import families, retries
from harness.agent.agents import Attempt
from harness.run.episodes import Seats, play_episode
from ledger.store import Store, StoredItems, TrialOutcome, TrialRecord
from mindledger import family as registry
from mindledger.items import Item

__all__ = ["AgentLike", "ProgressSink", "RunSummary", "TrialWriter", "execute_run"]

log = logging.getLogger("mindledger.runner")


class AgentLike(Protocol):
    name: str

    async def attempt(self, item: Item) -> Attempt: ...

    async def aclose(self) -> None: ...


class ProgressSink(Protocol):
    """Receives progress: totals per agent at the start, then one call per stored trial, one
    per stored trial that failed (an API error: ``what`` went wrong, as stored, its kind
    first: ``malformed: …``), and one per request an agent's adapter will retry (``kind`` and
    what happened: see :mod:`harness.agent.retries`)."""

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None: ...

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None: ...

    def failed(self, agent: str, what: str) -> None: ...

    def retried(self, agent: str, kind: str, what: str) -> None: ...

    def stop(self) -> None: ...


class NullProgress:
    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        return None

    def advance(self, agent: str, *, correct: bool | None, error: bool) -> None:
        return None

    def failed(self, agent: str, what: str) -> None:
        return None

    def retried(self, agent: str, kind: str, what: str) -> None:
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
    """One thread that stores trials with group commit: whatever has arrived since its last
    commit is written in one transaction (:meth:`ledger.store.Store.trial_group_writer`).

    ``done(inserted)`` is called once the trial's transaction has committed (so a trial is
    durable before anyone hears of it): on ``loop``, one call per group, when a loop is given,
    else on the writer thread. A trial that cannot be stored does not hold up the others; it
    gets no ``done`` call, and :meth:`flush` (and :meth:`close`) re-raise the first such failure.

    On a loop, :meth:`room` lets producers wait while more than :attr:`MAX_BACKLOG` trials are
    waiting to be stored, so that agents faster than the disk do not fill the memory.
    """

    MAX_GROUP = 1024
    """At most this many trials per transaction."""
    MAX_BACKLOG = 2048
    """Trials submitted but not yet stored beyond which :meth:`room` waits."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop | None = None):
        self.store = store
        self._loop = loop
        self._cond = threading.Condition()
        self._queue: list[tuple[TrialRecord, Callable[[bool], None]]] = []
        self._submitted = 0
        self._settled = 0
        self._failures: list[BaseException] = []
        self._broken: BaseException | None = None
        self._closing = False
        self._thread: threading.Thread | None = None
        self._wake_scheduled = False
        self._delivered = 0  # trials settled and reported on the loop (loop thread only)
        self._room = asyncio.Event()
        self.groups = 0
        """How many transactions the trials took."""

    def submit(self, rec: TrialRecord, done: Callable[[bool], None]) -> None:
        with self._cond:
            self._submitted += 1
            if self._broken is not None:
                self._failures.append(self._broken)
                self._settled += 1
                self._delivered += 1
                return
            self._queue.append((rec, done))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="trial-writer", daemon=True)
                self._thread.start()
            if self._loop is None:
                self._cond.notify()
                return
        # On a loop, the writer is woken once per loop iteration, for every trial submitted in
        # it: waking a thread per trial would cost more than writing the trial.
        if not self._wake_scheduled:
            self._wake_scheduled = True
            self._loop.call_soon(self._wake)

    @property
    def backlog(self) -> int:
        """Trials submitted whose outcome has not reached the loop yet (on a loop)."""
        return self._submitted - self._delivered

    async def room(self) -> None:
        """Wait (on the loop) until at most :attr:`MAX_BACKLOG` trials wait to be stored."""
        while self.backlog > self.MAX_BACKLOG:
            self._room.clear()
            await self._room.wait()

    def _wake(self) -> None:
        self._wake_scheduled = False
        with self._cond:
            self._cond.notify()

    def flush(self) -> None:
        """Wait for every submitted write; re-raise the first failure."""
        with self._cond:
            self._cond.notify()
            while self._settled < self._submitted:
                self._cond.wait()
            failures, self._failures = self._failures, []
        if failures:
            raise failures[0]

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            if self._thread is not None:
                self._thread.join()

    def _run(self) -> None:  # the writer thread
        try:
            with self.store.trial_group_writer() as write_group:
                while True:
                    with self._cond:
                        while not self._queue and not self._closing:
                            self._cond.wait()
                        if not self._queue:
                            return
                        group = self._queue[: self.MAX_GROUP]
                        del self._queue[: self.MAX_GROUP]
                        self.groups += 1
                    try:
                        outcomes: list[TrialOutcome] = write_group([rec for rec, _ in group])
                    except Exception as exc:  # the connection failed, not one trial
                        outcomes = [exc] * len(group)
                    self._settle(group, outcomes)
        except BaseException as exc:  # opening (or closing) the connection failed
            with self._cond:
                self._broken = exc
                group, self._queue = self._queue, []
            self._settle(group, [exc] * len(group))

    def _settle(
        self,
        group: list[tuple[TrialRecord, Callable[[bool], None]]],
        outcomes: Sequence[TrialOutcome | BaseException],
    ) -> None:
        calls: list[tuple[Callable[[bool], None], bool]] = []
        failures: list[BaseException] = []
        for (_rec, done), outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failures.append(outcome)
            else:
                calls.append((done, outcome))
        if self._loop is None:
            _call_all(calls, None)
        else:
            try:
                self._loop.call_soon_threadsafe(self._deliver, calls, len(group))
            except RuntimeError:  # the loop is closed: nobody is listening on it
                _call_all(calls, None)
        with self._cond:
            self._failures.extend(failures)
            self._settled += len(group)
            self._cond.notify_all()


    def _deliver(self, calls: list[tuple[Callable[[bool], None], bool]], settled: int) -> None:
        _call_all(calls, self._loop)  # on the loop
        self._delivered += settled
        if self.backlog <= self.MAX_BACKLOG:
            self._room.set()


def _call_all(
    calls: list[tuple[Callable[[bool], None], bool]], loop: asyncio.AbstractEventLoop | None
) -> None:
    for done, inserted in calls:
        try:
            done(inserted)
        except Exception as exc:  # one listener's bug must not silence the others
            if loop is None:
                log.exception("trial callback failed")
            else:
                loop.call_exception_handler({"message": "trial callback failed", "exception": exc})


_GC_YOUNGEST = 50_000
"""The youngest generation's collection threshold during a run (Python's default is 700): the
objects of a trial are freed by reference counting when it is stored, so at this threshold a
10,000-trial run at 256 in flight collects a few times, each walking at most some 50,000 young
objects (tens of milliseconds), where 700 made hundreds of collections."""
_gc_lock = threading.Lock()
_gc_runs = 0  # runs inside _steady_heap, in every thread
_gc_saved: tuple[tuple[int, int, int], bool] | None = None  # thresholds before, and whether we froze
_gc_started = 0  # runs this process has started: its first freezes without collecting first


@contextlib.contextmanager
def _steady_heap() -> Iterator[None]:
    """Make the cyclic garbage collector cheap for the duration of a run, and put it back.

    With hundreds of trials in flight, each trial's objects live long enough to be promoted
    to the oldest generation, so full collections come often, and each walks the whole heap:
    every module, setting and item alive (half a million objects for 10,000 items in memory),
    about 0.09 ms of CPU per trial, a fifth of the runner's. Two contained measures:

    - ``gc.freeze()``: everything alive when the run starts moves to the permanent
      generation, which collections do not walk (what of it dies is still freed by reference
      counting; only a cycle among it waits for the end); ``gc.unfreeze()`` at the end hands it
      back to the oldest generation. Only when nothing else has frozen objects: unfreezing
      would also undo someone else's freeze. A full collection comes first, so that cyclic
      garbage is not frozen with the rest (issue 27: in the daemon, whose runs follow each
      other with the API and the proxy busy beside them, garbage cycles left by one run and
      by the requests between runs were frozen by the next before any full collection could
      free them, run after run: a command agent's subprocess transports, a few thousand
      objects a night that ``bench/soak_daemon.py`` saw as RSS that never levelled off).
      One full collection a run: tens of milliseconds on a daemon's heap. Not before a
      process's first run (``mindledger run``): the garbage alive then is its start-up's, made
      once and bounded, and frozen only until the run ends; the collection would walk every
      object alive, 0.2 s with 10,000 items in memory (a twentieth of the run at 256 in
      flight in ``bench/bench_runner.py``).
    - a higher threshold for the youngest generation (:data:`_GC_YOUNGEST`), so that objects
      of trials in flight are mostly freed before a collection has to walk them.

    Together they take collection from 0.03–0.09 ms per trial (0.1 with the items paged in from
    storage) to about 0.001 (0.01) (``bench/bench_runner.py``, 10,000 trials at 256 in flight,
    timed with ``gc.callbacks``). Reference cycles made during
    the run are still collected. Runs may nest or overlap (in one loop or several threads):
    the first to start saves the settings and the last to end restores them, whatever the run
    raised.
    """
    global _gc_runs, _gc_saved, _gc_started
    with _gc_lock:
        _gc_runs += 1
        if _gc_runs == 1:
            thresholds = gc.get_threshold()
            freeze = gc.get_freeze_count() == 0
            _gc_saved = (thresholds, freeze)
            gc.set_threshold(max(thresholds[0], _GC_YOUNGEST), *thresholds[1:])
            if freeze:
                if _gc_started:  # garbage first: frozen, a dead cycle would outlive the run
                    gc.collect()
                gc.freeze()
        _gc_started += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0 and _gc_saved is not None:
                (thresholds, froze), _gc_saved = _gc_saved, None
                gc.set_threshold(*thresholds)
                if froze:
                    gc.unfreeze()


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
    score = result.to_dict()  # with its own copy of the details
    if att.parse_problem and att.answer is None:
        score["details"]["parse_problem"] = att.parse_problem
    rec.correct = result.correct
    rec.score_value = result.value
    rec.primary_error = result.primary_error
    rec.score = score
    return rec


async def execute_run(
    store: Store,
    run_id: str,
    agents: Sequence[AgentLike],
    items: Sequence[Item],
    *,
    concurrency: Mapping[str, int],
    progress: ProgressSink | None = None,
    seats: Seats | None = None,
) -> RunSummary:
    """Attempt every (agent, item) pair of the run that has no trial yet, storing each trial as
    it completes. Safe to call again after an interruption: finished pairs are skipped.
    ``seats`` says who sits across from each agent in agent-seat repeated games
    (:class:`harness.run.episodes.Seats`; default: only the ``self`` seat).

    Items are taken by position as the workers reach them, so a run's items read lazily from
    storage (:meth:`ledger.store.Store.run_items`) are never all in memory at once."""
    progress = progress or NullProgress()
    if isinstance(items, StoredItems):
        ids, item_families = items.ids, items.families
    else:
        ids = [it.id for it in items]
        item_families = [it.family for it in items]
    # every family is known before the first trial (UnknownFamilyError names the registered ones)
    plays = {name: registry.get(name).plays for name in set(item_families)}
    done = await asyncio.to_thread(store.done_pairs, run_id)  # a query: off the event loop
    # per agent, the positions of its items without a trial, last first (workers pop them)
    todo: dict[str, list[int]] = {
        a.name: [i for i in reversed(range(len(ids))) if (a.name, ids[i]) not in done]
        for a in agents
    }
    totals = {a.name: len(ids) for a in agents}
    already = {a.name: len(ids) - len(todo[a.name]) for a in agents}
    summary = RunSummary(run_id, 0.0, sum(len(v) for v in todo.values()), len(done))
    summary.per_agent = {a.name: AgentTally() for a in agents}
    del done
    writer = TrialWriter(store, asyncio.get_running_loop())
    progress.start(totals, already)
    start = time.perf_counter()

    def stored(agent: str, rec: TrialRecord) -> Callable[[bool], None]:
        def _cb(inserted: bool) -> None:  # on the event loop, once the trial is committed
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
            progress.advance(agent, correct=rec.correct, error=rec.status == "api_error")
            if rec.status == "api_error":
                progress.failed(agent, rec.error or "API error")

        return _cb

    async def worker(agent: AgentLike, queue: list[int]) -> None:
        retries.listen(functools.partial(progress.retried, agent.name))  # this task's requests
        while queue:
            i = queue.pop()
            item = items[i]
            if plays[item_families[i]] == "episode":
                att = await play_episode(agent, item, seats)
            else:
                att = await agent.attempt(item)
            rec = score_attempt(run_id, agent.name, item, att)
            writer.submit(rec, stored(agent.name, rec))
            if writer.backlog > writer.MAX_BACKLOG:
                await writer.room()

    with _steady_heap():  # the run's garbage collection: see _steady_heap
        tasks: list[asyncio.Task[None]] = []
        try:
            for agent in agents:
                queue = todo[agent.name]
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
