"""The repeated-games section of a profile (family ``"repeated"``, :mod:`games.repeated`).

Pure: it reads the per-episode figures :func:`games.repeated.score_episode` stored in each
trial's score details and the items' meta (``game``, ``counterfactual``, ``opponent``,
``rounds``, and ``switch_round`` for B6's switching bots). One row per game ×
counterfactual setting (opponents pooled):

- **exploitation** — mean of (total − E[random]) / (benchmark − E[random]) over the episodes
  where it is defined, normal-approximation 95% interval (``normal-95``); an episode against an
  opponent where the best response scores no more than random play in expectation (the RPS
  equilibrium player) has no exploitation and is counted apart;
- **comprehension** — share of episodes with the comprehension round m ≤ rounds (Wilson
  95%, episodes treated as independent) and the median m of those episodes;
- **efficiency** — mean points per 1,000 tokens (prompt + completion) of the episodes that
  report tokens (``normal-95``);
- **invalid moves** — invalid rounds ÷ rounds played (descriptive, no interval);
- **B6** (episodes whose item has ``switch_round``) — mean adaptation latency of the episodes
  that adapted (``normal-95``) and the share that adapted (Wilson 95%);
- **counterfactual gap** — per game, mean exploitation in ``default`` minus that in each other
  setting, with an unpaired normal-approximation 95% interval (√(s₁²/n₁ + s₂²/n₂)).

A figure that cannot be computed is ``{"value": None, "reason": ...}``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._data import ItemTable, TrialTable
from reports._stats import Z95, mean_interval, wilson_interval

__all__ = [
    "FAMILY",
    "EpisodeCols",
    "RepeatedDesign",
    "episode_columns",
    "repeated_design",
    "repeated_section",
]

FAMILY = "repeated"
GAME_ORDER = ("pd", "rps")
COUNTERFACTUAL_ORDER = ("default", "label", "payoff", "joint")
EFFICIENCY_SCALE = 1000

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DEFINITIONS = {
    "exploitation": "(total − E[uniform random play]) ÷ (benchmark − E[random play]): 1 for the "
    "best response to the opponent's script, 0 for random play; undefined (left out) when the "
    "two coincide, e.g. against the RPS equilibrium player",
    "comprehension": "share of episodes whose comprehension round m (seed 003: the earliest "
    "round from which the agent scores no less than the opponent in at least 90% of the "
    "remaining rounds) is within the game; median m over those episodes",
    "efficiency": "points per 1,000 tokens (prompt + completion) of the episode, averaged over "
    "episodes that report tokens",
    "invalid_moves": "invalid rounds ÷ rounds played, pooled over episodes",
    "b6": "episodes against a switching bot (item meta switch_round): adaptation latency = "
    "rounds from the switch until the best-response rule holds to the end; mean over the "
    "episodes that adapted, and the share that adapted",
    "counterfactual_gap": "mean exploitation in the default setting minus mean exploitation "
    "in the counterfactual setting, same game, opponents pooled",
}
INTERVALS = {
    "exploitation": "normal-95",
    "comprehension": "wilson-95",
    "efficiency": "normal-95",
    "invalid_moves": "none",
    "adaptation_latency": "normal-95",
    "adapted": "wilson-95",
    "counterfactual_gap": "normal-95 (unpaired: √(s₁²/n₁ + s₂²/n₂))",
}


@dataclass
class RepeatedDesign:
    """Item-level design of the run's repeated-game episodes (arrays over all items)."""

    mask: BoolArray
    counterfactual: npt.NDArray[Any]
    opponent: npt.NDArray[Any]
    b6: BoolArray


@dataclass
class EpisodeCols:
    """One agent's per-item episode figures (nan where absent / undefined)."""

    scored: BoolArray
    exploitation: FloatArray
    m: FloatArray
    rounds: FloatArray
    efficiency: FloatArray
    invalid: FloatArray
    latency: FloatArray
    adapted: FloatArray


def repeated_design(items: ItemTable) -> RepeatedDesign:
    n = len(items)
    mask = np.asarray(items.family == FAMILY, dtype=bool)
    cf = np.full(n, "", dtype=object)
    opp = np.full(n, "", dtype=object)
    b6 = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(mask).tolist():
        meta = items.meta[i] or {}
        cf[i] = str(meta.get("counterfactual") or "")
        opp[i] = str(meta.get("opponent") or "")
        b6[i] = meta.get("switch_round") is not None
    return RepeatedDesign(mask, cf, opp, b6)


