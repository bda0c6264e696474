"""The repeated-games section of a profile (family ``"repeated"``, :mod:`games.repeated`).

Pure: it reads the per-episode figures :func:`games.repeated.score_episode` stored in each
trial's score details and the items' design records (:class:`mindledger.design.DesignRecord`:
``game``, ``counterfactual``, ``opponent``, ``matched``, ``b6``), never their meta. One row per
counterfactual cell of seed 003 — game × setting (``default``, ``label``, ``payoff``,
``joint``), opponents pooled; :func:`games.repeated.counterfactual_design` gives every cell the
same episodes (``design`` says how many each cell has in this run):

- **exploitation** — mean of (total − E[random]) / (benchmark − E[random]) over the episodes
  where it is defined, t interval (``t-95``), not estimable below
  :data:`reports._estimates.MIN_N` episodes; an episode against an opponent where the best
  response scores no more than random play in expectation (the RPS equilibrium player, the
  Stag Hunt's mixed equilibrium player) has no exploitation and is counted apart;
- **comprehension** — share of episodes with the comprehension round m ≤ rounds
  (:func:`reports._estimates.proportion`: Wilson 95%, not estimable below MIN_N) and the
  median m of those episodes;
- **efficiency** — mean points per 1,000 tokens (prompt + completion) of the episodes that
  report tokens (``t-95``);
- **invalid moves** — invalid rounds ÷ rounds played (descriptive, no interval);
- **counterfactual gap** — per game, default minus each other setting, on exploitation,
  *within matched sets*: each pair is one opponent with the same draws in both settings (a
  matched set, :func:`games.repeated.matched_set`), so the gap is a paired difference
  (:func:`reports._estimates.paired_values`: t interval over the pairs, sign-flip test, not
  estimable below MIN_N pairs); pairs where exploitation is undefined on either side are left
  out and counted. A row ``pd+rps`` pools the pairs of both games (each pair still within its
  own game's matched set; the sets are independent);
- **B6** (``b6`` in the design record: the switching bots) — reported on their own, never in
  a counterfactual cell: exploitation, comprehension, the mean adaptation latency of the
  episodes that adapted (``t-95``) and the share that adapted.

- **agent seats** (opponent ``agent:control`` or ``agent:self``: another agent of the run, not
  a script; seed 003's LLM-vs-LLM setting) — apart from the scripted cells, per seat: every
  figure above for the agent's seat, with exploitation against the best fixed action in
  hindsight (:data:`games.repeated.SEAT_BENCHMARK`; there is no script to best-respond to), the
  same for the opponent's seat (``opponent_seat``), mean points of both seats, the
  counterfactual gap within the seat episodes' matched sets, and adaptation latency "not
  estimable" (no scripted switch).

A figure that cannot be computed is ``{"value": None, "reason": ...}``; one whose n is too
small keeps its value with ``status`` ``"not_estimable"`` and the reason. In the agent-seat
block every such reason starts with "not estimable: ".
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from reports._data import ItemTable, TrialTable
from reports._estimates import MIN_N, not_estimable_reason, paired_values, proportion
from reports._stats import clustered_mean_interval
from reports.model import RepeatedSection
from reports.model_sections import (
    AgentSeats,
    CounterfactualGap,
    InvalidMoves,
    RepeatedB6,
    RepeatedDesignSummary,
    RepeatedFigure,
    SeatCell,
    SeatOpponent,
)

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
POOLED = "pd+rps"
EFFICIENCY_SCALE = 1000
SEAT_OPPONENTS = {"agent:control": "control", "agent:self": "self"}
"""The opponents that are agents of the run, and their seats (``games.repeated.AGENT_OPPONENTS``,
read here from the design record's ``opponent``)."""
SEAT_ORDER = ("control", "self")
NOT_ESTIMABLE = "not estimable: "

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
    "b6": "episodes against a switching bot (seed 002 B6), reported apart from the "
    "counterfactual cells: adaptation latency = rounds from the switch until the best-response "
    "rule holds to the end; mean over the episodes that adapted, and the share that adapted",
    "counterfactual_gap": "mean exploitation in the default setting minus that in the "
    "counterfactual setting, over matched pairs: the same opponent with the same draws in both "
    "settings of the same game (pd+rps: the pairs of both games together)",
    "agent_seats": "episodes against another agent of the run: its control (seat control) or a "
    "second instance of itself (seat self), reported apart from the scripted cells; "
    "exploitation there is against the best fixed action in hindsight over the opponent's "
    "actual moves (in the Prisoner's Dilemma: always defect, so mutual cooperation scores −1); "
    "opponent_seat: the same figures from the other seat's side",
}
INTERVALS = {
    "exploitation": "t-95",
    "comprehension": "wilson-95",
    "efficiency": "t-95",
    "invalid_moves": "none",
    "adaptation_latency": "t-95",
    "adapted": "wilson-95",
    "counterfactual_gap": "paired-t-95 over matched pairs (sign-flip permutation test)",
}


