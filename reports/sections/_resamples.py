"""One set of cluster-bootstrap resamples for every figure of a run that needs one (D50 and its
contrasts, ECE, the confidence slope, the level-k fits, the C log score for comparisons), the
per-agent columns the sections read besides :class:`~reports.sections._columns.AgentColumns`,
and the paired contrasts of the run (agent − control, full − ablated)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ledger.reader import RunAgent
from reports._data import RunData
from reports._judged import judge_counts, stated_signals
from reports._levels import SignalSums, level_fit
from reports._repeated import EpisodeCols, episode_columns
from reports._stats import (
    BootstrapSums,
    ClusterBootstrap,
    D50Result,
    d50_estimate,
    d50_replicates,
    permutation_pvalue,
)
from reports.sections._columns import AgentColumns, details, joint_columns
from reports.sections._design import BoolArray, FloatArray, RunDesign

if TYPE_CHECKING:
    from reports._levels import LevelFit
    from reports.model import JudgeCounts

__all__ = [
    "CALIBRATION_BINS",
    "D50_MIN_PER_DEPTH",
    "LEVEL",
    "AgentExtra",
    "Pair",
    "Resamples",
    "d50",
    "d50_permutation",
    "pairs_of",
    "resample",
    "rng",
]

LEVEL = 0.95
LEAK_CODES = frozenset({"reality_leak", "projection"})
CALIBRATION_BINS = 10
D50_MIN_PER_DEPTH = 20
"""D50 gets a bootstrap interval (and a D50 contrast a test) only when every tested depth holds at
least this many scored false-belief items: below it, most resamples are perfectly separated and
the percentile interval no longer keeps its coverage."""

Pair = tuple[str, str, str, str | None]
"""A paired contrast: (agent, other, kind ``minus_control`` or ``ablation``, ablated module)."""


def rng(seed: int, *key: int) -> np.random.Generator:
    """A generator for one test, seeded by the bootstrap seed and the test's position."""
    return np.random.default_rng([seed, 0x5EED, *key])


@dataclass(frozen=True, eq=False)
class AgentExtra:
    """One agent's per-item columns that the sections read besides
    :class:`~reports.sections._columns.AgentColumns` (nan where an item has none), and its
    level-k fits from the resamples."""

    leak: BoolArray
    """Scored false-belief items answered with a reality leak or a projection."""
    joint: tuple[FloatArray, FloatArray]
    """Joint accuracy's columns (:func:`~reports.sections._columns.joint_columns`)."""
    log_score: FloatArray
    """The C question's log score."""
    brier: FloatArray
    """The C question's Brier score."""
    K_B: FloatArray
    """The depth whose IDR action is the submitted action, per level-k item."""
    signals: Mapping[str, FloatArray]
    """The stated signals by score detail (:data:`reports._judged.SIGNAL_KEYS`: ``K_L``,
    ``br_consistent``, ...), the answer's own or else the judge's reading."""
    signal_sources: Mapping[str, npt.NDArray[Any]]
    """Per signal (``belief``, ``chain``, ``mentalizing``), where each item's came from."""
    judge_counts: JudgeCounts
    within_one: FloatArray
    own_belief: FloatArray
    """Whether an R2-self answer was the agent's own belief."""
    triple: FloatArray
    """Per A question: whether the scenario's A, B and C were all right."""
    rates: Mapping[str, FloatArray]
    """The chance rates of the trials each level-k fit counts (``K_B``, ``K_L``)."""
    repeated: EpisodeCols | None = None
    """The repeated-game episodes' figures (None: the run has none)."""
    level_fit: Mapping[str, LevelFit] = field(default_factory=dict)
    """The level-k fits of ``K_B`` and ``K_L`` (set once the resamples are summed)."""

    def column(self, key: str) -> FloatArray:
        """``K_B``, or the stated signal ``key``."""
        return self.K_B if key == "K_B" else self.signals[key]


@dataclass(frozen=True, eq=False)
class Resamples:
    """The bootstrap (``boot``, ``B`` replicates from ``seed``), the column sums over its
    replicates (``sums``), each agent's further columns (``extra[name]``) and the run's
    paired contrasts."""

    boot: ClusterBootstrap
    sums: BootstrapSums
    B: int
    seed: int
    extra: dict[str, AgentExtra]
    pairs: list[Pair]

    def sum(self, name: str) -> tuple[float, FloatArray]:
        """Column ``name``'s total and its total in each replicate."""
        return self.sums.total(name)


def pairs_of(agents: list[RunAgent], cols: dict[str, AgentColumns]) -> list[Pair]:
    """Paired contrasts: agent − control, full − ablated."""
    pairs: list[Pair] = []
    for a in agents:
        if a.role == "control" and a.base_agent in cols:
            pairs.append((a.base_agent, a.name, "minus_control", None))
        if a.role == "ablation" and a.base_agent in cols:
            module = str(a.spec.get("ablated") or a.name)
            pairs.append((a.base_agent, a.name, "ablation", module))
    return pairs


