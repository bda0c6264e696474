"""The recursive-reasoning profile of every agent in a run (seed 002 §14.3 and §18).

:func:`build_profile` reads a run (:func:`reports.data.load_run`) and returns a JSON-ready dict;
:func:`profile_from_data` is the pure part. Intervals (the glossary is in the profile's
``intervals`` key):

- proportions show the **wider** of the Wilson interval and a cluster-bootstrap percentile
  interval (the seed-000 Appendix D rule), and say which one they show;
- the cluster bootstrap resamples whole cells — (story, belief, depth) for NestToM, (story,
  depth) for Hi-ToM, (game, condition, target depth, lambda) for games, the A/B/C scenario for
  A/B/C items — within the design's strata, with a generator seeded by ``seed``; one set of
  resamples serves every statistic of the run, so paired contrasts (agent − control, full −
  ablated) are computed on shared resamples of the same items;
- D50 has a bootstrap percentile interval whose ends outside the tested depths are bounds;
- the degradation slope has a cluster-robust Wald interval; means of non-binary quantities
  (K_B, K_L, log score) have normal-approximation intervals.

Every figure carries its n. API errors are excluded from accuracy and counted; an ``ok`` trial
without a score counts as wrong (an unparseable answer is wrong, never dropped).

Anti-inflation (§18.2): an agent whose true-belief control accuracy is below 90% is marked
``valid: false`` and its first notice says its false-belief scores are invalid; a run on
held-out seeds is marked as such, and its seed is withheld (``run.seed`` None,
``run.seed_withheld`` true) unless an operator asks with ``reveal_held_out=True``: the seed
regenerates the held-out items. The profile carries no item seeds or parameters.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.store import RunAgent, Store
from reports._disclosure import disclosed_run
from reports._repeated import episode_columns, repeated_design, repeated_section
from reports.data import RunData, depth_sort_key, load_run
from reports.stats import (
    Z95,
    BootstrapSums,
    ClusterBootstrap,
    D50Result,
    bootstrap_pvalue,
    d50_estimate,
    d50_replicates,
    degradation_slope,
    ece,
    holm,
    mean_interval,
    percentile_interval,
    wilson_interval,
)

__all__ = [
    "PROFILE_SCHEMA",
    "TRUE_BELIEF_THRESHOLD",
    "Analysis",
    "analyse",
    "build_profile",
    "diagnose_references",
    "profile_from_data",
]

PROFILE_SCHEMA = "mindledger.profile/1"
TRUE_BELIEF_THRESHOLD = 0.90
"""§18.2 rule 6: true-belief controls must be passed (>= 90%) for false-belief scores to count."""
LEVEL = 0.95
LEAK_CODES = frozenset({"reality_leak", "projection"})
ROLE_ORDER = {"agent": 0, "control": 1, "ablation": 2, "reference": 3}
CALIBRATION_BINS = 10
SAFE_SPEC_KEYS = ("adapter", "policy", "model", "ablated", "modules", "depth")

INTERVALS = {
    "wilson-95": "Wilson score interval, 95%, treating trials as independent.",
    "cluster-bootstrap-95": (
        "Cluster bootstrap percentile interval, 95%: whole cells resampled with replacement "
        "within the design's strata (NestToM: cells (story, belief, depth) within (belief, "
        "depth); Hi-ToM: (story, depth) within depth; games: (game, condition, target depth, "
        "lambda) within (game, condition); A/B/C items: scenarios within game; repeated "
        "games: episodes within (game, counterfactual))."
    ),
    "paired-cluster-bootstrap-95": (
        "The same cluster bootstrap applied to per-item differences on the items both agents "
        "answered without an API error; p-values are two-sided, from the bootstrap standard "
        "error (normal approximation; the percentile p-value where replicates are unbounded), "
        "Holm-adjusted across every contrast in the report (p_holm)."
    ),
    "bootstrap-percentile-95": (
        "Percentile interval of the statistic over the cluster-bootstrap replicates; an end "
        "outside the tested depths is reported as a bound (None plus a note)."
    ),
    "normal-95": "Normal approximation, mean ± 1.96·sd/√n (means of non-binary quantities).",
    "wald-cluster-robust-95": "Wald interval with cluster-robust standard errors (statsmodels).",
    "none": "Descriptive totals; no interval.",
}

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def build_profile(
    store: Store,
    run_id: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
) -> dict[str, Any]:
    """The profile of every agent in run ``run_id`` (see the module docstring).

    ``seed`` is the bootstrap's seed, not the run's. A held-out run's own seed is withheld
    (``run.seed`` None, ``run.seed_withheld`` true) unless ``reveal_held_out`` — for operators
    only: the seed regenerates the held-out items.

    Raises :class:`~mindledger.errors.NotFoundError` for an unknown run id.
    """
    data = load_run(store, run_id)
    return analyse(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out).profile


def profile_from_data(
    data: RunData, *, seed: int = 0, n_boot: int = 2000, reveal_held_out: bool = False
) -> dict[str, Any]:
    """The profile of an already loaded run (pure); ``reveal_held_out`` as in
    :func:`build_profile`."""
    return analyse(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out).profile


# -- helpers -----------------------------------------------------------------------------


def _clean(v: Any) -> Any:
    """JSON-ready: numpy scalars to Python, NaN/inf to None, tuples to lists."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_clean(x) for x in v.tolist()]
    if isinstance(v, np.bool_ | bool):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _width(ci: Sequence[float]) -> float:
    return ci[1] - ci[0] if all(math.isfinite(x) for x in ci) else -1.0


@dataclass
class _AgentCols:
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


# -- the analysis ---------------------------------------------------------------------------