@dataclass
class RepeatedDesign:
    """Item-level design of the run's repeated-game episodes (arrays over all items), from the
    items' design records: ``cells`` are the counterfactual-cell episodes, ``b6`` the
    switching-bot episodes (never in a cell)."""

    mask: BoolArray
    cells: BoolArray
    counterfactual: npt.NDArray[Any]
    opponent: npt.NDArray[Any]
    matched: npt.NDArray[Any]
    b6: BoolArray
    seats: BoolArray
    """Episodes against an agent of the run (never in a cell, never B6)."""
    seat: npt.NDArray[Any]
    """Their seat (``control`` | ``self``; "" elsewhere)."""


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
    seat_exploitation: FloatArray
    """Exploitation in agent-seat episodes (hindsight benchmark); ``exploitation`` is nan there,
    so nothing pooled with the scripted episodes reads it."""
    total: FloatArray
    opp_total: FloatArray
    opp_exploitation: FloatArray
    opp_m: FloatArray
    opp_efficiency: FloatArray
    mutual_cooperation: FloatArray


def _column(values: npt.NDArray[Any], n: int, fill: Any) -> npt.NDArray[Any]:
    if len(values) == n:
        return values
    out = np.empty(n, dtype=object if not isinstance(fill, bool) else bool)
    out[:] = fill
    return out


def repeated_design(items: ItemTable) -> RepeatedDesign:
    """The repeated-game design of a run, read from its items' design records."""
    n = len(items)
    mask = np.asarray(items.family == FAMILY, dtype=bool)
    b6 = mask & np.asarray(_column(items.b6, n, False), dtype=bool)
    cf = np.where(mask, _column(items.counterfactual, n, ""), "").astype(object)
    opp = np.where(mask, _column(items.opponent, n, ""), "").astype(object)
    matched = np.where(mask, _column(items.matched, n, ""), "").astype(object)
    seat = np.array([SEAT_OPPONENTS.get(str(o), "") for o in opp.tolist()], dtype=object)
    seats = mask & (seat != "")
    return RepeatedDesign(mask, mask & ~b6 & ~seats, cf, opp, matched, b6 & ~seats, seats, seat)


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
            ("exploitation", "m", "rounds", "efficiency", "invalid", "latency", "adapted",
             "seat_exploitation", "total", "opp_total", "opp_exploitation", "opp_m",
             "opp_efficiency", "mutual_cooperation")}
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
        cols["total"][i] = _num(d.get("total"))
        cols["opp_total"][i] = _num(d.get("opponent_total"))
        if design.seats[i]:
            cols["seat_exploitation"][i] = cols["exploitation"][i]
            cols["exploitation"][i] = math.nan
            other = d.get("opponent_seat")
            if isinstance(other, dict):
                cols["opp_exploitation"][i] = _num(other.get("exploitation"))
                cols["opp_m"][i] = _num(other.get("comprehension_round"))
                cols["opp_efficiency"][i] = _num(other.get("efficiency"))
            cols["mutual_cooperation"][i] = _num(d.get("mutual_cooperation_rate"))
    return EpisodeCols(scored=scored, **cols)


