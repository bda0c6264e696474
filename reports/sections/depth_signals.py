"""The depth signals of the level-k games (``depth_signals``): K_B beside K_L, best-response
and chain consistency, the mentalizing rate, and where each stated signal came from."""

from __future__ import annotations

from typing import Any

import numpy as np

from reports._estimates import proportion
from reports._judged import source_of
from reports._levels import LevelFit
from reports.model import DepthEstimate, DepthSignals, Estimate, SignalSource
from reports.sections._design import BoolArray, FloatArray
from reports.sections._figures import mean_figure
from reports.sections._inputs import AgentInputs, Measured
from reports.sections._resamples import AgentExtra

__all__ = ["depth_signals", "depth_signals_section"]


def _depth_estimate(
    f: LevelFit, what: str, *, unresolved: int, definition: str, source: SignalSource | None = None
) -> DepthEstimate:
    """K_B or K_L: the mean matched depth with its cluster-bootstrap interval when the
    signal identifies a level-k player; its level-k fit, and why there is no depth when
    it does not (:mod:`reports._levels`); ``unresolved`` trials, its definition and, for a
    stated signal, its source."""
    d: dict[str, Any] = {
        "value": f.depth,
        "n": f.matched,
        "ci": None,
        "interval": None,
        "identifiable": f.identifiable,
        "fit": f.fit_model(),
    }
    if f.matched == 0 and f.identifiable is None:
        d |= {"value": None, "status": "not_estimable",
              "reason": f.reason if f.n == 0 else f"no {what} in scores"}  # fmt: skip
    elif f.identifiable is not False and f.depth_ci is not None:
        d |= {"ci": list(f.depth_ci), "status": "estimated", "interval": "cluster-bootstrap-95"}
        if f.reason:
            d["reason"] = f.reason
    else:
        d |= {"status": "not_estimable", "reason": f.reason}
    return DepthEstimate.of(d | {"unresolved": unresolved, "definition": definition}
                            | ({} if source is None else {"source": source.source}))  # fmt: skip


def depth_signals_section(inp: AgentInputs) -> Measured:
    """``depth_signals``: see :func:`depth_signals`."""
    signals = depth_signals(inp.ex, inp.cols.ok & inp.design.lk)
    return Measured({"depth_signals": signals})


def depth_signals(ex: AgentExtra, m_lk: BoolArray) -> DepthSignals:
    """K_B beside K_L (seed 000 Eq. 8, Eq. 9), best-response consistency to the stated belief
    (Eq. 6, and under a stated distribution) against its chance rate, chain consistency
    (Eq. 10) and the mentalizing rate, each with its n, over the agent's level-k trials."""
    n = int(m_lk.sum())
    if n == 0:
        return DepthSignals.of({"available": False, "reason": "no scored level-k trials"})
    kb, kl = ex.K_B, ex.signals["K_L"]
    both = m_lk & np.isfinite(kb) & np.isfinite(kl)

    # where each stated-signal figure came from: the answer's own statement or the judge
    src = ex.signal_sources
    sources = {
        figure: source_of(src[signal], ex.signals[key], m_lk)
        for figure, signal, key in (
            ("K_L", "belief", "K_L"),
            ("br_consistency", "belief", "br_consistent"),
            ("br_consistency_eu", "belief", "br_consistent_eu"),
            ("chain_consistency", "chain", "chain_consistency"),
            ("chain_length", "chain", "chain_length"),
            ("mentalizing", "mentalizing", "mentalizing"),
        )
    }

    def stated(figure: str) -> SignalSource | None:
        return sources.get(figure)

    def mean(values: FloatArray, mask: BoolArray, what: str, figure: str,
             definition: str) -> Estimate:  # fmt: skip
        fig = mean_figure(values, mask)
        d = fig.to_dict()
        if fig.n == 0:
            d["reason"] = f"no {what} in scores"
        source = stated(figure)  # a stated signal's figure says where it came from
        return Estimate.of(
            d | {"definition": definition} | ({} if source is None else {"source": source.source})
        )

    def rate(values: FloatArray, mask: BoolArray, what: str, figure: str,
             definition: str) -> Estimate:  # fmt: skip
        m = mask & np.isfinite(values)
        d: dict[str, Any] = (
            proportion(values[m]).to_dict() if m.any()
            else {"value": None, "n": 0, "reason": f"no {what} in scores"}
        )  # fmt: skip
        source = stated(figure)  # a stated signal's figure says where it came from
        return Estimate.of(
            d | {"definition": definition} | ({} if source is None else {"source": source.source})
        )

    out: dict[str, Any] = {"available": True, "n": n}
    fits = ex.level_fit
    out["K_B"] = _depth_estimate(
        fits["K_B"], "resolved K_B", unresolved=n - int((m_lk & np.isfinite(kb)).sum()),
        definition="mean K_B: the depth whose IDR action is the submitted action",
    )  # fmt: skip
    out["K_L"] = _depth_estimate(
        fits["K_L"], "resolved K_L (no stated belief)",
        unresolved=n - int((m_lk & np.isfinite(kl)).sum()),
        definition="mean K_L: one plus the depth whose IDR action is the stated belief",
        source=stated("K_L"),
    )  # fmt: skip
    out["K_L_minus_K_B"] = mean(
        kl - kb, both, "trial with both signals resolved", "K_L_minus_K_B",
        "mean K_L − K_B over trials where both resolve (> 0: the stated reasoning goes deeper "
        "than the action)",
    )  # fmt: skip
    agree = np.where(both, (kl == kb).astype(float), np.nan)
    out["K_agreement"] = rate(
        agree, both, "trial with both signals resolved", "K_agreement",
        "share of trials with K_L = K_B, over trials where both resolve (an upper estimate: "
        "confused trials resolve less often)",
    )  # fmt: skip
    brc = ex.signals["br_consistent"]
    bm = m_lk & np.isfinite(brc)
    br = rate(brc, m_lk, "stated belief in the action space", "br_consistency",
              "share of trials whose action is in BR(stated belief)")  # fmt: skip
    chance_v = ex.signals["br_chance"][bm & np.isfinite(ex.signals["br_chance"])]
    chance = float(chance_v.mean()) if chance_v.size else None
    out["br_consistency"] = br
    out["br_chance"] = chance
    out["br_consistency_eu"] = rate(
        ex.signals["br_consistent_eu"], m_lk, "stated belief distribution", "br_consistency_eu",
        "share of trials whose action maximises expected utility under the stated belief "
        "distribution",
    )  # fmt: skip
    ci = br.ci
    if br.n == 0 or chance is None:
        flag: bool | None = None
        why = "no action tested against a stated belief"
    elif not ci or ci[0] is None:
        flag, why = None, br.reason or "no interval"
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
    out["chain_consistency"] = mean(
        ex.signals["chain_consistency"], m_lk, "chain of m ≥ 2", "chain_consistency",
        "mean share of consecutive chain steps that are best responses",
    )  # fmt: skip
    out["chain_length"] = mean(ex.signals["chain_length"], m_lk, "chain", "chain_length",
                               "mean number of values in the written chain")  # fmt: skip
    out["mentalizing"] = rate(
        ex.signals["mentalizing"], m_lk, "mentalizing flag", "mentalizing",
        "share of trials whose reasoning has the opponent reasoning about the agent's own "
        "choice (the judge's opponent_models_me / spurious_recursion)",
    )  # fmt: skip
    out["sources"] = sources
    out["judge"] = ex.judge_counts
    return DepthSignals.of(out)
