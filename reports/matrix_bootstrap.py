"""The resampling engine of the matrix's hierarchical bootstrap (:mod:`reports.matrix`): every
replicate of every figure of one or more cells at once, from their :class:`ItemRecord`\\ s.
Pure: randomness only from the ``numpy.random.Generator`` passed in."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.scoring import EPSILON, MAX_ANSWERS
from reports.matrix_records import FloatArray, IntArray, ItemRecord

__all__ = ["EXACT_MODE_LIMIT", "bootstrap", "ratio"]

# -- the resampling engine -------------------------------------------------------------------
#
# All replicates at once. A replicate draws n items with replacement (an *occurrence* is one
# drawn item of one replicate), then each occurrence's resampled target answers and population
# answers. Every figure depends on the target's resampled answers only through their counts,
# which are Multinomial(K, the item's observed counts / K), and on the population's only
# through their modal answer. So the engine draws counts, not answers: from an item's exact
# law, enumerated once (every composition of K over the answers it gave, with its multinomial
# probability; for the population, the law of the resampled mode), by inverting its
# distribution function at one uniform per occurrence; or, for an item whose law has more
# outcomes than it has occurrences, by a multinomial draw per occurrence. Each distinct count
# vector is scored once (a row of the table) and occurrences gather their row's figures.

EXACT_MODE_LIMIT = 20_000
"""The most outcomes of a population's resampled counts enumerated for the law of its mode;
beyond it the engine draws the counts of each occurrence."""


@dataclass(frozen=True)
class _Items:
    """The items of one bootstrap, their answers coded 0..m-1 in code-point order per item and
    padded to M = the largest m: what every figure needs, precomputed per item."""

    k: FloatArray
    """(n,) the target's samples per item."""
    counts: FloatArray
    """(n, M) how often the target gave each answer."""
    pop_size: FloatArray
    """(n,) the population's answers per item (0: no population baseline)."""
    pop_counts: FloatArray
    """(n, M) how often the population gave each answer."""
    penalised: npt.NDArray[np.bool_]
    """(n, J) the prediction is penalised (no distribution)."""
    q: FloatArray
    """(n, J, M) the normalised distributions (0 off their support and for penalised rows)."""
    qq: FloatArray
    """(n, J) ``q · q``."""
    log_floored: FloatArray
    """(n, J, M) log of q floored at EPSILON (log EPSILON off the support; 0 on padding)."""
    z_support: FloatArray
    """(n, J) the floored mass on the distribution's support."""
    outside: npt.NDArray[np.bool_]
    """(n, J, M) a real answer of the item that is not in the distribution's support."""
    guess: IntArray
    """(n, J) top-1 codes (0 for penalised rows: never read)."""
    own: IntArray
    """(n, J) own-answer codes, -1 when unknown."""


def _prepare(items: Sequence[Sequence[ItemRecord]]) -> _Items:
    """Code every item's records (one per predictor, in the same order for every item; they
    share the target's samples) and stack them."""
    coded = []
    for records in items:
        first = records[0]
        for r in records[1:]:
            if r.observed != first.observed or r.population != first.population:
                raise ValueError(f"records of item {first.item} do not share the target's samples")
        answers: set[str] = set(first.observed) | set(first.population)
        for r in records:
            answers.update(r.distribution or ())
            answers.update(a for a in (r.top1, r.own_answer) if a is not None)
        coded.append({a: i for i, a in enumerate(sorted(answers))})
    n, j = len(items), len(items[0])
    width = max(len(code) for code in coded)
    k = np.zeros(n)
    counts = np.zeros((n, width))
    pop_size = np.zeros(n)
    pop_counts = np.zeros((n, width))
    penalised = np.zeros((n, j), dtype=bool)
    q = np.zeros((n, j, width))
    log_floored = np.zeros((n, j, width))
    z_support = np.zeros((n, j))
    outside = np.zeros((n, j, width), dtype=bool)
    guess = np.zeros((n, j), dtype=np.int64)
    own = np.full((n, j), -1, dtype=np.int64)
    for i, (records, code) in enumerate(zip(items, coded, strict=True)):
        m = len(code)
        k[i] = len(records[0].observed)
        for a in records[0].observed:
            counts[i, code[a]] += 1
        pop_size[i] = len(records[0].population)
        for a in records[0].population:
            pop_counts[i, code[a]] += 1
        for jj, r in enumerate(records):
            if r.own_answer is not None:
                own[i, jj] = code[r.own_answer]
            if r.distribution is None or r.top1 is None:
                penalised[i, jj] = True
                continue
            total = math.fsum(r.distribution.values())
            support = np.zeros(width, dtype=bool)
            for a, p in r.distribution.items():
                q[i, jj, code[a]] = p / total
                support[code[a]] = True
            floored = np.where(support, np.maximum(q[i, jj], EPSILON), EPSILON)
            log_floored[i, jj, :m] = np.log(floored[:m])
            z_support[i, jj] = floored[support].sum()
            outside[i, jj, :m] = ~support[:m]
            guess[i, jj] = code[r.top1]
    qq = np.einsum("ijm,ijm->ij", q, q)
    return _Items(
        k,
        counts,
        pop_size,
        pop_counts,
        penalised,
        q,
        qq,
        log_floored,
        z_support,
        outside,
        guess,
        own,
    )


