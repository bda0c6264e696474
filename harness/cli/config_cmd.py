"""``mindledger config``: the effective settings."""

from __future__ import annotations

import click

from harness.cli.common import echo_json, get_settings


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
def show(sources: bool) -> None:
    """Print the effective settings as JSON, secrets masked.

    \b
    Example:
      mindledger config show
    """
    settings = get_settings(click.get_current_context())
    data = settings.public_dict()
    if sources:
        data["_sources"] = dict(sorted(settings.sources.items()))
    echo_json(data)
