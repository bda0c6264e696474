"""A matrix run's trials: each item's outcome stored as trials (one transaction per group of
finished items), read back to know what is left to run (:mod:`harness.matrix.runs`).

Each trial's score is the typed record's (:mod:`matrix`'s ``to_score``), read back by
:func:`matrix.read_score`: one per target on the base item, one per prediction (and
second-order prediction) on its prediction item, one per target on each exposure item.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence

from harness.matrix.asking import Reply
from harness.run.execution import PendingWork, settle_status
from ledger.store import Store, TrialOutcome, TrialRecord
from matrix import (
    FAILURE_SOURCE_FAMILIES,
    ZERO_SHOT,
    ExposureRecord,
    ItemOutcome,
    Observation,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    check_conditions,
    failure_source_ok,
    observed_answer,
    prediction_item,
    second_order_item,
    second_order_triples,
)
from mindledger.items import Item
from reports.matrix_summary import matrix_params

__all__ = [
    "FailureTrials",
    "ItemWriter",
    "Observations",
    "exposure_trial",
    "interrupt_run",
    "item_done",
    "matrix_run_done",
    "missing_matrix_items",
    "observations",
    "outcome_trials",
    "settle",
    "store_trials",
    "stored_exposure",
    "suite_trials",
    "trials_of_all",
]

log = logging.getLogger("mindledger.matrix")

Observations = Mapping[str, Sequence[Observation]]
"""Per target, its recorded answers to the run's exposure items (what ``observe:m`` shows)."""
FailureTrials = Mapping[str, Mapping[str, Sequence[bool]]]
"""Per agent, its correct flags by item id (its real trials, e.g. of a suite run)."""


def _target_trial(run_id: str, item: Item, rec: TargetRecord) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        agent=rec.agent,
        item_id=item.id,
        status="ok" if rec.samples else "api_error",
        transcript=[],
        answer=list(rec.samples),
        score=rec.to_score(),
        error=None if rec.samples else "every sample of the target failed",
    )


def exposure_trial(run_id: str, item: Item, agent: str, reply: Reply) -> TrialRecord:
    """The trial of ``agent``'s ``reply`` to the exposure ``item``."""
    answer = None if reply.error is not None else observed_answer(item, reply.answer)
    return TrialRecord(
        run_id=run_id,
        agent=agent,
        item_id=item.id,
        status="api_error" if reply.error is not None else "ok",
        transcript=[],
        answer=answer,
        score=ExposureRecord(agent, answer).to_score(),
        error=reply.error,
    )


def _predictor_trial(
    run_id: str, pitem: Item, item: Item, rec: PredictionRecord | SecondOrderRecord
) -> TrialRecord:
    """A predictor's trial on a prediction or second-order item about ``item``."""
    return TrialRecord(
        run_id=run_id,
        agent=rec.predictor,
        item_id=pitem.id,
        status="api_error" if rec.outcome == "predictor_error" else "ok",
        transcript=[],
        answer=None if rec.distribution is None else dict(rec.distribution),
        score=rec.to_score(item.id),
        score_value=None if rec.scores is None else float(rec.scores["top1_match"]),
        error=rec.error,
    )


def outcome_trials(
    run_id: str,
    item: Item,
    outcome: ItemOutcome,
    samples: int,
    observations: Observations | None = None,
) -> tuple[list[Item], list[TrialRecord]]:
    """The prediction items and the trials that store ``outcome``: one per target (on the
    base item) and one per prediction (on its :func:`matrix.prediction_item`)."""
    pitems: list[Item] = []
    trials = [_target_trial(run_id, item, rec) for rec in outcome.targets.values()]
    for (p, t, c), rec in outcome.predictions.items():
        pitem = prediction_item(item, p, t, samples, c, (observations or {}).get(t, ()))
        pitems.append(pitem)
        trials.append(_predictor_trial(run_id, pitem, item, rec))
    for (p, q, t), srec in outcome.second_order.items():
        pitem = second_order_item(item, p, q, t, samples)
        pitems.append(pitem)
        trials.append(_predictor_trial(run_id, pitem, item, srec))
    return pitems, trials


def item_done(
    item: Item,
    names: Sequence[str],
    samples: int,
    done: set[tuple[str, str]],
    conditions: Sequence[str] = (ZERO_SHOT,),
    observations: Observations | None = None,
    *,
    second_order: bool = False,
) -> bool:
    """Whether every trial of ``item`` (each target's, each prediction's, each second-order
    prediction's with ``second_order``) is stored."""
    seen = observations or {}
    return (
        all((t, item.id) in done for t in names)
        and all(
            (p, prediction_item(item, p, t, samples, c, seen.get(t, ())).id) in done
            for p in names
            for t in names
            for c in conditions
        )
        and (
            not second_order
            or all(
                (p, second_order_item(item, p, q, t, samples).id) in done
                for p, q, t in second_order_triples(names)
            )
        )
    )


def observations(
    exposure: Sequence[Item], answers: Mapping[tuple[str, str], str | None], names: Sequence[str]
) -> dict[str, list[Observation]]:
    """Each target's answers to the exposure items, in their order (unanswered ones skipped)."""
    out: dict[str, list[Observation]] = {}
    for t in names:
        out[t] = [
            (e.id, e.prompt, answer)
            for e in exposure
            if (answer := answers.get((t, e.id))) is not None
        ]
    return out


def stored_exposure(store: Store, run_id: str, ids: set[str]) -> dict[tuple[str, str], str | None]:
    """Each (target, exposure item id)'s stored answer, of the exposure items ``ids``."""
    out: dict[tuple[str, str], str | None] = {}
    for row in store.trials(run_id):
        if row.item_id in ids:
            score = json.loads(row.score_json) if row.score_json else {}
            out[row.agent, row.item_id] = ExposureRecord.from_score(row.agent, score).answer
    return out


