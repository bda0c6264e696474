"""The matrix's JSON read back into its typed records: :func:`summary_of` gives the
:class:`~reports.matrix_model.MatrixSummary` whose ``to_dict`` is that JSON, so that whoever
holds only the JSON (:func:`harness.matrix.runs.run_matrix`'s result, a stored report) renders it
from attributes. The one place that reads the matrix's JSON by key. Pure.

A withheld run's items (no id or prompt, :func:`mindledger.disclosure.disclosed_matrix`) are
not read back: the summary has none. Keys the matrix does not write are ignored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ledger.scoring import Metric
from reports.matrix_cells import (
    CellFigure,
    CellRow,
    ReasonSlot,
    SelfAdvantageFigure,
    SkillFigure,
)
from reports.matrix_model import (
    PILOT_KEYS,
    ConditionSummary,
    DepthCells,
    MatrixSummary,
    PilotSummary,
    StoredRun,
)
from reports.matrix_records import Contrast, Estimate, SelfAdvantage
from reports.matrix_sections import (
    ConditionRow,
    ItemAnswers,
    PastSeatRow,
    PastSeatSection,
    SecondOrderCell,
    SecondOrderPredictor,
    SecondOrderSection,
    Tested,
)
from reports.matrix_unreadable import Unreadable

__all__ = ["as_summary", "summary_of"]

JSON = Mapping[str, Any]


def _ci(d: JSON) -> tuple[float | None, float | None]:
    ci = d.get("ci") or (None, None)
    return ci[0], ci[1]


def _metric(d: JSON) -> Metric:
    return Metric(d["value"], int(d["n"]), d.get("reason") or None)


def _estimate(d: JSON) -> Estimate:
    lo, hi = _ci(d)
    return Estimate(d["value"], int(d["n"]), lo, hi, d.get("interval"), d.get("reason"))


def _contrast(d: JSON) -> Contrast:
    lo, hi = _ci(d)
    return Contrast(d["value"], int(d["n"]), lo, hi, d.get("interval"), d.get("test"),
                    d.get("p"), d.get("reason"))  # fmt: skip


def _tested(d: JSON) -> Tested:
    return Tested(_contrast(d), d.get("p_holm"))


def _before(d: JSON, key: str, *later: str) -> bool:
    """``key`` comes before the first of ``later`` that ``d`` has (or ``d`` has none)."""
    keys = list(d)
    if key not in keys:
        return False
    after = [keys.index(k) for k in later if k in keys]
    return not after or keys.index(key) < min(after)


def _cell_figure(d: JSON) -> CellFigure:
    lo, hi = _ci(d)
    return CellFigure(d["value"], int(d["n"]), lo, hi, d.get("interval"), str(d["status"]),
                      d.get("reason"), _before(d, "reason", "ci"))  # fmt: skip


def _slot(d: JSON) -> ReasonSlot | None:
    if "reason" not in d:
        return None
    for slot, later in (("ledger", "base"), ("status", "base_kind"),
                        ("denominator", "p_holm")):  # fmt: skip
        if _before(d, "reason", later):
            return cast(ReasonSlot, slot)
    return "end"


def _skill(d: JSON) -> SkillFigure:
    lo, hi = _ci(d)
    denominator = d.get("denominator")
    return SkillFigure(
        value=d["value"], n=int(d["n"]), reason=d.get("reason"), reason_slot=_slot(d),
        base=d.get("base"), population_baseline=_metric(d["population_baseline"]),
        projection_baseline=_metric(d["projection_baseline"]), ceiling=_metric(d["ceiling"]),
        lo=lo, hi=hi, interval=d.get("interval"), status=str(d["status"]),
        base_kind=d.get("base_kind"), test=d.get("test"), p=d.get("p"),
        denominator=None if denominator is None else _estimate(denominator),
        p_holm=d.get("p_holm"),
    )  # fmt: skip


def _cell(d: JSON) -> CellRow:
    u = d["unreadable"]
    unreadable = Unreadable(int(u["target_answers"]), int(u["target_samples"]),
                            int(u["predictions"]), int(u["predictions_asked"]))  # fmt: skip
    return CellRow(
        str(d["predictor"]), str(d["target"]), int(d["n"]), int(d["penalised"]),
        _cell_figure(d["log_score"]), _cell_figure(d["brier"]), _cell_figure(d["top1_accuracy"]),
        _metric(d["ece"]), _skill(d["skill"]), int(d["predictor_errors"]), int(d["unparsed"]),
        int(d["unscored"]), int(d["rejected"]), unreadable, u.get("reason"),
    )  # fmt: skip


def _self_advantage(metric: str, d: JSON) -> SelfAdvantageFigure:
    lo, hi = _ci(d)
    value = d["value"]
    paired_value = d.get("paired_value", value)
    reason = d.get("reason")
    paired = SelfAdvantage(metric, paired_value, d.get("self"), d.get("others"), int(d["n"]),
                           lo, hi, d.get("interval"), d.get("test"), d.get("p"),
                           reason if value is not None else None)  # fmt: skip
    return SelfAdvantageFigure(value, d.get("self"), d.get("others"),
                               reason if value is None else None, paired,
                               d.get("p_holm"))  # fmt: skip


def _condition(d: JSON, base: JSON) -> ConditionSummary:
    """One condition's cells and self-advantages (``d``), the rest from the summary."""
    items = [
        ItemAnswers(str(it["id"]), str(it["prompt"]),
                    {t: list(a) for t, a in it["answers"].items()}, int(it["distinct_modes"]))
        for it in base.get("items") or ()
        if "id" in it
    ]  # fmt: skip
    return ConditionSummary(
        tuple(str(a) for a in base["agents"]),
        int(base["n_items"]),
        int(base["samples"]),
        [_cell(c) for c in d["cells"]],
        {t: {m: _self_advantage(m, f) for m, f in entry.items()}
         for t, entry in d["self_advantage"].items()},
        {str(t): int(n) for t, n in base["target_errors"].items()},
        items,
    )  # fmt: skip


