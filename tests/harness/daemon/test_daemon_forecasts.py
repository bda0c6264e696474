"""Issue 29 through real sockets on 127.0.0.1: self-forecasts committed through the API.

Two agents, ``ada`` and ``bea`` (reference agents: no model), each with a token, and an operator.
An agent forecasts for itself only, for a run it is under test in (another agent's run is
answered as an unknown one); an operator forecasts on an agent's behalf. A forecast is refused
(409) once the run is sealed or has trials, and after an announced run's deadline; a bad body
is a 400 naming its field, and writes nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.config.seeds import is_held_out
from harness.config.settings import AgentConfig, load_settings
from harness.daemon import BackgroundServer, Daemon, build_daemon, create_token
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from ledger import new_salt
from ledger.protocol import commitment
from mindledger.forecasts import forecast_body, parse_forecast

SEEDS = iter(s for s in range(1_400_000_000, 1_400_010_000) if not is_held_out(s))
QUANTILES = {"form": "quantiles", "levels": [0.05, 0.5, 0.95], "values": [0.3, 0.6, 0.9]}


@dataclass
class World:
    daemon: Daemon
    url: str
    tokens: dict[str, str]

    def send(self, method: str, path: str, caller: str | None, **kw: Any) -> httpx.Response:
        headers = {} if caller is None else {"Authorization": f"Bearer {self.tokens[caller]}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=120, **kw)

    def planned(self, *agents: str) -> str:
        """A stored run of ``agents`` that has not started."""
        daemon = self.daemon
        run_id = f"run-{'-'.join(agents)}-{uuid.uuid4().hex[:8]}"
        create_run(daemon.store, daemon.settings, suite="smoke",
                   planned=plan_agents(daemon.settings, agents=agents), seed=next(SEEDS),
                   run_id=run_id)  # fmt: skip
        return run_id

    def execute(self, run_id: str) -> None:
        daemon = self.daemon
        asyncio.run(execute_stored_run(daemon.store, daemon.settings, run_id,
                                       ledger=daemon.ledger))  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("forecasts")
    base = load_settings(None, env={}, flags={"db_url": f"sqlite:///{home / 'f.db'}",
                                              "home": str(home)})  # fmt: skip
    agents = {n: AgentConfig(name=n, adapter="reference", policy="oracle") for n in ("ada", "bea")}
    settings = replace(base, agents=agents, head_interval=0, api_rate_limit=100_000.0,
                       schedule="0 0 1 1 *")  # fmt: skip
    daemon = build_daemon(settings, scheduler_options={"expire_every": None})
    assert daemon.scheduler is not None
    daemon.scheduler.start(paused=True)  # announced runs never fire here
    tokens = {n: create_token(daemon.engine, n) for n in ("ada", "bea")}
    tokens["operator"] = create_token(daemon.engine, None, scope="operator", label="ops")
    try:
        with BackgroundServer(daemon.app) as server:
            yield World(daemon, server.url, tokens)
    finally:
        daemon.close()


def _sealed() -> tuple[str, dict[str, Any], str]:
    body = forecast_body(parse_forecast(QUANTILES), "the oracle knows")
    salt = new_salt()
    return commitment(body, salt), body, salt.hex()


def _error(r: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = r.json()["error"]
    return error


def test_an_agent_forecasts_for_itself_and_reads_only_its_own(world: World) -> None:
    run = world.planned("ada")
    sealed, _, _ = _sealed()
    r = world.send("POST", "/forecasts", "ada",
                   json={"run": run, "figure": "false_belief_accuracy", "commitment": sealed})  # fmt: skip
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["commitment"] == sealed and made["id"] == "f" + sealed[7:27]
    assert made["predictor"] == "ada" and made["run"] == run and made["held"] is False
    assert made["deadline"] is None  # a stored run takes forecasts until it is sealed
    fid = made["id"]
    state = world.daemon.ledger.forecast(fid)
    assert (state.seq, state.status) == (made["seq"], "committed")

    own = world.send("GET", f"/forecasts/{fid}", "ada")
    assert own.status_code == 200 and own.json()["figure"] == "false_belief_accuracy"
    theirs = world.send("GET", f"/forecasts/{fid}", "bea")
    unknown = world.send("GET", "/forecasts/f00000000000000000000", "bea")
    assert theirs.status_code == unknown.status_code == 404
    assert _error(theirs)["message"].replace(fid, "X") == _error(unknown)["message"].replace(
        "f00000000000000000000", "X"
    )
    assert fid in {f["id"] for f in world.send("GET", "/forecasts", "ada").json()["forecasts"]}
    assert fid not in world.send("GET", "/forecasts", "bea").text
    assert fid in world.send("GET", "/forecasts", "operator", params={"run": run}).text
    assert world.send("GET", "/forecasts", "bea", params={"agent": "ada"}).status_code == 403


def test_another_agents_run_is_an_unknown_run_and_another_predictor_is_forbidden(
    world: World,
) -> None:
    run = world.planned("ada")
    sealed, _, _ = _sealed()
    theirs = world.send("POST", "/forecasts", "bea",
                        json={"run": run, "figure": "d50", "commitment": sealed})  # fmt: skip
    nothing = world.send("POST", "/forecasts", "bea",
                         json={"run": "run-none", "figure": "d50", "commitment": sealed})  # fmt: skip
    assert theirs.status_code == nothing.status_code == 404
    assert _error(theirs)["message"].replace(run, "X") == _error(nothing)["message"].replace(
        "run-none", "X"
    )
    named = world.send("POST", "/forecasts", "bea", json={
        "run": run, "figure": "d50", "commitment": sealed, "predictor": "ada"})  # fmt: skip
    assert named.status_code == 403 and _error(named)["field"] == "predictor"
    assert world.daemon.ledger.forecasts(run_id=run) == []


def test_an_operator_forecasts_on_an_agents_behalf_and_the_service_holds_it(world: World) -> None:
    run = world.planned("bea")
    body = {"run": run, "figure": "accuracy_at_depth:R1", "forecast": QUANTILES,
            "reason": "one step deeper"}  # fmt: skip
    without = world.send("POST", "/forecasts", "operator", json=body)
    assert without.status_code == 400 and _error(without)["field"] == "predictor"
    wrong = world.send("POST", "/forecasts", "operator", json={**body, "predictor": "ada"})
    assert wrong.status_code == 400 and _error(wrong)["field"] == "predictor"
    r = world.send("POST", "/forecasts", "operator", json={**body, "predictor": "bea"})
    assert r.status_code == 201, r.text
    assert r.json()["held"] is True and r.json()["predictor"] == "bea"
    kept = world.daemon.ledger.held_forecast(r.json()["id"])
    assert kept is not None
    held_body, salt = kept
    assert held_body == {"forecast": QUANTILES, "reason": "one step deeper"}
    assert commitment(held_body, bytes.fromhex(salt)) == r.json()["commitment"]
    # the agent reads it; its reveal is the service's
    assert world.send("GET", f"/forecasts/{r.json()['id']}", "bea").json()["held"] is True
    revealed = world.send("POST", f"/forecasts/{r.json()['id']}/reveal", "operator",
                          json={"forecast": QUANTILES, "reason": None, "salt": salt})  # fmt: skip
    assert revealed.status_code == 403


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"figure": "nope"}, "figure"),
        ({"figure": "accuracy_at_depth:R9"}, "figure"),
        ({"forecast": {**QUANTILES, "levels": [0.5, 0.05, 0.95]}}, "forecast.levels"),
        ({"forecast": {"form": "bins", "edges": [0, 1], "probs": [0.5]}}, "forecast.probs"),
        ({"forecast": {"form": "points"}}, "forecast.form"),
        ({"reason": "two\nlines"}, "reason"),
        ({"commitment": "sha256:" + "0" * 64}, "commitment"),
        ({"extra": 1}, "extra"),
        ({"run": 7}, "run"),
    ],
)
def test_a_bad_body_names_its_field_and_writes_nothing(
    world: World, change: dict[str, Any], field: str
) -> None:
    run = world.planned("ada")
    body = {"run": run, "figure": "d50", "forecast": QUANTILES, "reason": "why", **change}
    body = {k: v for k, v in body.items() if v is not None}
    before = len(world.daemon.ledger.forecasts())
    r = world.send("POST", "/forecasts", "ada", json=body)
    assert r.status_code == 400, r.text
    assert _error(r)["field"] == field, r.text
    assert len(world.daemon.ledger.forecasts()) == before


def test_no_forecast_after_the_seal_or_the_first_trial(world: World) -> None:
    run = world.planned("ada")
    first, _, _ = _sealed()
    ok = world.send("POST", "/forecasts", "ada",
                    json={"run": run, "figure": "d50", "commitment": first})  # fmt: skip
    assert ok.status_code == 201
    world.daemon.ledger.seal_run(run)
    late, _, _ = _sealed()
    r = world.send("POST", "/forecasts", "ada",
                   json={"run": run, "figure": "d50", "commitment": late})  # fmt: skip
    assert r.status_code == 409, r.text
    world.execute(run)
    r = world.send("POST", "/forecasts", "ada",
                   json={"run": run, "figure": "d50", "commitment": late})  # fmt: skip
    assert r.status_code == 409 and _error(r)["code"] == "run_started", r.text
    # the ledger shows the forecast before the seal, and verifies
    assert [f.id for f in world.daemon.ledger.forecasts(run_id=run)] == [ok.json()["id"]]
    assert world.daemon.ledger.verify() == []


def test_the_execution_seals_the_run_before_its_first_trial(world: World) -> None:
    run = world.planned("bea")
    assert not world.daemon.ledger.sealed(run)
    world.execute(run)
    assert world.daemon.ledger.sealed(run)
    assert world.daemon.store.get_run(run).status == "complete"


def test_a_reveal_waits_for_the_end_of_the_run(world: World) -> None:
    run = world.planned("ada")
    sealed, body, salt = _sealed()
    fid = world.send("POST", "/forecasts", "ada",
                     json={"run": run, "figure": "d50", "commitment": sealed}).json()["id"]  # fmt: skip
    sent = {"forecast": body["forecast"], "reason": body["reason"], "salt": salt}
    early = world.send("POST", f"/forecasts/{fid}/reveal", "ada", json=sent)
    assert early.status_code == 409 and _error(early)["code"] == "run_not_ended", early.text
    theirs = world.send("POST", f"/forecasts/{fid}/reveal", "bea", json=sent)
    assert theirs.status_code == 404
    bad = world.send("POST", f"/forecasts/{fid}/reveal", "ada",
                     json={**sent, "forecast": {"form": "quantiles"}})  # fmt: skip
    assert bad.status_code == 400 and _error(bad)["field"] == "forecast.levels"
    assert world.daemon.ledger.forecast(fid).status == "committed"


def _announce(world: World, agent: str, at: dt.datetime) -> None:
    assert world.daemon.scheduler is not None
    world.daemon.scheduler.scheduler.modify_job(f"nightly:{agent}", next_run_time=at)


def test_the_schedule_announces_each_agent_its_own_runs(world: World) -> None:
    ada = world.send("GET", "/schedule/next", "ada")
    assert ada.status_code == 200, ada.text
    (run,) = ada.json()["runs"]
    assert run["agent"] == "ada" and run["suite"] == "quick"
    assert run["deadline"] == run["fire_time"]
    assert "false_belief_accuracy" in run["figures"] and "change:d50" in run["figures"]
    assert "seed" not in ada.text and "items" not in ada.text
    everyone = world.send("GET", "/schedule/next", "operator").json()["runs"]
    assert {r["agent"] for r in everyone} == {"ada", "bea"}
    one = world.send("GET", "/schedule/next", "operator", params={"agent": "bea"}).json()["runs"]
    assert [r["agent"] for r in one] == ["bea"]
    assert world.send("GET", "/schedule/next", "ada", params={"agent": "bea"}).status_code == 403
    assert world.send("GET", "/schedule/next", None).status_code == 401


def test_an_announced_run_takes_forecasts_until_its_deadline(world: World) -> None:
    due = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=3)
    _announce(world, "ada", due)
    (run,) = world.send("GET", "/schedule/next", "ada").json()["runs"]
    assert dt.datetime.fromisoformat(run["deadline"].replace("Z", "+00:00")) == due
    sealed, _, _ = _sealed()
    body = {"run": run["run"], "figure": "d50", "commitment": sealed}
    assert world.send("POST", "/forecasts", "bea", json=body).status_code == 404
    r = world.send("POST", "/forecasts", "ada", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["deadline"] == run["deadline"]
    while dt.datetime.now(dt.UTC) <= due + dt.timedelta(milliseconds=200):
        time.sleep(0.1)
    late, _, _ = _sealed()
    r = world.send("POST", "/forecasts", "ada", json={**body, "commitment": late})
    assert r.status_code == 409 and _error(r)["code"] == "deadline_passed", r.text
    _announce(world, "ada", dt.datetime(2030, 1, 1, tzinfo=dt.UTC))


def test_a_stored_run_that_was_announced_keeps_its_deadline(world: World, tmp_path: Path) -> None:
    """The nightly job stored its run under the announced id: the deadline (its fire time) is
    read from the id, so a forecast for it is refused even before its first trial."""
    from harness.run.forecasting import scheduled_run_id

    due = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=1)
    run_id = scheduled_run_id("nightly:ada", due)
    daemon = world.daemon
    create_run(daemon.store, daemon.settings, suite="smoke",
               planned=plan_agents(daemon.settings, agents=("ada",)), seed=next(SEEDS),
               run_id=run_id)  # fmt: skip
    sealed, _, _ = _sealed()
    r = world.send("POST", "/forecasts", "ada",
                   json={"run": run_id, "figure": "d50", "commitment": sealed})  # fmt: skip
    assert r.status_code == 409 and _error(r)["code"] == "deadline_passed", r.text


def _value(world: World, run_id: str, agent: str, name: str) -> float | None:
    from reports.profile import build_profile
    from reports.self_forecast import figure_value

    profile = build_profile(world.daemon.store, run_id, n_boot=200)
    return figure_value(profile, agent, name, None).value


def test_the_service_reveals_what_it_holds_when_the_run_ends(world: World) -> None:
    """Two runs of bea's in a row, a held forecast for each: each is scored against its run's
    figure, the second against a naive forecast from the first run's value."""
    fids = []
    for _ in range(2):
        run = world.planned("bea")
        r = world.send("POST", "/forecasts", "operator", json={
            "run": run, "figure": "false_belief_accuracy", "forecast": QUANTILES,
            "predictor": "bea"})  # fmt: skip
        assert r.status_code == 201, r.text
        world.execute(run)
        fids.append((r.json()["id"], run))
    states = [world.daemon.ledger.forecast(fid) for fid, _ in fids]
    for state, (_, run) in zip(states, fids, strict=True):
        assert state.status == "scored", state
        outcome = _value(world, run, "bea", "false_belief_accuracy")
        assert outcome is not None and state.outcome == pytest.approx(outcome)
        assert state.rule == "quantile_score"
        assert state.loss == pytest.approx(parse_forecast(QUANTILES).loss(outcome))
    assert states[1].naive is not None and states[1].naive_loss is not None
    assert world.daemon.ledger.verify() == []


