"""The ``reference`` kind: a scripted reasoner (:class:`~harness.agent.agents.ReferenceAgent`) playing
the declared policy, with no model and so no control."""

from __future__ import annotations

from dataclasses import dataclass

from harness.adapters.kinds import BuildContext
from harness.agent.agents import ReferenceAgent
from harness.config.settings import AgentConfig, Settings
from mindledger.errors import ConfigError

__all__ = ["REFERENCE", "Reference"]

REFERENCE_CONCURRENCY = 64
"""Items in flight to a reference agent: it does no I/O, so only the writer limits it."""


@dataclass(frozen=True)
class Reference:
    """A scripted policy (oracle, random, depth-capped:N, level:K, ...)."""

    name: str = "reference"
    paired_with_control: bool = False
    needs_local_model: bool = False
    proxy_target: bool = False
    switches: frozenset[str] = frozenset()

    def concurrency(self, config: AgentConfig, settings: Settings) -> int:
        return REFERENCE_CONCURRENCY

    def build(self, config: AgentConfig, context: BuildContext) -> ReferenceAgent:
        if not config.policy:
            raise ConfigError("the reference adapter needs a policy", key=f"agents.{config.name}")
        return ReferenceAgent(config.name, config.policy, seed=context.seed)


REFERENCE = Reference()
