"""``mindledger forecast``: self-forecasts (issue 29) at the machine, for operators.

An operator commits a forecast on an agent's behalf (held: the service keeps the forecast and
its salt, and reveals it when the run ends), lists and shows forecasts, lists the nightly runs
announced for forecasting, and reveals an ended run's held forecasts again if that failed. The
same checks as ``POST /forecasts`` (:mod:`harness.daemon.routes.forecasts`): the run is a stored
run that has not started or an announced one before its fire time, and the agent is under test
in it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import click

from harness.cli.common import echo_json, get_settings, get_workspace
from harness.cli.conventions import an_id, format_option
from mindledger.errors import InputError, UserError

if TYPE_CHECKING:
    from harness.daemon.web import ApiError

__all__ = ["forecast", "quantiles_forecast"]


def _desk(ctx: click.Context) -> Any:
    from harness.daemon.routes.forecasts import Desk
    from harness.daemon.scheduler import stored_announcements

    ws = get_workspace(ctx)
    ledger = ws.ledger

    def announced(run_id: str) -> Any:
        return next((a for a in stored_announcements(ws.engine) if a.run_id == run_id), None)

    return Desk(ws.store, ledger, announced, ledger.clock)


def _operator() -> Any:
    from harness.daemon.tokens import Principal

    return Principal(token_id="cli", scope="operator", agent=None, label="cli",
                     max_queued_runs=None)  # fmt: skip


def quantiles_forecast(text: str, where: str = "--quantiles") -> dict[str, Any]:
    """``0.05=0.4,0.5=0.6,0.95=0.8`` as a quantiles forecast (``where``: the option that gave
    it, named in the error)."""
    levels, values = [], []
    for part in text.split(","):
        level, eq, value = part.partition("=")
        try:
            if not eq:
                raise ValueError
            levels.append(float(level))
            values.append(float(value))
        except ValueError:
            raise InputError(
                f"expected LEVEL=VALUE pairs separated by commas, got {part.strip()!r}",
                where=where,
            ) from None
    return {"form": "quantiles", "levels": levels, "values": values}


def _json_forecast(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"expected a JSON object ({exc})", where="--forecast") from None
    if not isinstance(value, dict):
        raise InputError("expected a JSON object", where="--forecast")
    return value


@click.group()
def forecast() -> None:
    """Self-forecasts: an agent's forecast of its own figures for a run, scored after it.

    Agents commit their own through the API (POST /forecasts, GET /schedule/next); an operator
    commits here on an agent's behalf. The service holds what is committed here and reveals it
    when the run ends.

    \b
    Examples:
      mindledger forecast next
      mindledger forecast commit 20261204-030000-1a2b3c d50 --agent piper \\
          --quantiles 0.05=1.5,0.5=2.5,0.95=3.5 --reason "deeper nesting since the fix"
      mindledger forecast list --agent piper
    """


@forecast.command("commit")
@click.argument("run", callback=an_id)
@click.argument("figure")
@click.option("--agent", "agent", required=True, help="The agent whose figure it is.")
@click.option("--quantiles", help="The forecast as LEVEL=VALUE pairs: 0.05=0.4,0.5=0.6,0.95=0.8.")
@click.option("--forecast", "forecast_json", help="The forecast as JSON (quantiles or bins).")
@click.option("--reason", help="One line: why.")
@click.pass_context
def commit_cmd(
    ctx: click.Context,
    run: str,
    figure: str,
    agent: str,
    quantiles: str | None,
    forecast_json: str | None,
    reason: str | None,
) -> None:
    """Commit AGENT's forecast of FIGURE for run RUN (a stored run that has not started, or a
    nightly run announced by `forecast next`, before its fire time). The service keeps the
    forecast and reveals it when the run ends.

    \b
    Example:
      mindledger forecast commit 20261204-030000-1a2b3c false_belief_accuracy --agent piper \\
          --quantiles 0.05=0.55,0.25=0.62,0.5=0.66,0.75=0.7,0.95=0.76
    """
    from harness.daemon.models import parse
    from harness.daemon.routes.forecasts import ForecastRequest, commit
    from harness.daemon.web import ApiError

    if (quantiles is None) == (forecast_json is None):
        raise InputError("give the forecast with --quantiles or --forecast (one of them)",
                         where="--quantiles")  # fmt: skip
    body: dict[str, Any] = {
        "run": run,
        "figure": figure,
        "predictor": agent,
        "forecast": quantiles_forecast(quantiles)
        if quantiles is not None
        else _json_forecast(forecast_json or ""),
    }
    if reason is not None:
        body["reason"] = reason
    given = "--quantiles" if quantiles is not None else "--forecast"
    try:
        request = parse(ForecastRequest, body)
        made = commit(_desk(ctx), _operator(), request)
    except ApiError as exc:  # the API's refusal, naming this command's option
        raise _as_option(exc, given) from None
    except InputError as exc:
        if exc.where is None:
            raise
        raise _as_option(exc, given) from None
    echo_json(made.model_dump(mode="json"))


def _as_option(exc: ApiError | InputError, given: str) -> UserError:
    """The API's refusal of a body field as the option or argument that gave it."""
    from harness.daemon.web import ApiError

    field = (exc.field if isinstance(exc, ApiError) else exc.where) or ""
    head = field.split(".")[0].split("[")[0]
    option = {"run": "RUN", "figure": "FIGURE", "predictor": "--agent", "reason": "--reason",
              "forecast": given}.get(head)  # fmt: skip
    message = exc.message if isinstance(exc, ApiError) else str(exc).removeprefix(f"{field}: ")
    if option is None:
        return UserError(message)
    where = option + field[len(head) :] if head == "forecast" else option
    if isinstance(exc, ApiError) and exc.status == 409:
        return UserError(f"{where}: {message}")
    return InputError(message, where=where)


