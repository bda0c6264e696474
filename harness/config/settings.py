"""The one settings object: defaults, then a TOML file, then ``MINDLEDGER_*`` environment
variables, then command-line flags. Each later layer overrides the earlier ones, field by field,
and :class:`Settings` remembers where every value came from.

The file is ``mindledger.toml`` in the working directory, else ``$MINDLEDGER_HOME/mindledger.toml``
(or a path given with ``--config``). Agents are declared in it as tables::

    [agents.mybot]
    adapter = "openai"                     # openai | command | local | reference
    endpoint = "http://127.0.0.1:8000/v1"
    model = "my-model"
    api_key_env = "MYBOT_API_KEY"          # the key is read from this variable, never stored
    system_prompt = "You are a careful reasoner."
    modules = ["perspective", "witness_log", "opponent_sim"]
    control = "mybot-control"              # the bare-model control it is paired with
    headers = { "X-Team" = "research" }    # sent with every request (never a key)
    extra_body = { "top_k" = 1 }           # merged into every request body

    [agents.mybot.own_modules.tom]         # a module inside the agent, and how to switch it off
    description = "theory-of-mind v1.0.1"
    off.headers = { "X-ToM" = "off" }      # any of: headers, body, model, endpoint (openai,
    off.body = { "tom_enabled" = false }   # local) or env (command): `--ablate tom` runs a
    off.model = "mybot-no-tom"             # variant with these applied

    [schedule]                             # `schedule = "0 3 * * *"` alone sets only the cron
    cron = "0 3 * * *"
    # every_seconds = 2                    # FOR TESTS: fire the nightly job every 2 s instead
    ablate = { mybot = ["tom"] }           # ablation variants added to mybot's nightly run

    [schedule.matrix]                      # the prediction matrix beside the nightly suite
    items = 20                             # (see harness.config.schedule_config for every key)
    conditions = ["zero-shot", "observe:3"]

Secrets are never read from the file: only the *name* of the environment variable holding a key.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shlex
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import platformdirs

from harness.config.notify_config import NotifyConfig, parse_notify
from harness.config.retention_config import retention_days
from harness.config.schedule_config import MatrixSchedule, parse_schedule_table
from harness.config.witness_config import WitnessConfig, parse_witnesses
from mindledger.errors import ConfigError, InputError
from mindledger.names import check_agent_name
from mindledger.secrets import scrub, strip_credentials

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "ADAPTERS",
    "MODULES",
    "SWITCHES",
    "AgentConfig",
    "ModuleSwitch",
    "OwnModule",
    "Settings",
    "default_home",
    "load_settings",
]

ADAPTERS: Mapping[str, str] = MappingProxyType(
    {
        "openai": "harness.adapters.openai_compatible:OPENAI",
        "command": "harness.adapters.command:COMMAND",
        "local": "harness.adapters.openai_compatible:LOCAL",
        "reference": "harness.adapters.reference:REFERENCE",
    }
)
"""The adapter kinds an agent may use, by the name its ``adapter`` gives: where each kind is
defined (``module:attribute``, an :class:`~harness.adapters.kinds.AdapterKind`). The one list of
kinds: :data:`harness.adapters.registry.KINDS` loads them from here (the settings cannot import
the adapters, which import the settings), so a new kind is its module and one line here."""

MODULES = ("perspective", "witness_log", "opponent_sim")
"""The reference scaffold's switchable modules (seed 002 §16–17: A′, B, D)."""

ENV_PREFIX = "MINDLEDGER_"

SWITCHES = ("headers", "body", "model", "endpoint", "env")
"""What switching off an agent's own module may change (see :class:`ModuleSwitch`)."""


