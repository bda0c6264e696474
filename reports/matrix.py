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

**When S is not estimated** (value None, with the reason; issue 24). S's scale runs from the
base (0) to the ceiling (1), so it has one only where the ceiling is clearly above the base. In
a *self cell* it never is: the predictor's own answer is one more sample of the target, so the
projection baseline and the ceiling coincide in expectation (seed 002 §9.2;
:func:`self_skill_reason`), and S is not estimable whenever the cell has a projection baseline.
In any cell with an interval, S is not estimable when the interval of its denominator,
``ceiling − base``, reaches zero (:func:`denominator_reason`: a ratio whose denominator may be
zero has an unbounded confidence set, Fieller's theorem), e.g. a target answering at random.
Neither case has a test of ``S = 0``.

**Intervals** (``hierarchical-bootstrap-95``): each of ``n_boot`` replicates draws n items with
replacement, then, independently for every drawn item, T's K samples with replacement (and the
population's answers with replacement); every figure, S included (its base and ceiling too), is
recomputed from the replicate's records with the same formulas, and the interval is the 2.5 and
97.5 percentiles (order statistics) of the replicates recentred so that their median is the point
estimate. (The engine draws every replicate at once and, since the figures depend on the
resampled samples only through their counts, draws those counts from their exact law: the same
distribution, see :mod:`reports.matrix_bootstrap`.) Recentring is needed because resampling the
K samples makes a resampled mode noisier than the observed one, which shifts top-1 match, the baselines and the ceiling down in every replicate (by several points at
K = 6), and an uncentred interval could miss its own point estimate. S's base is the larger of
two estimated baselines, and a maximum is not smooth where they are equal: when the bootstrap
cannot tell which baseline is larger (their difference's interval reaches zero), S's interval is
the hull of the plug-in's interval and S's intervals with either baseline as the base
(:func:`_skill_interval`). Every interval is Hesterberg's *expanded* percentile interval
(:func:`reports._stats.expanded_level`: the percentiles of a t interval's width on n − 1 degrees
of freedom, 98.3% at 10 items, 95.8% at 50), since plain percentile intervals over few items are
too narrow; S gets one from :data:`SKILL_MIN_N` items. As in :mod:`reports._estimates`, a figure on fewer than
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ledger.scoring import EPSILON, aggregate, default_top1, modal_answers, top1_match
from reports._estimates import MIN_N, not_estimable_reason
from reports._stats import expanded_level, holm, percentile_interval, sign_flip_pvalue
from reports.matrix_bootstrap import bootstrap, ratio
from reports.matrix_records import (
    INTERVAL,
    METRICS,
    NO_BOOTSTRAP_SPREAD,
    PAIRED_INTERVAL,
    SKILL_MIN_N,
    UNDEFINED_SHARE,
    CellStats,
    Contrast,
    Estimate,
    FloatArray,
    ItemRecord,
    SelfAdvantage,
)

__all__ = [
    "INTERVAL",
    "METRICS",
    "NO_BOOTSTRAP_SPREAD",
    "PAIRED_INTERVAL",
    "SECOND_ORDER_METRICS",
    "SECOND_ORDER_PENALTY",
    "SELF_PROJECTION",
    "SKILL_MIN_N",
    "CellStats",
    "Contrast",
    "Estimate",
    "ItemRecord",
    "SelfAdvantage",
    "SkillTerms",
    "accuracy_terms",
    "cell_statistics",
    "denominator_estimate",
    "denominator_reason",
    "distribution_scores",
    "holm_adjust",
    "learning_slope",
    "mean_estimate",
    "paired_contrast",
    "self_advantage",
    "self_skill_reason",
    "skill_terms",
]


def _few_for_skill(n: int) -> str:
    return (f"S gets an interval from {SKILL_MIN_N} items, not {n}: a ratio's percentile "
            "interval on fewer covers the truth too seldom")


def _undefined_reason(share: float) -> str:
    return (f"in {share:.1%} of bootstrap replicates the ceiling is not above the base, so S "
            "has no interval that keeps its coverage")


def _recentred(value: float, replicates: FloatArray) -> FloatArray:
    """``replicates`` shifted so that the median of the finite ones is ``value``."""
    finite = replicates[np.isfinite(replicates)]
    shift = float(np.median(finite)) - value if finite.size else 0.0
    out: FloatArray = replicates - shift
    return out


RANGES: Mapping[str, tuple[float, float]] = {
    "log_score": (-math.inf, 0.0),
    "brier": (0.0, 2.0),
    "top1_accuracy": (0.0, 1.0),
}
"""The values a figure can take: its interval is cut to them (recentring the replicates can
carry an end past them, e.g. a top-1 accuracy's above 1)."""


def _interval(
    replicates: FloatArray, value: float | None, n: int, *, undefined_ok: bool = False,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> Estimate:
    """The percentile interval of ``replicates`` around the point ``value``, within
    ``bounds``."""
    if value is None:
        return Estimate(None, n)
    undefined = float(np.isnan(replicates).mean()) if replicates.size else 1.0
    if undefined > (UNDEFINED_SHARE if undefined_ok else 0.0):
        return Estimate(value, n, reason=_undefined_reason(undefined))
    lo, hi, _ = percentile_interval(_recentred(value, replicates), expanded_level(n))
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return Estimate(value, n, reason=NO_BOOTSTRAP_SPREAD)
    return Estimate(value, n, max(lo, bounds[0]), min(hi, bounds[1]), INTERVAL)


@dataclass(frozen=True)
class SkillTerms:
    """S's terms, ``(acc − max(population, projection)) / (ceiling − that base)``; None where
    the ledger has no value."""

    acc: float | None
    population: float | None
    projection: float | None
    ceiling: float | None

    @classmethod
    def of(cls, agg: Mapping[str, Any]) -> SkillTerms:
        """From :func:`ledger.scoring.aggregate`'s figures (the ledger's JSON form)."""
        sk = agg["skill"]
        return cls(agg["top1_accuracy"]["value"], sk["population_baseline"]["value"],
                   sk["projection_baseline"]["value"], sk["ceiling"]["value"])


def _base_candidates(
    reps: Mapping[str, FloatArray], terms: SkillTerms, n: int
) -> list[tuple[float, FloatArray]] | None:
    """What S's interval must allow for, as (point S, replicates of S): the plug-in (base the
    larger baseline, in each replicate that replicate's larger) and S with each candidate base.

    S's base is the larger of two estimated baselines, and a maximum is not smooth where the
    two are equal: near a tie the plug-in is biased low (the larger of two noisy estimates is
    larger than the larger of their means) and its own replicates do not show it, so their
    percentile interval covers the truth less often than it says (87% [83%, 90%] of 400 runs
    for a predictor of its own answer on the reference agents, 50 items;
    ``bench/bench_matrix_calibration.py``). So each baseline whose difference from the other
    has a bootstrap interval reaching zero (the data cannot tell which is larger) is a
    candidate base; a replicate's S with a candidate uses that replicate's baseline. When one
    baseline is clearly the larger, or only one is known, the plug-in is all there is. None
    when S is undefined."""
    pop, proj = terms.population, terms.projection
    acc, ceil = terms.acc, terms.ceiling
    known = [b for b in (pop, proj) if b is not None]
    if acc is None or ceil is None or not known or ceil <= max(known):
        return None
    plug_in = ((acc - max(known)) / (ceil - max(known)), reps["skill"])
    if pop is None or proj is None:
        return [plug_in]
    diff = _interval(reps["pop"] - reps["proj"], pop - proj, n)
    if diff.lo is not None and diff.hi is not None:
        d_lo, d_hi = diff.lo, diff.hi
    elif diff.reason == NO_BOOTSTRAP_SPREAD:  # the same difference in every replicate
        d_lo = d_hi = pop - proj
    else:  # a baseline unknown in some replicates: which is larger is not known
        d_lo, d_hi = -math.inf, math.inf
    if d_lo > 0 or d_hi < 0:
        return [plug_in]
    return [plug_in, *(
        ((acc - base) / (ceil - base), ratio(reps["acc"], base_reps, reps["ceil"]))
        for base, base_reps in ((pop, reps["pop"]), (proj, reps["proj"]))
    )]


def _hull(value: float | None, n: int, options: Iterable[tuple[float, FloatArray]]) -> Estimate:
    """The hull of the percentile intervals of every (point, replicates) option around
    ``value``; an option without spread counts as its point; no interval when any option has
    too many undefined replicates, or none has spread."""
    lo, hi, spread = math.inf, -math.inf, False
    for point, replicates in options:
        est = _interval(replicates, point, n, undefined_ok=True)
        if est.lo is None or est.hi is None:
            if est.reason != NO_BOOTSTRAP_SPREAD:
                return Estimate(value, n, reason=est.reason)
            lo, hi = min(lo, point), max(hi, point)
            continue
        lo, hi, spread = min(lo, est.lo), max(hi, est.hi), True
    if not spread:
        return Estimate(value, n, reason=NO_BOOTSTRAP_SPREAD)
    return Estimate(value, n, lo, hi, INTERVAL)


def _skill_interval(reps: Mapping[str, FloatArray], value: float | None,
                    terms: SkillTerms, n: int) -> Estimate:
    """S's interval: the hull of the intervals of :func:`_base_candidates`."""
    candidates = _base_candidates(reps, terms, n)
    if candidates is None:
        return _interval(reps["skill"], value, n, undefined_ok=True)
    return _hull(value, n, candidates)


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


def self_skill_reason(agg: Mapping[str, Any]) -> str | None:
    """Why S of a self cell (P predicting a fresh copy of P) is not estimable
    (:data:`SELF_PROJECTION`), or None when the cell has no projection baseline.

    Seed 002 §9.2 measures self-prediction against projection, the predictor's own answer used
    as its prediction, and normalises by the target's test-retest agreement. In a self cell the
    own answer is asked exactly as the target's samples are, so it is one more sample of the
    target: the projection baseline is the target predicting itself by resampling, which is what
    the ceiling measures (§15.2). The two coincide in expectation (up to the mode of K samples
    against that of K − 1), so ``ceiling − base`` is zero or less in expectation and
    ``(acc − base) / (ceiling − base)`` is noise over noise: on reference agents it read 10.0,
    5.0, 4.0, 3.3, 2.7, 2.1, 2.0 and −1.55 over ten seeds, and was undefined in the rest. A
    deterministic agent has ceiling = projection = 1 exactly. ``agg`` is
    :func:`ledger.scoring.aggregate` of the cell."""
    if agg["skill"]["projection_baseline"]["value"] is None:
        return None
    return SELF_PROJECTION


SELF_PROJECTION = (
    "not estimable in a self cell: the predictor's own answer is one more sample of itself, so "
    "the projection baseline and the ceiling coincide in expectation and S's denominator, "
    "ceiling − base, is zero (seed 002 §9.2: self-prediction is measured against projection); "
    "the self-advantage in top-1 and log score says how well it predicts itself"
)
"""The reason S of a self cell with a projection baseline is not estimable."""


def denominator_estimate(reps: Mapping[str, FloatArray], terms: SkillTerms,
                         n: int) -> Estimate | None:
    """S's denominator ``ceiling − base`` (base the larger baseline, in each replicate that
    replicate's larger) with its bootstrap interval; None when S has no base or ceiling."""
    known = [b for b in (terms.population, terms.projection) if b is not None]
    if not known or terms.ceiling is None:
        return None
    point = float(terms.ceiling) - max(known)
    return _interval(reps["ceil"] - np.fmax(reps["pop"], reps["proj"]), point, n,
                     undefined_ok=True)


def denominator_reason(denominator: Estimate | None) -> str | None:
    """Why S is not estimable from its denominator's interval, or None: S = (acc − base) /
    (ceiling − base) is a ratio, and a ratio's confidence set is bounded only when its
    denominator is clearly away from zero (Fieller): when the interval of ceiling − base reaches
    zero (or the bootstrap cannot give one), the point value can be any size (4.11 for a self
    cell of reference agents) and is not reported."""
    if denominator is None or denominator.value is None:
        return None
    d = denominator.value
    if denominator.lo is None or denominator.hi is None:
        if denominator.reason == NO_BOOTSTRAP_SPREAD and d > 0:
            return None  # the same positive denominator in every replicate
        return (f"S's denominator, ceiling − base = {d:.3f}, has no interval "
                f"({denominator.reason}): S = (acc − base) / (ceiling − base) is unbounded")
    if denominator.lo > 0:
        return None
    return (f"S's denominator, ceiling − base = {d:.3f} [{denominator.lo:.3f}, "
            f"{denominator.hi:.3f}], reaches zero: the target is not clearly more consistent "
            "with itself than the baseline is with it, and a ratio whose denominator may be zero "
            "has no bounded interval (Fieller), so S is not estimated")


def cell_statistics(
    records: Sequence[ItemRecord],
    rng: np.random.Generator,
    *,
    n_boot: int = 2000,
    aggregated: Mapping[str, Any] | None = None,
    self_cell: bool = False,
) -> CellStats:
    """Every figure of one cell with its interval, and the test of ``S = 0``. ``aggregated``
    is :func:`ledger.scoring.aggregate` of the records when the caller has it already.

    S is not estimable (value None, with the reason) in a ``self_cell`` with a projection
    baseline (:func:`self_skill_reason`), and, from :data:`~reports._estimates.MIN_N` items,
    when the interval of its denominator reaches zero (:func:`denominator_reason`); then it has
    no test either."""
    agg = (
        aggregated if aggregated is not None else aggregate([r.score_record() for r in records])
    )
    n = len(records)
    sk = agg["skill"]
    pop, proj = sk["population_baseline"]["value"], sk["projection_baseline"]["value"]
    kind = _base_kind(pop, proj)
    values = {m: agg[m]["value"] for m in METRICS}
    denominator: Estimate | None = None
    if n < MIN_N:
        why = not_estimable_reason(n)
        ests = {m: Estimate(values[m], n, reason=why if values[m] is not None else None)
                for m in METRICS}
    else:
        reps = {k: v[0] for k, v in bootstrap([[r] for r in records], rng, n_boot).items()}
        ests = {
            **{m: _interval(reps[key], values[m], n, bounds=RANGES[m])
               for m, key in (("log_score", "log"), ("brier", "brier"),
                              ("top1_accuracy", "acc"))},
            "skill": _skill_interval(reps, values["skill"], SkillTerms.of(agg), n)
            if n >= SKILL_MIN_N else Estimate(values["skill"], n, reason=_few_for_skill(n)),
        }
        ests = {m: e if e.value is not None else Estimate(None, n, reason=agg[m].get("reason"))
                for m, e in ests.items()}
        if values["skill"] is not None:
            denominator = denominator_estimate(reps, SkillTerms.of(agg), n)
    unscaled = (self_skill_reason(agg) if self_cell else None) or (
        denominator_reason(denominator) if values["skill"] is not None else None)
    if unscaled:
        ests["skill"] = Estimate(None, n, reason=unscaled)
    p, test = (None, None)
    if ests["skill"].value is not None and n >= MIN_N:
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
        denominator,
    )


# -- the self-advantage ------------------------------------------------------------------------


def self_advantage(
    target: str,
    cells: Mapping[str, Sequence[ItemRecord]],
    rng: np.random.Generator,
    *,
    n_boot: int = 2000,
    aggregated: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, SelfAdvantage]:
    """The self-advantage of ``target`` per metric (keys of :data:`METRICS`): ``cells`` maps
    each predictor of the target (the target itself included) to its records. Paired over the
    items every predictor was scored on. ``aggregated`` may hold, per predictor,
    :func:`ledger.scoring.aggregate` of its records (used when those are the paired items)."""
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
    aggs = {
        p: aggregated[p]
        if aggregated is not None and p in aggregated
        and [r.item for r in cells[p]] == common
        else aggregate([r.score_record() for r in recs[p]])
        for p in order
    }
    kinds = {
        p: _base_kind(aggs[p]["skill"]["population_baseline"]["value"],
                      aggs[p]["skill"]["projection_baseline"]["value"])
        for p in order
    }
    reps = None if n < MIN_N else bootstrap([[recs[p][i] for p in order] for i in range(n)],
                                             rng, n_boot)
    score_key = {"log_score": "log_score", "brier": "brier", "top1_accuracy": "top1_match"}
    scores = {p: [r.score_record().scores for r in recs[p]] for p in order}
    rep_key = {"log_score": "log", "brier": "brier", "top1_accuracy": "acc", "skill": "skill"}
    out: dict[str, SelfAdvantage] = {}
    unscaled = self_skill_reason(aggs[target])
    for m in METRICS:
        own = aggs[target][m]["value"]
        vals = [aggs[p][m]["value"] for p in others]
        if m == "skill" and unscaled:
            out[m] = SelfAdvantage(m, None, None, None, n, None, None, None, None, None,
                                   unscaled)
            continue
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
        if m == "skill" and n < SKILL_MIN_N:
            est = Estimate(value, n, reason=_few_for_skill(n))
        elif m == "skill":
            est = _skill_advantage_interval(reps, value, [SkillTerms.of(aggs[p]) for p in order],
                                            n)
        else:
            lo_m, hi_m = RANGES[m]
            est = _interval(r[0] - r[1:].mean(axis=0), value, n,
                            bounds=(lo_m - hi_m, hi_m - lo_m))
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


def _skill_advantage_interval(reps: Mapping[str, FloatArray], value: float,
                              terms: Sequence[SkillTerms], n: int) -> Estimate:
    """The interval of S(T→T) − the mean of S(P→T) over the others (rows of ``reps`` in that
    order), allowing every predictor's candidates (:func:`_base_candidates`): each
    candidate's replicates are recentred on its point, and the interval runs from the 2.5th
    percentile of the smallest difference any choice of bases gives in a replicate to the 97.5th
    of the largest (an envelope: one pass per predictor, however many predictors there are),
    widened to the plug-in's interval where that reaches further."""
    rows = [{k: v[j] for k, v in reps.items()} for j in range(len(terms))]
    candidates = [_base_candidates(row, t, n) for row, t in zip(rows, terms, strict=True)]
    r = reps["skill"]
    plug_in = _interval(r[0] - r[1:].mean(axis=0), value, n, undefined_ok=True)
    if plug_in.lo is None or plug_in.hi is None or any(c is None for c in candidates):
        return plug_in
    low, high = [], []
    for options in candidates:
        assert options is not None
        centred = np.array([_recentred(point, replicates) for point, replicates in options])
        low.append(centred.min(axis=0))  # NaN where any option is undefined
        high.append(centred.max(axis=0))
    lo_reps = low[0] - np.mean(high[1:], axis=0)
    hi_reps = high[0] - np.mean(low[1:], axis=0)
    undefined = float(np.isnan(lo_reps).mean())
    if undefined > UNDEFINED_SHARE:
        return Estimate(value, n, reason=_undefined_reason(undefined))
    lo, _, _ = percentile_interval(lo_reps, expanded_level(n))
    _, hi, _ = percentile_interval(hi_reps, expanded_level(n))
    return Estimate(value, n, min(lo, plug_in.lo), max(hi, plug_in.hi), INTERVAL)


def holm_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values in the input order; None (no test) stays None and is
    not counted in the family."""
    adjusted = holm([math.nan if p is None else p for p in pvalues])
    return [None if p is None or math.isnan(a) else a for p, a in zip(pvalues, adjusted,
                                                                       strict=True)]


# -- conditions: the learning curve and the simulate contrast -----------------------------------



def _paired(per_item: FloatArray, rng: np.random.Generator, n_boot: int, what: str) -> Contrast:
    """The mean of ``per_item`` with its item-bootstrap interval and sign-flip test."""
    n = int(per_item.size)
    if n == 0:
        return Contrast(None, 0, reason="no item was scored under both")
    value = float(per_item.mean())
    if n < MIN_N:
        return Contrast(value, n, reason=not_estimable_reason(n, "paired items"))
    draws = rng.integers(0, n, size=(n_boot, n))
    lo, hi, _ = percentile_interval(per_item[draws].mean(axis=1), expanded_level(n))
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


# -- second-order prediction (B9) and past seats (B8) --------------------------------------------

SECOND_ORDER_METRICS = ("brier", "log_score", "total_variation", "top1_match")
"""The figures of a second-order cell, by the keys of :func:`distribution_scores`."""
SECOND_ORDER_PENALTY: Mapping[str, float] = {
    "brier": 2.0,
    "log_score": math.log(EPSILON),
    "total_variation": 1.0,
    "top1_match": 0.0,
}
"""The worst score of each figure: what a second-order prediction with no parseable
distribution is scored (like a first-order prediction never revealed)."""


def distribution_scores(
    predicted: Mapping[str, float], committed: Mapping[str, float]
) -> dict[str, float]:
    """P's predicted distribution ``p`` against Q's committed distribution ``q`` (seed 002
    §15.2 protocol step 5: the ground truth of a second-order prediction is Q's committed
    prediction), over the union of their choices:

    - ``brier``: ``Σ_c (p_c − q_c)²``, the primary figure (lower is better). It is the
      expected Brier score of ``p`` against an answer drawn from ``q`` less that of ``q``
      itself, so it is a strictly proper divergence: 0 exactly when ``p = q``;
    - ``log_score``: ``Σ_c q_c · log max(p_c, ε)``, the expected log score of ``p`` on an
      answer drawn from ``q`` (proper; higher is better, at most ``−H(q)``);
    - ``total_variation``: ``½ Σ_c |p_c − q_c|`` (not proper; reads as a share of mass);
    - ``top1_match``: 1 when both distributions' most probable choices agree (ties to the
      first choice in code-point order), else 0."""
    choices = sorted({*predicted, *committed})
    p = np.array([float(predicted.get(c, 0.0)) for c in choices])
    q = np.array([float(committed.get(c, 0.0)) for c in choices])
    return {
        "brier": float(np.sum((p - q) ** 2)),
        "log_score": float(np.sum(q * np.log(np.maximum(p, EPSILON)))),
        "total_variation": float(0.5 * np.sum(np.abs(p - q))),
        "top1_match": float(default_top1(predicted) == default_top1(committed)),
    }


def mean_estimate(per_item: Mapping[str, float], rng: np.random.Generator, *,
                  n_boot: int = 2000) -> Estimate:
    """The mean of a per-item figure with its item-bootstrap interval (items resampled with
    replacement, :data:`PAIRED_INTERVAL`); no interval under :data:`~reports._estimates.MIN_N`
    items or without spread."""
    values = np.array([per_item[i] for i in sorted(per_item)], dtype=float)
    n = int(values.size)
    if n == 0:
        return Estimate(None, 0, reason="no item was scored")
    value = float(values.mean())
    if n < MIN_N:
        return Estimate(value, n, reason=not_estimable_reason(n))
    lo, hi, _ = percentile_interval(values[rng.integers(0, n, size=(n_boot, n))].mean(axis=1),
                                    expanded_level(n))
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return Estimate(value, n, reason=NO_BOOTSTRAP_SPREAD)
    return Estimate(value, n, lo, hi, PAIRED_INTERVAL)


def skill_terms(records: Sequence[ItemRecord]) -> dict[str, float]:
    """Each item's share of the cell's S: ``(top-1 match − baseline match) / (ceiling −
    base)`` with the cell's baseline and its ceiling − base, so that their mean is S (empty
    when S is undefined). Two cells' terms pair by item (:func:`paired_contrast`), e.g. a
    past seat's S against a fresh copy's (seed 002 B8)."""
    agg = aggregate([r.score_record() for r in records])
    sk = agg["skill"]
    base, ceiling = sk["base"], sk["ceiling"]["value"]
    if sk["value"] is None or base is None or ceiling is None or ceiling <= base:
        return {}
    kind = _base_kind(sk["population_baseline"]["value"], sk["projection_baseline"]["value"])
    num = _numerators(records, kind)
    return {r.item: float(x) / (float(ceiling) - float(base))
            for r, x in zip(records, num, strict=True) if not math.isnan(x)}


def accuracy_terms(records: Sequence[ItemRecord]) -> dict[str, float]:
    """Each item's share of the cell's *relative accuracy*, top-1 accuracy / ceiling (1: as
    good as the target predicting itself by resampling): ``top-1 match / ceiling``, so that
    their mean is the relative accuracy (empty without a positive ceiling). Unlike S it has no
    baseline, so it stays defined on a fresh-copy cell, where the predictor's own answer (the
    projection baseline) is itself a resample of the target and S is 0/0 in expectation."""
    agg = aggregate([r.score_record() for r in records])
    ceiling = agg["skill"]["ceiling"]["value"]
    if ceiling is None or ceiling <= 0:
        return {}
    return {r.item: float(r.score_record().scores["top1_match"]) / float(ceiling)
            for r in records}