def _mean(v: FloatArray, reason: str) -> RepeatedFigure:
    """A mean over independent episodes: t interval, not estimable below MIN_N."""
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return RepeatedFigure.of({"value": None, "n": 0, "ci": None, "reason": reason})
    mean, lo, hi, _, _ = clustered_mean_interval(v)
    if n < MIN_N or not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return RepeatedFigure.of({
            "value": mean, "n": n, "ci": None, "interval": None, "status": "not_estimable",
            "reason": (not_estimable_reason(n, "episodes") if n < MIN_N
                       else "every episode has the same value: no spread")})  # fmt: skip
    return RepeatedFigure.of(
        {"value": mean, "n": n, "ci": [lo, hi], "interval": "t-95", "status": "estimated"})


def _share(y: BoolArray, reason: str) -> RepeatedFigure:
    if y.size == 0:
        return RepeatedFigure.of({"value": None, "k": 0, "n": 0, "ci": None, "reason": reason})
    return RepeatedFigure.of(proportion(y.astype(float)).to_dict())


def _with(fig: RepeatedFigure, **update: Any) -> RepeatedFigure:
    """``fig`` with more keys (written after those it has, in the model's order)."""
    return fig.model_copy(update=update)


def _exploitation(ep: EpisodeCols, m: BoolArray, design: RepeatedDesign) -> RepeatedFigure:
    v = ep.exploitation[m]
    undefined = m & ~np.isfinite(ep.exploitation)
    opp = Counter(str(o) for o in design.opponent[undefined].tolist())
    against = ", ".join(f"{o or '?'} ×{k}" for o, k in sorted(opp.items()))
    if not m.any():
        return RepeatedFigure.of({"value": None, "n": 0, "n_undefined": 0, "ci": None,
                                  "reason": "no scored episodes"})  # fmt: skip
    out = _mean(v, f"exploitation undefined in every episode (against {against}): the best "
                   "response scores no more than random play in expectation, as against the "
                   "equilibrium player")
    k = int(undefined.sum())
    if undefined.any() and out.value is not None:
        return _with(out, n_undefined=k, note=(
            f"{k} episode{'s' if k > 1 else ''} left out (against {against}): exploitation "
            "undefined, nothing beyond random play to exploit"))  # fmt: skip
    return _with(out, n_undefined=k)


class _Figures(TypedDict):
    """The figures of one set of episodes, as the JSON of a cell, B6 or an agent seat holds
    them (each block's model parses them with its own keys)."""

    n_design: int
    n_episodes: int
    api_errors: int
    unscored: int
    opponents: dict[str, int]
    exploitation: RepeatedFigure
    comprehension: RepeatedFigure
    efficiency: RepeatedFigure
    invalid_moves: InvalidMoves


def _figures(ep: EpisodeCols, m: BoolArray, has: BoolArray, ok: BoolArray,
             design: RepeatedDesign) -> _Figures:
    """The figures of one set of episodes (a cell, or B6)."""
    sm = m & ep.scored
    n = int(sm.sum())
    rounds = ep.rounds[sm]
    mm = ep.m[sm]
    comp = np.isfinite(mm) & (mm <= rounds)
    reached: dict[str, Any] = {"median_m": float(np.median(mm[comp])) if comp.any() else None}
    if n and not comp.any():
        reached["median_m_reason"] = "no episode reached comprehension (m > rounds)"
    comprehension = _with(_share(comp, "no scored episodes"), **reached,
                          rounds=sorted({int(r) for r in rounds.tolist()}))  # fmt: skip
    eff = _with(_mean(ep.efficiency[sm], "no scored episodes" if not n else
                      "no token counts (tokens 0 or missing: e.g. a reference agent plays "
                      "without a model)"), scale=f"points per {EFFICIENCY_SCALE} tokens")
    total_rounds = float(np.nansum(rounds))
    inv_rounds = float(np.nansum(ep.invalid[sm]))
    invalid = InvalidMoves.of(
        {"value": inv_rounds / total_rounds, "invalid_rounds": int(inv_rounds),
         "rounds": int(total_rounds),
         "episodes_with_invalid": int((ep.invalid[sm] > 0).sum()), "interval": "none"}
        if total_rounds > 0 else {"value": None, "reason": "no scored episodes"}
    )
    return _Figures(
        n_design=int(m.sum()),
        n_episodes=n,
        api_errors=int((m & has & ~ok).sum()),
        unscored=int((m & ok & ~ep.scored).sum()),
        opponents=dict(sorted(Counter(str(o) for o in design.opponent[m].tolist()).items())),
        exploitation=_exploitation(ep, sm, design),
        comprehension=comprehension,
        efficiency=eff,
        invalid_moves=invalid,
    )


