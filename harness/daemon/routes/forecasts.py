"""Self-forecasts (issue 29): ``POST /forecasts`` (commit), ``GET /forecasts``,
``GET /forecasts/{id}``, ``POST /forecasts/{id}/reveal``, and ``GET /schedule/next`` (the runs
coming, to forecast).

A forecast is an agent's predictive distribution of a figure of its own profile for one run
(:mod:`mindledger.forecasts`), committed before the run's first trial. The run is a stored run
that has not started, or one a nightly job has announced (``GET /schedule/next``) and not yet
started: its deadline is the job's fire time. After the deadline, once the run is sealed (its
first trial is near), or once it has trials, a commit is refused (409).

Two ways to commit: the commitment alone (``commitment``: the agent keeps the forecast and its
salt and reveals them with ``POST /forecasts/{id}/reveal`` once the run has ended), or the
forecast in clear (``forecast`` and ``reason``: the service draws the salt, commits, holds both
and reveals them itself when the run ends, :func:`harness.run.forecasting.reveal_held`).

**Who.** An agent token forecasts for itself only, and only for a run in which it is the agent
under test; any other run, and another agent's forecast, is answered 404 as an unknown one. An
operator token forecasts on an agent's behalf (it names the ``predictor``) and reads every
forecast.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool

from harness.daemon.endpoint import Answer, Call, Endpoint
from harness.daemon.models import (
    Body,
    Digest,
    JsonObject,
    Model,
    Name,
    PathId,
    Query,
    Text,
    not_null,
)
from harness.daemon.scheduler import NIGHTLY_PREFIX, Announcement
from harness.daemon.services import Services
from harness.daemon.tokens import Principal
from harness.daemon.web import ApiError, error_response
from harness.run.forecasting import forecastable, outcome_of, scheduled_run_id
from ledger.forecasts import RUN_ID_PATTERN, ForecastState
from ledger.predictions import Ledger
from ledger.protocol import commitment, new_salt
from ledger.store import FINISHED_STATUSES, Store
from mindledger.errors import InputError, NotFoundError
from mindledger.forecasts import MAX_REASON, figure, forecast_body, parse_forecast

__all__ = [
    "ENDPOINTS",
    "Desk",
    "ForecastCommitted",
    "ForecastRequest",
    "ForecastRevealRequest",
    "ForecastView",
    "ScheduledRun",
    "commit",
    "commit_forecast",
    "list_forecasts",
    "readable",
    "reveal_forecast",
    "schedule_next",
    "show_forecast",
]

Reason = Annotated[Text, Field(max_length=MAX_REASON)]
FIGURE_PATTERN = (
    "^(change:)?(false_belief_accuracy|d50|leakage_resistance|S|accuracy_at_depth:R[0-5]|"
    "ablation_credit:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$"
)
"""The figures' names (:func:`mindledger.forecasts.figure` reads them), as the document states
them (the handler refuses another with the names it knows)."""


def _only(given: str, without: str) -> dict[str, Any]:
    return {"required": [given], "not": {"required": [without]}}


class ForecastRequest(Body):
    """A forecast of a figure of the predictor's own profile for the run ``run``: either its
    ``commitment`` (the salted hash of ``{"forecast", "reason"}``, :func:`ledger.protocol.
    commitment`; the agent reveals it after the run) or the ``forecast`` itself with an optional
    ``reason`` (the service commits it, holds it and reveals it when the run ends)."""

    model_config = Body.model_config | {
        "json_schema_extra": {
            "oneOf": [_only("commitment", "forecast"), _only("forecast", "commitment")],
            "dependentSchemas": {"reason": {"required": ["forecast"]}},
        }
    }

    run: Annotated[PathId, Field(pattern=RUN_ID_PATTERN)]
    """The run: a stored run that has not started, or one announced by ``GET /schedule/next``."""
    figure: Annotated[Text, Field(max_length=100, json_schema_extra={"pattern": FIGURE_PATTERN})]
    """The figure forecast: ``false_belief_accuracy``, ``d50``, ``leakage_resistance``, ``S``,
    ``accuracy_at_depth:R0``…``R5``, ``ablation_credit:<module>`` or ``change:<any of those>``."""
    predictor: Name | None = Field(None, json_schema_extra=not_null)
    """The forecasting agent: the token's (an operator names the agent it acts for)."""
    commitment: Digest | None = Field(None, json_schema_extra=not_null)
    """The salted hash of the forecast and its reason: the agent reveals them after the run."""
    agent_signature: Text | None = Field(None, json_schema_extra=not_null)
    """The agent's signature of the commit (an agent with a registered key)."""
    forecast: JsonObject | None = Field(None, json_schema_extra=not_null)
    """The forecast in clear: ``{"form": "quantiles", "levels": [...], "values": [...]}`` or
    ``{"form": "bins", "edges": [...], "probs": [...]}``; the service holds it."""
    reason: Reason | None = Field(None, json_schema_extra=not_null)
    """One line: why (with ``forecast``)."""


