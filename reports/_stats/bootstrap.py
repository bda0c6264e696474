"""The cluster bootstrap: whole clusters resampled within strata (:class:`ClusterBootstrap`, its
fast weighted sums, :func:`cluster_bootstrap`, :func:`paired_difference`), and the merging of
strata too small to resample (:func:`collapse_strata`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._stats.arrays import FloatArray, kept_labels
from reports._stats.intervals import Interval, percentile_interval
from reports._stats.pvalues import bootstrap_pvalue

__all__ = [
    "BootstrapSums",
    "ClusterBootstrap",
    "cluster_bootstrap",
    "collapse_strata",
    "paired_difference",
]


def collapse_strata(
    strata: Sequence[tuple[Any, ...]],
    clusters: Sequence[Hashable],
    min_clusters: int = 2,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Merge strata that hold fewer than ``min_clusters`` clusters with their siblings.

    Strata are tuples read as a hierarchy (``("nesttom", "B1", "false", "R3")`` is a child of
    ``("nesttom", "B1", "false")``). While some stratum ``S`` holds too few clusters, every
    stratum under ``S``'s parent becomes the parent: the siblings are resampled together,
    unstratified within the parent. (A stratum of one cluster would otherwise be resampled as
    itself every time and contribute no variance: the zero-width interval of a resampling
    artefact.) Strata are never merged across their first element (the item family): a family
    whose top stratum holds one cluster stays as it is, and callers decide what that means for
    their estimate. Returns the new label of every observation and the parents that absorbed
    their children.
    """
    labels = [tuple(s) for s in strata]
    merged: list[tuple[Any, ...]] = []
    while True:
        members: dict[tuple[Any, ...], set[Hashable]] = {}
        for lab, c in zip(labels, clusters, strict=True):
            members.setdefault(lab, set()).add(c)
        small = sorted(
            (lab for lab, cs in members.items() if len(cs) < min_clusters and len(lab) > 1),
            key=lambda lab: (-len(lab), str(lab)),
        )
        if not small:
            return labels, merged
        parent = small[0][:-1]
        merged.append(parent)
        k = len(parent)
        labels = [lab[:k] if lab[:k] == parent else lab for lab in labels]


