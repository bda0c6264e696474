"""``mindledger doctor``: is everything needed here, and if not, how to fix it."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

import click
import httpx

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import format_option
from harness.local_model import model_status
from harness.settings import AgentConfig
from harness.workspace import Workspace
from ledger.db import mask, schema_version
from mindledger.errors import MindledgerError
from mindledger.secrets import scrub


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True


def _agent_check(agent: AgentConfig) -> Check:
    name = f"agent {agent.name} ({agent.adapter})"
    if agent.adapter == "reference":
        return Check(name, True, f"scripted policy {agent.policy}")
    if agent.adapter == "local":
        ok, detail = model_status()
        return Check(name, ok, detail)
    if agent.adapter == "command":
        exe = agent.command[0]
        found = shutil.which(exe) or (os.access(exe, os.X_OK) and exe)
        return Check(
            name, bool(found), f"{exe} {'found' if found else 'not found or not executable'}"
        )
    base = httpx.URL(agent.endpoint or "")
    url = base.copy_with(path=base.path.rstrip("/") + "/models")
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
    if r.status_code >= 400:
        return Check(name, False, scrub(f"{url} answered HTTP {r.status_code}"))
    return Check(name, True, f"{shown} answers")


@click.command()
@format_option("an array of checks (name, ok, detail, needed)")
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Same as --format json.")
def doctor(fmt: str, as_json: bool) -> None:
    """Check Python, settings, the database, the embedded model and every agent.

    Exits 1 when something needed is missing, and says how to fix it.

    \b
    Examples:
      mindledger doctor
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
        engine = Workspace.open(settings, migrate=False).engine
        version, pending = schema_version(engine)
        detail = f"{mask(url)}, schema {version or 'empty'}"
        if pending:
            detail += f", {pending} migration(s) pending (applied on first use, or `mindledger db migrate`)"
        checks.append(Check("database", True, detail))
    except MindledgerError as exc:
        checks.append(Check("database", False, str(exc)))
    ok, detail = model_status()
    checks.append(Check("embedded model", ok, detail, needed=False))
    for agent in settings.agents.values():
        checks.append(_agent_check(agent))
    if as_json or fmt == "json":
        echo_json([c.__dict__ for c in checks])
    else:
        for c in checks:
            mark = "ok " if c.ok else ("ERR" if c.needed else "-- ")
            click.echo(f"[{mark}] {c.name}: {c.detail}")
    failed = [c for c in checks if not c.ok and c.needed]
    if failed:
        click.echo(f"{len(failed)} problem(s) found.", err=True)
        ctx.exit(1)