class ForecastRevealRequest(Body):
    forecast: JsonObject
    """The committed forecast."""
    reason: Reason | None = None
    """Its committed reason (null if none)."""
    salt: Text
    """The salt, in hex."""


class ForecastPath(Model):
    id: PathId
    """The forecast's id."""


class ForecastsQuery(Query):
    run: Annotated[Text, Field(max_length=200)] | None = None
    """Only the forecasts for this run."""
    agent: Name | None = None
    """Only this agent's (an agent token: its own name only)."""


class ScheduleQuery(Query):
    agent: Name | None = None
    """Only this agent's runs (an agent token: its own name only)."""


class ForecastCommitted(Model):
    id: str
    """``f`` + the commitment's first 20 hex digits."""
    commitment: str
    seq: int
    """The commit's entry in the ledger."""
    time: str
    """When it was committed."""
    deadline: str | None
    """Until when forecasts for the run are taken (null: until the run is sealed, just before
    its first trial)."""
    run: str
    figure: str
    predictor: str
    held: bool
    """The service holds the forecast and reveals it when the run ends."""


class ForecastView(Model):
    """A forecast's state (the fold of its ledger entries)."""

    id: str
    predictor: str
    run_id: str
    figure: str
    commitment: str
    committed_at: str
    seq: int
    status: str
    """``committed``, ``scored``, ``void`` (the run has no value of the figure: ``note``) or
    ``rejected`` (the reveal did not match)."""
    held: bool
    forecast: dict[str, Any] | None
    reason: str | None
    revealed_at: str | None
    outcome: float | None
    naive: dict[str, Any] | None
    rule: str | None
    loss: float | None
    naive_loss: float | None
    note: str | None


class ForecastList(Model):
    forecasts: list[ForecastView]


class ScheduledRun(Model):
    run: str
    """The run id the job will use."""
    agent: str
    suite: str
    fire_time: str
    deadline: str
    """Forecasts for the run are taken until then (its fire time)."""
    figures: list[str]
    """The figures the agent may forecast for it."""


class Schedule(Model):
    runs: list[ScheduledRun]
    """Soonest first; none when the daemon runs no scheduler (``--no-scheduler``)."""


# -- helpers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Desk:
    """What committing and revealing forecasts needs, from the daemon's services or, at the
    machine, from the workspace (``mindledger forecast``)."""

    store: Store
    ledger: Ledger
    announced: Callable[[str], Announcement | None]
    """The announcement of a run id that is not stored yet (None: not announced)."""
    clock: Callable[[], str]
    profile_boot: int = 2000

    @classmethod
    def of(cls, services: Services) -> Desk:
        scheduler = services.scheduler
        return cls(
            services.store,
            services.ledger,
            (lambda _: None) if scheduler is None else scheduler.announced,
            services.clock,
            services.profile_boot,
        )

    def now(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.clock().replace("Z", "+00:00"))


def _state(state: ForecastState) -> ForecastView:
    return ForecastView(**dataclasses.asdict(state))


