"""The sections of the matrix beside its cells, as typed records with their JSON (``to_dict``):
second-order prediction (seed 002 §15.2 protocol step 5, B9; :func:`second_order_section`),
past seats (B8; :func:`past_seat_section`), the conditions' learning curves and contrasts
(:class:`ConditionRow`) and the per-item answers (:class:`ItemAnswers`). Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from matrix import ItemOutcome, second_order_triples
from mindledger.items import Item
from reports.matrix import (
    SECOND_ORDER_METRICS,
    ItemRecord,
    accuracy_terms,
    distribution_scores,
    holm_adjust,
    mean_estimate,
    paired_contrast,
    skill_terms,
)
from reports.matrix_cells import SkillFigure
from reports.matrix_records import Contrast, Estimate

__all__ = [
    "SECOND_ORDER_SCORING",
    "ConditionRow",
    "ItemAnswers",
    "PastSeatRow",
    "PastSeatSection",
    "SecondOrderCell",
    "SecondOrderPredictor",
    "SecondOrderSection",
    "Tested",
    "past_seat_section",
    "second_order_section",
]

Pair = tuple[str, str]
"""(predictor, target) of a cell."""


@dataclass(frozen=True)
class Tested:
    """A paired figure with its p-value adjusted over its family (Holm)."""

    figure: Contrast
    p_holm: float | None

    def to_dict(self) -> dict[str, Any]:
        return {**self.figure.to_dict(), "p_holm": self.p_holm}


def _holm(figures: Sequence[Contrast]) -> list[Tested]:
    """Each figure with its Holm-adjusted p over ``figures``."""
    adjusted = holm_adjust([f.p for f in figures])
    return [Tested(f, p) for f, p in zip(figures, adjusted, strict=True)]


# -- second-order prediction (B9) ------------------------------------------------------------

SECOND_ORDER_SCORING = (
    "P's distribution p against Q's committed zero-shot distribution q: brier = sum over "
    "choices of (p - q)^2 (primary, lower is better: the expected Brier score against a draw "
    "from q less q's own, a strictly proper divergence, 0 exactly when p = q); log_score = "
    "sum of q * log max(p, eps) (the expected log score on a draw from q); total_variation = "
    "half the sum of |p - q|; top1_match = both most probable choices agree. vs_uniform = "
    "brier(uniform) - brier(p), paired over items (H0: P knows no more of Q's prediction "
    "than the uniform distribution)"
)
SECOND_ORDER_ORDER = (
    "every second-order prediction of an item is committed before any first-order "
    "prediction of it, so before Q commits; Q's committed distribution is recorded "
    "against it only after Q's prediction is revealed"
)
BY_PREDICTOR_DEFINITION = (
    "each predictor P over all its (Q, T) cells: per item, the mean over the cells "
    "scored on it of brier (and of the uniform distribution's brier); vs_uniform is "
    "brier(uniform) - brier(P) paired over items (item bootstrap, sign-flip test, Holm "
    "over the predictors)"
)
SECOND_ORDER_COUNTS = ("unparsed", "unscored", "predictor_error")
"""The second-order predictions a cell counts by outcome, in the JSON's order."""


@dataclass(frozen=True)
class SecondOrderCell:
    """One (P, Q, T) cell: P's predictions of Q's committed distribution for T's answer."""

    predictor: str
    about: str
    target: str
    n: int
    counts: Mapping[str, int]
    """Predictions per outcome of :data:`SECOND_ORDER_COUNTS`."""
    figures: Mapping[str, Estimate]
    """Per :data:`reports.matrix.SECOND_ORDER_METRICS`, the mean over items."""
    vs_uniform: Tested

    def to_dict(self) -> dict[str, Any]:
        return {
            "predictor": self.predictor,
            "about": self.about,
            "target": self.target,
            "n": self.n,
            **{k: self.counts[k] for k in SECOND_ORDER_COUNTS},
            **{m: self.figures[m].to_dict() for m in SECOND_ORDER_METRICS},
            "vs_uniform": self.vs_uniform.to_dict(),
        }


@dataclass(frozen=True)
class SecondOrderPredictor:
    """One predictor P over all its (Q, T) cells."""

    n_cells: int
    brier: Estimate
    vs_uniform: Tested

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_cells": self.n_cells,
            "brier": self.brier.to_dict(),
            "vs_uniform": self.vs_uniform.to_dict(),
        }


