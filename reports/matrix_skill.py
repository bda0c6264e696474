"""The profile's agent-prediction skill S of one agent, from the matrix that accompanies its
run (seed 002 §18.1): its S predicting a fresh copy of itself, the mean over the other targets,
each target's S with its interval, and its second-order skill (B9). Pure: it reads the typed
matrix (:class:`~reports.matrix_model.MatrixSummary`, or its JSON read back by
:func:`reports.matrix_json.as_summary`), and gives a typed record (:data:`AgentSkillResult`)
whose ``to_dict`` is the profile's JSON."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reports.matrix_cells import CellRow
from reports.matrix_json import as_summary
from reports.matrix_model import MatrixSummary

__all__ = [
    "AgentSkill",
    "AgentSkillResult",
    "OtherTargets",
    "SecondOrderSkill",
    "SkillNotDivergent",
    "SkillUnavailable",
    "TargetSkill",
    "agent_skill",
]

SECOND_ORDER_DEFINITION = (
    "brier(uniform) - brier(prediction) against the other predictors' "
    "committed distributions, mean over the agent's (Q, T) cells per item, paired over "
    "items; > 0: better than the uniform distribution"
)


@dataclass(frozen=True)
class TargetSkill:
    """The agent's S predicting one target, with the cell's interval and Holm-adjusted p."""

    target: str
    value: float | None
    n: int | None
    ci: list[float | None] | None
    interval: str | None
    status: str | None
    p_holm: float | None
    reason: str | None

    @classmethod
    def of(cls, row: CellRow) -> TargetSkill:
        """From a cell of the matrix (its target's)."""
        s = row.skill
        ci = [s.lo, s.hi] if s.lo is not None else None
        return cls(row.target, s.value, row.n, ci, s.interval, s.status, s.p_holm,
                   s.reason or None)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": self.target,
            "value": self.value,
            "n": self.n,
            "ci": self.ci,
            "interval": self.interval,
            "status": self.status,
            "p_holm": self.p_holm,
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class OtherTargets:
    """The mean of the agent's S over the other targets, or why there is none."""

    value: float | None
    n_targets: int
    reason: str
    status: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "n_targets": self.n_targets}
        if self.status is not None:
            out["status"] = self.status
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class SecondOrderSkill:
    """The agent's second-order prediction as P over all its (Q, T) cells (brier(uniform) −
    brier), or (``figures`` None) why there is none."""

    value: float | None
    reason: str | None
    ci: list[float | None] | None = None
    n: int | None = None
    p_holm: float | None = None
    n_cells: int | None = None
    brier: Mapping[str, Any] | None = None
    """The pooled Brier score as the matrix's JSON has it."""
    figures: bool = True
    """False: no second-order cells; only ``value`` (None) and ``reason``."""

    def to_dict(self) -> dict[str, Any]:
        if not self.figures:
            return {"value": self.value, "reason": self.reason}
        return {
            "value": self.value,
            "ci": self.ci,
            "n": self.n,
            "p_holm": self.p_holm,
            "n_cells": self.n_cells,
            "brier": self.brier,
            "reason": self.reason,
            "definition": SECOND_ORDER_DEFINITION,
        }


@dataclass(frozen=True)
class SkillUnavailable:
    """The agent did not take part in the matrix run."""

    matrix_run: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"available": False, "matrix_run": self.matrix_run, "reason": self.reason}


@dataclass(frozen=True)
class SkillNotDivergent:
    """The matrix's pilot found its items not divergent: no skill is reported."""

    matrix_run: str | None
    agent: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "available": True,
            "matrix_run": self.matrix_run,
            "value": None,
            "ci": None,
            "n": 0,
            "interval": None,
            "status": "not_estimable",
            "reason": self.reason,
            "self": {
                "target": self.agent,
                "value": None,
                "n": 0,
                "status": "not_estimable",
                "reason": self.reason,
            },
            "others": {"value": None, "n_targets": 0, "reason": self.reason},
            "targets": {},
        }


