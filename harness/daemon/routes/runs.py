"""Runs: ``GET /runs``, ``POST /runs`` (run a suite now), ``GET /runs/{id}`` and
``GET /runs/{id}/profile``.

**Whose runs.** An agent token lists and reads only its agent's own runs and profiles: those in
which the agent is the agent under test or the base of a derived agent (its control, its
ablations), and those its token requested, unless another agent is under test in them too
(:meth:`ledger.store.Store.owns_run`). Any other run is answered 404, as an unknown one is, so
ids are not confirmed. An operator token reads every run.

**Held-out runs** (:mod:`mindledger.disclosure`): a held-out run's seed, item ids and item
bodies are withheld from every answer unless an operator token asks with
``?reveal_held_out=true``; an agent token that asks gets 403.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import (
    Body,
    Digest,
    JsonObject,
    Model,
    PathId,
    Query,
    Reveal,
    daemon_enum,
    not_null,
    refuse,
)
from harness.daemon.routes.forecasts import FIGURE_PATTERN
from harness.daemon.services import Services
from harness.daemon.tokens import Principal, claim_run_request, release_run_request
from harness.daemon.web import ApiError, kind_of
from harness.run.build import PlanFields, plan_agents
from harness.run.runs import new_run_id
from harness.run.suites import SUITES
from ledger.models import RunRow
from ledger.protocol import commitment, new_salt
from mindledger.disclosure import disclosed_params, withholds
from mindledger.errors import ConfigError, InputError, UserError
from mindledger.forecasts import MAX_REASON, figure, forecast_body, parse_forecast
from mindledger.words import counted

__all__ = [
    "ENDPOINTS",
    "MAX_ABLATIONS",
    "RETRY_AFTER",
    "RunDetail",
    "RunForecast",
    "RunRequest",
    "RunSummary",
    "get_run",
    "list_runs",
    "post_run",
    "reveals",
    "run_profile",
]

RETRY_AFTER = 60
"""Seconds a client at its cap of open runs is told to wait (``Retry-After``)."""
MAX_ABLATIONS = 8
MAX_FORECASTS = 32
"""Most self-forecasts one run request may carry."""
"""Most modules one run request may ablate (each adds a variant running the whole suite)."""
RUN_FIELDS = PlanFields(agent="agent", control="control", reference="references", ablate="ablate")
"""The fields of ``POST /runs`` that name agents, as the run planner's errors name them."""
POLICY = (
    "^(oracle|random|reality-leak|not-reality|depth-capped:[0-9]|level:[0-9]"
    r"|noisy:(?:0(?:\.[0-9]+)?|\.[0-9]+|1(?:\.0+)?))$"
)
"""The reference agents a run request documents (the planner accepts larger N and K too)."""


def reveals(principal: Principal, asked: bool | None) -> bool:
    """Whether this request gets a held-out run's seeds and items: an operator token that asks
    with ``?reveal_held_out=true`` (403 for an agent token that asks)."""
    if asked and not principal.sees_held_out:
        raise ApiError(
            403,
            "forbidden",
            "held-out runs' seeds and items are for operator tokens only",
            field="reveal_held_out",
        )
    return principal.reveals(bool(asked))


# -- models -------------------------------------------------------------------------------


def _limit(value: Any) -> int:
    raw = str(value)
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if not 1 <= limit <= 1000:
        raise refuse(f"expected an integer from 1 to 1000, got {raw[:40]!r}")
    return limit


class RunsQuery(Query):
    limit: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_limit)] = 50
    """How many of the latest runs."""
    reveal_held_out: Reveal | None = None


class RevealQuery(Query):
    reveal_held_out: Reveal | None = None


class RunPath(Model):
    id: PathId
    """The run's id."""


def _references(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(r, str) and r for r in value):
        raise refuse("expected a list of reference policy names")
    return value


def _ablations(value: Any) -> Any:
    if (
        not isinstance(value, list)
        or not all(isinstance(m, str) and m for m in value)
        or len(set(value)) != len(value)
        or len(value) > MAX_ABLATIONS
    ):
        raise refuse(f"expected a list of at most {MAX_ABLATIONS} distinct module names")
    return value


def _optional_text(value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not value):
        raise refuse(f"expected a non-empty string, got {kind_of(value)}")
    return value


Policy = Annotated[str, Field(pattern=POLICY)]
Module = Annotated[str, Field(json_schema_extra=daemon_enum("modules"))]
DeclaredAgent = Annotated[str, Field(json_schema_extra=daemon_enum("agents"))]


