"""One agent's trials as columns over the run's items (one value per item, NaN or False
where the agent has no trial of that item), and the run's agents in report order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.reader import RunAgent
from reports._data import RunData
from reports.sections._design import BoolArray, FloatArray, RunDesign

__all__ = ["ROLE_ORDER", "AgentColumns", "agent_columns", "details", "joint_columns", "roster"]

ROLE_ORDER = {"agent": 0, "control": 1, "ablation": 2, "reference": 3}


@dataclass(frozen=True, eq=False)
class AgentColumns:
    """``has`` a trial, ``ok`` no API error, ``cor`` correct (0 for a wrong or unscored ok
    trial), ``unscored`` ok without a score, ``conf`` the stated confidence in [0, 1]
    (``conf_note`` how it was read), ``prim`` the primary error code, ``tokens``, ``latency``,
    ``status`` and ``rows`` (the trial's row in ``data.trials``, -1 when none)."""

    name: str
    has: BoolArray
    ok: BoolArray
    cor: FloatArray
    unscored: BoolArray
    conf: FloatArray
    conf_note: str | None
    prim: npt.NDArray[Any]
    tokens: FloatArray
    latency: FloatArray
    status: npt.NDArray[Any]
    rows: npt.NDArray[np.int64]


def roster(data: RunData) -> list[RunAgent]:
    """The run's agents in report order (agents, controls, ablations, references), with any
    agent that has trials but was not declared."""
    declared = list(data.agents)
    names = {a.name for a in declared}
    for extra in dict.fromkeys(data.trials.agent):
        if extra not in names:
            declared.append(RunAgent(extra, "unknown", {}, None))
            names.add(extra)
    declared.sort(key=lambda a: ROLE_ORDER.get(a.role, 9))
    return declared


def agent_columns(
    data: RunData, design: RunDesign, agents: list[RunAgent]
) -> dict[str, AgentColumns]:
    """Each agent's :class:`AgentColumns`, by name."""
    tr = data.trials
    agent_arr = np.asarray(tr.agent, dtype=object)
    status_arr = np.asarray(tr.status, dtype=object)
    cols: dict[str, AgentColumns] = {}
    n = design.n
    for a in agents:
        rows = np.flatnonzero(agent_arr == a.name) if len(tr) else np.empty(0, np.int64)
        rows = rows[tr.item[rows] >= 0]
        # a reference policy of another family (level:K on a story) has no attempt at all
        rows = rows[status_arr[rows] != "not_applicable"]
        idx = tr.item[rows]
        has = np.zeros(n, bool)
        has[idx] = True
        ok = np.zeros(n, bool)
        ok[idx] = tr.ok[rows]
        c = tr.correct[rows]
        cor = np.zeros(n)
        cor[idx] = np.where(tr.ok[rows] & (c == 1.0), 1.0, 0.0)
        unscored = np.zeros(n, bool)
        unscored[idx] = tr.ok[rows] & np.isnan(c)
        unscored &= ~design.pending  # scored against the run's population, not per trial
        conf = np.full(n, np.nan)
        conf[idx] = tr.confidence[rows]
        conf[~ok | design.pending] = np.nan
        note = None
        finite = np.isfinite(conf)
        if finite.any() and np.nanmax(conf) > 1.0:
            conf = conf / 100.0
            note = "stated confidences above 1 were read as percentages (divided by 100)"
        bad = finite & ((conf < 0) | (conf > 1))
        if bad.any():
            conf[bad] = np.nan
            note = (note + "; " if note else "") + (
                f"{int(bad.sum())} confidences outside [0, 1] ignored"
            )
        prim = np.empty(n, dtype=object)
        prim[idx] = tr.primary_error[rows]
        tokens = np.zeros(n)
        tokens[idx] = tr.tokens_in[rows] + tr.tokens_out[rows]
        lat = np.zeros(n)
        lat[idx] = tr.latency[rows]
        st = np.empty(n, dtype=object)
        st[idx] = status_arr[rows]
        item_row = np.full(n, -1, dtype=np.int64)
        item_row[idx] = rows
        cols[a.name] = AgentColumns(
            a.name, has, ok, cor, unscored, conf, note, prim, tokens, lat, st, item_row
        )
    return cols


def joint_columns(design: RunDesign, c: AgentColumns) -> tuple[FloatArray, FloatArray]:
    """Joint accuracy's columns: whether an item counts (every shallower belief question on
    its story answered without an API error) and whether it and all of those were right."""
    jn = np.zeros(design.n)
    jk = np.zeros(design.n)
    j = design.joint
    order = j.order
    if order.size == 0:
        return jn, jk
    okv = c.ok[order].astype(np.int64)
    corv = (c.ok[order] & (c.cor[order] == 1.0)).astype(np.int64)
    gok = np.minimum.reduceat(okv, j.gstart)
    gcor = np.minimum.reduceat(corv, j.gstart)

    def shallower_all(g: npt.NDArray[np.int64]) -> BoolArray:
        zeros = (g == 0).astype(np.int64)
        cz = np.cumsum(zeros)
        excl = cz - zeros
        base = np.maximum.accumulate(np.where(j.story_start, excl, 0))
        shallower: BoolArray = (excl - base) == 0
        return shallower

    sok = shallower_all(gok)[j.gid]
    scor = shallower_all(gcor)[j.gid]
    defined = c.ok[order] & sok
    jn[order] = defined.astype(float)
    jk[order] = (defined & scor & (c.cor[order] == 1.0)).astype(float)
    return jn, jk


def details(data: RunData, c: AgentColumns, key: str, mask: BoolArray) -> FloatArray:
    """A numeric score detail per item (nan when absent) for the agent's ok trials."""
    out = np.full(len(data.items), np.nan)
    tr = data.trials
    for i in np.flatnonzero(mask & c.ok):
        v = tr.details(int(c.rows[i])).get(key)
        if isinstance(v, bool | int | float) and math.isfinite(float(v)):
            out[i] = float(v)
    return out