def _row(state: Any) -> dict[str, Any]:
    return dataclasses.asdict(state)


@forecast.command("list")
@click.option("--run", "run_id", callback=an_id, help="Only the forecasts for this run.")
@click.option("--agent", help="Only this agent's.")
@format_option("an array of forecasts")
@click.pass_context
def list_cmd(ctx: click.Context, run_id: str | None, agent: str | None, fmt: str) -> None:
    """The forecasts in the ledger, in commit order: each one's run, figure, status and, once
    revealed, its outcome and losses (its own and the naive forecast's).

    \b
    Examples:
      mindledger forecast list --agent piper
      mindledger forecast list --run 20261204-030000-1a2b3c --format json
    """
    states = get_workspace(ctx).ledger.forecasts(predictor=agent, run_id=run_id)
    if fmt == "json":
        echo_json([_row(s) for s in states])
        return
    if not states:
        click.echo("No forecasts.")
        return

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.4g}"

    click.echo(f"{'id':22} {'agent':14} {'run':24} {'figure':30} {'status':9} outcome loss naive")
    for s in states:
        click.echo(f"{s.id:22} {s.predictor[:14]:14} {s.run_id[:24]:24} {s.figure[:30]:30} "
                   f"{s.status:9} {num(s.outcome)} {num(s.loss)} {num(s.naive_loss)}")  # fmt: skip


@forecast.command("show")
@click.argument("forecast_id", callback=an_id)
@click.pass_context
def show_cmd(ctx: click.Context, forecast_id: str) -> None:
    """One forecast as JSON: its commitment and, once revealed, the forecast, the outcome, the
    naive forecast and both losses.

    \b
    Example:
      mindledger forecast show f1a2b3c4d5e6f7a8b9c0d
    """
    echo_json(_row(get_workspace(ctx).ledger.forecast(forecast_id)))


@forecast.command("next")
@click.option("--agent", help="Only this agent's run.")
@click.pass_context
def next_cmd(ctx: click.Context, agent: str | None) -> None:
    """The next run of each nightly job, as the daemon announces it (GET /schedule/next): its
    run id, suite, fire time (the deadline for forecasts) and the figures it can forecast.

    \b
    Example:
      mindledger forecast next --agent piper
    """
    from harness.daemon.scheduler import stored_announcements
    from harness.run.forecasting import forecastable

    settings = get_settings(ctx)
    ws = get_workspace(ctx)
    echo_json(
        [
            {
                "run": a.run_id,
                "agent": a.agent,
                "suite": a.suite,
                "fire_time": a.fire_time.isoformat(),
                "deadline": a.deadline.isoformat(),
                "figures": forecastable(settings, a.suite, a.agent),
            }
            for a in stored_announcements(ws.engine, agent)
        ]
    )


@forecast.command("reveal")
@click.argument("run", callback=an_id)
@click.pass_context
def reveal_cmd(ctx: click.Context, run: str) -> None:
    """Reveal the held forecasts of the ended run RUN that are not revealed yet (the service
    does so when a run ends; this tries again after a failure).

    \b
    Example:
      mindledger forecast reveal 20261204-030000-1a2b3c
    """
    from harness.run.forecasting import reveal_held
    from ledger.store import FINISHED_STATUSES

    ws = get_workspace(ctx)
    status = ws.store.get_run(run).status
    if status not in FINISHED_STATUSES:
        raise InputError(f"run {run} has not ended ({status})", where="RUN")
    echo_json({"run": run, "revealed": reveal_held(ws.ledger, ws.store, run)})