_NOT_B6 = {"available": False, "n": 0,
           "reason": "B6 switching-bot episodes are reported on their own (section b6), never "
           "in a counterfactual cell"}


def _b6(ep: EpisodeCols, has: BoolArray, ok: BoolArray, design: RepeatedDesign) -> RepeatedB6:
    m = design.b6 & has
    if not m.any():
        return RepeatedB6.of({"available": False, "n": 0,
                              "reason": "no B6 episodes (switching bots) answered in this run"})
    bm = m & ep.scored
    out: dict[str, Any] = {"available": True, "n": int(bm.sum()),
                           **_figures(ep, m, has, ok, design)}
    out["adaptation_latency"] = _with(_mean(ep.latency[bm], "no episode adapted after the switch"),
                                      unit="rounds after the switch, adapted episodes")
    out["adapted"] = _share(ep.adapted[bm] == 1.0, "no scored B6 episodes")
    return RepeatedB6.of(out)


def _order(values: set[str], order: tuple[str, ...]) -> list[str]:
    return [v for v in order if v in values] + sorted(values - set(order))


@dataclass
class _Pairs:
    """Matched pairs of one comparison: default and counterfactual exploitation per set."""

    x: list[float]
    y: list[float]
    undefined: int = 0
    unmatched: int = 0

    def pool(self, other: _Pairs) -> None:
        """Add ``other``'s pairs and counts to these (pooling a comparison over games)."""
        self.x += other.x
        self.y += other.y
        self.undefined += other.undefined
        self.unmatched += other.unmatched


def _pairs(game: str, cf: str, mine: BoolArray, items: ItemTable, design: RepeatedDesign,
           ep: EpisodeCols, within: BoolArray | None = None) -> _Pairs:
    """The matched sets of ``game`` with a scored episode in both ``default`` and ``cf``
    (among ``within``, by default the scripted cells)."""
    by_set: dict[str, dict[str, int]] = {}
    sm = mine & (design.cells if within is None else within) & ep.scored & (items.game == game)
    for i in np.flatnonzero(sm & np.isin(design.counterfactual, ["default", cf])).tolist():
        key = str(design.matched[i])
        if key:
            by_set.setdefault(key, {}).setdefault(str(design.counterfactual[i]), int(i))
    out = _Pairs([], [])
    for members in by_set.values():
        if "default" not in members or cf not in members:
            out.unmatched += 1
            continue
        a, b = ep.exploitation[members["default"]], ep.exploitation[members[cf]]
        if not (math.isfinite(a) and math.isfinite(b)):
            out.undefined += 1
            continue
        out.x.append(float(a))
        out.y.append(float(b))
    return out