def _num(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float) and math.isfinite(float(v)):
        return float(v)
    return math.nan


def episode_columns(
    trials: TrialTable, rows: npt.NDArray[np.int64], ok: BoolArray, design: RepeatedDesign
) -> EpisodeCols:
    """Read the stored episode figures of one agent's ok repeated-game trials.

    ``rows[i]`` is the agent's trial row for item ``i`` (-1: none)."""
    n = len(ok)
    cols = {k: np.full(n, math.nan) for k in
            ("exploitation", "m", "rounds", "efficiency", "invalid", "latency", "adapted")}
    scored = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(design.mask & ok & (rows >= 0)).tolist():
        d = trials.details(int(rows[i]))
        rounds = _num(d.get("rounds"))
        if not math.isfinite(rounds) or rounds <= 0:
            continue
        scored[i] = True
        cols["rounds"][i] = rounds
        cols["exploitation"][i] = _num(d.get("exploitation"))
        cols["m"][i] = _num(d.get("comprehension_round"))
        cols["efficiency"][i] = _num(d.get("efficiency"))
        inv = d.get("invalid_rounds")
        cols["invalid"][i] = (float(len(inv)) if isinstance(inv, list)
                              else _num(d.get("invalid_rate")) * rounds)
        if design.b6[i]:
            cols["latency"][i] = _num(d.get("adaptation_latency"))
            cols["adapted"][i] = float(d.get("adaptation_latency") is not None)
    return EpisodeCols(scored=scored, **cols)


def _mean(v: FloatArray, reason: str) -> dict[str, Any]:
    mean, lo, hi, n = mean_interval(v, Z95)
    if n == 0:
        return {"value": None, "n": 0, "ci": None, "reason": reason}
    out: dict[str, Any] = {"value": mean, "n": n, "ci": [lo, hi] if n >= 2 else None,
                           "interval": "normal-95"}
    if n < 2:
        out["note"] = "one episode: no interval"
    return out


def _share(k: int, n: int, reason: str) -> dict[str, Any]:
    if n == 0:
        return {"value": None, "k": 0, "n": 0, "ci": None, "reason": reason}
    return {"value": k / n, "k": k, "n": n, "ci": list(wilson_interval(k, n)),
            "interval": "wilson-95"}


def _exploitation(ep: EpisodeCols, m: BoolArray, design: RepeatedDesign) -> dict[str, Any]:
    v = ep.exploitation[m]
    undefined = m & ~np.isfinite(ep.exploitation)
    opp = Counter(str(o) for o in design.opponent[undefined].tolist())
    against = ", ".join(f"{o or '?'} ×{k}" for o, k in sorted(opp.items()))
    if not m.any():
        return {"value": None, "n": 0, "n_undefined": 0, "ci": None,
                "reason": "no scored episodes"}
    out = _mean(v, f"exploitation undefined in every episode (against {against}): the best "
                   "response scores no more than random play in expectation, as against the "
                   "equilibrium player")
    out["n_undefined"] = int(undefined.sum())
    if undefined.any() and out["value"] is not None:
        k = int(undefined.sum())
        out["note"] = (f"{k} episode{'s' if k > 1 else ''} left out (against {against}): "
                       "exploitation undefined, nothing beyond random play to exploit")
    return out


def _cell(ep: EpisodeCols, m: BoolArray, has: BoolArray, ok: BoolArray,
          design: RepeatedDesign) -> dict[str, Any]:
    sm = m & ep.scored
    n = int(sm.sum())
    rounds = ep.rounds[sm]
    mm = ep.m[sm]
    comp = np.isfinite(mm) & (mm <= rounds)
    comprehension = _share(int(comp.sum()), n, "no scored episodes")
    comprehension["median_m"] = float(np.median(mm[comp])) if comp.any() else None
    if n and not comp.any():
        comprehension["median_m_reason"] = "no episode reached comprehension (m > rounds)"
    comprehension["rounds"] = sorted({int(r) for r in rounds.tolist()})
    eff = _mean(ep.efficiency[sm], "no scored episodes" if not n else
                "no token counts (tokens 0 or missing: e.g. a reference agent plays without a "
                "model)")
    eff["scale"] = f"points per {EFFICIENCY_SCALE} tokens"
    total_rounds = float(np.nansum(rounds))
    inv_rounds = float(np.nansum(ep.invalid[sm]))
    invalid: dict[str, Any] = (
        {"value": inv_rounds / total_rounds, "invalid_rounds": int(inv_rounds),
         "rounds": int(total_rounds),
         "episodes_with_invalid": int((ep.invalid[sm] > 0).sum()), "interval": "none"}
        if total_rounds > 0 else {"value": None, "reason": "no scored episodes"}
    )
    bm = sm & design.b6
    if bm.any():
        adapted = ep.adapted[bm] == 1.0
        lat = _mean(ep.latency[bm], "no episode adapted after the switch")
        b6: dict[str, Any] = {
            "available": True,
            "n": int(bm.sum()),
            "adaptation_latency": lat | {"unit": "rounds after the switch, adapted episodes"},
            "adapted": _share(int(adapted.sum()), int(bm.sum()), "no B6 episodes"),
        }
    else:
        b6 = {"available": False, "n": 0,
              "reason": "no B6 episodes (switching bots, item meta switch_round) in this cell"}
    return {
        "n_episodes": n,
        "api_errors": int((m & has & ~ok).sum()),
        "unscored": int((m & ok & ~ep.scored).sum()),
        "exploitation": _exploitation(ep, sm, design),
        "comprehension": comprehension,
        "efficiency": eff,
        "invalid_moves": invalid,
        "b6": b6,
    }


