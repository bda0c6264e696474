"""NestToM's sections beyond the headline: the degradation slope (depth and length), the
R2-self own-belief leak, accuracy by mechanism and by surface form, the B2 length sweep, error
types by depth and the B4 applied gap."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, NotRequired, TypedDict

import numpy as np
import numpy.typing as npt

from reports._estimates import MIN_N, Contrast, MetricSample, not_estimable_reason, paired_binary
from reports._stats import degradation_slope
from reports.model import AppliedGap, ByFactor, ErrorTypes, LengthSweep, R2Self, Slope
from reports.sections._inputs import AgentInputs, Measured
from reports.sections._resamples import LEVEL

__all__ = ["nesttom_sections"]


def nesttom_sections(inp: AgentInputs) -> Measured:
    """``degradation_slope``, ``r2_self``, ``by_mechanism``, ``by_form``, ``length_sweep``,
    ``error_types_by_depth`` and ``applied_gap``."""
    it = inp.data.items
    slope = _slope(inp)
    applied, samples = _applied(inp)
    return Measured(
        {
            "degradation_slope": slope,
            "r2_self": _r2_self(inp),
            "by_mechanism": _by_factor(inp, it.mechanism, "mechanism"),
            "by_form": _by_factor(inp, it.form, "surface form"),
            "length_sweep": _length_sweep(inp, slope),
            "error_types_by_depth": _error_types(inp),
            "applied_gap": applied,
        },
        samples,
    )


def _slope(inp: AgentInputs) -> Slope:
    """The degradation slope: logit(correct) ~ depth + length over the B1 and B2
    false-belief items (length drops out, with a note, where it does not vary)."""
    d, c = inp.design, inp.cols
    it = inp.data.items
    m = c.ok & d.fit
    if not m.any():
        return Slope(
            status="not_estimable",
            value=None,
            n=0,
            reason="no scored B1/B2 false-belief NestToM items at R1 or deeper",
        )
    codes = d.ccode[m]
    clustered = np.unique(codes).size < codes.size
    res = degradation_slope(
        it.depth_n[m],
        c.cor[m],
        it.length[m],
        codes if clustered else None,
        level=LEVEL,
        min_n=2 * MIN_N,
    ).to_dict()
    if res["value"] is not None and res["n"] < 2 * MIN_N:  # a coefficient, no interval
        res["reason"] = not_estimable_reason(res["n"], "false-belief items", 2 * MIN_N)
    res["interval"] = "wald-cluster-robust-95" if clustered else "wald-95"
    for term in res.get("terms", {}).values():
        term["interval"] = res["interval"]
    res["meaning"] = (
        "change in log-odds of a correct false-belief answer per depth level, "
        "controlling for story length (B1 and B2 items)"
    )
    return Slope.of(res)


def _r2_self(inp: AgentInputs) -> R2Self:
    """R2-self ("what does X think *you* believe?"): accuracy, and how often the answer was
    the answerer's own belief (privileged access not suppressed)."""
    d, c = inp.design, inp.cols
    m = d.r2self & c.ok
    if not m.any():
        return R2Self(available=False, reason="no scored R2-self false-belief B1 items")
    own = inp.ex.own_belief
    known = m & np.isfinite(own)
    ident = known & d.own_identifiable
    out: dict[str, Any] = {
        "available": True,
        "accuracy": d.p(c.cor, m).to_dict(),
    }
    if ident.any():
        out["own_belief_leak"] = d.p(own, ident).to_dict() | {
            "definition": "share of scored R2-self false-belief answers that name the "
            "answerer's own belief (the score's is_own_belief), on the items where that "
            "answer is no other lure (meta ambiguous lists no own_belief tag)",
            "left_out_ambiguous": int((known & ~d.own_identifiable).sum()),
        }
    else:
        out["own_belief_leak"] = {
            "value": None,
            "n": 0,
            "reason": "the R2-self scores carry no is_own_belief detail",
        }
    return R2Self.of(out)


def _by_factor(inp: AgentInputs, factor: npt.NDArray[Any], what: str) -> ByFactor:
    """B1 false-belief accuracy (R1 and deeper) per level of a story factor."""
    d, c = inp.design, inp.cols
    m = d.fbc & c.ok
    levels = sorted({str(v) for v in factor[m].tolist() if v})
    if not levels:
        return ByFactor(available=False, reason=f"the items name no {what}")
    rows = {lev: d.p(c.cor, m & (factor == lev)).to_dict() for lev in levels}
    return ByFactor.of(
        {
            "available": True,
            "false_belief_accuracy": rows,
            "definition": f"B1 false-belief accuracy at R1 and deeper, by {what}",
        }
    )


