"""The adapter kinds by name: ask here, never compare ``config.adapter`` with a string.

A new kind is one module implementing :class:`~harness.adapters.kinds.AdapterKind` and one line
in :data:`KINDS` (and its name in :data:`harness.settings.ADAPTERS`, which the settings accept;
a test checks the two agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.adapters.command import COMMAND
from harness.adapters.kinds import AdapterKind, Agent, BuildContext
from harness.adapters.openai_compatible import LOCAL, OPENAI
from harness.adapters.reference import REFERENCE
from harness.settings import AgentConfig
from mindledger.errors import ConfigError

__all__ = ["KINDS", "adapter_kind", "build_agent", "check_applicable"]

KINDS: Mapping[str, AdapterKind] = MappingProxyType(
    {kind.name: kind for kind in (OPENAI, COMMAND, LOCAL, REFERENCE)}
)
"""Every adapter kind, by the name the settings give it."""


def adapter_kind(name: str, *, agent: str | None = None) -> AdapterKind:
    """The kind called ``name``; a ConfigError naming the known ones if there is none."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown adapter {name!r} (known: {', '.join(KINDS)})",
            key=f"agents.{agent}.adapter" if agent else "adapter",
        ) from None


def build_agent(config: AgentConfig, context: BuildContext) -> Agent:
    """The agent ``config`` declares, built by its kind."""
    return adapter_kind(config.adapter, agent=config.name).build(config, context)


_AGENT_SWITCHES = (("headers", "headers"), ("extra_body", "body"), ("env", "env"))
"""The agent's own request settings and the switch each needs its kind to apply."""


def check_applicable(config: AgentConfig) -> None:
    """A ConfigError naming the field if ``config`` asks its kind for what it cannot do: extra
    headers or body fields of a command agent, environment variables of an OpenAI-compatible
    one, a module switch (``own_modules.M.off.…``) that the kind cannot apply."""
    kind = adapter_kind(config.adapter, agent=config.name)
    can = ", ".join(sorted(kind.switches)) or "none"
    key = f"agents.{config.name}"
    for field, switch in _AGENT_SWITCHES:
        if getattr(config, field) and switch not in kind.switches:
            raise ConfigError(
                f"the {kind.name} adapter cannot apply {field} (it applies: {can})",
                key=f"{key}.{field}",
            )
    for name, module in config.own_modules.items():
        for switch in module.off.used():
            if switch not in kind.switches:
                raise ConfigError(
                    f"the {kind.name} adapter cannot apply off.{switch} (it applies: {can})",
                    key=f"{key}.own_modules.{name}.off.{switch}",
                )
