"""Hi-ToM's section of an agent (``hitom``)."""

from __future__ import annotations

from reports.model import HitomSection
from reports.sections._inputs import AgentInputs, Measured

__all__ = ["hitom_section"]


def hitom_section(inp: AgentInputs) -> Measured:
    """``hitom``: Hi-ToM accuracy and joint accuracy by depth; no section for a run without
    Hi-ToM items."""
    if not inp.design.hi.any():
        return Measured({})
    return Measured({"hitom": _hitom(inp)})


def _hitom(inp: AgentInputs) -> HitomSection:
    rd, c = inp.design, inp.cols
    jn, jk = inp.ex.joint
    acc = {}
    joint = {}
    for label in rd.hi_depths:
        m = rd.hi & rd.qbel & rd.is_("depth", label)
        if (m & c.ok).any():
            acc[label] = rd.p(c.cor, m & c.ok).to_dict()
        if (m & (jn == 1.0)).any():
            joint[label] = rd.p(jk, m & (jn == 1.0)).to_dict()
    return HitomSection.of({"accuracy_by_depth": acc, "joint_accuracy_by_depth": joint})


# -- contrasts ----------------------------------------------------------------------
