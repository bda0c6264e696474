"""The item-level structure of a run, computed once and shared by every section: which items
each figure counts (masks), the design's strata and clusters, the depth labels in report order,
the paired items of the applied gap, joint accuracy and the A/B/C scenarios."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._data import RunData, depth_sort_key
from reports._estimates import Proportion, proportion
from reports._population import population_plays
from reports._repeated import RepeatedDesign, repeated_design
from reports._stats import collapse_strata

__all__ = [
    "BoolArray",
    "FloatArray",
    "RunDesign",
    "first_finite",
    "ratio",
    "run_design",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """``num / den`` where ``den > 0``, NaN elsewhere."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


def first_finite(values: FloatArray) -> float | None:
    v = values[np.isfinite(values)]
    return float(v[0]) if v.size else None


@dataclass(frozen=True, eq=False)
class Joint:
    """Belief items on a story in (story, depth) order, for joint accuracy: ``order`` the
    items, ``gstart`` where each (story, depth) group starts, ``gid`` each item's group,
    ``story_start`` which groups open a story."""

    order: IntArray
    gstart: IntArray
    gid: IntArray
    story_start: BoolArray


@dataclass(frozen=True, eq=False)
class Abc:
    """Complete A/B/C scenarios (item indices of A, B and C) whose three truths differ, and
    how many scenarios were skipped for equal truths or kept with unknown ones."""

    triples: list[tuple[int, int, int]]
    equal_truths: int
    unknown_truths: int


@dataclass(frozen=True, eq=False)
class RunDesign:
    """Masks over the run's items (one bool per item) and the design's strata and clusters.

    NestToM: ``qbel`` belief questions (NestToM and Hi-ToM), ``fb``/``tb`` false/true belief,
    ``beh`` behaviour and ``jud`` judgment questions, ``main`` not companions, ``r0`` the R0
    reality check, ``curve`` the B1 depth curve (R1 and deeper), ``fbc`` its false-belief
    items, ``tbc`` the true-belief controls, ``b2q`` the B2 length sweep, ``fit`` the items of
    the degradation slope, ``r2self`` the R2-self items. Games: ``abc`` A/B/C/K items,
    ``abc_play``/``abc_llm`` plays and C-llm predictions scored against the run's population,
    ``pending`` both, ``lk`` the level-k items (``lk_excluded`` those left out by design).
    """

    n: int
    nt: BoolArray
    hi: BoolArray
    gm: BoolArray
    qbel: BoolArray
    fb: BoolArray
    tb: BoolArray
    beh: BoolArray
    jud: BoolArray
    main: BoolArray
    r0: BoolArray
    curve: BoolArray
    fbc: BoolArray
    tbc: BoolArray
    b2q: BoolArray
    fit: BoolArray
    r2self: BoolArray
    own_identifiable: BoolArray
    abc: BoolArray
    abc_play: BoolArray
    abc_llm: BoolArray
    pending: BoolArray
    lk_excluded: BoolArray
    lk: BoolArray
    rp_design: RepeatedDesign
    applied_pairs: IntArray
    scode: IntArray
    ccode: IntArray
    singleton: BoolArray
    cluster_labels: list[tuple[Any, ...]]
    strata_labels: list[tuple[Any, ...]]
    collapsed: list[tuple[Any, ...]]
    nt_depths: list[str]
    nt_all_depths: list[str]
    hi_depths: list[str]
    fb_depths: list[float]
    joint: Joint
    abc_set: Abc
    population: dict[str, Any]
    data: RunData
    _masks: dict[tuple[str, Any], BoolArray] = field(default_factory=dict)

    @property
    def rp(self) -> BoolArray:
        return self.rp_design.mask

    def is_(self, column: str, value: Any) -> BoolArray:
        """``items.<column> == value``, computed once per run: every agent's sections ask the
        same masks (at 1,000,000 trials recomputing them was a third of the profile's time)."""
        key = (column, value)
        mask = self._masks.get(key)
        if mask is None:
            mask = np.asarray(getattr(self.data.items, column) == value, dtype=bool)
            mask.setflags(write=False)
            self._masks[key] = mask
        return mask

    def p(self, y: FloatArray, mask: BoolArray) -> Proportion:
        """The proportion of ``y`` over ``mask`` with the interval its clusters and the design's
        strata allow."""
        single = bool(self.singleton[mask].all())
        return proportion(y[mask], None if single else self.ccode[mask], self.scode[mask])

    def chance(self, mask: BoolArray) -> float:
        """The mean of 1/number of choices over ``mask`` (NaN when the items list none)."""
        nc = self.data.items.n_choices[mask]
        nc = nc[np.isfinite(nc) & (nc > 0)]
        return float(np.mean(1.0 / nc)) if nc.size else math.nan

    def depth_n(self, label: str) -> float | None:
        it = self.data.items
        return first_finite(it.depth_n[self.is_("depth", label) & (self.nt | self.hi)])