class RunForecast(Body):
    """A self-forecast of the agent under test for this run, committed before the run is queued
    (issue 29; as ``POST /forecasts`` takes them): its ``commitment``, or the ``forecast`` in
    clear with an optional ``reason`` (held by the service, revealed when the run ends)."""

    model_config = Body.model_config | {
        "json_schema_extra": {
            "oneOf": [
                {"required": ["commitment"], "not": {"required": ["forecast"]}},
                {"required": ["forecast"], "not": {"required": ["commitment"]}},
            ],
            "dependentSchemas": {"reason": {"required": ["forecast"]}},
        }
    }

    figure: Annotated[
        str, Field(min_length=1, max_length=100, json_schema_extra={"pattern": FIGURE_PATTERN})
    ]
    """The figure: ``false_belief_accuracy``, ``d50``, ``accuracy_at_depth:R2``… (see
    ``POST /forecasts``)."""
    commitment: Digest | None = Field(None, json_schema_extra=not_null)
    forecast: JsonObject | None = Field(None, json_schema_extra=not_null)
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON)] | None = Field(
        None, json_schema_extra=not_null
    )
    agent_signature: Annotated[str, Field(min_length=1)] | None = Field(
        None, json_schema_extra=not_null
    )


class RunRequest(Body):
    """Run a suite now, on a held-out seed: an agent (with its control and any ablations) and
    reference agents, or references alone; with ``forecasts``, the agent's self-forecasts for
    the run, committed before it is queued (the run starts at once: there is no other time to
    commit them)."""

    model_config = Body.model_config | {
        "json_schema_extra": {
            "anyOf": [{"required": ["references"]}, {"required": ["agent"]}],
            "dependentRequired": {"ablate": ["agent"], "forecasts": ["agent"]},
        }
    }

    suite: Literal[tuple(SUITES)] | None = None  # type: ignore[valid-type]
    """The suite (default: the scheduler's)."""
    agent: Annotated[
        str | None, BeforeValidator(_optional_text, json_schema_input_type=DeclaredAgent)
    ] = None
    """The agent under test (a declared agent)."""
    references: Annotated[
        list[str],
        BeforeValidator(
            _references,
            json_schema_input_type=Annotated[set[Policy], Field(min_length=1, max_length=4)],
        ),
    ] = []
    """Reference agents to run beside it."""
    ablate: Annotated[
        list[str],
        BeforeValidator(
            _ablations,
            json_schema_input_type=Annotated[set[Module], Field(max_length=MAX_ABLATIONS)],
        ),
    ] = []
    """Modules of the agent to switch off, one ablation variant each (its own modules or the
    reference scaffold's)."""
    forecasts: Annotated[list[RunForecast], Field(max_length=MAX_FORECASTS)] = []
    """The agent's self-forecasts for this run (committed before it starts)."""


class RunSummary(Model):
    id: str
    suite: str
    seed: int | None
    """The run's seed (None: withheld, the run is held out)."""
    seed_withheld: bool
    held_out: bool
    status: str
    created_at: str
    finished_at: str | None
    params: dict[str, Any]


class RunList(Model):
    runs: list[RunSummary]


class RunAgentPart(Model):
    name: str
    role: str
    base_agent: str | None


class RunDetail(RunSummary):
    agents: list[RunAgentPart]
    items: int
    trial_counts: dict[str, dict[str, int]]
    """Per agent: trials by status, and how many were correct."""


class RunAccepted(Model):
    run: RunSummary
    job: str
    """The scheduler's job running it."""
    forecasts: list[dict[str, Any]] = []
    """The forecasts committed for it (each one's id, commitment, seq, held)."""


def summary(run: RunRow, *, reveal: bool = False) -> RunSummary:
    """A run's summary. The seed of a held-out run, and the item ids in its params, are
    withheld unless ``reveal`` (operators who ask): knowing them, an agent under test could
    regenerate or recognise the held-out items."""
    try:
        params = json.loads(run.params_json)
    except ValueError:
        params = {}
    withheld = withholds(held_out=bool(run.held_out), reveal_held_out=reveal)
    params = disclosed_params(params, held_out=bool(run.held_out), reveal_held_out=reveal)
    return RunSummary(
        id=run.id,
        suite=run.suite,
        seed=None if withheld else run.seed,
        seed_withheld=withheld,
        held_out=run.held_out,
        status=run.status,
        created_at=run.created_at,
        finished_at=run.finished_at,
        params=params,
    )


