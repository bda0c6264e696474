"""Statistics of the cross-model prediction matrix (seed 002 §15.2, §18.1 "agent-prediction
skill S per target"): intervals for every cell and tests for the self-advantage. Pure: no I/O,
no clock, randomness only from the ``numpy.random.Generator`` passed in.

A cell is one (predictor P, target T) pair; its data are :class:`ItemRecord`\\ s, one per item:
P's committed distribution and top-1 guess (None for a penalised prediction: unparsed, rejected),
T's K sampled answers, P's own answer (the projection baseline) and the other targets' answers
to the same item (the population-modal baseline).

**Point estimates** are :func:`ledger.scoring.aggregate`'s, unchanged: log score, Brier and
top-1 match are means over items; ``S = (acc − base) / (ceiling − base)`` with ``base`` the
better of the population-modal and projection baselines (:attr:`CellStats.base_kind` says
which) and ``ceiling`` T's leave-one-out test-retest agreement.

**Intervals** (``hierarchical-bootstrap-95``): each of ``n_boot`` replicates draws n items with
replacement, then, independently for every drawn item, T's K samples with replacement (and the
population's answers with replacement); every figure, S included (its base and ceiling too), is
recomputed from the replicate's records with the same formulas, and the interval is the 2.5 and
97.5 percentiles (order statistics) of the replicates recentred so that their median is the point
estimate: resampling the K samples makes a resampled mode noisier than the observed one, which
shifts top-1 match, the baselines and the ceiling down in every replicate (by several points at
K = 6), and an uncentred interval could miss its own point estimate. As in :mod:`reports._estimates`, a figure on fewer than
:data:`~reports._estimates.MIN_N` items keeps its value but gets no interval and no test
(``status: "not_estimable"`` with the reason), and a bootstrap whose replicates have no spread
gives no interval rather than a zero-width one. S has no interval either when its point value
is undefined (the ceiling is not above the base, …) or when, in more than 2.5% of replicates,
the ceiling is not above the base (the percentile interval would then be conditioned on the
replicates where S exists).

**Tests.** A cell's test is a paired sign-flip permutation test over items of *top-1 match −
the chosen baseline's match* (S's numerator, ``H0: S = 0``). The self-advantage of a target T
(T→T minus the mean over P≠T of P→T, on the items every predictor of T was scored on) gets the
same test over items of the per-item differences (for skill, of S's numerators), and its
interval from one joint hierarchical bootstrap of all T's cells (they share T's samples). The
sign-flip test is exact when there are at most 16 non-zero differences, else Monte Carlo with
``B = n_boot`` and the floor ``1/(B + 1)``. Holm's step-down adjustment (:func:`holm_adjust`)
is applied by the caller over a family (all cells; all self-advantage tests).

**Conditions** (seed 002 §15.2 protocol step 4). A cell's per-item scores under each condition
are paired by item. :func:`learning_slope` is the learning curve's slope over m (the number of
the target's past answers shown; zero-shot is m = 0): the least-squares slope of the per-m
means, which on items scored at every m equals the mean of the per-item slopes, so its interval
is the bootstrap over items of that mean and its test the sign-flip test of the per-item
slopes. :func:`paired_contrast` (simulate − generic) is the mean per-item difference with the
same bootstrap and test. Both need :data:`~reports._estimates.MIN_N` paired items for an
interval and a test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.scoring import (
    EPSILON,
    MAX_ANSWERS,
    ScoreRecord,
    aggregate,
    modal_answers,
    penalty_scores,
    score_prediction,
    top1_match,
)
from reports._estimates import MIN_N, not_estimable_reason
from reports._stats import holm, percentile_interval, sign_flip_pvalue

__all__ = [
    "INTERVAL",
    "METRICS",
    "NO_BOOTSTRAP_SPREAD",
    "CellStats",
    "Contrast",
    "Estimate",
    "ItemRecord",
    "SelfAdvantage",
    "cell_statistics",
    "holm_adjust",
    "learning_slope",
    "paired_contrast",
    "self_advantage",
]

INTERVAL = "hierarchical-bootstrap-95"
"""The name of the interval every figure of the matrix gets."""
METRICS = ("log_score", "brier", "top1_accuracy", "skill")
"""The figures of a cell, by the keys of :func:`ledger.scoring.aggregate`."""
NO_BOOTSTRAP_SPREAD = (
    "every bootstrap replicate gives the same value (the data have no spread): there is no "
    "interval to give"
)
UNDEFINED_SHARE = 0.025
"""Largest share of replicates in which S may be undefined for S still to get an interval."""

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ItemRecord:
    """What the statistics need of one prediction of a cell (one item)."""

    item: str
    observed: tuple[str, ...]
    """The target's sampled answers to the item (K of them)."""
    distribution: Mapping[str, float] | None = None
    """The predictor's committed distribution; None for a penalised prediction."""
    top1: str | None = None
    """The predictor's top-1 guess (None with a penalised prediction)."""
    own_answer: str | None = None
    """The predictor's own answer to the item (projection baseline)."""
    population: tuple[str, ...] = ()
    """The other targets' answers to the item (population-modal baseline)."""

    def score_record(self) -> ScoreRecord:
        """The record :func:`ledger.scoring.aggregate` takes, scored as the ledger scores it."""
        if self.distribution is None or self.top1 is None:
            scores = penalty_scores(self.observed)
        else:
            scores = score_prediction(self.distribution, self.top1, self.observed)
        return ScoreRecord(scores, self.observed, self.own_answer, self.population)


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval, or the reason it has none."""

    value: float | None
    n: int
    lo: float | None = None
    hi: float | None = None
    interval: str | None = None
    reason: str | None = None

    @property
    def estimable(self) -> bool:
        return self.lo is not None and self.reason is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "n": self.n,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "status": "estimated" if self.estimable else "not_estimable",
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class CellStats:
    """Every figure of one (predictor, target) cell."""

    n: int
    log_score: Estimate
    brier: Estimate
    top1_accuracy: Estimate
    skill: Estimate
    base: float | None
    base_kind: str | None
    """``"population"`` (modal answer of the other targets), ``"projection"`` (the predictor's
    own answer) or ``"population = projection"``; None without a baseline."""
    ceiling: float | None
    test: str | None
    p: float | None

    def metric(self, name: str) -> Estimate:
        est: Estimate = getattr(self, name)
        return est

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            **{m: self.metric(m).to_dict() for m in METRICS},
            "base": self.base,
            "base_kind": self.base_kind,
            "ceiling": self.ceiling,
            "test": self.test,
            "p": self.p,
        }


@dataclass(frozen=True)
class SelfAdvantage:
    """``metric(T→T) − mean over P≠T of metric(P→T)`` on the items all were scored on."""

    metric: str
    value: float | None
    own: float | None
    others: float | None
    n: int
    lo: float | None
    hi: float | None
    interval: str | None
    test: str | None
    p: float | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "self": self.own,
            "others": self.others,
            "n": self.n,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "test": self.test,
            "p": self.p,
            "status": "estimated" if self.lo is not None and self.reason is None
            else "not_estimable",
        }
        if self.reason:
            out["reason"] = self.reason
        return out


# -- the resampling engine -------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    """One item of one target, its answers coded 0..m-1 in code-point order, with every
    predictor's prediction of it."""

    m: int
    y: IntArray
    pop: IntArray
    q: FloatArray | None
    """(J, m) normalised distributions; rows of NaN for penalised predictions."""
    in_q: npt.NDArray[np.bool_]
    guess: IntArray
    """(J,) top-1 codes, -1 for penalised predictions."""
    own: IntArray
    """(J,) own-answer codes, -1 when unknown."""