@functools.lru_cache(maxsize=256)
def _compositions(k: int, d: int) -> IntArray:
    """Every way to write k as an ordered sum of d ≥ 1 non-negative integers, (C, d)."""
    chosen = list(itertools.combinations(range(k + d - 1), d - 1))
    bars = np.array(chosen, dtype=np.int64).reshape(len(chosen), d - 1)
    ends = np.ones((bars.shape[0], 1), dtype=np.int64)
    edges: IntArray = np.hstack([-ends, bars, (k + d - 1) * ends])
    out: IntArray = (edges[:, 1:] - edges[:, :-1] - 1).astype(np.int64)
    out.flags.writeable = False
    return out


def _outcomes(k: int, d: int) -> int:
    """How many count vectors K = k draws over d answers can give."""
    return 1 if k == 0 else math.comb(k + d - 1, d - 1)


@functools.lru_cache(maxsize=4096)
def _law(pool: tuple[int, ...]) -> tuple[IntArray, FloatArray]:
    """The exact law of the counts of ``sum(pool)`` draws with replacement from a pool with
    these counts per answer: the count vectors (C, len(pool)) and their probabilities
    (read-only: they are cached)."""
    size = sum(pool)
    width = len(pool)
    if size == 0:
        return _frozen(np.zeros((1, width), dtype=np.int64)), _frozen(np.ones(1))
    codes = [c for c, x in enumerate(pool) if x > 0]
    comps = _compositions(size, len(codes))
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, size + 1)))])
    log_p = np.log(np.array([pool[c] for c in codes], dtype=float) / size)
    pmf = np.exp(log_fact[size] - log_fact[comps].sum(axis=1) + comps @ log_p)
    table = np.zeros((comps.shape[0], width), dtype=np.int64)
    table[:, codes] = comps
    return _frozen(table), _frozen(pmf / pmf.sum())


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=4096)
def _mode_law(pool: tuple[int, ...]) -> FloatArray:
    """The law of the modal answer (the first of the tied, in code order) of ``sum(pool)``
    draws with replacement from ``pool``: a probability per answer."""
    table, pmf = _law(pool)
    out: FloatArray = np.bincount(table.argmax(axis=1), weights=pmf, minlength=len(pool)).astype(
        float
    )
    out.flags.writeable = False
    return out


def _multinomial(rng: np.random.Generator, size: FloatArray, counts: FloatArray) -> FloatArray:
    """Per row, the counts of ``size`` draws with replacement from a pool with ``counts``
    (Multinomial(size, counts / size)). The columns are drawn in reverse so that numpy's last
    category, which takes the remainder, is code 0, always a real answer when size > 0, and
    padding (probability 0) can never receive one."""
    pvals = np.zeros(counts.shape)
    np.divide(counts, size[:, None], out=pvals, where=size[:, None] > 0)
    drawn = rng.multinomial(size.astype(np.int64), pvals[:, ::-1])
    out: FloatArray = drawn[:, ::-1].astype(float)
    return out


def _invert(
    keys: FloatArray, item: IntArray, u: FloatArray, start: IntArray, stop: IntArray
) -> IntArray:
    """Categorical draws by inverting distribution functions: ``keys`` holds each item's
    cumulative probabilities (ending at exactly 1) plus the item's index, in the rows
    ``start[i]:stop[i]``; each query (an ``item`` and a uniform ``u``) gets the first row of its
    item whose cumulative exceeds u. The queries are sorted first (searching sorted queries
    is several times faster); the clip guards against ``i + u`` rounding up to ``i + 1``."""
    query = item + u
    order = np.argsort(query)
    found = np.empty(query.size, dtype=np.int64)
    found[order] = np.searchsorted(keys, query[order], side="right")
    out: IntArray = np.clip(found, start[item], stop[item] - 1)
    return out


