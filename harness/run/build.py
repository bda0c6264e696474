"""From names on the command line and agents in the settings to the agents of a run.

Every agent under test is paired with a **control** (the same base model, a minimal system
prompt, no modules): the one named by its ``control`` setting, else one derived from it (the
reference scaffold's modules off; the agent's own modules are inside it and stay as they are:
declare a ``control`` for a truly bare model). Each ``--ablate MODULE`` adds a variant with that
module switched off: a reference-scaffold module leaves the variant's ``modules``; an agent's own
module (``[agents.NAME.own_modules.MODULE]``) has its declared switch applied to the variant's
headers, body fields, model, endpoint or environment. Reference agents are added as
they are. What it takes to rebuild each agent is stored with the run (its *spec*, an
:class:`AgentSpec`: the agent's :class:`AgentConfig` as JSON, with no secrets: only the name of
the variable holding a key), so ``--resume`` needs no settings. Each agent is built by its
adapter kind (:mod:`harness.adapters.registry`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from harness.adapters.kinds import Agent, BuildContext
from harness.adapters.registry import adapter_kind, build_agent, check_applicable
from harness.agent.agents import CONTROL_SYSTEM_PROMPT
from harness.agent.families import check_policy
from harness.config.settings import MODULES, AgentConfig, Settings
from harness.model.local_model import ModelEndpoint
from ledger.store import RunAgent, Store
from mindledger.errors import ConfigError, InputError, UserError
from mindledger.secrets import strip_credentials

__all__ = ["BUILTIN_AGENTS", "CLI_OPTIONS", "AgentSpec", "PlanFields", "built_agents", "plan_agents"]

LOCAL_SYSTEM_PROMPT = (
    "You are a careful reasoner about what other people know and believe. Keep track of who "
    "saw each event and who was told what; people only know what they saw or were told."
)

BUILTIN_AGENTS: dict[str, AgentConfig] = {
    "local": AgentConfig(
        name="local",
        adapter="local",
        model="SmolLM2-135M-Instruct",
        system_prompt=LOCAL_SYSTEM_PROMPT,
        modules=MODULES,
        max_tokens=48,
    ),
}
"""Agents available without any settings file: the embedded model with the reference scaffold."""


@dataclass(frozen=True)
class AgentSpec:
    """What is stored with a run to rebuild one of its agents (``RunAgent.spec``), typed.

    Its JSON form (:meth:`to_json`) is the config's own (:meth:`AgentConfig.to_json`) without
    the two fields the run holds elsewhere (``name``, the run agent's; ``control``, its role
    and base agent), with credentials stripped from the endpoint, and with two more keys when
    they apply: ``endpoint_credentials_from`` and ``ablated``. Runs stored by earlier versions
    have specs of that same shape, sometimes with fields missing or None (their defaults)."""

    config: AgentConfig
    endpoint_credentials_from: str | None = None
    """The declared agent whose endpoint carries the credentials stripped before storage."""
    ablated: str | None = None
    """The module an ablation variant switched off."""

    @classmethod
    def of(cls, declared: AgentConfig, *, ablated: str | None = None, **changes: Any) -> AgentSpec:
        """The spec of ``declared`` with ``changes`` (for a control or an ablation)."""
        config = replace(declared, **changes)
        had_credentials = (
            declared.endpoint is not None
            and config.endpoint == declared.endpoint  # not another endpoint (which has none)
            and strip_credentials(declared.endpoint)[1]
        )
        return cls(
            config,
            endpoint_credentials_from=declared.name if had_credentials else None,
            ablated=ablated,
        )

    def to_json(self, *, defaults: bool = True) -> dict[str, Any]:
        """The stored form; ``defaults=False`` leaves out the fields that hold their default."""
        data = {k: v for k, v in self.config.to_json().items() if k not in _HELD_BY_THE_RUN}
        if self.config.endpoint:
            data["endpoint"] = strip_credentials(self.config.endpoint)[0]
        if not defaults:
            data = {k: v for k, v in data.items() if v != _DEFAULTS.get(k)}
        if self.endpoint_credentials_from:
            data["endpoint_credentials_from"] = self.endpoint_credentials_from
        if self.ablated:
            data["ablated"] = self.ablated
        return data

    @classmethod
    def from_json(cls, name: str, spec: Mapping[str, Any]) -> AgentSpec:
        """Read a stored spec back (as :meth:`to_json` or an earlier version wrote it) for the
        run agent ``name``; ConfigError for a field of the wrong type."""
        fields = {k: v for k, v in spec.items() if v is not None and k not in _HELD_BY_THE_RUN}
        source = fields.pop("endpoint_credentials_from", None)
        ablated = fields.pop("ablated", None)
        return cls(
            AgentConfig.from_json({**fields, "name": name}),
            endpoint_credentials_from=str(source) if source else None,
            ablated=str(ablated) if ablated else None,
        )

    def resolved(self, settings: Settings) -> AgentConfig:
        """The config to build: where credentials were stripped from the endpoint before
        storage, the declared agent's endpoint that carries them."""
        source = self.endpoint_credentials_from
        if not source:
            return self.config
        stored = self.config.endpoint or ""
        declared = settings.agents.get(source)
        if (
            declared is None
            or not declared.endpoint
            or strip_credentials(declared.endpoint)[0] != stored
        ):
            raise ConfigError(
                f"agent {self.config.name!r} was run with credentials in its endpoint URL, which "
                f"are never stored; declare agent {source!r} with that endpoint again (better: "
                "put the key in the variable named by api_key_env)",
                key=f"agents.{source}.endpoint",
            )
        return replace(self.config, endpoint=declared.endpoint)