def _prepare(records: Sequence[ItemRecord]) -> _Item:
    """Code one item's records (one per predictor; they share the target's samples)."""
    first = records[0]
    for r in records[1:]:
        if r.observed != first.observed or r.population != first.population:
            raise ValueError(f"records of item {first.item} do not share the target's samples")
    answers: set[str] = set(first.observed) | set(first.population)
    for r in records:
        answers.update(r.distribution or ())
        answers.update(a for a in (r.top1, r.own_answer) if a is not None)
    order = sorted(answers)
    code = {a: i for i, a in enumerate(order)}
    m = len(order)
    q = np.full((len(records), m), math.nan)
    in_q = np.zeros((len(records), m), dtype=bool)
    guess = np.full(len(records), -1, dtype=np.int64)
    own = np.full(len(records), -1, dtype=np.int64)
    for j, r in enumerate(records):
        if r.distribution is not None and r.top1 is not None:
            total = math.fsum(r.distribution.values())
            q[j] = 0.0
            for a, p in r.distribution.items():
                q[j, code[a]] = p / total
                in_q[j, code[a]] = True
            guess[j] = code[r.top1]
        if r.own_answer is not None:
            own[j] = code[r.own_answer]
    return _Item(
        m,
        np.array([code[a] for a in first.observed], dtype=np.int64),
        np.array([code[a] for a in first.population], dtype=np.int64),
        q,
        in_q,
        guess,
        own,
    )


