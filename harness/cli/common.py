"""Helpers shared by the CLI commands: settings and database from the click context."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harness.config.settings import Settings, load_settings
from mindledger.errors import NotFoundError
from mindledger.names import check_agent_name

if TYPE_CHECKING:  # the database is imported when a command opens it: `config` never does
    from harness.config.workspace import Workspace
    from ledger.store import Store

__all__ = [
    "echo_json",
    "get_settings",
    "get_store",
    "get_workspace",
    "known_agent",
    "reads_only",
    "resolve_run",
]

C = TypeVar("C", bound=click.Command)

READS_ONLY = "mindledger_reads_only"
"""The attribute :func:`reads_only` sets on a command."""


def reads_only(command: C) -> C:
    """Mark ``command`` as one that only reads: the workspace it opens (:func:`get_workspace`)
    creates nothing — no data directory, database, schema or service key — and a database
    that is not there is a NoDatabaseError (exit 2). Put it above ``@click.command``."""
    setattr(command, READS_ONLY, True)
    return command


def is_read_only(ctx: click.Context) -> bool:
    """Whether the command of ``ctx`` (or a group above it) is marked :func:`reads_only`."""
    current: click.Context | None = ctx
    while current is not None:
        if getattr(current.command, READS_ONLY, False):
            return True
        current = current.parent
    return False


def get_settings(ctx: click.Context) -> Settings:
    """The effective settings for this invocation (loaded once per command)."""
    root = ctx.find_root()
    root.ensure_object(dict)
    obj = root.obj
    if "settings" not in obj:
        obj["settings"] = load_settings(obj.get("config_path"), flags=obj.get("overrides") or {})
    settings: Settings = obj["settings"]
    return settings


def get_workspace(ctx: click.Context) -> Workspace:
    """The workspace of the configured settings: its database migrated to the current schema
    (opened once per command; its ledger opens on first use); read-only for a command marked
    :func:`reads_only`."""
    from harness.config.workspace import Workspace

    settings = get_settings(ctx)
    obj = ctx.find_root().obj
    if "workspace" not in obj:
        obj["workspace"] = Workspace.open(settings, read_only=is_read_only(ctx))
    workspace: Workspace = obj["workspace"]
    return workspace


def get_store(ctx: click.Context) -> Store:
    """A store over the configured database, migrated to the current schema."""
    return get_workspace(ctx).store


def resolve_run(ctx: click.Context, ref: str) -> str:
    """The id of the stored run ``ref`` names (an id, its unique start, ``latest`` or
    ``latest~N``); a NotFoundError (exit 2) naming the newest runs when there is none."""
    return get_store(ctx).resolve_run(ref)


def known_agent(
    ctx: click.Context,
    name: str,
    *,
    what: str = "agent",
    also: Collection[str] = (),
    hint: str = "",
) -> str:
    """``name`` if it names an agent this installation knows: declared in the settings, built
    in (``local``), taking part in a stored run (a ``ref:…`` reference agent, a control, a
    variant), or one of ``also``. Else a NotFoundError (exit 2) that lists the known names, as
    ``run --agent`` refuses an unknown one, followed by ``hint``."""
    from harness.run.build import BUILTIN_AGENTS

    check_agent_name(name, where=what)
    settings = get_settings(ctx)
    if name in settings.agents or name in BUILTIN_AGENTS or name in also:
        return name
    stored = get_store(ctx).stored_agent_names()
    if name in stored:
        return name
    known = sorted({*settings.agents, *BUILTIN_AGENTS, *stored, *also})
    shown = ", ".join(known[:20]) + (f", … ({len(known) - 20} more)" if len(known) > 20 else "")
    raise NotFoundError(f"no {what} named {name!r} (known: {shown or 'none'}){hint}")


def echo_json(value: Any, *, indent: int | None = 2) -> None:
    """Print ``value`` as JSON on stdout."""
    click.echo(json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=False))
