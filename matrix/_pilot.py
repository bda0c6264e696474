"""The pilot's filter (seed 002 §15.2): which candidates are divergent enough to predict.

§15.2 asks for items "chosen where targets *disagree*": a pilot runs the candidates through every
target and keeps the items with high between-target disagreement and moderate within-target
consistency, "otherwise, everyone predicts everyone by answering the question themselves". This
module applies the filter to the answers the targets gave (:func:`apply_filter`, pure; the
asking is :func:`harness.matrix.pilot.run_pilot`'s). The filter's thresholds and every
candidate's figures travel in a :class:`PilotRecord`, to be stored with the run; when too few
candidates survive, the record's verdict says ``not divergent: <reason>`` and the caller reports
that instead of skill.

**The pilot's figures** (per candidate, over the targets with answers; all in [0, 1]):

- *consistency* of target t: ``W_t = Σ_a n_a(n_a − 1) / (K(K − 1))``, the probability that two of
  its K samples agree (needs K ≥ 2). Close to, not the same as, the ledger's leave-one-out
  ceiling (:func:`ledger.scoring.retest_agreement`).
- *between-target agreement* ``B``: the mean over pairs of targets s ≠ t of
  ``Σ_a p_s(a)·p_t(a)``, the probability that a sample of s equals a sample of t.
- *disagreement* ``D = 1 − B / W`` with ``W`` the mean of the ``W_t`` (clamped at 0): 0 when
  targets resemble each other as much as each resembles itself (then answering the question
  yourself predicts another target as well as it predicts itself: projection wins), 1 when their
  answers never coincide. Unlike a divergence between empirical distributions it is not inflated
  by sampling noise alone: K samples of one distribution give ``E[B] = E[W]``.
- also recorded: the modal disagreement (the chance that two targets' modal answers differ, a tie
  broken at random) and the share of answers outside the answer set (``"other"`` or no
  parseable answer).

**The filter** (:class:`PilotFilter`; defaults in brackets). A candidate is kept when every one of
these holds, and its record lists each that fails:

- at least ``min_targets`` [2] targets, each with at least ``min_samples`` [2] answers;
- ``D ≥ d_min`` [0.3] (``agreement``: targets answer alike) — not checked by a one-target
  pilot (``min_targets`` 1, a matrix of one agent: its W is the target's ``W_t``);
- every target's ``W_t ≥ c_min`` [0.5] (``inconsistent``: some target answers at random, so its
  test-retest ceiling is near any baseline and its skill is noise). A target that is noisy on
  every candidate therefore empties the pilot, and the verdict names it — unless it is
  ``exempt`` [none]: a target inconsistent by design (the ``random`` reference agent, which
  :func:`harness.matrix.runs.plan_matrix_run` exempts) is a calibration point, not a reason to drop
  items;
- the mean ``W ≤ c_max`` [1.0] (``too-consistent``): the seed's "moderate" upper bound. Open by
  default because a deterministic target on a divergent item is still a fair prediction (its
  ceiling is 1) and models at their normal temperature often answer arbitrary questions almost
  deterministically; a pre-registration may lower it;
- the share of answers outside the answer set ``≤ other_max`` [0.5] (``other``: the clusters or
  the choices do not describe what the targets say).

When fewer than ``min_items`` [20] candidates are kept, the record is *not divergent*: its
``verdict`` reads ``not divergent: …`` with the counts per reason, and ``divergent`` is False.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from matrix._base import NO_ANSWER
from matrix._kinds import OTHER, kind_of
from mindledger import family as registry
from mindledger.canonical import content_hash
from mindledger.errors import UserError
from mindledger.items import Item
from mindledger.words import counted

__all__ = [
    "DROP_CODES",
    "METHOD",
    "CandidateFigures",
    "Drop",
    "PilotFilter",
    "PilotRecord",
    "apply_filter",
    "failure_outcome",
]

METHOD = "pilot.v1"
"""Names the figures and the filter rule of the module docstring, recorded with each pilot."""


@dataclass(frozen=True)
class PilotFilter:
    """The pilot's thresholds (see the module docstring)."""

    d_min: float = 0.3
    """Least between-target disagreement D a kept item has."""
    c_min: float = 0.5
    """Least consistency W_t every target has on a kept item."""
    c_max: float = 1.0
    """Most mean consistency W of a kept item (1: no upper bound)."""
    other_max: float = 0.5
    """Most share of answers outside the answer set ("other", no parseable answer)."""
    min_samples: int = 2
    """Fewest answers of each target on an item (consistency needs 2)."""
    min_targets: int = 2
    """Fewest targets with answers on an item (disagreement needs 2). 1: a one-target pilot
    (a matrix of one agent, which predicts only itself), which keeps the items its target
    answers consistently enough for a test-retest ceiling and checks no disagreement."""
    min_items: int = 20
    """Fewest kept items for the candidates to count as divergent."""
    exempt: tuple[str, ...] = ()
    """Targets inconsistent by design (a uniform random reference agrees with itself on
    nothing): their consistency is recorded but not held against ``c_min``, else they would
    drop every candidate. They still count as targets, in D and in the mean W."""

    def __post_init__(self) -> None:
        for name in ("d_min", "c_min", "c_max", "other_max"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UserError(f"pilot threshold {name} must be in [0, 1], not {value}")
        if self.c_min > self.c_max:
            raise UserError(f"pilot threshold c_min ({self.c_min}) is above c_max ({self.c_max})")
        if self.min_samples < 2 or self.min_targets < 1 or self.min_items < 0:
            raise UserError("the pilot needs min_samples ≥ 2, min_targets ≥ 1 and min_items ≥ 0")

    def to_dict(self) -> dict[str, Any]:
        return {
            "d_min": self.d_min,
            "c_min": self.c_min,
            "c_max": self.c_max,
            "other_max": self.other_max,
            "min_samples": self.min_samples,
            "min_targets": self.min_targets,
            "min_items": self.min_items,
            # only when set: the records (and digests) of pilots without exemptions unchanged
            **({"exempt": list(self.exempt)} if self.exempt else {}),
        }


DROP_CODES = ("targets", "samples", "agreement", "inconsistent", "too-consistent", "other")
"""Why a candidate is dropped, in the order the filter checks."""


@dataclass(frozen=True)
class Drop:
    """One reason a candidate was dropped: its code (:data:`DROP_CODES`) and, for a person, the
    figures that broke the threshold."""

    code: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


@dataclass(frozen=True)
class CandidateFigures:
    """One candidate's pilot figures and verdict (None where a figure is undefined)."""

    id: str
    kind: str
    answers: Mapping[str, int]
    """Answers per target."""
    consistency: Mapping[str, float | None]
    """W_t per target."""
    modes: Mapping[str, tuple[str, ...]]
    """Each target's modal answers."""
    disagreement: float | None
    between: float | None
    within: float | None
    consistency_min: float | None
    modal_disagreement: float | None
    outside_share: float | None
    """Share of answers outside the answer set ("other" or no parseable answer)."""
    kept: bool
    drops: tuple[Drop, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "answers": dict(self.answers),
            "consistency": dict(self.consistency),
            "modes": {t: list(m) for t, m in self.modes.items()},
            "disagreement": self.disagreement,
            "between": self.between,
            "within": self.within,
            "consistency_min": self.consistency_min,
            "modal_disagreement": self.modal_disagreement,
            "outside_share": self.outside_share,
            "kept": self.kept,
            "drops": [d.to_dict() for d in self.drops],
        }


@dataclass(frozen=True)
class PilotRecord:
    """What the pilot did: its method, thresholds, targets and K, every candidate's figures, and
    whether enough survived (``divergent``, worded in ``verdict``). JSON form: :meth:`to_dict`."""

    filter: PilotFilter
    targets: tuple[str, ...]
    samples: int
    candidates: tuple[CandidateFigures, ...]
    kept: tuple[str, ...]
    dropped: Mapping[str, int]
    """Candidates dropped per reason code (a candidate may count under several)."""
    by_kind: Mapping[str, Mapping[str, int]]
    """Per kind: ``{"candidates": n, "kept": k}``."""
    divergent: bool
    verdict: str
    errors: Mapping[str, int] = field(default_factory=dict)
    """Target samples lost to API errors, per target."""
    method: str = METHOD

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def n_kept(self) -> int:
        return len(self.kept)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "filter": self.filter.to_dict(),
            "targets": list(self.targets),
            "samples": self.samples,
            "n_candidates": self.n_candidates,
            "n_kept": self.n_kept,
            "kept": list(self.kept),
            "dropped": dict(self.dropped),
            "by_kind": {k: dict(v) for k, v in self.by_kind.items()},
            "divergent": self.divergent,
            "verdict": self.verdict,
            "errors": dict(self.errors),
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PilotRecord:
        """Rebuild a record from :meth:`to_dict` output."""
        return cls(
            filter=PilotFilter(
                **{**data["filter"], "exempt": tuple(data["filter"].get("exempt", ()))}
            ),
            targets=tuple(data["targets"]),
            samples=int(data["samples"]),
            candidates=tuple(
                CandidateFigures(
                    **{
                        **c,
                        "modes": {t: tuple(m) for t, m in c["modes"].items()},
                        "drops": tuple(Drop(**d) for d in c["drops"]),
                    }
                )
                for c in data["candidates"]
            ),
            kept=tuple(data["kept"]),
            dropped=dict(data["dropped"]),
            by_kind={k: dict(v) for k, v in data["by_kind"].items()},
            divergent=bool(data["divergent"]),
            verdict=str(data["verdict"]),
            errors=dict(data["errors"]),
            method=str(data["method"]),
        )

    @property
    def digest(self) -> str:
        """The content hash of :meth:`to_dict` (to store with the run)."""
        return content_hash(self.to_dict())


def _consistency(counts: Counter[str], k: int) -> float:
    return math.fsum(n * (n - 1) for n in counts.values()) / (k * (k - 1))


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _figures(
    item: Item, answers: Mapping[str, Sequence[str]], rule: PilotFilter
) -> CandidateFigures:
    kind = kind_of(item)
    drops: list[Drop] = []
    given = {t: list(a) for t, a in answers.items() if a}
    short = [t for t, a in given.items() if len(a) < rule.min_samples]
    counts = {t: Counter(a) for t, a in given.items()}
    consistency: dict[str, float | None] = {
        t: _consistency(c, len(given[t])) if len(given[t]) >= 2 else None for t, c in counts.items()
    }
    modes: dict[str, tuple[str, ...]] = {}
    for t, c in counts.items():
        best = max(c.values())
        modes[t] = tuple(sorted(a for a, n in c.items() if n == best))
    total = sum(len(a) for a in given.values())
    outside = {OTHER, NO_ANSWER} if item.answer.get("kind") == "open" else {NO_ANSWER}
    outside_share = (
        sum(n for c in counts.values() for a, n in c.items() if a in outside) / total
        if total
        else None
    )
    usable = [t for t in given if len(given[t]) >= rule.min_samples]
    between = within = disagreement = cmin = modal = None
    if len(usable) == 1 == rule.min_targets:  # a one-target pilot: consistency only
        within = cmin = consistency[usable[0]]
    if len(usable) >= 2:
        dists = {t: {a: n / len(given[t]) for a, n in counts[t].items()} for t in usable}
        pairs = list(combinations(usable, 2))
        between = math.fsum(
            math.fsum(p * dists[t].get(a, 0.0) for a, p in dists[s].items()) for s, t in pairs
        ) / len(pairs)
        ws = [consistency[t] for t in usable]
        within = math.fsum(w for w in ws if w is not None) / len(ws)
        cmin = min(w for w in ws if w is not None)
        disagreement = max(0.0, 1.0 - between / within) if within > 0 else None
        modal = 1.0 - math.fsum(
            len(set(modes[s]) & set(modes[t])) / (len(modes[s]) * len(modes[t])) for s, t in pairs
        ) / len(pairs)
    if len(given) < rule.min_targets:
        drops.append(
            Drop("targets", f"{counted(len(given), 'target')} answered; the filter needs {rule.min_targets}")
        )
    if short:
        drops.append(
            Drop(
                "samples",
                ", ".join(f"{t} answered {counted(len(given[t]), 'time')}" for t in short)
                + f" (fewer than {rule.min_samples})",
            )
        )
    compared = usable and len(given) >= max(2, rule.min_targets) and not short
    if compared and (disagreement is None or disagreement < rule.d_min):
        shown = "undefined" if disagreement is None else _fmt(disagreement)
        drops.append(
            Drop(
                "agreement",
                f"disagreement {shown} < d_min {_fmt(rule.d_min)}: the targets answer alike",
            )
        )
    if usable and len(given) >= rule.min_targets and not short:
        assert within is not None and cmin is not None
        low = [
            t for t in usable if t not in rule.exempt and (consistency[t] or 0.0) < rule.c_min
        ]
        if low:
            drops.append(
                Drop(
                    "inconsistent",
                    ", ".join(f"{t} agrees with itself {_fmt(consistency[t] or 0.0)}" for t in low)
                    + f" (< c_min {_fmt(rule.c_min)})",
                )
            )
        if within > rule.c_max:
            drops.append(
                Drop(
                    "too-consistent", f"mean consistency {_fmt(within)} > c_max {_fmt(rule.c_max)}"
                )
            )
    if outside_share is not None and outside_share > rule.other_max:
        drops.append(
            Drop(
                "other",
                f"{_fmt(outside_share)} of the answers are outside the answer set "
                f"(> other_max {_fmt(rule.other_max)})",
            )
        )
    return CandidateFigures(
        id=item.id,
        kind=kind,
        answers={t: len(a) for t, a in given.items()},
        consistency=consistency,
        modes=modes,
        disagreement=disagreement,
        between=between,
        within=within,
        consistency_min=cmin,
        modal_disagreement=modal,
        outside_share=outside_share,
        kept=not drops,
        drops=tuple(drops),
    )


def _verdict(figures: Sequence[CandidateFigures], rule: PilotFilter) -> tuple[bool, str]:
    kept = sum(f.kept for f in figures)
    n = len(figures)
    if kept >= rule.min_items and kept > 0:
        return True, f"divergent: {kept} of {n} candidates kept"
    counts = Counter(d.code for f in figures for d in f.drops)
    why = "; ".join(f"{counts[c]} {c}" for c in DROP_CODES if counts[c])
    reason = f"{kept} of {n} candidates kept (minimum {rule.min_items})"
    if why:
        reason += f"; dropped for {why}"
    noisy = Counter(
        t
        for f in figures
        for t, w in f.consistency.items()
        if w is not None and w < rule.c_min and t not in rule.exempt
    )
    if counts["inconsistent"] and noisy:
        t, k = noisy.most_common(1)[0]
        reason += f"; most often inconsistent: {t} ({k} candidates)"
    return False, f"not divergent: {reason}"


def apply_filter(
    items: Sequence[Item],
    answers: Mapping[str, Mapping[str, Sequence[str]]],
    rule: PilotFilter | None = None,
    *,
    samples: int | None = None,
    errors: Mapping[str, int] | None = None,
) -> tuple[list[Item], PilotRecord]:
    """Keep the candidates the pilot filter passes (see the module docstring). ``answers`` maps
    each target to its recorded answers (cluster labels for open items) by item id; ``samples``
    (K) and ``errors`` are recorded as given. Returns the kept items, in order, and the
    record. Pure."""
    rule = rule or PilotFilter()
    targets = tuple(answers)
    figures = [
        _figures(item, {t: answers[t].get(item.id, ()) for t in targets}, rule) for item in items
    ]
    kept = [item for item, f in zip(items, figures, strict=True) if f.kept]
    by_kind: dict[str, dict[str, int]] = {}
    for f in figures:
        entry = by_kind.setdefault(f.kind, {"candidates": 0, "kept": 0})
        entry["candidates"] += 1
        entry["kept"] += int(f.kept)
    dropped = Counter(d.code for f in figures for d in f.drops)
    divergent, verdict = _verdict(figures, rule)
    k = (
        samples
        if samples is not None
        else max((n for f in figures for n in f.answers.values()), default=0)
    )
    record = PilotRecord(
        filter=rule,
        targets=targets,
        samples=k,
        candidates=tuple(figures),
        kept=tuple(item.id for item in kept),
        dropped={c: dropped[c] for c in DROP_CODES if dropped[c]},
        by_kind=by_kind,
        divergent=divergent,
        verdict=verdict,
        errors=dict(errors or {}),
    )
    return kept, record


def failure_outcome(source: Item, answer: Any) -> str:
    """A failure item's observed answer for one reply to its underlying question ``source``:
    ``"yes"`` when the family's scorer marks ``answer`` correct, else ``"no"`` (no answer, an
    unparseable number)."""
    if answer is None or answer == NO_ANSWER:
        return "no"
    if source.answer.get("kind") == "integer" and isinstance(answer, str):
        try:
            answer = int(answer)
        except ValueError:
            return "no"
    return "yes" if registry.get(source.family).score(source, answer).correct else "no"