def test_an_agent_reveals_its_own_after_the_run_once(world: World) -> None:
    run = world.planned("ada")
    sealed, body, salt = _sealed()
    fid = world.send("POST", "/forecasts", "ada",
                     json={"run": run, "figure": "d50", "commitment": sealed}).json()["id"]  # fmt: skip
    wrong, _, _ = _sealed()
    other = world.send("POST", "/forecasts", "ada",
                       json={"run": run, "figure": "d50", "commitment": wrong}).json()["id"]  # fmt: skip
    world.execute(run)
    sent = {"forecast": body["forecast"], "reason": body["reason"], "salt": salt}
    r = world.send("POST", f"/forecasts/{fid}/reveal", "ada", json=sent)
    assert r.status_code == 200, r.text
    assert r.json()["status"] in ("scored", "void") and r.json()["forecast"] == QUANTILES
    if r.json()["status"] == "void":
        assert r.json()["note"]
    again = world.send("POST", f"/forecasts/{fid}/reveal", "ada", json=sent)
    assert again.status_code == 409
    # the right forecast with another commitment's salt: recorded rejected, said with a 409
    rejected = world.send("POST", f"/forecasts/{other}/reveal", "ada", json=sent)
    assert rejected.status_code == 409 and _error(rejected)["code"] == "reveal_rejected"
    assert world.daemon.ledger.forecast(other).status == "rejected"
    assert world.daemon.ledger.verify() == []


