"""``mindledger config``: the effective settings."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import click

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import format_option


@click.group()
def config() -> None:
    """Inspect the effective settings.

    Settings come from defaults, then a TOML file (./mindledger.toml or
    $MINDLEDGER_HOME/mindledger.toml, or --config), then MINDLEDGER_* environment
    variables, then flags (--db, -o KEY=VALUE).

    \b
    Examples:
      mindledger config show
      mindledger -o timeout=30 config show --no-sources
      MINDLEDGER_CONCURRENCY=8 mindledger config show
    """


@config.command("show")
@click.option("--sources/--no-sources", default=True, help="Also show where each value came from.")
@format_option(
    "every setting by name (agents, notify and schedule_matrix as objects), and under "
    '"_sources" where each top-level value came from',
    csv="one row per setting (key, value, source), nested keys dotted",
)
def show(sources: bool, fmt: str) -> None:
    """Print the effective settings, secrets masked: a table of each setting, its value and
    where the value came from (default, the settings file, a MINDLEDGER_* variable or a
    flag); nested settings (agents, [notify], [schedule.matrix]) one row per key.

    \b
    Examples:
      mindledger config show
      mindledger config show --format json | jq .db_url
    """
    ctx = click.get_current_context()
    settings = get_settings(ctx)
    data = settings.public_dict()
    if fmt == "json":
        if sources:
            data["_sources"] = dict(sorted(settings.sources.items()))
        echo_json(data)
        return
    origin = _origin(settings.sources, ctx.find_root().obj.get("config_path"))
    rows = [(key, _text(value), origin(key, value)) for key, value in _flat(data)]
    if fmt == "csv":
        import csv
        import sys

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(("key", "value", "source")[: 3 if sources else 2])
        writer.writerows(row[: 3 if sources else 2] for row in rows)
        return
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console

    table = Table()
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    if sources:
        table.add_column("source", overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row[: 3 if sources else 2]))
    print_table(stdout_console(), table)


def _flat(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every leaf of ``data``; a nested setting left unset (None,
    or empty) is left out, a top-level one is shown."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _flat(value, f"{name}.")
        elif not prefix or value not in (None, [], {}, ""):
            yield name, value


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(map(str, value)) or "(none)"
    if value == {}:
        return "(none)"
    return json.dumps(value, ensure_ascii=False)


def _origin(recorded: Mapping[str, str], config_path: str | None) -> Any:
    """Where a (dotted) setting came from: the source recorded for it or for the nearest
    setting that holds it (an agent's keys: its table's file); a nested setting with nothing
    recorded came from the settings file if it differs from its default, else is a default."""
    from harness.config.notify_config import NotifyConfig
    from harness.config.schedule_config import MatrixSchedule
    from harness.config.settings import find_config_file

    defaults = dict(_flat({"notify": NotifyConfig().public_dict(),
                           "schedule_matrix": MatrixSchedule().public_dict()}))
    path = find_config_file(config_path)

    def origin(key: str, value: Any) -> str:
        parts = key.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in recorded:
                return recorded[".".join(parts[:n])]
        unchanged = key in defaults and defaults[key] == value
        if path is None or unchanged or (key not in defaults and not value):
            return "default"
        return str(path)

    return origin