def _length_sweep(inp: AgentInputs, slope: Slope) -> LengthSweep:
    """B2: accuracy by story length (false and true belief), and the depth + length fit."""
    d, c = inp.design, inp.cols
    it = inp.data.items
    m = d.b2q & c.ok & np.isfinite(it.length)
    if not (d.b2q & np.isfinite(it.length)).any():
        return LengthSweep(available=False, reason="no B2 (length sweep) items in this run")
    by_len: dict[str, dict[str, Any]] = {}
    for belief, bm in (("false", d.fb), ("true", d.tb)):
        lengths = sorted({float(x) for x in it.length[m & bm].tolist()})
        by_len[belief] = {
            f"{v:g}": d.p(c.cor, m & bm & d.is_("length", v)).to_dict() for v in lengths
        }
    terms = slope.terms or {}
    return LengthSweep.of(
        {
            "available": True,
            "accuracy_by_length": by_len,
            "depth": terms.get("depth") or {"value": None, "reason": slope.reason},
            "length": terms.get("length")
            or {"value": None, "reason": slope.reason or "; ".join(slope.notes or ())},
            "model": slope.model,
            "definition": "B2 items by story length; the fit is logit(correct) ~ depth + length "
            "over the B1 and B2 false-belief items, so the depth coefficient is net of length "
            "and the length coefficient (per event) net of depth",
        }
    )


def _error_types(inp: AgentInputs) -> ErrorTypes:
    d, c = inp.design, inp.cols
    out: dict[str, Any] = {}
    for belief in ("false", "true"):
        out[belief] = {}
        for label in d.nt_depths:
            m = c.ok & d.curve & d.is_("belief", belief) & d.is_("depth", label)
            n = int(m.sum())
            if not n:
                continue
            wrong = m & (c.cor != 1.0)
            codes = Counter(("uncoded" if x is None else str(x)) for x in c.prim[wrong].tolist())
            nw = int(wrong.sum())
            out[belief][label] = {
                "n": n,
                "n_wrong": nw,
                "counts": dict(sorted(codes.items())),
                "share_of_wrong": {k: v / nw for k, v in sorted(codes.items())},
                "interval": "none",
            }
    return ErrorTypes.of(out)


def _applied(inp: AgentInputs) -> tuple[AppliedGap, dict[str, MetricSample]]:
    """B4: belief − behaviour accuracy on the same stories (Newcombe paired), per depth."""
    d, c = inp.design, inp.cols
    it = inp.data.items
    if not d.beh.any():
        return AppliedGap(available=False, reason="no behaviour-prediction items in this run"), {}
    pairs = d.applied_pairs
    okp = pairs[c.ok[pairs[:, 0]] & c.ok[pairs[:, 1]]] if pairs.size else pairs
    if okp.size == 0:
        return AppliedGap(
            available=False, reason="no scored belief and behaviour answers on the same stories"
        ), {}
    names = ("belief_accuracy", "behaviour_accuracy")
    gap = paired_binary(c.cor[okp[:, 0]], c.cor[okp[:, 1]], names, inp.rng(0))
    sample = MetricSample(
        gap.difference if gap.difference is not None else math.nan,
        gap.n,
        gap.estimable,
        ci=(gap.lo, gap.hi) if gap.lo is not None and gap.hi is not None else None,
    )
    by_depth: dict[str, dict[str, Any]] = {}
    for label in d.nt_all_depths:
        sel = okp[it.depth[okp[:, 1]] == label]
        if not sel.size:
            continue
        g = paired_binary(c.cor[sel[:, 0]], c.cor[sel[:, 1]], names, inp.rng(0))
        jm = c.ok & d.jud & d.is_("depth", label)
        by_depth[label] = {
            **_gap_json(g),
            "judgment_accuracy": d.p(c.cor, jm).to_dict() if jm.any() else None,
        }
    jm = c.ok & d.jud
    return AppliedGap.of(
        {
            "available": True,
            **_gap_json(gap),
            "judgment_accuracy": float(c.cor[jm].mean()) if jm.any() else None,
            "judgment_n": int(jm.sum()),
            "judgment": d.p(c.cor, jm).to_dict() if jm.any() else None,
            "definition": "belief-question accuracy − behaviour-prediction accuracy on the same "
            "stories, beliefs and depths (positive: knows the belief but does not use it)",
            "by_depth": by_depth,
        }
    ), {"applied_gap": sample}


class _GapJson(TypedDict):
    """Belief − behaviour accuracy as :class:`~reports.model.GapFigures` parses it (the gap
    of the ``applied_gap`` block, and of each of its depths)."""

    value: float | None
    ci: list[float | None] | None
    interval: str | None
    n: int
    belief_accuracy: float | None
    belief_n: int
    behaviour_accuracy: float | None
    behaviour_n: int
    status: str
    reason: NotRequired[str]


def _gap_json(g: Contrast) -> _GapJson:
    out = _GapJson(
        value=g.difference,
        ci=[g.lo, g.hi] if g.lo is not None else None,
        interval=g.interval,
        n=g.n,
        belief_accuracy=g.x,
        belief_n=g.n,
        behaviour_accuracy=g.y,
        behaviour_n=g.n,
        status="estimated" if g.estimable else "not_estimable",
    )
    if g.reason:
        out["reason"] = g.reason
    return out
