"""A matrix cell and a target's self-advantage as typed records, from the ledger's figures
(:func:`ledger.scoring.aggregate`) and the statistics of :mod:`reports.matrix`, each with its
JSON (``to_dict``, the summary's cells and ``self_advantage``). Pure.

A cell's point values are the ledger's; the statistics add each figure's interval, status and,
when it has a value but no interval, the reason; S also its base kind, test, p and
denominator. S has no value where the statistics say it is not estimable (a self cell, a
denominator that may be zero), and no figure has one in a cell that could not read enough of
its answers (:mod:`reports.matrix_unreadable`). A figure's ``reason`` sits in its JSON where it
arose (:data:`ReasonSlot`): after ``n`` when the ledger gave it, else after the step that did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ledger.scoring import Metric
from reports.matrix import METRICS, SELF_PROJECTION, holm_adjust
from reports.matrix_records import CellStats, Estimate, SelfAdvantage
from reports.matrix_unreadable import Unreadable

__all__ = [
    "NOT_ESTIMABLE",
    "CellCounts",
    "CellFigure",
    "CellRow",
    "ReasonSlot",
    "SelfAdvantageFigure",
    "SkillFigure",
    "cell_row",
    "self_advantage_figures",
]

NOT_ESTIMABLE = "not_estimable"

ReasonSlot = Literal["ledger", "status", "denominator", "end"]
"""Where a figure's reason sits in its JSON: after ``n`` (the ledger's), after ``status`` (the
statistics'), after S's ``denominator`` (too much unreadable) or last (the pilot's verdict)."""


def _metric(d: Mapping[str, Any]) -> Metric:
    """A ledger figure back from :func:`ledger.scoring.aggregate`'s JSON."""
    return Metric(d["value"], int(d["n"]), d.get("reason") or None)


def _status(est: Estimate) -> str:
    return "estimated" if est.estimable else NOT_ESTIMABLE


@dataclass(frozen=True)
class CellFigure:
    """Log score, Brier or top-1 accuracy of a cell: the ledger's value and n with the
    statistics' interval and status, or the reason there is none."""

    value: float | None
    n: int
    lo: float | None
    hi: float | None
    interval: str | None
    status: str
    reason: str | None
    reason_first: bool
    """The reason is the ledger's (it sits after ``n``)."""

    @classmethod
    def of(cls, ledger: Mapping[str, Any], est: Estimate) -> CellFigure:
        led = _metric(ledger)
        reason = led.reason
        if led.value is not None and est.reason:
            reason = est.reason
        return cls(led.value, led.n, est.lo, est.hi, est.interval, _status(est), reason,
                   led.reason is not None)  # fmt: skip

    def unreadable(self, why: str) -> CellFigure:
        """Not estimable for what the cell could not read."""
        return replace(self, value=None, lo=None, hi=None, interval=None, status=NOT_ESTIMABLE,
                       reason=why)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "n": self.n}
        if self.reason and self.reason_first:
            out["reason"] = self.reason
        out.update(
            ci=[self.lo, self.hi] if self.lo is not None else None,
            interval=self.interval,
            status=self.status,
        )
        if self.reason and not self.reason_first:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class SkillFigure:
    """S of a cell: the ledger's value, base, baselines and ceiling with the statistics'
    interval, base kind, test of S = 0 and denominator; ``p_holm`` over the cells."""

    value: float | None
    n: int
    reason: str | None
    reason_slot: ReasonSlot | None
    base: float | None
    population_baseline: Metric
    projection_baseline: Metric
    ceiling: Metric
    lo: float | None
    hi: float | None
    interval: str | None
    status: str
    base_kind: str | None
    test: str | None
    p: float | None
    denominator: Estimate | None
    p_holm: float | None = None

    @classmethod
    def of(cls, ledger: Mapping[str, Any], stats: CellStats) -> SkillFigure:
        led, est = _metric(ledger), stats.skill
        reason = led.reason
        slot: ReasonSlot | None = "ledger" if led.reason else None
        if (led.value is not None and est.reason) or (est.value is None and est.reason):
            reason, slot = est.reason, slot or "status"
        return cls(
            value=None if est.value is None and est.reason else led.value,
            n=led.n, reason=reason, reason_slot=slot, base=ledger["base"],
            population_baseline=_metric(ledger["population_baseline"]),
            projection_baseline=_metric(ledger["projection_baseline"]),
            ceiling=_metric(ledger["ceiling"]), lo=est.lo, hi=est.hi, interval=est.interval,
            status=_status(est), base_kind=stats.base_kind, test=stats.test, p=stats.p,
            denominator=stats.denominator,
        )  # fmt: skip

    def _because(self, why: str, slot: ReasonSlot) -> SkillFigure:
        return replace(self, value=None, lo=None, hi=None, status=NOT_ESTIMABLE, reason=why,
                       reason_slot=self.reason_slot or slot)  # fmt: skip

    def unreadable(self, why: str) -> SkillFigure:
        """Not estimable for what the cell could not read: no interval and no test."""
        return replace(self._because(why, "denominator"), interval=None, test=None, p=None)

    def not_divergent(self, verdict: str) -> SkillFigure:
        """The run's pilot found its items not divergent: no S (its interval's name kept)."""
        return self._because(verdict, "end")

    def to_dict(self) -> dict[str, Any]:
        def reason(slot: ReasonSlot) -> dict[str, str]:
            return {"reason": self.reason} if self.reason and self.reason_slot == slot else {}

        return {
            "value": self.value,
            "n": self.n,
            **reason("ledger"),
            "base": self.base,
            "population_baseline": self.population_baseline.to_dict(),
            "projection_baseline": self.projection_baseline.to_dict(),
            "ceiling": self.ceiling.to_dict(),
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "status": self.status,
            **reason("status"),
            "base_kind": self.base_kind,
            "test": self.test,
            "p": self.p,
            "denominator": None if self.denominator is None else self.denominator.to_dict(),
            **reason("denominator"),
            "p_holm": self.p_holm,
            **reason("end"),
        }


@dataclass(frozen=True)
class CellRow:
    """One (predictor, target) cell of the matrix."""

    predictor: str
    target: str
    n: int
    penalised: int
    log_score: CellFigure
    brier: CellFigure
    top1_accuracy: CellFigure
    ece: Metric
    skill: SkillFigure
    predictor_errors: int
    unparsed: int
    unscored: int
    rejected: int
    unreadable: Unreadable
    unreadable_reason: str | None = None
    """Why the cell is not estimable for what it could not read, or None."""

    @property
    def is_self(self) -> bool:
        return self.predictor == self.target

    def figure(self, metric: str) -> CellFigure | SkillFigure:
        """The figure of one of :data:`reports.matrix.METRICS`."""
        if metric not in METRICS:
            raise KeyError(metric)
        out: CellFigure | SkillFigure = getattr(self, metric)
        return out

    def to_dict(self) -> dict[str, Any]:
        unreadable: dict[str, Any] = self.unreadable.to_dict()
        if self.unreadable_reason:
            unreadable["reason"] = self.unreadable_reason
        return {
            "predictor": self.predictor,
            "target": self.target,
            "self": self.is_self,
            "n": self.n,
            "penalised": self.penalised,
            "log_score": self.log_score.to_dict(),
            "brier": self.brier.to_dict(),
            "top1_accuracy": self.top1_accuracy.to_dict(),
            "ece": self.ece.to_dict(),
            "skill": self.skill.to_dict(),
            "predictor_errors": self.predictor_errors,
            "unparsed": self.unparsed,
            "unscored": self.unscored,
            "rejected": self.rejected,
            "unreadable": unreadable,
        }


@dataclass(frozen=True)
class CellCounts:
    """A cell's predictions by outcome."""

    predictor_errors: int
    unparsed: int
    unscored: int
    rejected: int


def cell_row(
    pair: tuple[str, str],
    aggregated: Mapping[str, Any],
    stats: CellStats,
    counts: CellCounts,
    unreadable: Unreadable,
) -> CellRow:
    """The cell ``pair`` (predictor, target) from the ledger's figures of its records
    (``aggregated``) and their statistics; not estimable when it could not read enough."""
    p, t = pair
    why = unreadable.reason(p, t)
    row = CellRow(
        p, t, int(aggregated["n"]), int(aggregated["penalised"]),
        CellFigure.of(aggregated["log_score"], stats.log_score),
        CellFigure.of(aggregated["brier"], stats.brier),
        CellFigure.of(aggregated["top1_accuracy"], stats.top1_accuracy),
        _metric(aggregated["ece"]), SkillFigure.of(aggregated["skill"], stats),
        counts.predictor_errors, counts.unparsed, counts.unscored, counts.rejected, unreadable,
        why,
    )  # fmt: skip
    if not why:
        return row
    return replace(row, log_score=row.log_score.unreadable(why),
                   brier=row.brier.unreadable(why),
                   top1_accuracy=row.top1_accuracy.unreadable(why),
                   skill=row.skill.unreadable(why))  # fmt: skip


# -- the self-advantage ------------------------------------------------------------------------


@dataclass(frozen=True)
class SelfAdvantageFigure:
    """A target T's self-advantage in one figure: its own value less the others' mean (each
    cell's over its own items), or why there is none, with the paired interval and test of
    :func:`reports.matrix.self_advantage` and ``p_holm`` over every (target, figure).

    The paired figures are over the items every predictor of the target was scored on; when
    that is not every item of every cell, the point value and the interval's centre differ,
    and ``paired_value`` shows the latter."""

    value: float | None
    own: float | None
    others: float | None
    reason: str | None
    paired: SelfAdvantage
    p_holm: float | None = None

    @property
    def p(self) -> float | None:
        """The test's p-value (None without a value)."""
        return None if self.value is None else self.paired.p

    def to_dict(self) -> dict[str, Any]:
        pd = self.paired
        if self.value is None:
            return {"value": None, "reason": self.reason, "n": pd.n, "ci": None,
                    "interval": None, "test": None, "p": None, "status": NOT_ESTIMABLE,
                    "p_holm": self.p_holm}  # fmt: skip
        out: dict[str, Any] = {
            "value": self.value,
            "self": self.own,
            "others": self.others,
            "n": pd.n,
            "ci": [pd.lo, pd.hi] if pd.lo is not None else None,
            "interval": pd.interval,
            "test": pd.test,
            "p": pd.p,
            "status": "estimated" if pd.lo is not None and pd.reason is None else NOT_ESTIMABLE,
        }
        if pd.value is None or not math.isclose(self.value, pd.value, rel_tol=1e-9, abs_tol=1e-12):
            out["paired_value"] = pd.value
        if pd.reason:
            out["reason"] = pd.reason
        out["p_holm"] = self.p_holm
        return out


def _point(
    t: str, metric: str, names: Sequence[str], by_pair: Mapping[tuple[str, str], CellRow]
) -> tuple[float | None, float | None, float | None, str | None]:
    """(value, own, others' mean, reason) of target ``t``'s self-advantage in ``metric``."""
    others = [p for p in names if p != t]
    own = by_pair[t, t].figure(metric)
    other_vs = [by_pair[p, t].figure(metric).value for p in others]
    if not others:
        return None, None, None, "no other predictor of this target"
    if own.value is None:
        own_reason = str(own.reason)
        if own_reason != SELF_PROJECTION:
            own_reason = f"{t} predicting itself has no {metric}: {own_reason}"
        return None, None, None, own_reason
    known = [float(v) for v in other_vs if v is not None]
    if len(known) < len(other_vs):
        missing = [p for p, v in zip(others, other_vs, strict=True) if v is None]
        return None, None, None, f"no {metric} for {', '.join(missing)} predicting {t}"
    mean_other = math.fsum(known) / len(known)
    return float(own.value) - mean_other, float(own.value), mean_other, None


def self_advantage_figures(
    names: Sequence[str],
    by_pair: Mapping[tuple[str, str], CellRow],
    paired_by_target: Mapping[str, Mapping[str, SelfAdvantage]],
) -> dict[str, dict[str, SelfAdvantageFigure]]:
    """Every target's self-advantage per figure with its paired interval and test,
    Holm-adjusted over every (target, figure)."""
    figures = {
        t: {
            m: SelfAdvantageFigure(*_point(t, m, names, by_pair), paired_by_target[t][m])
            for m in METRICS
        }
        for t in names
    }
    tests = [(t, m) for t in names for m in METRICS]
    for (t, m), p_holm in zip(tests, holm_adjust([figures[t][m].p for t, m in tests]), strict=True):
        figures[t][m] = replace(figures[t][m], p_holm=p_holm)
    return figures