def suite_trials(store: Store, run_id: str) -> dict[str, dict[str, list[bool]]]:
    """The correct flags of every scored trial of the run ``run_id``, per agent and item id
    (where failure items take their targets' observed answers)."""
    out: dict[str, dict[str, list[bool]]] = {}
    for row in store.trials(run_id):
        if row.status == "ok" and row.correct is not None:
            out.setdefault(row.agent, {}).setdefault(row.item_id, []).append(bool(row.correct))
    return out


def trials_of_all(
    store: Store, run_id: str, targets: Sequence[str], trials: FailureTrials
) -> list[Item]:
    """The items of the suite run ``run_id`` that every one of ``targets`` has a scored trial on
    in ``trials`` (:func:`suite_trials`) and that a failure item can ask about
    (:func:`matrix.failure_source_ok`: NestToM and game items), in the run's order: what the
    nightly pilot draws its failure-prediction candidates from."""
    stored = store.run_items(run_id)
    ids = [
        i
        for i, family in zip(stored.ids, stored.families, strict=True)
        if family in FAILURE_SOURCE_FAMILIES and all(i in trials.get(t, {}) for t in targets)
    ]
    return [it for it in store.items_by_id(ids) if failure_source_ok(it)] if targets else []


def store_trials(
    store: Store, pitems: Sequence[Item], trials: Sequence[TrialRecord]
) -> list[TrialOutcome]:
    """Store the prediction items, then the trials (one transaction)."""
    store.add_items(pitems)
    with store.trial_group_writer() as write:
        return write(trials)


_Group = tuple[Sequence[Item], Sequence[TrialRecord], "asyncio.Future[list[TrialOutcome]]"]


class ItemWriter:
    """Stores finished items' trials with group commit, on the event loop's side: while one
    group is being written (in a thread), the items finishing meanwhile wait, and the next
    write takes all of them (their prediction items, then their trials, each kind in one
    transaction). Each caller returns once its own trials are committed, with one outcome per
    trial, as :func:`store_trials` gives them. A matrix run writes an item every few
    milliseconds: a transaction each would collide with the ledger's on the same database."""

    def __init__(self, store: Store):
        self.store = store
        self._pending: list[_Group] = []
        self._flushing: asyncio.Task[None] | None = None

    async def write(
        self, pitems: Sequence[Item], trials: Sequence[TrialRecord]
    ) -> list[TrialOutcome]:
        future: asyncio.Future[list[TrialOutcome]] = asyncio.get_running_loop().create_future()
        self._pending.append((pitems, trials, future))
        if self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                groups, self._pending = self._pending, []
                try:
                    results = await asyncio.to_thread(
                        store_trials,
                        self.store,
                        [it for pitems, _, _ in groups for it in pitems],
                        [t for _, trials, _ in groups for t in trials],
                    )
                except BaseException as exc:
                    for _, _, future in groups:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                start = 0
                for _, trials, future in groups:
                    if not future.done():
                        future.set_result(results[start : start + len(trials)])
                    start += len(trials)
        finally:
            self._flushing = None


def interrupt_run(store: Store, run_id: str) -> None:
    """Mark the run ``interrupted`` (unless complete); a failure to is logged, not raised."""
    try:
        store.transition_run(run_id, "interrupted", unless=("complete",))
    except Exception:
        log.warning("could not mark matrix run %s interrupted", run_id, exc_info=True)


def settle(store: Store, run_id: str, others_pending: PendingWork | None) -> str | None:
    """A matrix run's completion bookkeeping (as :func:`harness.run.execution.settle_run` for a
    suite run): every trial of every item stored (:func:`matrix_run_done`), ``complete``
    (only the first caller writes); else ``incomplete`` when ``others_pending()`` says no other
    batch of it is queued or running (None: that cannot be known, nothing is written). Returns
    the status written."""
    done = matrix_run_done(store, run_id)
    return settle_status(store, run_id, done=done, others_pending=others_pending)


def missing_matrix_items(store: Store, run_id: str) -> list[str]:
    """Ids of the matrix run's items (not its exposure items) without every trial, in the
    run's order: what is left to execute. With an exposure item unanswered, every item (the
    ids of its ``observe:m`` predictions depend on those answers)."""
    return _missing(store, run_id)[1]


def matrix_run_done(store: Store, run_id: str) -> bool:
    """Whether the stored matrix run has every trial: each target's answer to every exposure
    item, and every item's — its targets', its predictions' (every condition) and, with
    second order, its second-order predictions'."""
    exposed, missing = _missing(store, run_id)
    return exposed and not missing


def _missing(store: Store, run_id: str) -> tuple[bool, list[str]]:
    """(whether every target answered every exposure item, :func:`missing_matrix_items`),
    from what the run has stored."""
    params = matrix_params(store, run_id)
    names = [ra.name for ra in store.run_agents(run_id)]
    exposure_ids = list(params.exposure)
    stored = list(store.run_items(run_id))
    by_id = {it.id: it for it in stored}
    exposure = [by_id[i] for i in exposure_ids if i in by_id]
    items = [it for it in stored if it.id not in set(exposure_ids)]
    done = store.done_pairs(run_id)
    if any((t, e.id) not in done for t in names for e in exposure):
        return False, [it.id for it in items]
    seen = observations(exposure, stored_exposure(store, run_id, set(exposure_ids)), names)
    samples = params.samples
    conditions = check_conditions(params.conditions)
    second_order = params.second_order
    return True, [
        it.id
        for it in items
        if not item_done(it, names, samples, done, conditions, seen, second_order=second_order)
    ]