def _gap(
    game: str, cf: str, pairs: _Pairs, rng: np.random.Generator, *, seat: bool = False
) -> CounterfactualGap:
    """The counterfactual gap of ``game`` (default − ``cf``) over its matched pairs; ``seat``:
    as the agent-seat block shows it, with ``n`` (pairs) always and "not estimable: …" when it
    has no value."""
    out: dict[str, Any] = {"game": game, "counterfactual": cf,
                           "interval": INTERVALS["counterfactual_gap"],
                           "pairs_undefined": pairs.undefined}
    if not pairs.x:
        why = (f"no matched pair of {game} episodes in default and {cf} with defined "
               "exploitation")
        if pairs.undefined:
            why += f" ({pairs.undefined} matched sets left out: exploitation undefined)"
        elif not pairs.unmatched:
            why += " (no matched sets: the episodes were not generated in matched sets)"
        out |= {"available": False, "difference": None, "reason": why}
    else:
        c = paired_values(pairs.x, pairs.y, ("default", "value"), rng)
        d = c.to_dict()
        out |= {
            "available": True,
            "default": d["default"],
            "value": d["value"],
            "difference": c.difference,
            "ci": d["ci"],
            "n_pairs": c.n,
            "n_default": c.n,
            "n_counterfactual": c.n,
            "status": d["status"],
            "test": c.test,
            "p": c.p,
        }
        out["interval"] = c.interval or INTERVALS["counterfactual_gap"]
        if c.reason:
            out["reason"] = c.reason
        if pairs.undefined:
            out["note"] = (f"{pairs.undefined} matched set{'s' if pairs.undefined > 1 else ''} "
                           "left out: exploitation undefined in one of the two settings")
    if seat:
        out["n"] = int(out.get("n_pairs") or 0)
        if not out["available"]:
            out["value"] = None
            reason = str(out.get("reason") or "no matched pairs")
            out["reason"] = reason if reason.startswith(NOT_ESTIMABLE) else NOT_ESTIMABLE + reason
    return CounterfactualGap.of(out)


def _design_summary(items: ItemTable, design: RepeatedDesign) -> RepeatedDesignSummary:
    cells = Counter((str(items.game[i]), str(design.counterfactual[i]))
                    for i in np.flatnonzero(design.cells).tolist())
    per_cell = {f"{g}/{c}": cells[(g, c)]
                for g in _order({g for g, _ in cells}, GAME_ORDER)
                for c in _order({c for gg, c in cells if gg == g}, COUNTERFACTUAL_ORDER)}
    counts = set(per_cell.values())
    sets = {str(m) for m in design.matched[design.cells].tolist() if m}
    return RepeatedDesignSummary.of({
        "episodes_per_cell": per_cell,
        "balanced": len(counts) == 1,
        "matched_sets": len(sets),
        "b6_episodes": int(design.b6.sum()),
    })


def repeated_section(
    items: ItemTable, design: RepeatedDesign, has: BoolArray, ok: BoolArray, ep: EpisodeCols,
    *, seed: int = 0,
) -> RepeatedSection:
    """The ``repeated`` block of one agent's profile (see the module docstring). ``seed`` seeds
    the sign-flip tests of the counterfactual gaps."""
    mine = design.mask & has
    if not mine.any():
        return RepeatedSection.of(
            {"available": False, "reason": "no repeated-game episodes answered in this run"})
    in_cells = mine & design.cells
    games = _order({str(g) for g in items.game[in_cells].tolist()}, GAME_ORDER)
    rows: list[dict[str, Any]] = []
    gaps: list[CounterfactualGap] = []
    pooled: dict[str, _Pairs] = {}
    for gi, g in enumerate(games):
        gm = in_cells & (items.game == g)
        cfs = _order({str(c) for c in design.counterfactual[gm].tolist()}, COUNTERFACTUAL_ORDER)
        for cf in cfs:
            m = gm & (design.counterfactual == cf)
            rows.append({"game": g, "counterfactual": cf, **_figures(ep, m, has, ok, design),
                         "b6": _NOT_B6})
        for ci, cf in enumerate(c for c in COUNTERFACTUAL_ORDER[1:] if c in cfs):
            pairs = _pairs(g, cf, mine, items, design, ep)
            gaps.append(_gap(g, cf, pairs, np.random.default_rng([seed, 0x6A9, gi, ci])))
            pooled.setdefault(cf, _Pairs([], [])).pool(pairs)
    if len(games) > 1:
        for ci, (cf, pairs) in enumerate(pooled.items()):
            gaps.append(_gap(POOLED, cf, pairs, np.random.default_rng([seed, 0x6A9, 99, ci])))
    sm = in_cells & ep.scored
    return RepeatedSection.of({
        "available": True,
        "n_episodes": int(sm.sum()),
        "api_errors": int((in_cells & ~ok).sum()),
        "exploitation": _exploitation(ep, sm, design),
        "design": _design_summary(items, design),
        "by_game_counterfactual": rows,
        "counterfactual_gap": gaps,
        "b6": _b6(ep, has, ok, design),
        "agent_seats": _agent_seats(items, design, has, ok, ep, seed),
        "definitions": DEFINITIONS,
        "intervals": INTERVALS,
        "note": "opponents are pooled within each cell (every cell of a game holds the same "
        "matched sets, so the same opponent mix); the counterfactual gap compares each "
        "matched set with itself; B6 episodes are reported on their own",
    })