@dataclass(frozen=True)
class AgentSkill:
    """The agent's skill: ``own`` (S predicting a fresh copy of itself: the headline value),
    ``others``, ``targets`` and ``second_order``."""

    matrix_run: str | None
    own: TargetSkill | None
    others: OtherTargets
    targets: Mapping[str, TargetSkill]
    second_order: SecondOrderSkill

    def to_dict(self) -> dict[str, Any]:
        own = self.own
        return {
            "available": True,
            "matrix_run": self.matrix_run,
            "value": None if own is None else own.value,
            "ci": None if own is None else own.ci,
            "n": None if own is None else own.n,
            "interval": None if own is None else own.interval,
            "status": None if own is None else own.status,
            "reason": None if own is None else own.reason,
            "self": {"value": None} if own is None else own.to_dict(),
            "others": self.others.to_dict(),
            "targets": {t: s.to_dict() for t, s in self.targets.items()},
            "second_order": self.second_order.to_dict(),
        }


AgentSkillResult = AgentSkill | SkillNotDivergent | SkillUnavailable
"""What :func:`agent_skill` gives."""


def agent_skill(matrix: MatrixSummary | Mapping[str, Any], agent: str) -> AgentSkillResult:
    """The profile's agent-prediction skill of ``agent`` (as the predictor) from a matrix
    (:func:`~reports.matrix_summary.stored_summary`, or a matrix's JSON): ``self`` its S
    predicting a fresh copy of itself (the headline value, with its interval), ``others`` the
    mean of its S over the other targets, and ``targets`` its S per target with each cell's
    interval and Holm-adjusted p."""
    matrix = as_summary(matrix)
    run = None if matrix.stored is None else matrix.stored.run
    if agent not in matrix.agents:
        return SkillUnavailable(run, f"{agent} did not take part in matrix run {run}")
    if matrix.not_divergent:
        return SkillNotDivergent(run, agent, matrix.not_divergent)
    rows = {c.target: c for c in matrix.cells if c.predictor == agent}
    targets = {t: TargetSkill.of(rows[t]) for t in matrix.agents if t in rows}
    return AgentSkill(run, targets.get(agent), _others(targets, agent), targets,
                      _second_order_skill(matrix, agent))  # fmt: skip


def _others(targets: Mapping[str, TargetSkill], agent: str) -> OtherTargets:
    other_values = [s.value for t, s in targets.items() if t != agent]
    if not other_values:
        return OtherTargets(None, 0, "no other target in the matrix")
    values = [v for v in other_values if v is not None]
    if len(values) < len(other_values):
        missing = [t for t, s in targets.items() if t != agent and s.value is None]
        return OtherTargets(None, len(other_values), f"S is undefined for {', '.join(missing)}")
    return OtherTargets(
        math.fsum(values) / len(values),
        len(values),
        "a mean over targets; each target's S has its own interval (targets)",
        status="not_estimable",
    )


def _second_order_skill(matrix: MatrixSummary, agent: str) -> SecondOrderSkill:
    """The agent's second-order prediction (B9) as P, over all its (Q, T) cells: how much
    closer than the uniform distribution its predictions of the other predictors' committed
    distributions came (brier(uniform) − brier, with its interval), or why there is none."""
    section = matrix.second_order
    if section is None:
        return SecondOrderSkill(
            None, "the matrix ran without second-order prediction", figures=False
        )
    row = section.by_predictor.get(agent)
    if row is None:
        return SecondOrderSkill(
            None, f"no second-order cells of {agent} (one agent only?)", figures=False
        )
    vs = row.vs_uniform.figure
    return SecondOrderSkill(
        vs.value,
        vs.reason or None,
        ci=[vs.lo, vs.hi] if vs.lo is not None else None,
        n=vs.n,
        p_holm=row.vs_uniform.p_holm,
        n_cells=row.n_cells,
        brier=row.brier.to_dict(),
    )
