"""``mindledger doctor``: is everything needed here, and if not, how to fix it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

import click

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import format_option
from harness.config.settings import AgentConfig, Settings, with_overrides
from harness.config.workspace import Workspace
from harness.model.local_model import model_status
from ledger.db import mask, schema_version
from mindledger.errors import MindledgerError, NoDatabaseError
from mindledger.items import Item
from mindledger.secrets import scrub
from mindledger.words import counted


@dataclass
class Probe:
    """One real item sent to an agent by `doctor`, and what came back."""

    item: str
    """What was asked: ``belief question`` or ``game``."""
    outcome: str
    """ok, wrong, unparsed or error (as `mindledger trials` says)."""
    answer: Any
    expected: Any
    detail: str
    """The error or the reason no answer could be read; empty when one was."""
    latency_s: float
    turns: int

    @property
    def failed(self) -> bool:
        return self.outcome in ("error", "unparsed")

    def line(self) -> str:
        costs = f"{self.latency_s:.1f} s, {self.turns} turn{'s' if self.turns != 1 else ''}"
        if self.outcome == "error":
            return f"{self.item}: no reply it could use ({costs}): {self.detail}"
        if self.outcome == "unparsed":
            return f"{self.item}: replied, but no answer could be read ({costs}): {self.detail}"
        verdict = "right" if self.outcome == "ok" else f"wrong; expected {_shown(self.expected)}"
        return f"{self.item}: answered {_shown(self.answer)} ({verdict}; {costs})"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True
    probes: list[Probe] = field(default_factory=list)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


def _probe_items(settings: Settings) -> list[tuple[str, Item]]:
    """The real items doctor sends: the quick suite's first false-belief question and its
    first level-k game (an integer ``submit_action``), from a development seed."""
    from harness.config.workspace import SeedPolicy
    from harness.run.suites import get_suite

    seeds = SeedPolicy.of(settings)
    seed = next(s for s in range(1, 10_000) if not seeds.is_held_out(s))
    belief = game = None
    for item in get_suite("quick").items(seed):
        if belief is None and item.family == "nesttom" and item.meta.get("belief") == "false":
            belief = item
        if game is None and item.family == "games":
            game = item
        if belief is not None and game is not None:
            break
    return [(what, it) for what, it in (("belief question", belief), ("game", game)) if it]


async def _probe_agents(
    settings: Settings, agents: list[AgentConfig], items: list[tuple[str, Item]]
) -> dict[str, list[Probe] | str]:
    """Every agent's answers to ``items`` (or why it could not be built), all agents at once;
    no retries, no cache, the embedded model started if one needs it."""
    from harness.adapters.kinds import BuildContext
    from harness.adapters.registry import adapter_kind, build_agent
    from harness.run.execution import embedded_model
    from harness.run.runner import score_attempt
    from mindledger import family as registry

    quick = with_overrides(settings, max_retries=0)

    async def probe(config: AgentConfig, url: Any) -> list[Probe] | str:
        try:
            agent = build_agent(config, BuildContext(quick, seed=0, local_base_url=url))
        except MindledgerError as exc:
            return str(exc)
        probes = []
        try:
            for what, item in items:
                att = await agent.attempt(item)
                if att.not_applicable:
                    continue
                rec = score_attempt("doctor", config.name, item, att)
                outcome = (
                    "error" if att.error else "unparsed" if att.answer is None
                    else "ok" if rec.correct else "wrong"
                )
                probes.append(Probe(
                    item=what,
                    outcome=outcome,
                    answer=att.answer,
                    expected=registry.get(item.family).design(item).truth_answer,
                    detail=scrub(att.error or att.parse_problem or ""),
                    latency_s=att.latency_s,
                    turns=att.turns,
                ))
        finally:
            await agent.aclose()
        return probes

    needs_model = any(adapter_kind(a.adapter).needs_local_model for a in agents)
    with embedded_model(settings) if needs_model else contextlib.nullcontext(None) as url:
        results = await asyncio.gather(*(probe(a, url) for a in agents))
    return {a.name: r for a, r in zip(agents, results, strict=True)}


def _agent_check(agent: AgentConfig, weights: str = "q8_0") -> Check:
    name = f"agent {agent.name} ({agent.adapter})"
    if agent.adapter == "reference":
        return Check(name, True, f"scripted policy {agent.policy}")
    if agent.adapter == "local":
        ok, detail = model_status(weights)
        return Check(name, ok, detail)
    if agent.adapter == "command":
        exe = agent.command[0]
        found = shutil.which(exe) or (os.access(exe, os.X_OK) and exe)
        return Check(
            name, bool(found), f"{exe} {'found' if found else 'not found or not executable'}"
        )
    import httpx  # only an openai agent's endpoint is asked

    base = httpx.URL(agent.endpoint or "")
    # the root the adapter posts under: the endpoint's path, or /v1 when it has none
    url = base.copy_with(path=(base.path.rstrip("/") or "/v1") + "/models")
    shown = scrub(str(agent.endpoint))
    headers = {}
    if agent.api_key_env:
        key = os.environ.get(agent.api_key_env)
        if not key:
            return Check(
                name, False, f"${agent.api_key_env} is not set (it should hold the API key)"
            )
        headers["Authorization"] = f"Bearer {key}"
    try:
        r = httpx.get(url, headers=headers, timeout=5)
    except httpx.HTTPError as exc:
        return Check(
            name, False, scrub(f"{shown} does not answer: {exc.__class__.__name__}: {exc}")
        )
    if r.status_code in (404, 405, 501):  # a server, without /models: the probe asks its chat
        return Check(
            name, True, scrub(f"{shown} answers (its /models: HTTP {r.status_code})")
        )
    if r.status_code >= 400:
        why = " (check the API key)" if r.status_code in (401, 403) else ""
        return Check(name, False, scrub(f"{url} answered HTTP {r.status_code}{why}"))
    return Check(name, True, f"{shown} answers")


@click.command()
@format_option("an array of checks (name, ok, detail, needed, probes)")
@click.option(
    "--no-probe",
    is_flag=True,
    help="Do not send the agents a real item (check only that they can be reached).",
)
def doctor(fmt: str, no_probe: bool) -> None:
    """Check Python, settings, the database, the embedded model and every agent.

    Every declared agent that can be reached is sent two real items through its adapter, as
    a run would send them (a false-belief question and a level-k game, no retries): doctor
    shows what it answered and whether the answer could be read, and marks it [ERR] when it
    could not, with the reason. Exits 1 when something needed is missing or an agent's
    replies cannot be used, and says how to fix it.

    \b
    Examples:
      mindledger doctor
      mindledger doctor --no-probe
      mindledger doctor --format json | jq -r '.[] | select(.ok | not) | .name'
    """
    ctx = click.get_current_context()
    checks: list[Check] = []
    py_ok = sys.version_info >= (3, 11)
    checks.append(
        Check("python", py_ok, sys.version.split()[0] + ("" if py_ok else " (need ≥ 3.11)"))
    )
    settings = get_settings(ctx)
    files = sorted(
        {
            s
            for s in settings.sources.values()
            if s not in ("default", "flag") and not s.startswith("$")
        }
    )
    envs = sorted({s for s in settings.sources.values() if s.startswith("$")})
    where = ", ".join(files) if files else "no settings file (defaults)"
    if envs:
        where += "; environment " + " ".join(envs)
    checks.append(Check("settings", True, where))
    url = settings.database_url
    try:
        engine = Workspace.open(settings, migrate=False, read_only=True).engine
        version, pending = schema_version(engine)
        detail = f"{mask(url)}, schema {version or 'empty'}"
        if pending:
            detail += f", {counted(pending, 'migration')} pending (applied on first use, or `mindledger db migrate`)"
        checks.append(Check("database", True, detail))
    except NoDatabaseError:
        checks.append(
            Check(
                "database",
                True,
                f"{mask(url)}: none yet (the first command that writes, or "
                "`mindledger db migrate`, creates it)",
            )
        )
    except MindledgerError as exc:
        checks.append(Check("database", False, str(exc)))
    ok, detail = model_status(settings.model_weights)
    checks.append(Check("embedded model", ok, detail, needed=False))
    agent_checks = {a.name: _agent_check(a, settings.model_weights) for a in settings.agents.values()}
    reachable = [a for a in settings.agents.values() if agent_checks[a.name].ok]
    if reachable and not no_probe:
        results = asyncio.run(_probe_agents(settings, reachable, _probe_items(settings)))
        for name, result in results.items():
            check = agent_checks[name]
            if isinstance(result, str):
                check.ok, check.detail = False, f"{check.detail}, but it cannot be built: {result}"
                continue
            check.probes = result
            if any(p.failed for p in result):
                check.ok = False
                check.detail += ", but its replies could not be used"
    checks.extend(agent_checks.values())
    if fmt == "json":
        echo_json([asdict(c) for c in checks])
    else:
        for c in checks:
            mark = "ok " if c.ok else ("ERR" if c.needed else "-- ")
            click.echo(f"[{mark}] {c.name}: {c.detail}")
            for p in c.probes:
                click.echo(f"      {p.line()}")
    failed = [c for c in checks if not c.ok and c.needed]
    if failed:
        click.echo(f"{counted(len(failed), 'problem')} found.", err=True)
        ctx.exit(1)
