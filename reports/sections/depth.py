"""The headline NestToM figures of an agent: accuracy by depth on the B1 curve (and joint
accuracy), the R0 reality check, the true-belief controls, false-belief accuracy, D50 and
leakage resistance, with the validity rule that decides whether the false-belief ones count."""

from __future__ import annotations

from typing import Any

from reports._estimates import MetricSample
from reports.model import D50, Estimate, JointAccuracy
from reports.sections._inputs import AgentInputs, Measured
from reports.sections._resamples import d50
from reports.sections.validity import validity, validity_block

__all__ = ["depth_sections"]

NO_FB = "no scored B1 false-belief NestToM items at R1 or deeper"


def depth_sections(inp: AgentInputs) -> Measured:
    """``notices`` (the validity message, if any), ``valid``, ``validity``, ``reality_check``,
    ``true_belief_control_accuracy``, ``false_belief_accuracy``, ``d50``,
    ``leakage_resistance``, ``accuracy_by_depth`` and ``joint_accuracy_by_depth``."""
    d, c, ex = inp.design, inp.cols, inp.ex
    samples: dict[str, MetricSample] = {}
    out: dict[str, Any] = {}
    # accuracy by depth (B1, R1 and deeper) and joint accuracy
    jn, jk = ex.joint
    acc: dict[str, dict[str, Any]] = {}
    joint: dict[str, dict[str, Any]] = {}
    for belief in ("false", "true"):
        acc[belief] = {}
        joint[belief] = {}
        bm = d.fb if belief == "false" else d.tb
        for label in d.nt_depths:
            m = d.curve & bm & d.is_("depth", label) & c.ok
            if not m.any():
                continue
            cell = d.p(c.cor, m)
            dn = d.depth_n(label)
            acc[belief][label] = {"depth_n": dn} | cell.to_dict()
            if belief == "false":
                samples[f"accuracy_by_depth.false.{label}"] = MetricSample.of(cell)
            jm = d.curve & bm & d.is_("depth", label) & (jn == 1.0)
            if jm.any():
                joint[belief][label] = {"depth_n": dn} | d.p(jk, jm).to_dict()
    reality = d.p(c.cor, d.r0 & c.ok)
    fb_all = d.p(c.cor, d.fbc & c.ok)
    tb_all = d.p(c.cor, d.tbc & c.ok)
    if fb_all.n:
        samples["false_belief_accuracy"] = MetricSample.of(fb_all)
    if tb_all.n:
        samples["true_belief_control_accuracy"] = MetricSample.of(tb_all)
    if reality.n:
        samples["reality_check"] = MetricSample.of(reality)
    answered_fb = bool((d.nt & d.qbel & d.fb & c.ok).any())
    valid, message = validity(inp.name, fb_all, tb_all, reality, answered_fb)
    out["notices"] = [message] if message else []
    out["valid"] = valid
    out["validity"] = validity_block(valid, message, tb_all, reality)
    out["reality_check"] = (
        reality.to_dict()
        | {
            "definition": "accuracy on the R0 questions (where is the object really?), both "
            "story cells; a reality control, not a false-belief item"
        }
        if reality.n
        else {"value": None, "n": 0, "reason": "no R0 reality-check items"}
    )
    out["true_belief_control_accuracy"] = tb_all.to_dict() | {
        "definition": "true-belief control items at R1 and deeper, every block"
    }
    out["false_belief_accuracy"] = fb_all.to_dict() | {
        "definition": "B1 false-belief items at R1 and deeper"
    }
    # D50
    if fb_all.n:
        chance = d.chance(c.ok & d.fbc)
        p = inp.prefix
        est, reps, why = d50(d, inp.res, p + "dk", p + "dn", chance)
        out["d50"] = est.to_dict() | {
            "ceiling_note": "ceiling fixed at 1.0 (an exact reasoner); chance is the mean of "
            "1/number of choices over the agent's scored B1 false-belief items (R1 and "
            "deeper); the agent's own true-belief accuracy is reported as "
            "true_belief_control_accuracy",
        }
        if why:
            out["d50"]["ci"] = None
            out["d50"]["ci_note"] = why
            out["d50"]["interval_status"] = "not_estimable"
        if est.value is not None:
            samples["d50"] = MetricSample(
                est.value, est.n, why is None and est.status == "estimated", replicates=reps
            )
    else:
        out["d50"] = {
            "status": "not_estimable",
            "value": None,
            "reason": NO_FB,
            "display": f"not estimable: {NO_FB}",
            "n": 0,
        }
    # leakage
    if fb_all.n:
        fbm = d.fbc & c.ok
        lr = d.p(1.0 - ex.leak.astype(float), fbm)
        out["leakage_resistance"] = lr.to_dict() | {
            "errors_counted": int(ex.leak[fbm].sum()),
            "definition": "1 − (reality_leak + projection primary errors) ÷ scored B1 "
            "false-belief items at R1 and deeper",
        }
        samples["leakage_resistance"] = MetricSample.of(lr)
    else:
        out["leakage_resistance"] = {"value": None, "n": 0, "reason": NO_FB}
    out["accuracy_by_depth"] = acc
    out["joint_accuracy_by_depth"] = joint | {
        "definition": "an item counts only if every shallower belief question on the same "
        "story was answered correctly (Hi-ToM style); items whose shallower questions had "
        "an API error are left out"
    }
    for key in (
        "reality_check",
        "true_belief_control_accuracy",
        "false_belief_accuracy",
        "leakage_resistance",
    ):
        out[key] = Estimate.of(out[key])
    out["d50"] = D50.of(out["d50"])
    out["joint_accuracy_by_depth"] = JointAccuracy.of(out["joint_accuracy_by_depth"])
    out["accuracy_by_depth"] = {
        belief: {label: Estimate.of(cell) for label, cell in cells.items()}
        for belief, cells in acc.items()
    }
    return Measured(out, samples)
