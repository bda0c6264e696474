"""Helpers shared by the CLI commands: settings and database from the click context."""

from __future__ import annotations

import json
from typing import Any

import click

from harness.settings import Settings, load_settings
from harness.workspace import Workspace
from ledger.store import Store

__all__ = ["echo_json", "get_settings", "get_store", "get_workspace"]


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
    (opened once per command; its ledger opens on first use)."""
    settings = get_settings(ctx)
    obj = ctx.find_root().obj
    if "workspace" not in obj:
        obj["workspace"] = Workspace.open(settings)
    workspace: Workspace = obj["workspace"]
    return workspace


def get_store(ctx: click.Context) -> Store:
    """A store over the configured database, migrated to the current schema."""
    return get_workspace(ctx).store


def echo_json(value: Any, *, indent: int | None = 2) -> None:
    """Print ``value`` as JSON on stdout."""
    click.echo(json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=False))