def _counts(codes: IntArray, m: int) -> FloatArray:
    """(R, K) codes → (R, m) counts."""
    out: FloatArray = (codes[..., None] == np.arange(m)).sum(axis=-2).astype(float)
    return out


def _match(counts: FloatArray, guess: IntArray) -> FloatArray:
    """:func:`ledger.scoring.top1_match` of each row's guess (code ≥ 0) against its counts."""
    best = counts.max(axis=1)
    modes = (counts == best[:, None]).sum(axis=1)
    hit = counts[np.arange(counts.shape[0]), guess] == best
    out: FloatArray = hit / modes
    return out


def _retest(counts: FloatArray) -> FloatArray:
    """:func:`ledger.scoring.retest_agreement` of each row's samples (K ≥ 2)."""
    m = counts.shape[1]
    loo = counts[:, None, :] - np.eye(m)[None]  # [r, a, :]: the counts without one a
    best = loo.max(axis=2)
    modes = (loo == best[..., None]).sum(axis=2)
    hit = np.diagonal(loo, axis1=1, axis2=2) == best
    out: FloatArray = (counts * hit / modes).sum(axis=1) / counts.sum(axis=1)
    return out


def _item_stats(it: _Item, idx: IntArray, pidx: IntArray | None) -> dict[str, FloatArray]:
    """Per-occurrence figures of an item from resampling indexes ``idx`` (R, K) into the
    target's samples and ``pidx`` (R, P) into the population's answers. Keys ``acc``, ``log``,
    ``brier``, ``num`` (J, R); ``proj`` (J, R, NaN when unknown); ``pop``, ``ceil`` (R, NaN when
    unknown)."""
    counts = _counts(it.y[idx], it.m)
    r, k = idx.shape
    j = it.guess.size
    acc = np.zeros((j, r))
    log = np.zeros((j, r))
    brier = np.zeros((j, r))
    proj = np.full((j, r), math.nan)
    distinct = (counts > 0).sum(axis=1)
    for jj in range(j):
        if it.guess[jj] < 0 or it.q is None:
            log[jj] = math.log(EPSILON) - np.log1p((MAX_ANSWERS + distinct) * EPSILON)
            brier[jj] = 2.0
        else:
            q = it.q[jj]
            floored = np.where(it.in_q[jj], np.maximum(q, EPSILON), EPSILON)
            z = floored[it.in_q[jj]].sum() + EPSILON * (counts[:, ~it.in_q[jj]] > 0).sum(axis=1)
            log[jj] = counts @ np.log(floored) / k - np.log(z)
            brier[jj] = float(q @ q) + 1.0 - 2.0 * (counts @ q) / k
            acc[jj] = _match(counts, np.full(r, it.guess[jj]))
        if it.own[jj] >= 0:
            proj[jj] = _match(counts, np.full(r, it.own[jj]))
    pop = np.full(r, math.nan)
    if pidx is not None and it.pop.size:
        pmode = _counts(it.pop[pidx], it.m).argmax(axis=1)  # first of the tied = code-point first
        pop = _match(counts, pmode)
    ceil = _retest(counts) if k >= 2 else np.full(r, math.nan)
    return {"acc": acc, "log": log, "brier": brier, "proj": proj, "pop": pop, "ceil": ceil}


