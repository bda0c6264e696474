"""The API in resources: handlers called alone over a Services value (no HTTP), the request
models' refusals, and the OpenAPI document generated from the endpoints and their models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from harness.config.settings import AgentConfig, load_settings
from harness.config.workspace import Workspace
from harness.daemon.api import services_for
from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import Body, Query, Text, parse
from harness.daemon.openapi import openapi_document
from harness.daemon.routes import ENDPOINTS, calls, runs, service, tokens
from harness.daemon.services import RequestQuota, Services
from harness.daemon.tokens import Principal
from harness.daemon.web import ApiError

AGENT = Principal("t1", "agent", "piper", None, None)
OPERATOR = Principal("t2", "operator", None, "ops", None)
REQUEST = Request(
    {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b""}
)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    settings = load_settings(
        None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 'a.db'}", "home": str(tmp_path)}
    )
    settings = replace(
        settings, agents={"dusk": AgentConfig("dusk", endpoint="http://dusk.invalid/v1", model="m")}
    )
    ws = Workspace.open(settings)
    ledger = ws.new_ledger()
    try:
        yield services_for(settings, store=ws.store, ledger=ledger)
    finally:
        ledger.close()
        ws.engine.dispose()


def call(
    principal: Principal | None, *, path: Any = None, query: Any = None, body: Any = None
) -> Call[Any, Any, Any]:
    return Call(principal, path, query, body, REQUEST)


def test_handlers_answer_alone_over_services(services: Services) -> None:
    who = asyncio.run(tokens.whoami(services, call(AGENT)))
    assert (who.token, who.scope, who.agent) == ("t1", "agent", "piper")
    health = asyncio.run(service.health(services, call(None)))
    assert health.status_code == 200
    assert json.loads(health.body) == {"status": "ok", "scheduler": "off"}
    json_query = service.MetricsQuery(format="json")
    counts = asyncio.run(service.metrics(services, call(OPERATOR, query=json_query)))
    assert isinstance(counts, service.Metrics)
    assert (counts.runs, counts.predictions, counts.ledger.entries) == (0, 0, 0)
    text = asyncio.run(service.metrics(services, call(OPERATOR, query=service.MetricsQuery())))
    assert isinstance(text, Response)
    assert b'mindledger_ledger_entries 0.0' in text.body
    listed = asyncio.run(runs.list_runs(services, call(AGENT, query=runs.RunsQuery())))
    assert listed.runs == []
    record = asyncio.run(calls.calls(services, call(AGENT, query=calls.CallsQuery())))
    assert (
        record["pairs"] == [] and record["prediction_share"] == services.settings.prediction_share
    )


def test_handlers_refuse_as_the_api_does(services: Services) -> None:
    with pytest.raises(ApiError) as refused:  # an agent token that asks for held-out seeds
        asyncio.run(
            runs.list_runs(services, call(AGENT, query=runs.RunsQuery(reveal_held_out=True)))
        )
    assert (refused.value.status, refused.value.field) == (403, "reveal_held_out")
    with pytest.raises(ApiError) as refused:  # another agent's record
        asyncio.run(calls.calls(services, call(AGENT, query=calls.CallsQuery(agent="dusk"))))
    assert (refused.value.status, refused.value.field) == (403, "agent")
    with pytest.raises(ApiError) as refused:  # no scheduler in this daemon
        body = runs.RunRequest(references=["oracle"])
        asyncio.run(runs.post_run(services, call(OPERATOR, body=body)))
    assert (refused.value.status, refused.value.code) == (503, "scheduler_off")


class Toy(Body):
    name: Text
    """The toy's name."""
    tags: list[Text] = []
    size: int = Field(0, ge=0)


class ToyQuery(Query):
    colour: str | None = None


def test_a_refusal_names_the_field_and_an_unknown_one_first() -> None:
    def refusal(data: dict[str, Any]) -> tuple[str, str | None, str]:
        with pytest.raises(ApiError) as refused:
            parse(Toy, data)
        assert refused.value.status == 400
        return refused.value.code, refused.value.field, refused.value.message

    assert refusal({"name": 5, "extra": 1})[:2] == ("unknown_field", "extra")
    assert "name, tags, size" in refusal({"name": "a", "extra": 1})[2]
    assert refusal({}) == ("missing_field", "name", "expected the toy's name, got nothing")
    code, field, message = refusal({"name": ""})
    assert (code, field) == ("invalid_field", "name") and message.endswith("got an empty string")
    assert refusal({"name": "a", "tags": ["x", 3]})[:2] == ("invalid_field", "tags[1]")
    assert refusal({"name": "a", "size": "3"})[:2] == ("invalid_field", "size")  # strict
    assert refusal({"name": "a", "size": True})[:2] == ("invalid_field", "size")
    assert parse(Toy, {"name": "a", "size": 3}).size == 3
    with pytest.raises(ApiError) as refused:
        parse(ToyQuery, {"shade": "x"})
    assert "unknown query parameter (expected some of: colour)" in refused.value.message


async def _toy(services: Services, call: Call[None, ToyQuery, Toy]) -> dict[str, Any]:
    return {}


def test_the_document_is_generated_from_the_models() -> None:
    toy = Endpoint("POST", "/predictions", _toy, "a toy", query=ToyQuery, body=Toy, errors=(409,))
    document = openapi_document(endpoints=[toy])
    operation = document["paths"]["/predictions"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["name"] and schema["additionalProperties"] is False
    assert schema["properties"]["name"] == {
        "type": "string", "minLength": 1, "description": "The toy's name."
    }  # fmt: skip
    assert schema["properties"]["size"] == {"type": "integer", "minimum": 0, "default": 0}
    assert operation["parameters"] == [
        {"name": "colour", "in": "query", "required": False, "schema": {"type": "string"}}
    ]
    # its own answers, the refusals every token route shares, and the statuses of its row of
    # the role table (POST /predictions: 201 and 403)
    assert set(operation["responses"]) == {"200", "201", "400", "401", "403", "409", "429", "503"}
    assert "x-roles" in operation


def test_every_endpoint_documents_what_its_models_read() -> None:
    document = openapi_document(["dusk"], modules=["tom"])
    for endpoint in ENDPOINTS:
        operation = document["paths"][endpoint.path][endpoint.method.lower()]
        named = {(p["in"], p["name"]) for p in operation.get("parameters", ())}
        for model, where in ((endpoint.path_params, "path"), (endpoint.query, "query")):
            fields = set() if model is None else set(model.model_fields)
            assert {n for w, n in named if w == where} == fields, endpoint.path
        if endpoint.body is not None:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert set(schema["properties"]) == set(endpoint.body.model_fields), endpoint.path
    ablate = document["paths"]["/runs"]["post"]["requestBody"]["content"]["application/json"]
    assert ablate["schema"]["properties"]["agent"] == {
        "enum": ["dusk"], "description": "The agent under test (a declared agent)."
    }  # fmt: skip
    assert ablate["schema"]["properties"]["ablate"]["items"] == {"enum": ["tom"]}


def test_the_quota_refuses_rather_than_waits() -> None:
    t = [0.0]
    quota = RequestQuota(1.0, burst=1, clock=lambda: t[0])
    assert quota.take("a") == 0.0 and quota.take("a") == pytest.approx(1.0)
    t[0] += 1.0
    assert quota.take("a") == 0.0