# ------------------------------------------------------------------------------- agent seats


def _estimability(d: RepeatedFigure) -> RepeatedFigure:
    """``d`` with a reason that says "not estimable: …" when it has no value."""
    reason = d.reason
    if d.value is None and isinstance(reason, str) and not reason.startswith(NOT_ESTIMABLE):
        d = _with(d, reason=NOT_ESTIMABLE + reason)
    return d


def _seat_figures(ep: EpisodeCols, m: BoolArray, has: BoolArray, ok: BoolArray,
                  design: RepeatedDesign, head: dict[str, str],
                  gaps: list[CounterfactualGap] | None = None) -> SeatCell:
    """The figures of one set of agent-seat episodes (``head``: its seat, and its opponent or
    game and setting): the agent's seat as :func:`_figures` gives them (exploitation on the
    hindsight benchmark), the opponent seat's, both seats' mean points; and ``gaps``, the
    seat's counterfactual gaps."""
    fig = _figures(ep, m, has, ok, design)
    sm = m & ep.scored
    n = int(sm.sum())
    none = "no scored episodes"
    out: dict[str, Any] = {k: v for k, v in fig.items() if k != "opponents"}
    out["exploitation"] = _with(_estimability(fig["exploitation"]), benchmark="hindsight")
    out["comprehension"] = _estimability(fig["comprehension"])
    out["efficiency"] = _estimability(fig["efficiency"])
    out["adaptation_latency"] = RepeatedFigure.of({
        "value": None, "n": 0, "ci": None,
        "reason": NOT_ESTIMABLE + "the opponent is an agent with no scripted switch, so there "
        "is no switch round to adapt from"})  # fmt: skip
    opp_m = ep.opp_m[sm]
    comp = np.isfinite(opp_m) & (opp_m <= ep.rounds[sm])
    opp_comp = _with(_estimability(_share(comp, none)),
                     median_m=float(np.median(opp_m[comp])) if comp.any() else None)
    out["opponent_seat"] = SeatOpponent.of({
        "exploitation": _with(_estimability(_mean(
            ep.opp_exploitation[sm], none if not n else
            "exploitation undefined in every episode (the best fixed action scores no more "
            "than random play against the agent's moves)")), benchmark="hindsight"),
        "comprehension": opp_comp,
        "efficiency": _with(_estimability(_mean(
            ep.opp_efficiency[sm], none if not n else
            "no token counts (a reference agent plays without a model)")),
            scale=f"points per {EFFICIENCY_SCALE} tokens"),
        "total": _estimability(_mean(ep.opp_total[sm], none)),
    })  # fmt: skip
    out["total"] = _estimability(_mean(ep.total[sm], none))
    coop = ep.mutual_cooperation[sm]
    if np.isfinite(coop).any():
        out["mutual_cooperation"] = _estimability(_mean(coop, none))
    return SeatCell.of(head | out | ({} if gaps is None else {"counterfactual_gap": gaps}))