def _draw_counts(
    rng: np.random.Generator, occ: IntArray, size: FloatArray, pool: FloatArray
) -> tuple[FloatArray, IntArray, IntArray]:
    """The resampled counts of every occurrence (``occ``: its item) as ``(table, item, row)``:
    the distinct count vectors (T, M) scored once, the item of each, and each occurrence's row
    of the table. An item whose law has at most as many outcomes as the item has occurrences
    gets its enumerated law (one uniform per occurrence); the others one multinomial draw per
    occurrence."""
    n = pool.shape[0]
    seen = np.bincount(occ, minlength=n)
    u = rng.random(occ.size)
    tables: list[FloatArray] = []
    keys: list[FloatArray] = []
    owners: list[IntArray] = []
    start = np.zeros(n, dtype=np.int64)
    stop = np.zeros(n, dtype=np.int64)
    exact = np.zeros(n, dtype=bool)
    rows = 0
    for i in range(n):
        counts = tuple(int(x) for x in pool[i])
        if seen[i] == 0 or _outcomes(int(size[i]), sum(x > 0 for x in counts)) > seen[i]:
            continue
        table, pmf = _law(counts)
        cumulative = np.cumsum(pmf)
        cumulative[-1] = 1.0
        exact[i] = True
        start[i], stop[i] = rows, rows + table.shape[0]
        rows = int(stop[i])
        tables.append(table.astype(float))
        keys.append(i + cumulative)
        owners.append(np.full(table.shape[0], i, dtype=np.int64))
    row = np.zeros(occ.size, dtype=np.int64)
    by_law = exact[occ]
    if tables:
        row[by_law] = _invert(np.concatenate(keys), occ[by_law], u[by_law], start, stop)
    drawn = np.flatnonzero(~by_law)
    if drawn.size:
        tables.append(_multinomial(rng, size[occ[drawn]], pool[occ[drawn]]))
        owners.append(occ[drawn])
        row[drawn] = rows + np.arange(drawn.size)
    return np.concatenate(tables), np.concatenate(owners), row


def _draw_modes(
    rng: np.random.Generator, occ: IntArray, size: FloatArray, pool: FloatArray
) -> IntArray:
    """The modal answer (the first of the tied) of every occurrence's resampled population:
    from the item's exact law of the mode when it has at most :data:`EXACT_MODE_LIMIT`
    outcomes, else from a multinomial draw of its counts."""
    n, width = pool.shape
    cumulative = np.ones((n, width))
    exact = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(np.bincount(occ, minlength=n)):
        counts = tuple(int(x) for x in pool[i])
        if _outcomes(int(size[i]), sum(x > 0 for x in counts)) <= EXACT_MODE_LIMIT:
            cumulative[i] = np.cumsum(_mode_law(counts))
            cumulative[i, -1] = 1.0
            exact[i] = True
    start = np.arange(n, dtype=np.int64) * width
    keys = (np.arange(n)[:, None] + cumulative).ravel()
    mode: IntArray = _invert(keys, occ, rng.random(occ.size), start, start + width) - start[occ]
    drawn = np.flatnonzero(~exact[occ])
    if drawn.size:
        mode[drawn] = _multinomial(rng, size[occ[drawn]], pool[occ[drawn]]).argmax(axis=1)
    return mode


def _modal(counts: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each row's largest count and how many answers share it (the row's modes)."""
    best = counts.max(axis=1)
    return best, (counts == best[:, None]).sum(axis=1).astype(float)


def _match(counts: FloatArray, best: FloatArray, modes: FloatArray, guess: IntArray) -> FloatArray:
    """:func:`ledger.scoring.top1_match` of each row's guess against its counts."""
    hit = np.take_along_axis(counts, guess[:, None], axis=1)[:, 0] == best
    out: FloatArray = hit / modes
    return out


def _retest(counts: FloatArray, k: FloatArray) -> FloatArray:
    """:func:`ledger.scoring.retest_agreement` of each row's counts (NaN where K < 2).

    Leaving out one sample of answer a, a is the unique leave-one-out mode only if a is the
    row's unique mode, counted c1 (every other count is then at most c1 − 1), and it shares
    the leave-one-out mode with the answers counted c1 − 1. So the agreement is
    (c1 / K) / (1 + #{c = c1 − 1}) when the mode is unique, else 0. (With K ≥ 2 a unique mode
    has c1 ≥ 2, so answers never given, padding included, are never counted c1 − 1.)"""
    c1, n1 = _modal(counts)
    n2 = (counts == (c1 - 1.0)[:, None]).sum(axis=1)
    out = np.full(k.shape, math.nan)
    np.divide(c1 / (1.0 + n2), k, out=out, where=k >= 2)
    out[(k >= 2) & (n1 != 1)] = 0.0
    return out


def _population_match(
    items: _Items,
    st: Mapping[str, FloatArray],
    table: FloatArray,
    occ: IntArray,
    row: IntArray,
    pop_mode: IntArray,
) -> FloatArray:
    """Each occurrence's population baseline: the top-1 match of its population's modal
    answer ``pop_mode`` against its target counts (``row`` of ``table``, scored by
    :func:`_row_stats` into ``st``); NaN for an item without a population."""
    hit = table[row, pop_mode] == st["best"][row]
    out: FloatArray = np.where(items.pop_size[occ] > 0, hit / st["modes"][row], math.nan)
    return out


