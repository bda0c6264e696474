"""The sections of an agent's profile, one module each, and the registry of the sections each
item family contributes.

A section is a pure function of one agent's inputs (:class:`AgentInputs`: the run, its design,
the run's shared bootstrap resamples and the agent's columns) that returns :class:`Measured`:
its part of the agent's profile, by key, with the headline figures it measured for comparisons
between runs. Every profile has the headline NestToM figures (:mod:`.depth`) and the
sections of :data:`COMMON_SECTIONS`; a family adds its own through :data:`FAMILY_SECTIONS`
(the ``Family`` protocol lives in :mod:`mindledger`, which cannot import ``reports``, so its
sections are registered here by the family's name). Every registered family's sections run on
every run and say so when the run has none of the family's items; Hi-ToM's writes nothing then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from reports._data import RunData
from reports._estimates import MetricSample
from reports.sections._columns import agent_columns, roster
from reports.sections._design import RunDesign, run_design
from reports.sections._inputs import AgentInputs, Measured, RunInputs
from reports.sections._resamples import D50_MIN_PER_DEPTH, LEVEL, resample, rng
from reports.sections.calibration import calibration_section
from reports.sections.cost import cost_sections
from reports.sections.depth import depth_sections
from reports.sections.depth_signals import depth_signals_section
from reports.sections.families import families_section
from reports.sections.games import abc_holm, games_section
from reports.sections.hitom import hitom_section
from reports.sections.nesttom import nesttom_sections
from reports.sections.repeated import repeated_section

__all__ = [
    "AGENT_KEYS",
    "COMMON_SECTIONS",
    "D50_MIN_PER_DEPTH",
    "FAMILY_SECTIONS",
    "LEVEL",
    "AgentInputs",
    "Measured",
    "RunDesign",
    "RunInputs",
    "Section",
    "agent_sections",
    "rng",
    "run_inputs",
]

Section = Callable[[AgentInputs], Measured]
"""A section: one agent's inputs → its part of the agent's profile."""

FAMILY_SECTIONS: Mapping[str, tuple[Section, ...]] = {
    "nesttom": (nesttom_sections,),
    "games": (games_section, depth_signals_section),
    "repeated": (repeated_section,),
    "hitom": (hitom_section,),
}
"""The sections each item family contributes, by family name."""

COMMON_SECTIONS: tuple[Section, ...] = (calibration_section, cost_sections, families_section)
"""The sections of every profile, whatever its families."""

AGENT_KEYS = (
    "role",
    "base_agent",
    "spec",
    "notices",
    "valid",
    "validity",
    "reality_check",
    "true_belief_control_accuracy",
    "false_belief_accuracy",
    "d50",
    "degradation_slope",
    "leakage_resistance",
    "accuracy_by_depth",
    "joint_accuracy_by_depth",
    "r2_self",
    "by_mechanism",
    "by_form",
    "length_sweep",
    "error_types_by_depth",
    "applied_gap",
    "games",
    "depth_signals",
    "repeated",
    "calibration",
    "cost",
    "api_errors",
    "families",
    "hitom",
    "agent_prediction_skill",
    "minus_control",
    "ablation_credit",
)
"""The order of an agent's keys in the profile's JSON; a section's key not listed here comes
after them."""


def agent_sections(inp: AgentInputs) -> Measured:
    """Every section of one agent: the headline figures, each registered family's sections and
    the common ones, keys in :data:`AGENT_KEYS` order."""
    parts = [depth_sections(inp)]
    for sections in FAMILY_SECTIONS.values():
        parts.extend(section(inp) for section in sections)
    parts.extend(section(inp) for section in COMMON_SECTIONS)
    found: dict[str, object] = {}
    samples: dict[str, MetricSample] = {}
    for part in parts:
        found.update(part.sections)
        samples.update(part.samples)
    order = {k: i for i, k in enumerate(AGENT_KEYS)}
    keys = sorted(found, key=lambda k: order.get(k, len(order)))
    return Measured({k: found[k] for k in keys}, samples)


def run_inputs(data: RunData, *, seed: int, B: int) -> RunInputs:
    """The run's design, its agents' columns, the shared resamples (``B`` replicates drawn
    from ``seed``) and the Holm family of the A − B and B − C contrasts."""
    design = run_design(data)
    agents = roster(data)
    cols = agent_columns(data, design, agents)
    run = RunInputs(
        data, design, resample(data, design, agents, cols, seed=seed, B=B), agents, cols
    )
    figures, m = abc_holm(run)
    return replace(run, abc_contrasts=figures, abc_m=m)
