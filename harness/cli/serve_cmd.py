"""``mindledger serve``: run the daemon; ``mindledger serve token AGENT``: make an API token."""

from __future__ import annotations

import click

from harness.cli.common import get_settings

__all__ = ["serve"]


@click.group(invoke_without_command=True)
@click.option("--host", default=None, help="Address to listen on (default: settings api_host).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help="Port (default: settings api_port)."
)
@click.option("--no-scheduler", is_flag=True, help="Serve the API and proxy only; run nothing.")
@click.option("--suite", default="quick", show_default=True, help="The suite of the nightly runs.")
@click.pass_context
def serve(
    ctx: click.Context, host: str | None, port: int | None, no_scheduler: bool, suite: str
) -> None:
    """Run the daemon: scheduler, HTTP API and query proxy, until Ctrl-C.

    \b
    Examples:
      mindledger serve                     # on 127.0.0.1:8765, nightly suites on
      mindledger serve --port 9000 --no-scheduler
      mindledger serve token mybot         # print a new API token for mybot (once)
    """
    if ctx.invoked_subcommand is not None:
        return
    from harness.daemon.server import build_daemon
    from harness.suites import get_suite

    get_suite(suite)
    settings = get_settings(ctx)
    daemon = build_daemon(settings, scheduler=not no_scheduler, suite=suite)
    bound_host = host or settings.api_host
    bound_port = port or settings.api_port
    click.echo(f"mindledger daemon on http://{bound_host}:{bound_port}", err=True)
    daemon.serve(bound_host, bound_port)


@serve.command("token")
@click.argument("agent")
@click.pass_context
def token(ctx: click.Context, agent: str) -> None:
    """Create an API token for AGENT and print it. It is shown only this once: the database
    keeps only its hash."""
    from harness.daemon.tokens import create_token
    from ledger.db import open_engine

    engine = open_engine(get_settings(ctx).database_url)
    try:
        click.echo(create_token(engine, agent))
    finally:
        engine.dispose()
    click.echo(
        f"token for {agent!r}: send it as 'Authorization: Bearer <token>'; it is not shown again",
        err=True,
    )
