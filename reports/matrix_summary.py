"""The cross-model prediction matrix as numbers: from what each item came to (the records a
matrix run stores as trials) to the matrix of cells and self-advantages, and from a stored
matrix run back to that matrix (seed 002 §15.2; §18.1 "agent-prediction skill S per target").

:mod:`harness.matrix` runs the matrix and stores each item's :class:`ItemOutcome` as trials;
:func:`summarise_outcomes` (pure) turns outcomes into the matrix, with the intervals and tests
of :mod:`reports.matrix`; :func:`summarise_run` rebuilds a stored matrix run's matrix from its
items and trials alone; :func:`accompanying_matrix` finds the matrix run scheduled beside a
suite run (its params name the suite run it ``accompanies``), from which the profile takes
each agent's skill S (:func:`agent_skill`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from ledger.models import RunRow, TrialRow
from ledger.scoring import ScoreRecord, aggregate
from ledger.store import Store
from mindledger.disclosure import shown_seed
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix import METRICS, ItemRecord, cell_statistics, holm_adjust, self_advantage

__all__ = [
    "OUTCOMES",
    "SUITE",
    "ItemOutcome",
    "PredictionRecord",
    "TargetRecord",
    "accompanying_matrix",
    "accompanying_summary",
    "agent_skill",
    "matrix_params",
    "outcomes_from_trials",
    "summarise_outcomes",
    "summarise_run",
]

SUITE = "matrix"
"""The suite name of a stored matrix run."""


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


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


# -- what one item comes to: the records a matrix run stores as trials --------------------------

OUTCOMES = ("scored", "rejected", "unparsed", "unscored", "predictor_error")
"""What became of one prediction: revealed and scored; revealed but rejected by the ledger
(penalised); no parseable distribution (penalised, never committed); committed but the target
gave no answer (left to expire); the predictor's API error (no prediction)."""


@dataclass(frozen=True)
class TargetRecord:
    """One agent's answers to one base item: its own answer (asked as a predictor, the
    projection baseline) and its ``samples`` answers as a target."""

    agent: str
    own: str | None
    samples: tuple[str, ...]
    errors: int = 0
    """Samples lost to API errors."""
    own_error: str | None = None


@dataclass(frozen=True)
class PredictionRecord:
    """One predictor's prediction of one target on one base item, and what became of it."""

    predictor: str
    target: str
    outcome: str
    """One of :data:`OUTCOMES`."""
    distribution: Mapping[str, float] | None = None
    top1: str | None = None
    own_answer: str | None = None
    prediction_id: str | None = None
    """The prediction ledger's id of the committed prediction."""
    scores: Mapping[str, Any] | None = None
    """The ledger's scores (the penalty for ``rejected`` and ``unparsed``)."""
    observed: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """Everything the matrix learned on one base item: what each target answered and what
    became of every prediction about it."""

    item_id: str
    targets: Mapping[str, TargetRecord]
    predictions: Mapping[tuple[str, str], PredictionRecord]


def outcomes_from_trials(rows: Iterable[TrialRow]) -> dict[str, ItemOutcome]:
    """The stored trials of a matrix run read back as outcomes, by base item id (trials not
    written by the matrix are ignored)."""
    targets: dict[str, dict[str, TargetRecord]] = {}
    preds: dict[str, dict[tuple[str, str], PredictionRecord]] = {}
    for row in rows:
        score = json.loads(row.score_json) if row.score_json else {}
        if score.get("scored_by") != "matrix":
            continue
        if score.get("role") == "target":
            targets.setdefault(row.item_id, {})[row.agent] = TargetRecord(
                row.agent,
                score.get("own_answer"),
                tuple(str(a) for a in score.get("samples") or ()),
                int(score.get("errors") or 0),
                score.get("own_error"),
            )
        elif score.get("role") == "prediction":
            answer = json.loads(row.answer_json) if row.answer_json else None
            preds.setdefault(str(score["item"]), {})[row.agent, str(score["target"])] = (
                PredictionRecord(
                    row.agent,
                    str(score["target"]),
                    str(score["outcome"]),
                    distribution=answer,
                    top1=score.get("top1"),
                    own_answer=score.get("own_answer"),
                    prediction_id=score.get("prediction"),
                    scores=score.get("scores"),
                    observed=tuple(str(a) for a in score.get("observed") or ()),
                    error=row.error,
                )
            )
    return {
        iid: ItemOutcome(iid, targets.get(iid, {}), preds.get(iid, {}))
        for iid in {*targets, *preds}
    }


