"""The cross-model prediction matrix (seed 002 §15.2, benchmark B9; B7 is its diagonal): the
run. Its items, conditions, pilot filter and records are the pure :mod:`matrix` package's; its
statistics are :mod:`reports.matrix_summary`'s.

Every agent predicts every agent, itself included: for each *divergent* item (an arbitrary-choice
question with no right answer, so that "predict T" cannot collapse into "solve the task") and each
ordered pair (P, T), the predictor P is asked, in a fresh conversation, for a probability
distribution over the answer the target T will give ("another AI model called T", or "a fresh
copy of yourself" when P is T), and separately for its own answer (the projection baseline).
Each distribution is committed to the prediction ledger **before** T is queried on that item;
then T is asked the item ``samples`` times (its answers are recorded against every prediction
about it, which gives the test-retest ceiling), and every prediction is revealed and scored by
the ledger (log score, Brier, top-1 match): :mod:`harness.matrix.protocol` plays one item.
:func:`run_matrix` aggregates the ledger's scores per (P, T) with
:func:`ledger.scoring.aggregate`: skill S against the better of the projection and
population-modal baselines, normalised by T's test-retest agreement, and the self-advantage
``metric(T→T) − mean over P≠T of metric(P→T)``.

Failures are counted, never hidden: a predictor's API error leaves no prediction (counted as
``predictor_errors``, excluded like any API error); a reply with no parseable distribution (after
the nudge) is scored with the ledger's worst-case penalty (``unparsed``); a target reply with no
parseable answer is recorded as the answer :data:`NO_ANSWER` (it *is* what the target did); a
target API error drops that sample (``target_errors``); if every sample of a target errors, the
predictions about it stay committed without answers (``unscored``) and the ledger expires them.

**A matrix is a run** (suite ``matrix``, :func:`create_matrix_run`): its agents (with their
specs, as any run's) and its divergent items are stored first, with its samples and agents in
its params (and ``accompanies``, the suite run it was scheduled beside). Each item's outcome is
stored as trials when the item is done, in one transaction: one trial per target on the base
item (its own answer and its samples) and one per prediction on its :func:`prediction_item`
(the distribution, top-1, own answer, the ledger's prediction id and scores;
:mod:`harness.matrix.trials`). So :func:`execute_matrix_run` resumes a run by skipping the items
already stored, and :func:`reports.matrix_summary.stored_summary` rebuilds the matrix from storage
alone.

**Items, the pilot and the conditions** (issue 14 items 2–4). :func:`plan_matrix_run` first
pilots candidates of every kind of :data:`matrix.KINDS` (arbitrary, preference, open, NestToM,
game, failure) through every target K times and stores the run on the divergent ones with the
pilot's :class:`~matrix.PilotRecord` in its params; a *not divergent* verdict stores a run with
no items, which asks nothing and reports the verdict instead of skill. An open item's answers
are recorded as cluster labels; a failure item's target is never asked it (its real trials, or
its scored answers to the underlying question, are the observed ``yes``/``no``). Each condition
(``zero-shot``; ``observe:m``, m past answers of the target on the run's *exposure* items,
answered once by every target before any prediction; ``simulate``) is its own prediction item,
commit and trial.

Every figure carries a hierarchical bootstrap interval and every cell and self-advantage a
sign-flip permutation test, Holm-adjusted over its family (:mod:`reports.matrix`). The reference
agents that calibrate the scale are :mod:`harness.matrix.asking`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness.agent import retries
from harness.agent.agents import ReferenceAgent
from harness.config.settings import Settings
from harness.config.workspace import SeedPolicy
from harness.matrix.asking import (
    MatrixAgent,
    Reply,
    answer_distribution,
    ask,
    check_agents,
)
from harness.matrix.pilot import run_pilot
from harness.matrix.protocol import ItemProtocol
from harness.matrix.trials import (
    FailureTrials,
    ItemWriter,
    exposure_trial,
    interrupt_run,
    item_done,
    matrix_run_done,
    missing_matrix_items,
    observations,
    outcome_trials,
    settle,
    store_trials,
    stored_exposure,
    suite_trials,
    trials_of_all,
)
from harness.model.local_model import ModelEndpoint
from harness.run.build import AgentSpec, built_agents, needs_local_model
from harness.run.execution import (
    LocalModelSource,
    PendingWork,
    model_at,
    model_per_batch,
    nothing_pending,
)
from harness.run.runner import NullProgress, ProgressSink
from harness.run.runs import create_run
from ledger.client import LedgerClient
from ledger.predictions import Ledger
from ledger.store import RunAgent, Store
from matrix import (
    DEFAULT_KINDS,
    DIVERGENT,
    FAMILY,
    MATRIX_FAMILY,
    MATRIX_POLICIES,
    NO_ANSWER,
    OUTCOMES,
    SIMULATE,
    TEMPLATES,
    VERSION,
    ZERO_SHOT,
    ItemOutcome,
    Observation,
    PilotFilter,
    PilotRecord,
    PredictionRecord,
    TargetRecord,
    candidate_counts,
    candidates,
    check_conditions,
    describe_target,
    failure_from,
    habit,
    is_failure,
    make_item,
    make_items,
    observed_count,
    prediction_item,
    second_order_item,
    second_order_triples,
)
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix_runs import SUITE
from reports.matrix_summary import MatrixPlan, matrix_params, stored_summary, summarise

__all__ = [
    "FAMILY",
    "GENERATOR",
    "MATRIX_FAMILY",
    "NO_ANSWER",
    "OUTCOMES",
    "SIMULATE",
    "SUITE",
    "TEMPLATES",
    "VERSION",
    "ZERO_SHOT",
    "ItemOutcome",
    "MatrixBatchResult",
    "MatrixOptions",
    "Observation",
    "PilotFilter",
    "PilotOptions",
    "PilotRecord",
    "PredictionRecord",
    "TargetRecord",
    "answer_distribution",
    "check_matrix_options",
    "create_matrix_run",
    "describe_target",
    "execute_matrix_batch",
    "execute_matrix_run",
    "habit",
    "is_matrix_run",
    "make_item",
    "make_items",
    "matrix_agents",
    "matrix_params",
    "matrix_run_done",
    "missing_matrix_items",
    "outcome_trials",
    "pilot_candidates",
    "pilot_items",
    "plan_matrix_run",
    "prediction_item",
    "run_matrix",
    "second_order_item",
    "stored_summary",
    "suite_trials",
]

GENERATOR = DIVERGENT

log = logging.getLogger("mindledger.matrix")

LEDGER_THREADS = 48
"""Threads making a matrix's ledger writes: the ledger groups the writes of concurrent
threads into one transaction, so more threads make fewer, larger transactions."""
ITEMS_PER_SLOT = 2
"""Items in flight per request slot and agent: an item waiting on the ledger or the store
holds no request, so twice the items keep the requests in flight near the limit."""


@dataclass(frozen=True)
class MatrixOptions:
    """How a matrix is run: what every item is asked (stored in a run's params), which items a
    new run draws, and how the result is computed. Each function reads the fields it needs:
    :func:`run_matrix` (given its items) neither draws nor stores them."""

    n_items: int = 20
    """Items a new run keeps (:func:`create_matrix_run`; at most, after a pilot)."""
    samples: int = 10
    """K: times each target is asked each item (≥ 2 gives the test-retest ceiling)."""
    conditions: Sequence[str] = (ZERO_SHOT,)
    """Prediction conditions (:func:`matrix.check_conditions`), each its own prediction."""
    second_order: bool = False
    """Also every (P, Q ≠ P, T) second-order prediction (B9; needs zero-shot)."""
    seed: int | None = None
    """Item seed of a new run (None: drawn by the seed policy)."""
    held_out: bool = False
    """Draw the seed from the held-out stream (a new run with no ``seed``)."""
    accompanies: str | None = None
    """The suite run a new run is scheduled beside (its failure items read its trials)."""
    concurrency: int = 64
    """Model requests in flight at once, across all agents."""
    n_boot: int = 2000
    """Bootstrap replicates per interval of the summary."""
    stats_seed: int = 0
    """Seed of the summary's bootstraps."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "conditions", tuple(self.conditions))


@dataclass(frozen=True)
class PilotOptions:
    """How :func:`plan_matrix_run` pilots its candidates."""

    kinds: Sequence[str] = DEFAULT_KINDS
    """Candidate kinds (:data:`matrix.KINDS`)."""
    n_candidates: int | None = None
    """Candidates put through every target (None: 5 × the run's items)."""
    rule: PilotFilter | None = None
    """The filter (None: :class:`~matrix.PilotFilter` with ``min_items`` at most the run's
    items, the ``random`` reference agents exempt from its consistency check, and one target
    enough when the matrix has one agent)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(self.kinds))


@dataclass(frozen=True)
class _Stored:
    """Where a stored run's outcomes go: ``others_pending`` and ``interrupt_on_failure`` as for
    :func:`harness.run.execution.execute_batch` (a queued batch: the run's other batches; a failure
    leaves the status to the queue's retries)."""

    store: Store
    run_id: str
    others_pending: PendingWork | None = nothing_pending
    interrupt_on_failure: bool = True


async def run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    options: MatrixOptions = MatrixOptions(),
    *,
    store: Store | None = None,
    run_id: str | None = None,
    progress: ProgressSink | None = None,
    exposure: Sequence[Item] = (),
    failure_trials: FailureTrials | None = None,
    past_seats: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the matrix: every ordered pair (P, T) of ``agents`` (P == T included) on every item
    under every condition of ``options``, each prediction committed to ``ledger`` before T is
    queried on the item. Returns the matrix (see the module docstring and
    ``cells``/``self_advantage`` in the result); ``options.n_boot`` bootstrap replicates from
    ``options.stats_seed`` give its intervals.

    ``options.second_order`` (B9; needs the zero-shot condition) adds, per item, a second-order
    prediction for every (P, Q, T) with P ≠ Q (n²(n − 1) of them,
    :func:`matrix.second_order_triples`): P's distribution of what Q commits for T's answer
    (:func:`matrix.second_order_item`). Order of operations on an item: every second-order
    prediction is committed **before any first-order prediction is committed** (so before Q
    commits, let alone reveals); after the first-order reveals, Q's revealed top-1 is recorded
    against P's second-order prediction as its observation (provenance: the hash of Q's
    committed distribution) and it is revealed; the matrix scores P's distribution against Q's
    committed one (:func:`reports.matrix.distribution_scores`). Without a revealed zero-shot
    prediction of Q about T, P's stays committed (``unscored``) and expires. ``past_seats``
    (B8; a stored run takes them from its agents' ``past_seat``) adds the ``past_seat`` section
    of a summary made in memory.

    ``options.conditions`` (:func:`matrix.check_conditions`): each (P, T, item, condition) is
    its own prediction, commit and trial. ``observe:m`` shows P the target's answers to the
    first m ``exposure`` items (other items of the run, asked of every target once before any
    prediction; never the item predicted). An open item's answers are recorded as cluster
    labels (:func:`matrix.observed_answer`). A failure item is never asked: its observed
    answers are the target's ``failure_trials`` on the underlying item when it has some, else
    the target is asked the underlying question ``samples`` times and each reply scored by its
    family (a predictor's own answer, likewise, is whether it answers the question correctly).

    With ``store`` and ``run_id`` (a stored matrix run, :func:`create_matrix_run`), each item's
    outcome is stored as trials when the item is done (one transaction), items already stored
    are skipped (resuming), the run moves to ``running``, then ``complete`` (``incomplete``
    if a trial could not be stored; ``interrupted`` if this raises), and the matrix returned is
    the stored run's (:func:`stored_summary`'s JSON). ``progress`` hears of every stored trial, per
    agent. An item interrupted midway runs again from the start: its earlier commitments stay
    in the ledger, never revealed, and expire with the penalty."""
    if (store is None) != (run_id is None):
        raise ValueError("give both store and run_id, or neither")
    stored = None if store is None or run_id is None else _Stored(store, run_id)
    ran = await _run_matrix(
        agents,
        items,
        ledger,
        options,
        stored=stored,
        progress=progress,
        exposure=exposure,
        failure_trials=failure_trials,
    )
    if stored is None:
        plan = MatrixPlan(
            n_boot=options.n_boot,
            stats_seed=options.stats_seed,
            conditions=check_conditions(options.conditions),
            second_order=options.second_order,
            past_seats=past_seats,
        )
        return summarise(list(agents), items, options.samples, ran.outcomes, plan).to_dict()
    summary = await asyncio.to_thread(
        stored_summary,
        stored.store,
        stored.run_id,
        n_boot=options.n_boot,
        stats_seed=options.stats_seed,
    )
    return summary.to_dict()


@dataclass(frozen=True)
class _Ran:
    """What :func:`_run_matrix` did."""

    outcomes: dict[str, ItemOutcome]
    """Each item's outcome, by item id (kept only without a store)."""
    items: int
    """Items run (in a stored run: those that lacked a trial)."""
    status: str | None
    """The run status the completion bookkeeping wrote, if any."""


def _checked_conditions(
    agents: Mapping[str, MatrixAgent], options: MatrixOptions, exposure: Sequence[Item]
) -> list[str]:
    """Refuse what a matrix cannot run (as :func:`check_matrix_options`, and exposure items
    too few for a condition); the conditions, normalised."""
    if options.samples < 1:
        raise UserError("--samples must be at least 1")
    if not agents:
        raise UserError("the matrix needs at least one agent")
    conditions = check_conditions(options.conditions)
    needed = max((observed_count(c) or 0 for c in conditions), default=0)
    if needed > len(exposure):
        raise UserError(
            f"condition observe:{needed} needs {needed} exposure items; the run has {len(exposure)}"
        )
    if options.second_order and ZERO_SHOT not in conditions:
        raise UserError(
            "second-order prediction needs the zero-shot condition: its ground truth is Q's "
            "committed zero-shot prediction"
        )
    check_agents(agents)
    return conditions


async def _run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    options: MatrixOptions,
    *,
    stored: _Stored | None = None,
    progress: ProgressSink | None = None,
    exposure: Sequence[Item] = (),
    failure_trials: FailureTrials | None = None,
) -> _Ran:
    """:func:`run_matrix` without the summary: the items run and the status written."""
    conditions = _checked_conditions(agents, options, exposure)
    run = _MatrixRun(
        agents,
        items,
        options,
        conditions,
        stored,
        progress or NullProgress(),
        list(exposure) if items else [],
        failure_trials,
    )
    clients = {p: ledger.client(p) for p in agents}
    missing = await run.prepare()
    # The ledger's writes run in threads, off the event loop, and the ledger groups the
    # writes of concurrent threads into one transaction (group commit).
    writer = ThreadPoolExecutor(LEDGER_THREADS, thread_name_prefix="matrix-ledger")

    async def in_ledger(call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(writer, call, *args)

    try:
        todo = await run.execute(clients, in_ledger, missing)
    except BaseException:
        if stored is not None and stored.interrupt_on_failure:
            await asyncio.to_thread(interrupt_run, stored.store, stored.run_id)
        raise
    finally:
        run.sink.stop()
        # ledger writes already handed to the threads finish before this returns, so what
        # the ledger holds afterwards is all this run will ever write to it
        writer.shutdown(wait=True)
    if stored is None:
        return _Ran(run.outcomes, todo, None)
    status = await asyncio.to_thread(settle, stored.store, stored.run_id, stored.others_pending)
    return _Ran(run.outcomes, todo, status)


@dataclass
class _MatrixRun:
    """The state of one :func:`_run_matrix`: what is stored, what is exposed, what is left."""

    agents: Mapping[str, MatrixAgent]
    items: Sequence[Item]
    options: MatrixOptions
    conditions: list[str]
    stored: _Stored | None
    sink: ProgressSink
    exposure: list[Item]
    failure_trials: FailureTrials | None
    outcomes: dict[str, ItemOutcome] = field(default_factory=dict)
    exposed: dict[tuple[str, str], str | None] = field(default_factory=dict)
    done: set[tuple[str, str]] = field(default_factory=set)
    observations: dict[str, list[Observation]] = field(default_factory=dict)
    todo: list[Item] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(self.agents)

    def _todo(self) -> list[Item]:
        """The items without every trial stored (every item without a store)."""
        if self.stored is None:
            return list(self.items)
        return [
            it
            for it in self.items
            if not item_done(
                it,
                self.names,
                self.options.samples,
                self.done,
                self.conditions,
                self.observations,
                second_order=self.options.second_order,
            )
        ]

    async def _read_exposure(self) -> None:
        """The stored answers to the exposure items, not this process's: a batch running
        beside this one may have stored its answer to an exposure item first, and every
        prediction of the run must show the same past answers."""
        assert self.stored is not None
        self.exposed = await asyncio.to_thread(
            stored_exposure, self.stored.store, self.stored.run_id, {e.id for e in self.exposure}
        )

    async def prepare(self) -> list[tuple[str, Item]]:
        """What is stored already; the exposure answers missing, returned; the progress
        started and the run moved to ``running`` when anything is left."""
        names = self.names
        self.todo = list(self.items)
        if self.stored is not None:
            store, run_id = self.stored.store, self.stored.run_id
            self.done = await asyncio.to_thread(store.done_pairs, run_id)
            await self._read_exposure()
        missing = [(t, e) for t in names for e in self.exposure if (t, e.id) not in self.done]
        if self.stored is None:
            return missing
        if not missing:  # the exposure trials name no prediction item: else start with those
            self.observations = observations(self.exposure, self.exposed, names)
            self.todo = self._todo()
        triples = len(second_order_triples(names)) if self.options.second_order else 0
        per_agent = len(self.items) * (
            1 + len(names) * len(self.conditions) + triples // len(names)
        ) + len(self.exposure)
        self.sink.start(
            dict.fromkeys(names, per_agent),
            {n: sum(1 for a, _ in self.done if a == n) for n in names},
        )
        if self.todo or missing:
            await asyncio.to_thread(
                store.transition_run, run_id, "running", unless=("running", "complete")
            )
        return missing

    async def _expose(self, asking: Callable[..., Any], t: str, e: Item) -> None:
        """Target ``t``'s one answer to the exposure item ``e``, stored when the run is."""
        reply: Reply = await asking(self.agents[t], e, "exposure")
        trial = exposure_trial(self.stored.run_id if self.stored else "", e, t, reply)
        self.exposed[t, e.id] = trial.answer
        if self.stored is not None:
            (done,) = await asyncio.to_thread(store_trials, self.stored.store, (), [trial])
            if done and not isinstance(done, Exception):
                self.sink.advance(t, correct=None, error=reply.error is not None)

    async def execute(
        self,
        clients: Mapping[str, LedgerClient],
        in_ledger: Callable[..., Any],
        missing: Sequence[tuple[str, Item]],
    ) -> int:
        """Ask the ``missing`` exposure answers (:meth:`prepare`), then run every item left;
        returns how many items ran."""
        options, names = self.options, self.names
        # `concurrency` bounds the model requests in flight; enough items are in flight to
        # fill it even when each is at its narrowest step (one own answer per agent).
        requests = asyncio.Semaphore(max(1, options.concurrency))
        slots = asyncio.Semaphore(max(1, ITEMS_PER_SLOT * -(-options.concurrency // len(names))))

        async def asking(agent: MatrixAgent, item: Item, *key: Any) -> Reply:
            if isinstance(agent, ReferenceAgent):
                return await ask(agent, item, *key)
            async with requests:
                retries.listen(functools.partial(self.sink.retried, agent.name))  # this task's
                return await ask(agent, item, *key)

        await asyncio.gather(*(self._expose(asking, t, e) for t, e in missing))
        if missing:
            if self.stored is not None:
                await self._read_exposure()
            self.observations = observations(self.exposure, self.exposed, names)
            if self.stored is not None:
                store, run_id = self.stored.store, self.stored.run_id
                self.done = await asyncio.to_thread(store.done_pairs, run_id)
                self.todo = self._todo()
        protocol = ItemProtocol(
            self.agents,
            options.samples,
            self.conditions,
            clients,
            asking,
            in_ledger,
            second_order=options.second_order,
            observations=self.observations,
            failure_trials=self.failure_trials,
        )
        writer = ItemWriter(self.stored.store) if self.stored is not None else None

        async def run_item(item: Item) -> None:
            async with slots:
                outcome = await protocol.run(item)
            if self.stored is None or writer is None:
                self.outcomes[item.id] = outcome
                return
            await self._store(writer, item, outcome)

        tasks = [asyncio.ensure_future(run_item(item)) for item in self.todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # gather leaves the other items running: stop them before the run is marked
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return len(self.todo)

    async def _store(self, writer: ItemWriter, item: Item, outcome: ItemOutcome) -> None:
        """Store ``item``'s outcome as trials; each stored trial is progress."""
        assert self.stored is not None
        run_id = self.stored.run_id
        pitems, trials = outcome_trials(
            run_id, item, outcome, self.options.samples, self.observations
        )
        results = await writer.write(pitems, trials)
        for trial, stored in zip(trials, results, strict=True):
            if isinstance(stored, Exception):
                log.warning(
                    "matrix run %s: trial of %s on %s not stored: %s",
                    run_id,
                    trial.agent,
                    trial.item_id,
                    stored,
                )
            elif stored:
                self.sink.advance(trial.agent, correct=None, error=trial.status == "api_error")


# -- stored matrix runs ------------------------------------------------------------------------


def is_matrix_run(store: Store, run_id: str) -> bool:
    """Whether ``run_id`` is a matrix run (its suite is ``matrix``)."""
    return store.get_run(run_id).suite == SUITE


def matrix_agents(planned: Sequence[RunAgent]) -> list[RunAgent]:
    """The agents of ``planned`` (a suite run's) that can take part in the matrix: every one
    but the reference agents whose policy has no meaning there, and the clairvoyant when a
    chat agent takes part (its targets' distributions must be known)."""

    def policy(ra: RunAgent) -> str | None:
        cfg = AgentSpec.from_json(ra.name, ra.spec).config
        return cfg.policy if cfg.adapter == "reference" else None

    kept = [ra for ra in planned if policy(ra) is None or policy(ra) in MATRIX_POLICIES]
    if any(policy(ra) is None for ra in kept):
        kept = [ra for ra in kept if policy(ra) != "clairvoyant"]
    return kept


FAILURE = "failure"
"""The failure-prediction candidate kind (drawn from the suite run's items when there is one)."""


def random_by_design(planned: Sequence[RunAgent]) -> tuple[str, ...]:
    """The agents of ``planned`` that answer at random by design (the ``random`` reference
    policy): the pilot does not drop a candidate for their inconsistency."""
    return tuple(
        ra.name
        for ra in planned
        if (cfg := AgentSpec.from_json(ra.name, ra.spec).config).adapter == "reference"
        and cfg.policy == "random"
    )


def pilot_candidates(n_items: int, n_candidates: int | None) -> int:
    """How many candidates the pilot draws: ``n_candidates``, by default 5 × ``n_items``."""
    return 5 * n_items if n_candidates is None else n_candidates


def check_matrix_options(
    *,
    samples: int,
    conditions: Sequence[str],
    second_order: bool = False,
    pilot_kinds: Sequence[str] | None = None,
    n_candidates: int = 0,
) -> list[str]:
    """Refuse, with a UserError and before anything is stored, options a matrix run cannot
    take: fewer than one sample (two with a pilot, given ``pilot_kinds``), an unknown
    condition, second-order prediction without the zero-shot condition, unknown item kinds or
    more candidates than they hold. Pure; returns the conditions as
    :func:`~matrix.check_conditions` normalises them."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    checked = check_conditions(conditions)
    if second_order and ZERO_SHOT not in checked:
        raise UserError(
            "--second-order needs the zero-shot condition: its ground truth is Q's committed "
            "zero-shot prediction"
        )
    if pilot_kinds is not None:
        if samples < 2:
            raise UserError("the pilot needs --samples of at least 2 (or --no-pilot)")
        candidate_counts(pilot_kinds, n_candidates)
    return checked


def create_matrix_run(
    store: Store,
    settings: Settings,
    *,
    planned: Sequence[RunAgent],
    options: MatrixOptions = MatrixOptions(),
    run_id: str | None = None,
    items: Sequence[Item] | None = None,
    exposure: Sequence[Item] | None = None,
    pilot: PilotRecord | None = None,
) -> tuple[str, int]:
    """Store a matrix run (suite ``matrix``): its agents, its items and its params
    (``samples``, ``n_items``, the agents' names in order, ``accompanies``: the suite run it
    accompanies, ``conditions``, ``exposure``: the ids of the items every target answers once
    for the ``observe:m`` conditions, ``pilot``: the pilot's record, when one chose the
    items, ``second_order``: whether every (P, Q ≠ P, T) second-order prediction is made,
    and ``past_seats``: the agents declared ``past_seat``), all but the last three from
    ``options``. Without ``items``, the first ``options.n_items`` divergent items of
    ``options.seed`` (drawn by the seed policy when None; held out when ``options.held_out``),
    and, when a condition observes, the next ones as exposure items. Returns (run id, seed)."""
    conditions = check_matrix_options(
        samples=options.samples,
        conditions=options.conditions,
        second_order=options.second_order,
    )
    needed = max((observed_count(c) or 0 for c in conditions), default=0)
    seed = options.seed
    if seed is None:
        seed = SeedPolicy.of(settings).draw_seed(held_out=options.held_out)
    if items is None:
        drawn = make_items(seed, options.n_items + needed)
        items, exposure = drawn[: options.n_items], drawn[options.n_items :]
    exposure = list(exposure or ())[:needed]
    if items and len(exposure) < needed:
        raise UserError(
            f"condition observe:{needed} needs {needed} exposure items; only {len(exposure)} "
            "are left beside the run's items"
        )
    if not items:
        exposure = []
    run_id, seed, _ = create_run(
        store,
        settings,
        suite=SUITE,
        planned=planned,
        seed=seed,
        held_out=options.held_out,
        run_id=run_id,
        items=[*items, *exposure],
        extra_params={
            "samples": options.samples,
            "n_items": options.n_items,
            "agents": [ra.name for ra in planned],
            "accompanies": options.accompanies,
            "conditions": list(conditions),
            "exposure": [e.id for e in exposure],
            "pilot": None if pilot is None else pilot.to_dict(),
            "second_order": options.second_order,
            "past_seats": [
                ra.name for ra in planned if AgentSpec.from_json(ra.name, ra.spec).config.past_seat
            ],
        },
    )
    return run_id, seed


def _exposure_pool(
    chosen: Sequence[Item], kept: Sequence[Item], candidates: Sequence[Item]
) -> list[Item]:
    """Items a pilot leaves for exposure: the kept ones beyond the ``chosen`` (the run's
    items), then the dropped ones; failure items aside (their targets are not asked them)."""
    taken = {it.id for it in chosen}
    kept_ids = {it.id for it in kept}
    extra = [it for it in kept if it.id not in taken]
    dropped = [it for it in candidates if it.id not in kept_ids]
    return [it for it in [*extra, *dropped] if not is_failure(it)]


async def pilot_items(
    agents: Mapping[str, MatrixAgent],
    seed: int,
    *,
    kinds: Sequence[str],
    n_candidates: int,
    samples: int,
    rule: PilotFilter | None = None,
    failure_trials: FailureTrials | None = None,
    concurrency: int = 64,
    ran: Sequence[Item] = (),
) -> tuple[list[Item], list[Item], PilotRecord]:
    """Draw ``n_candidates`` candidates of ``kinds`` from ``seed``
    (:func:`matrix.candidate_counts`), ask every agent each of them ``samples`` times and keep
    the divergent ones (:func:`harness.matrix.pilot.run_pilot`). The failure candidates ask
    about items of ``ran`` (those the targets ran in the suite run, whose trials are their
    observed answers: :func:`matrix.failure_from`), a seeded draw of them, and about generated
    NestToM and game items only when ``ran`` has too few. Returns (the kept items, every
    candidate, the record)."""
    check_agents(agents)
    counts = candidate_counts(kinds, n_candidates)
    order = np.random.default_rng([seed, 27]).permutation(len(ran))[: counts.get(FAILURE, 0)]
    drawn = [failure_from(seed, i, ran[int(j)]) for i, j in enumerate(order)]
    if drawn:
        counts[FAILURE] -= len(drawn)
    pool = [*candidates(seed, counts), *drawn]
    kept, record = await run_pilot(
        agents, pool, samples, ask, rule=rule, trials=failure_trials, concurrency=concurrency
    )
    return kept, pool, record


def plan_matrix_run(
    store: Store,
    settings: Settings,
    *,
    planned: Sequence[RunAgent],
    options: MatrixOptions = MatrixOptions(),
    pilot: PilotOptions = PilotOptions(),
    local_base_url: ModelEndpoint | None = None,
    run_id: str | None = None,
) -> tuple[str, int, PilotRecord]:
    """Pilot the candidates through every agent of ``planned``, then store the matrix run on
    the divergent ones (at most ``options.n_items``; :func:`create_matrix_run`) with the
    pilot's record in its params. ``pilot.n_candidates`` defaults to 5 × ``options.n_items``;
    ``pilot.rule`` to :class:`~matrix.PilotFilter` with ``min_items`` at most
    ``options.n_items``. A failure candidate's answers come from the agents' trials in the
    suite run ``options.accompanies`` when it has them. When the verdict is *not divergent*,
    the run is stored with no items: executing it asks nothing, and its summary says why
    instead of giving skill. The run is stored as ``run_id`` (default: a new id). Blocking;
    returns (run id, seed, record)."""
    n_items = options.n_items
    n_candidates = pilot_candidates(n_items, pilot.n_candidates)
    conditions = check_matrix_options(
        samples=options.samples,
        conditions=options.conditions,
        second_order=options.second_order,
        pilot_kinds=pilot.kinds,
        n_candidates=n_candidates,
    )
    rule = pilot.rule or PilotFilter(
        min_items=min(PilotFilter().min_items, n_items),
        min_targets=min(2, len(planned)),  # one agent: a one-target pilot (consistency only)
        exempt=random_by_design(planned),
    )
    used_seed = (
        SeedPolicy.of(settings).draw_seed(held_out=options.held_out)
        if options.seed is None
        else options.seed
    )
    accompanies = options.accompanies
    trials = suite_trials(store, accompanies) if accompanies else None
    ran = (
        trials_of_all(store, accompanies, [ra.name for ra in planned], trials)
        if accompanies and trials and FAILURE in pilot.kinds
        else []
    )

    async def go(base_url: ModelEndpoint | None) -> tuple[list[Item], list[Item], PilotRecord]:
        async with built_agents(
            planned, settings, seed=used_seed, store=None, local_base_url=base_url
        ) as agents:
            return await pilot_items(
                {a.name: a for a in agents},
                used_seed,
                kinds=pilot.kinds,
                n_candidates=n_candidates,
                samples=options.samples,
                rule=rule,
                failure_trials=trials,
                concurrency=options.concurrency,
                ran=ran,
            )

    if local_base_url is not None or not needs_local_model(planned):
        kept, pool, record = asyncio.run(go(local_base_url))
    else:
        with model_per_batch(settings)() as url:
            kept, pool, record = asyncio.run(go(url))
    chosen = kept[:n_items] if record.divergent else []
    run_id, seed = create_matrix_run(
        store,
        settings,
        planned=planned,
        options=replace(options, seed=used_seed, conditions=conditions),
        run_id=run_id,
        items=chosen,
        exposure=_exposure_pool(chosen, kept, pool) if chosen else [],
        pilot=record,
    )
    return run_id, seed, record


def execute_matrix_run(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    *,
    concurrency: int = 64,
    n_boot: int = 2000,
    stats_seed: int = 0,
    progress: ProgressSink | None = None,
    local_base_url: ModelEndpoint | None = None,
) -> dict[str, Any]:
    """Run (or resume) a stored matrix run in this process, as one batch of all its items
    (:func:`execute_matrix_batch`; the embedded model started for it when an agent needs it,
    unless ``local_base_url`` is given). Blocking; returns :func:`stored_summary`'s matrix as JSON."""
    asyncio.run(
        execute_matrix_batch(
            store,
            settings,
            ledger,
            run_id,
            concurrency=concurrency,
            progress=progress,
            local_model=None if local_base_url is None else model_at(local_base_url),
        )
    )
    return stored_summary(store, run_id, n_boot=n_boot, stats_seed=stats_seed).to_dict()


@dataclass(frozen=True)
class MatrixBatchResult:
    """What one :func:`execute_matrix_batch` did."""

    items: int
    """Items of the batch run (those that lacked a trial; 0: nothing was left to do)."""
    status: str | None
    """The run status the completion bookkeeping wrote (``complete`` or ``incomplete``)."""


async def execute_matrix_batch(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    *,
    item_ids: Collection[str] | None = None,
    concurrency: int = 64,
    progress: ProgressSink | None = None,
    local_model: LocalModelSource | None = None,
    others_pending: PendingWork | None = nothing_pending,
    interrupt_on_failure: bool = True,
) -> MatrixBatchResult:
    """Run the items ``item_ids`` (None: all) of a stored matrix run that lack a trial, each
    whole: every prediction about it committed, then its targets asked, its predictions
    revealed and its trials stored in one transaction. Then the run's completion bookkeeping.

    One path for the in-process matrix (:func:`execute_matrix_run`: every item, one batch)
    and a queue worker's batch (:mod:`harness.queue.batches`): the agents rebuilt from their stored
    specs, the items (and exposure items) from storage, the failure items' trials from the
    suite run it accompanies. An item is the unit: its protocol needs every predictor and
    every target, so a batch takes whole items and two batches share no item. Exposure items
    (the ``observe:m`` conditions) are answered by whichever batch finds them unanswered
    first; every batch then reads the answers back from storage, so all show the same ones.

    ``local_model`` gives the embedded model (default: started for this batch) and is asked
    only if an agent needs it; ``others_pending`` and ``interrupt_on_failure`` as for
    :func:`harness.run.execution.execute_batch`. Idempotent: an item stored is not run again."""
    params = await asyncio.to_thread(matrix_params, store, run_id)
    run = await asyncio.to_thread(store.get_run, run_id)
    planned = await asyncio.to_thread(store.run_agents, run_id)
    order = {n: i for i, n in enumerate(params.agents)}
    planned.sort(key=lambda ra: order.get(ra.name, len(order)))
    stored = list(await asyncio.to_thread(store.run_items, run_id))
    exposure_ids = list(params.exposure)
    by_id = {it.id: it for it in stored}
    exposure = [by_id[i] for i in exposure_ids if i in by_id]
    items = [it for it in stored if it.id not in set(exposure_ids)]
    if not items:  # a pilot found the candidates not divergent: nothing to ask
        done = await asyncio.to_thread(
            store.transition_run, run_id, "complete", unless=("complete",)
        )
        return MatrixBatchResult(0, "complete" if done else None)
    if item_ids is not None:
        wanted = set(item_ids)
        if unknown := wanted.difference(it.id for it in items):
            log.warning(
                "matrix run %s has no item(s) %s; skipped", run_id, ", ".join(sorted(unknown))
            )
        items = [it for it in items if it.id in wanted]
    accompanies = params.accompanies
    trials = (
        await asyncio.to_thread(suite_trials, store, str(accompanies))
        if accompanies and any(is_failure(it) for it in items)
        else None
    )
    options = MatrixOptions(
        samples=params.samples,
        conditions=params.conditions,
        second_order=params.second_order,
        concurrency=concurrency,
    )
    source = local_model or model_per_batch(settings)
    stack = contextlib.ExitStack()
    try:
        base_url = (
            await asyncio.to_thread(lambda: stack.enter_context(source()))
            if needs_local_model(planned)
            else None
        )
        async with built_agents(
            planned, settings, seed=run.seed, store=None, local_base_url=base_url
        ) as agents:
            ran = await _run_matrix(
                {a.name: a for a in agents},
                items,
                ledger,
                options,
                stored=_Stored(store, run_id, others_pending, interrupt_on_failure),
                progress=progress,
                exposure=exposure,
                failure_trials=trials,
            )
    finally:
        await asyncio.to_thread(stack.close)
    return MatrixBatchResult(ran.items, ran.status)