class Analysis:
    """Everything computed for one run: the profile dict and the replicates behind it.

    ``metric_replicates[agent][metric] = (estimate, replicates, n)`` for the primary metrics,
    used by :func:`reports.render.compare` to put intervals on changes between runs.
    ``reveal_held_out`` puts a held-out run's seed in the profile (operators only).
    """

    def __init__(
        self, data: RunData, *, seed: int = 0, n_boot: int = 2000, reveal_held_out: bool = False
    ):
        self.data = data
        self.seed = seed
        self.reveal_held_out = reveal_held_out
        self.B = n_boot
        self.metric_replicates: dict[str, dict[str, tuple[float, FloatArray, int]]] = {}
        self.contrasts: list[dict[str, Any]] = []
        self._static()
        self._agents()
        self._bootstrap()
        self.profile = self._build()

    # -- item-level structure ----------------------------------------------------------

    def _static(self) -> None:
        it = self.data.items
        self.N = n = len(it)
        fam = it.family
        self.nt = fam == "nesttom"
        self.hi = fam == "hitom"
        self.gm = fam == "games"
        q = it.question
        self.qbel = (self.nt | self.hi) & (q == "belief")
        self.fb = self.nt & (it.belief == "false")
        self.tb = self.nt & (it.belief == "true")
        self.beh = self.nt & (q == "behaviour")
        self.jud = self.nt & (q == "judgment")
        self.abc = self.gm & np.isin(q, ["A", "B", "C", "K"])
        self.lk_excluded = self.gm & ~self.abc & it.excluded
        self.lk = self.gm & ~self.abc & ~it.excluded
        self.rp_design = repeated_design(it)
        self.rp = self.rp_design.mask
        strata: list[tuple[Any, ...]] = [()] * n
        clusters: list[tuple[Any, ...]] = [()] * n
        for i in range(n):
            iid = it.ids[i]
            if self.nt[i]:
                strata[i] = ("nesttom", it.belief[i], it.depth[i])
                clusters[i] = ("nt", it.story[i] or iid, it.belief[i], it.depth[i])
            elif self.hi[i]:
                strata[i] = ("hitom", it.depth[i])
                clusters[i] = ("hi", it.story[i] or iid, it.depth[i])
            elif self.abc[i]:
                strata[i] = ("games-abc", it.game[i])
                clusters[i] = ("abc", it.game[i], it.group[i] or iid)
            elif self.gm[i]:
                strata[i] = ("games", it.game[i], it.condition[i])
                if math.isfinite(it.target_depth[i]):
                    clusters[i] = (
                        "g", it.game[i], it.condition[i], it.target_depth[i], it.lam[i]
                    )
                else:
                    clusters[i] = ("g-item", iid)
            elif self.rp[i]:
                strata[i] = ("repeated", it.game[i], self.rp_design.counterfactual[i])
                clusters[i] = ("rp", iid)
            else:
                strata[i] = (str(fam[i]),)
                clusters[i] = ("item", iid)
        self.strata_labels = strata
        self.cluster_labels = clusters
        # NestToM depth labels present, in report order
        self.nt_depths = sorted(
            {d for d in it.depth[self.nt & self.qbel].tolist() if d}, key=depth_sort_key
        )
        self.hi_depths = sorted(
            {d for d in it.depth[self.hi].tolist() if d}, key=depth_sort_key
        )
        # applied-ToM gap: belief questions in the same (story, belief, depth) cell as a
        # behaviour question, so that both sides cover the same stories and depths
        beh_cells = {
            (it.story[j], it.belief[j], it.depth[j]) for j in np.flatnonzero(self.beh).tolist()
            if it.story[j]
        }
        self.bs = np.zeros(n, dtype=bool)
        for j in np.flatnonzero(self.nt & self.qbel & (it.story != "")).tolist():
            self.bs[j] = (it.story[j], it.belief[j], it.depth[j]) in beh_cells
        self._joint_static()
        self._abc_static()

    def _joint_static(self) -> None:
        it = self.data.items
        cand = np.flatnonzero(self.qbel & (it.story != "") & np.isfinite(it.depth_n))
        self.joint_items = cand
        if cand.size == 0:
            self.joint_order = cand
            return
        skey = [f"{it.family[i]}\x1f{it.story[i]}" for i in cand]
        codes = {k: j for j, k in enumerate(dict.fromkeys(skey))}
        scode = np.asarray([codes[k] for k in skey], dtype=np.int64)
        dn = it.depth_n[cand]
        order = np.lexsort((dn, scode))
        self.joint_order = cand[order]
        sc, dd = scode[order], dn[order]
        new_group = np.r_[True, (sc[1:] != sc[:-1]) | (dd[1:] != dd[:-1])]
        self.joint_gstart = np.flatnonzero(new_group)
        self.joint_gid = np.cumsum(new_group) - 1
        gs = sc[self.joint_gstart]
        self.joint_story_start = np.r_[True, gs[1:] != gs[:-1]]

    def _abc_static(self) -> None:
        it = self.data.items
        groups: dict[tuple[str, str], dict[str, int]] = {}
        for i in np.flatnonzero(self.abc & (it.group != "")):
            groups.setdefault((it.game[i], it.group[i]), {}).setdefault(it.question[i], int(i))
        self.abc_triples: list[tuple[int, int, int]] = []
        self.abc_equal_truths = 0
        self.abc_unknown_truths = 0
        for members in groups.values():
            if not all(q in members for q in "ABC"):
                continue
            a, b, c = members["A"], members["B"], members["C"]
            flags = [it.abc_differ[x] for x in (a, b, c)]
            if any(f is False for f in flags):
                self.abc_equal_truths += 1
                continue
            if not any(f is True for f in flags):
                truths = [it.truth_answer[x] for x in (a, b, c)]
                if any(t is None for t in truths):
                    self.abc_unknown_truths += 1
                elif len({json.dumps(t, sort_keys=True) for t in truths}) < 3:
                    self.abc_equal_truths += 1
                    continue
            self.abc_triples.append((a, b, c))

    # -- per-agent columns --------------------------------------------------------------

    def _agents(self) -> None:
        tr = self.data.trials
        declared = list(self.data.agents)
        names = {a.name for a in declared}
        for extra in dict.fromkeys(tr.agent):
            if extra not in names:
                declared.append(RunAgent(extra, "unknown", {}, None))
                names.add(extra)
        declared.sort(key=lambda a: ROLE_ORDER.get(a.role, 9))
        self.agents = declared
        self.by_name = {a.name: a for a in declared}
        agent_arr = np.asarray(tr.agent, dtype=object)
        status_arr = np.asarray(tr.status, dtype=object)
        self.cols: dict[str, _AgentCols] = {}
        n = self.N
        for a in declared:
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
            conf = np.full(n, np.nan)
            conf[idx] = tr.confidence[rows]
            conf[~ok] = np.nan
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
            self.cols[a.name] = _AgentCols(
                a.name, has, ok, cor, unscored, conf, note, prim, tokens, lat, st, item_row
            )

    def _joint(self, c: _AgentCols) -> tuple[FloatArray, FloatArray]:
        jn = np.zeros(self.N)
        jk = np.zeros(self.N)
        order = self.joint_order
        if order.size == 0:
            return jn, jk
        okv = c.ok[order].astype(np.int64)
        corv = (c.ok[order] & (c.cor[order] == 1.0)).astype(np.int64)
        gok = np.minimum.reduceat(okv, self.joint_gstart)
        gcor = np.minimum.reduceat(corv, self.joint_gstart)

        def shallower_all(g: npt.NDArray[np.int64]) -> BoolArray:
            zeros = (g == 0).astype(np.int64)
            cz = np.cumsum(zeros)
            excl = cz - zeros
            base = np.maximum.accumulate(
                np.where(self.joint_story_start, excl, 0)
            )
            return (excl - base) == 0

        sok = shallower_all(gok)[self.joint_gid]
        scor = shallower_all(gcor)[self.joint_gid]
        defined = c.ok[order] & sok
        jn[order] = defined.astype(float)
        jk[order] = (defined & scor & (c.cor[order] == 1.0)).astype(float)
        return jn, jk

    def _details(self, c: _AgentCols, key: str, mask: BoolArray) -> FloatArray:
        """A numeric score detail per item (nan when absent) for the agent's ok trials."""
        out = np.full(self.N, np.nan)
        tr = self.data.trials
        for i in np.flatnonzero(mask & c.ok):
            v = tr.details(int(c.rows[i])).get(key)
            if isinstance(v, bool | int | float) and math.isfinite(float(v)):
                out[i] = float(v)
        return out

    # -- bootstrap ----------------------------------------------------------------------

    def _bootstrap(self) -> None:
        rng = np.random.default_rng(self.seed)
        self.boot = ClusterBootstrap(
            self.cluster_labels, rng, B=self.B, strata=self.strata_labels
        )
        self.stratum_index = {lab: i for i, lab in enumerate(self.boot.strata)}
        columns: dict[str, FloatArray] = {}
        by_stratum: list[str] = []
        self.extra: dict[str, dict[str, Any]] = {}
        for ai, a in enumerate(self.agents):
            c = self.cols[a.name]
            p = f"a{ai}."
            self.extra[a.name] = ex = {}
            okf = c.ok.astype(float)
            bn = okf * self.qbel
            bk = c.cor * self.qbel
            leak = np.fromiter(
                (x in LEAK_CODES for x in c.prim.tolist()), bool, self.N
            ) & c.ok & self.qbel & self.fb
            jn, jk = self._joint(c)
            columns.update(
                {
                    p + "bn": bn,
                    p + "bk": bk,
                    p + "lk": leak.astype(float),
                    p + "jn": jn,
                    p + "jk": jk,
                    p + "bsn": okf * self.bs,
                    p + "bsk": c.cor * self.bs,
                    p + "hn": okf * self.beh,
                    p + "hk": c.cor * self.beh,
                    p + "gn": okf * self.lk,
                    p + "gk": c.cor * self.lk,
                }
            )
            by_stratum += [p + s for s in ("bn", "bk", "lk", "jn", "jk", "gn", "gk")]
            ex["leak"] = leak
            # games details
            w1 = self._details(c, "within_one", self.lk)
            columns[p + "wn"] = np.isfinite(w1).astype(float)
            columns[p + "wk"] = np.nan_to_num(w1)
            by_stratum += [p + "wn", p + "wk"]
            ls = self._details(c, "log_score", self.abc & (self.data.items.question == "C"))
            columns[p + "cn"] = np.isfinite(ls).astype(float)
            columns[p + "cs"] = np.nan_to_num(ls)
            ex["log_score"] = ls
            ex["brier"] = self._details(c, "brier", self.abc & (self.data.items.question == "C"))
            ex["K_B"] = self._details(c, "K_B", self.lk)
            ex["K_L"] = self._details(c, "K_L", self.lk)
            ex["br_consistent"] = self._details(c, "br_consistent", self.lk)
            ex["within_one"] = w1
            if self.rp.any():
                ex["repeated"] = episode_columns(self.data.trials, c.rows, c.ok, self.rp_design)
            for qq in "ABCK":
                m = self.abc & (self.data.items.question == qq)
                columns[p + f"q{qq}n"] = okf * m
                columns[p + f"q{qq}k"] = c.cor * m
            tn = np.zeros(self.N)
            tk = np.zeros(self.N)
            for ia, ib, ic in self.abc_triples:
                if c.ok[ia] and c.ok[ib] and c.ok[ic]:
                    tn[ia] = 1.0
                    tk[ia] = float(c.cor[ia] == c.cor[ib] == c.cor[ic] == 1.0)
            columns[p + "tn"] = tn
            columns[p + "tk"] = tk
            # calibration
            fin = np.isfinite(c.conf)
            conf0 = np.where(fin, c.conf, 0.0)
            columns[p + "fn"] = fin.astype(float)
            b = np.minimum((conf0 * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
            for j in range(CALIBRATION_BINS):
                m = fin & (b == j)
                columns[p + f"e{j}c"] = conf0 * m
                columns[p + f"e{j}k"] = c.cor * m
            sm = fin & self.nt & self.qbel & np.isfinite(self.data.items.depth_n)
            x = np.where(sm, self.data.items.depth_n, 0.0)
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
        # paired contrasts: agent − control, full − ablated
        self.pairs: list[tuple[str, str, str, str | None]] = []
        for a in self.agents:
            if a.role == "control" and a.base_agent in self.cols:
                self.pairs.append((a.base_agent, a.name, "minus_control", None))
            if a.role == "ablation" and a.base_agent in self.cols:
                module = str(a.spec.get("ablated") or a.name)
                self.pairs.append((a.base_agent, a.name, "ablation", module))
        kq = self.abc & (self.data.items.question == "K")
        for pi, (xn, yn, _, _) in enumerate(self.pairs):
            cx, cy = self.cols[xn], self.cols[yn]
            p = f"p{pi}."
            both = (cx.ok & cy.ok).astype(float)
            fbm = both * self.qbel * self.fb
            lx = self.extra[xn]["leak"].astype(float) * fbm
            ly = self.extra[yn]["leak"].astype(float) * fbm
            lsx, lsy = self.extra[xn]["log_score"], self.extra[yn]["log_score"]
            cboth = np.isfinite(lsx) & np.isfinite(lsy)
            tnx = np.zeros(self.N)
            tkx = np.zeros(self.N)
            tky = np.zeros(self.N)
            for ia, ib, ic in self.abc_triples:
                if all(cx.ok[j] and cy.ok[j] for j in (ia, ib, ic)):
                    tnx[ia] = 1.0
                    tkx[ia] = float(cx.cor[ia] == cx.cor[ib] == cx.cor[ic] == 1.0)
                    tky[ia] = float(cy.cor[ia] == cy.cor[ib] == cy.cor[ic] == 1.0)
            columns.update(
                {
                    p + "bn": fbm,
                    p + "bkx": cx.cor * fbm,
                    p + "bky": cy.cor * fbm,
                    p + "lx": lx,
                    p + "ly": ly,
                    p + "bsn": both * self.bs,
                    p + "bskx": cx.cor * both * self.bs,
                    p + "bsky": cy.cor * both * self.bs,
                    p + "hn": both * self.beh,
                    p + "hkx": cx.cor * both * self.beh,
                    p + "hky": cy.cor * both * self.beh,
                    p + "gn": both * self.lk,
                    p + "gkx": cx.cor * both * self.lk,
                    p + "gky": cy.cor * both * self.lk,
                    p + "cn": cboth.astype(float),
                    p + "csx": np.where(cboth, lsx, 0.0),
                    p + "csy": np.where(cboth, lsy, 0.0),
                    p + "tn": tnx,
                    p + "tkx": tkx,
                    p + "tky": tky,
                    p + "kn": both * kq,
                    p + "kkx": cx.cor * both * kq,
                    p + "kky": cy.cor * both * kq,
                }
            )
            by_stratum += [p + "bn", p + "bkx", p + "bky"]
            if self.rp.any():
                rxx = self.extra[xn]["repeated"].exploitation
                rxy = self.extra[yn]["repeated"].exploitation
                rboth = cx.ok & cy.ok & np.isfinite(rxx) & np.isfinite(rxy)
                columns[p + "rxn"] = rboth.astype(float)
                columns[p + "rxx"] = np.where(rboth, rxx, 0.0)
                columns[p + "rxy"] = np.where(rboth, rxy, 0.0)
        self.sums: BootstrapSums = self.boot.sums(columns, by_stratum=by_stratum)

    # -- small builders -------------------------------------------------------------------

    def strata_of(self, s: int) -> tuple[Any, ...]:
        """The label of stratum number ``s``."""
        lab = self.boot.strata[s]
        assert isinstance(lab, tuple)
        return lab

    def _strata(self, pred: Any) -> list[int]:
        return [i for lab, i in self.stratum_index.items() if pred(lab)]

    def _clusters(self, strata: Iterable[int]) -> int:
        return sum(self.boot.clusters_in(s) for s in strata)

    def _sum(self, name: str, strata: Sequence[int] | None = None) -> tuple[float, FloatArray]:
        return self.sums.total(name) if strata is None else self.sums.over(name, strata)

    def _prop(
        self,
        k: tuple[float, FloatArray],
        n: tuple[float, FloatArray],
        n_clusters: int,
        *,
        complement: bool = False,
    ) -> tuple[dict[str, Any], FloatArray]:
        k0, kr = k
        n0, nr = n
        if complement:
            k0, kr = n0 - k0, nr - kr
        if n0 <= 0:
            return (
                {"value": None, "k": 0, "n": 0, "ci": None, "interval": None,
                 "reason": "no scored items"},
                np.full(self.B, np.nan),
            )
        reps = _ratio(kr, nr)
        w = wilson_interval(round(k0), round(n0))
        lo, hi, _ = percentile_interval(reps, LEVEL)
        boot_ci = (lo, hi)
        use_boot = n_clusters > 1 and _width(boot_ci) > _width(w)
        extra = {}
        if 1 < n_clusters < 10 and round(n0) > n_clusters:
            extra["note"] = (
                f"only {n_clusters} clusters: the cluster bootstrap can be too narrow, read "
                "the wider interval with care"
            )
        return (
            extra | {
                "value": k0 / n0,
                "k": round(k0),
                "n": round(n0),
                "ci": list(boot_ci if use_boot else w),
                "interval": "cluster-bootstrap-95" if use_boot else "wilson-95",
                "wilson": list(w),
                "cluster_bootstrap": list(boot_ci),
                "n_clusters": n_clusters,
            },
            reps,
        )

    def _diff(
        self,
        names: tuple[str, str],
        vx: float | None,
        vy: float | None,
        d0: float,
        dreps: FloatArray,
        n: int,
    ) -> dict[str, Any]:
        lo, hi, _ = percentile_interval(dreps, LEVEL)
        return {
            names[0]: vx,
            names[1]: vy,
            "difference": d0,
            "ci": [lo, hi],
            "n": n,
            "interval": "paired-cluster-bootstrap-95",
            "p": bootstrap_pvalue(dreps, estimate=d0),
            "p_holm": None,
        }

    def _fb_depth_strata(self) -> dict[float, list[int]]:
        it = self.data.items
        out: dict[float, list[int]] = {}
        depth_n = {}
        for i in np.flatnonzero(self.nt & self.qbel & self.fb):
            depth_n[it.depth[i]] = it.depth_n[i]
        for label, dn in depth_n.items():
            if not math.isfinite(dn):
                continue
            s = self.stratum_index.get(("nesttom", "false", label))
            if s is not None:
                out.setdefault(float(dn), []).append(s)
        return dict(sorted(out.items()))

    def _chance(self, mask: BoolArray) -> float:
        nc = self.data.items.n_choices[mask]
        nc = nc[np.isfinite(nc) & (nc > 0)]
        return float(np.mean(1.0 / nc)) if nc.size else math.nan

    def _d50(
        self, kname: str, nname: str, mask: BoolArray
    ) -> tuple[D50Result, FloatArray, list[float]]:
        groups = self._fb_depth_strata()
        depths = list(groups)
        k0 = np.array([self._sum(kname, g)[0] for g in groups.values()])
        n0 = np.array([self._sum(nname, g)[0] for g in groups.values()])
        if depths:
            K = np.column_stack([self._sum(kname, g)[1] for g in groups.values()])
            N = np.column_stack([self._sum(nname, g)[1] for g in groups.values()])
        else:
            K = N = np.zeros((self.B, 0))
        chance = self._chance(mask)
        n_cl = self._clusters(s for g in groups.values() for s in g)
        res = d50_estimate(
            depths, k0, n0, chance=chance, replicates=(K, N), level=LEVEL,
            interval=f"bootstrap-percentile-95 ({n_cl} clusters, B={self.B})",
        )
        if res.replicates is not None:
            reps = res.replicates
        elif depths and math.isfinite(chance):
            reps = d50_replicates(depths, K, N, chance=chance)
        else:
            reps = np.full(self.B, np.nan)
        return res, reps, depths

    # -- the profile ----------------------------------------------------------------------

    def _build(self) -> dict[str, Any]:
        run = self.data.run
        notices = []
        run_block = disclosed_run(
            {k: run.get(k) for k in ("id", "suite", "seed", "held_out", "status", "created_at",
                                     "finished_at")},
            reveal_held_out=self.reveal_held_out,
        )
        if run.get("held_out"):
            notices.append(
                "HELD-OUT: this run drew its items from the held-out seed range (never used in "
                "development); its scores are the ones that detect tuning to the suite."
                + (" Its seed is withheld: only an operator may see it."
                   if run_block["seed_withheld"] else "")
            )
        else:
            notices.append("Development seeds: this run did not use the held-out seed range.")
        agents_out: dict[str, Any] = {}
        for ai, a in enumerate(self.agents):
            agents_out[a.name] = self._agent(ai, a)
        self._contrasts(agents_out)
        ps = [c["p"] if c["p"] is not None else math.nan for c in self.contrasts]
        for c, ph in zip(self.contrasts, holm(ps), strict=True):
            c["p_holm"] = ph
            c["target"]["p_holm"] = ph
        for a in self.agents:
            ag = agents_out[a.name]
            if ag["valid"] is False:
                notices.append(ag["notices"][0])
        profile = {
            "schema": PROFILE_SCHEMA,
            "run": run_block | {"n_items": self.N, "n_trials": len(self.data.trials)},
            "held_out": bool(run.get("held_out")),
            "notices": notices,
            "intervals": {
                "level": LEVEL,
                "bootstrap_replicates": self.B,
                "bootstrap_seed": self.seed,
                "n_clusters": self.boot.n_clusters,
                "n_strata": len(self.boot.strata),
                "kinds": INTERVALS,
                "proportions": (
                    "each proportion shows the wider of wilson-95 and cluster-bootstrap-95 "
                    "and names it in 'interval'"
                ),
            },
            "agents": agents_out,
            "proxy": {
                "scope": "every call of the run's agents through the query proxy so far",
                "agents": self.data.proxy,
            },
            "contrasts": [
                {k: v for k, v in c.items() if k != "target"} for c in self.contrasts
            ],
            "multiple_comparisons": {
                "method": "holm",
                "family": "every agent − control and full − ablated contrast in this report",
                "m": int(sum(1 for p in ps if math.isfinite(p))),
            },
        }
        return _clean(profile)  # type: ignore[no-any-return]

    def _agent(self, ai: int, a: RunAgent) -> dict[str, Any]:
        c = self.cols[a.name]
        p = f"a{ai}."
        reps: dict[str, tuple[float, FloatArray, int]] = {}
        self.metric_replicates[a.name] = reps
        out: dict[str, Any] = {
            "role": a.role,
            "base_agent": a.base_agent,
            "spec": {k: a.spec[k] for k in SAFE_SPEC_KEYS if k in a.spec},
            "notices": [],
        }
        # accuracy by depth
        acc: dict[str, dict[str, Any]] = {}
        joint: dict[str, dict[str, Any]] = {}
        for belief in ("false", "true"):
            acc[belief] = {}
            joint[belief] = {}
            for label in self.nt_depths:
                s = self.stratum_index.get(("nesttom", belief, label))
                if s is None:
                    continue
                ncl = self.boot.clusters_in(s)
                cell, r = self._prop(self._sum(p + "bk", [s]), self._sum(p + "bn", [s]), ncl)
                if cell["n"] == 0:
                    continue
                dn = self._depth_n(label)
                acc[belief][label] = {"depth_n": dn} | cell
                if belief == "false":
                    reps[f"accuracy_by_depth.false.{label}"] = (cell["value"], r, cell["n"])
                jc, _ = self._prop(self._sum(p + "jk", [s]), self._sum(p + "jn", [s]), ncl)
                if jc["n"]:
                    joint[belief][label] = {"depth_n": dn} | jc
        fb_strata = self._strata(lambda lab: lab[:2] == ("nesttom", "false"))
        tb_strata = self._strata(lambda lab: lab[:2] == ("nesttom", "true"))
        fb_all, r_fb = self._prop(
            self._sum(p + "bk", fb_strata), self._sum(p + "bn", fb_strata),
            self._clusters(fb_strata),
        )
        tb_all, r_tb = self._prop(
            self._sum(p + "bk", tb_strata), self._sum(p + "bn", tb_strata),
            self._clusters(tb_strata),
        )
        if fb_all["n"]:
            reps["false_belief_accuracy"] = (fb_all["value"], r_fb, fb_all["n"])
        if tb_all["n"]:
            reps["true_belief_control_accuracy"] = (tb_all["value"], r_tb, tb_all["n"])
        # validity (anti-inflation)
        if tb_all["n"] == 0:
            valid: bool | None = None
            message = (
                f"UNCHECKED: {a.name} answered no true-belief control items, so the "
                "anti-inflation rule (true-belief accuracy >= 90%) cannot be checked; read its "
                "false-belief scores with that in mind."
            ) if fb_all["n"] else None
        elif tb_all["value"] < TRUE_BELIEF_THRESHOLD:
            valid = False
            message = (
                f"INVALID: {a.name}'s true-belief control accuracy is "
                f"{tb_all['value']:.1%} (n={tb_all['n']}), below the required 90%, so its "
                "false-belief scores (accuracy, D50, leakage resistance) are invalid: a "
                "reasoner that fails the controls may score on false-belief items by a "
                "shortcut (such as always answering against reality) or by chance."
            )
        else:
            valid = True
            message = None
        if message:
            out["notices"].append(message)
        out["valid"] = valid
        out["validity"] = {
            "valid": valid,
            "rule": "true-belief control accuracy >= 90% (seed 002 §18.2 rule 6)",
            "threshold": TRUE_BELIEF_THRESHOLD,
            "true_belief_accuracy": tb_all["value"],
            "n": tb_all["n"],
            "message": message,
            "applies_to": "false-belief scores: accuracy_by_depth.false, d50, "
            "leakage_resistance, degradation_slope",
        }
        out["true_belief_control_accuracy"] = tb_all
        out["false_belief_accuracy"] = fb_all
        # D50
        if fb_all["n"]:
            d50, d50_reps, _ = self._d50(p + "bk", p + "bn", c.ok & self.qbel & self.fb)
            out["d50"] = d50.to_dict() | {
                "ceiling_note": "ceiling fixed at 1.0 (an exact reasoner); chance is the mean of "
                "1/number of choices over the agent's scored false-belief items; the agent's "
                "own true-belief accuracy is reported as true_belief_control_accuracy",
            }
            if d50.status == "estimated" and d50.value is not None:
                reps["d50"] = (d50.value, d50_reps, d50.n)
        else:
            out["d50"] = {
                "status": "not_estimable",
                "value": None,
                "reason": "no scored false-belief NestToM items",
                "display": "not estimable: no scored false-belief NestToM items",
                "n": 0,
            }
        out["degradation_slope"] = self._slope(c)
        # leakage
        if fb_all["n"]:
            lr, r_lr = self._prop(
                self._sum(p + "lk"), self._sum(p + "bn", fb_strata),
                self._clusters(fb_strata), complement=True,
            )
            lr["errors_counted"] = int(self._sum(p + "lk")[0])
            lr["definition"] = (
                "1 − (reality_leak + projection primary errors) ÷ scored false-belief items"
            )
            out["leakage_resistance"] = lr
            reps["leakage_resistance"] = (lr["value"], r_lr, lr["n"])
        else:
            out["leakage_resistance"] = {
                "value": None, "n": 0, "reason": "no scored false-belief NestToM items"
            }
        out["accuracy_by_depth"] = acc
        out["joint_accuracy_by_depth"] = joint | {
            "definition": "an item counts only if every shallower belief question on the same "
            "story was answered correctly (Hi-ToM style); items whose shallower questions had "
            "an API error are left out"
        }
        out["error_types_by_depth"] = self._error_types(c)
        out["applied_gap"] = self._applied(p, c, reps)
        out["games"] = self._games(p, a.name, c, reps)
        out["repeated"] = (
            repeated_section(self.data.items, self.rp_design, c.has, c.ok,
                             self.extra[a.name]["repeated"])
            if self.rp.any()
            else {"available": False, "reason": "no repeated-game episodes in this run"}
        )
        out["calibration"] = self._calibration(p, c, reps)
        out["cost"] = self._cost(c)
        out["api_errors"] = self._api_errors(c)
        if self.hi.any():
            out["hitom"] = self._hitom(p)
        out["agent_prediction_skill"] = {
            "available": False,
            "reason": "agent-prediction skill S comes from the prediction ledger "
            "(commit-reveal), which this run's trials do not include",
        }
        out["minus_control"] = None
        out["ablation_credit"] = {}
        return out

    def _depth_n(self, label: str) -> float | None:
        it = self.data.items
        m = (it.depth == label) & (self.nt | self.hi)
        vals = it.depth_n[m]
        vals = vals[np.isfinite(vals)]
        return float(vals[0]) if vals.size else None

    def _slope(self, c: _AgentCols) -> dict[str, Any]:
        it = self.data.items
        m = c.ok & self.qbel & self.fb & np.isfinite(it.depth_n)
        if not m.any():
            return {"status": "not_estimable", "value": None, "n": 0,
                    "reason": "no scored false-belief NestToM items"}
        groups = [self.cluster_labels[i] for i in np.flatnonzero(m)]
        res = degradation_slope(
            it.depth_n[m], c.cor[m], it.length[m], groups, level=LEVEL
        ).to_dict()
        res["interval"] = (
            "wald-cluster-robust-95" if res["n_clusters"] >= 2 else "wald-95 (model-based)"
        )
        res["meaning"] = "change in log-odds of a correct false-belief answer per depth level"
        return res

    def _error_types(self, c: _AgentCols) -> dict[str, Any]:
        it = self.data.items
        out: dict[str, Any] = {}
        for belief in ("false", "true"):
            out[belief] = {}
            for label in self.nt_depths:
                m = c.ok & self.qbel & self.nt & (it.belief == belief) & (it.depth == label)
                n = int(m.sum())
                if not n:
                    continue
                wrong = m & (c.cor != 1.0)
                codes = Counter(
                    ("uncoded" if x is None else str(x)) for x in c.prim[wrong].tolist()
                )
                nw = int(wrong.sum())
                out[belief][label] = {
                    "n": n,
                    "n_wrong": nw,
                    "counts": dict(sorted(codes.items())),
                    "share_of_wrong": {k: v / nw for k, v in sorted(codes.items())},
                    "interval": "none",
                }
        return out

    def _applied(
        self, p: str, c: _AgentCols, reps: dict[str, tuple[float, FloatArray, int]]
    ) -> dict[str, Any]:
        it = self.data.items
        if not self.beh.any():
            return {"available": False,
                    "reason": "no behaviour-prediction items in this run"}
        bk0, bkr = self._sum(p + "bsk")
        bn0, bnr = self._sum(p + "bsn")
        hk0, hkr = self._sum(p + "hk")
        hn0, hnr = self._sum(p + "hn")
        if bn0 == 0 or hn0 == 0:
            return {"available": False,
                    "reason": "no scored belief and behaviour answers on the same stories"}
        gap = bk0 / bn0 - hk0 / hn0
        greps = _ratio(bkr, bnr) - _ratio(hkr, hnr)
        lo, hi, _ = percentile_interval(greps, LEVEL)
        reps["applied_gap"] = (gap, greps, int(hn0))
        by_depth = {}
        for label in self.nt_depths:
            dm = it.depth == label
            bm = c.ok & self.bs & dm
            hm = c.ok & self.beh & dm
            jm = c.ok & self.jud & dm
            if not hm.any():
                continue
            ba = float(c.cor[bm].mean()) if bm.any() else None
            ha = float(c.cor[hm].mean())
            by_depth[label] = {
                "belief_accuracy": ba,
                "belief_n": int(bm.sum()),
                "behaviour_accuracy": ha,
                "behaviour_n": int(hm.sum()),
                "behaviour_wilson": list(wilson_interval(c.cor[hm].sum(), hm.sum())),
                "judgment_accuracy": float(c.cor[jm].mean()) if jm.any() else None,
                "judgment_n": int(jm.sum()),
                "gap": None if ba is None else ba - ha,
                "interval": "wilson-95 (behaviour accuracy only)",
            }
        jm = c.ok & self.jud
        return {
            "available": True,
            "value": gap,
            "ci": [lo, hi],
            "interval": "cluster-bootstrap-95",
            "belief_accuracy": bk0 / bn0,
            "belief_n": int(bn0),
            "behaviour_accuracy": hk0 / hn0,
            "behaviour_n": int(hn0),
            "n": int(hn0),
            "judgment_accuracy": float(c.cor[jm].mean()) if jm.any() else None,
            "judgment_n": int(jm.sum()),
            "definition": "belief-question accuracy − behaviour-prediction accuracy on the same "
            "stories, beliefs and depths (positive: knows the belief but does not use it)",
            "by_depth": by_depth,
        }

    def _games(
        self,
        p: str,
        name: str,
        c: _AgentCols,
        reps: dict[str, tuple[float, FloatArray, int]],
    ) -> dict[str, Any]:
        it = self.data.items
        ex = self.extra[name]
        if not (self.gm & c.has).any():
            return {"available": False, "reason": "no game items answered in this run"}
        out: dict[str, Any] = {"available": True}
        rows = []
        g_strata = self._strata(lambda lab: lab[0] == "games")
        labels: list[tuple[Any, ...]] = [self.strata_of(s) for s in g_strata]
        for lab in sorted(labels, key=str):
            s = self.stratum_index[lab]
            ncl = self.boot.clusters_in(s)
            accd, _ = self._prop(self._sum(p + "gk", [s]), self._sum(p + "gn", [s]), ncl)
            w1, _ = self._prop(self._sum(p + "wk", [s]), self._sum(p + "wn", [s]), ncl)
            if accd["n"] == 0:
                continue
            rows.append(
                {"game": lab[1], "condition": lab[2], "accuracy": accd,
                 "within_one": w1 if w1["n"] else {"value": None, "n": 0,
                                                    "reason": "no within_one in scores"}}
            )
        out["by_game_condition"] = rows
        if g_strata:
            ga, gr = self._prop(
                self._sum(p + "gk", g_strata), self._sum(p + "gn", g_strata),
                self._clusters(g_strata),
            )
            out["accuracy"] = ga
            if ga["n"]:
                reps["games_accuracy"] = (ga["value"], gr, ga["n"])
        # K_B / K_L curves
        curves = []
        m_lk = c.ok & self.lk
        keys = sorted(
            {
                (it.condition[i], float(it.target_depth[i]))
                for i in np.flatnonzero(m_lk & np.isfinite(it.target_depth))
            },
            key=lambda t: (t[0], t[1]),
        )
        for cond, td in keys:
            m = m_lk & (it.condition == cond) & (it.target_depth == td)
            entry: dict[str, Any] = {"condition": cond, "target_depth": td, "n": int(m.sum())}
            for key in ("K_B", "K_L"):
                v = ex[key][m]
                mean, lo, hi, nn = mean_interval(v, Z95)
                entry[key] = {
                    "mean": mean if nn else None,
                    "ci": [lo, hi] if nn >= 2 else None,
                    "n": nn,
                    "unresolved": int(m.sum()) - nn,
                    "interval": "normal-95",
                }
            entry["accuracy"] = float(c.cor[m].mean())
            curves.append(entry)
        out["k_curves"] = curves
        out["excluded_trials"] = int((c.has & self.lk_excluded).sum())
        out["excluded_note"] = (
            "level-k trials whose target action also matches another depth (K_B ambiguous) are "
            "left out of every games figure, as in the games summary"
        )
        if not curves:
            out["k_curves_reason"] = "no level-k trials with a target depth"
        brc = ex["br_consistent"][m_lk]
        brc = brc[np.isfinite(brc)]
        out["br_consistency"] = (
            {"value": float(brc.mean()), "n": int(brc.size),
             "ci": list(wilson_interval(brc.sum(), brc.size)), "interval": "wilson-95"}
            if brc.size else {"value": None, "n": 0, "reason": "no br_consistent in scores"}
        )
        # A/B/C
        abc: dict[str, Any] = {}
        if (self.abc & c.has).any():
            abc["accuracy"] = {}
            for qq in "ABCK":
                d, _ = self._prop(self._sum(p + f"q{qq}k"), self._sum(p + f"q{qq}n"),
                                  self._clusters(self._strata(lambda lab: lab[0] == "games-abc")))
                if qq != "K" or d["n"]:
                    abc["accuracy"][qq] = d
            if "K" in abc["accuracy"]:
                abc["opponent_type_inference"] = abc["accuracy"]["K"] | {
                    "definition": "accuracy of the inferred level k of a scripted opponent (K items)"
                }
            if self.abc_triples:
                d, r = self._prop(
                    self._sum(p + "tk"), self._sum(p + "tn"),
                    self._clusters(self._strata(lambda lab: lab[0] == "games-abc")),
                )
                d["definition"] = (
                    "share of scenarios whose A, B and C answers are all correct where the "
                    "three correct answers differ"
                )
                if self.abc_unknown_truths:
                    d["note"] = (
                        f"{self.abc_unknown_truths} scenarios lack stored answers; they are "
                        "assumed to differ"
                    )
                d["scenarios_skipped_equal_answers"] = self.abc_equal_truths
                abc["dissociation"] = d
                if d["n"]:
                    reps["abc_dissociation"] = (d["value"], r, d["n"])
            else:
                abc["dissociation"] = {
                    "value": None, "n": 0,
                    "reason": "no complete A/B/C scenario (the items carry no group key "
                    "tying A, B and C together, or one of them is missing)",
                }
            ls = ex["log_score"]
            mean, lo, hi, nn = mean_interval(ls, Z95)
            _, csr = self._sum(p + "cs")
            _, cnr = self._sum(p + "cn")
            if nn:
                reps["log_score_c"] = (mean, _ratio(csr, cnr), nn)
                blo, bhi, _ = percentile_interval(_ratio(csr, cnr), LEVEL)
                abc["log_score_c"] = {
                    "value": mean, "ci": [blo, bhi], "n": nn,
                    "interval": "cluster-bootstrap-95",
                    "normal_ci": [lo, hi],
                }
            else:
                abc["log_score_c"] = {"value": None, "n": 0,
                                      "reason": "no log_score in the C items' scores"}
            bm, blo2, bhi2, bn = mean_interval(ex["brier"], Z95)
            abc["brier_c"] = (
                {"value": bm, "ci": [blo2, bhi2], "n": bn, "interval": "normal-95"}
                if bn else {"value": None, "n": 0, "reason": "no brier in the C items' scores"}
            )
        else:
            abc = {"available": False, "reason": "no A/B/C items in this run"}
        out["abc"] = abc
        return out

    def _calibration(
        self, p: str, c: _AgentCols, reps: dict[str, tuple[float, FloatArray, int]]
    ) -> dict[str, Any]:
        fin = np.isfinite(c.conf)
        if not fin.any():
            return {"available": False, "reason": "no stated confidences"}
        cal = ece(c.conf[fin], c.cor[fin], CALIBRATION_BINS)
        _, nr = self._sum(p + "fn")
        total = np.zeros(self.B)
        for j in range(CALIBRATION_BINS):
            total += np.abs(self._sum(p + f"e{j}k")[1] - self._sum(p + f"e{j}c")[1])
        ece_reps = _ratio(total, nr)
        lo, hi, _ = percentile_interval(ece_reps, LEVEL)
        reps["ece"] = (cal.ece, ece_reps, cal.n)
        bins = []
        for b in cal.bins:
            k = round(b["accuracy"] * b["n"])
            bins.append(b | {"ci": list(wilson_interval(k, b["n"])), "interval": "wilson-95"})
        # slope of confidence on depth
        sn0, snr = self._sum(p + "sn")
        slope: dict[str, Any]
        if sn0 >= 3:
            def slope_of(n: Any, x: Any, y: Any, xy: Any, xx: Any) -> Any:
                with np.errstate(invalid="ignore", divide="ignore"):
                    den = xx - x * x / n
                    return np.where(den > 1e-12, (xy - x * y / n) / np.where(den > 1e-12, den, 1),
                                    np.nan)

            parts = [self._sum(p + s) for s in ("sx", "sy", "sxy", "sxx")]
            s0 = float(slope_of(sn0, *[q[0] for q in parts]))
            sr = slope_of(snr, *[q[1] for q in parts])
            slo, shi, _ = percentile_interval(sr, LEVEL)
            slope = {
                "value": s0 if math.isfinite(s0) else None,
                "ci": [slo, shi],
                "n": int(sn0),
                "interval": "cluster-bootstrap-95",
                "meaning": "change in stated confidence (0–1) per depth level, NestToM belief "
                "items (OLS)",
            }
            if not math.isfinite(s0):
                slope["reason"] = "all confidences at one depth"
        else:
            slope = {"value": None, "n": int(sn0),
                     "reason": "fewer than 3 NestToM belief items with a stated confidence"}
        yv = c.cor[fin]
        brier = float(np.mean((c.conf[fin] - yv) ** 2))
        out = {
            "available": True,
            "ece": {"value": cal.ece, "ci": [lo, hi], "n": cal.n, "bins": CALIBRATION_BINS,
                    "interval": "cluster-bootstrap-95"},
            "reliability": bins,
            "confidence_depth_slope": slope,
            "brier": {"value": brier, "n": cal.n, "interval": "none"},
            "mean_confidence": float(c.conf[fin].mean()),
            "accuracy_of_rated": float(yv.mean()),
        }
        if c.conf_note:
            out["note"] = c.conf_note
        return out

    def _cost(self, c: _AgentCols) -> dict[str, Any]:
        it = self.data.items

        def row(m: BoolArray) -> dict[str, Any]:
            k = int(c.cor[m].sum())
            tok = float(c.tokens[m].sum())
            lat = float(c.latency[m].sum())
            return {
                "n_trials": int(m.sum()),
                "n_correct": k,
                "tokens": tok,
                "latency_s": lat,
                "tokens_per_correct": tok / k if k else None,
                "latency_s_per_correct": lat / k if k else None,
                "interval": "none",
            }

        by_depth = {}
        for label in self.nt_depths:
            m = c.has & self.nt & (it.depth == label)
            if m.any():
                by_depth[label] = row(m)
        by_family = {}
        for fam in sorted(set(it.family[c.has].tolist())):
            by_family[fam] = row(c.has & (it.family == fam))
        return {
            "by_depth": by_depth,
            "by_family": by_family,
            "total": row(c.has),
            "definition": "tokens (in + out) and latency of every trial, API errors included, "
            "divided by the number of correct answers",
        }

    def _api_errors(self, c: _AgentCols) -> dict[str, Any]:
        it = self.data.items
        bad = c.has & ~c.ok
        statuses = Counter(str(s) for s in c.status[bad].tolist())
        by_family = Counter(str(f) for f in it.family[bad].tolist())
        by_depth = Counter(str(d) for d in it.depth[bad & self.nt].tolist())
        return {
            "count": int(bad.sum()),
            "trials": int(c.has.sum()),
            "by_status": dict(statuses),
            "by_family": dict(by_family),
            "by_depth": dict(sorted(by_depth.items(), key=lambda kv: depth_sort_key(kv[0]))),
            "excluded_from_accuracy": True,
            "ok_without_score": int(c.unscored.sum()),
            "ok_without_score_note": "ok trials without a score are counted as wrong",
        }

    def _hitom(self, p: str) -> dict[str, Any]:
        acc = {}
        joint = {}
        for label in self.hi_depths:
            s = self.stratum_index.get(("hitom", label))
            if s is None:
                continue
            ncl = self.boot.clusters_in(s)
            d, _ = self._prop(self._sum(p + "bk", [s]), self._sum(p + "bn", [s]), ncl)
            if d["n"]:
                acc[label] = d
            j, _ = self._prop(self._sum(p + "jk", [s]), self._sum(p + "jn", [s]), ncl)
            if j["n"]:
                joint[label] = j
        return {"accuracy_by_depth": acc, "joint_accuracy_by_depth": joint}

    # -- contrasts ----------------------------------------------------------------------

    def _contrasts(self, agents_out: dict[str, Any]) -> None:
        for a in self.agents:
            ag = agents_out[a.name]
            if a.role in ("control", "reference", "ablation"):
                ag["minus_control"] = {
                    "available": False,
                    "reason": f"{a.name} is a {a.role} agent: base-model subtraction applies "
                    "to agents under test",
                }
            else:
                ag["minus_control"] = {
                    "available": False,
                    "reason": f"no control agent for {a.name} in this run",
                }
        seen_control: set[str] = set()
        for pi, (x, y, kind, module) in enumerate(self.pairs):
            names = ("agent", "control") if kind == "minus_control" else ("full", "ablated")
            metrics = self._pair_metrics(pi, x, y, names)
            block = {
                "available": True,
                "direction": f"{x} − {y}",
                "interval": "paired-cluster-bootstrap-95",
                "metrics": metrics,
            }
            if agents_out[x]["valid"] is False or agents_out[y]["valid"] is False:
                block["note"] = (
                    "at least one side failed the true-belief control rule; false-belief "
                    "contrasts are not valid evidence"
                )
            if kind == "minus_control":
                if x in seen_control:
                    agents_out[x].setdefault("other_controls", {})[y] = block | {"control": y}
                    continue
                seen_control.add(x)
                agents_out[x]["minus_control"] = {"control": y} | block
            else:
                assert module is not None
                agents_out[x]["ablation_credit"][module] = {"ablation_agent": y} | block
            for metric, d in self._flat_metrics(metrics):
                if d.get("p") is not None and math.isfinite(d["p"]):
                    self.contrasts.append(
                        {
                            "kind": kind,
                            "agent": x,
                            "other": y,
                            "module": module,
                            "metric": metric,
                            "difference": d.get("difference"),
                            "ci": d.get("ci"),
                            "n": d.get("n"),
                            "p": d["p"],
                            "p_holm": None,
                            "target": d,
                        }
                    )

    @staticmethod
    def _flat_metrics(metrics: Mapping[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
        for k, v in metrics.items():
            if k == "accuracy_by_depth":
                for label, d in v.items():
                    yield f"accuracy_by_depth.false.{label}", d
            elif isinstance(v, dict) and "difference" in v:
                yield k, v

    def _pair_metrics(
        self, pi: int, x: str, y: str, names: tuple[str, str]
    ) -> dict[str, Any]:
        p = f"p{pi}."
        out: dict[str, Any] = {}

        def prop_diff(kx: str, ky: str, n: str, strata: Sequence[int] | None = None
                      ) -> dict[str, Any] | None:
            n0, nr = self._sum(p + n, strata)
            if n0 <= 0:
                return None
            kx0, kxr = self._sum(p + kx, strata)
            ky0, kyr = self._sum(p + ky, strata)
            return self._diff(
                names, kx0 / n0, ky0 / n0, (kx0 - ky0) / n0, _ratio(kxr - kyr, nr), int(n0)
            )

        fb_strata = self._strata(lambda lab: lab[:2] == ("nesttom", "false"))
        none = {"available": False}
        d = prop_diff("bkx", "bky", "bn", fb_strata)
        out["false_belief_accuracy"] = d or none | {"reason": "no shared false-belief items"}
        by_depth = {}
        for label in self.nt_depths:
            s = self.stratum_index.get(("nesttom", "false", label))
            if s is None:
                continue
            dd = prop_diff("bkx", "bky", "bn", [s])
            if dd:
                by_depth[label] = dd
        out["accuracy_by_depth"] = by_depth
        out["d50"] = self._pair_d50(p, x, y, names) if d else none | {
            "reason": "no shared false-belief items"}
        # leakage resistance: 1 − leak/n, so the difference is (ly − lx)/n
        n0, nr = self._sum(p + "bn", fb_strata)
        if n0 > 0:
            lx0, lxr = self._sum(p + "lx")
            ly0, lyr = self._sum(p + "ly")
            out["leakage_resistance"] = self._diff(
                names, 1 - lx0 / n0, 1 - ly0 / n0, (ly0 - lx0) / n0, _ratio(lyr - lxr, nr),
                int(n0),
            )
        else:
            out["leakage_resistance"] = none | {"reason": "no shared false-belief items"}
        bn0, bnr = self._sum(p + "bsn")
        hn0, hnr = self._sum(p + "hn")
        if bn0 > 0 and hn0 > 0:
            gx = self._sum(p + "bskx")[0] / bn0 - self._sum(p + "hkx")[0] / hn0
            gy = self._sum(p + "bsky")[0] / bn0 - self._sum(p + "hky")[0] / hn0
            rx = _ratio(self._sum(p + "bskx")[1], bnr) - _ratio(self._sum(p + "hkx")[1], hnr)
            ry = _ratio(self._sum(p + "bsky")[1], bnr) - _ratio(self._sum(p + "hky")[1], hnr)
            out["applied_gap"] = self._diff(names, gx, gy, gx - gy, rx - ry, int(hn0))
        else:
            out["applied_gap"] = none | {"reason": "no shared belief and behaviour items"}
        gd = prop_diff("gkx", "gky", "gn")
        out["games_accuracy"] = gd or none | {"reason": "no shared level-k game items"}
        cn0, cnr = self._sum(p + "cn")
        if cn0 > 0:
            cx0, cxr = self._sum(p + "csx")
            cy0, cyr = self._sum(p + "csy")
            out["log_score_c"] = self._diff(
                names, cx0 / cn0, cy0 / cn0, (cx0 - cy0) / cn0, _ratio(cxr - cyr, cnr), int(cn0)
            )
        else:
            out["log_score_c"] = none | {"reason": "no shared C items with a log score"}
        td = prop_diff("tkx", "tky", "tn")
        out["abc_dissociation"] = td or none | {"reason": "no shared complete A/B/C scenarios"}
        kd = prop_diff("kkx", "kky", "kn")
        out["opponent_type_inference"] = kd or none | {
            "reason": "no shared opponent-type (K) items"}
        out["agent_prediction_skill"] = none | {
            "reason": "agent-prediction skill comes from the prediction ledger, not run trials"
        }
        if self.rp.any():
            rn0, rnr = self._sum(p + "rxn")
            if rn0 > 0:
                rx0, rxr = self._sum(p + "rxx")
                ry0, ryr = self._sum(p + "rxy")
                out["repeated_exploitation"] = self._diff(
                    names, rx0 / rn0, ry0 / rn0, (rx0 - ry0) / rn0, _ratio(rxr - ryr, rnr),
                    int(rn0),
                ) | {"definition": "mean exploitation over the repeated-game episodes both "
                     "answered where it is defined (same items, same opponent draws)"}
            else:
                out["repeated_exploitation"] = none | {
                    "reason": "no shared repeated-game episodes with defined exploitation"}
        return out

    def _pair_d50(self, p: str, x: str, y: str, names: tuple[str, str]) -> dict[str, Any]:
        cx, cy = self.cols[x], self.cols[y]
        mask = cx.ok & cy.ok & self.qbel & self.fb
        rx, repx, depths = self._d50(p + "bkx", p + "bn", mask)
        ry, repy, _ = self._d50(p + "bky", p + "bn", mask)
        with np.errstate(invalid="ignore"):
            dreps = repx - repy
        base = {
            names[0]: rx.display(),
            names[1]: ry.display(),
            "n": rx.n,
            "interval": "paired-cluster-bootstrap-95",
            "note": "both D50s refitted on the false-belief items both agents answered",
        }
        if rx.status == "estimated" and ry.status == "estimated":
            assert rx.value is not None and ry.value is not None
            lo, hi, _ = percentile_interval(dreps, LEVEL)
            span = depths[-1] - depths[0]
            ci = [lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None]
            return base | {
                names[0]: rx.value,
                names[1]: ry.value,
                "difference": rx.value - ry.value,
                "ci": ci,
                "ci_note": None if all(v is not None and abs(v) <= span for v in ci)
                else "an interval end involves a D50 outside the tested depths",
                "p": bootstrap_pvalue(dreps, estimate=rx.value - ry.value),
                "p_holm": None,
            }
        if rx.status in ("beyond",) and ry.status == "estimated" and rx.lower_bound is not None:
            assert ry.value is not None
            return base | {"status": "bound", "difference": None,
                           "lower_bound": rx.lower_bound - ry.value,
                           "display": f"> {rx.lower_bound - ry.value:.2f}",
                           "p": bootstrap_pvalue(dreps), "p_holm": None}
        if ry.status in ("beyond",) and rx.status == "estimated" and ry.lower_bound is not None:
            assert rx.value is not None
            return base | {"status": "bound", "difference": None,
                           "upper_bound": rx.value - ry.lower_bound,
                           "display": f"< {rx.value - ry.lower_bound:.2f}",
                           "p": bootstrap_pvalue(dreps), "p_holm": None}
        return base | {
            "status": "not_estimable",
            "difference": None,
            "reason": f"D50 is {rx.display()} for {x} and {ry.display()} for {y}",
        }


def analyse(
    data: RunData, *, seed: int = 0, n_boot: int = 2000, reveal_held_out: bool = False
) -> Analysis:
    """Run every computation for one run; ``.profile`` is the JSON-ready profile (a held-out
    run's seed withheld unless ``reveal_held_out``)."""
    return Analysis(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out)


# -- reference agents: the benchmark's own validity check ------------------------------------


def diagnose_references(profile: Mapping[str, Any]) -> list[str]:
    """What the profile gets wrong about the scripted reference agents (empty when right).

    - ``oracle``: D50 beyond the deepest level tested, and valid;
    - ``depth-capped:N``: D50 between N and N+1 (estimated inside, or bracketed inside);
    - ``not-reality``: marked invalid by the true-belief control rule;
    - ``reality-leak``: leakage resistance below 0.5.

    A reference is recognised by its spec's ``policy`` or, failing that, its name. Intended for
    the quick-suite test: ``assert diagnose_references(build_profile(store, run_id)) == []``.
    """
    problems: list[str] = []
    for name, ag in profile.get("agents", {}).items():
        policy = str((ag.get("spec") or {}).get("policy") or name)
        d50 = ag.get("d50") or {}
        status = d50.get("status")
        if policy == "oracle":
            deepest = max(d50.get("depths_tested") or [math.nan])
            if status != "beyond" or d50.get("lower_bound") != deepest:
                problems.append(
                    f"{name} (oracle): D50 should be beyond the deepest level tested, "
                    f"got {d50.get('display')}"
                )
            if ag.get("valid") is not True:
                problems.append(f"{name} (oracle): should pass the true-belief control rule")
        m = re.match(r"depth-capped:?(\d+)", policy)
        if m:
            cap = int(m.group(1))
            ok = False
            if status == "estimated" and d50.get("value") is not None:
                ok = cap <= d50["value"] <= cap + 1
            elif status == "bracketed":
                ok = d50.get("lower_bound", -1) >= cap and d50.get("upper_bound", 1e9) <= cap + 1
            if not ok:
                problems.append(
                    f"{name} (depth-capped:{cap}): D50 should lie between {cap} and {cap + 1}, "
                    f"got {d50.get('display')}"
                )
        if policy == "not-reality" and ag.get("valid") is not False:
            problems.append(f"{name} (not-reality): should be marked invalid, got valid="
                            f"{ag.get('valid')}")
        if policy == "reality-leak":
            lr = (ag.get("leakage_resistance") or {}).get("value")
            if lr is None or lr >= 0.5:
                problems.append(
                    f"{name} (reality-leak): leakage resistance should be below 0.5, got {lr}"
                )
    return problems