_HELD_BY_THE_RUN = ("name", "control")
_DEFAULTS = AgentConfig(name="").to_json()


def _endpoint(name: str, spec: Mapping[str, Any], settings: Settings) -> str:
    """The URL to call for a stored spec: its endpoint, or, where credentials were stripped
    from it before storage, the declared agent's endpoint that carries them."""
    return str(AgentSpec.from_json(name, spec).resolved(settings).endpoint)


@dataclass(frozen=True)
class PlanFields:
    """What the caller of :func:`plan_agents` calls the names it was given, so that an error
    names them as the person wrote them: the command line's options (:data:`CLI_OPTIONS`), or
    the fields of an API request's body."""

    agent: str = "--agent"
    control: str = "--control"
    reference: str = "--reference"
    ablate: str = "--ablate"


CLI_OPTIONS = PlanFields()


def _known_agents(settings: Settings) -> str:
    """The agents a run may name: those declared and the built-in ones, in order."""
    return ", ".join(sorted({*settings.agents, *BUILTIN_AGENTS}))


def _lookup(settings: Settings, name: str, where: str, reference: str) -> AgentConfig:
    if name in settings.agents:
        return settings.agents[name]
    if name in BUILTIN_AGENTS:
        return BUILTIN_AGENTS[name]
    known = _known_agents(settings)
    try:
        check_policy(name)
        given = f"as {reference} {name}" if reference.startswith("--") else f"in {reference}"
        hint = f"; {name!r} is a reference agent: give it {given}"
    except UserError:
        hint = (
            f"; declare it as [agents.{name}] in the settings file (./mindledger.toml, or "
            "$MINDLEDGER_HOME/mindledger.toml; `mindledger config show` says which is read)"
        )
    raise ConfigError(f"no agent named {name!r} (known: {known}){hint}", key=where)


