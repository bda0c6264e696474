"""The cross-model prediction matrix as numbers: from what each item came to (the records a
matrix run stores as trials) to the matrix of cells and self-advantages, and from a stored
matrix run back to that matrix (seed 002 §15.2; §18.1 "agent-prediction skill S per target").

:mod:`harness.matrix.runs` runs the matrix and stores each item's :class:`matrix.ItemOutcome` as
trials (each record's score is the :mod:`matrix` package's, read back by
:func:`matrix.read_score`);
:func:`summarise` (pure) turns outcomes into the matrix, with the intervals and tests
of :mod:`reports.matrix`; :func:`stored_summary` rebuilds a stored matrix run's matrix from its
items and trials alone (:meth:`MatrixSummary.to_dict` is its JSON); :func:`matrix_params` reads
what the run recorded; :func:`accompanying_matrix` finds the matrix run scheduled beside a
suite run (its params name the suite run it ``accompanies``), from which the profile takes
each agent's skill S (:func:`agent_skill`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ledger.models import TrialRow
from ledger.scoring import ScoreRecord, aggregate
from ledger.store import Store
from matrix import (
    OUTCOMES,
    SIMULATE,
    ZERO_SHOT,
    ItemOutcome,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    check_conditions,
    observed_count,
    read_score,
    second_order_triples,
)
from mindledger.disclosure import shown_seed, withholds
from mindledger.errors import UserError
from mindledger.items import Item
from nesttom import DEPTHS
from reports.matrix import (
    CellStats,
    ItemRecord,
    cell_statistics,
    holm_adjust,
    learning_slope,
    paired_contrast,
    self_advantage,
)
from reports.matrix_cells import (
    CellCounts,
    CellRow,
    cell_row,
    self_advantage_figures,
)
from reports.matrix_model import (
    ConditionSummary,
    DepthCells,
    MatrixSummary,
    PilotSummary,
    StoredRun,
)
from reports.matrix_runs import SUITE, accompanying_matrix
from reports.matrix_sections import (
    ConditionRow,
    ItemAnswers,
    past_seat_section,
    second_order_section,
)
from reports.matrix_skill import agent_skill
from reports.matrix_unreadable import NO_ANSWER, Unreadable

__all__ = [
    "OUTCOMES",
    "SIMULATE",
    "SUITE",
    "ZERO_SHOT",
    "ItemOutcome",
    "MatrixParams",
    "MatrixPlan",
    "MatrixSummary",
    "PredictionRecord",
    "SecondOrderRecord",
    "TargetRecord",
    "accompanying_matrix",
    "accompanying_summary",
    "agent_skill",
    "check_conditions",
    "matrix_params",
    "observed_count",
    "outcomes_from_trials",
    "pilot_summary",
    "second_order_triples",
    "stored_summary",
    "summarise",
]


@dataclass
class _Cell:
    records: list[tuple[str, ScoreRecord]] = field(default_factory=list)
    """(item id, record) of every scored prediction, population filled in at the end."""
    predictions: dict[str, tuple[Mapping[str, float], str] | None] = field(default_factory=dict)
    """Per item id: the committed (distribution, top-1), None for a penalised prediction."""
    predictor_errors: int = 0
    unparsed: int = 0
    unscored: int = 0
    rejected: int = 0
    replies: int = 0
    """Predictions that got a reply (every outcome but ``predictor_error``)."""


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


# -- what one item comes to: the records a matrix run stores as trials --------------------------


def outcomes_from_trials(rows: Iterable[TrialRow]) -> dict[str, ItemOutcome]:
    """The stored trials of a matrix run read back as outcomes, by base item id (trials not
    written by the matrix, and its exposure trials, are ignored; :func:`matrix.read_score`)."""
    targets: dict[str, dict[str, TargetRecord]] = {}
    preds: dict[str, dict[tuple[str, str, str], PredictionRecord]] = {}
    second: dict[str, dict[tuple[str, str, str], SecondOrderRecord]] = {}
    for row in rows:
        score = json.loads(row.score_json) if row.score_json else {}
        answer = json.loads(row.answer_json) if row.answer_json else None
        read = read_score(row.agent, row.item_id, score, answer, row.error)
        if read is None:
            continue
        item_id, rec = read
        if isinstance(rec, TargetRecord):
            targets.setdefault(item_id, {})[rec.agent] = rec
        elif isinstance(rec, PredictionRecord):
            preds.setdefault(item_id, {})[rec.predictor, rec.target, rec.condition] = rec
        elif isinstance(rec, SecondOrderRecord):
            second.setdefault(item_id, {})[rec.predictor, rec.about, rec.target] = rec
    return {
        iid: ItemOutcome(iid, targets.get(iid, {}), preds.get(iid, {}), second.get(iid, {}))
        for iid in {*targets, *preds, *second}
    }


def _collect(
    names: Sequence[str],
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    condition: str,
) -> tuple[dict[tuple[str, str], _Cell], dict[tuple[str, str], list[str]], dict[str, int]]:
    """The cells of one condition, the targets' answers and their lost samples."""
    cells = {(p, t): _Cell() for p in names for t in names}
    target_answers: dict[tuple[str, str], list[str]] = {}
    target_errors = dict.fromkeys(names, 0)
    for item in items:
        outcome = outcomes.get(item.id)
        if outcome is None:
            continue
        for t, rec in outcome.targets.items():
            if t in target_errors:
                target_errors[t] += rec.errors
            if rec.samples:
                target_answers[t, item.id] = list(rec.samples)
        for (p, t, c), pred in outcome.predictions.items():
            cell = cells.get((p, t))
            if cell is None or c != condition:
                continue
            if pred.outcome == "predictor_error":
                cell.predictor_errors += 1
                continue
            cell.replies += 1
            if pred.outcome == "unscored":
                cell.unscored += 1
                continue
            if pred.outcome == "unparsed":
                cell.unparsed += 1
                if not pred.observed:
                    continue
            if pred.outcome == "rejected":
                cell.rejected += 1
            assert pred.scores is not None
            cell.records.append(
                (item.id, ScoreRecord(pred.scores, pred.observed, own_answer=pred.own_answer))
            )
            if pred.outcome == "scored":
                assert pred.distribution is not None and pred.top1 is not None
                cell.predictions[item.id] = (pred.distribution, pred.top1)
            else:
                cell.predictions[item.id] = None
    return cells, target_answers, target_errors