class ClusterBootstrap:
    """Resample whole clusters with replacement, within strata, ``B`` times.

    ``clusters`` and ``strata`` give one label per observation (any hashable values). Each
    cluster must lie inside one stratum. Replicate ``b`` draws, in every stratum, as many
    clusters as the stratum has, with replacement; an observation's weight in the replicate is
    the number of times its cluster was drawn.

    The weights are drawn once per stratum from seeds taken from ``rng`` when the object is made,
    so the object is reproducible and :meth:`sums` can be called repeatedly with the same
    replicates (paired contrasts computed in separate calls still share their resamples).

    :meth:`sums` is the fast path: any statistic that is a function of weighted sums (a mean, a
    ratio, a difference of means, counts per depth for a logistic fit, ECE's bin sums...) is
    computed for all replicates at once by one matrix product per stratum.
    """

    def __init__(
        self,
        clusters: Sequence[Hashable] | npt.ArrayLike,
        rng: np.random.Generator,
        *,
        B: int = 2000,
        strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    ):
        if B < 1:
            raise ValueError("B must be at least 1")
        cl: list[Any] = list(clusters)  # type: ignore[arg-type]
        st: list[Any] = [None] * len(cl) if strata is None else list(strata)  # type: ignore[arg-type]
        if len(st) != len(cl):
            raise ValueError("clusters and strata must have one label per observation")
        self.B = B
        self.n_obs = len(cl)
        stratum_code: dict[Hashable, int] = {}
        cluster_code: dict[Hashable, int] = {}
        cluster_stratum: list[int] = []
        obs_cluster = np.empty(self.n_obs, dtype=np.int64)
        for i, (c, s) in enumerate(zip(cl, st, strict=True)):
            sc = stratum_code.setdefault(s, len(stratum_code))
            cc = cluster_code.get(c)
            if cc is None:
                cc = cluster_code[c] = len(cluster_code)
                cluster_stratum.append(sc)
            elif cluster_stratum[cc] != sc:
                raise ValueError(f"cluster {c!r} spans more than one stratum")
            obs_cluster[i] = cc
        self.strata: list[Hashable] = list(stratum_code)
        self.n_clusters = len(cluster_code)
        self.obs_cluster = obs_cluster
        cs = np.asarray(cluster_stratum, dtype=np.int64)
        self.obs_stratum = cs[obs_cluster] if self.n_obs else np.empty(0, dtype=np.int64)
        # per stratum: its clusters (global codes, sorted), and its observations sorted by cluster
        self._clusters_of: list[npt.NDArray[np.int64]] = []
        self._obs_of: list[npt.NDArray[np.int64]] = []
        self._starts_of: list[npt.NDArray[np.int64]] = []
        order = np.lexsort((obs_cluster, self.obs_stratum))
        bounds = np.searchsorted(self.obs_stratum[order], np.arange(len(self.strata) + 1))
        for s in range(len(self.strata)):
            obs = order[bounds[s] : bounds[s + 1]]
            ccodes = obs_cluster[obs]
            starts = np.flatnonzero(np.r_[True, ccodes[1:] != ccodes[:-1]])
            self._obs_of.append(obs)
            self._starts_of.append(starts)
            self._clusters_of.append(ccodes[starts])
        self._seeds = [int(x) for x in rng.integers(0, 2**63 - 1, size=len(self.strata))]
        self._cache: dict[int, npt.NDArray[np.float32]] = {}
        self._cache_budget = 40_000_000  # float32 entries kept (160 MB at most)

    def clusters_in(self, stratum: int) -> int:
        """How many clusters stratum number ``stratum`` holds."""
        return int(self._clusters_of[stratum].size)

    def weights(self, stratum: int) -> npt.NDArray[np.float32]:
        """The (B x clusters-in-stratum) matrix of draw counts for one stratum."""
        w = self._cache.get(stratum)
        if w is not None:
            return w
        c = self.clusters_in(stratum)
        rng = np.random.default_rng(self._seeds[stratum])
        if c == 1:
            w = np.ones((self.B, 1), dtype=np.float32)
        else:
            draws = rng.integers(0, c, size=(self.B, c), dtype=np.int64)
            draws += (np.arange(self.B, dtype=np.int64) * c)[:, None]
            w = np.bincount(draws.ravel(), minlength=self.B * c).astype(np.float32)
            w = w.reshape(self.B, c)
        if w.size <= self._cache_budget:
            self._cache[stratum] = w
            self._cache_budget -= w.size
        return w

    def sums(
        self,
        columns: Mapping[str, npt.ArrayLike],
        *,
        by_stratum: Sequence[str] = (),
    ) -> BootstrapSums:
        """Weighted sums of each column for the full sample and for every replicate.

        ``columns`` maps a name to one value per observation. Names in ``by_stratum`` are also
        kept per stratum (for cell-level statistics); the others only as totals.
        """
        names = list(columns)
        if not names:
            return BootstrapSums(self, {}, {}, {}, {})
        mat = np.empty((self.n_obs, len(names)), dtype=np.float64)
        for j, name in enumerate(names):
            col = np.asarray(columns[name], dtype=np.float64)
            if col.shape != (self.n_obs,):
                raise ValueError(f"column {name!r} has shape {col.shape}, not ({self.n_obs},)")
            mat[:, j] = col
        keep = set(by_stratum)
        point_total = {n: 0.0 for n in names}
        rep_total = {n: np.zeros(self.B) for n in names}
        point_s: dict[str, dict[int, float]] = {n: {} for n in names if n in keep}
        rep_s: dict[str, dict[int, FloatArray]] = {n: {} for n in names if n in keep}
        for s in range(len(self.strata)):
            obs = self._obs_of[s]
            if obs.size == 0:
                continue
            sub = mat[obs]
            nz = np.flatnonzero(np.any(sub != 0.0, axis=0))
            if nz.size == 0:
                continue
            csum = np.add.reduceat(sub[:, nz], self._starts_of[s], axis=0)
            reps = (self.weights(s) @ csum.astype(np.float32)).astype(np.float64)
            pts = csum.sum(axis=0)
            for jj, j in enumerate(nz.tolist()):
                name = names[j]
                point_total[name] += float(pts[jj])
                rep_total[name] += reps[:, jj]
                if name in keep:
                    point_s[name][s] = float(pts[jj])
                    rep_s[name][s] = reps[:, jj]
        return BootstrapSums(self, point_total, rep_total, point_s, rep_s)


