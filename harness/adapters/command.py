"""The ``command`` kind: a chat agent whose every turn is a run of the declared program
(:class:`~harness.agent.agents.CommandBackend`), with the agent's ``env`` set over the harness's own
environment (an own module's ``off.env`` switches it off). Its replies are not cached. At most
the agent's ``concurrency`` runs are under way at once, :data:`PROGRAMS_AT_ONCE` when it
declares none (the global setting is sized for HTTP endpoints, not for processes). The protocol
is in :mod:`harness.agent.command_protocol` and ``docs/command-agent.md``."""

from __future__ import annotations

from dataclasses import dataclass

from harness.adapters.kinds import BuildContext, chat_agent
from harness.agent.agents import ChatAgent, CommandBackend
from harness.config.settings import AgentConfig, Settings
from mindledger.errors import ConfigError

__all__ = ["COMMAND", "PROGRAMS_AT_ONCE", "Command"]

PROGRAMS_AT_ONCE = 4
"""Runs of a command agent's program under way at once when the agent declares no
``concurrency``."""


@dataclass(frozen=True)
class Command:
    """A program per turn: the chat request on stdin, the reply on stdout."""

    name: str = "command"
    paired_with_control: bool = True
    needs_local_model: bool = False
    proxy_target: bool = False
    switches: frozenset[str] = frozenset({"env"})

    def concurrency(self, config: AgentConfig, settings: Settings) -> int:
        return config.concurrency or settings.concurrency

    def build(self, config: AgentConfig, context: BuildContext) -> ChatAgent:
        if not config.command:
            raise ConfigError("the command adapter needs a command", key=f"agents.{config.name}")
        backend = CommandBackend(
            config.command,
            timeout=context.settings.timeout,
            concurrency=config.concurrency or PROGRAMS_AT_ONCE,
            env=config.env or None,
        )
        return chat_agent(config, backend, auto_answer_mode="tools")


COMMAND = Command()