CONDITION_METRICS = (("log_score", "log_score"), ("top1_accuracy", "top1_match"))
"""(figure, the ledger's per-prediction score) compared across conditions."""


@dataclass(frozen=True)
class MatrixPlan:
    """What a summary computes beyond the primary condition's cells, and how."""

    n_boot: int = 2000
    stats_seed: int = 0
    conditions: Sequence[str] = (ZERO_SHOT,)
    second_order: bool = False
    past_seats: Sequence[str] = ()


def summarise(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    outcomes: Mapping[str, ItemOutcome],
    plan: MatrixPlan = MatrixPlan(),
) -> MatrixSummary:
    """The matrix from the outcomes of ``items``, in the items' order; items without an
    outcome count as not run. Pure.

    With ``plan.second_order``, ``second_order`` has every (P, Q, T) cell's second-order
    figures (:func:`reports.matrix_sections.second_order_section`); with ``plan.past_seats``
    (agents marked ``past_seat``), ``past_seat`` has each predictor's S on every past seat
    beside its fresh-copy S (:func:`reports.matrix_sections.past_seat_section`).

    ``cells`` and ``self_advantage`` are those of the primary condition (``condition``:
    zero-shot when the run has it, else its first). With more than one condition,
    ``others`` has every other condition's cells and self-advantages, ``learning_curve`` each
    cell's slope over m (zero-shot is m = 0, ``observe:m``; with two values of m or more) and
    ``simulate_contrast`` each cell's simulate − zero-shot difference
    (:mod:`reports.matrix`), in log score and top-1 match, paired over items. When items carry
    a belief depth (NestToM items), ``by_depth`` has each depth's cells
    (:func:`depth_section`)."""
    n_boot, stats_seed = plan.n_boot, plan.stats_seed
    conditions = check_conditions(plan.conditions)
    primary = ZERO_SHOT if ZERO_SHOT in conditions else conditions[0]
    collected = {c: _collect(names, items, outcomes, c) for c in conditions}
    cells, target_answers, target_errors = collected[primary]

    def condition_summary(c: str) -> ConditionSummary:
        return _summarise(
            names, items, samples, collected[c][0], target_answers, target_errors, n_boot,
            stats_seed,
        )  # fmt: skip

    main = condition_summary(primary)
    seats = [s for s in plan.past_seats if s in names]
    past_seat = None
    if seats:
        past_seat = past_seat_section(
            names,
            {
                (p, t): _item_records(cell, t, names, target_answers)
                for (p, t), cell in cells.items()
                if p == t or t in seats
            },
            {(r.predictor, r.target): r.skill for r in main.cells},
            seats,
            n_boot=n_boot,
            stats_seed=stats_seed,
        )
    summary = MatrixSummary(
        main,
        primary,
        tuple(conditions),
        {c: condition_summary(c) for c in conditions if c != primary},
        second_order=second_order_section(
            names, items, outcomes, n_boot=n_boot, stats_seed=stats_seed
        ) if plan.second_order else None,
        past_seat=past_seat,
        by_depth=depth_section(
            names, items, samples, outcomes, primary, n_boot=n_boot, stats_seed=stats_seed
        ),
    )  # fmt: skip
    if len(conditions) == 1:
        return summary
    curve, contrast = _across_conditions(names, conditions, collected, plan)
    return replace(summary, learning_curve=curve, simulate_contrast=contrast)


