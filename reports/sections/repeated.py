"""The repeated games' section of an agent (``repeated``; computed by
:mod:`reports._repeated`)."""

from __future__ import annotations

from reports._repeated import repeated_section as _section
from reports.model import RepeatedSection
from reports.sections._inputs import AgentInputs, Measured

__all__ = ["repeated_section"]


def repeated_section(inp: AgentInputs) -> Measured:
    """``repeated``: exploitation by game and counterfactual, the counterfactual gaps, B6."""
    rd, c = inp.design, inp.cols
    episodes = inp.ex.repeated
    if episodes is None:
        section = RepeatedSection(available=False, reason="no repeated-game episodes in this run")
    else:
        section = _section(inp.data.items, rd.rp_design, c.has, c.ok, episodes, seed=inp.res.seed)
    return Measured({"repeated": section})
