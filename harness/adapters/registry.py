"""The adapter kinds by name: ask here, never compare ``config.adapter`` with a string.

A new kind is one module implementing :class:`~harness.adapters.kinds.AdapterKind` and one line
in :data:`harness.config.settings.ADAPTERS` naming it and where it is defined: :data:`KINDS` is loaded
from there (the settings accept exactly those names, and cannot import this package, which
imports them), as :data:`mindledger.family.BUILTIN` names the families.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from harness.adapters.kinds import AdapterKind, Agent, BuildContext
from harness.config.settings import ADAPTERS, AgentConfig
from mindledger.errors import ConfigError

__all__ = ["KINDS", "adapter_kind", "build_agent", "check_applicable"]


def _load(where: str) -> AdapterKind:
    """The kind defined at ``where`` (``module:attribute``)."""
    module, _, attribute = where.partition(":")
    kind: AdapterKind = getattr(importlib.import_module(module), attribute)
    return kind


KINDS: Mapping[str, AdapterKind] = MappingProxyType(
    {name: _load(where) for name, where in ADAPTERS.items()}
)
"""Every adapter kind, by the name the settings give it (:data:`harness.config.settings.ADAPTERS`)."""


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