def _across_conditions(
    names: Sequence[str],
    conditions: Sequence[str],
    collected: Mapping[str, tuple[Mapping[Pair, _Cell], Any, Any]],
    plan: MatrixPlan,
) -> tuple[list[ConditionRow], list[ConditionRow]]:
    """Each cell's learning curve over m and its simulate − zero-shot contrast."""
    n_boot, stats_seed = plan.n_boot, plan.stats_seed

    def per_item(c: str, p: str, t: str, key: str) -> dict[str, float]:
        return {iid: float(r.scores[key]) for iid, r in collected[c][0][p, t].records}

    curve_conditions = {m: c for c in conditions if (m := observed_count(c)) is not None}
    curve: list[ConditionRow] = []
    contrast: list[ConditionRow] = []
    for i, p in enumerate(names):
        for j, t in enumerate(names):
            if len(curve_conditions) >= 2:
                slopes = {
                    figure: learning_slope(
                        {m: per_item(c, p, t, key) for m, c in curve_conditions.items()},
                        np.random.default_rng([stats_seed, 3, i, j, k]),
                        n_boot=n_boot,
                    )
                    for k, (figure, key) in enumerate(CONDITION_METRICS)
                }
                curve.append(ConditionRow(p, t, slopes, m=sorted(curve_conditions)))
            if SIMULATE in conditions and ZERO_SHOT in conditions:
                differences = {
                    figure: paired_contrast(
                        per_item(SIMULATE, p, t, key),
                        per_item(ZERO_SHOT, p, t, key),
                        np.random.default_rng([stats_seed, 4, i, j, k]),
                        n_boot=n_boot,
                    )
                    for k, (figure, key) in enumerate(CONDITION_METRICS)
                }
                contrast.append(ConditionRow(p, t, differences))
    return curve, contrast


def _depth_order(label: str) -> tuple[int, str]:
    """NestToM's order of its depths (R0 … R5, R2-self after R2, R3-loop after R3); a label
    it does not know goes last."""
    return (DEPTHS.index(label) if label in DEPTHS else len(DEPTHS), label)