@dataclass(frozen=True)
class SecondOrderSection:
    """Every (P, Q, T) cell and every predictor pooled."""

    per_item: int
    """Second-order predictions per item."""
    cells: Sequence[SecondOrderCell]
    by_predictor: Mapping[str, SecondOrderPredictor]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scoring": SECOND_ORDER_SCORING,
            "per_item": self.per_item,
            "order": SECOND_ORDER_ORDER,
            "cells": [c.to_dict() for c in self.cells],
            "by_predictor": {p: row.to_dict() for p, row in self.by_predictor.items()},
            "by_predictor_definition": BY_PREDICTOR_DEFINITION,
        }


Triple = tuple[str, str, str]


def _second_order_figures(
    triples: Sequence[Triple], items: Sequence[Item], outcomes: Mapping[str, ItemOutcome]
) -> tuple[dict[Triple, dict[str, dict[str, float]]], dict[Triple, dict[str, int]]]:
    """Per (P, Q, T): each figure's value per item id (and the uniform distribution's
    Brier score), and the predictions counted by outcome."""
    per: dict[Triple, dict[str, dict[str, float]]] = {
        k: {m: {} for m in (*SECOND_ORDER_METRICS, "uniform_brier")} for k in triples
    }
    counts = {k: dict.fromkeys(SECOND_ORDER_COUNTS, 0) for k in triples}
    for item in items:
        outcome = outcomes.get(item.id)
        if outcome is None:
            continue
        for key, rec in outcome.second_order.items():
            if key not in per:
                continue
            if rec.outcome in counts[key]:
                counts[key][rec.outcome] += 1
            if rec.scores is None or rec.truth is None:
                continue
            for m in SECOND_ORDER_METRICS:
                per[key][m][item.id] = float(rec.scores[m])
            uniform = {c: 1.0 / len(rec.truth) for c in rec.truth}
            per[key]["uniform_brier"][item.id] = distribution_scores(uniform, rec.truth)["brier"]
    return per, counts


