"""From names on the command line and agents in the settings to the agents of a run.

Every agent under test is paired with a **control** (the same base model, a minimal system
prompt, no modules): the one named by its ``control`` setting, else one derived from it. Each
``--ablate MODULE`` adds a variant with that module switched off. Reference agents are added as
they are. What it takes to rebuild each agent is stored with the run (its *spec*, with no
secrets: only the name of the variable holding a key), so ``--resume`` needs no settings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from harness.agents import CONTROL_SYSTEM_PROMPT, ChatAgent, CommandBackend, ReferenceAgent
from harness.families import check_policy
from harness.settings import MODULES, AgentConfig, Settings
from ledger.store import RunAgent, Store
from mindledger.errors import ConfigError, UserError
from mindledger.secrets import strip_credentials

__all__ = ["BUILTIN_AGENTS", "built_agents", "plan_agents"]

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
        max_tokens=96,
    ),
}
"""Agents available without any settings file: the embedded model with the reference scaffold."""


def _spec(agent: AgentConfig, **changes: Any) -> dict[str, Any]:
    endpoint, had_credentials = (
        strip_credentials(agent.endpoint) if agent.endpoint else (agent.endpoint, False)
    )
    spec = {
        "adapter": agent.adapter,
        "endpoint": endpoint,
        "model": agent.model,
        "api_key_env": agent.api_key_env,
        "system_prompt": agent.system_prompt,
        "modules": list(agent.modules),
        "command": list(agent.command),
        "policy": agent.policy,
        "answer_mode": agent.answer_mode,
        "temperature": agent.temperature,
        "max_tokens": agent.max_tokens,
        "concurrency": agent.concurrency,
        "rate_limit": agent.rate_limit,
    }
    if had_credentials:
        # stored without them; rebuilt from the settings' declaration of this agent
        spec["endpoint_credentials_from"] = agent.name
    spec.update(changes)
    return spec


def _endpoint(name: str, spec: Mapping[str, Any], settings: Settings) -> str:
    """The URL to call for a stored spec: its endpoint, or, where credentials were stripped
    from it before storage, the declared agent's endpoint that carries them."""
    stored = str(spec["endpoint"])
    source = spec.get("endpoint_credentials_from")
    if not source:
        return stored
    declared = settings.agents.get(str(source))
    if declared is None or not declared.endpoint or strip_credentials(declared.endpoint)[0] != stored:
        raise ConfigError(
            f"agent {name!r} was run with credentials in its endpoint URL, which are never "
            f"stored; declare agent {source!r} with that endpoint again (better: put the key in "
            "the variable named by api_key_env)",
            key=f"agents.{source}.endpoint",
        )
    return declared.endpoint


def _lookup(settings: Settings, name: str) -> AgentConfig:
    if name in settings.agents:
        return settings.agents[name]
    if name in BUILTIN_AGENTS:
        return BUILTIN_AGENTS[name]
    known = ", ".join(sorted({*settings.agents, *BUILTIN_AGENTS}))
    raise ConfigError(f"no agent named {name!r} (known: {known})", key="--agent")


