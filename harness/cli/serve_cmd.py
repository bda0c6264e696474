"""``mindledger serve``: run the daemon; ``mindledger serve token``: make, list and revoke API
tokens."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from harness.cli.common import echo_json, get_settings, get_store, known_agent
from harness.cli.conventions import an_id, format_option, options_as
from harness.config.settings import LOG_FORMATS
from mindledger.errors import InputError, NotFoundError

if TYPE_CHECKING:
    from harness.daemon.tokens import TokenInfo

__all__ = ["serve"]


@click.group(invoke_without_command=True)
@click.option("--host", default=None, help="Address to listen on (default: settings api_host).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help="Port (default: settings api_port)."
)
@click.option("--no-scheduler", is_flag=True, help="Serve the API and proxy only; run nothing.")
@click.option("--suite", default="quick", show_default=True, help="The suite of the nightly runs.")
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default=None,
    help="text (uvicorn's lines) or json (one JSON object a line: time, level, logger, message, "
    "and run_id on every line of a run). Default: the log_format setting (text).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    no_scheduler: bool,
    suite: str,
    log_format: str | None,
) -> None:
    """Run the daemon: scheduler, HTTP API and query proxy, until Ctrl-C.

    \b
    Examples:
      mindledger serve                     # on 127.0.0.1:8765, nightly suites on
      mindledger serve --port 9000 --no-scheduler
      mindledger serve --log-format json   # JSON lines (journald, Loki…)
      mindledger serve token mybot         # a new API token, shown once
    """
    if ctx.invoked_subcommand is not None:
        return
    from harness.daemon.memory import limit_malloc_arenas
    from harness.daemon.server import build_daemon
    from harness.run.suites import get_suite

    limit_malloc_arenas()  # before any thread starts: a daemon's heap, not eight a core
    get_suite(suite)
    settings = get_settings(ctx)
    if log_format is not None:
        settings = replace(settings, log_format=log_format)
    daemon = build_daemon(settings, scheduler=not no_scheduler, suite=suite)
    bound_host = host or settings.api_host
    bound_port = port or settings.api_port

    def announce() -> None:
        line = f"mindledger daemon on http://{bound_host}:{bound_port}"
        if settings.log_format == "json":
            logging.getLogger("mindledger.daemon").info(line)
        else:
            click.echo(line, err=True)

    daemon.serve(bound_host, bound_port, announce=announce)


_CREATE_OPTIONS = ("--scope", "--operator", "--label", "--expires", "--max-runs", "--new")


@dataclass(frozen=True)
class TokenOptions:
    """The argument and options of ``mindledger serve token``, as given."""

    agent: str | None
    """AGENT: the agent the token acts as."""
    scope: str | None
    """--scope: agent or operator."""
    operator: bool
    """--operator: make an operator token."""
    label: str | None
    """--label: whose the token is."""
    expires: str | None
    """--expires: when the token expires, as given."""
    max_runs: str | None
    """--max-runs: the cap on its open runs, as given."""
    new: bool
    """--new: the agent may be one this installation has not met."""
    list_: bool
    """--list: list the tokens instead."""
    fmt: str
    """--format: how --list prints them."""
    revoke: str | None
    """--revoke: the id of a token to revoke instead."""


@serve.command("token")
@click.argument("agent", required=False)
@click.option(
    "--scope",
    default=None,
    metavar="agent|operator",
    help="agent (default): acts as AGENT only. operator: names no agent, may record "
    "observations, sees held-out seeds, may request runs of any agent.",
)
@click.option("--operator", is_flag=True, help="Make an operator token (same as --scope operator).")
@click.option("--label", default=None, metavar="NAME", help="Whose the token is, shown by --list.")
@click.option(
    "--expires",
    default=None,
    metavar="WHEN",
    help="30d, 12h, 90m, 2w from now, a time like 2027-01-01T00:00:00Z, or never "
    "(default: never for agent tokens, 30d for operator tokens).",
)
@click.option(
    "--max-runs",
    default=None,
    metavar="N",
    help="At most N runs requested with this token queued or running at once "
    "(default: the daemon's setting).",
)
@click.option(
    "--new",
    is_flag=True,
    help="Make an agent token for a name this installation has not met yet (not declared, in "
    "no stored run, with no token): an agent that only predicts through the API.",
)
@click.option("--list", "list_", is_flag=True, help="List the tokens (ids, never secrets).")
@format_option("with --list, an array of tokens (never a token or its hash)")
@click.option(
    "--revoke", default=None, metavar="ID", callback=an_id, help="Revoke the token with this id."
)
@click.pass_context
@options_as(TokenOptions)
def token(ctx: click.Context, opts: TokenOptions) -> None:
    """Create an API token and print it, or list or revoke tokens.

    The token is printed once on stdout: the database keeps only its hash. Send it as
    'Authorization: Bearer <token>'. Each token also has a public id (tok_…) that is safe to
    show; --list and --revoke use it. AGENT must be an agent this installation knows (declared,
    in a stored run, or with a token already), as a typo would make a token for nobody; --new
    makes one for an agent it has not met yet.

    \b
    Examples:
      mindledger serve token mybot                     # an agent token for mybot
      mindledger serve token mybot --expires 90d --max-runs 1
      mindledger serve token piper --new               # one that only predicts
      mindledger serve token --operator --label alice  # expires in 30 days
      mindledger serve token --operator --expires never
      mindledger serve token --list
      mindledger serve token --list --format json
      mindledger serve token --revoke tok_1a2b3c4d
    """
    from harness.config.workspace import Workspace
    from harness.daemon.tokens import (
        check_agent_name,
        check_label,
        create_token,
        list_tokens,
        parse_expiry,
        parse_scope,
        revoke_token,
        token_id_of,
    )
    from ledger.db import utc_now

    given = {
        "--scope": opts.scope is not None,
        "--operator": opts.operator,
        "--label": opts.label is not None,
        "--expires": opts.expires is not None,
        "--max-runs": opts.max_runs is not None,
        "--new": opts.new,
    }
    creating = [name for name in _CREATE_OPTIONS if given[name]]
    # every check comes before the database is opened: bad input writes nothing
    if opts.list_ and opts.revoke is not None:
        raise InputError("give --list or --revoke, not both", where="--revoke")
    fmt_given = ctx.get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT
    if fmt_given and not opts.list_:
        raise InputError("goes with --list", where="--format")
    if opts.list_ or opts.revoke is not None:
        mode = "--list" if opts.list_ else "--revoke"
        if opts.agent is not None or creating:
            extra = ", ".join(([] if opts.agent is None else ["AGENT"]) + creating)
            raise InputError(f"takes no {extra} (those make a token)", where=mode)
        with Workspace.open(get_settings(ctx), read_only=True) as workspace:
            engine = workspace.engine
            if opts.list_:
                _print_tokens(list_tokens(engine), opts.fmt, utc_now())
                return
            assert opts.revoke is not None
            try:
                info = revoke_token(engine, opts.revoke.strip())
            except NotFoundError as exc:
                raise NotFoundError(f"--revoke: {exc}") from None
        whose = f"agent {info.agent!r}" if info.agent else info.scope
        click.echo(f"{info.token_id} ({whose}) is revoked since {info.revoked_at}", err=True)
        return

    if opts.operator and opts.scope not in (None, "operator"):
        raise InputError("--operator makes an operator token; drop one of them", where="--scope")
    chosen = "operator" if opts.operator else parse_scope(opts.scope or "agent", where="--scope")
    if chosen == "agent":
        if opts.agent is None:
            raise InputError(
                "expected the agent the token acts as (or --operator for an operator token)",
                where="AGENT",
            )
        check_agent_name(opts.agent, where="AGENT")
    elif opts.new:
        raise InputError("goes with an agent token (AGENT), not an operator token", where="--new")
    elif opts.agent is not None:
        raise InputError(
            f"an operator token names no agent; drop {opts.agent!r} or use --label",
            where="AGENT",
        )
    if opts.label is not None:
        check_label(opts.label, where="--label")
    cap = None if opts.max_runs is None else _parse_cap(opts.max_runs)
    now = utc_now()
    expires_at = (
        "default"
        if opts.expires is None
        else parse_expiry(opts.expires, now=now, where="--expires")
    )
    if opts.agent is not None and not opts.new:
        holders = {t.agent for t in list_tokens(get_store(ctx).engine) if t.agent}
        known_agent(ctx, opts.agent, also=holders, hint="; --new makes a token for an agent "
                    "this installation has not met yet")
    with Workspace.open(get_settings(ctx)) as workspace:
        engine = workspace.engine
        secret = create_token(
            engine,
            opts.agent,
            scope=chosen,
            label=opts.label,
            expires_at=expires_at,
            max_queued_runs=cap,
            clock=lambda: now,
        )
        info = next(t for t in list_tokens(engine) if t.token_id == token_id_of(secret))
    click.echo(secret)
    terms = (
        [f"for {opts.agent!r}"] if opts.agent else [f"label {opts.label!r}"] if opts.label else []
    )
    terms.append(f"expires {info.expires_at}" if info.expires_at else "never expires")
    if cap is not None:
        terms.append(f"at most {cap} open run{'' if cap == 1 else 's'}")
    click.echo(
        f"{chosen} token {info.token_id} ({', '.join(terms)}): send it as "
        "'Authorization: Bearer <token>'; it is not shown again",
        err=True,
    )


def _parse_cap(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if not 0 <= value <= 1000:
        raise InputError(f"expected an integer from 0 to 1000, got {text!r}", where="--max-runs")
    return value


def _print_tokens(tokens: list[TokenInfo], fmt: str, now: str) -> None:
    if fmt == "json":
        echo_json([t.to_dict(now) for t in tokens])
        return
    if not tokens:
        click.echo("no tokens yet (make one with `mindledger serve token AGENT`)", err=True)
        return
    from rich.table import Table

    from harness.cli.tables import print_table, stdout_console

    table = Table()
    for col in ("id", "scope", "agent", "label", "created", "expires", "last used", "max runs"):
        table.add_column(col, no_wrap=col == "id")
    table.add_column("state")
    for t in tokens:
        table.add_row(
            t.token_id,
            t.scope,
            t.agent or "",
            t.label or "",
            _minute(t.created_at),
            _minute(t.expires_at) or "never",
            _minute(t.last_used_at),
            "default" if t.max_queued_runs is None else str(t.max_queued_runs),
            t.state(now) + (f" {_minute(t.revoked_at)}" if t.revoked_at else ""),
        )
    print_table(stdout_console(), table, drop=("last used", "created", "max runs", "label"))


def _minute(stamp: str | None) -> str:
    """``2026-11-30 05:40`` from a stored ISO 8601 UTC time."""
    return "" if stamp is None else stamp[:16].replace("T", " ")