def _mean_or_nan(total: FloatArray, count: FloatArray) -> FloatArray:
    out = np.full(total.shape, math.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def _skill(acc: FloatArray, pop: FloatArray, proj: FloatArray, ceil: FloatArray) -> FloatArray:
    base = np.fmax(pop, proj)
    denom = ceil - base
    out = np.full(acc.shape, math.nan)
    np.divide(acc - base, denom, out=out, where=denom > 0)
    return out


def _bootstrap(
    items: Sequence[Sequence[ItemRecord]], rng: np.random.Generator, n_boot: int
) -> dict[str, FloatArray]:
    """Hierarchical bootstrap replicates of every figure: keys ``log``, ``brier``, ``acc``,
    ``skill`` (J, B) for the J predictors of ``items`` (each entry one item's records)."""
    n = len(items)
    prepared = [_prepare(recs) for recs in items]
    j = prepared[0].guess.size
    draws = rng.integers(0, n, size=(n_boot, n))
    flat = draws.ravel()
    rep_of = np.repeat(np.arange(n_boot), n)
    order = np.argsort(flat, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=n))])
    sums = {key: np.zeros((j, n_boot)) for key in ("acc", "log", "brier", "proj", "proj_n")}
    shared = {key: np.zeros(n_boot) for key in ("pop", "pop_n", "ceil", "ceil_n")}
    for i, it in enumerate(prepared):
        reps = rep_of[order[bounds[i] : bounds[i + 1]]]
        if reps.size == 0:
            continue
        idx = rng.integers(0, it.y.size, size=(reps.size, it.y.size))
        pidx = rng.integers(0, it.pop.size, size=(reps.size, it.pop.size)) if it.pop.size else None
        st = _item_stats(it, idx, pidx)
        for jj in range(j):
            for key in ("acc", "log", "brier"):
                sums[key][jj] += np.bincount(reps, weights=st[key][jj], minlength=n_boot)
            known = ~np.isnan(st["proj"][jj])
            sums["proj"][jj] += np.bincount(
                reps[known], weights=st["proj"][jj][known], minlength=n_boot
            )
            sums["proj_n"][jj] += np.bincount(reps[known], minlength=n_boot)
        for key in ("pop", "ceil"):
            known = ~np.isnan(st[key])
            shared[key] += np.bincount(reps[known], weights=st[key][known], minlength=n_boot)
            shared[key + "_n"] += np.bincount(reps[known], minlength=n_boot)
    acc = sums["acc"] / n
    pop = _mean_or_nan(shared["pop"], shared["pop_n"])
    ceil = _mean_or_nan(shared["ceil"], shared["ceil_n"])
    proj = _mean_or_nan(sums["proj"], sums["proj_n"])
    return {
        "log": sums["log"] / n,
        "brier": sums["brier"] / n,
        "acc": acc,
        "skill": _skill(acc, pop[None, :], proj, ceil[None, :]),
    }


def _interval(
    replicates: FloatArray, value: float | None, n: int, *, undefined_ok: bool = False
) -> Estimate:
    """The percentile interval of ``replicates`` around the point ``value``."""
    if value is None:
        return Estimate(None, n)
    undefined = float(np.isnan(replicates).mean()) if replicates.size else 1.0
    if undefined > (UNDEFINED_SHARE if undefined_ok else 0.0):
        return Estimate(
            value,
            n,
            reason=f"in {undefined:.1%} of bootstrap replicates the ceiling is not above the "
            "base, so S has no interval that keeps its coverage",
        )
    finite = replicates[np.isfinite(replicates)]
    shift = float(np.median(finite)) - value if finite.size else 0.0
    lo, hi, _ = percentile_interval(replicates - shift)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return Estimate(value, n, reason=NO_BOOTSTRAP_SPREAD)
    return Estimate(value, n, lo, hi, INTERVAL)


# -- a cell ----------------------------------------------------------------------------------


def _base_kind(pop: float | None, proj: float | None) -> str | None:
    if pop is None and proj is None:
        return None
    if proj is None or (pop is not None and pop > proj):
        return "population"
    if pop is None or proj > pop:
        return "projection"
    return "population = projection"


def _numerators(records: Sequence[ItemRecord], kind: str | None) -> FloatArray:
    """Per item: top-1 match − the ``kind`` baseline's match (NaN where that baseline is
    unknown). With tied baselines, the projection's (the predictor's own answer)."""
    out = np.full(len(records), math.nan)
    for i, r in enumerate(records):
        acc = 0.0 if r.distribution is None or r.top1 is None else top1_match(r.top1, r.observed)
        if kind == "population":
            if r.population:
                out[i] = acc - top1_match(modal_answers(r.population)[0], r.observed)
        elif kind is not None and r.own_answer is not None:
            out[i] = acc - top1_match(r.own_answer, r.observed)
    return out


def _sign_flip(d: FloatArray, rng: np.random.Generator, n_boot: int, what: str) -> tuple[
    float | None, str | None
]:
    d = d[~np.isnan(d)]
    if d.size < MIN_N:
        return None, None
    p, how = sign_flip_pvalue(d, rng, B=n_boot)
    return p, f"sign-flip permutation over items of {what} ({how})"


