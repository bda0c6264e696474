"""The paired contrasts of a run (agent − control, full − ablated): every metric's paired
difference with its interval and test, what each agent's ``minus_control`` and
``ablation_credit`` hold, and the Holm family of the A − B and B − C contrasts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from reports._estimates import NO_SPREAD, paired_binary, paired_values
from reports._stats import holm, percentile_interval
from reports.model import (
    Contrast,
    ContrastFigure,
    ContrastMetrics,
    ContrastSection,
    SameAnswers,
)
from reports.sections._design import BoolArray, FloatArray
from reports.sections._inputs import RunInputs
from reports.sections._resamples import LEVEL, d50, d50_permutation

__all__ = ["AgentContrasts", "PairedContrasts", "paired_contrasts"]


@dataclass(frozen=True)
class AgentContrasts:
    """What one agent's profile holds of the paired contrasts: ``minus_control`` (the first
    control's), ``ablation_credit`` (by module) and ``other_controls`` (further controls, by
    name; None when there are none)."""

    minus_control: ContrastSection
    ablation_credit: Mapping[str, ContrastSection]
    other_controls: Mapping[str, ContrastSection] | None = None


@dataclass(frozen=True)
class PairedContrasts:
    """Every agent's contrast blocks and the testable contrasts, Holm-adjusted over all of them
    (each metric's ``p_holm`` in the blocks too); ``m`` is the family's size."""

    by_agent: Mapping[str, AgentContrasts]
    contrasts: list[Contrast]
    m: int


def paired_contrasts(run: RunInputs, valid: Mapping[str, bool | None]) -> PairedContrasts:
    """The run's paired contrasts (agent − control, full − ablated); ``valid``: each agent's
    validity (a contrast with an invalid side says so)."""
    minus: dict[str, Any] = {}
    for a in run.agents:
        if a.role in ("control", "reference", "ablation"):
            minus[a.name] = {
                "available": False,
                "reason": f"{a.name} is a {a.role} agent: base-model subtraction applies "
                "to agents under test",
            }
        else:
            minus[a.name] = {
                "available": False,
                "reason": f"no control agent for {a.name} in this run",
            }
    credit: dict[str, dict[str, Any]] = {a.name: {} for a in run.agents}
    others: dict[str, dict[str, Any]] = {}
    blocks: list[tuple[dict[str, Any], list[tuple[str, ContrastFigure]]]] = []
    found: list[dict[str, Any]] = []
    seen_control: set[str] = set()
    for pi, (x, y, kind, module) in enumerate(run.res.pairs):
        names = ("agent", "control") if kind == "minus_control" else ("full", "ablated")
        metrics = _pair_metrics(run, pi, x, y, names)
        block: dict[str, Any] = {
            "available": True,
            "direction": f"{x} − {y}",
            "interval": "each metric names its interval and test",
            "metrics": metrics,
        }
        block["same_answers"] = _same_answers(run, x, y)
        if valid.get(x) is False or valid.get(y) is False:
            block["note"] = (
                "at least one side failed the true-belief control rule; false-belief "
                "contrasts are not valid evidence"
            )
        if kind == "minus_control":
            if x in seen_control:  # a further control: shown, not in the Holm family
                others.setdefault(x, {})[y] = block | {"control": y}
                continue
            seen_control.add(x)
            block = minus[x] = {"control": y} | block
        else:
            assert module is not None
            block = credit[x][module] = {"ablation_agent": y} | block
        tested = [(metric, d) for metric, d in metrics.flat()
                  if d.p is not None and math.isfinite(d.p)]  # fmt: skip
        blocks.append((block, tested))
        found += [
            {"kind": kind, "agent": x, "other": y, "module": module, "metric": metric,
             "difference": d.difference, "ci": d.ci, "n": d.n, "interval": d.interval,
             "test": d.test, "p": d.p, "p_holm": None}
            for metric, d in tested
        ]  # fmt: skip
    ps = [c["p"] if c["p"] is not None else math.nan for c in found]
    adjusted = holm(ps)
    for c, ph in zip(found, adjusted, strict=True):
        c["p_holm"] = ph
    at = 0
    for block, tested in blocks:  # each block's figures with their Holm-adjusted p
        mine = adjusted[at : at + len(tested)]
        at += len(tested)
        block["metrics"] = block["metrics"].with_p_holm(
            {metric: ph for (metric, _), ph in zip(tested, mine, strict=True)}
        )
    by_agent = {
        a.name: AgentContrasts(
            ContrastSection.of(minus[a.name]),
            {m: ContrastSection.of(b) for m, b in credit[a.name].items()},
            {o: ContrastSection.of(b) for o, b in others[a.name].items()}
            if a.name in others else None,
        )
        for a in run.agents
    }
    contrasts = [Contrast.of(c) for c in found]
    return PairedContrasts(by_agent, contrasts, int(sum(1 for p in ps if math.isfinite(p))))


def _same_answers(run: RunInputs, x: str, y: str) -> SameAnswers:
    """How many items both agents answered (ok trials) and on how many of them their
    answers were the same: when every one is, every paired contrast is zero by
    construction (a command agent's derived control that is the same program, a module
    whose switch changes nothing)."""
    cx, cy = run.cols[x], run.cols[y]
    answers = run.data.trials.answer_json
    shared = np.flatnonzero(cx.ok & cy.ok & (cx.rows >= 0) & (cy.rows >= 0))
    same = sum(answers[cx.rows[i]] == answers[cy.rows[i]] for i in shared)
    return SameAnswers.of({"shared": int(shared.size), "identical": int(same)})


def _none(reason: str) -> ContrastFigure:
    """A metric the pair has no contrast of, and why."""
    return ContrastFigure.of({"available": False, "reason": reason})


def _pair_metrics(
    run: RunInputs, pi: int, x: str, y: str, names: tuple[str, str]
) -> ContrastMetrics:
    rd = run.design
    cx, cy = run.cols[x], run.cols[y]
    both = cx.ok & cy.ok
    out: dict[str, Any] = {}
    seq = iter(range(1, 1_000_000))

    def binary(mask: BoolArray, vx: FloatArray, vy: FloatArray) -> ContrastFigure:
        m = mask & both
        return ContrastFigure.of(paired_binary(
            vx[m], vy[m], names, run.rng(pi, next(seq)), rd.ccode[m], B=run.res.B
        ).to_dict())  # fmt: skip

    def values(
        mask: BoolArray, vx: FloatArray, vy: FloatArray, definition: str | None = None
    ) -> ContrastFigure:
        m = mask & both & np.isfinite(vx) & np.isfinite(vy)
        d = paired_values(
            vx[m], vy[m], names, run.rng(pi, next(seq)), rd.ccode[m], B=run.res.B
        ).to_dict()
        return ContrastFigure.of(d if definition is None else d | {"definition": definition})

    fbm = rd.fbc & both
    out["false_belief_accuracy"] = (
        binary(rd.fbc, cx.cor, cy.cor)
        if fbm.any()
        else _none("no shared B1 false-belief items")
    )
    out["accuracy_by_depth"] = {
        label: binary(rd.fbc & rd.is_("depth", label), cx.cor, cy.cor)
        for label in rd.nt_depths
        if (fbm & rd.is_("depth", label)).any()
    }
    out["d50"] = (
        _pair_d50(run, pi, x, y, names)
        if fbm.any()
        else _none("no shared B1 false-belief items")
    )
    lx = 1.0 - run.res.extra[x].leak.astype(float)
    ly = 1.0 - run.res.extra[y].leak.astype(float)
    out["leakage_resistance"] = (
        binary(rd.fbc, lx, ly)
        if fbm.any()
        else _none("no shared B1 false-belief items")
    )
    pairs = rd.applied_pairs
    okp = pairs[both[pairs[:, 0]] & both[pairs[:, 1]]] if pairs.size else pairs
    if okp.size:
        gx = cx.cor[okp[:, 0]] - cx.cor[okp[:, 1]]
        gy = cy.cor[okp[:, 0]] - cy.cor[okp[:, 1]]
        out["applied_gap"] = ContrastFigure.of(paired_values(
            gx, gy, names, run.rng(pi, next(seq)), B=run.res.B
        ).to_dict() | {
            "definition": "difference of the two applied gaps (belief − behaviour accuracy) "
            "over the stories where all four answers were scored"
        })  # fmt: skip
    else:
        out["applied_gap"] = _none("no shared belief and behaviour items")
    out["games_accuracy"] = (
        binary(rd.lk, cx.cor, cy.cor)
        if (rd.lk & both).any()
        else _none("no shared level-k game items")
    )
    lsx, lsy = run.res.extra[x].log_score, run.res.extra[y].log_score
    cm = rd.abc & np.isfinite(lsx) & np.isfinite(lsy)
    out["log_score_c"] = (
        values(cm, lsx, lsy)
        if (cm & both).any()
        else _none("no shared C items with a log score")
    )
    tx, ty = run.res.extra[x].triple, run.res.extra[y].triple
    tm = np.isfinite(tx) & np.isfinite(ty)
    out["abc_dissociation"] = (
        binary(tm, np.nan_to_num(tx), np.nan_to_num(ty))
        if tm.any()
        else _none("no shared complete A/B/C scenarios")
    )
    kq = rd.abc & rd.is_("question", "K")
    out["opponent_type_inference"] = (
        binary(kq, cx.cor, cy.cor)
        if (kq & both).any()
        else _none("no shared opponent-type (K) items")
    )
    out["agent_prediction_skill"] = _none(
        "agent-prediction skill comes from the prediction ledger, not run trials"
    )
    rpx, rpy = run.res.extra[x].repeated, run.res.extra[y].repeated
    if rpx is not None and rpy is not None:
        rxx, rxy = rpx.exploitation, rpy.exploitation
        rm = np.isfinite(rxx) & np.isfinite(rxy)
        out["repeated_exploitation"] = (
            values(
                rm,
                rxx,
                rxy,
                "mean exploitation over the repeated-game episodes both answered where it is "
                "defined (same items, same opponent draws)",
            )
            if (rm & both).any()
            else _none("no shared repeated-game episodes with defined exploitation")
        )
    return ContrastMetrics.of(out)


def _pair_d50(
    run: RunInputs, pi: int, x: str, y: str, names: tuple[str, str]
) -> ContrastFigure:
    rd = run.design
    cx, cy = run.cols[x], run.cols[y]
    p = f"p{pi}."
    mask = cx.ok & cy.ok & rd.fbc
    chance = rd.chance(mask)
    rx, repx, why = d50(rd, run.res, p + "dkx", p + "dn", chance)
    ry, repy, _ = d50(rd, run.res, p + "dky", p + "dn", chance)
    base = {
        names[0]: rx.display() if why is None else rx.display().split(" [")[0],
        names[1]: ry.display() if why is None else ry.display().split(" [")[0],
        "n": rx.n,
        "interval": "paired-bootstrap-percentile-95",
        "test": f"label-permutation test on the D50 difference (B={run.res.B})",
        "note": "both D50s refitted on the false-belief items both agents answered",
    }
    if why is not None or not math.isfinite(chance):
        return ContrastFigure.of(base | {
            "status": "not_estimable",
            "difference": None,
            "ci": None,
            "p": None,
            "interval": None,
            "test": None,
            "reason": why or "chance level unknown (items do not list their choices)",
        })
    _, p_perm = d50_permutation(rd, mask, cx.cor, cy.cor, chance, run.rng(pi, 0xD50), run.res.B)
    with np.errstate(invalid="ignore"):
        dreps = repx - repy
    if rx.status == "estimated" and ry.status == "estimated":
        assert rx.value is not None and ry.value is not None
        lo, hi, _ = percentile_interval(dreps, LEVEL)
        if math.isfinite(lo) and math.isfinite(hi) and hi <= lo:
            # every shared resample gave the same difference: the agents answered alike
            return ContrastFigure.of(base | {
                "status": "not_estimable",
                "difference": rx.value - ry.value,
                "ci": None,
                "p": None,
                "interval": None,
                "test": None,
                "reason": NO_SPREAD,
            })
        span = rd.fb_depths[-1] - rd.fb_depths[0]
        ci = [lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None]
        return ContrastFigure.of(base | {
            names[0]: rx.value,
            names[1]: ry.value,
            "status": "estimated",
            "difference": rx.value - ry.value,
            "ci": ci,
            "ci_note": None
            if all(v is not None and abs(v) <= span for v in ci)
            else "an interval end involves a D50 outside the tested depths",
            "p": p_perm,
            "p_holm": None,
        })
    if rx.status == "beyond" and ry.status == "estimated" and rx.lower_bound is not None:
        assert ry.value is not None
        return ContrastFigure.of(base | {
            "status": "bound",
            "difference": None,
            "lower_bound": rx.lower_bound - ry.value,
            "display": f"> {rx.lower_bound - ry.value:.2f}",
            "p": p_perm,
            "p_holm": None,
        })
    if ry.status == "beyond" and rx.status == "estimated" and ry.lower_bound is not None:
        assert rx.value is not None
        return ContrastFigure.of(base | {
            "status": "bound",
            "difference": None,
            "upper_bound": rx.value - ry.lower_bound,
            "display": f"< {rx.value - ry.lower_bound:.2f}",
            "p": p_perm,
            "p_holm": None,
        })
    return ContrastFigure.of(base | {
        "status": "not_estimable",
        "difference": None,
        "p": None,
        "reason": f"D50 is {rx.display()} for {x} and {ry.display()} for {y}",
    })