def depth_section(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    outcomes: Mapping[str, ItemOutcome],
    condition: str,
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> list[DepthCells]:
    """Skill by the depth of the belief the items ask about (seed 002 §15.2: R1/R2/R3 items;
    the NestToM items of the pilot carry their depth, ``R2-self`` and ``R3-loop`` apart): per
    depth, every (P, T) cell of ``condition`` on those items alone, with the same statistics
    as the whole matrix (Holm within the depth). Empty when no item has a depth. Pure."""
    labels = sorted(
        {str(d) for it in items if (d := it.meta.get("depth")) is not None}, key=_depth_order
    )
    out: list[DepthCells] = []
    for k, label in enumerate(labels):
        subset = [it for it in items if str(it.meta.get("depth")) == label]
        cells, target_answers, target_errors = _collect(names, subset, outcomes, condition)
        summary = _summarise(
            names,
            subset,
            samples,
            cells,
            target_answers,
            target_errors,
            n_boot,
            stats_seed + 1000 * (k + 1),
        )
        out.append(DepthCells(label, len(subset), summary.cells))
    return out


def _population(
    t: str, item_id: str, names: Sequence[str], target_answers: Mapping[tuple[str, str], list[str]]
) -> tuple[str, ...]:
    return tuple(a for u in names if u != t for a in target_answers.get((u, item_id), ()))


def _unreadable(
    cell: _Cell, target: str, target_answers: Mapping[tuple[str, str], list[str]]
) -> Unreadable:
    """What the cell could not read: the target's answers recorded as no answer on the cell's
    items, and the predictor's unparsed predictions."""
    answers = [
        a
        for iid in dict.fromkeys(iid for iid, _ in cell.records)
        for a in target_answers.get((target, iid), ())
    ]
    return Unreadable(
        sum(a == NO_ANSWER for a in answers), len(answers), cell.unparsed, cell.replies
    )


STATS_THREADS = max(1, min(4, os.cpu_count() or 1))
"""Threads computing a summary's bootstraps: each cell's and each target's resampling is
independent (its own seeded generator, so the figures do not depend on the threads) and
spends its time in numpy, which releases the GIL."""


Pair = tuple[str, str]
"""(predictor, target) of a cell."""


@dataclass(frozen=True)
class _Pending:
    """A cell whose statistics are being computed."""

    pair: Pair
    aggregated: Mapping[str, Any]
    """:func:`ledger.scoring.aggregate` of the cell's records (read by the statistics too)."""
    counts: CellCounts
    unreadable: Unreadable
    stats: Future[CellStats]


def _submit_cells(
    pool: ThreadPoolExecutor,
    names: Sequence[str],
    cells: Mapping[Pair, _Cell],
    target_answers: Mapping[Pair, list[str]],
    n_boot: int,
    stats_seed: int,
) -> tuple[list[_Pending], dict[Pair, list[ItemRecord]]]:
    """Each cell's ledger figures and counts, its statistics submitted to ``pool`` (each with
    its own seeded generator), and each cell's per-item records."""
    pending: list[_Pending] = []
    item_records: dict[Pair, list[ItemRecord]] = {}
    for (p, t), cell in cells.items():
        item_records[p, t] = _item_records(cell, t, names, target_answers)
        records = [
            ScoreRecord(
                r.scores,
                r.observed,
                own_answer=r.own_answer,
                population=_population(t, iid, names, target_answers),
            )
            for iid, r in cell.records
        ]
        agg = aggregate(records)
        stats = pool.submit(
            cell_statistics,
            item_records[p, t],
            np.random.default_rng([stats_seed, 1, names.index(p), names.index(t)]),
            n_boot=n_boot,
            aggregated=agg,
            self_cell=p == t,
        )
        counts = CellCounts(cell.predictor_errors, cell.unparsed, cell.unscored, cell.rejected)
        pending.append(_Pending((p, t), agg, counts, _unreadable(cell, t, target_answers), stats))
    return pending, item_records


def _finish_cells(pending: Sequence[_Pending]) -> list[CellRow]:
    """Each cell with its statistics (not estimable where it could not read enough), S's
    p-values adjusted over the cells (Holm)."""
    rows = [
        cell_row(c.pair, c.aggregated, c.stats.result(), c.counts, c.unreadable) for c in pending
    ]
    adjusted = holm_adjust([row.skill.p for row in rows])
    return [
        replace(row, skill=replace(row.skill, p_holm=p_holm))
        for row, p_holm in zip(rows, adjusted, strict=True)
    ]


def _per_item(
    items: Sequence[Item], names: Sequence[str], target_answers: Mapping[Pair, list[str]]
) -> list[ItemAnswers]:
    """Each item's prompt, every target's answers and how many distinct modal answers they
    have."""
    per_item = []
    for item in items:
        modes: dict[str, list[str]] = {}
        for t in names:
            answers = target_answers.get((t, item.id))
            if answers:
                counts: dict[str, int] = {}
                for a in answers:
                    counts[a] = counts.get(a, 0) + 1
                best = max(counts.values())
                modes[t] = sorted(a for a, c in counts.items() if c == best)
        per_item.append(
            ItemAnswers(
                item.id,
                item.prompt,
                {t: target_answers.get((t, item.id), []) for t in names},
                len({m[0] for m in modes.values()}),
            )
        )
    return per_item


def _summarise(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    cells: Mapping[Pair, _Cell],
    target_answers: Mapping[Pair, list[str]],
    target_errors: Mapping[str, int],
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> ConditionSummary:
    with ThreadPoolExecutor(STATS_THREADS) as pool:
        pending, item_records = _submit_cells(
            pool, names, cells, target_answers, n_boot, stats_seed
        )
        aggregates = {c.pair: c.aggregated for c in pending}
        advantages = {
            t: pool.submit(
                self_advantage,
                t,
                {p: item_records[p, t] for p in names},
                np.random.default_rng([stats_seed, 2, names.index(t)]),
                n_boot=n_boot,
                aggregated={p: aggregates[p, t] for p in names},
            )
            for t in names
        }
        rows = _finish_cells(pending)
        paired_by_target = {t: advantage.result() for t, advantage in advantages.items()}
    by_pair = {(row.predictor, row.target): row for row in rows}
    return ConditionSummary(
        tuple(names),
        len(items),
        samples,
        rows,
        self_advantage_figures(names, by_pair, paired_by_target),
        dict(target_errors),
        _per_item(items, names, target_answers),
    )


# -- stored matrix runs ------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixParams:
    """What a matrix run's params record (:func:`harness.matrix.runs.create_matrix_run`
    writes them), with the defaults of a run that recorded less."""

    samples: int
    """Answers asked of each target per item."""
    n_items: int | None = None
    """Items asked for (the run may hold fewer: a pilot keeps the divergent ones)."""
    agents: tuple[str, ...] = ()
    """The run's agents in matrix order (empty: the run's agents as stored)."""
    accompanies: str | None = None
    """The suite run it was scheduled beside, if any."""
    conditions: tuple[str, ...] = (ZERO_SHOT,)
    exposure: tuple[str, ...] = ()
    """Ids of the exposure items (asked of every target before any prediction)."""
    pilot: Mapping[str, Any] | None = None
    """The pilot's record, stored whole (:class:`PilotSummary` shows part of it)."""
    second_order: bool = False
    past_seats: tuple[str, ...] = ()

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> MatrixParams:
        """Read the params as stored (a JSON object)."""
        pilot = params.get("pilot")
        n_items = params.get("n_items")
        accompanies = params.get("accompanies")
        return cls(
            samples=int(params["samples"]),
            n_items=None if n_items is None else int(n_items),
            agents=tuple(str(n) for n in params.get("agents") or ()),
            accompanies=None if accompanies is None else str(accompanies),
            conditions=tuple(str(c) for c in params.get("conditions") or (ZERO_SHOT,)),
            exposure=tuple(str(e) for e in params.get("exposure") or ()),
            pilot=pilot if isinstance(pilot, Mapping) else None,
            second_order=bool(params.get("second_order")),
            past_seats=tuple(str(s) for s in params.get("past_seats") or ()),
        )


def matrix_params(store: Store, run_id: str) -> MatrixParams:
    """A matrix run's params (UserError for a run that is not one)."""
    run = store.get_run(run_id)
    if run.suite != SUITE:
        raise UserError(f"run {run_id} is a {run.suite!r} run, not a matrix run")
    params = json.loads(run.params_json)
    if not isinstance(params, Mapping) or "samples" not in params:
        raise UserError(f"run {run_id} is a matrix run whose params do not say its samples")
    return MatrixParams.of(params)


def stored_summary(
    store: Store,
    run_id: str,
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
    reveal_held_out: bool = False,
) -> MatrixSummary:
    """The matrix of a stored matrix run, rebuilt from its stored items and trials alone (the
    same numbers the run returned), with the run's facts (:class:`StoredRun`: its seed None
    for a held-out run unless ``reveal_held_out``, operators only; the suite run it
    ``accompanies``, if any) and its pilot. A held-out run's items are withheld from its JSON
    unless ``reveal_held_out`` (:func:`mindledger.disclosure.disclosed_matrix`)."""
    params = matrix_params(store, run_id)
    run = store.get_run(run_id)
    names = list(params.agents) or [a.name for a in store.run_agents(run_id)]
    exposure = set(params.exposure)
    items = [it for it in store.run_items(run_id) if it.id not in exposure]
    outcomes = outcomes_from_trials(store.trials(run_id))
    plan = MatrixPlan(
        n_boot=n_boot,
        stats_seed=stats_seed,
        conditions=params.conditions,
        second_order=params.second_order,
        past_seats=params.past_seats,
    )
    summary = summarise(names, items, params.samples, outcomes, plan)
    stored = StoredRun(
        run_id,
        shown_seed(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out),
        bool(run.held_out),
        run.status,
        params.accompanies,
        len(exposure),
        withholds=withholds(held_out=bool(run.held_out), reveal_held_out=reveal_held_out),
    )
    summary = replace(summary, stored=stored)
    if stored.withholds:  # not even in memory: the dashboard and the API hold this object
        summary = summary.withheld()
    pilot = params.pilot
    if pilot is not None:
        summary = replace(summary, pilot=PilotSummary.of(pilot))
        if not pilot.get("divergent"):
            summary = summary.with_not_divergent(str(pilot.get("verdict")))
    return summary


def pilot_summary(record: Mapping[str, Any]) -> PilotSummary:
    """What a summary shows of a pilot's record (stored whole in the run's params): its
    verdict, method, thresholds, K, counts kept and dropped, per kind."""
    return PilotSummary.of(record)


def accompanying_summary(
    store: Store, run_id: str, *, n_boot: int = 2000, stats_seed: int = 0
) -> MatrixSummary | None:
    """The matrix of the matrix run that accompanies the suite run ``run_id`` (None if none
    does), for the profile's skill S."""
    matrix_id = accompanying_matrix(store, run_id)
    if matrix_id is None:
        return None
    return stored_summary(store, matrix_id, n_boot=n_boot, stats_seed=stats_seed)


def _item_records(
    cell: _Cell, t: str, names: Sequence[str], target_answers: Mapping[tuple[str, str], list[str]]
) -> list[ItemRecord]:
    return [
        ItemRecord(
            iid,
            tuple(r.observed),
            None if (pr := cell.predictions.get(iid)) is None else pr[0],
            None if pr is None else pr[1],
            r.own_answer,
            _population(t, iid, names, target_answers),
        )
        for iid, r in cell.records
    ]