def cell_statistics(
    records: Sequence[ItemRecord], rng: np.random.Generator, *, n_boot: int = 2000
) -> CellStats:
    """Every figure of one cell with its interval, and the test of ``S = 0``."""
    agg = aggregate([r.score_record() for r in records])
    n = len(records)
    sk = agg["skill"]
    pop, proj = sk["population_baseline"]["value"], sk["projection_baseline"]["value"]
    kind = _base_kind(pop, proj)
    values = {m: agg[m]["value"] for m in METRICS}
    if n < MIN_N:
        why = not_estimable_reason(n)
        ests = {m: Estimate(values[m], n, reason=why if values[m] is not None else None)
                for m in METRICS}
        p, test = None, None
    else:
        reps = _bootstrap([[r] for r in records], rng, n_boot)
        ests = {
            "log_score": _interval(reps["log"][0], values["log_score"], n),
            "brier": _interval(reps["brier"][0], values["brier"], n),
            "top1_accuracy": _interval(reps["acc"][0], values["top1_accuracy"], n),
            "skill": _interval(reps["skill"][0], values["skill"], n, undefined_ok=True),
        }
        ests = {m: e if e.value is not None else Estimate(None, n, reason=agg[m].get("reason"))
                for m, e in ests.items()}
        p, test = (None, None)
        if values["skill"] is not None:
            p, test = _sign_flip(_numerators(records, kind), rng, n_boot,
                                 "top-1 match − baseline match (H0: S = 0)")
    return CellStats(
        n,
        ests["log_score"],
        ests["brier"],
        ests["top1_accuracy"],
        ests["skill"],
        sk["base"],
        kind,
        sk["ceiling"]["value"],
        test,
        p,
    )


# -- the self-advantage ------------------------------------------------------------------------


def self_advantage(
    target: str,
    cells: Mapping[str, Sequence[ItemRecord]],
    rng: np.random.Generator,
    *,
    n_boot: int = 2000,
) -> dict[str, SelfAdvantage]:
    """The self-advantage of ``target`` per metric (keys of :data:`METRICS`): ``cells`` maps
    each predictor of the target (the target itself included) to its records. Paired over the
    items every predictor was scored on."""
    others = [p for p in cells if p != target]

    def none(reason: str, n: int = 0) -> dict[str, SelfAdvantage]:
        return {m: SelfAdvantage(m, None, None, None, n, None, None, None, None, None, reason)
                for m in METRICS}

    if target not in cells:
        return none(f"{target} did not predict itself")
    if not others:
        return none("no other predictor of this target")
    by_item = {p: {r.item: r for r in recs} for p, recs in cells.items()}
    order = [target, *others]
    common = [i for i in by_item[target] if all(i in by_item[p] for p in others)]
    n = len(common)
    if n == 0:
        return none("no item on which every predictor of this target was scored")
    recs = {p: [by_item[p][i] for i in common] for p in order}
    aggs = {p: aggregate([r.score_record() for r in recs[p]]) for p in order}
    kinds = {
        p: _base_kind(aggs[p]["skill"]["population_baseline"]["value"],
                      aggs[p]["skill"]["projection_baseline"]["value"])
        for p in order
    }
    reps = None if n < MIN_N else _bootstrap([[recs[p][i] for p in order] for i in range(n)],
                                             rng, n_boot)
    score_key = {"log_score": "log_score", "brier": "brier", "top1_accuracy": "top1_match"}
    scores = {p: [r.score_record().scores for r in recs[p]] for p in order}
    rep_key = {"log_score": "log", "brier": "brier", "top1_accuracy": "acc", "skill": "skill"}
    out: dict[str, SelfAdvantage] = {}
    for m in METRICS:
        own = aggs[target][m]["value"]
        vals = [aggs[p][m]["value"] for p in others]
        if own is None:
            out[m] = SelfAdvantage(m, None, None, None, n, None, None, None, None, None,
                                   f"{target} predicting itself has no {m}: "
                                   + str(aggs[target][m].get("reason")))
            continue
        if any(v is None for v in vals):
            missing = [p for p, v in zip(others, vals, strict=True) if v is None]
            out[m] = SelfAdvantage(m, None, own, None, n, None, None, None, None, None,
                                   f"no {m} for {', '.join(missing)} predicting {target}")
            continue
        mean_other = math.fsum(float(v) for v in vals) / len(vals)
        value = float(own) - mean_other
        if reps is None:
            out[m] = SelfAdvantage(m, value, float(own), mean_other, n, None, None, None, None,
                                   None, not_estimable_reason(n, "paired items"))
            continue
        r = reps[rep_key[m]]
        est = _interval(r[0] - r[1:].mean(axis=0), value, n, undefined_ok=m == "skill")
        if m == "skill":
            diffs = _numerators(recs[target], kinds[target]) - np.mean(
                [_numerators(recs[p], kinds[p]) for p in others], axis=0)
            what = "S's numerator (top-1 match − the cell's baseline match) self − others"
        else:
            key = score_key[m]
            diffs = np.array([float(scores[target][i][key])
                              - math.fsum(float(scores[p][i][key]) for p in others) / len(others)
                              for i in range(n)])
            what = f"{m} self − mean of others"
        p, test = _sign_flip(diffs, rng, n_boot, what)
        out[m] = SelfAdvantage(m, value, float(own), mean_other, n, est.lo, est.hi, est.interval,
                               test, p, est.reason)
    return out