# -- handlers -----------------------------------------------------------------------------


async def list_runs(services: Services, call: Call[None, RunsQuery, None]) -> RunList:
    who = call.caller
    reveal = reveals(who, call.query.reveal_held_out)
    rows = await run_in_threadpool(
        lambda: services.store.list_runs(call.query.limit, owner=who.owner, token_id=who.token_id)
    )
    return RunList(runs=[summary(r, reveal=reveal) for r in rows])


def readable_run(services: Services, principal: Principal, run_id: str) -> RunRow:
    """The run, if this token may read it (404 otherwise, as for an unknown run)."""
    store = services.store
    run = store.get_run(run_id)
    owner = principal.owner
    if owner is not None and not store.owns_run(run_id, owner, principal.token_id):
        raise ApiError(404, "not_found", f"no run with id {run_id!r}")
    return run


def _detail(services: Services, principal: Principal, run_id: str, reveal: bool) -> RunDetail:
    run = readable_run(services, principal, run_id)
    store = services.store
    return RunDetail(
        **summary(run, reveal=reveal).model_dump(),
        agents=[
            RunAgentPart(name=a.name, role=a.role, base_agent=a.base_agent)
            for a in store.run_agents(run_id)
        ],
        items=len(store.run_items(run_id)),
        trial_counts=store.trial_counts(run_id),
    )


async def get_run(services: Services, call: Call[RunPath, RevealQuery, None]) -> RunDetail:
    reveal = reveals(call.caller, call.query.reveal_held_out)
    return await run_in_threadpool(_detail, services, call.caller, call.path.id, reveal)


async def run_profile(services: Services, call: Call[RunPath, RevealQuery, None]) -> Response:
    from reports.profile import build_profile
    from reports.render import render_json

    reveal = reveals(call.caller, call.query.reveal_held_out)
    run_id = call.path.id

    def build() -> str:
        readable_run(services, call.caller, run_id)  # 404 before any analysis
        profile = build_profile(
            services.store, run_id, n_boot=services.profile_boot, reveal_held_out=reveal
        )
        return render_json(profile, indent=None, reveal_held_out=reveal)

    return Response(await run_in_threadpool(build), media_type="application/json")


def _plan_error(exc: UserError, *, agent: str | None) -> ApiError:
    """A 400 for a run request the planner refused, naming the body's field at fault: the one
    the error names, else ``agent`` (a declared agent that cannot run) or ``references``."""
    named = None
    if isinstance(exc, InputError):
        named = exc.where
    elif isinstance(exc, ConfigError):
        named = exc.key
    if named not in (RUN_FIELDS.agent, RUN_FIELDS.reference, RUN_FIELDS.ablate):
        named = RUN_FIELDS.agent if agent else RUN_FIELDS.reference
    return ApiError(400, "invalid_field", str(exc), field=named)


def _checked(services: Services, principal: Principal, body: RunRequest) -> None:
    """400 for a request that names nothing to run or names what cannot run, 403 for a run of
    another agent than the token's."""
    who, refs, ablate = body.agent, body.references, body.ablate
    if who is None and not refs:
        raise ApiError(
            400, "missing_field", "expected an agent or some references to run", field="agent"
        )
    if ablate and who is None:
        raise ApiError(
            400, "missing_field", "expected the agent whose modules to ablate", field="agent"
        )
    if who is not None and not principal.may_request_runs_of(who):
        raise ApiError(
            403,
            "forbidden",
            f"this token may request runs of {principal.agent!r} only",
            field="agent",
        )
    if body.forecasts and who is None:
        raise ApiError(
            400, "missing_field", "expected the agent whose forecasts these are", field="agent"
        )
    try:  # the request's agents, references and ablations, checked before anything else
        plan_agents(
            services.settings,
            agents=(who,) if who else (),
            references=refs,
            ablate=ablate,
            fields=RUN_FIELDS,
        )
    except UserError as exc:
        raise _plan_error(exc, agent=who) from None


Committing = tuple[str, str, tuple[dict[str, Any], str] | None, str | None]
"""A forecast ready to commit: (figure, commitment, held (body, salt hex) or None, signature)."""