def second_order_section(
    names: Sequence[str],
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> SecondOrderSection:
    """The second-order figures (seed 002 §15.2 protocol step 5, B9) per (P, Q, T) cell: the
    mean over items of each :data:`reports.matrix.SECOND_ORDER_METRICS` with its item-bootstrap
    interval, and ``vs_uniform`` (see :data:`SECOND_ORDER_SCORING`) with its sign-flip test,
    Holm-adjusted over the cells. Pure."""
    triples = second_order_triples(names)
    per, counts = _second_order_figures(triples, items, outcomes)
    figures: list[dict[str, Estimate]] = []
    vs_uniform: list[Contrast] = []
    for n, key in enumerate(triples):
        f = per[key]
        figures.append({
            m: mean_estimate(f[m], np.random.default_rng([stats_seed, 6, n, k]), n_boot=n_boot)
            for k, m in enumerate(SECOND_ORDER_METRICS)
        })  # fmt: skip
        vs_uniform.append(paired_contrast(
            f["uniform_brier"], f["brier"], np.random.default_rng([stats_seed, 7, n]),
            n_boot=n_boot,
        ))  # fmt: skip
    cells = [
        SecondOrderCell(p, q, t, len(per[p, q, t]["brier"]), counts[p, q, t], figs, tested)
        for (p, q, t), figs, tested in zip(triples, figures, _holm(vs_uniform), strict=True)
    ]
    briers: list[Estimate] = []
    pooled: list[Contrast] = []
    n_cells: list[int] = []
    for n, p in enumerate(names):
        mine = [per[k] for k in triples if k[0] == p]
        brier = _per_item_mean([f["brier"] for f in mine])
        uniform = _per_item_mean([f["uniform_brier"] for f in mine])
        n_cells.append(len(mine))
        briers.append(mean_estimate(brier, np.random.default_rng([stats_seed, 8, n]),
                                    n_boot=n_boot))  # fmt: skip
        pooled.append(paired_contrast(uniform, brier, np.random.default_rng([stats_seed, 9, n]),
                                      n_boot=n_boot))  # fmt: skip
    by_predictor = {
        p: SecondOrderPredictor(k, b, tested)
        for p, k, b, tested in zip(names, n_cells, briers, _holm(pooled), strict=True)
    }
    return SecondOrderSection(len(triples), cells, by_predictor)


def _per_item_mean(figures: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per item id, the mean of the values ``figures`` (one mapping per cell) hold for it."""
    sums: dict[str, list[float]] = {}
    for f in figures:
        for item_id, value in f.items():
            sums.setdefault(item_id, []).append(value)
    return {i: math.fsum(v) / len(v) for i, v in sums.items()}


# -- past seats (B8) ---------------------------------------------------------------------------

PAST_SEAT_CONTRAST = (
    "relative accuracy (top-1 accuracy / ceiling) predicting the past seat − "
    "predicting a fresh copy, paired over items"
)
PAST_SEAT_SKILL_CONTRAST = "S(P→past seat) − S(P→P), per-item shares of S paired over items"


@dataclass(frozen=True)
class PastSeatRow:
    """A predictor P and a past seat S ≠ P: P's S on each, and the two paired contrasts."""

    predictor: str
    past_seat: str
    skill_past_seat: SkillFigure
    """The skill of the cell P → S."""
    skill_fresh_copy: SkillFigure
    """The skill of the cell P → P."""
    contrast: Tested
    skill_contrast: Tested

    def to_dict(self) -> dict[str, Any]:
        return {
            "predictor": self.predictor,
            "past_seat": self.past_seat,
            "skill_past_seat": self.skill_past_seat.to_dict(),
            "skill_fresh_copy": self.skill_fresh_copy.to_dict(),
            "contrast": self.contrast.to_dict(),
            "skill_contrast": self.skill_contrast.to_dict(),
        }


@dataclass(frozen=True)
class PastSeatSection:
    seats: Sequence[str]
    rows: Sequence[PastSeatRow]

    def to_dict(self) -> dict[str, Any]:
        return {
            "seats": list(self.seats),
            "contrast": PAST_SEAT_CONTRAST,
            "skill_contrast": PAST_SEAT_SKILL_CONTRAST,
            "rows": [r.to_dict() for r in self.rows],
        }


def past_seat_section(
    names: Sequence[str],
    records: Mapping[Pair, Sequence[ItemRecord]],
    skills: Mapping[Pair, SkillFigure],
    seats: Sequence[str],
    *,
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> PastSeatSection:
    """Past-seat prediction (seed 002 B8; §20 question 4: weight-level against context-level
    self-knowledge): for every predictor P and past seat S ≠ P, P's skill S predicting S beside
    its S predicting a fresh copy of itself (``skills``: each cell's skill with its interval),
    and two paired contrasts over the items both cells were scored on (``records``: each
    cell's; :func:`reports.matrix.paired_contrast`: item bootstrap and sign-flip test, each
    Holm-adjusted over the rows):

    - ``contrast`` (primary): relative accuracy (top-1 accuracy / the target's ceiling,
      :func:`reports.matrix.accuracy_terms`) on S minus on the fresh copy;
    - ``skill_contrast``: S(P→S) − S(P→P) (:func:`reports.matrix.skill_terms`). A fresh-copy
      cell's projection baseline, P's own answer, is itself a sample of the fresh copy, so
      its base and ceiling coincide in expectation and its S is 0/0: often undefined or very
      noisy, which is why the primary contrast has no baseline. Pure."""
    pairs: list[Pair] = []
    figures: dict[str, list[Contrast]] = {"contrast": [], "skill_contrast": []}
    for i, p in enumerate(names):
        for s in seats:
            if s == p:
                continue
            j = names.index(s)
            pairs.append((p, s))
            for k, (name, terms, what) in enumerate(
                (
                    ("contrast", accuracy_terms, "a positive ceiling"),
                    ("skill_contrast", skill_terms, "S"),
                )
            ):
                past, fresh = terms(records[p, s]), terms(records[p, p])
                est = paired_contrast(
                    past, fresh, np.random.default_rng([stats_seed, 8, i, j, k]), n_boot=n_boot
                )
                if not past or not fresh:
                    which = [f"{p}→{x}" for x, t in ((s, past), (p, fresh)) if not t]
                    est = replace(est, reason=f"no {what} for {' and '.join(which)}")
                figures[name].append(est)
    rows = [
        PastSeatRow(p, s, skills[p, s], skills[p, p], contrast, skill_contrast)
        for (p, s), contrast, skill_contrast in zip(
            pairs, _holm(figures["contrast"]), _holm(figures["skill_contrast"]), strict=True
        )
    ]
    return PastSeatSection(tuple(seats), rows)


# -- conditions and items ----------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionRow:
    """One cell's figures across conditions: a learning curve's slope over ``m`` or the
    simulate − zero-shot contrast, per figure (log score, top-1 accuracy)."""

    predictor: str
    target: str
    figures: Mapping[str, Contrast]
    m: Sequence[int] | None = None
    """The values of m of a learning curve (None: a contrast)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"predictor": self.predictor, "target": self.target}
        if self.m is not None:
            out["m"] = list(self.m)
        out.update({name: f.to_dict() for name, f in self.figures.items()})
        return out


@dataclass(frozen=True)
class ItemAnswers:
    """One item's prompt, every target's answers and how many distinct modal answers they
    have."""

    id: str
    prompt: str
    answers: Mapping[str, Sequence[str]]
    distinct_modes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "answers": {t: list(a) for t, a in self.answers.items()},
            "distinct_modes": self.distinct_modes,
        }