def _row_stats(items: _Items, item: IntArray, counts: FloatArray) -> dict[str, FloatArray]:
    """The figures of count vectors: ``item`` (N,) the item of each row, ``counts`` (N, M) the
    target's (resampled) answers. Keys ``acc``, ``log``, ``brier`` (J, N); ``proj`` (J, N, NaN
    when unknown); ``ceil`` (N, NaN when K < 2); each row's ``best`` count and number of
    ``modes``."""
    j = items.guess.shape[1]
    k = items.k[item]
    best, modes = _modal(counts)
    seen = counts > 0
    distinct = seen.sum(axis=1)
    acc = np.zeros((j, item.size))
    log = np.zeros((j, item.size))
    brier = np.zeros((j, item.size))
    proj = np.full((j, item.size), math.nan)
    penalty_log = math.log(EPSILON) - np.log1p((MAX_ANSWERS + distinct) * EPSILON)
    for jj in range(j):
        pen = items.penalised[item, jj]
        z = items.z_support[item, jj] + EPSILON * (seen & items.outside[item, jj]).sum(axis=1)
        z[pen] = 1.0
        log[jj] = np.where(
            pen,
            penalty_log,
            np.einsum("nm,nm->n", counts, items.log_floored[item, jj]) / k - np.log(z),
        )
        brier[jj] = np.where(
            pen,
            2.0,
            items.qq[item, jj] + 1.0 - 2.0 * np.einsum("nm,nm->n", counts, items.q[item, jj]) / k,
        )
        acc[jj] = np.where(pen, 0.0, _match(counts, best, modes, items.guess[item, jj]))
        own = items.own[item, jj]
        proj[jj] = np.where(own >= 0, _match(counts, best, modes, np.maximum(own, 0)), math.nan)
    return {
        "acc": acc,
        "log": log,
        "brier": brier,
        "proj": proj,
        "ceil": _retest(counts, k),
        "best": best,
        "modes": modes,
    }


def _replicate_mean(values: FloatArray, n: int) -> FloatArray:
    """(…, B·n) per-occurrence values, replicate-major → (…, B) means over the known ones (NaN
    where none is known)."""
    shaped = values.reshape(*values.shape[:-1], -1, n)
    known = ~np.isnan(shaped)
    total = np.where(known, shaped, 0.0).sum(axis=-1)
    count = known.sum(axis=-1)
    out = np.full(total.shape, math.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def _skill(acc: FloatArray, pop: FloatArray, proj: FloatArray, ceil: FloatArray) -> FloatArray:
    return ratio(acc, np.fmax(pop, proj), ceil)


def ratio(acc: FloatArray, base: FloatArray, ceil: FloatArray) -> FloatArray:
    """``(acc − base) / (ceil − base)``, NaN where the ceiling is not above the base."""
    denom = ceil - base
    out = np.full(np.broadcast_shapes(acc.shape, base.shape, ceil.shape), math.nan)
    np.divide(acc - base, denom, out=out, where=denom > 0)
    return out


def bootstrap(
    items: Sequence[Sequence[ItemRecord]], rng: np.random.Generator, n_boot: int
) -> dict[str, FloatArray]:
    """Hierarchical bootstrap replicates of every figure: keys ``log``, ``brier``, ``acc``,
    ``skill`` (J, B) for the J predictors of ``items`` (each entry one item's records)."""
    n = len(items)
    prepared = _prepare(items)
    occ = rng.integers(0, n, size=(n_boot, n)).ravel()
    table, owner, row = _draw_counts(rng, occ, prepared.k, prepared.counts)
    pop_mode = _draw_modes(rng, occ, prepared.pop_size, prepared.pop_counts)
    st = _row_stats(prepared, owner, table)
    pop = _population_match(prepared, st, table, occ, row, pop_mode)

    def mean(key: str) -> FloatArray:
        out: FloatArray = st[key][:, row].reshape(-1, n_boot, n).mean(axis=-1)
        return out

    acc = mean("acc")
    pop_mean = _replicate_mean(pop, n)[None, :]
    proj_mean = _replicate_mean(st["proj"][:, row], n)
    ceil_mean = _replicate_mean(st["ceil"][row], n)[None, :]
    return {
        "log": mean("log"),
        "brier": mean("brier"),
        "acc": acc,
        "pop": np.broadcast_to(pop_mean, acc.shape),
        "proj": proj_mean,
        "ceil": np.broadcast_to(ceil_mean, acc.shape),
        "skill": _skill(acc, pop_mean, proj_mean, ceil_mean),
    }
