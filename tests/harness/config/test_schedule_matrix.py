"""The nightly matrix as ``[schedule.matrix]`` sets it: every key read and checked (a bad one
is named), and the daemon's nightly matrix piloted by default: on the targets' disagreement
when at least two agents take part, on its one agent's consistency otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config.schedule_config import KNOWN_KINDS, MatrixSchedule
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.config.workspace import Workspace
from harness.daemon import DaemonContext
from matrix import DEFAULT_KINDS
from mindledger.errors import ConfigError
from reports import build_profile
from reports.matrix_summary import matrix_params


def settings_with(tmp_path: Path, text: str, **flags: str) -> Settings:
    path = tmp_path / "mindledger.toml"
    path.write_text(text)
    return load_settings(path, env={}, flags=flags)


def test_the_known_kinds_are_the_pilots() -> None:
    assert KNOWN_KINDS == DEFAULT_KINDS


def test_every_key_is_read(tmp_path: Path) -> None:
    s = settings_with(tmp_path, """
[schedule]
cron = "0 4 * * *"

[schedule.matrix]
items = 30
samples = 5
pilot = true
kinds = ["arbitrary", "open", "arbitrary"]
candidates = 90
conditions = ["zero-shot", "observe:03", "simulate"]
second_order = true
""")
    m = s.schedule_matrix
    assert m == MatrixSchedule(
        enabled=True, items=30, samples=5, pilot=True, kinds=("arbitrary", "open"),
        candidates=90, conditions=("zero-shot", "observe:3", "simulate"), second_order=True,
    )
    assert s.schedule == "0 4 * * *"
    assert s.public_dict()["schedule_matrix"]["conditions"] == ["zero-shot", "observe:3",
                                                                "simulate"]


def test_the_defaults_pilot_whatever_the_number_of_agents(tmp_path: Path) -> None:
    m = settings_with(tmp_path, "").schedule_matrix
    assert (m.enabled, m.items, m.samples, m.pilot, m.conditions, m.queue) == (
        True, 20, 10, True, ("zero-shot",), None)
    assert m.pilots(2) and m.pilots(1)
    assert replace(m, pilot=False).pilots(3) is False
    auto = settings_with(tmp_path, '[schedule.matrix]\npilot = "auto"\n').schedule_matrix
    assert auto.pilot is None and auto.pilots(2) and not auto.pilots(1)
    assert settings_with(tmp_path, "").public_dict()["schedule_matrix"]["pilot"] is True
    assert settings_with(tmp_path, "").public_dict()["schedule_matrix"]["queue"] == "auto"


@pytest.mark.parametrize(
    ("body", "key", "says"),
    [
        ("items = 0", "schedule.matrix.items", "from 1 to 10,000"),
        ("items = 20000", "schedule.matrix.items", "from 1 to 10,000"),
        ("samples = 1", "schedule.matrix.samples", "from 2 to 100"),
        ("candidates = -5", "schedule.matrix.candidates", "from 1 to 100,000"),
        ('conditions = ["observe:0"]', "schedule.matrix.conditions", "M from 1 to 100"),
        ("items = true", "schedule.matrix.items", "whole number"),
        ('pilot = "sometimes"', "schedule.matrix.pilot", '"auto", true or false'),
        ('enabled = "yes"', "schedule.matrix.enabled", "true or false"),
        ('kinds = ["telepathy"]', "schedule.matrix.kinds", "unknown kind 'telepathy'"),
        ("kinds = []", "schedule.matrix.kinds", "non-empty list"),
        ('conditions = ["observe:x"]', "schedule.matrix.conditions", "unknown condition"),
        ('conditions = ["simulate"]\nsecond_order = true', "schedule.matrix.second_order",
         "zero-shot"),
        ("colour = 1", "schedule.matrix.colour", "unknown key"),
    ],
)
def test_a_bad_key_is_named(tmp_path: Path, body: str, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_with(tmp_path, f"[schedule.matrix]\n{body}\n")
    assert err.value.key == key and says in str(err.value)


def test_a_matrix_that_is_not_a_table_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        settings_with(tmp_path, "[schedule]\nmatrix = 3\n")
    assert err.value.key == "schedule.matrix"


@pytest.fixture
def workspace(tmp_path: Path, db_url: str) -> Iterator[Workspace]:
    settings = settings_with(tmp_path, """
