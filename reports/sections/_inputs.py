"""What a section of one agent's profile is computed from: the run, its design, the shared
resamples and the agent's own columns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ledger.reader import RunAgent
from reports._data import RunData
from reports._estimates import MetricSample
from reports.model import AbcContrast
from reports.sections._columns import AgentColumns
from reports.sections._design import RunDesign
from reports.sections._resamples import AgentExtra, Resamples, rng

__all__ = ["AgentInputs", "Measured", "RunInputs"]


@dataclass(frozen=True, eq=False)
class AgentInputs:
    """One agent's inputs: ``index`` its position among the run's agents (its resample
    columns are prefixed ``a{index}.``)."""

    data: RunData
    design: RunDesign
    res: Resamples
    agent: RunAgent
    index: int
    cols: AgentColumns
    abc_contrasts: Mapping[str, AbcContrast] | None = None
    """The agent's A − B and B − C contrasts with their Holm adjustment (None: computed by
    the games section, unadjusted)."""

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def prefix(self) -> str:
        return f"a{self.index}."

    @property
    def ex(self) -> AgentExtra:
        """The agent's further per-item columns (:func:`reports.sections._resamples.resample`)."""
        return self.res.extra[self.agent.name]

    def rng(self, *key: int) -> np.random.Generator:
        return rng(self.res.seed, *key)


@dataclass(frozen=True)
class Measured:
    """Sections of an agent's profile, by key, and the headline figures they measured for
    comparisons between runs (:class:`~reports._estimates.MetricSample`, by metric)."""

    sections: Mapping[str, Any]
    samples: Mapping[str, MetricSample] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class RunInputs:
    """The whole run's inputs: its agents in report order and their columns."""

    data: RunData
    design: RunDesign
    res: Resamples
    agents: list[RunAgent]
    cols: dict[str, AgentColumns]
    abc_contrasts: Mapping[str, Mapping[str, AbcContrast]] = field(default_factory=dict)
    """Each agent's A − B and B − C contrasts, Holm-adjusted as a family of their own."""
    abc_m: int = 0
    """The size of that family (its testable contrasts)."""

    def agent(self, index: int) -> AgentInputs:
        a = self.agents[index]
        return AgentInputs(
            self.data,
            self.design,
            self.res,
            a,
            index,
            self.cols[a.name],
            self.abc_contrasts.get(a.name),
        )

    def rng(self, *key: int) -> np.random.Generator:
        return rng(self.res.seed, *key)