@dataclass
class BootstrapSums:
    """Full-sample and replicate sums from :meth:`ClusterBootstrap.sums`."""

    boot: ClusterBootstrap
    point_total: dict[str, float]
    rep_total: dict[str, FloatArray]
    point_stratum: dict[str, dict[int, float]]
    rep_stratum: dict[str, dict[int, FloatArray]]

    def total(self, name: str) -> tuple[float, FloatArray]:
        """(full-sample sum, replicate sums) of a column over all strata."""
        if name not in self.point_total:
            return (0.0, np.zeros(self.boot.B))
        return self.point_total[name], self.rep_total[name]

    def over(self, name: str, strata: Sequence[int]) -> tuple[float, FloatArray]:
        """(full-sample sum, replicate sums) of a ``by_stratum`` column over some strata."""
        pt = 0.0
        rp = np.zeros(self.boot.B)
        ps = self.point_stratum.get(name, {})
        rs = self.rep_stratum.get(name, {})
        for s in strata:
            if s in ps:
                pt += ps[s]
                rp = rp + rs[s]
        return pt, rp


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def cluster_bootstrap(
    values: npt.ArrayLike,
    clusters: Sequence[Hashable] | npt.ArrayLike,
    rng: np.random.Generator,
    stat: Callable[[FloatArray, FloatArray], float] | None = None,
    *,
    B: int = 2000,
    strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    level: float = 0.95,
) -> Interval:
    """Cluster-bootstrap percentile interval of a statistic of ``values``.

    ``stat(values, weights)`` is a *weighted* statistic (weights are each observation's draw
    count in a replicate, all ones for the estimate itself); the default is the weighted mean,
    computed for all replicates at once. A custom ``stat`` is called once per replicate.
    """
    v = np.asarray(values, dtype=float)
    boot = ClusterBootstrap(clusters, rng, B=B, strata=strata)
    label = (
        f"cluster bootstrap {level:.0%} percentile ({boot.n_clusters} clusters"
        f"{', stratified' if strata is not None else ''}, B={B})"
    )
    if stat is None:
        sums = boot.sums({"y": v, "n": np.ones_like(v)})
        y0, yr = sums.total("y")
        n0, nr = sums.total("n")
        reps = _ratio(yr, nr)
        est = y0 / n0 if n0 else math.nan
    else:
        est = float(stat(v, np.ones_like(v)))
        reps = np.empty(B)
        for b in range(B):
            w = np.zeros(boot.n_obs)
            for s in range(len(boot.strata)):
                obs = boot._obs_of[s]
                if obs.size == 0:
                    continue
                per_cluster = boot.weights(s)[b]
                counts = np.diff(np.r_[boot._starts_of[s], obs.size])
                w[obs] = np.repeat(per_cluster, counts)
            reps[b] = stat(v, w)
    lo, hi, _ = percentile_interval(reps, level)
    return Interval(float(est), lo, hi, int(v.size), label, reps)


def paired_difference(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    clusters: Sequence[Hashable] | npt.ArrayLike,
    rng: np.random.Generator,
    *,
    B: int = 2000,
    strata: Sequence[Hashable] | npt.ArrayLike | None = None,
    level: float = 0.95,
) -> Interval:
    """Mean of ``x - y`` over paired observations (the same items), with a cluster-bootstrap
    percentile interval and a two-sided bootstrap p-value for "no difference".

    Pairs where either value is NaN (e.g. one side had an API error) are dropped.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya)
    cl = kept_labels(clusters, keep)
    st = None if strata is None else kept_labels(strata, keep)
    d = xa[keep] - ya[keep]
    res = cluster_bootstrap(d, cl, rng, B=B, strata=st, level=level)
    p = bootstrap_pvalue(res.replicates) if res.replicates is not None else math.nan
    label = "paired " + res.interval
    return Interval(res.value, res.lo, res.hi, res.n, label, res.replicates, p)