def _order(values: set[str], order: tuple[str, ...]) -> list[str]:
    return [v for v in order if v in values] + sorted(values - set(order))


def _gap(game: str, cf: str, d: Mapping[str, Any], c: Mapping[str, Any],
         vd: FloatArray, vc: FloatArray) -> dict[str, Any]:
    base = {"game": game, "counterfactual": cf, "interval": INTERVALS["counterfactual_gap"]}
    for name, cell in (("default", d), (cf, c)):
        ex = cell["exploitation"]
        if cell["n_episodes"] == 0:
            return base | {"available": False, "difference": None,
                           "reason": f"no scored {name} episodes of {game}"}
        if ex["value"] is None:
            return base | {"available": False, "difference": None,
                           "reason": f"{name} ({game}): {ex.get('reason')}"}
    vd = vd[np.isfinite(vd)]
    vc = vc[np.isfinite(vc)]
    diff = float(vd.mean() - vc.mean())
    ci = None
    if vd.size >= 2 and vc.size >= 2:
        se = math.sqrt(float(vd.var(ddof=1)) / vd.size + float(vc.var(ddof=1)) / vc.size)
        ci = [diff - Z95 * se, diff + Z95 * se]
    out = base | {"available": True, "default": float(vd.mean()), "value": float(vc.mean()),
                  "difference": diff, "ci": ci, "n_default": int(vd.size),
                  "n_counterfactual": int(vc.size)}
    if ci is None:
        out["note"] = "fewer than two episodes on a side: no interval"
    return out


def repeated_section(
    items: ItemTable, design: RepeatedDesign, has: BoolArray, ok: BoolArray, ep: EpisodeCols
) -> dict[str, Any]:
    """The ``repeated`` block of one agent's profile (see the module docstring)."""
    mine = design.mask & has
    if not mine.any():
        return {"available": False, "reason": "no repeated-game episodes answered in this run"}
    games = _order({str(g) for g in items.game[mine].tolist()}, GAME_ORDER)
    rows: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    for g in games:
        gm = mine & (items.game == g)
        cfs = _order({str(c) for c in design.counterfactual[gm].tolist()}, COUNTERFACTUAL_ORDER)
        cells: dict[str, tuple[dict[str, Any], FloatArray]] = {}
        for cf in cfs:
            m = gm & (design.counterfactual == cf)
            cell = {"game": g, "counterfactual": cf} | _cell(ep, m, has, ok, design)
            rows.append(cell)
            cells[cf] = (cell, ep.exploitation[m & ep.scored])
        empty: dict[str, Any] = {"n_episodes": 0, "exploitation": {"value": None}}
        d_cell, d_vals = cells.get("default", (empty, np.empty(0)))
        for cf in cfs:
            if cf == "default":
                continue
            c_cell, c_vals = cells[cf]
            gaps.append(_gap(g, cf, d_cell, c_cell, d_vals, c_vals))
    sm = mine & ep.scored
    return {
        "available": True,
        "n_episodes": int(sm.sum()),
        "api_errors": int((mine & ~ok).sum()),
        "exploitation": _exploitation(ep, sm, design),
        "by_game_counterfactual": rows,
        "counterfactual_gap": gaps,
        "definitions": DEFINITIONS,
        "intervals": INTERVALS,
        "note": "opponents are pooled within each cell; the counterfactual gap compares like "
        "with like when the cells hold the same opponent mix (generate_episodes balances them)",
    }