def plan_agents(
    settings: Settings,
    *,
    agents: Sequence[str],
    control: str | None = None,
    references: Sequence[str] = (),
    ablate: Sequence[str] = (),
    no_control: bool = False,
    temperature: float | None = None,
    fields: PlanFields = CLI_OPTIONS,
) -> list[RunAgent]:
    """The agents of a run, with their roles and specs; ``temperature`` replaces the sampling
    temperature of every agent named (and of their controls). An unknown name is refused
    naming where it was given, as ``fields`` calls it (the error's ``key`` or ``where``)."""
    planned: list[RunAgent] = []
    names: set[str] = set()

    def add(ra: RunAgent) -> None:
        if ra.name in names:
            raise UserError(f"agent {ra.name!r} appears twice in this run")
        names.add(ra.name)
        planned.append(ra)

    def lookup(name: str, where: str) -> AgentConfig:
        cfg = _lookup(settings, name, where, fields.reference)
        return cfg if temperature is None else replace(cfg, temperature=temperature)

    declared = {name: lookup(name, fields.agent) for name in agents}
    own = {m for cfg in declared.values() for m in cfg.own_modules}
    for m in ablate:
        if m not in MODULES and m not in own:
            theirs = "; ".join(
                f"{n}'s own: {', '.join(cfg.own_modules)}"
                for n, cfg in declared.items()
                if cfg.own_modules
            )
            raise InputError(
                f"unknown module {m!r} (expected one of the reference scaffold's: "
                f"{', '.join(MODULES)}" + (f"; {theirs})" if theirs else ")"),
                where=fields.ablate,
            )

    for name in agents:
        cfg = declared[name]
        check_applicable(cfg)
        add(RunAgent(name, "agent", AgentSpec.of(cfg).to_json()))
        if adapter_kind(cfg.adapter, agent=name).paired_with_control and not no_control:
            ctl_name = control if control and len(agents) == 1 else cfg.control
            if ctl_name:
                ctl_cfg = lookup(
                    ctl_name, fields.control if ctl_name == control else f"agents.{name}.control"
                )
                check_applicable(ctl_cfg)
                ctl = AgentSpec.of(ctl_cfg)
                add(RunAgent(ctl_name, "control", ctl.to_json(), base_agent=name))
            else:
                ctl = AgentSpec.of(cfg, system_prompt=CONTROL_SYSTEM_PROMPT, modules=())
                add(RunAgent(f"{name}-control", "control", ctl.to_json(), base_agent=name))
        for m in ablate:
            if m not in cfg.module_names:
                raise InputError(
                    f"agent {name!r} has no module {m!r} to ablate (it has "
                    f"{list(cfg.module_names)})",
                    where=fields.ablate,
                )
            variant = AgentSpec.of(cfg, ablated=m, **cfg.module_off(m))
            add(RunAgent(f"{name}-no-{m}", "ablation", variant.to_json(), base_agent=name))
    for policy in references:
        try:
            check_policy(policy)
        except UserError as exc:
            raise InputError(str(exc), where=fields.reference) from None
        name = f"ref:{policy}"
        scripted = AgentSpec(AgentConfig(name, adapter="reference", policy=policy))
        add(RunAgent(name, "reference", scripted.to_json(defaults=False)))
    if not planned:
        known = _known_agents(settings)
        raise UserError(
            f"nothing to run: give {fields.agent} NAME (known: {known}) and/or "
            f"{fields.reference} POLICY (oracle, random, …)"
        )
    return planned


def _config(ra: RunAgent) -> AgentConfig:
    return AgentSpec.from_json(ra.name, ra.spec).config


def needs_local_model(planned: Sequence[RunAgent]) -> bool:
    """Whether any planned agent talks to the embedded model."""
    return any(
        adapter_kind(cfg.adapter, agent=cfg.name).needs_local_model for cfg in map(_config, planned)
    )


def concurrency_of(ra: RunAgent, settings: Settings) -> int:
    """Items in flight to the planned agent ``ra`` at once."""
    cfg = _config(ra)
    return adapter_kind(cfg.adapter, agent=ra.name).concurrency(cfg, settings)


@asynccontextmanager
async def built_agents(
    planned: Sequence[RunAgent],
    settings: Settings,
    *,
    seed: int,
    store: Store | None = None,
    local_base_url: ModelEndpoint | None = None,
) -> AsyncIterator[list[Agent]]:
    """Instantiate the planned agents from their stored specs, each by its adapter kind (the
    response cache in ``store`` when the settings keep one); close their clients on exit."""
    context = BuildContext(
        settings,
        seed=seed,
        cache=store if settings.cache else None,
        local_base_url=local_base_url,
    )
    async with AsyncExitStack() as stack:
        out: list[Agent] = []
        for ra in planned:
            agent = build_agent(AgentSpec.from_json(ra.name, ra.spec).resolved(settings), context)
            stack.push_async_callback(agent.aclose)
            out.append(agent)
        yield out


def agent_names(planned: Sequence[RunAgent]) -> Iterator[str]:
    return (ra.name for ra in planned)