def _sorted_depths(labels: list[str]) -> list[str]:
    return sorted({d for d in labels if d}, key=depth_sort_key)


def run_design(data: RunData) -> RunDesign:
    """The item-level structure of ``data`` (see :class:`RunDesign`)."""
    it = data.items
    n = len(it)
    fam = it.family
    nt = fam == "nesttom"
    hi = fam == "hitom"
    gm = fam == "games"
    q = it.question
    dn = it.depth_n
    qbel = (nt | hi) & (q == "belief")
    fb = nt & (it.belief == "false")
    tb = nt & (it.belief == "true")
    beh = nt & (q == "behaviour")
    jud = nt & (q == "judgment")
    # the NestToM item sets of seed 002 (see reports.profile's docstring)
    main = nt & (it.selection != "companion")
    deep = np.isfinite(dn) & (dn >= 1) & ~it.reality_check
    r0 = nt & qbel & main & it.reality_check
    curve = nt & qbel & main & (it.block == "B1") & deep
    fbc = curve & fb
    tbc = nt & qbel & main & tb & deep
    b2q = nt & qbel & main & (it.block == "B2") & deep
    fit = nt & qbel & main & fb & deep & ((it.block == "B1") | (it.block == "B2"))
    r2self = fbc & it.r2_self
    # R2-self items whose own-belief answer is no other lure's (nor the right answer)
    own_identifiable = (
        np.fromiter(
            (not any("own_belief" in tag for tag in tags) for tags in it.ambiguous), bool, n
        )
        if len(it.ambiguous) == n
        else np.ones(n, bool)
    )
    abc = gm & np.isin(q, ["A", "B", "C", "K"])
    # C against the run's own LLM population: K plays per agent and a C-llm prediction per
    # scenario, both scored here, against the run's plays (reports._population)
    abc_play = gm & (q == "play")
    abc_llm = gm & (q == "C-llm")
    pending = abc_play | abc_llm
    lk_excluded = gm & ~abc & ~pending & it.excluded
    lk = gm & ~abc & ~pending & ~it.excluded
    rp_design = repeated_design(it)
    rp = rp_design.mask
    # an applied question shares its story's belief question's stratum and cluster
    applied_pairs, belief_block = _applied(data, nt & qbel & main, beh)
    story_block = {int(j): it.block[int(i)] for i, j in applied_pairs.tolist()}
    strata: list[tuple[Any, ...]] = [()] * n
    clusters: list[tuple[Any, ...]] = [()] * n
    for i in range(n):
        iid = it.ids[i]
        if nt[i]:
            role = "companion" if it.selection[i] == "companion" else it.belief[i]
            block = story_block.get(i, it.block[i])
            if it.question[i] == "judgment" and it.story[i]:
                block = belief_block.get((it.story[i], it.belief[i], it.depth[i]), block)
            strata[i] = ("nesttom", block, role, it.depth[i])
            clusters[i] = ("nt", it.story[i] or iid, block, role, it.depth[i])
        elif hi[i]:
            strata[i] = ("hitom", it.depth[i])
            clusters[i] = ("hi", it.story[i] or iid, it.depth[i])
        elif abc[i]:
            strata[i] = ("games-abc", it.game[i])
            clusters[i] = ("abc", it.game[i], it.group[i] or iid)
        elif pending[i]:
            strata[i] = ("games-abc-llm", it.game[i])
            clusters[i] = ("abc-llm", it.game[i], it.group[i] or iid)
        elif gm[i]:
            strata[i] = ("games", it.game[i], it.condition[i])
            if math.isfinite(it.target_depth[i]) and math.isfinite(it.lam[i]):
                clusters[i] = ("g", it.game[i], it.condition[i], it.target_depth[i], it.lam[i])
            else:
                clusters[i] = ("g-item", iid)
        elif rp[i]:
            strata[i] = ("repeated", it.game[i], rp_design.counterfactual[i])
            clusters[i] = ("rp", iid)
        else:
            strata[i] = (str(fam[i]),)
            clusters[i] = ("item", iid)
    scodes: dict[tuple[Any, ...], int] = {}
    scode = np.fromiter((scodes.setdefault(st, len(scodes)) for st in strata), np.int64, n)
    strata_labels, collapsed = collapse_strata(strata, clusters)
    codes: dict[tuple[Any, ...], int] = {}
    ccode = np.fromiter((codes.setdefault(c, len(codes)) for c in clusters), np.int64, n)
    # items alone in their cluster (most are): their proportions need no cluster codes
    singleton = np.bincount(ccode, minlength=len(codes))[ccode] == 1
    return RunDesign(
        n=n,
        nt=nt,
        hi=hi,
        gm=gm,
        qbel=qbel,
        fb=fb,
        tb=tb,
        beh=beh,
        jud=jud,
        main=main,
        r0=r0,
        curve=curve,
        fbc=fbc,
        tbc=tbc,
        b2q=b2q,
        fit=fit,
        r2self=r2self,
        own_identifiable=own_identifiable,
        abc=abc,
        abc_play=abc_play,
        abc_llm=abc_llm,
        pending=pending,
        lk_excluded=lk_excluded,
        lk=lk,
        rp_design=rp_design,
        applied_pairs=applied_pairs,
        scode=scode,
        ccode=ccode,
        singleton=singleton,
        cluster_labels=clusters,
        strata_labels=strata_labels,
        collapsed=collapsed,
        # NestToM depth labels of the B1 curve (R1 and deeper), in report order
        nt_depths=_sorted_depths(it.depth[curve].tolist()),
        nt_all_depths=_sorted_depths(it.depth[nt].tolist()),
        hi_depths=_sorted_depths(it.depth[hi].tolist()),
        fb_depths=sorted({float(x) for x in dn[fbc].tolist()}),
        joint=_joint(data, qbel),
        abc_set=_abc(data, abc),
        population=population_plays(data, abc_play) if abc_llm.any() else {},
        data=data,
    )