def _second_order(d: JSON) -> SecondOrderSection:
    cells = [
        SecondOrderCell(
            str(c["predictor"]), str(c["about"]), str(c["target"]), int(c["n"]),
            {k: int(c[k]) for k in ("unparsed", "unscored", "predictor_error")},
            {m: _estimate(c[m]) for m in ("brier", "log_score", "total_variation",
                                          "top1_match")},
            _tested(c["vs_uniform"]),
        )
        for c in d["cells"]
    ]  # fmt: skip
    by_predictor = {
        str(p): SecondOrderPredictor(int(r["n_cells"]), _estimate(r["brier"]),
                                     _tested(r["vs_uniform"]))
        for p, r in d["by_predictor"].items()
    }  # fmt: skip
    return SecondOrderSection(int(d["per_item"]), cells, by_predictor)


def _past_seat(d: JSON) -> PastSeatSection:
    rows = [
        PastSeatRow(str(r["predictor"]), str(r["past_seat"]), _skill(r["skill_past_seat"]),
                    _skill(r["skill_fresh_copy"]), _tested(r["contrast"]),
                    _tested(r["skill_contrast"]))
        for r in d["rows"]
    ]  # fmt: skip
    return PastSeatSection(tuple(str(s) for s in d["seats"]), rows)


def _condition_rows(rows: Sequence[JSON]) -> list[ConditionRow]:
    return [
        ConditionRow(str(r["predictor"]), str(r["target"]),
                     {k: _contrast(r[k]) for k in ("log_score", "top1_accuracy")},
                     m=[int(m) for m in r["m"]] if "m" in r else None)
        for r in rows
    ]  # fmt: skip


def summary_of(d: JSON) -> MatrixSummary:
    """The typed matrix of its JSON (:meth:`MatrixSummary.to_dict`, or
    :func:`reports.matrix_summary.stored_summary`'s)."""
    condition = str(d["condition"])
    by_condition = d.get("by_condition") or {}
    stored = None
    if "run" in d:
        held_out = bool(d["held_out"])
        stored = StoredRun(
            str(d["run"]), d.get("seed"), held_out, str(d["status"]), d.get("accompanies"),
            int(d.get("exposure") or 0),
            withholds=held_out and any("withheld" in it for it in d.get("items") or ()),
        )  # fmt: skip
    pilot = d.get("pilot")
    return MatrixSummary(
        _condition(d, d),
        condition,
        tuple(str(c) for c in d["conditions"]),
        {str(c): _condition(entry, d) for c, entry in by_condition.items() if c != condition},
        second_order=_second_order(d["second_order"]) if d.get("second_order") else None,
        past_seat=_past_seat(d["past_seat"]) if d.get("past_seat") else None,
        by_depth=[
            DepthCells(str(e["depth"]), int(e["n_items"]), [_cell(c) for c in e["cells"]])
            for e in d.get("by_depth") or ()
        ],
        learning_curve=_condition_rows(d.get("learning_curve") or ()),
        simulate_contrast=_condition_rows(d.get("simulate_contrast") or ()),
        stored=stored,
        pilot=None if pilot is None else PilotSummary(*(pilot.get(k) for k in PILOT_KEYS)),
        not_divergent=d.get("not_divergent"),
    )


def as_summary(summary: MatrixSummary | JSON) -> MatrixSummary:
    """``summary`` typed: as it is, or read from its JSON (:func:`summary_of`)."""
    return summary if isinstance(summary, MatrixSummary) else summary_of(summary)