def _unknown_run(run_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no run with id {run_id!r}")


def _when(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _named_agent(principal: Principal, agent: str | None) -> str | None:
    """Whose things a query asks for: an agent token its own (403 naming another: names are
    public), an operator any (None: all)."""
    if principal.is_operator:
        return agent
    if agent is not None and agent != principal.agent:
        raise ApiError(403, "forbidden", f"this token reads {principal.agent!r}'s only",
                       field="agent")  # fmt: skip
    return principal.agent


def _predictor(principal: Principal, body: ForecastRequest) -> str:
    if principal.is_operator:
        if body.predictor is None:
            raise ApiError(
                400, "missing_field",
                "an operator forecasts on an agent's behalf: name the agent", field="predictor",
            )  # fmt: skip
        return body.predictor
    if body.predictor is not None and body.predictor != principal.agent:
        raise ApiError(403, "forbidden", f"this token forecasts as {principal.agent!r} only",
                       field="predictor")  # fmt: skip
    assert principal.agent is not None
    return principal.agent


def _stored_run_open(
    desk: Desk, principal: Principal, run_id: str, predictor: str
) -> dt.datetime | None:
    """Check that the stored run ``run_id`` takes ``predictor``'s forecasts now; returns its
    deadline (an announced run's fire time), if it has one."""
    store = desk.store
    run = store.get_run(run_id)  # NotFoundError: 404
    if principal.owner is not None and not store.owns_run(run_id, principal.owner,
                                                          principal.token_id):  # fmt: skip
        raise _unknown_run(run_id)
    under_test = {ra.name for ra in store.run_agents(run_id) if ra.role == "agent"}
    if predictor not in under_test:
        if not principal.is_operator:
            raise _unknown_run(run_id)
        raise ApiError(400, "invalid_field",
                       f"{predictor!r} is not under test in run {run_id}", field="predictor")  # fmt: skip
    deadline = _announced_deadline(run_id, sorted(under_test))
    if run.status in FINISHED_STATUSES or store.done_pairs(run_id):
        raise ApiError(409, "run_started", f"run {run_id} has started: forecasts for it are "
                       "closed", field="run")  # fmt: skip
    if deadline is not None and desk.now() >= deadline:
        raise _past(run_id, deadline)
    return deadline


def _announced_deadline(run_id: str, agents: list[str]) -> dt.datetime | None:
    """The fire time of a stored run that a nightly job announced (its id says so)."""
    try:
        at = dt.datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    for agent in agents:
        if scheduled_run_id(NIGHTLY_PREFIX + agent, at) == run_id:
            return at
    return None


def _past(run_id: str, deadline: dt.datetime) -> ApiError:
    return ApiError(409, "deadline_passed",
                    f"forecasts for run {run_id} were due by {_when(deadline)}", field="run")  # fmt: skip


def _announced_open(desk: Desk, principal: Principal, run_id: str, predictor: str) -> Announcement:
    announced = desk.announced(run_id)
    if announced is None or (not principal.is_operator and announced.agent != predictor):
        raise _unknown_run(run_id)
    if announced.agent != predictor:
        raise ApiError(400, "invalid_field",
                       f"run {run_id} is {announced.agent!r}'s", field="predictor")  # fmt: skip
    if desk.now() >= announced.deadline:
        raise _past(run_id, announced.deadline)
    return announced


def commit(desk: Desk, principal: Principal, body: ForecastRequest) -> ForecastCommitted:
    """Commit the forecast ``body`` as ``principal`` (see the module's docstring): who may
    (403), which run (404) and whether it still takes forecasts (409) are answered before what
    the forecast says is read (400), so that no one learns more of a run than that."""
    predictor = _predictor(principal, body)
    try:
        deadline = _stored_run_open(desk, principal, body.run, predictor)
    except NotFoundError:
        deadline = _announced_open(desk, principal, body.run, predictor).deadline
    name = figure(body.figure).name
    given = body.model_fields_set
    held: tuple[dict[str, Any], str] | None = None
    if "forecast" in given and body.forecast is not None:
        if "commitment" in given:
            raise ApiError(400, "invalid_field", "give the commitment or the forecast, not both",
                           field="commitment")  # fmt: skip
        kept = forecast_body(parse_forecast(body.forecast), body.reason)
        kept["forecast"] = body.forecast
        salt = new_salt().hex()
        sealed = commitment(kept, bytes.fromhex(salt))
        held = (kept, salt)
    elif body.commitment is not None:
        if body.reason is not None:
            raise ApiError(400, "invalid_field", "a reason goes with the forecast it explains: "
                           "with a commitment, it is revealed later", field="reason")  # fmt: skip
        sealed = body.commitment
    else:
        raise ApiError(400, "missing_field", "expected the commitment, or the forecast in clear",
                       field="commitment")  # fmt: skip
    state = desk.ledger.commit_forecast(
        predictor, body.run, name, sealed, agent_signature=body.agent_signature, held=held
    )
    return ForecastCommitted(
        id=state.id,
        commitment=state.commitment,
        seq=state.seq,
        time=state.committed_at,
        deadline=None if deadline is None else _when(deadline),
        run=state.run_id,
        figure=state.figure,
        predictor=state.predictor,
        held=state.held,
    )


def readable(ledger: Ledger, principal: Principal, fid: str) -> ForecastState:
    """The forecast, if this token may read it (404 otherwise, as for an unknown id)."""
    state = ledger.forecast(fid)
    if not principal.is_operator and state.predictor != principal.agent:
        raise ApiError(404, "not_found", f"no forecast with id {fid!r}")
    return state


# -- handlers -----------------------------------------------------------------------------


async def commit_forecast(
    services: Services, call: Call[None, None, ForecastRequest]
) -> ForecastCommitted:
    return await run_in_threadpool(commit, Desk.of(services), call.caller, call.body)


async def show_forecast(services: Services, call: Call[ForecastPath, None, None]) -> ForecastView:
    state = await run_in_threadpool(readable, services.ledger, call.caller, call.path.id)
    return _state(state)


async def list_forecasts(
    services: Services, call: Call[None, ForecastsQuery, None]
) -> ForecastList:
    agent = _named_agent(call.caller, call.query.agent)
    run = call.query.run
    states = await run_in_threadpool(lambda: services.ledger.forecasts(predictor=agent, run_id=run))
    return ForecastList(forecasts=[_state(s) for s in states])


def _reveal(desk: Desk, principal: Principal, fid: str,
            body: ForecastRevealRequest) -> Answer:  # fmt: skip
    state = readable(desk.ledger, principal, fid)
    forecast_body(parse_forecast(body.forecast), body.reason)  # 400 naming the field
    if state.status != "committed":
        raise ApiError(409, "revealed", f"forecast {fid} is {state.status} already")
    try:
        run = desk.store.get_run(state.run_id)
    except NotFoundError:
        run = None
    if run is None or run.status not in FINISHED_STATUSES:
        raise ApiError(409, "run_not_ended", f"run {state.run_id} has not ended: reveal the "
                       "forecast after it", field="id")  # fmt: skip
    out = outcome_of(desk.store, state.run_id, state.predictor, state.figure,
                     n_boot=desk.profile_boot)  # fmt: skip
    revealed = desk.ledger.reveal_forecast(
        fid,
        {"forecast": body.forecast, "reason": body.reason},
        body.salt,
        outcome=out.value,
        previous=out.previous,
        note=out.note,
    )
    answer = _state(revealed)
    if revealed.status == "rejected":
        return error_response(
            409, "reveal_rejected", "the forecast and salt do not match the commitment",
            field="forecast", extra={"result": answer.model_dump(mode="json")},
        )  # fmt: skip
    return answer


async def reveal_forecast(
    services: Services, call: Call[ForecastPath, None, ForecastRevealRequest]
) -> Answer:
    return await run_in_threadpool(_reveal, Desk.of(services), call.caller, call.path.id, call.body)


def _schedule(services: Services, agent: str | None) -> Schedule:
    scheduler = services.scheduler
    if scheduler is None:  # --no-scheduler: no run is coming from this daemon
        return Schedule(runs=[])
    runs = []
    for a in scheduler.announcements(agent):
        try:
            figures = forecastable(services.settings, a.suite, a.agent)
        except (InputError, ValueError):
            figures = []
        runs.append(ScheduledRun(run=a.run_id, agent=a.agent, suite=a.suite,
                                 fire_time=_when(a.fire_time), deadline=_when(a.deadline),
                                 figures=figures))  # fmt: skip
    return Schedule(runs=runs)


async def schedule_next(services: Services, call: Call[None, ScheduleQuery, None]) -> Schedule:
    agent = _named_agent(call.caller, call.query.agent)
    return await run_in_threadpool(_schedule, services, agent)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        "/forecasts",
        commit_forecast,
        "commit a forecast of one's own figure for a run (before its deadline)",
        description=ForecastRequest.__doc__ or "",
        body=ForecastRequest,
        answer=ForecastCommitted,
        ok=201,
        errors=(403, 404, 409, 413),
    ),
    Endpoint(
        "GET",
        "/forecasts",
        list_forecasts,
        "forecasts (an agent token: its own)",
        query=ForecastsQuery,
        answer=ForecastList,
        errors=(403,),
    ),
    Endpoint(
        "GET",
        "/forecasts/{id}",
        show_forecast,
        "a forecast's state (404: unknown, or another agent's)",
        path_params=ForecastPath,
        answer=ForecastView,
        errors=(404,),
    ),
    Endpoint(
        "POST",
        "/forecasts/{id}/reveal",
        reveal_forecast,
        "reveal a forecast after its run ended, and score it",
        path_params=ForecastPath,
        body=ForecastRevealRequest,
        answer=ForecastView,
        errors=(404, 409, 413),
    ),
    Endpoint(
        "GET",
        "/schedule/next",
        schedule_next,
        "the next scheduled run of each nightly job: its run id, suite, deadline, figures",
        query=ScheduleQuery,
        answer=Schedule,
        errors=(403,),
    ),
)