def resample(
    data: RunData,
    design: RunDesign,
    agents: list[RunAgent],
    cols: dict[str, AgentColumns],
    *,
    seed: int,
    B: int,
) -> Resamples:
    """Draw the run's resamples and sum every column the sections need over them."""
    boot = ClusterBootstrap(
        design.cluster_labels, np.random.default_rng(seed), B=B, strata=design.strata_labels
    )
    columns: dict[str, FloatArray] = {}
    extra: dict[str, AgentExtra] = {}
    depth_masks = [design.fbc & design.is_("depth_n", d) for d in design.fb_depths]
    for ai, a in enumerate(agents):
        c = cols[a.name]
        p = f"a{ai}."
        extra[a.name] = _agent_columns(data, design, c, columns, p, depth_masks)
    pairs = pairs_of(agents, cols)
    for pi, (xn, yn, _, _) in enumerate(pairs):
        cx, cy = cols[xn], cols[yn]
        p = f"p{pi}."
        both = (cx.ok & cy.ok).astype(float)
        for j, m in enumerate(depth_masks):
            columns[p + f"dkx{j}"] = cx.cor * both * m
            columns[p + f"dky{j}"] = cy.cor * both * m
            columns[p + f"dn{j}"] = both * m
    sums: BootstrapSums = boot.sums(columns)
    for ai, a in enumerate(agents):
        ex = extra[a.name]
        fits = {}
        for key, what in (("K_B", "actions"), ("K_L", "stated beliefs")):
            total = {part: sums.total(f"a{ai}.{key}{part}") for part in "nrcs"}
            ss = SignalSums(total["n"], total["r"], total["c"], total["s"], rates=ex.rates[key])
            fits[key] = level_fit(ss, what=what, level=LEVEL)
        extra[a.name] = replace(ex, level_fit=fits)
    return Resamples(boot, sums, B, seed, extra, pairs)