def _applied(
    data: RunData, belief_items: BoolArray, beh: BoolArray
) -> tuple[IntArray, dict[tuple[str, str, str], str]]:
    """Pairs (belief item, behaviour item) on the same story, belief type and depth: the two
    sides of the applied gap are the same stories; and each such belief question's block."""
    it = data.items
    belief_of: dict[tuple[str, str, str], int] = {}
    for i in np.flatnonzero(belief_items & (it.story != "")).tolist():
        belief_of.setdefault((it.story[i], it.belief[i], it.depth[i]), i)
    belief_block = {key: it.block[i] for key, i in belief_of.items()}
    pairs: list[tuple[int, int]] = []
    for j in np.flatnonzero(beh & (it.story != "")).tolist():
        b = belief_of.get((it.story[j], it.belief[j], it.depth[j]))
        if b is not None:
            pairs.append((b, j))
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2), belief_block


def _joint(data: RunData, qbel: BoolArray) -> Joint:
    it = data.items
    cand = np.flatnonzero(qbel & (it.story != "") & np.isfinite(it.depth_n))
    empty = np.empty(0, np.int64)
    if cand.size == 0:
        return Joint(cand, empty, empty, np.empty(0, bool))
    skey = [f"{it.family[i]}\x1f{it.story[i]}" for i in cand]
    codes = {k: j for j, k in enumerate(dict.fromkeys(skey))}
    scode = np.asarray([codes[k] for k in skey], dtype=np.int64)
    dn = it.depth_n[cand]
    order = np.lexsort((dn, scode))
    sc, dd = scode[order], dn[order]
    new_group = np.r_[True, (sc[1:] != sc[:-1]) | (dd[1:] != dd[:-1])]
    gstart = np.flatnonzero(new_group)
    gs = sc[gstart]
    return Joint(cand[order], gstart, np.cumsum(new_group) - 1, np.r_[True, gs[1:] != gs[:-1]])


def _abc(data: RunData, abc: BoolArray) -> Abc:
    it = data.items
    groups: dict[tuple[str, str], dict[str, int]] = {}
    for i in np.flatnonzero(abc & (it.group != "")):
        groups.setdefault((it.game[i], it.group[i]), {}).setdefault(it.question[i], int(i))
    triples: list[tuple[int, int, int]] = []
    equal = unknown = 0
    for members in groups.values():
        if not all(q in members for q in "ABC"):
            continue
        a, b, c = members["A"], members["B"], members["C"]
        flags = [it.abc_differ[x] for x in (a, b, c)]
        if any(f is False for f in flags):
            equal += 1
            continue
        if not any(f is True for f in flags):
            truths = [it.truth_answer[x] for x in (a, b, c)]
            if any(t is None for t in truths):
                unknown += 1
            elif len({json.dumps(t, sort_keys=True) for t in truths}) < 3:
                equal += 1
                continue
        triples.append((a, b, c))
    return Abc(triples, equal, unknown)