def default_home() -> Path:
    """``$MINDLEDGER_HOME`` if set, else the user data directory for mindledger."""
    env = os.environ.get("MINDLEDGER_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("mindledger"))


@dataclass(frozen=True)
class ModuleSwitch:
    """How to switch one of an agent's own modules off: what its ablation variant changes."""

    headers: Mapping[str, str] = field(default_factory=dict)
    """Request headers added (over the agent's ``headers``)."""
    body: Mapping[str, Any] = field(default_factory=dict)
    """Request body fields added (over the agent's ``extra_body``)."""
    model: str | None = None
    """Another model name."""
    endpoint: str | None = None
    """Another endpoint URL (no credentials in it: use api_key_env)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables set (over the agent's ``env``), for a command agent."""

    def used(self) -> tuple[str, ...]:
        """The switch fields this one sets, in :data:`SWITCHES` order."""
        return tuple(k for k in SWITCHES if getattr(self, k))


@dataclass(frozen=True)
class OwnModule:
    """A module inside the agent (seed 002's ``theory-of-mind v1.0.1``), declared by the
    operator with the switch that turns it off, so that ``--ablate NAME`` can measure it."""

    description: str = ""
    """What the module is (free text, e.g. its name and version)."""
    off: ModuleSwitch = field(default_factory=ModuleSwitch)
    """What its ablation variant changes."""


@dataclass(frozen=True)
class AgentConfig:
    """One agent, as declared in the settings file."""

    name: str
    """The agent's name, unique within the settings."""
    adapter: str = "openai"
    """How to talk to it: openai, command, local or reference."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible API (``…/v1``), for the openai adapter."""
    model: str | None = None
    """Model name sent in requests."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (the key itself is never stored)."""
    system_prompt: str | None = None
    """System prompt; the control gets a minimal one instead."""
    modules: tuple[str, ...] = ()
    """Reference-scaffold modules switched on (perspective, witness_log, opponent_sim)."""
    control: str | None = None
    """Name of the agent used as this agent's bare-model control."""
    command: tuple[str, ...] = ()
    """Program and arguments, for the command adapter."""
    policy: str | None = None
    """Scripted policy, for the reference adapter (oracle, random, depth-capped:N, ...)."""
    answer_mode: str = "auto"
    """How the agent answers: tools (submit_answer call), json (response_format), text, or auto
    (tools for openai and command, json for the embedded model)."""
    temperature: float = 0.0
    """Sampling temperature."""
    max_tokens: int = 512
    """Cap on generated tokens per turn."""
    concurrency: int | None = None
    """Requests in flight to this agent at once (default: the global setting)."""
    rate_limit: float | None = None
    """Requests per second to this agent (default: unlimited)."""
    past_seat: bool = False
    """A predecessor seat (seed 002 B8): the matrix reports predicting it beside fresh-copy skill."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra request headers sent with every request (openai, local; never a key)."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Extra fields merged into every request body (openai, local)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables set for the program (command; never a key)."""
    own_modules: Mapping[str, OwnModule] = field(default_factory=dict)
    """The agent's own modules that are switched on, by name, each with how to switch it off."""

    def __hash__(self) -> int:
        # the mapping fields are dicts: hash what identifies an agent (equal configs agree on it)
        return hash((self.name, self.adapter, self.endpoint, self.model, self.command))

    @property
    def module_names(self) -> tuple[str, ...]:
        """Every module ``--ablate`` may switch off: the reference scaffold's, then its own."""
        return (*self.modules, *self.own_modules)

    def module_off(self, module: str) -> dict[str, Any]:
        """The changes to this config that switch ``module`` off (for :func:`dataclasses.replace`):
        a reference-scaffold module leaves ``modules``; an own module leaves ``own_modules`` and
        its switch is applied (headers, body fields and env merged over the agent's, model and
        endpoint replaced). KeyError if the agent has no such module."""
        if module in self.modules:
            return {"modules": tuple(m for m in self.modules if m != module)}
        switch = self.own_modules[module].off
        changes: dict[str, Any] = {
            "own_modules": {k: v for k, v in self.own_modules.items() if k != module}
        }
        if switch.headers:
            changes["headers"] = {**self.headers, **switch.headers}
        if switch.body:
            changes["extra_body"] = {**self.extra_body, **switch.body}
        if switch.env:
            changes["env"] = {**self.env, **switch.env}
        if switch.model:
            changes["model"] = switch.model
        if switch.endpoint:
            changes["endpoint"] = switch.endpoint
        return changes

    def public_dict(self) -> dict[str, Any]:
        """The declaration as a plain dict (no secret values: only the variable's name, and
        any credentials written into the endpoint URL masked)."""
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self)}
        if self.endpoint:
            out["endpoint"] = scrub(self.endpoint)
        return out

    def to_json(self) -> dict[str, Any]:
        """The declaration as JSON data, every field in order (tuples as lists), exactly as
        given: the endpoint keeps any credentials, so strip them before storing it."""
        data: dict[str, Any] = _agent_json().dump_python(self, mode="json")
        # stored specs keep their shape unless the agent is a past seat or has these
        for key in ("past_seat", *_MAPPINGS):
            if not data.get(key):
                del data[key]
        for module in data.get("own_modules", {}).values():
            module["off"] = {k: v for k, v in module["off"].items() if v}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentConfig:
        """The inverse of :meth:`to_json`: checks every field's type; missing fields take their
        defaults and unknown keys are ignored. Raises ConfigError naming the first bad field."""
        from pydantic import ValidationError

        try:
            config: AgentConfig = _agent_json().validate_python(dict(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            name = data.get("name", "?")
            raise ConfigError(
                f"stored agent {name!r}: {where}: {first['msg']}", key=f"agents.{name}.{where}"
            ) from None
        return config


_MAPPINGS = ("headers", "extra_body", "env", "own_modules")
"""The agent's mapping fields, left out of its JSON form when empty."""


@functools.cache
def _agent_json() -> TypeAdapter[AgentConfig]:
    from pydantic import TypeAdapter  # deferred: only runs and their specs need it

    return TypeAdapter(AgentConfig)


@dataclass(frozen=True)
class Settings:
    """Effective settings. Build them with :func:`load_settings`."""

    home: Path = field(default_factory=default_home)
    """Data directory: default database, keys, model cache."""
    db_url: str = ""
    """Database URL (sqlite:///… or postgresql://…); default: SQLite in the data directory."""
    concurrency: int = 64
    """Requests in flight per endpoint, by default."""
    timeout: float = 120.0
    """Seconds before one model request times out."""
    max_retries: int = 5
    """Retries of a failed request (429, 5xx, timeouts, dropped connections)."""
    max_failure_share: float = 0.2
    """Share of an agent's trials that may end as errors or unreadable answers before
    ``mindledger run`` (and ``quickstart``) exits 3, saying why."""
    cache: bool = True
    """Reuse stored answers to identical requests (turn off to draw fresh samples)."""
    seed: int | None = None
    """Default run seed (default: drawn fresh and logged)."""
    held_out_fraction: float = 0.3
    """Share of the seed space reserved for scheduled runs."""
    schedule: str = "0 3 * * *"
    """Cron expression of the nightly suite."""
    schedule_every: float | None = None
    """For tests only (``[schedule] every_seconds``): fire the nightly job every this many
    seconds instead of by ``schedule``'s cron expression (the soak benchmark and the fault
    tests live a month of nights in minutes). None: the cron expression."""
    api_host: str = "127.0.0.1"
    """Address the daemon's HTTP API listens on."""
    api_port: int = 8765
    """Port of the daemon's HTTP API."""
    prediction_share: float = 0.2
    """Share of proxied calls the service samples to carry a committed prediction."""
    api_max_queued_runs: int = 2
    """Runs one API token may have queued or running at once (a token may set its own)."""
    api_rate_limit: float = 200.0
    """Requests per second one API token may make (bursts of twice that); 429 beyond."""
    head_interval: float = 300.0
    """Seconds between the daemon's signed tree heads (when the ledger grew); 0: only on
    request."""
    verify_interval: float = 86400.0
    """Seconds between the daemon's verifications of the ledger (the first when it starts; the
    last one's time and result are in ``/metrics`` and ``/health``); 0: never."""
    log_format: str = "text"
    """How the daemon logs: ``text`` (uvicorn's lines) or ``json`` (one JSON object a line,
    with the run's id on every line of a run)."""
    reveal_timeout: float = 86400.0
    """Seconds after a commit before an unrevealed prediction expires."""
    model_threads: int = 1
    """CPU threads per embedded model server process (more than 1 stalls when other programs
    share the cores: see harness.model.local_model.LocalModelPool)."""
    model_servers: int = 0
    """Embedded model server processes; 0: one per usable CPU core (at most 8)."""
    model_weights: str = "q8_0"
    """The embedded model's weights as served: ``q8_0`` (re-encoded once from the packaged
    Q4_1 and cached; reads prompts about twice as fast, see harness.model.gguf_q8) or
    ``as-packaged``."""
    judge_agent: str = "local"
    """Agent that reads game trials' chains of thought as the extraction judge (seed 000
    Appendix D; any declared agent, or ``local``, the embedded model)."""
    judge_after_run: bool = False
    """Judge the game trials' chains of thought at the end of ``mindledger run``."""
    retention_transcripts_days: int | None = None
    """Days a trial's transcript is kept (``[retention] transcripts_days``): the daemon prunes
    older ones nightly (:mod:`ledger.retention`; never the ledger, scores or answers). None:
    kept for ever."""
    agents: Mapping[str, AgentConfig] = field(default_factory=dict)
    """Declared agents by name."""
    schedule_ablations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Modules ablated in each agent's nightly run (``[schedule] ablate``), by agent."""
    schedule_matrix: MatrixSchedule = field(default_factory=MatrixSchedule)
    """The prediction matrix run beside each nightly suite run (``[schedule.matrix]``)."""
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    """Where a flagged regression is announced (``[notify]``: webhook and/or command)."""
    witnesses: tuple[WitnessConfig, ...] = ()
    """Daemons that cosign this ledger's tree heads (``[[witnesses]]``: url, key, log)."""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Where each field's value came from (default, a file path, an env var, or a flag)."""

    @property
    def database_url(self) -> str:
        """``db_url``, or SQLite in the data directory when it is empty."""
        return self.db_url or f"sqlite:///{self.home / 'mindledger.db'}"

    def agent(self, name: str) -> AgentConfig:
        """The declared agent ``name``; raises ConfigError naming the known ones."""
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(sorted(self.agents)) or "none"
            raise ConfigError(
                f"no agent named {name!r} (declared: {known})", key="agents"
            ) from None

    def public_dict(self) -> dict[str, Any]:
        """Every setting as plain data, with secrets masked (URLs lose their passwords)."""
        from ledger.db import mask  # SQLAlchemy parses the URL: loaded when a URL is shown

        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "sources":
                continue
            value = getattr(self, f.name)
            if f.name == "agents":
                out["agents"] = {n: a.public_dict() for n, a in sorted(value.items())}
            elif f.name == "schedule_ablations":
                out[f.name] = {n: list(m) for n, m in sorted(value.items())}
            elif f.name in ("notify", "schedule_matrix"):
                out[f.name] = value.public_dict()
            elif f.name == "witnesses":
                out[f.name] = [w.public_dict() for w in value]
            else:
                out[f.name] = _plain(value)
        out["db_url"] = scrub(mask(self.database_url))
        return out


SCALAR_FIELDS = {
    f.name: f
    for f in fields(Settings)
    if f.name
    not in ("agents", "schedule_ablations", "schedule_every", "schedule_matrix", "notify",
            "witnesses", "sources")
}


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, ModuleSwitch | OwnModule):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


def _field_type(name: str) -> type:
    annotation = Settings.__dataclass_fields__[name].type
    text = str(annotation)
    if "Path" in text:
        return Path
    for t in (bool, int, float, str):
        if text.startswith(t.__name__) or text == t.__name__:
            return t
    return str


def _coerce(name: str, raw: Any, *, source: str, from_text: bool) -> Any:
    """Turn ``raw`` into the type of field ``name`` or raise ConfigError naming source and key."""
    kind = _field_type(name)
    optional = "None" in str(Settings.__dataclass_fields__[name].type)
    if from_text and isinstance(raw, str):
        text = raw.strip()
        if optional and text.lower() in ("", "none"):
            return None
        try:
            if kind is bool:
                if text.lower() in ("1", "true", "yes", "on"):
                    return True
                if text.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            if kind is int:
                if len(text.lstrip("+-")) > 18:
                    raise ValueError
                return int(text)
            if kind is float:
                return float(text)
        except ValueError:
            raise ConfigError(
                f"expected {kind.__name__}, got {_short(raw)}", file=source, key=name
            ) from None
        if kind is Path:
            return _coerce(name, text, source=source, from_text=False)
        return text
    if raw is None and optional:
        return None
    if kind is Path:
        if not isinstance(raw, str) or not raw.strip():
            raise ConfigError(f"expected a directory path, got {raw!r}", file=source, key=name)
        if "\0" in raw:
            raise ConfigError("a path cannot hold a NUL byte", file=source, key=name)
        return Path(raw).expanduser()
    if kind is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if kind is bool and not isinstance(raw, bool):
        raise ConfigError(f"expected true or false, got {raw!r}", file=source, key=name)
    if kind is int and (isinstance(raw, bool) or not isinstance(raw, int)):
        raise ConfigError(f"expected an integer, got {raw!r}", file=source, key=name)
    if kind is float and not isinstance(raw, float):
        raise ConfigError(f"expected a number, got {raw!r}", file=source, key=name)
    if kind is str and not isinstance(raw, str):
        raise ConfigError(f"expected a string, got {raw!r}", file=source, key=name)
    return raw


AGENT_FIELDS = {f.name: f for f in fields(AgentConfig)}


def parse_agent(name: str, table: Any, *, source: str) -> AgentConfig:
    """Validate one ``[agents.NAME]`` table (NAME by :func:`mindledger.names.check_agent_name`)."""
    try:
        check_agent_name(name, where="")
    except InputError as exc:
        raise ConfigError(str(exc), file=source, key="agents") from None
    key = f"agents.{name}"
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table of agent settings", file=source, key=key)
    values: dict[str, Any] = {"name": name}
    for k, v in table.items():
        if k not in AGENT_FIELDS or k == "name":
            known = ", ".join(n for n in AGENT_FIELDS if n != "name")
            raise ConfigError(f"unknown key (known: {known})", file=source, key=f"{key}.{k}")
        declared = str(AGENT_FIELDS[k].type)
        if k in ("modules", "command"):
            if isinstance(v, str) and k == "command":
                if len(v.split()) > 1:  # "python agent.py" would run a program of that name
                    try:
                        parts = shlex.split(v)  # as a shell would split it
                    except ValueError:  # its quotes unbalanced
                        parts = v.split()
                    raise ConfigError(
                        f"expected a list of strings, the program and its arguments: "
                        f"command = {json.dumps(parts)} (a string is one program's path; a path "
                        "with spaces goes in a list of one)",
                        file=source,
                        key=f"{key}.{k}",
                    )
                v = [v]
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ConfigError("expected a list of strings", file=source, key=f"{key}.{k}")
            v = tuple(v)
        elif k in ("temperature", "rate_limit"):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ConfigError(f"expected a number, got {v!r}", file=source, key=f"{key}.{k}")
            v = float(v)
            low, high = (0.0, 2.0) if k == "temperature" else (1e-6, 1e6)
            if not low <= v <= high:
                raise ConfigError(
                    f"expected a number from {low:g} to {high:g}, got {v!r}",
                    file=source,
                    key=f"{key}.{k}",
                )
        elif k in ("max_tokens", "concurrency"):
            high = 1_000_000 if k == "max_tokens" else 10_000
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= high:
                raise ConfigError(
                    f"expected an integer from 1 to {high:,}, got {_short(v)}",
                    file=source,
                    key=f"{key}.{k}",
                )
        elif k == "past_seat" and not isinstance(v, bool):
            raise ConfigError(f"expected true or false, got {v!r}", file=source, key=f"{key}.{k}")
        elif k == "headers":
            v = _headers(v, source=source, key=f"{key}.{k}")
        elif k == "extra_body":
            v = _body_fields(v, source=source, key=f"{key}.{k}")
        elif k == "env":
            v = _env(v, source=source, key=f"{key}.{k}")
        elif k == "own_modules":
            v = _own_modules(v, source=source, key=f"{key}.{k}")
        elif "str" in declared and not isinstance(v, str):
            raise ConfigError(f"expected a string, got {v!r}", file=source, key=f"{key}.{k}")
        values[k] = v
    agent = AgentConfig(**values)
    if agent.adapter not in ADAPTERS:
        raise ConfigError(
            f"unknown adapter {agent.adapter!r} (expected one of {', '.join(ADAPTERS)})",
            file=source,
            key=f"{key}.adapter",
        )
    for m in agent.modules:
        if m not in MODULES:
            raise ConfigError(
                f"unknown module {m!r} (expected some of {', '.join(MODULES)})",
                file=source,
                key=f"{key}.modules",
            )
    for m in agent.own_modules:
        if m in MODULES:
            raise ConfigError(
                f"{m!r} names a reference-scaffold module (list it in modules instead, or "
                "give your own module another name)",
                file=source,
                key=f"{key}.own_modules.{m}",
            )
    if agent.answer_mode not in ("auto", "tools", "json", "text"):
        raise ConfigError(
            f"unknown answer_mode {agent.answer_mode!r} (expected auto, tools, json or text)",
            file=source,
            key=f"{key}.answer_mode",
        )
    if agent.adapter == "openai" and not agent.endpoint:
        raise ConfigError("the openai adapter needs an endpoint URL", file=source, key=key)
    if agent.endpoint is not None:
        wrong = _url_problem(agent.endpoint)
        if wrong:
            raise ConfigError(wrong, file=source, key=f"{key}.endpoint")
    if agent.control == name:
        raise ConfigError(
            "an agent cannot be its own control (declare the bare model as another agent)",
            file=source,
            key=f"{key}.control",
        )
    if agent.adapter == "command" and not agent.command:
        raise ConfigError("the command adapter needs a command", file=source, key=key)
    if agent.adapter == "reference" and not agent.policy:
        raise ConfigError("the reference adapter needs a policy", file=source, key=key)
    return agent


MODULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""An own module's name: it becomes part of the ablation variant's name (``AGENT-no-NAME``)."""
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (RFC 9110 token)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""An environment variable's name."""
RESERVED_HEADERS = frozenset(
    ("host", "content-length", "content-type", "transfer-encoding", "connection", "accept")
)
"""Headers the client sets itself."""
SECRET_HEADERS = frozenset(
    ("authorization", "proxy-authorization", "api-key", "x-api-key", "cookie")
)
"""Headers that carry credentials: refused, since an agent's headers are stored with its runs."""
RESERVED_BODY = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "response_format",
        "temperature",
        "max_tokens",
        "seed",
        "stream",
        "n",
    }
)
"""Body fields the harness sets itself (the model is changed with ``model``/``off.model``)."""


