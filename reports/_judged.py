"""Stated beliefs, chains and the mentalizing flag of level-k trials from either source: the
agent's answer (the answer tool's belief fields) or the extraction judge's reading of its chain
of thought (seed 000 Appendix D; :mod:`harness.run.judging`). Pure.

Per trial and per signal, the answer's own statement comes first; the judge's reading is used
only where the answer stated none:

- the belief (K_L, best-response consistency and its chance rate, the expected-utility
  variant): the answer has a belief when its score has a ``belief_point`` or a
  ``belief_distribution``;
- the chain (chain consistency and length): when its chain has a value;
- the mentalizing flag: when it is true or false.

A judgement whose reply could not be read contributes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from reports._data import Judged, TrialTable
from reports.model import JudgeCounts, SignalSource

__all__ = ["SIGNAL_KEYS", "judge_counts", "source_of", "stated_signals"]

SIGNAL_KEYS: Mapping[str, tuple[str, ...]] = {
    "belief": ("K_L", "br_consistent", "br_chance", "br_consistent_eu", "eu_chance"),
    "chain": ("chain_consistency", "chain_length"),
    "mentalizing": ("mentalizing",),
}
"""The score details each signal carries."""


def _states(details: Mapping[str, Any], signal: str) -> bool:
    if signal == "belief":
        return (details.get("belief_point") is not None
                or bool(details.get("belief_distribution")))
    if signal == "chain":
        return bool(details.get("chain_length"))
    return isinstance(details.get("mentalizing"), bool)


def _number(v: Any) -> float:
    if isinstance(v, bool | int | float) and math.isfinite(float(v)):
        return float(v)
    return math.nan


def stated_signals(
    trials: TrialTable,
    judgements: Mapping[tuple[str, str], Judged],
    agent: str,
    rows: npt.NDArray[np.int64],
    mask: npt.NDArray[np.bool_],
) -> tuple[dict[str, npt.NDArray[np.float64]], dict[str, npt.NDArray[Any]]]:
    """Per item (``mask``: the agent's scored level-k trials; ``rows[i]`` the trial row of
    item ``i``), each detail of :data:`SIGNAL_KEYS` (nan when absent), and per signal where it
    came from: ``"answer"``, ``"judge"`` or ``""`` (neither stated it)."""
    n = len(mask)
    values = {key: np.full(n, np.nan) for keys in SIGNAL_KEYS.values() for key in keys}
    sources: dict[str, npt.NDArray[Any]] = {}
    for signal in SIGNAL_KEYS:
        sources[signal] = np.full(n, "", dtype=object)
    for i in np.flatnonzero(mask).tolist():
        row = int(rows[i])
        own = trials.details(row)
        judged = judgements.get((agent, trials.item_id[row]))
        theirs = judged.details if judged is not None and judged.status == "ok" else {}
        for signal, keys in SIGNAL_KEYS.items():
            details: Mapping[str, Any]
            if _states(own, signal):
                source, details = "answer", own
            elif theirs and _states(theirs, signal):
                source, details = "judge", theirs
            else:
                source, details = "", own
            sources[signal][i] = source
            for key in keys:
                values[key][i] = _number(details.get(key))
    return values, sources


def source_of(
    sources: npt.NDArray[Any], values: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_]
) -> SignalSource:
    """Which source a figure over ``mask`` used (``answer``, ``judge``, ``answer+judge`` or
    None), and the n from each (trials with a value only)."""
    m = mask & np.isfinite(values)
    answer = int((m & (sources == "answer")).sum())
    judge = int((m & (sources == "judge")).sum())
    used = [name for name, k in (("answer", answer), ("judge", judge)) if k]
    return SignalSource.of({"source": "+".join(used) or None, "answer": answer, "judge": judge})


def judge_counts(
    judgements: Mapping[tuple[str, str], Judged], agent: str, item_ids: Sequence[str] | None = None
) -> JudgeCounts:
    """The judge's counts over the agent's judged trials (``item_ids``: only those items):
    judgements, model calls, cache hits, unreadable replies, ungrounded quotes and dropped
    values, and the judges."""
    mine = [j for (a, item_id), j in judgements.items()
            if a == agent and (item_ids is None or item_id in item_ids)]
    return JudgeCounts.of({
        "judged": len(mine),
        "calls": sum(1 for j in mine if not j.cached),
        "cache_hits": sum(1 for j in mine if j.cached),
        "parse_failures": sum(1 for j in mine if j.status == "parse_error"),
        "ungrounded": sum(j.ungrounded for j in mine),
        "dropped": sum(j.dropped for j in mine),
        "judges": sorted({j.judge for j in mine}),
    })