def plan_agents(
    settings: Settings,
    *,
    agents: Sequence[str],
    control: str | None = None,
    references: Sequence[str] = (),
    ablate: Sequence[str] = (),
    no_control: bool = False,
) -> list[RunAgent]:
    """The agents of a run, with their roles and specs."""
    planned: list[RunAgent] = []
    names: set[str] = set()

    def add(ra: RunAgent) -> None:
        if ra.name in names:
            raise UserError(f"agent {ra.name!r} appears twice in this run")
        names.add(ra.name)
        planned.append(ra)

    for m in ablate:
        if m not in MODULES:
            raise UserError(
                f"unknown module {m!r} for --ablate (expected one of {', '.join(MODULES)})"
            )
    for name in agents:
        cfg = _lookup(settings, name)
        add(RunAgent(name, "agent", _spec(cfg)))
        if cfg.adapter != "reference" and not no_control:
            ctl_name = control if control and len(agents) == 1 else cfg.control
            if ctl_name:
                add(
                    RunAgent(
                        ctl_name, "control", _spec(_lookup(settings, ctl_name)), base_agent=name
                    )
                )
            else:
                add(
                    RunAgent(
                        f"{name}-control",
                        "control",
                        _spec(cfg, system_prompt=CONTROL_SYSTEM_PROMPT, modules=[]),
                        base_agent=name,
                    )
                )
        for m in ablate:
            if m not in cfg.modules:
                raise UserError(
                    f"agent {name!r} has no module {m!r} to ablate (it has {list(cfg.modules)})"
                )
            mods = [x for x in cfg.modules if x != m]
            add(
                RunAgent(
                    f"{name}-no-{m}",
                    "ablation",
                    _spec(cfg, modules=mods, ablated=m),
                    base_agent=name,
                )
            )
    for policy in references:
        check_policy(policy)
        add(RunAgent(f"ref:{policy}", "reference", {"adapter": "reference", "policy": policy}))
    if not planned:
        raise UserError("nothing to run: give --agent NAME and/or --reference POLICY")
    return planned


def needs_local_model(planned: Sequence[RunAgent]) -> bool:
    return any(ra.spec.get("adapter") == "local" for ra in planned)


def concurrency_of(ra: RunAgent, settings: Settings) -> int:
    if ra.spec.get("adapter") == "reference":
        return 64
    if ra.spec.get("adapter") == "local":
        return int(ra.spec.get("concurrency") or 4)
    return int(ra.spec.get("concurrency") or settings.concurrency)


def _answer_mode(spec: dict[str, Any]) -> str:
    mode = str(spec.get("answer_mode") or "auto")
    if mode != "auto":
        return mode
    # llama.cpp's server honours response_format but not tools (PERFORMANCE-NOTES).
    return "json" if spec.get("adapter") == "local" else "tools"


@asynccontextmanager
async def built_agents(
    planned: Sequence[RunAgent],
    settings: Settings,
    *,
    seed: int,
    store: Store | None = None,
    local_base_url: str | None = None,
) -> Any:
    """Instantiate the planned agents; close their clients on exit."""
    from harness.backends import OpenAIBackend  # deferred: pulls in the HTTP stack

    async with AsyncExitStack() as stack:
        out: list[ChatAgent | ReferenceAgent] = []
        for ra in planned:
            spec = ra.spec
            adapter = spec.get("adapter")
            if adapter == "reference":
                out.append(ReferenceAgent(ra.name, str(spec["policy"]), seed=seed))
                continue
            if adapter == "command":
                backend: Any = CommandBackend(spec["command"], timeout=settings.timeout)
            else:
                if adapter == "local":
                    if not local_base_url:
                        raise UserError("the embedded model is not running")
                    base_url = local_base_url
                else:
                    base_url = _endpoint(ra.name, spec, settings)
                api_key = None
                if spec.get("api_key_env"):
                    api_key = os.environ.get(spec["api_key_env"])
                    if not api_key:
                        raise ConfigError(
                            f"${spec['api_key_env']} is not set; it should hold the API key",
                            key=f"agents.{ra.name}.api_key_env",
                        )
                backend = OpenAIBackend(
                    base_url,
                    spec.get("model"),
                    api_key=api_key,
                    concurrency=concurrency_of(ra, settings),
                    rate_limit=spec.get("rate_limit"),
                    timeout=settings.timeout,
                    max_retries=settings.max_retries,
                    store=store if settings.cache else None,
                )
            agent = ChatAgent(
                ra.name,
                backend,
                spec=spec,
                system_prompt=spec.get("system_prompt"),
                modules=spec.get("modules") or (),
                answer_mode=_answer_mode(spec),
                temperature=float(spec.get("temperature") or 0.0),
                max_tokens=int(spec.get("max_tokens") or 512),
            )
            stack.push_async_callback(agent.aclose)
            out.append(agent)
        yield out


def agent_names(planned: Sequence[RunAgent]) -> Iterator[str]:
    return (ra.name for ra in planned)