def _table(value: Any, *, source: str, key: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"expected a table of {what}, got {_short(value)}", file=source, key=key)
    return value


def _named_entries(
    value: Any, *, source: str, key: str, what: str, name: re.Pattern[str], expected: str
) -> Iterator[tuple[str, Any, str]]:
    """The entries of the table ``value`` of ``what`` as (name, value, key of the entry), each
    name checked against the pattern ``name`` (else ``expected`` is the error)."""
    for entry, v in _table(value, source=source, key=key, what=what).items():
        where = f"{key}.{entry}"
        if not name.fullmatch(entry):
            raise ConfigError(expected, file=source, key=where)
        yield entry, v, where


def _headers(value: Any, *, source: str, key: str) -> dict[str, str]:
    """Validated request headers: names that are tokens, string values on one line, none that
    the client sets itself or that carries a credential."""
    out: dict[str, str] = {}
    for name, v, where in _named_entries(value, source=source, key=key,
                                         what="header names and values", name=HEADER_NAME,
                                         expected="expected a header name (letters, digits, -)"):
        if name.lower() in SECRET_HEADERS:
            raise ConfigError(
                "a header that carries a credential is stored with every run: name the "
                "variable holding the key in api_key_env instead",
                file=source,
                key=where,
            )
        if name.lower() in RESERVED_HEADERS:
            raise ConfigError("the client sets this header itself", file=source, key=where)
        if not isinstance(v, str) or any(c in v for c in "\r\n\0"):
            raise ConfigError(
                f"expected a string on one line, got {_short(v)}", file=source, key=where
            )
        out[name] = v
    return out