def _forecasts(body: RunRequest) -> list[Committing]:
    """The request's forecasts, each checked (400 naming ``forecasts[i].<field>``) before
    anything is stored; a held one's salt drawn and its commitment made."""
    out: list[Committing] = []
    seen: set[str] = set()
    for i, f in enumerate(body.forecasts):
        where = f"forecasts[{i}]"
        try:
            name = figure(f.figure, where=f"{where}.figure").name
            if (f.commitment is None) == (f.forecast is None):
                raise InputError("expected the commitment or the forecast (one of them)",
                                 where=f"{where}.commitment")  # fmt: skip
            held = None
            if f.forecast is not None:
                kept = forecast_body(parse_forecast(f.forecast, f"{where}.forecast"), f.reason)
                kept["forecast"] = f.forecast
                salt = new_salt()
                held = (kept, salt.hex())
                sealed = commitment(kept, salt)
            else:
                if f.reason is not None:
                    raise InputError("a reason goes with the forecast in clear",
                                     where=f"{where}.reason")  # fmt: skip
                assert f.commitment is not None
                sealed = f.commitment
            if sealed in seen:
                raise InputError("the same commitment twice", where=f"{where}.commitment")
        except InputError as exc:
            field = exc.where if exc.where and exc.where.startswith(where) else f"{where}.reason"
            raise ApiError(400, "invalid_field", str(exc).removeprefix(f"{exc.where}: "),
                           field=field) from None  # fmt: skip
        seen.add(sealed)
        out.append((name, sealed, held, f.agent_signature))
    return out


async def post_run(services: Services, call: Call[None, None, RunRequest]) -> RunAccepted:
    body, principal = call.body, call.caller
    _checked(services, principal, body)
    forecasts = _forecasts(body)
    scheduler = services.scheduler
    if scheduler is None or not scheduler.running:
        raise ApiError(503, "scheduler_off", "the scheduler is off (--no-scheduler)")
    suite = body.suite or scheduler.suite
    run_id = new_run_id()
    cap = principal.run_cap(services.settings.api_max_queued_runs)
    engine = services.engine
    claimed = await run_in_threadpool(
        lambda: claim_run_request(engine, principal.token_id, run_id, cap=cap, now=services.clock())
    )
    if not claimed:
        raise ApiError(
            429,
            "too_many_runs",
            f"this token has {counted(cap, 'run')} queued or running, as many as it may: retry "
            "when one finishes",
            headers={"Retry-After": str(RETRY_AFTER)},
        )

    committed: list[dict[str, Any]] = []

    def plan() -> str:
        try:
            scheduler.context.plan_run(
                suite=suite,
                agents=(body.agent,) if body.agent else (),
                references=body.references,
                ablate=body.ablate,
                run_id=run_id,
                fields=RUN_FIELDS,
            )
        except UserError as exc:
            release_run_request(engine, run_id)
            raise _plan_error(exc, agent=body.agent) from None
        except BaseException:
            release_run_request(engine, run_id)
            raise
        try:
            for name, sealed, held, signature in forecasts:  # before the run is queued
                assert body.agent is not None
                state = services.ledger.commit_forecast(
                    body.agent, run_id, name, sealed, agent_signature=signature, held=held
                )
                committed.append({"id": state.id, "figure": state.figure,
                                  "commitment": state.commitment, "seq": state.seq,
                                  "held": state.held})  # fmt: skip
        except BaseException:
            # refused (an agent signature that does not fit): the run is stored but not queued,
            # and says so: incomplete, no trial (a restart does not pick it up)
            release_run_request(engine, run_id)
            services.store.transition_run(run_id, "incomplete", unless=("complete",))
            raise
        return scheduler.run_now(run_id)

    job = await run_in_threadpool(plan)
    run = await run_in_threadpool(services.store.get_run, run_id)
    return RunAccepted(run=summary(run), job=job, forecasts=committed)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/runs",
        list_runs,
        "the latest runs (an agent token: its agent's own)",
        query=RunsQuery,
        answer=RunList,
        errors=(403,),
    ),
    Endpoint(
        "POST",
        "/runs",
        post_run,
        "run a suite now (held-out seed)",
        body=RunRequest,
        answer=RunAccepted,
        ok=202,
        errors=(403, 413, 429),
    ),
    Endpoint(
        "GET",
        "/runs/{id}",
        get_run,
        "a run and its trial counts (404: unknown, or not the agent's)",
        path_params=RunPath,
        query=RevealQuery,
        answer=RunDetail,
        errors=(403, 404),
    ),
    Endpoint(
        "GET",
        "/runs/{id}/profile",
        run_profile,
        "the run's profile (404: unknown, or not the agent's)",
        path_params=RunPath,
        query=RevealQuery,
        errors=(403, 404),
    ),
)