[schedule.matrix]
items = 3
samples = 3
kinds = ["arbitrary"]
candidates = 6
queue = false  # in the test's process on PostgreSQL too
""", db_url=db_url, home=str(tmp_path / "home"))
    ws = Workspace.open(settings)
    yield ws
    ws.close()


def test_the_nightly_matrix_pilots_two_agents_by_default(workspace: Workspace) -> None:
    ws = workspace
    ctx = DaemonContext(ws.settings, ws.store, ws.ledger)
    assert ctx.matrix.items == 3 and ctx.matrix.pilot is True
    # the oracle means nothing in the matrix: it takes no part, and the profile says so
    # whatever the pilot's verdict
    suite_run = ctx.plan_run(suite="quick", references=["habit", "random", "oracle"])
    ctx.execute(suite_run)
    matrix_run = ctx.run_matrix_beside(suite_run)
    assert matrix_run is not None
    oracle = build_profile(ws.store, suite_run, n_boot=50).to_json()["agents"]["ref:oracle"]
    assert oracle["agent_prediction_skill"]["available"] is False
    assert "did not take part" in oracle["agent_prediction_skill"]["reason"]
    params = matrix_params(ws.store, matrix_run)
    pilot = params.pilot
    assert pilot is not None and pilot["n_candidates"] == 6
    assert pilot["targets"] == ["ref:habit", "ref:random"] and pilot["verdict"]
    assert pilot["filter"]["min_items"] == 3  # the filter, recorded with the run
    assert params.accompanies == suite_run and params.samples == 3


def test_the_nightly_matrix_of_one_agent_is_piloted_on_its_consistency(
    workspace: Workspace,
) -> None:
    ws = workspace
    settings = replace(ws.settings, agents={
        "bot": AgentConfig(name="bot", adapter="reference", policy="habit"),
    })
    ctx = DaemonContext(settings, ws.store, ws.ledger)
    suite_run = ctx.plan_run(suite="quick", agents=["bot"])
    ctx.execute(suite_run)
    matrix_run = ctx.run_matrix_beside(suite_run)
    assert matrix_run is not None
    pilot = matrix_params(ws.store, matrix_run).pilot
    assert pilot is not None and pilot["targets"] == ["bot"] and pilot["filter"]["min_targets"] == 1
    assert "targets" not in pilot["dropped"] and "agreement" not in pilot["dropped"]
    assert all(c["disagreement"] is None and c["within"] == c["consistency"]["bot"]
               for c in pilot["candidates"])
    # "auto" pilots no matrix of one agent: the seed's arbitrary-choice items, unfiltered
    auto = DaemonContext(replace(settings, schedule_matrix=replace(
        settings.schedule_matrix, pilot=None)), ws.store, ws.ledger)
    suite_run = auto.plan_run(suite="quick", agents=["bot"])
    auto.execute(suite_run)
    matrix_run = auto.run_matrix_beside(suite_run)
    assert matrix_run is not None
    params = matrix_params(ws.store, matrix_run)
    assert params.pilot is None and params.n_items == 3


def test_a_disabled_nightly_matrix_is_not_run(workspace: Workspace) -> None:
    ws = workspace
    settings = replace(ws.settings, schedule_matrix=replace(
        ws.settings.schedule_matrix, enabled=False))
    ctx = DaemonContext(settings, ws.store, ws.ledger)
    suite_run = ctx.plan_run(suite="quick", references=["habit", "random"])
    ctx.execute(suite_run)
    assert ctx.run_matrix_beside(suite_run) is None
    assert [r.suite for r in ws.store.list_runs()] == ["quick"]
