"""The API specified: the OpenAPI document names exactly the app's routes, and schemathesis,
against a live daemon on a real socket, finds no 500, no response outside the document and no
answer without a valid token."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from starlette.routing import Route

from harness.config.settings import AgentConfig, load_settings
from harness.daemon import BackgroundServer, build_daemon, create_token
from harness.daemon.openapi import openapi_document
from harness.testing import FakeOpenAI


def test_the_document_names_every_route_and_nothing_else(tmp_path: Path) -> None:
    settings = load_settings(
        None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 'a.db'}", "home": str(tmp_path)}
    )
    daemon = build_daemon(settings, scheduler=False)
    try:
        routes = {
            (m.lower(), r.path)
            for r in daemon.app.routes
            if isinstance(r, Route)
            for m in (r.methods or ())
            if m != "HEAD"
        }
    finally:
        daemon.close()
    documented = {
        (method, path) for path, ops in openapi_document()["paths"].items() for method in ops
    }
    assert routes == documented


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    home = tmp_path_factory.mktemp("openapi")
    with FakeOpenAI() as fake:
        settings = load_settings(
            None, env={}, flags={"db_url": f"sqlite:///{home / 'a.db'}", "home": str(home)}
        )
        settings = replace(
            settings,
            agents={"dusk": AgentConfig("dusk", endpoint=fake.base_url, model="m")},
            head_interval=0,
            api_rate_limit=100_000.0,  # not about the rate limit: no 429 on a fast machine
        )
        daemon = build_daemon(settings, scheduler=False)
        token = create_token(daemon.engine, "piper")
        try:
            with BackgroundServer(daemon.app) as server:
                yield server.url, token
        finally:
            daemon.close()


def test_no_request_breaks_the_api(live: tuple[str, str]) -> None:
    """Every operation, with data drawn from the document (valid and invalid): no 500, every
    response documented and valid, and no answer without the token (schemathesis's checks).
    (Driven through hypothesis here: schemathesis's pytest plugin does not load on pytest 9.)"""
    url, token = live
    document = httpx.get(url + "/openapi.json", timeout=10).json()
    loaded = schemathesis.openapi.from_dict(document)
    loaded.config.update(base_url=url)
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) == sum(len(ops) for ops in document["paths"].values())
    cases = [
        (operation, mode)
        for operation in operations
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    ]
    for operation, mode in cases:

        @given(case=operation.as_strategy(mode))
        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            auth = {"Authorization": f"Bearer {token}"}
            # invalid data must never break the API; the proxy and commit accept chat messages
            # more freely than the document says (OpenAI-compatible), so "accepted though
            # invalid" is not a failure there
            lenient = (
                [schemathesis.checks.negative_data_rejection]
                if case.meta is not None and "negative" in str(case.meta.generation.mode).lower()
                else []
            )
            if (case.method, case.path) == ("POST", "/runs"):
                # this daemon runs no scheduler: a valid run request is a documented 503
                response = case.call_and_validate(
                    headers=auth,
                    excluded_checks=[schemathesis.checks.not_a_server_error, *lenient],
                    additional_checks=[schemathesis.checks.ignored_auth],
                )
                assert response.status_code in (400, 401, 403, 413, 503), response.text
            else:
                case.call_and_validate(
                    headers=auth,
                    additional_checks=[schemathesis.checks.ignored_auth],
                    excluded_checks=lenient,
                )

        try:
            check()
        except Unsatisfiable:
            # nothing to make invalid (an operation without parameters or body)
            assert mode == schemathesis.GenerationMode.NEGATIVE, operation.label
