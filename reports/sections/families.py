"""Accuracy per item family (``families``): the one section every family gets, with or without
sections of its own."""

from __future__ import annotations

from typing import Any

from mindledger import family as family_registry
from mindledger.family import UnknownFamilyError
from reports.model import FamilyAccuracy
from reports.sections._inputs import AgentInputs, Measured

__all__ = ["families_section"]


def families_section(inp: AgentInputs) -> Measured:
    """Accuracy per item family of the run, for every family (the registry's title where
    it knows the family)."""
    rd, c = inp.design, inp.cols
    it = inp.data.items
    out: dict[str, dict[str, Any]] = {}
    for name in sorted({str(f) for f in it.family.tolist()}):
        try:
            title = family_registry.get(name).title
        except UnknownFamilyError:
            title = name
        fam = rd.is_("family", name)
        m = fam & c.ok & ~it.excluded & ~rd.pending
        left_out = "API errors and items excluded by design left out"
        if (fam & rd.pending).any():
            left_out += (
                "; so are LLM-population plays and predictions, which games.abc.c_llm scores"
            )
        out[name] = rd.p(c.cor, m).to_dict() | {
            "title": title,
            "definition": f"correct answers ÷ scored {name} items ({left_out})",
        }
    return Measured({"families": {name: FamilyAccuracy.of(fig) for name, fig in out.items()}})