def _body_fields(value: Any, *, source: str, key: str) -> dict[str, Any]:
    """Validated extra body fields: JSON values, none that the harness sets itself."""
    table = _table(value, source=source, key=key, what="body fields and values")
    for name, v in table.items():
        where = f"{key}.{name}"
        if name in RESERVED_BODY:
            raise ConfigError(
                "the harness sets this field itself"
                + (" (use model, or off.model in a module)" if name == "model" else ""),
                file=source,
                key=where,
            )
        problem = _json_problem(v)
        if problem:
            raise ConfigError(problem, file=source, key=where)
    return dict(table)


def _json_problem(value: Any) -> str | None:
    """Why ``value`` (from TOML) is not a JSON value, or None."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"expected a finite number, got {value!r}"
    if isinstance(value, list):
        return next(filter(None, map(_json_problem, value)), None)
    if isinstance(value, Mapping):
        return next(filter(None, map(_json_problem, value.values())), None)
    return f"expected a JSON value (string, number, boolean, array, table), got {_short(value)}"


def _env(value: Any, *, source: str, key: str) -> dict[str, str]:
    """Validated environment variables: names of letters, digits and _, string values."""
    out: dict[str, str] = {}
    for name, v, where in _named_entries(
        value, source=source, key=key, what="variable names and values", name=ENV_NAME,
        expected="expected a variable name (letters, digits, _; not starting with a digit)",
    ):
        if not isinstance(v, str) or "\0" in v:
            raise ConfigError(f"expected a string, got {_short(v)}", file=source, key=where)
        out[name] = v
    return out


def _own_modules(value: Any, *, source: str, key: str) -> dict[str, OwnModule]:
    """Validated ``[agents.NAME.own_modules.MODULE]`` tables."""
    out: dict[str, OwnModule] = {}
    for name, table, where in _named_entries(
        value, source=source, key=key, what="modules", name=MODULE_NAME,
        expected="expected a module name of letters, digits, _ . - (at most 64)",
    ):
        table = _table(table, source=source, key=where, what="module settings")
        for k in table:
            if k not in ("description", "off"):
                raise ConfigError(
                    "unknown key (known: description, off)", file=source, key=f"{where}.{k}"
                )
        description = table.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(
                f"expected a string, got {_short(description)}",
                file=source,
                key=f"{where}.description",
            )
        if "off" not in table:
            raise ConfigError(
                f"expected how to switch it off: off.{{{', '.join(SWITCHES)}}}",
                file=source,
                key=f"{where}.off",
            )
        out[name] = OwnModule(description, _switch(table["off"], source=source, key=f"{where}.off"))
    return out


def _switch(value: Any, *, source: str, key: str) -> ModuleSwitch:
    table = _table(value, source=source, key=key, what=", ".join(SWITCHES))
    values: dict[str, Any] = {}
    for k, v in table.items():
        where = f"{key}.{k}"
        if k == "headers":
            values[k] = _headers(v, source=source, key=where)
        elif k == "body":
            values[k] = _body_fields(v, source=source, key=where)
        elif k == "env":
            values[k] = _env(v, source=source, key=where)
        elif k in ("model", "endpoint"):
            if not isinstance(v, str) or not v.strip():
                raise ConfigError(f"expected a string, got {_short(v)}", file=source, key=where)
            if k == "endpoint":
                wrong = _url_problem(v)
                if wrong:
                    raise ConfigError(wrong, file=source, key=where)
                if strip_credentials(v)[1]:
                    raise ConfigError(
                        "no credentials in a module's endpoint: name the variable holding the "
                        "key in api_key_env",
                        file=source,
                        key=where,
                    )
            values[k] = v
        else:
            raise ConfigError(
                f"unknown switch (known: {', '.join(SWITCHES)})", file=source, key=where
            )
    switch = ModuleSwitch(**values)
    if not switch.used():
        raise ConfigError(
            f"switching it off changes nothing: set one of {', '.join(SWITCHES)}",
            file=source,
            key=key,
        )
    return switch


def find_config_file(
    explicit: str | os.PathLike[str] | None, cwd: Path | None = None
) -> Path | None:
    """The settings file to read: the explicit one, ./mindledger.toml, or the one in the home."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError("settings file not found", file=str(path))
        return path
    here = (cwd or Path.cwd()) / "mindledger.toml"
    if here.is_file():
        return here
    home_env = os.environ.get("MINDLEDGER_HOME")
    if home_env:
        candidate = Path(home_env).expanduser() / "mindledger.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Build the effective settings: defaults → TOML file → ``MINDLEDGER_*`` env → flags.

    ``flags`` maps field names to values already given on the command line (strings are parsed
    as the environment's are). Raises :class:`ConfigError` naming the file or variable and the key
    for a malformed file, an unknown key or a wrong type.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {name: "default" for name in SCALAR_FIELDS}
    agents: dict[str, AgentConfig] = {}
    schedule_ablations: dict[str, tuple[str, ...]] = {}
    schedule_matrix = MatrixSchedule()
    notify = NotifyConfig()
    witnesses: tuple[WitnessConfig, ...] = ()

    path = find_config_file(config_path, cwd)
    if path is not None:
        source = str(path)
        data = _read_toml(path)
        for key, raw in data.items():
            if key == "schedule" and isinstance(raw, Mapping):
                continue  # read below, once every agent is known
            if key == "agents":
                if not isinstance(raw, Mapping):
                    raise ConfigError("expected tables [agents.NAME]", file=source, key="agents")
                for name, table in raw.items():
                    agents[name] = parse_agent(name, table, source=source)
                    sources[f"agents.{name}"] = source
            elif key == "notify":
                notify = parse_notify(raw, source=source)
            elif key == "witnesses":
                witnesses = parse_witnesses(raw, source=source)
                sources["witnesses"] = source
            elif key == "retention":  # [retention] transcripts_days = N
                values["retention_transcripts_days"] = retention_days(raw, source=source)
                sources["retention_transcripts_days"] = source
            elif key in SCALAR_FIELDS:
                values[key] = _coerce(key, raw, source=source, from_text=False)
                sources[key] = source
            else:
                known = ", ".join(
                    sorted([*SCALAR_FIELDS, "agents", "notify", "retention", "witnesses"])
                )
                raise ConfigError(f"unknown key (known keys: {known})", file=source, key=key)
        if isinstance(data.get("schedule"), Mapping):
            cron, every, schedule_ablations, schedule_matrix = parse_schedule_table(
                data["schedule"], {n: a.module_names for n, a in agents.items()}, source=source
            )
            if cron is not None:
                values["schedule"] = _coerce("schedule", cron, source=source, from_text=False)
                sources["schedule"] = source
            if every is not None:
                values["schedule_every"] = every
                sources["schedule_every"] = source

    for name in SCALAR_FIELDS:
        var = ENV_PREFIX + name.upper()
        if var in env:
            values[name] = _coerce(name, env[var], source=f"${var}", from_text=True)
            sources[name] = f"${var}"

    for name, raw in (flags or {}).items():
        if name not in SCALAR_FIELDS:
            known = ", ".join(sorted(SCALAR_FIELDS))
            raise ConfigError(f"unknown setting (known: {known})", file="command line", key=name)
        values[name] = _coerce(name, raw, source="command line", from_text=isinstance(raw, str))
        sources[name] = "flag"

    for name, agent in agents.items():
        if agent.control and agent.control not in agents:
            raise ConfigError(
                f"control {agent.control!r} is not a declared agent",
                file=sources.get(f"agents.{name}"),
                key=f"agents.{name}.control",
            )
    settings = Settings(
        **values, agents=agents, schedule_ablations=schedule_ablations,
        schedule_matrix=schedule_matrix, notify=notify, witnesses=witnesses, sources=sources,
    )
    _check_ranges(settings)
    return settings


MAX_CONFIG_BYTES = 1024 * 1024
"""Largest settings file read."""


def _read_toml(path: Path) -> dict[str, Any]:
    """The settings file's table: UTF-8 (a byte-order mark allowed), at most 1 MiB, TOML."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=source) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES:,} bytes", file=source)
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text (byte {exc.start}: {exc.reason})", file=source
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=source) from None
    except RecursionError:
        raise ConfigError("not valid TOML: nested too deeply", file=source) from None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _url_problem(url: str) -> str | None:
    """What is wrong with an endpoint URL, or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL ({exc}): expected http(s)://host[:port]/v1"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"expected an http(s)://host[:port]/… URL, got {scrub(_short(url))}"
    if port == 0 or any(c.isspace() for c in url):
        return f"expected an http(s)://host[:port]/… URL, got {scrub(_short(url))}"
    return None


MODEL_WEIGHTS = ("q8_0", "as-packaged")
"""The values of ``model_weights``."""
LOG_FORMATS = ("text", "json")
"""The values of ``log_format`` (as :data:`harness.daemon.logs.LOG_FORMATS`)."""

RANGES: dict[str, tuple[float, float]] = {
    "concurrency": (1, 10_000),
    "timeout": (0.001, 86_400),
    "max_retries": (0, 100),
    "held_out_fraction": (0.01, 0.99),
    "prediction_share": (0, 1),
    "api_max_queued_runs": (1, 1_000),
    "head_interval": (0, 86_400),
    "verify_interval": (0, 30 * 86_400),
    "api_rate_limit": (0.1, 100_000),
    "reveal_timeout": (1, 10 * 365 * 86_400),
    "model_threads": (1, 256),
    "model_servers": (0, 64),
    "max_failure_share": (0, 1),
    "api_port": (1, 65_535),
}
"""The documented range of every numeric setting (inclusive): anything else, NaN and the
infinities included, is refused with the range in the message."""


def _check_ranges(s: Settings) -> None:
    def bad(key: str, expected: str) -> ConfigError:
        return ConfigError(
            f"expected {expected}, got {_short(getattr(s, key))}",
            file=s.sources.get(key),
            key=key,
        )

    for key, (low, high) in RANGES.items():
        value = getattr(s, key)
        if not (isinstance(value, int | float) and low <= value <= high):
            raise bad(key, f"a number from {low:g} to {high:g}")
    if s.retention_transcripts_days is not None and s.retention_transcripts_days < 1:
        raise bad("retention_transcripts_days", "a whole number of days of at least 1")
    if s.seed is not None and not 0 <= s.seed < 2**63:
        raise bad("seed", "a seed from 0 to 2**63 - 1")
    if s.model_weights not in MODEL_WEIGHTS:
        raise bad("model_weights", f"one of {', '.join(MODEL_WEIGHTS)}")
    if s.log_format not in LOG_FORMATS:
        raise bad("log_format", f"one of {', '.join(LOG_FORMATS)}")
    if s.db_url and not s.db_url.startswith(("sqlite:", "postgresql:", "postgresql+", "postgres:")):
        raise bad("db_url", "a sqlite:/// or postgresql:// URL")


def with_overrides(settings: Settings, **changes: Any) -> Settings:
    """A copy of ``settings`` with some fields changed (for tests and internal use)."""
    return replace(settings, **changes)
