"""The profile's agent-prediction skill S of one agent, from the matrix that accompanies its
run (seed 002 §18.1): its S predicting a fresh copy of itself, the mean over the other targets,
each target's S with its interval, and its second-order skill (B9). Pure: it reads a matrix
as :func:`reports.matrix_summary.summarise_run` returns it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["agent_skill"]


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
    if matrix.get("not_divergent"):
        reason = str(matrix["not_divergent"])
        return {
            "available": True,
            "matrix_run": run,
            "value": None,
            "ci": None,
            "n": 0,
            "interval": None,
            "status": "not_estimable",
            "reason": reason,
            "self": {
                "target": agent,
                "value": None,
                "n": 0,
                "status": "not_estimable",
                "reason": reason,
            },
            "others": {"value": None, "n_targets": 0, "reason": reason},
            "targets": {},
        }
    rows = {c["target"]: c for c in matrix["cells"] if c["predictor"] == agent}
    targets = {t: _estimate(rows[t], t) for t in matrix["agents"] if t in rows}
    own = targets.get(agent) or {"value": None}
    other_values = [targets[t]["value"] for t in targets if t != agent]
    if not other_values:
        others: dict[str, Any] = {
            "value": None,
            "n_targets": 0,
            "reason": "no other target in the matrix",
        }
    elif any(v is None for v in other_values):
        missing = [t for t in targets if t != agent and targets[t]["value"] is None]
        others = {
            "value": None,
            "n_targets": len(other_values),
            "reason": f"S is undefined for {', '.join(missing)}",
        }
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
        "second_order": _second_order_skill(matrix, agent),
    }


def _second_order_skill(matrix: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """The agent's second-order prediction (B9) as P, over all its (Q, T) cells: how much
    closer than the uniform distribution its predictions of the other predictors' committed
    distributions came (brier(uniform) − brier, with its interval), or why there is none."""
    section = matrix.get("second_order")
    if not section:
        return {"value": None, "reason": "the matrix ran without second-order prediction"}
    row = (section.get("by_predictor") or {}).get(agent)
    if row is None:
        return {"value": None, "reason": f"no second-order cells of {agent} (one agent only?)"}
    vs = row["vs_uniform"]
    return {
        "value": vs.get("value"),
        "ci": vs.get("ci"),
        "n": vs.get("n"),
        "p_holm": vs.get("p_holm"),
        "n_cells": row.get("n_cells"),
        "brier": row.get("brier"),
        "reason": vs.get("reason"),
        "definition": "brier(uniform) - brier(prediction) against the other predictors' "
        "committed distributions, mean over the agent's (Q, T) cells per item, paired over "
        "items; > 0: better than the uniform distribution",
    }