def summarise_outcomes(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    outcomes: Mapping[str, ItemOutcome],
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> dict[str, Any]:
    """The matrix (as :func:`run_matrix` returns it) from the outcomes of ``items``, in the
    items' order; items without an outcome count as not run. Pure."""
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
        for pair, pred in outcome.predictions.items():
            cell = cells.get(pair)
            if cell is None:
                continue
            if pred.outcome == "predictor_error":
                cell.predictor_errors += 1
                continue
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
    return _summarise(
        names, items, samples, cells, target_answers, target_errors, n_boot, stats_seed
    )


def _population(
    t: str, item_id: str, names: Sequence[str], target_answers: Mapping[tuple[str, str], list[str]]
) -> tuple[str, ...]:
    return tuple(a for u in names if u != t for a in target_answers.get((u, item_id), ()))


def _merge_statistics(row: dict[str, Any], stats: Mapping[str, Any]) -> None:
    """Add :func:`reports.matrix.cell_statistics`' intervals and test to ``row`` (from
    :func:`ledger.scoring.aggregate`): each metric gets ``ci``, ``interval``, ``status`` and,
    when it has a value but no interval, the ``reason``; the skill also ``base_kind``,
    ``test`` and ``p``. The point values stay the ledger's (they are the same numbers)."""
    for m in METRICS:
        est = stats[m]
        row[m].update(ci=est["ci"], interval=est["interval"], status=est["status"])
        if row[m]["value"] is not None and est.get("reason"):
            row[m]["reason"] = est["reason"]
    row["skill"].update(base_kind=stats["base_kind"], test=stats["test"], p=stats["p"])


def _merge_self_advantage(entry: dict[str, Any], paired: Mapping[str, Any]) -> None:
    """Add the paired interval and test of :func:`reports.matrix.self_advantage` to a
    self-advantage ``entry``. They are paired over the items every predictor of the target
    was scored on; when that is not every item of every cell, the point value (over each cell's
    own items) and the interval's centre differ, and ``paired_value`` shows the latter."""
    entry.update(
        n=paired["n"],
        ci=paired["ci"],
        interval=paired["interval"],
        test=paired["test"],
        p=paired["p"],
        status=paired["status"],
    )
    if entry["value"] is not None:
        if paired["value"] is None or not math.isclose(
            entry["value"], paired["value"], rel_tol=1e-9, abs_tol=1e-12
        ):
            entry["paired_value"] = paired["value"]
        if paired.get("reason"):
            entry["reason"] = paired["reason"]


def _summarise(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    cells: Mapping[tuple[str, str], _Cell],
    target_answers: Mapping[tuple[str, str], list[str]],
    target_errors: Mapping[str, int],
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> dict[str, Any]:
    out_cells: list[dict[str, Any]] = []
    by_pair: dict[tuple[str, str], dict[str, Any]] = {}
    item_records: dict[tuple[str, str], list[ItemRecord]] = {}
    for (p, t), cell in cells.items():
        item_records[p, t] = [
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
        row = {
            "predictor": p,
            "target": t,
            "self": p == t,
            **agg,
            "predictor_errors": cell.predictor_errors,
            "unparsed": cell.unparsed,
            "unscored": cell.unscored,
            "rejected": cell.rejected,
        }
        stats = cell_statistics(
            item_records[p, t],
            np.random.default_rng([stats_seed, 1, names.index(p), names.index(t)]),
            n_boot=n_boot,
        )
        _merge_statistics(row, stats.to_dict())
        out_cells.append(row)
        by_pair[p, t] = row
    for row, p_holm in zip(
        out_cells, holm_adjust([row["skill"]["p"] for row in out_cells]), strict=True
    ):
        row["skill"]["p_holm"] = p_holm

    def value(row: dict[str, Any], metric: str) -> float | None:
        v = row[metric]["value"]
        return None if v is None else float(v)

    self_adv: dict[str, dict[str, Any]] = {}
    for t in names:
        others = [p for p in names if p != t]
        entry: dict[str, Any] = {}
        for metric, key in (
            ("log_score", "log_score"),
            ("brier", "brier"),
            ("top1_accuracy", "top1_accuracy"),
            ("skill", "skill"),
        ):
            own_v = value(by_pair[t, t], key)
            other_vs = [value(by_pair[p, t], key) for p in others]
            if not others:
                entry[metric] = {"value": None, "reason": "no other predictor of this target"}
            elif own_v is None:
                entry[metric] = {
                    "value": None,
                    "reason": f"{t} predicting itself has no {metric}: "
                    + str(by_pair[t, t][key].get("reason")),
                }
            elif any(v is None for v in other_vs):
                missing = [p for p, v in zip(others, other_vs, strict=True) if v is None]
                entry[metric] = {
                    "value": None,
                    "reason": f"no {metric} for {', '.join(missing)} predicting {t}",
                }
            else:
                mean_other = _mean([v for v in other_vs if v is not None])
                assert mean_other is not None
                entry[metric] = {"value": own_v - mean_other, "self": own_v, "others": mean_other}
        paired = self_advantage(
            t,
            {p: item_records[p, t] for p in names},
            np.random.default_rng([stats_seed, 2, names.index(t)]),
            n_boot=n_boot,
        )
        for metric in METRICS:
            _merge_self_advantage(entry[metric], paired[metric].to_dict())
        self_adv[t] = entry
    tests = [(t, m) for t in names for m in METRICS]
    for (t, m), p_holm in zip(
        tests, holm_adjust([self_adv[t][m].get("p") for t, m in tests]), strict=True
    ):
        self_adv[t][m]["p_holm"] = p_holm

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
            {
                "id": item.id,
                "prompt": item.prompt,
                "answers": {t: target_answers.get((t, item.id), []) for t in names},
                "distinct_modes": len({m[0] for m in modes.values()}),
            }
        )
    return {
        "agents": list(names),
        "n_items": len(items),
        "samples": samples,
        "cells": out_cells,
        "self_advantage": self_adv,
        "target_errors": dict(target_errors),
        "items": per_item,
        "notes": (
            "self_advantage = metric(T predicting T) - mean metric(others predicting T); for "
            "brier lower is better, so a negative brier self-advantage favours self-prediction"
        ),
    }


# -- stored matrix runs ------------------------------------------------------------------------


def matrix_params(store: Store, run_id: str) -> dict[str, Any]:
    """A matrix run's params (UserError for a run that is not one)."""
    run = store.get_run(run_id)
    if run.suite != SUITE:
        raise UserError(f"run {run_id} is a {run.suite!r} run, not a matrix run")
    params: dict[str, Any] = json.loads(run.params_json)
    return params


def summarise_run(
    store: Store,
    run_id: str,
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
    reveal_held_out: bool = False,
) -> dict[str, Any]:
    """The matrix of a stored matrix run, rebuilt from its stored items and trials alone (the
    same numbers the run returned), with ``run``, ``seed`` (None for a held-out run unless
    ``reveal_held_out``: operators only), ``held_out``, ``status`` and ``accompanies`` (the
    suite run it was scheduled beside, if any)."""
    params = matrix_params(store, run_id)
    run = store.get_run(run_id)
    names = [str(n) for n in params.get("agents") or [a.name for a in store.run_agents(run_id)]]
    items = list(store.run_items(run_id))
    outcomes = outcomes_from_trials(store.trials(run_id))
    summary = summarise_outcomes(
        names, items, int(params["samples"]), outcomes, n_boot=n_boot, stats_seed=stats_seed
    )
    return {
        "run": run_id,
        "seed": shown_seed(run.seed, held_out=run.held_out, reveal_held_out=reveal_held_out),
        "held_out": bool(run.held_out),
        "status": run.status,
        "accompanies": params.get("accompanies"),
        **summary,
    }


def accompanying_matrix(store: Store, run_id: str) -> str | None:
    """The latest complete matrix run that accompanies the suite run ``run_id`` (its params
    say so), or None."""
    table = RunRow.__table__  # type: ignore[attr-defined]
    stmt = (
        sa.select(table.c.id, table.c.params_json)
        .where(table.c.suite == SUITE, table.c.status == "complete")
        .order_by(table.c.created_at.desc())
    )
    with store.engine.connect() as conn:
        for matrix_id, params_json in conn.execute(stmt):
            try:
                params = json.loads(params_json)
            except ValueError:
                continue
            if isinstance(params, dict) and params.get("accompanies") == run_id:
                return str(matrix_id)
    return None


def accompanying_summary(
    store: Store, run_id: str, *, n_boot: int = 2000, stats_seed: int = 0
) -> dict[str, Any] | None:
    """The matrix of the matrix run that accompanies the suite run ``run_id`` (None if none
    does), for the profile's skill S."""
    matrix_id = accompanying_matrix(store, run_id)
    if matrix_id is None:
        return None
    return summarise_run(store, matrix_id, n_boot=n_boot, stats_seed=stats_seed)


def _estimate(row: Mapping[str, Any], target: str) -> dict[str, Any]:
    skill = row["skill"]
    out = {
        "target": target,
        "value": skill.get("value"),
        "n": row.get("n"),
        "ci": skill.get("ci"),
        "interval": skill.get("interval"),
        "status": skill.get("status"),
        "p_holm": skill.get("p_holm"),
    }
    if skill.get("reason"):
        out["reason"] = skill["reason"]
    return out


def agent_skill(matrix: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """The profile's agent-prediction skill of ``agent`` (as the predictor) from a matrix
    (:func:`summarise_run`): ``self`` its S predicting a fresh copy of itself (the headline
    value, with its interval), ``others`` the mean of its S over the other targets, and
    ``targets`` its S per target with each cell's interval and Holm-adjusted p."""
    run = matrix.get("run")
    if agent not in matrix.get("agents", ()):
        return {
            "available": False,
            "matrix_run": run,
            "reason": f"{agent} did not take part in matrix run {run}",
        }
    rows = {c["target"]: c for c in matrix["cells"] if c["predictor"] == agent}
    targets = {t: _estimate(rows[t], t) for t in matrix["agents"] if t in rows}
    own = targets.get(agent) or {"value": None}
    other_values = [targets[t]["value"] for t in targets if t != agent]
    if not other_values:
        others: dict[str, Any] = {"value": None, "n_targets": 0,
                                  "reason": "no other target in the matrix"}
    elif any(v is None for v in other_values):
        missing = [t for t in targets if t != agent and targets[t]["value"] is None]
        others = {"value": None, "n_targets": len(other_values),
                  "reason": f"S is undefined for {', '.join(missing)}"}
    else:
        others = {
            "value": math.fsum(other_values) / len(other_values),
            "n_targets": len(other_values),
            "status": "not_estimable",
            "reason": "a mean over targets; each target's S has its own interval (targets)",
        }
    return {
        "available": True,
        "matrix_run": run,
        "value": own.get("value"),
        "ci": own.get("ci"),
        "n": own.get("n"),
        "interval": own.get("interval"),
        "status": own.get("status"),
        "reason": own.get("reason"),
        "self": own,
        "others": others,
        "targets": targets,
    }