def _seat_gaps(seat: str, games: list[str], mine: BoolArray, items: ItemTable,
               design: RepeatedDesign, ep: EpisodeCols, seed: int) -> list[CounterfactualGap]:
    within = design.seats & (design.seat == seat)
    gaps: list[CounterfactualGap] = []
    pooled: dict[str, _Pairs] = {}
    si = SEAT_ORDER.index(seat) if seat in SEAT_ORDER else len(SEAT_ORDER)
    for gi, g in enumerate(games):
        gm = mine & within & (items.game == g)
        cfs = {str(c) for c in design.counterfactual[gm].tolist()}
        others = [c for c in COUNTERFACTUAL_ORDER[1:] if c in cfs]
        if not others:
            gaps.append(CounterfactualGap.of({
                "game": g, "counterfactual": None, "available": False, "value": None,
                "difference": None, "n": 0,
                "reason": NOT_ESTIMABLE + f"no {g} episode in a counterfactual setting to pair "
                "with the default one (no matched cells)"}))  # fmt: skip
        for ci, cf in enumerate(others):
            pairs = _pairs(g, cf, mine, items, design, ep, within)
            gaps.append(_gap(g, cf, pairs, np.random.default_rng([seed, 0x5EA, si, gi, ci]),
                             seat=True))  # fmt: skip
            pooled.setdefault(cf, _Pairs([], [])).pool(pairs)
    if len(games) > 1:
        for ci, (cf, pairs) in enumerate(pooled.items()):
            gaps.append(_gap(POOLED, cf, pairs,
                             np.random.default_rng([seed, 0x5EA, si, 99, ci]), seat=True))
    return gaps


def _agent_seats(items: ItemTable, design: RepeatedDesign, has: BoolArray, ok: BoolArray,
                 ep: EpisodeCols, seed: int) -> AgentSeats:
    """The agent-seat block: per seat (pooled over games and settings, with the counterfactual
    gap) and per seat × game × setting."""
    if not design.seats.any():
        return AgentSeats.of({
            "available": False,
            "reason": "no episodes against the run's agents (agent:control, agent:self) in "
            "this run"})  # fmt: skip
    mine = design.seats & has
    if not mine.any():
        return AgentSeats.of({
            "available": False,
            "reason": "this agent played no episode against an agent of the run (a control "
            "sits in its agent's control seat and plays only the self seat; a reference "
            "agent plays only 'random' in the self seat)"})  # fmt: skip
    view = replace(ep, exploitation=ep.seat_exploitation)
    by_seat: list[SeatCell] = []
    rows: list[SeatCell] = []
    for seat in _order({str(s) for s in design.seat[mine].tolist()}, SEAT_ORDER):
        sm = mine & (design.seat == seat)
        games = _order({str(g) for g in items.game[sm].tolist()}, GAME_ORDER)
        by_seat.append(_seat_figures(
            view, sm, has, ok, design, {"seat": seat, "opponent": f"agent:{seat}"},
            _seat_gaps(seat, games, mine, items, design, view, seed)))  # fmt: skip
        for g in games:
            gm = sm & (items.game == g)
            for cf in _order({str(c) for c in design.counterfactual[gm].tolist()},
                             COUNTERFACTUAL_ORDER):
                rows.append(_seat_figures(view, gm & (design.counterfactual == cf), has, ok,
                                          design, {"seat": seat, "game": g, "counterfactual": cf}))
    cells = Counter((str(design.seat[i]), str(items.game[i]), str(design.counterfactual[i]))
                    for i in np.flatnonzero(design.seats).tolist())
    return AgentSeats.of({
        "available": True,
        "n_episodes": int((mine & ep.scored).sum()),
        "design": {"episodes_per_cell": {f"{s}/{g}/{c}": k for (s, g, c), k in
                                         sorted(cells.items())},
                   "balanced": len(set(cells.values())) <= 1,
                   "matched_sets": len({str(x) for x in design.matched[design.seats].tolist()
                                        if x})},
        "by_seat": by_seat,
        "by_seat_game_counterfactual": rows,
        "metrics": ["exploitation", "comprehension", "efficiency", "adaptation_latency",
                    "counterfactual_gap"],
        "definition": DEFINITIONS["agent_seats"],
    })
