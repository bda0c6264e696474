"""What an adapter kind is: how to build an agent from its :class:`AgentConfig`, and what a run
needs to know of it before (its control, its concurrency, the embedded model).

One module per kind implements :class:`AdapterKind` (:mod:`harness.adapters.openai_compatible`
for ``openai`` and ``local``, :mod:`harness.adapters.command`, :mod:`harness.adapters.reference`);
:mod:`harness.adapters.registry` maps each kind's name to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.adapters.cache import ResponseStore
from harness.agent.agents import ChatAgent, ChatBackend, ReferenceAgent
from harness.config.settings import AgentConfig, Settings
from harness.model.local_model import ModelEndpoint

__all__ = ["AdapterKind", "Agent", "BuildContext", "chat_agent"]

Agent = ChatAgent | ReferenceAgent
"""What a kind builds."""


@dataclass(frozen=True)
class BuildContext:
    """What building an agent takes besides its config."""

    settings: Settings
    """Timeouts, retries and the default concurrency."""
    seed: int
    """The run seed (reference agents draw from it)."""
    cache: ResponseStore | None = None
    """Where the response cache lives; None: no cache."""
    local_base_url: ModelEndpoint | None = None
    """The embedded model server's URL, when it is running."""


class AdapterKind(Protocol):
    """One kind of agent endpoint."""

    @property
    def name(self) -> str:
        """The ``adapter`` value of the settings that selects this kind."""
        ...

    @property
    def paired_with_control(self) -> bool:
        """Whether a run pairs its agents with a bare-model control."""
        ...

    @property
    def needs_local_model(self) -> bool:
        """Whether its agents talk to the embedded model server."""
        ...

    @property
    def switches(self) -> frozenset[str]:
        """What this kind can change in its requests, so what an agent's own module may be
        switched off by (names of :data:`harness.config.settings.SWITCHES`: ``headers`` and ``body``
        also allow the agent's ``headers`` and ``extra_body``, ``env`` its ``env``)."""
        ...

    @property
    def proxy_target(self) -> bool:
        """Whether the daemon's query proxy forwards calls to its agents (an OpenAI-compatible
        endpoint of their own)."""
        ...

    def concurrency(self, config: AgentConfig, settings: Settings) -> int:
        """Items in flight to one agent of this kind at once."""
        ...

    def build(self, config: AgentConfig, context: BuildContext) -> Agent:
        """The agent ``config`` declares (its endpoint resolved, credentials and all)."""
        ...


def chat_agent(config: AgentConfig, backend: ChatBackend, *, auto_answer_mode: str) -> ChatAgent:
    """The chat agent of ``config`` behind ``backend``; ``answer_mode = "auto"`` becomes
    ``auto_answer_mode``."""
    mode = auto_answer_mode if config.answer_mode == "auto" else config.answer_mode
    return ChatAgent(
        config.name,
        backend,
        spec=config.public_dict(),
        system_prompt=config.system_prompt,
        modules=config.modules,
        answer_mode=mode,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