def holm_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values in the input order; None (no test) stays None and is
    not counted in the family."""
    adjusted = holm([math.nan if p is None else p for p in pvalues])
    return [None if p is None or math.isnan(a) else a for p, a in zip(pvalues, adjusted,
                                                                       strict=True)]


# -- conditions: the learning curve and the simulate contrast -----------------------------------


@dataclass(frozen=True)
class Contrast:
    """A paired figure over items (a slope or a difference) with its interval and test."""

    value: float | None
    n: int
    lo: float | None = None
    hi: float | None = None
    interval: str | None = None
    test: str | None = None
    p: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "n": self.n,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "interval": self.interval,
            "test": self.test,
            "p": self.p,
            "status": "estimated" if self.lo is not None and self.reason is None
            else "not_estimable",
        }
        if self.reason:
            out["reason"] = self.reason
        return out


PAIRED_INTERVAL = "item-bootstrap-95"
"""The interval of a paired figure over items: items resampled with replacement."""


def _paired(per_item: FloatArray, rng: np.random.Generator, n_boot: int, what: str) -> Contrast:
    """The mean of ``per_item`` with its item-bootstrap interval and sign-flip test."""
    n = int(per_item.size)
    if n == 0:
        return Contrast(None, 0, reason="no item was scored under both")
    value = float(per_item.mean())
    if n < MIN_N:
        return Contrast(value, n, reason=not_estimable_reason(n, "paired items"))
    draws = rng.integers(0, n, size=(n_boot, n))
    lo, hi, _ = percentile_interval(per_item[draws].mean(axis=1))
    p, test = _sign_flip(per_item, rng, n_boot, what)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return Contrast(value, n, test=test, p=p, reason=NO_BOOTSTRAP_SPREAD)
    return Contrast(value, n, lo, hi, PAIRED_INTERVAL, test, p)


def learning_slope(
    curve: Mapping[int, Mapping[str, float]], rng: np.random.Generator, *, n_boot: int = 2000
) -> Contrast:
    """The slope over m of a per-item figure: ``curve[m]`` maps item ids to the figure with m
    past answers shown. On the items scored at every m (see the module docstring); undefined
    with fewer than two values of m."""
    ms = sorted(curve)
    if len(ms) < 2:
        return Contrast(None, 0, reason="a slope needs at least two values of m")
    common = sorted(set.intersection(*(set(curve[m]) for m in ms)))
    x = np.array(ms, dtype=float)
    xc = x - x.mean()
    y = np.array([[curve[m][i] for m in ms] for i in common], dtype=float).reshape(-1, len(ms))
    slopes: FloatArray = (y - y.mean(axis=1, keepdims=True)) @ xc / float(xc @ xc)
    return _paired(slopes, rng, n_boot, "per-item slopes over m (H0: slope = 0)")


def paired_contrast(
    treated: Mapping[str, float],
    control: Mapping[str, float],
    rng: np.random.Generator,
    *,
    n_boot: int = 2000,
) -> Contrast:
    """``treated − control`` of a per-item figure, paired over the items both have (e.g.
    simulate − zero-shot)."""
    common = sorted(set(treated) & set(control))
    d = np.array([treated[i] - control[i] for i in common], dtype=float)
    return _paired(d, rng, n_boot, "per-item differences (H0: no difference)")