def test_a_run_shared_by_two_agents_is_neither_agents_to_forecast_but_an_operators(
    world: World,
) -> None:
    """A run with both agents under test is nobody's alone (its trials are both agents'): an
    agent token is answered as for an unknown run; an operator forecasts for either."""
    run = world.planned("ada", "bea")
    sealed, _, _ = _sealed()
    body = {"run": run, "figure": "d50", "commitment": sealed}
    assert world.send("POST", "/forecasts", "ada", json=body).status_code == 404
    for agent in ("ada", "bea"):
        sealed, _, _ = _sealed()
        r = world.send("POST", "/forecasts", "operator",
                       json={**body, "commitment": sealed, "predictor": agent})  # fmt: skip
        assert r.status_code == 201, r.text
    assert {f.predictor for f in world.daemon.ledger.forecasts(run_id=run)} == {"ada", "bea"}


def test_a_run_requested_now_carries_its_forecasts_committed_before_it_is_queued(
    world: World,
) -> None:
    """``POST /runs`` starts the run at once: its forecasts come with the request, checked
    before anything is stored and committed before the run is queued (so before its seal)."""
    sealed, _, _ = _sealed()
    forecasts = [
        {"figure": "d50", "commitment": sealed},
        {"figure": "false_belief_accuracy", "forecast": QUANTILES, "reason": "as ever"},
    ]
    before = (len(world.daemon.store.list_runs(1000)), len(world.daemon.ledger.forecasts()))
    bad = [forecasts[0], {**forecasts[1], "forecast": {**QUANTILES, "values": [1, 0, 2]}}]
    for body, field in (
        ({"suite": "smoke", "agent": "ada", "forecasts": bad}, "forecasts[1].forecast.values"),
        ({"suite": "smoke", "references": ["oracle"], "forecasts": forecasts}, "agent"),
        (
            {"suite": "smoke", "agent": "ada", "forecasts": [forecasts[0], forecasts[0]]},
            "forecasts[1].commitment",
        ),
    ):
        r = world.send("POST", "/runs", "ada", json=body)
        assert r.status_code == 400 and _error(r)["field"] == field, r.text
    r = world.send("POST", "/runs", "ada", json={"suite": "smoke", "agent": "ada",
                                                 "forecasts": [{"figure": "d9", "commitment": sealed}]})  # fmt: skip
    assert r.status_code == 400 and _error(r)["field"] == "forecasts[0].figure", r.text
    assert (len(world.daemon.store.list_runs(1000)), len(world.daemon.ledger.forecasts())) == before

    r = world.send("POST", "/runs", "ada",
                   json={"suite": "smoke", "agent": "ada", "forecasts": forecasts})  # fmt: skip
    assert r.status_code == 202, r.text
    run = r.json()["run"]["id"]
    made = r.json()["forecasts"]
    assert [(f["figure"], f["held"]) for f in made] == [("d50", False),
                                                        ("false_belief_accuracy", True)]  # fmt: skip
    assert [f.id for f in world.daemon.ledger.forecasts(run_id=run)] == [f["id"] for f in made]
    world.execute(run)  # (this daemon's scheduler is paused: the test runs it)
    held = world.daemon.ledger.forecast(made[1]["id"])
    assert held.status in ("scored", "void") and held.reason == "as ever"
    assert world.daemon.ledger.verify() == []