def _agent_columns(
    data: RunData,
    design: RunDesign,
    c: AgentColumns,
    columns: dict[str, FloatArray],
    p: str,
    depth_masks: list[BoolArray],
) -> AgentExtra:
    """The agent's bootstrap columns (into ``columns``, prefixed ``p``) and its further
    per-item columns (returned, without the level-k fits)."""
    n = design.n
    it = data.items
    okf = c.ok.astype(float)
    leak = np.fromiter((x in LEAK_CODES for x in c.prim.tolist()), bool, n) & c.ok & design.fbc
    joint = joint_columns(design, c)
    for j, m in enumerate(depth_masks):
        columns[p + f"dk{j}"] = c.cor * m
        columns[p + f"dn{j}"] = okf * m
    # games details
    w1 = details(data, c, "within_one", design.lk)
    cq = design.abc & design.is_("question", "C")
    ls = details(data, c, "log_score", cq)
    columns[p + "cn"] = np.isfinite(ls).astype(float)
    columns[p + "cs"] = np.nan_to_num(ls)
    brier = details(data, c, "brier", cq)
    k_b = details(data, c, "K_B", design.lk)
    # stated belief, chain and mentalizing: the answer's own, else the judge's reading
    signals, sources = stated_signals(
        data.trials, data.judgements, c.name, c.rows, design.lk & c.ok
    )
    counts = judge_counts(data.judgements, c.name)
    rates = _signal_columns(
        data, design, columns, p, {"K_B": k_b, "K_L": signals["K_L"]}, sources["belief"],
        c.ok & design.lk,
    )
    own_belief = details(data, c, "is_own_belief", design.r2self)
    repeated = (
        episode_columns(data.trials, c.rows, c.ok, design.rp_design) if design.rp.any() else None
    )
    tri = np.full(n, np.nan)
    for ia, ib, ic in design.abc_set.triples:
        if c.ok[ia] and c.ok[ib] and c.ok[ic]:
            tri[ia] = float(c.cor[ia] == c.cor[ib] == c.cor[ic] == 1.0)
    # calibration
    fin = np.isfinite(c.conf)
    conf0 = np.where(fin, c.conf, 0.0)
    columns[p + "fn"] = fin.astype(float)
    b = np.minimum((conf0 * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
    for j in range(CALIBRATION_BINS):
        m = fin & (b == j)
        columns[p + f"e{j}c"] = conf0 * m
        columns[p + f"e{j}k"] = c.cor * m
    sm = fin & design.nt & design.qbel & np.isfinite(it.depth_n)
    x = np.where(sm, it.depth_n, 0.0)
    y = np.where(sm, conf0, 0.0)
    columns.update(
        {
            p + "sn": sm.astype(float),
            p + "sx": x,
            p + "sy": y,
            p + "sxy": x * y,
            p + "sxx": x * x,
        }
    )
    return AgentExtra(
        leak=leak,
        joint=joint,
        log_score=ls,
        brier=brier,
        K_B=k_b,
        signals=signals,
        signal_sources=sources,
        judge_counts=counts,
        within_one=w1,
        own_belief=own_belief,
        triple=tri,
        rates=rates,
        repeated=repeated,
    )


def _signal_columns(
    data: RunData,
    design: RunDesign,
    columns: dict[str, FloatArray],
    p: str,
    values: Mapping[str, FloatArray],
    belief_sources: npt.NDArray[Any],
    m_lk: BoolArray,
) -> dict[str, FloatArray]:
    """Bootstrap columns of the level-k fit of K_B and K_L (``values``; :mod:`reports._levels`):
    trials counted (K_B: every scored level-k trial; K_L: those that state a belief), trials
    whose value matched one depth, their chance rates and the matched depths; returns the
    counted trials' chance rates, for the exact test."""
    it = data.items
    n = design.n
    chance = it.resolve_chance if len(it.resolve_chance) == n else np.full(n, np.nan)
    stated = m_lk & (belief_sources != "")
    rates = {}
    for key, counted in (("K_B", m_lk), ("K_L", stated)):
        v = values[key]
        hit = counted & np.isfinite(v)
        columns[f"{p}{key}n"] = counted.astype(float)
        columns[f"{p}{key}r"] = hit.astype(float)
        columns[f"{p}{key}c"] = np.where(counted, chance, 0.0)
        columns[f"{p}{key}s"] = np.where(hit, v, 0.0)
        rates[key] = chance[counted]
    return rates


def d50(
    design: RunDesign, res: Resamples, kname: str, nname: str, chance: float
) -> tuple[D50Result, FloatArray, str | None]:
    """D50 from per-depth columns ``{kname}{j}`` / ``{nname}{j}``; the replicates (NaN when
    the interval is not estimable) and why it is not."""
    depths = design.fb_depths
    k0 = np.array([res.sum(f"{kname}{j}")[0] for j in range(len(depths))])
    n0 = np.array([res.sum(f"{nname}{j}")[0] for j in range(len(depths))])
    has = n0 > 0
    why = None
    if has.sum() >= 2 and n0[has].min() < D50_MIN_PER_DEPTH:
        worst = int(np.flatnonzero(has)[np.argmin(n0[has])])
        few = int(n0[worst])
        why = (
            f"interval not estimable: {few} scored false-belief "
            f"item{'' if few == 1 else 's'} at depth {depths[worst]:g}; the bootstrap "
            f"interval needs at least {D50_MIN_PER_DEPTH} at every depth"
        )
    if depths and why is None:
        K = np.column_stack([res.sum(f"{kname}{j}")[1] for j in range(len(depths))])
        N = np.column_stack([res.sum(f"{nname}{j}")[1] for j in range(len(depths))])
        replicates: tuple[FloatArray, FloatArray] | None = (K, N)
    else:
        replicates = None
    out = d50_estimate(
        depths,
        k0,
        n0,
        chance=chance,
        replicates=replicates,
        level=LEVEL,
        interval=f"bootstrap-percentile-95 ({res.boot.n_clusters} clusters, B={res.B})"
        if replicates is not None
        else None,
    )
    if out.replicates is not None:
        reps = out.replicates
    elif replicates is not None and math.isfinite(chance):
        reps = d50_replicates(depths, replicates[0], replicates[1], chance=chance)
    else:
        reps = np.full(res.B, np.nan)
    return out, reps, why


def d50_permutation(
    design: RunDesign,
    mask: BoolArray,
    x: FloatArray,
    y: FloatArray,
    chance: float,
    gen: np.random.Generator,
    B: int,
) -> tuple[float, float]:
    """The two-sided permutation test of "two agents' answers are exchangeable" with the
    D50 difference as statistic: on each of B relabellings every item's two answers swap
    with probability 1/2. D50s outside the tested depths are clipped one level beyond
    them. Returns ``(observed difference, p)``."""
    it = design.data.items
    depths = np.asarray(design.fb_depths)
    idx = np.flatnonzero(mask)
    col = np.searchsorted(depths, it.depth_n[idx])
    d = len(depths)
    xa, ya = x[idx], y[idx]
    n = np.bincount(col, minlength=d).astype(float)
    kx = np.bincount(col, weights=xa, minlength=d).astype(float)
    ky = np.bincount(col, weights=ya, minlength=d).astype(float)
    lo, hi = depths[0] - 1.0, depths[-1] + 1.0

    def stat(kx_: FloatArray, ky_: FloatArray) -> FloatArray:
        nn = np.broadcast_to(n, kx_.shape)
        rx = np.clip(d50_replicates(depths, kx_, nn, chance=chance), lo, hi)
        ry = np.clip(d50_replicates(depths, ky_, nn, chance=chance), lo, hi)
        return np.asarray(rx - ry, dtype=float)

    t_obs = float(stat(kx[None], ky[None])[0])
    disc = np.flatnonzero(xa != ya)
    if disc.size == 0:
        return t_obs, 1.0
    move = np.zeros((disc.size, d))
    move[np.arange(disc.size), col[disc]] = (xa - ya)[disc]
    flips = gen.integers(0, 2, size=(B, disc.size)).astype(float)
    delta = flips @ move
    return t_obs, permutation_pvalue(t_obs, stat(kx - delta, ky + delta))
