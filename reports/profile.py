"""The recursive-reasoning profile of every agent in a run.

:func:`build_profile` reads a run (:func:`reports._data.load_run`) and returns its
:class:`~reports.model.RunProfile` (``.to_json()`` is the JSON form); :func:`profile_from_data`
is the pure part.

What is counted where (the baseline tests: docs/architecture.md, "Where the specifications
come from"):

- **R0 is the reality check** (``reality_check``): its own row, outside false-belief accuracy,
  D50 and leakage resistance. It must be passed (>= 90%) as the true-belief controls must.
- **B1** (the depth curve: items whose ``block`` is B1, or inferred as B1) alone gives accuracy by
  depth, false-belief accuracy, D50 and leakage resistance, at R1 and deeper.
- **B2** (the length sweep) is reported as accuracy by story length, and the degradation slope is
  the logistic fit of false-belief correctness on depth *and* length over B1 and B2 together,
  which separates the two.
- **B4** (applied questions) gives the applied gap: belief − behaviour accuracy on the same
  stories, overall and per depth.
- The R2-self own-belief leak, and accuracy by mechanism and by surface form, are reported with
  their n and interval.
- Companion questions (``selection == "companion"``) only serve joint accuracy.
- **A/B/C against the run's own agents** (``play`` and ``C-llm`` items): no trial of theirs is
  right or wrong on its own, so they are in no accuracy, calibration or unscored count; each
  agent's C-llm predictions are scored against the other agents' plays of the same scenario
  (:mod:`reports._population`) in ``games.abc.c_llm``, apart from C against scripted bots.

Methods (the profile's ``intervals.kinds`` is the glossary; :mod:`reports._estimates` the rules):
proportions get Wilson intervals (at the design-effect-adjusted n where trials come in clusters);
paired contrasts of proportions (agent − control, full − ablated, an agent's A − B and B − C)
Newcombe's paired interval and the exact McNemar test; paired means a t interval and the
sign-flip permutation test; D50 a cluster-bootstrap percentile interval (strata of fewer than
two clusters merged with their siblings) and, for a contrast, the paired bootstrap interval and
a label-permutation test. A figure whose n cannot carry a claim keeps its value and n, has
``status: "not_estimable"`` and a ``reason``, and is left out of the Holm family (every testable
contrast in the report).

Every figure carries its n. API errors are excluded from accuracy and counted; an ``ok`` trial
without a score counts as wrong (an unparseable answer is wrong, never dropped).

Anti-inflation: an agent whose true-belief control accuracy (or R0 reality-check accuracy)
is below 90% is marked ``valid: false`` and its first notice says its false-belief scores are
invalid; a run on held-out seeds is marked as such, and its seed is withheld (``run.seed`` None,
``run.seed_withheld`` true) unless an operator asks with ``reveal_held_out=True``: the seed
regenerates the held-out items. The profile carries no item seeds or parameters.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from games import POPULATION_MIN_ANSWERS
from ledger.reader import Readable, RunAgent
from mindledger import family as family_registry
from mindledger.family import UnknownFamilyError
from reports._data import RunData, depth_sort_key, load_run
from reports._disclosure import disclosed_run
from reports._estimates import (
    MIN_N,
    NO_SPREAD,
    Contrast,
    MetricSample,
    Proportion,
    not_estimable_reason,
    paired_binary,
    paired_values,
    proportion,
)
from reports._judged import judge_counts, source_of, stated_signals
from reports._levels import LevelFit, SignalSums, level_fit
from reports._population import population_plays, score_predictions
from reports._repeated import episode_columns, repeated_design, repeated_section
from reports._stats import (
    BootstrapSums,
    ClusterBootstrap,
    D50Result,
    clustered_mean_interval,
    collapse_strata,
    d50_estimate,
    d50_replicates,
    degradation_slope,
    ece,
    holm,
    percentile_interval,
    permutation_pvalue,
    wilson_interval,
)
from reports.diagnosis import diagnose_references
from reports.matrix_runs import accompanying_matrix
from reports.model import PROFILE_SCHEMA, RunProfile

__all__ = [
    "PROFILE_SCHEMA",
    "TRUE_BELIEF_THRESHOLD",
    "Analysis",
    "analyse",
    "build_profile",
    "diagnose_references",
    "profile_from_data",
]

TRUE_BELIEF_THRESHOLD = 0.90
"""§18.2 rule 6: true-belief controls must be passed (>= 90%) for false-belief scores to count;
the same threshold applies to the R0 reality check (§3: "must be passed")."""
LEVEL = 0.95
LEAK_CODES = frozenset({"reality_leak", "projection"})
ROLE_ORDER = {"agent": 0, "control": 1, "ablation": 2, "reference": 3}
CALIBRATION_BINS = 10
SAFE_SPEC_KEYS = ("adapter", "policy", "model", "ablated", "modules", "depth")
D50_MIN_PER_DEPTH = 20
"""D50 gets a bootstrap interval (and a D50 contrast a test) only when every tested depth holds at
least this many scored false-belief items: below it, most resamples are perfectly separated and
the percentile interval no longer keeps its coverage."""
ECE_MIN_N = 30
"""The expected calibration error gets a bootstrap interval from this many rated answers on."""

INTERVALS = {
    "wilson-95": "Wilson score interval, 95%: one trial per cluster (independent trials).",
    "wilson-strat-95": (
        "Wilson score interval, 95%, at the stratification-adjusted sample size: the proportion "
        "pools cells whose sizes the design fixes (depth x belief x block), so its variance is "
        "the stratified one (each cell's proportion taken with one success and one failure "
        "added), used where it is below the binomial variance."
    ),
    "wilson-deff-95": (
        "Wilson score interval, 95%, at the design-effect-adjusted sample size (Kish's n / deff, "
        "deff from the ratio-estimator variance over clusters, at least 1) with the t quantile "
        "on clusters − 1 degrees of freedom: trials that share a cluster (a game cell) are not "
        "independent."
    ),
    "newcombe-paired-95": (
        "Newcombe's (1998) square-and-add interval for a difference of paired proportions (the "
        "same items answered by both agents, or the belief and behaviour question of one "
        "story), with Altman et al.'s corrected correlation; the test is the exact McNemar test "
        "on the discordant pairs."
    ),
    "paired-t-95": (
        "t interval, 95%, of the mean paired difference over independent units (items, or "
        "clusters of items); the test is the two-sided sign-flip permutation test over the same "
        "units (exact up to 16 non-zero differences, else Monte Carlo: p >= 1/(B+1))."
    ),
    "bootstrap-percentile-95": (
        "Percentile interval of the statistic over cluster-bootstrap replicates (whole clusters "
        "resampled within the design's strata; a stratum of fewer than two clusters is merged "
        "with its siblings); an end outside the tested depths is reported as a bound (None plus "
        "a note)."
    ),
    "paired-bootstrap-percentile-95": (
        "Percentile interval of the difference of two agents' D50s over shared cluster-bootstrap "
        "resamples of the items both answered; the test swaps the two agents' answers item by "
        "item at random (a permutation test, p >= 1/(B+1))."
    ),
    "cluster-bootstrap-95": (
        "Cluster bootstrap percentile interval, 95%: whole cells resampled with replacement "
        "within the design's strata (strata of fewer than two clusters merged with their "
        "siblings)."
    ),
    "normal-95": "Normal approximation, mean ± 1.96·sd/√n (means of non-binary quantities).",
    "t-95": "t interval, 95%, of a mean over independent units.",
    "wald-95": "Wald interval from the model-based standard errors of a logistic fit "
               "(statsmodels GLM).",
    "wald-cluster-robust-95": "Wald interval with cluster-robust standard errors (statsmodels).",
    "none": "Descriptive totals; no interval.",
}

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def build_profile(
    store: Readable,
    run_id: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
) -> RunProfile:
    """The profile of every agent in run ``run_id`` (see the module docstring).

    ``seed`` is the bootstrap's seed, not the run's. Each agent's skill S comes from the
    matrix run that accompanies this run, if any (:func:`reports.matrix_runs.
    accompanying_matrix`). A held-out run's own seed is withheld
    (``run.seed`` None, ``run.seed_withheld`` true) unless ``reveal_held_out`` — for operators
    only: the seed regenerates the held-out items.

    Raises :class:`~mindledger.errors.NotFoundError` for an unknown run id.
    """
    data = load_run(store, run_id)
    matrix = None
    matrix_id = accompanying_matrix(store, run_id)
    if matrix_id is not None:  # the matrix's statistics load only for a run that has one
        from ledger.store import Store
        from reports.matrix_summary import summarise_run

        if not isinstance(store, Store):
            raise TypeError(f"run {run_id!r} has a matrix run beside it ({matrix_id}): its "
                            "profile is built from a Store, not a Reader")
        matrix = summarise_run(store, matrix_id, n_boot=n_boot, stats_seed=seed)
    return analyse(
        data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out, matrix=matrix
    ).profile


def profile_from_data(
    data: RunData, *, seed: int = 0, n_boot: int = 2000, reveal_held_out: bool = False
) -> RunProfile:
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


def _first_finite(values: FloatArray) -> float | None:
    v = values[np.isfinite(values)]
    return float(v[0]) if v.size else None


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
    """Everything computed for one run: the profile (a RunProfile) and what comparisons need.

    ``metric_samples[agent][metric]`` (:class:`~reports._estimates.MetricSample`) holds the
    headline figures with what :func:`reports.render.compare_runs` needs to put intervals on
    changes between runs (counts for proportions, bootstrap replicates for the rest).
    ``reveal_held_out`` puts a held-out run's seed in the profile (operators only).
    """

    def __init__(
        self,
        data: RunData,
        *,
        seed: int = 0,
        n_boot: int = 2000,
        reveal_held_out: bool = False,
        matrix: Mapping[str, Any] | None = None,
    ):
        self.data = data
        self.matrix = matrix
        self.seed = seed
        self.reveal_held_out = reveal_held_out
        self.B = n_boot
        self.metric_samples: dict[str, dict[str, MetricSample]] = {}
        self.contrasts: list[dict[str, Any]] = []
        self._slopes: dict[str, dict[str, Any]] = {}
        self._masks: dict[tuple[str, Any], npt.NDArray[np.bool_]] = {}
        self._static()
        self._agents()
        self._bootstrap()
        self.profile = self._build()

    # -- item-level structure ----------------------------------------------------------

    def _is(self, column: str, value: Any) -> npt.NDArray[np.bool_]:
        """``items.<column> == value``, computed once per run: every agent's sections ask the
        same masks (at 1,000,000 trials recomputing them was a third of the profile's time)."""
        key = (column, value)
        mask = self._masks.get(key)
        if mask is None:
            mask = np.asarray(getattr(self.data.items, column) == value, dtype=bool)
            mask.setflags(write=False)
            self._masks[key] = mask
        return mask

    def _static(self) -> None:
        it = self.data.items
        self.N = n = len(it)
        fam = it.family
        self.nt = fam == "nesttom"
        self.hi = fam == "hitom"
        self.gm = fam == "games"
        q = it.question
        dn = it.depth_n
        self.qbel = (self.nt | self.hi) & (q == "belief")
        self.fb = self.nt & (it.belief == "false")
        self.tb = self.nt & (it.belief == "true")
        self.beh = self.nt & (q == "behaviour")
        self.jud = self.nt & (q == "judgment")
        # the NestToM item sets of seed 002 (see the module docstring)
        self.main = self.nt & (it.selection != "companion")
        deep = np.isfinite(dn) & (dn >= 1) & ~it.reality_check
        self.r0 = self.nt & self.qbel & self.main & it.reality_check
        self.curve = self.nt & self.qbel & self.main & (it.block == "B1") & deep
        self.fbc = self.curve & self.fb
        self.tbc = self.nt & self.qbel & self.main & self.tb & deep
        self.b2q = self.nt & self.qbel & self.main & (it.block == "B2") & deep
        self.fit = self.nt & self.qbel & self.main & self.fb & deep & (
            (it.block == "B1") | (it.block == "B2"))
        self.r2self = self.fbc & it.r2_self
        # R2-self items whose own-belief answer is no other lure's (nor the right answer)
        self.own_identifiable = np.fromiter(
            (not any("own_belief" in tag for tag in tags) for tags in it.ambiguous), bool, n
        ) if len(it.ambiguous) == n else np.ones(n, bool)
        self.abc = self.gm & np.isin(q, ["A", "B", "C", "K"])
        # C against the run's own LLM population: K plays per agent and a C-llm prediction per
        # scenario, both scored here, against the run's plays (reports._population)
        self.abc_play = self.gm & (q == "play")
        self.abc_llm = self.gm & (q == "C-llm")
        self.pending = self.abc_play | self.abc_llm
        self.lk_excluded = self.gm & ~self.abc & ~self.pending & it.excluded
        self.lk = self.gm & ~self.abc & ~self.pending & ~it.excluded
        self.rp_design = repeated_design(it)
        self.rp = self.rp_design.mask
        strata: list[tuple[Any, ...]] = [()] * n
        clusters: list[tuple[Any, ...]] = [()] * n
        # an applied question shares its story's belief question's stratum and cluster
        self._applied_static()
        story_block = {int(j): it.block[int(i)] for i, j in self.applied_pairs.tolist()}
        for i in range(n):
            iid = it.ids[i]
            if self.nt[i]:
                role = "companion" if it.selection[i] == "companion" else it.belief[i]
                block = story_block.get(i, it.block[i])
                if it.question[i] == "judgment" and it.story[i]:
                    block = self._belief_block.get((it.story[i], it.belief[i], it.depth[i]),
                                                   block)
                strata[i] = ("nesttom", block, role, it.depth[i])
                clusters[i] = ("nt", it.story[i] or iid, block, role, it.depth[i])
            elif self.hi[i]:
                strata[i] = ("hitom", it.depth[i])
                clusters[i] = ("hi", it.story[i] or iid, it.depth[i])
            elif self.abc[i]:
                strata[i] = ("games-abc", it.game[i])
                clusters[i] = ("abc", it.game[i], it.group[i] or iid)
            elif self.pending[i]:
                strata[i] = ("games-abc-llm", it.game[i])
                clusters[i] = ("abc-llm", it.game[i], it.group[i] or iid)
            elif self.gm[i]:
                strata[i] = ("games", it.game[i], it.condition[i])
                if math.isfinite(it.target_depth[i]) and math.isfinite(it.lam[i]):
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
        self.design_strata = strata
        scodes: dict[tuple[Any, ...], int] = {}
        self.scode = np.fromiter(
            (scodes.setdefault(st, len(scodes)) for st in strata), np.int64, n
        )
        self.strata_labels, self.collapsed = collapse_strata(strata, clusters)
        self.cluster_labels = clusters
        codes: dict[tuple[Any, ...], int] = {}
        self.ccode = np.fromiter(
            (codes.setdefault(c, len(codes)) for c in clusters), np.int64, n
        )
        # items alone in their cluster (most are): their proportions need no cluster codes
        self.singleton = np.bincount(self.ccode, minlength=len(codes))[self.ccode] == 1
        # NestToM depth labels of the B1 curve (R1 and deeper), in report order
        self.nt_depths = sorted(
            {d for d in it.depth[self.curve].tolist() if d}, key=depth_sort_key
        )
        self.nt_all_depths = sorted(
            {d for d in it.depth[self.nt].tolist() if d}, key=depth_sort_key
        )
        self.hi_depths = sorted(
            {d for d in it.depth[self.hi].tolist() if d}, key=depth_sort_key
        )
        self.fb_depths = sorted({float(x) for x in dn[self.fbc].tolist()})
        self._joint_static()
        self._abc_static()
        self.population = (population_plays(self.data, self.abc_play)
                           if self.abc_llm.any() else {})

    def _applied_static(self) -> None:
        """Pairs (belief item, behaviour item) on the same story, belief type and depth: the two
        sides of the applied gap are the same stories."""
        it = self.data.items
        belief_of: dict[tuple[str, str, str], int] = {}
        for i in np.flatnonzero(self.nt & self.qbel & self.main & (it.story != "")).tolist():
            belief_of.setdefault((it.story[i], it.belief[i], it.depth[i]), i)
        self._belief_block = {key: it.block[i] for key, i in belief_of.items()}
        pairs: list[tuple[int, int]] = []
        for j in np.flatnonzero(self.beh & (it.story != "")).tolist():
            b = belief_of.get((it.story[j], it.belief[j], it.depth[j]))
            if b is not None:
                pairs.append((b, j))
        self.applied_pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)

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
            unscored &= ~self.pending  # scored against the run's population, not per trial
            conf = np.full(n, np.nan)
            conf[idx] = tr.confidence[rows]
            conf[~ok | self.pending] = np.nan
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
            shallower: BoolArray = (excl - base) == 0
            return shallower

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

    # -- bootstrap ----------------------------------------------------------------------

    def _bootstrap(self) -> None:
        """One set of cluster-bootstrap resamples for every figure that needs one (D50 and its
        contrasts, ECE, the confidence slope, the C log score for comparisons)."""
        rng = np.random.default_rng(self.seed)
        self.boot = ClusterBootstrap(
            self.cluster_labels, rng, B=self.B, strata=self.strata_labels
        )
        columns: dict[str, FloatArray] = {}
        self.extra: dict[str, dict[str, Any]] = {}
        it = self.data.items
        depth_masks = [self.fbc & self._is("depth_n", d) for d in self.fb_depths]
        for ai, a in enumerate(self.agents):
            c = self.cols[a.name]
            p = f"a{ai}."
            self.extra[a.name] = ex = {}
            okf = c.ok.astype(float)
            ex["leak"] = np.fromiter(
                (x in LEAK_CODES for x in c.prim.tolist()), bool, self.N
            ) & c.ok & self.fbc
            ex["joint"] = self._joint(c)
            for j, m in enumerate(depth_masks):
                columns[p + f"dk{j}"] = c.cor * m
                columns[p + f"dn{j}"] = okf * m
            # games details
            w1 = self._details(c, "within_one", self.lk)
            ls = self._details(c, "log_score", self.abc & self._is("question", "C"))
            columns[p + "cn"] = np.isfinite(ls).astype(float)
            columns[p + "cs"] = np.nan_to_num(ls)
            ex["log_score"] = ls
            ex["brier"] = self._details(c, "brier", self.abc & self._is("question", "C"))
            ex["K_B"] = self._details(c, "K_B", self.lk)
            # stated belief, chain and mentalizing: the answer's own, else the judge's reading
            signals, ex["signal_sources"] = stated_signals(
                self.data.trials, self.data.judgements, a.name, c.rows, self.lk & c.ok
            )
            ex.update(signals)
            ex["judge_counts"] = judge_counts(self.data.judgements, a.name)
            ex["within_one"] = w1
            self._signal_columns(columns, p, ex, c.ok & self.lk)
            ex["own_belief"] = self._details(c, "is_own_belief", self.r2self)
            if self.rp.any():
                ex["repeated"] = episode_columns(self.data.trials, c.rows, c.ok, self.rp_design)
            tri = np.full(self.N, np.nan)
            for ia, ib, ic in self.abc_triples:
                if c.ok[ia] and c.ok[ib] and c.ok[ic]:
                    tri[ia] = float(c.cor[ia] == c.cor[ib] == c.cor[ic] == 1.0)
            ex["triple"] = tri
            # calibration
            fin = np.isfinite(c.conf)
            conf0 = np.where(fin, c.conf, 0.0)
            columns[p + "fn"] = fin.astype(float)
            b = np.minimum((conf0 * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
            for j in range(CALIBRATION_BINS):
                m = fin & (b == j)
                columns[p + f"e{j}c"] = conf0 * m
                columns[p + f"e{j}k"] = c.cor * m
            sm = fin & self.nt & self.qbel & np.isfinite(it.depth_n)
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
        # paired contrasts: agent − control, full − ablated
        self.pairs: list[tuple[str, str, str, str | None]] = []
        for a in self.agents:
            if a.role == "control" and a.base_agent in self.cols:
                self.pairs.append((a.base_agent, a.name, "minus_control", None))
            if a.role == "ablation" and a.base_agent in self.cols:
                module = str(a.spec.get("ablated") or a.name)
                self.pairs.append((a.base_agent, a.name, "ablation", module))
        for pi, (xn, yn, _, _) in enumerate(self.pairs):
            cx, cy = self.cols[xn], self.cols[yn]
            p = f"p{pi}."
            both = (cx.ok & cy.ok).astype(float)
            for j, m in enumerate(depth_masks):
                columns[p + f"dkx{j}"] = cx.cor * both * m
                columns[p + f"dky{j}"] = cy.cor * both * m
                columns[p + f"dn{j}"] = both * m
        self.sums: BootstrapSums = self.boot.sums(columns)
        for ai, a in enumerate(self.agents):
            ex = self.extra[a.name]
            ex["level_fit"] = {}
            for key, what in (("K_B", "actions"), ("K_L", "stated beliefs")):
                total = {part: self._sum(f"a{ai}.{key}{part}") for part in "nrcs"}
                sums = SignalSums(total["n"], total["r"], total["c"], total["s"],
                                  rates=ex[f"{key}_rates"])
                ex["level_fit"][key] = level_fit(sums, what=what, level=LEVEL)

    def _signal_columns(
        self, columns: dict[str, FloatArray], p: str, ex: dict[str, Any], m_lk: BoolArray
    ) -> None:
        """Bootstrap columns of the level-k fit of K_B and K_L (:mod:`reports._levels`): trials
        counted (K_B: every scored level-k trial; K_L: those that state a belief), trials whose
        value matched one depth, their chance rates and the matched depths; the counted trials'
        chance rates go in ``ex`` for the exact test."""
        it = self.data.items
        chance = it.resolve_chance if len(it.resolve_chance) == self.N else np.full(self.N, np.nan)
        stated = m_lk & (ex["signal_sources"]["belief"] != "")
        for key, counted in (("K_B", m_lk), ("K_L", stated)):
            v = ex[key]
            hit = counted & np.isfinite(v)
            columns[f"{p}{key}n"] = counted.astype(float)
            columns[f"{p}{key}r"] = hit.astype(float)
            columns[f"{p}{key}c"] = np.where(counted, chance, 0.0)
            columns[f"{p}{key}s"] = np.where(hit, v, 0.0)
            ex[f"{key}_rates"] = chance[counted]

    # -- small builders -------------------------------------------------------------------

    def _sum(self, name: str) -> tuple[float, FloatArray]:
        return self.sums.total(name)

    def _p(self, y: FloatArray, mask: BoolArray) -> Proportion:
        """The proportion of ``y`` over ``mask`` with the interval its clusters and the design's
        strata allow."""
        single = bool(self.singleton[mask].all())
        return proportion(y[mask], None if single else self.ccode[mask], self.scode[mask])

    def _rng(self, *key: int) -> np.random.Generator:
        """A generator for one test, seeded by the bootstrap seed and the test's position."""
        return np.random.default_rng([self.seed, 0x5EED, *key])

    def _chance(self, mask: BoolArray) -> float:
        nc = self.data.items.n_choices[mask]
        nc = nc[np.isfinite(nc) & (nc > 0)]
        return float(np.mean(1.0 / nc)) if nc.size else math.nan

    def _d50(
        self, kname: str, nname: str, chance: float
    ) -> tuple[D50Result, FloatArray, str | None]:
        """D50 from per-depth columns ``{kname}{j}`` / ``{nname}{j}``; the replicates (NaN when
        the interval is not estimable) and why it is not."""
        depths = self.fb_depths
        k0 = np.array([self._sum(f"{kname}{j}")[0] for j in range(len(depths))])
        n0 = np.array([self._sum(f"{nname}{j}")[0] for j in range(len(depths))])
        has = n0 > 0
        why = None
        if has.sum() >= 2 and n0[has].min() < D50_MIN_PER_DEPTH:
            worst = int(np.flatnonzero(has)[np.argmin(n0[has])])
            few = int(n0[worst])
            why = (f"interval not estimable: {few} scored false-belief "
                   f"item{'' if few == 1 else 's'} at depth {depths[worst]:g}; the bootstrap "
                   f"interval needs at least {D50_MIN_PER_DEPTH} at every depth")
        if depths and why is None:
            K = np.column_stack([self._sum(f"{kname}{j}")[1] for j in range(len(depths))])
            N = np.column_stack([self._sum(f"{nname}{j}")[1] for j in range(len(depths))])
            replicates: tuple[FloatArray, FloatArray] | None = (K, N)
        else:
            replicates = None
        res = d50_estimate(
            depths, k0, n0, chance=chance, replicates=replicates, level=LEVEL,
            interval=f"bootstrap-percentile-95 ({self.boot.n_clusters} clusters, B={self.B})"
            if replicates is not None else None,
        )
        if res.replicates is not None:
            reps = res.replicates
        elif replicates is not None and math.isfinite(chance):
            reps = d50_replicates(depths, replicates[0], replicates[1], chance=chance)
        else:
            reps = np.full(self.B, np.nan)
        return res, reps, why

    def _d50_permutation(
        self, mask: BoolArray, x: FloatArray, y: FloatArray, chance: float,
        rng: np.random.Generator,
    ) -> tuple[float, float]:
        """The two-sided permutation test of "two agents' answers are exchangeable" with the
        D50 difference as statistic: on each of B relabellings every item's two answers swap
        with probability 1/2. D50s outside the tested depths are clipped one level beyond
        them. Returns ``(observed difference, p)``."""
        it = self.data.items
        depths = np.asarray(self.fb_depths)
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
        flips = rng.integers(0, 2, size=(self.B, disc.size)).astype(float)
        delta = flips @ move
        return t_obs, permutation_pvalue(t_obs, stat(kx - delta, ky + delta))

    # -- the profile ----------------------------------------------------------------------

    def _build(self) -> RunProfile:
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
        abc_m = self._abc_family(agents_out)
        for a in self.agents:
            ag = agents_out[a.name]
            if ag["valid"] is False:
                notices.append(ag["notices"][0])
        profile = {
            "schema": PROFILE_SCHEMA,
            "run": run_block | {"n_items": self.N, "n_trials": len(self.data.trials)},
            "held_out": bool(run.get("held_out")),
            "notices": notices,
            "design": self._design(),
            "intervals": {
                "level": LEVEL,
                "bootstrap_replicates": self.B,
                "bootstrap_seed": self.seed,
                "n_clusters": self.boot.n_clusters,
                "n_strata": len(self.boot.strata),
                "collapsed_strata": [" / ".join(str(x) for x in lab) for lab in self.collapsed],
                "kinds": INTERVALS,
                "min_n": MIN_N,
                "d50_min_per_depth": D50_MIN_PER_DEPTH,
                "proportions": (
                    "wilson-95 where each trial is its own cluster (wilson-strat-95 where the "
                    "proportion pools the design's depth cells), wilson-deff-95 where trials "
                    f"share clusters; below n = {MIN_N} (effective) a proportion keeps its value "
                    "but has no interval (status not_estimable, with the reason)"
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
                "family": "every testable agent − control and full − ablated contrast in this "
                "report (not-estimable contrasts carry no p-value and are not in the family); "
                "the A − B and B − C accuracy contrasts within each agent are a second family, "
                "Holm-adjusted among themselves, so a real dissociation never counts against "
                "the comparison of two agents",
                "m": int(sum(1 for p in ps if math.isfinite(p))),
                "abc_m": abc_m,
            },
        }
        # parsed against the published schema: a profile that does not fit is a bug
        return RunProfile.of(_clean(profile))

    def _design(self) -> dict[str, Any]:
        it = self.data.items
        nt_items = self.nt & (self.qbel | self.beh | self.jud)
        blocks = Counter(str(b) for b in it.block[nt_items].tolist())
        return {
            "nesttom_blocks": dict(sorted(blocks.items())),
            "block_names_in_meta": list(it.block_names),
            "block_source": it.block_source,
            "block_note": {
                "meta": "every NestToM item names its block in its meta",
                "inferred": "no NestToM item names a baseline block (B1, B2, B4): they were "
                "inferred from the design (applied questions are B4; with several generator "
                "streams, a stream of applied stories is B4 and one depth at several lengths "
                "is B2; otherwise B1)",
                "mixed": "some NestToM items name their block; the others were inferred",
                "none": "no NestToM items",
            }[it.block_source],
            "reality_check_items": int(self.r0.sum()),
            "companion_items": int((self.nt & ~self.main).sum()),
            "depth_curve": "B1 belief items at R1 and deeper (R0 is the reality check)",
        }

    def _agent(self, ai: int, a: RunAgent) -> dict[str, Any]:
        c = self.cols[a.name]
        ex = self.extra[a.name]
        p = f"a{ai}."
        samples: dict[str, MetricSample] = {}
        self.metric_samples[a.name] = samples
        it = self.data.items
        out: dict[str, Any] = {
            "role": a.role,
            "base_agent": a.base_agent,
            "spec": {k: a.spec[k] for k in SAFE_SPEC_KEYS if k in a.spec},
            "notices": [],
        }
        # accuracy by depth (B1, R1 and deeper) and joint accuracy
        jn, jk = ex["joint"]
        acc: dict[str, dict[str, Any]] = {}
        joint: dict[str, dict[str, Any]] = {}
        for belief in ("false", "true"):
            acc[belief] = {}
            joint[belief] = {}
            bm = self.fb if belief == "false" else self.tb
            for label in self.nt_depths:
                m = self.curve & bm & self._is("depth", label) & c.ok
                if not m.any():
                    continue
                cell = self._p(c.cor, m)
                dn = self._depth_n(label)
                acc[belief][label] = {"depth_n": dn} | cell.to_dict()
                if belief == "false":
                    samples[f"accuracy_by_depth.false.{label}"] = MetricSample.of(cell)
                jm = self.curve & bm & self._is("depth", label) & (jn == 1.0)
                if jm.any():
                    joint[belief][label] = {"depth_n": dn} | self._p(jk, jm).to_dict()
        reality = self._p(c.cor, self.r0 & c.ok)
        fb_all = self._p(c.cor, self.fbc & c.ok)
        tb_all = self._p(c.cor, self.tbc & c.ok)
        if fb_all.n:
            samples["false_belief_accuracy"] = MetricSample.of(fb_all)
        if tb_all.n:
            samples["true_belief_control_accuracy"] = MetricSample.of(tb_all)
        if reality.n:
            samples["reality_check"] = MetricSample.of(reality)
        valid, message = self._validity(a.name, fb_all, tb_all, reality)
        if message:
            out["notices"].append(message)
        out["valid"] = valid
        out["validity"] = {
            "valid": valid,
            "rule": "true-belief control accuracy >= 90% (seed 002 §18.2 rule 6) and R0 "
            "reality-check accuracy >= 90% (seed 002 §3)",
            "threshold": TRUE_BELIEF_THRESHOLD,
            "true_belief_accuracy": tb_all.value,
            "n": tb_all.n,
            "reality_check_accuracy": reality.value,
            "reality_check_n": reality.n,
            "message": message,
            "applies_to": "false-belief scores: accuracy_by_depth.false, d50, "
            "leakage_resistance, degradation_slope",
        }
        out["reality_check"] = reality.to_dict() | {
            "definition": "accuracy on the R0 questions (where is the object really?), both "
            "story cells; a reality control, not a false-belief item"
        } if reality.n else {"value": None, "n": 0, "reason": "no R0 reality-check items"}
        out["true_belief_control_accuracy"] = tb_all.to_dict() | {
            "definition": "true-belief control items at R1 and deeper, every block"
        }
        out["false_belief_accuracy"] = fb_all.to_dict() | {
            "definition": "B1 false-belief items at R1 and deeper"
        }
        # D50
        if fb_all.n:
            chance = self._chance(c.ok & self.fbc)
            d50, d50_reps, why = self._d50(p + "dk", p + "dn", chance)
            out["d50"] = d50.to_dict() | {
                "ceiling_note": "ceiling fixed at 1.0 (an exact reasoner); chance is the mean of "
                "1/number of choices over the agent's scored B1 false-belief items (R1 and "
                "deeper); the agent's own true-belief accuracy is reported as "
                "true_belief_control_accuracy",
            }
            if why:
                out["d50"]["ci"] = None
                out["d50"]["ci_note"] = why
                out["d50"]["interval_status"] = "not_estimable"
            if d50.value is not None:
                samples["d50"] = MetricSample(d50.value, d50.n, why is None and
                                              d50.status == "estimated", replicates=d50_reps)
        else:
            out["d50"] = {
                "status": "not_estimable",
                "value": None,
                "reason": "no scored B1 false-belief NestToM items at R1 or deeper",
                "display": "not estimable: no scored B1 false-belief NestToM items at R1 or "
                "deeper",
                "n": 0,
            }
        out["degradation_slope"] = self._slope(c)
        # leakage
        if fb_all.n:
            fbm = self.fbc & c.ok
            lr = self._p(1.0 - ex["leak"].astype(float), fbm)
            out["leakage_resistance"] = lr.to_dict() | {
                "errors_counted": int(ex["leak"][fbm].sum()),
                "definition": "1 − (reality_leak + projection primary errors) ÷ scored B1 "
                "false-belief items at R1 and deeper",
            }
            samples["leakage_resistance"] = MetricSample.of(lr)
        else:
            out["leakage_resistance"] = {
                "value": None, "n": 0,
                "reason": "no scored B1 false-belief NestToM items at R1 or deeper"
            }
        out["accuracy_by_depth"] = acc
        out["joint_accuracy_by_depth"] = joint | {
            "definition": "an item counts only if every shallower belief question on the same "
            "story was answered correctly (Hi-ToM style); items whose shallower questions had "
            "an API error are left out"
        }
        out["r2_self"] = self._r2_self(c)
        out["by_mechanism"] = self._by_factor(c, it.mechanism, "mechanism")
        out["by_form"] = self._by_factor(c, it.form, "surface form")
        out["length_sweep"] = self._length_sweep(c)
        out["error_types_by_depth"] = self._error_types(c)
        out["applied_gap"] = self._applied(c, samples)
        out["games"] = self._games(p, a.name, c, samples)
        out["depth_signals"] = self._depth_signals(self.extra[a.name], c.ok & self.lk)
        out["repeated"] = (
            repeated_section(self.data.items, self.rp_design, c.has, c.ok,
                             self.extra[a.name]["repeated"], seed=self.seed)
            if self.rp.any()
            else {"available": False, "reason": "no repeated-game episodes in this run"}
        )
        out["calibration"] = self._calibration(p, c, samples)
        out["cost"] = self._cost(c)
        out["api_errors"] = self._api_errors(c)
        out["families"] = self._families(c)
        if self.hi.any():
            out["hitom"] = self._hitom(c)
        out["agent_prediction_skill"] = self._skill(a.name)
        out["minus_control"] = None
        out["ablation_credit"] = {}
        return out

    def _skill(self, name: str) -> dict[str, Any]:
        """Agent-prediction skill S: from the accompanying matrix run, which commits every
        prediction to the ledger before the target is asked (seed 002 §15.2, §18.2 rule 5)."""
        if self.matrix is None:
            return {
                "available": False,
                "reason": "no matrix run accompanies this run (S comes from the prediction "
                "ledger, through a matrix run)",
            }
        from reports.matrix_summary import agent_skill

        return agent_skill(self.matrix, name).to_dict()

    def _validity(
        self, name: str, fb: Proportion, tb: Proportion, reality: Proportion
    ) -> tuple[bool | None, str | None]:
        """The anti-inflation rule: true-belief controls and the R0 reality check passed."""
        failed = []
        if tb.n and (tb.value or 0.0) < TRUE_BELIEF_THRESHOLD:
            failed.append(f"true-belief control accuracy is {tb.value:.1%} (n={tb.n})")
        if reality.n and (reality.value or 0.0) < TRUE_BELIEF_THRESHOLD:
            failed.append(f"R0 reality-check accuracy is {reality.value:.1%} (n={reality.n})")
        if failed:
            return False, (
                f"INVALID: {name}'s " + " and ".join(failed) + ", below the required 90%, so "
                "its false-belief scores (accuracy, D50, leakage resistance) are invalid: a "
                "reasoner that fails the controls may score on false-belief items by a "
                "shortcut (such as always answering against reality) or by chance."
            )
        if tb.n == 0:
            answered_fb = bool((self.nt & self.qbel & self.fb & self.cols[name].ok).any())
            return None, (
                f"UNCHECKED: {name} answered no true-belief control items, so the "
                "anti-inflation rule (true-belief accuracy >= 90%) cannot be checked; read its "
                "false-belief scores with that in mind."
            ) if fb.n or answered_fb else None
        return True, None

    def _depth_n(self, label: str) -> float | None:
        it = self.data.items
        return _first_finite(it.depth_n[self._is("depth", label) & (self.nt | self.hi)])

    def _slope(self, c: _AgentCols) -> dict[str, Any]:
        """The degradation slope: logit(correct) ~ depth + length over the B1 and B2
        false-belief items (length drops out, with a note, where it does not vary)."""
        cached = self._slopes.get(c.name)
        if cached is not None:
            return cached
        it = self.data.items
        m = c.ok & self.fit
        if not m.any():
            return {"status": "not_estimable", "value": None, "n": 0,
                    "reason": "no scored B1/B2 false-belief NestToM items at R1 or deeper"}
        codes = self.ccode[m]
        clustered = np.unique(codes).size < codes.size
        res = degradation_slope(
            it.depth_n[m], c.cor[m], it.length[m], codes if clustered else None, level=LEVEL,
            min_n=2 * MIN_N,
        ).to_dict()
        if res["value"] is not None and res["n"] < 2 * MIN_N:  # a coefficient, no interval
            res["reason"] = not_estimable_reason(res["n"], "false-belief items", 2 * MIN_N)
        res["interval"] = "wald-cluster-robust-95" if clustered else "wald-95"
        for term in res.get("terms", {}).values():
            term["interval"] = res["interval"]
        res["meaning"] = ("change in log-odds of a correct false-belief answer per depth level, "
                          "controlling for story length (B1 and B2 items)")
        self._slopes[c.name] = res
        return res

    def _r2_self(self, c: _AgentCols) -> dict[str, Any]:
        """R2-self ("what does X think *you* believe?"): accuracy, and how often the answer was
        the answerer's own belief (privileged access not suppressed)."""
        m = self.r2self & c.ok
        if not m.any():
            return {"available": False, "reason": "no scored R2-self false-belief B1 items"}
        own = self.extra[c.name]["own_belief"]
        known = m & np.isfinite(own)
        ident = known & self.own_identifiable
        out: dict[str, Any] = {
            "available": True,
            "accuracy": self._p(c.cor, m).to_dict(),
        }
        if ident.any():
            out["own_belief_leak"] = self._p(own, ident).to_dict() | {
                "definition": "share of scored R2-self false-belief answers that name the "
                "answerer's own belief (the score's is_own_belief), on the items where that "
                "answer is no other lure (meta ambiguous lists no own_belief tag)",
                "left_out_ambiguous": int((known & ~self.own_identifiable).sum()),
            }
        else:
            out["own_belief_leak"] = {
                "value": None, "n": 0,
                "reason": "the R2-self scores carry no is_own_belief detail",
            }
        return out

    def _by_factor(self, c: _AgentCols, factor: npt.NDArray[Any], what: str) -> dict[str, Any]:
        """B1 false-belief accuracy (R1 and deeper) per level of a story factor."""
        m = self.fbc & c.ok
        levels = sorted({str(v) for v in factor[m].tolist() if v})
        if not levels:
            return {"available": False, "reason": f"the items name no {what}"}
        rows = {lev: self._p(c.cor, m & (factor == lev)).to_dict() for lev in levels}
        return {"available": True, "false_belief_accuracy": rows,
                "definition": f"B1 false-belief accuracy at R1 and deeper, by {what}"}

    def _families(self, c: _AgentCols) -> dict[str, dict[str, Any]]:
        """Accuracy per item family of the run, for every family (the registry's title where
        it knows the family): the one section a family gets without a section of its own."""
        it = self.data.items
        out: dict[str, dict[str, Any]] = {}
        for name in sorted({str(f) for f in it.family.tolist()}):
            try:
                title = family_registry.get(name).title
            except UnknownFamilyError:
                title = name
            fam = self._is("family", name)
            m = fam & c.ok & ~it.excluded & ~self.pending
            left_out = "API errors and items excluded by design left out"
            if (fam & self.pending).any():
                left_out += ("; so are LLM-population plays and predictions, which "
                             "games.abc.c_llm scores")
            out[name] = self._p(c.cor, m).to_dict() | {
                "title": title,
                "definition": f"correct answers ÷ scored {name} items ({left_out})",
            }
        return out

    def _length_sweep(self, c: _AgentCols) -> dict[str, Any]:
        """B2: accuracy by story length (false and true belief), and the depth + length fit."""
        it = self.data.items
        m = self.b2q & c.ok & np.isfinite(it.length)
        if not (self.b2q & np.isfinite(it.length)).any():
            return {"available": False, "reason": "no B2 (length sweep) items in this run"}
        by_len: dict[str, dict[str, Any]] = {}
        for belief, bm in (("false", self.fb), ("true", self.tb)):
            lengths = sorted({float(x) for x in it.length[m & bm].tolist()})
            by_len[belief] = {
                f"{v:g}": self._p(c.cor, m & bm & self._is("length", v)).to_dict() for v in lengths
            }
        slope = self._slope(c)
        return {
            "available": True,
            "accuracy_by_length": by_len,
            "depth": (slope.get("terms") or {}).get("depth") or {
                "value": None, "reason": slope.get("reason")},
            "length": (slope.get("terms") or {}).get("length") or {
                "value": None,
                "reason": slope.get("reason") or "; ".join(slope.get("notes") or ())},
            "model": slope.get("model"),
            "definition": "B2 items by story length; the fit is logit(correct) ~ depth + length "
            "over the B1 and B2 false-belief items, so the depth coefficient is net of length "
            "and the length coefficient (per event) net of depth",
        }

    def _error_types(self, c: _AgentCols) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for belief in ("false", "true"):
            out[belief] = {}
            for label in self.nt_depths:
                m = c.ok & self.curve & self._is("belief", belief) & self._is("depth", label)
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

    def _applied(self, c: _AgentCols, samples: dict[str, MetricSample]) -> dict[str, Any]:
        """B4: belief − behaviour accuracy on the same stories (Newcombe paired), per depth."""
        it = self.data.items
        if not self.beh.any():
            return {"available": False,
                    "reason": "no behaviour-prediction items in this run"}
        pairs = self.applied_pairs
        okp = pairs[c.ok[pairs[:, 0]] & c.ok[pairs[:, 1]]] if pairs.size else pairs
        if okp.size == 0:
            return {"available": False,
                    "reason": "no scored belief and behaviour answers on the same stories"}
        names = ("belief_accuracy", "behaviour_accuracy")
        gap = paired_binary(c.cor[okp[:, 0]], c.cor[okp[:, 1]], names, self._rng(0))
        samples["applied_gap"] = MetricSample(
            gap.difference if gap.difference is not None else math.nan, gap.n, gap.estimable,
            ci=(gap.lo, gap.hi) if gap.lo is not None and gap.hi is not None else None)
        by_depth = {}
        for label in self.nt_all_depths:
            sel = okp[it.depth[okp[:, 1]] == label]
            if not sel.size:
                continue
            g = paired_binary(c.cor[sel[:, 0]], c.cor[sel[:, 1]], names, self._rng(0))
            jm = c.ok & self.jud & self._is("depth", label)
            by_depth[label] = self._gap_dict(g) | {
                "judgment_accuracy": self._p(c.cor, jm).to_dict() if jm.any() else None,
            }
        jm = c.ok & self.jud
        return {
            "available": True,
            **self._gap_dict(gap),
            "judgment_accuracy": float(c.cor[jm].mean()) if jm.any() else None,
            "judgment_n": int(jm.sum()),
            "judgment": self._p(c.cor, jm).to_dict() if jm.any() else None,
            "definition": "belief-question accuracy − behaviour-prediction accuracy on the same "
            "stories, beliefs and depths (positive: knows the belief but does not use it)",
            "by_depth": by_depth,
        }

    @staticmethod
    def _gap_dict(g: Contrast) -> dict[str, Any]:
        d = g.to_dict()
        out = {
            "value": g.difference,
            "ci": d["ci"],
            "interval": g.interval,
            "n": g.n,
            "belief_accuracy": g.x,
            "belief_n": g.n,
            "behaviour_accuracy": g.y,
            "behaviour_n": g.n,
            "status": d["status"],
        }
        if g.reason:
            out["reason"] = g.reason
        return out

    def _mean(self, values: FloatArray, mask: BoolArray | None = None) -> dict[str, Any]:
        """A mean of numbers over independent units: t interval, not estimable below MIN_N."""
        v = values if mask is None else values[mask]
        v = v[np.isfinite(v)]
        n = int(v.size)
        if n == 0:
            return {"value": None, "n": 0, "reason": "no values"}
        mean, lo, hi, _, _ = clustered_mean_interval(v)
        if n < MIN_N or not (math.isfinite(lo) and math.isfinite(hi)):
            return {"value": mean, "n": n, "ci": None, "interval": None,
                    "status": "not_estimable",
                    "reason": not_estimable_reason(n) if n < MIN_N else "no spread"}
        return {"value": mean, "n": n, "ci": [lo, hi], "interval": "t-95", "status": "estimated"}

    def _depth_estimate(self, f: LevelFit, what: str) -> dict[str, Any]:
        """K_B or K_L: the mean matched depth with its cluster-bootstrap interval when the
        signal identifies a level-k player; its level-k fit, and why there is no depth when
        it does not (:mod:`reports._levels`)."""
        d: dict[str, Any] = {"value": f.depth, "n": f.matched, "ci": None, "interval": None,
                             "identifiable": f.identifiable, "fit": f.fit_dict()}
        if f.matched == 0 and f.identifiable is None:
            return d | {"value": None, "status": "not_estimable",
                        "reason": f.reason if f.n == 0 else f"no {what} in scores"}
        if f.identifiable is not False and f.depth_ci is not None:
            return d | {"ci": list(f.depth_ci), "status": "estimated",
                        "interval": "cluster-bootstrap-95"} | (
                {"reason": f.reason} if f.reason else {})
        return d | {"status": "not_estimable", "reason": f.reason}

    def _depth_signals(self, ex: Mapping[str, Any], m_lk: BoolArray) -> dict[str, Any]:
        """K_B beside K_L (seed 000 Eq. 8, Eq. 9), best-response consistency to the stated belief
        (Eq. 6, and under a stated distribution) against its chance rate, chain consistency
        (Eq. 10) and the mentalizing rate, each with its n, over the agent's level-k trials."""
        n = int(m_lk.sum())
        if n == 0:
            return {"available": False, "reason": "no scored level-k trials"}
        kb, kl = ex["K_B"], ex["K_L"]
        both = m_lk & np.isfinite(kb) & np.isfinite(kl)

        def mean(values: FloatArray, mask: BoolArray, what: str) -> dict[str, Any]:
            d = self._mean(values, mask)
            if d["n"] == 0:
                d["reason"] = f"no {what} in scores"
            return d

        def rate(values: FloatArray, mask: BoolArray, what: str) -> dict[str, Any]:
            m = mask & np.isfinite(values)
            if not m.any():
                return {"value": None, "n": 0, "reason": f"no {what} in scores"}
            return proportion(values[m]).to_dict()

        out: dict[str, Any] = {"available": True, "n": n}
        fits = ex["level_fit"]
        out["K_B"] = self._depth_estimate(fits["K_B"], "resolved K_B") | {
            "unresolved": n - int((m_lk & np.isfinite(kb)).sum()),
            "definition": "mean K_B: the depth whose IDR action is the submitted action",
        }
        out["K_L"] = self._depth_estimate(fits["K_L"], "resolved K_L (no stated belief)") | {
            "unresolved": n - int((m_lk & np.isfinite(kl)).sum()),
            "definition": "mean K_L: one plus the depth whose IDR action is the stated belief",
        }
        out["K_L_minus_K_B"] = mean(kl - kb, both, "trial with both signals resolved") | {
            "definition": "mean K_L − K_B over trials where both resolve (> 0: the stated "
            "reasoning goes deeper than the action)",
        }
        agree = np.where(both, (kl == kb).astype(float), np.nan)
        out["K_agreement"] = rate(agree, both, "trial with both signals resolved") | {
            "definition": "share of trials with K_L = K_B, over trials where both resolve (an "
            "upper estimate: confused trials resolve less often)",
        }
        brc = ex["br_consistent"]
        bm = m_lk & np.isfinite(brc)
        br = rate(brc, m_lk, "stated belief in the action space")
        chance_v = ex["br_chance"][bm & np.isfinite(ex["br_chance"])]
        chance = float(chance_v.mean()) if chance_v.size else None
        out["br_consistency"] = br | {
            "definition": "share of trials whose action is in BR(stated belief)",
        }
        out["br_chance"] = chance
        out["br_consistency_eu"] = rate(
            ex["br_consistent_eu"], m_lk, "stated belief distribution"
        ) | {"definition": "share of trials whose action maximises expected utility under the "
             "stated belief distribution"}
        ci = br.get("ci")
        if br["n"] == 0 or chance is None:
            flag: bool | None = None
            why = "no action tested against a stated belief"
        elif not ci or ci[0] is None:
            flag, why = None, br.get("reason") or "no interval"
        else:
            flag = bool(ci[0] <= chance)
            why = None
        out["inconsistent_player"] = flag
        out["inconsistent_rule"] = (
            "best-response consistency whose 95% interval does not lie above its chance rate "
            "(the share of actions that are best responses to the stated belief)"
        )
        if why:
            out["inconsistent_reason"] = why
        out["chain_consistency"] = mean(ex["chain_consistency"], m_lk, "chain of m ≥ 2") | {
            "definition": "mean share of consecutive chain steps that are best responses"}
        out["chain_length"] = mean(ex["chain_length"], m_lk, "chain") | {
            "definition": "mean number of values in the written chain"}
        out["mentalizing"] = rate(ex["mentalizing"], m_lk, "mentalizing flag") | {
            "definition": "share of trials whose reasoning has the opponent reasoning about the "
            "agent's own choice (the judge's opponent_models_me / spurious_recursion)"}
        # where each stated-signal figure came from: the answer's own statement or the judge
        src = ex["signal_sources"]
        out["sources"] = {
            figure: source_of(src[signal], ex[key], m_lk)
            for figure, signal, key in (
                ("K_L", "belief", "K_L"),
                ("br_consistency", "belief", "br_consistent"),
                ("br_consistency_eu", "belief", "br_consistent_eu"),
                ("chain_consistency", "chain", "chain_consistency"),
                ("chain_length", "chain", "chain_length"),
                ("mentalizing", "mentalizing", "mentalizing"),
            )
        }
        for figure, used in out["sources"].items():
            out[figure]["source"] = used["source"]
        out["judge"] = ex["judge_counts"]
        return out

    def _games(
        self,
        p: str,
        name: str,
        c: _AgentCols,
        samples: dict[str, MetricSample],
    ) -> dict[str, Any]:
        it = self.data.items
        ex = self.extra[name]
        if not (self.gm & c.has).any():
            return {"available": False, "reason": "no game items answered in this run"}
        out: dict[str, Any] = {"available": True}
        rows = []
        m_lk = c.ok & self.lk
        cells = sorted({(str(it.game[i]), str(it.condition[i]))
                        for i in np.flatnonzero(m_lk).tolist()})
        w1 = ex["within_one"]
        for game, cond in cells:
            m = m_lk & self._is("game", game) & self._is("condition", cond)
            wm = m & np.isfinite(w1)
            rows.append(
                {"game": game, "condition": cond, "accuracy": self._p(c.cor, m).to_dict(),
                 "within_one": self._p(np.nan_to_num(w1), wm).to_dict() if wm.any() else {
                     "value": None, "n": 0, "reason": "no within_one in scores"}}
            )
        out["by_game_condition"] = rows
        if self.lk.any():
            ga = self._p(c.cor, m_lk)
            out["accuracy"] = ga.to_dict()
            if ga.n:
                samples["games_accuracy"] = MetricSample.of(ga)
        # K_B / K_L curves
        curves = []
        keys = sorted(
            {
                (it.condition[i], float(it.target_depth[i]))
                for i in np.flatnonzero(m_lk & np.isfinite(it.target_depth))
            },
            key=lambda t: (t[0], t[1]),
        )
        for cond, td in keys:
            m = m_lk & self._is("condition", cond) & self._is("target_depth", td)
            entry: dict[str, Any] = {"condition": cond, "target_depth": td, "n": int(m.sum())}
            for key in ("K_B", "K_L"):
                d = self._mean(ex[key], m)
                entry[key] = {
                    "mean": d["value"],
                    "ci": d.get("ci"),
                    "n": d["n"],
                    "unresolved": int(m.sum()) - d["n"],
                    "interval": d.get("interval"),
                    "identifiable": ex["level_fit"][key].identifiable,
                } | ({"reason": d["reason"]} if d.get("reason") else {})
                if ex["level_fit"][key].identifiable is False and d["n"]:
                    # the agent's choices are no level's: a point of its curve is noise too
                    entry[key] |= {"mean": None, "ci": None, "interval": None,
                                   "reason": f"not identifiable: {ex['level_fit'][key].reason}"}
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
        brc = ex["br_consistent"]
        bm = m_lk & np.isfinite(brc)
        out["br_consistency"] = (
            proportion(brc[bm]).to_dict() if bm.any()
            else {"value": None, "n": 0, "reason": "no br_consistent in scores"}
        )
        # A/B/C: C against scripted populations (accuracy.C, log_score_c, brier_c) and, apart,
        # against the run's own agents (c_llm)
        abc: dict[str, Any] = {}
        if (self.abc & c.has).any():
            abc["accuracy"] = {}
            for qq in "ABCK":
                qm = self.abc & self._is("question", qq) & c.ok
                if qq != "K" or qm.any():
                    abc["accuracy"][qq] = self._p(c.cor, qm).to_dict()
            if "K" in abc["accuracy"]:
                abc["opponent_type_inference"] = abc["accuracy"]["K"] | {
                    "definition": "accuracy of the inferred level k of a scripted opponent (K items)"
                }
            if self.abc_triples:
                tri = ex["triple"]
                dp = self._p(np.nan_to_num(tri), np.isfinite(tri))
                d = dp.to_dict() | {
                    "definition": "share of scenarios whose A, B and C answers are all correct "
                    "where the three correct answers differ",
                    "scenarios_skipped_equal_answers": self.abc_equal_truths,
                }
                if self.abc_unknown_truths:
                    d["note"] = (
                        f"{self.abc_unknown_truths} scenarios lack stored answers; they are "
                        "assumed to differ"
                    )
                abc["dissociation"] = d
                if dp.n:
                    samples["abc_dissociation"] = MetricSample.of(dp)
            else:
                abc["dissociation"] = {
                    "value": None, "n": 0,
                    "reason": "no complete A/B/C scenario (the items carry no group key "
                    "tying A, B and C together, or one of them is missing)",
                }
            abc["contrasts"] = self._abc_contrasts(c)
            ls = ex["log_score"]
            d = self._mean(ls)
            if d["n"]:
                _, csr = self._sum(p + "cs")
                _, cnr = self._sum(p + "cn")
                samples["log_score_c"] = MetricSample(
                    d["value"], d["n"], d.get("status") == "estimated",
                    replicates=_ratio(csr, cnr))
                abc["log_score_c"] = d
            else:
                abc["log_score_c"] = {"value": None, "n": 0,
                                      "reason": "no log_score in the C items' scores"}
            bd = self._mean(ex["brier"])
            abc["brier_c"] = bd if bd["n"] else {
                "value": None, "n": 0, "reason": "no brier in the C items' scores"}
        else:
            abc = {"available": False, "reason": "no A/B/C items in this run"}
        if (self.abc_llm & c.has).any():
            abc["c_llm"] = self._abc_llm(c)
        out["abc"] = abc
        return out

    def _abc_llm(self, c: _AgentCols) -> dict[str, Any]:
        """C against the run's own LLM population (:mod:`reports._population`): the agent's
        C-llm predictions scored against the other agents' plays of the same scenario, one per
        scenario — mean log and Brier scores (t interval) and top-1 (Wilson), each with its n."""
        items = np.flatnonzero(self.abc_llm & c.ok)
        scored = score_predictions(self.data, self.population, c.name, items.tolist(),
                                   c.rows[items].tolist())
        out: dict[str, Any] = {
            "available": True,
            "population": "every agent of the run (agents, controls, ablations, reference "
            "players), K plays each; the predictor's own plays left out",
            "samples": sorted({int(s) for s in (self.data.items.meta[i].get("samples")
                                                for i in items.tolist())
                               if isinstance(s, int)}),
            "min_population": POPULATION_MIN_ANSWERS,
            "scenarios": int((self.abc_llm & c.has).sum()),
            "predictions": len(scored),
        }
        est = [s for s in scored if s.reason is None]
        reasons = Counter(s.reason for s in scored if s.reason is not None)
        out["not_estimable_scenarios"] = len(scored) - len(est)
        if reasons:
            out["not_estimable_reasons"] = dict(reasons)
        if not est:
            why = ("not estimable: " + "; ".join(reasons) if reasons
                   else "not estimable: no C-llm trial without an API error")
            for key in ("log_score", "brier", "top1"):
                out[key] = {"value": None, "n": 0, "status": "not_estimable", "reason": why}
            out["reason"] = why
            return out
        out["population_plays"] = {"mean": float(np.mean([s.population for s in est])),
                                   "min": min(s.population for s in est)}
        logs = np.asarray([np.nan if s.log_score is None else s.log_score for s in est])
        briers = np.asarray([np.nan if s.brier is None else s.brier for s in est])
        uni = [s.uniform_log_score for s in est if s.uniform_log_score is not None]
        unread = ("not estimable: no readable C-llm prediction in the scored scenarios (an "
                  "unreadable one counts as wrong in top1)")
        out["log_score"] = self._mean(logs) | {
            "definition": "mean log probability the prediction gave the other agents' plays "
            "(per scenario; floored at 1e-9)"}
        if uni:
            out["uniform_log_score"] = float(np.mean(uni))
        out["brier"] = self._mean(briers) | {
            "definition": "mean Brier score against the other agents' plays (per scenario)"}
        for key in ("log_score", "brier"):
            if not out[key]["n"]:
                out[key]["reason"] = unread
        out["top1"] = proportion(np.asarray([float(bool(s.top1)) for s in est])).to_dict() | {
            "definition": "share of scenarios whose prediction has a unique most likely "
            "choice that is a modal choice of the other agents' plays"}
        return out

    def _abc_contrasts(self, c: _AgentCols) -> dict[str, Any]:
        """A − B and B − C accuracy on the same scenarios (those whose three truths differ):
        one pair per scenario, Newcombe's paired interval and the exact McNemar test."""
        out: dict[str, Any] = {}
        for j, (x, y) in enumerate((("A", "B"), ("B", "C"))):
            pos = {"A": 0, "B": 1, "C": 2}
            pairs = [(t[pos[x]], t[pos[y]]) for t in self.abc_triples
                     if c.ok[t[pos[x]]] and c.ok[t[pos[y]]]]
            ix = np.asarray([a for a, _ in pairs], dtype=np.int64)
            iy = np.asarray([b for _, b in pairs], dtype=np.int64)
            out[f"{x}_minus_{y}"] = paired_binary(
                c.cor[ix], c.cor[iy], (x, y), self._rng(0xABC, j)
            ).to_dict() | {"definition": f"accuracy on {x} minus accuracy on {y}, paired by "
                           "scenario (scenarios whose A, B and C truths differ)"}
        return out

    def _calibration(
        self, p: str, c: _AgentCols, samples: dict[str, MetricSample]
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
        ok = cal.n >= ECE_MIN_N
        samples["ece"] = MetricSample(cal.ece, cal.n, ok, replicates=ece_reps)
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
                "ci": [slo, shi] if sn0 >= ECE_MIN_N else None,
                "n": int(sn0),
                "interval": "cluster-bootstrap-95" if sn0 >= ECE_MIN_N else None,
                "meaning": "change in stated confidence (0–1) per depth level, NestToM belief "
                "items (OLS)",
            }
            if sn0 < ECE_MIN_N:
                slope["status"] = "not_estimable"
                slope["reason"] = not_estimable_reason(int(sn0), "rated items", ECE_MIN_N)
            if not math.isfinite(s0):
                slope["reason"] = "all confidences at one depth"
        else:
            slope = {"value": None, "n": int(sn0),
                     "reason": "fewer than 3 NestToM belief items with a stated confidence"}
        yv = c.cor[fin]
        brier = float(np.mean((c.conf[fin] - yv) ** 2))
        e: dict[str, Any] = {"value": cal.ece, "ci": [lo, hi] if ok else None, "n": cal.n,
                             "bins": CALIBRATION_BINS,
                             "interval": "cluster-bootstrap-95" if ok else None,
                             "status": "estimated" if ok else "not_estimable"}
        if not ok:
            e["reason"] = not_estimable_reason(cal.n, "rated answers", ECE_MIN_N)
        out = {
            "available": True,
            "ece": e,
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
        for label in self.nt_all_depths:
            m = c.has & self.nt & self._is("depth", label)
            if m.any():
                by_depth[label] = row(m)
        by_family = {}
        for fam in sorted(set(it.family[c.has].tolist())):
            by_family[fam] = row(c.has & self._is("family", fam))
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

    def _hitom(self, c: _AgentCols) -> dict[str, Any]:
        jn, jk = self.extra[c.name]["joint"]
        acc = {}
        joint = {}
        for label in self.hi_depths:
            m = self.hi & self.qbel & self._is("depth", label)
            if (m & c.ok).any():
                acc[label] = self._p(c.cor, m & c.ok).to_dict()
            if (m & (jn == 1.0)).any():
                joint[label] = self._p(jk, m & (jn == 1.0)).to_dict()
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
                "interval": "each metric names its interval and test",
                "metrics": metrics,
            }
            block["same_answers"] = self._same_answers(x, y)
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
                            "interval": d.get("interval"),
                            "test": d.get("test"),
                            "p": d["p"],
                            "p_holm": None,
                            "target": d,
                        }
                    )

    def _same_answers(self, x: str, y: str) -> dict[str, int]:
        """How many items both agents answered (ok trials) and on how many of them their
        answers were the same: when every one is, every paired contrast is zero by
        construction (a command agent's derived control that is the same program, a module
        whose switch changes nothing)."""
        cx, cy = self.cols[x], self.cols[y]
        answers = self.data.trials.answer_json
        shared = np.flatnonzero(cx.ok & cy.ok & (cx.rows >= 0) & (cy.rows >= 0))
        same = sum(answers[cx.rows[i]] == answers[cy.rows[i]] for i in shared)
        return {"shared": int(shared.size), "identical": int(same)}

    def _abc_family(self, agents_out: dict[str, Any]) -> int:
        """Holm over every agent's testable A − B and B − C contrasts (``games.abc.contrasts``):
        a family of its own, within-agent effects, kept apart from the between-agent family of
        ``contrasts``. Sets each one's ``p_holm``; returns the family's size."""
        members: list[dict[str, Any]] = []
        for a in self.agents:
            abc = (agents_out[a.name].get("games") or {}).get("abc") or {}
            for d in (abc.get("contrasts") or {}).values():
                if d.get("p") is not None and math.isfinite(d["p"]):
                    members.append(d)
        for d, ph in zip(members, holm([d["p"] for d in members]), strict=True):
            d["p_holm"] = ph
        return len(members)

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
        cx, cy = self.cols[x], self.cols[y]
        both = cx.ok & cy.ok
        out: dict[str, Any] = {}
        none = {"available": False}
        seq = iter(range(1, 1_000_000))

        def binary(mask: BoolArray, vx: FloatArray, vy: FloatArray) -> dict[str, Any]:
            m = mask & both
            return paired_binary(vx[m], vy[m], names, self._rng(pi, next(seq)),
                                 self.ccode[m], B=self.B).to_dict()

        def values(mask: BoolArray, vx: FloatArray, vy: FloatArray) -> dict[str, Any]:
            m = mask & both & np.isfinite(vx) & np.isfinite(vy)
            return paired_values(vx[m], vy[m], names, self._rng(pi, next(seq)),
                                 self.ccode[m], B=self.B).to_dict()

        fbm = self.fbc & both
        out["false_belief_accuracy"] = (
            binary(self.fbc, cx.cor, cy.cor) if fbm.any()
            else none | {"reason": "no shared B1 false-belief items"}
        )
        out["accuracy_by_depth"] = {
            label: binary(self.fbc & self._is("depth", label), cx.cor, cy.cor)
            for label in self.nt_depths if (fbm & self._is("depth", label)).any()
        }
        out["d50"] = self._pair_d50(pi, x, y, names) if fbm.any() else none | {
            "reason": "no shared B1 false-belief items"}
        lx = 1.0 - self.extra[x]["leak"].astype(float)
        ly = 1.0 - self.extra[y]["leak"].astype(float)
        out["leakage_resistance"] = (
            binary(self.fbc, lx, ly) if fbm.any()
            else none | {"reason": "no shared B1 false-belief items"}
        )
        pairs = self.applied_pairs
        okp = pairs[both[pairs[:, 0]] & both[pairs[:, 1]]] if pairs.size else pairs
        if okp.size:
            gx = cx.cor[okp[:, 0]] - cx.cor[okp[:, 1]]
            gy = cy.cor[okp[:, 0]] - cy.cor[okp[:, 1]]
            out["applied_gap"] = paired_values(
                gx, gy, names, self._rng(pi, next(seq)), B=self.B).to_dict() | {
                "definition": "difference of the two applied gaps (belief − behaviour accuracy) "
                "over the stories where all four answers were scored"}
        else:
            out["applied_gap"] = none | {"reason": "no shared belief and behaviour items"}
        out["games_accuracy"] = (
            binary(self.lk, cx.cor, cy.cor) if (self.lk & both).any()
            else none | {"reason": "no shared level-k game items"}
        )
        lsx, lsy = self.extra[x]["log_score"], self.extra[y]["log_score"]
        cm = self.abc & np.isfinite(lsx) & np.isfinite(lsy)
        out["log_score_c"] = (
            values(cm, lsx, lsy) if (cm & both).any()
            else none | {"reason": "no shared C items with a log score"}
        )
        tx, ty = self.extra[x]["triple"], self.extra[y]["triple"]
        tm = np.isfinite(tx) & np.isfinite(ty)
        out["abc_dissociation"] = (
            binary(tm, np.nan_to_num(tx), np.nan_to_num(ty)) if tm.any()
            else none | {"reason": "no shared complete A/B/C scenarios"}
        )
        kq = self.abc & self._is("question", "K")
        out["opponent_type_inference"] = (
            binary(kq, cx.cor, cy.cor) if (kq & both).any()
            else none | {"reason": "no shared opponent-type (K) items"}
        )
        out["agent_prediction_skill"] = none | {
            "reason": "agent-prediction skill comes from the prediction ledger, not run trials"
        }
        if self.rp.any():
            rxx = self.extra[x]["repeated"].exploitation
            rxy = self.extra[y]["repeated"].exploitation
            rm = np.isfinite(rxx) & np.isfinite(rxy)
            out["repeated_exploitation"] = (
                values(rm, rxx, rxy) | {
                    "definition": "mean exploitation over the repeated-game episodes both "
                    "answered where it is defined (same items, same opponent draws)"}
                if (rm & both).any()
                else none | {
                    "reason": "no shared repeated-game episodes with defined exploitation"}
            )
        return out

    def _pair_d50(self, pi: int, x: str, y: str, names: tuple[str, str]) -> dict[str, Any]:
        cx, cy = self.cols[x], self.cols[y]
        p = f"p{pi}."
        mask = cx.ok & cy.ok & self.fbc
        chance = self._chance(mask)
        rx, repx, why = self._d50(p + "dkx", p + "dn", chance)
        ry, repy, _ = self._d50(p + "dky", p + "dn", chance)
        base = {
            names[0]: rx.display() if why is None else rx.display().split(" [")[0],
            names[1]: ry.display() if why is None else ry.display().split(" [")[0],
            "n": rx.n,
            "interval": "paired-bootstrap-percentile-95",
            "test": f"label-permutation test on the D50 difference (B={self.B})",
            "note": "both D50s refitted on the false-belief items both agents answered",
        }
        if why is not None or not math.isfinite(chance):
            return base | {
                "status": "not_estimable", "difference": None, "ci": None, "p": None,
                "interval": None, "test": None,
                "reason": why or "chance level unknown (items do not list their choices)",
            }
        _, p_perm = self._d50_permutation(mask, cx.cor, cy.cor, chance,
                                          self._rng(pi, 0xD50))
        with np.errstate(invalid="ignore"):
            dreps = repx - repy
        if rx.status == "estimated" and ry.status == "estimated":
            assert rx.value is not None and ry.value is not None
            lo, hi, _ = percentile_interval(dreps, LEVEL)
            if math.isfinite(lo) and math.isfinite(hi) and hi <= lo:
                # every shared resample gave the same difference: the agents answered alike
                return base | {"status": "not_estimable", "difference": rx.value - ry.value,
                               "ci": None, "p": None, "interval": None, "test": None,
                               "reason": NO_SPREAD}
            span = self.fb_depths[-1] - self.fb_depths[0]
            ci = [lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None]
            return base | {
                names[0]: rx.value,
                names[1]: ry.value,
                "status": "estimated",
                "difference": rx.value - ry.value,
                "ci": ci,
                "ci_note": None if all(v is not None and abs(v) <= span for v in ci)
                else "an interval end involves a D50 outside the tested depths",
                "p": p_perm,
                "p_holm": None,
            }
        if rx.status == "beyond" and ry.status == "estimated" and rx.lower_bound is not None:
            assert ry.value is not None
            return base | {"status": "bound", "difference": None,
                           "lower_bound": rx.lower_bound - ry.value,
                           "display": f"> {rx.lower_bound - ry.value:.2f}",
                           "p": p_perm, "p_holm": None}
        if ry.status == "beyond" and rx.status == "estimated" and ry.lower_bound is not None:
            assert rx.value is not None
            return base | {"status": "bound", "difference": None,
                           "upper_bound": rx.value - ry.lower_bound,
                           "display": f"< {rx.value - ry.lower_bound:.2f}",
                           "p": p_perm, "p_holm": None}
        return base | {
            "status": "not_estimable",
            "difference": None,
            "p": None,
            "reason": f"D50 is {rx.display()} for {x} and {ry.display()} for {y}",
        }


def analyse(
    data: RunData,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
    matrix: Mapping[str, Any] | None = None,
) -> Analysis:
    """Run every computation for one run; ``.profile`` is the :class:`RunProfile` (a held-out
    run's seed withheld unless ``reveal_held_out``). ``matrix``: the prediction matrix that
    accompanies the run (:func:`reports.matrix_summary.summarise_run`), which gives each
    agent's skill S."""
    return Analysis(
        data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out, matrix=matrix
    )
