"""Matrix runs are runs: stored with their agents, items and trials (target samples and
predictions), rebuilt from storage alone, resumable, and reported by `mindledger report`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent.agents import ReferenceAgent
from harness.config.settings import Settings, load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import (
    SUITE,
    MatrixOptions,
    create_matrix_run,
    execute_matrix_run,
    make_items,
    prediction_item,
    run_matrix,
    stored_summary,
)
from harness.run.build import plan_agents
from ledger import open_ledger
from mindledger import family as family_registry
from mindledger.items import Item

POLICIES = ("habit", "projection", "random")
NAMES = [f"ref:{p}" for p in POLICIES]
N_ITEMS = 4
SAMPLES = 3


def settings_for(tmp_path: Path, db_url: str) -> Settings:
    return load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path / "home")})


@pytest.fixture
def workspace(tmp_path: Path, db_url: str) -> Iterator[Workspace]:
    ws = Workspace.open(settings_for(tmp_path, db_url))
    yield ws
    ws.close()


def plan(ws: Workspace) -> tuple[str, int]:
    planned = plan_agents(ws.settings, agents=(), references=POLICIES, no_control=True)
    return create_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=N_ITEMS, samples=SAMPLES, seed=11),
    )


def numbers(result: dict[str, Any]) -> list[Any]:
    """What must agree between two computations of the same matrix."""
    return [result["cells"], result["self_advantage"], result["target_errors"], result["items"]]


def test_a_matrix_run_is_stored_and_rebuilt_from_its_trials(
    workspace: Workspace, tmp_path: Path
) -> None:
    ws = workspace
    run_id, seed = plan(ws)
    run = ws.store.get_run(run_id)
    assert run.suite == SUITE and run.seed == seed == 11 and not run.held_out
    params = json.loads(run.params_json)
    assert params["samples"] == SAMPLES and params["n_items"] == N_ITEMS
    assert params["agents"] == NAMES and params["accompanies"] is None
    assert [ra.name for ra in ws.store.run_agents(run_id)] == NAMES
    items = make_items(11, N_ITEMS)
    assert list(ws.store.run_items(run_id)) == items
    assert family_registry.get("matrix").regenerate(items[0]) == items[0]

    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=200)
    assert ws.store.get_run(run_id).status == "complete"
    # one trial per target on each base item, one per prediction on its prediction item
    trials = ws.store.trials(run_id)
    assert len(trials) == N_ITEMS * (len(NAMES) + len(NAMES) ** 2)
    pairs = {(t.agent, t.item_id) for t in trials}
    for item in items:
        for t in NAMES:
            assert (t, item.id) in pairs
        for p in NAMES:
            for t in NAMES:
                assert (p, prediction_item(item, p, t, SAMPLES).id) in pairs
    habit = next(t for t in trials if t.agent == "ref:habit" and t.item_id == items[0].id)
    stored = json.loads(habit.score_json or "{}")
    assert stored["role"] == "target" and len(stored["samples"]) == SAMPLES
    pred = next(
        json.loads(t.score_json or "{}") for t in trials
        if t.item_id == prediction_item(items[0], "ref:habit", "ref:random", SAMPLES).id
    )
    assert pred["outcome"] == "scored" and pred["prediction"] and pred["target"] == "ref:random"
    assert ws.ledger.verify() == []

    # the summary is rebuilt from storage alone, and equals the in-memory matrix of the same run
    again = stored_summary(ws.store, run_id, n_boot=200).to_dict()
    assert numbers(again) == numbers(result)
    assert again["run"] == run_id and again["seed"] == 11 and again["status"] == "complete"
    led = open_ledger(tmp_path / "other", f"sqlite:///{tmp_path / 'other.db'}")
    agents = {n: ReferenceAgent(n, p, seed=11) for n, p in zip(NAMES, POLICIES, strict=True)}
    fresh = asyncio.run(
        run_matrix(agents, items, led, options=MatrixOptions(samples=SAMPLES, n_boot=200))
    )
    assert numbers(fresh) == numbers(result)
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_an_interrupted_matrix_run_resumes_without_asking_again(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.matrix.runs as matrix

    ws = workspace
    run_id, _ = plan(ws)
    items = make_items(11, N_ITEMS)
    real_ask = matrix.ask

    async def dies_on_the_third(agent: Any, item: Item, *key: Any) -> Any:
        if item.id == items[2].id:
            raise RuntimeError("the process died")
        return await real_ask(agent, item, *key)

    monkeypatch.setattr(matrix, "ask", dies_on_the_third)
    with pytest.raises(RuntimeError, match="died"):
        execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, concurrency=1, n_boot=200)
    assert ws.store.get_run(run_id).status == "interrupted"
    done_items = {t.item_id for t in ws.store.trials(run_id)} & {it.id for it in items}
    assert items[2].id not in done_items and done_items
    commits_before = len([e for e in ws.ledger.entries() if e.kind == "commit"])

    monkeypatch.setattr(matrix, "ask", real_ask)
    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=200)
    assert ws.store.get_run(run_id).status == "complete"
    assert len(ws.store.trials(run_id)) == N_ITEMS * (len(NAMES) + len(NAMES) ** 2)
    # only the items without their trials ran again: one commit per pair on each
    commits = len([e for e in ws.ledger.entries() if e.kind == "commit"])
    assert commits - commits_before == (N_ITEMS - len(done_items)) * len(NAMES) ** 2
    assert all(c["n"] == N_ITEMS for c in result["cells"])
    # resuming a complete run asks nothing and returns the same matrix
    assert numbers(execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=200)) == (
        numbers(result)
    )
    assert len([e for e in ws.ledger.entries() if e.kind == "commit"]) == commits
    assert ws.ledger.verify() == []


def test_a_held_out_matrix_run_withholds_its_seed(workspace: Workspace) -> None:
    ws = workspace
    planned = plan_agents(ws.settings, agents=(), references=("random",), no_control=True)
    run_id, seed = create_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=2, samples=2, held_out=True, accompanies="suite-run"),
    )
    assert ws.store.get_run(run_id).held_out and ws.seeds.is_held_out(seed)
    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=100)
    assert result["seed"] is None and result["held_out"] and result["accompanies"] == "suite-run"
    revealed = stored_summary(ws.store, run_id, n_boot=100, reveal_held_out=True).to_dict()
    assert revealed["seed"] == seed


def test_cli_matrix_is_a_run_that_report_shows_and_resume_finishes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness.cli.main", *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    r = cli("matrix", "--reference", "habit", "--reference", "random", "--items", "2",
            "--samples", "2", "--seed", "11", "--no-pilot", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    run_id = out["run"]
    assert out["status"] == "complete" and out["seed"] == 11 and out["ledger_problems"] == []
    shown = cli("report", run_id, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert numbers(json.loads(shown.stdout)) == numbers(out)
    md = cli("report", run_id)
    assert md.returncode == 0 and "ref:habit → ref:random" in md.stdout
    html = cli("report", run_id, "--format", "html")
    assert html.returncode == 0 and "<table class='heatmap'" in html.stdout
    table = cli("report", run_id, "--format", "csv")
    assert table.returncode == 0 and len(table.stdout.splitlines()) == 1 + 2 * 2
    assert cli("report", run_id, "--format", "headline-csv").returncode == 2
    resumed = cli("matrix", "--resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert numbers(json.loads(resumed.stdout)) == numbers(out)
    assert cli("matrix", "--resume", run_id, "--seed", "3").returncode == 2


def test_the_profile_takes_s_self_and_others_from_the_matrix_beside_the_run(
    workspace: Workspace,
) -> None:
    from harness.daemon import DaemonContext
    from reports import build_profile
    from reports.present import headlines

    ws = workspace
    ctx = DaemonContext(ws.settings, ws.store, ws.ledger, matrix_items=N_ITEMS, matrix_samples=2,
                        matrix_pilot=False, matrix_queue=False)
    suite_run = ctx.plan_run(suite="quick", references=["habit", "projection", "oracle"])
    ctx.execute(suite_run)
    matrix_run = ctx.run_matrix_beside(suite_run)
    assert matrix_run is not None
    summary = stored_summary(ws.store, matrix_run, n_boot=200).to_dict()
    # the oracle means nothing in the matrix: it is left out
    assert summary["agents"] == ["ref:habit", "ref:projection"]
    profile = build_profile(ws.store, suite_run, n_boot=200)
    doc = profile.to_json()
    agents = doc["agents"]
    assert agents["ref:oracle"]["agent_prediction_skill"]["available"] is False
    assert "did not take part" in agents["ref:oracle"]["agent_prediction_skill"]["reason"]
    habit = agents["ref:habit"]["agent_prediction_skill"]
    cells = {(c["predictor"], c["target"]): c for c in summary["cells"]}
    assert habit["matrix_run"] == matrix_run
    assert habit["self"]["value"] == cells["ref:habit", "ref:habit"]["skill"]["value"]
    assert habit["targets"]["ref:projection"]["value"] == (
        cells["ref:habit", "ref:projection"]["skill"]["value"]
    )
    assert habit["others"]["n_targets"] == 1
    assert habit["others"]["value"] == habit["targets"]["ref:projection"]["value"]
    words = {h.agent: h.skill for h in headlines(profile)}
    assert words["ref:habit"].startswith("self ") and " · others " in words["ref:habit"]
    assert words["ref:oracle"].startswith("not measured: ref:oracle did not take part")


def test_a_matrix_run_missing_a_prediction_trial_is_not_marked_complete(
    workspace: Workspace,
) -> None:
    """The queue's sweep (and a failed batch's bookkeeping) settle a run by its missing
    trials: for a matrix run those include the prediction trials, not only the targets' on
    the run's items."""
    import sqlalchemy as sa

    from harness.queue.batches import finish_if_done

    ws = workspace
    run_id, _ = plan(ws)
    execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=50)
    assert ws.store.get_run(run_id).status == "complete"
    # one prediction trial lost, the run not marked (as if its writer died in between)
    with ws.engine.begin() as conn:
        (item_id, agent) = conn.execute(sa.text(
            "SELECT item_id, agent FROM trials WHERE run_id = :r AND score_json LIKE "
            "'%\"role\":\"prediction\"%' LIMIT 1"), {"r": run_id}).one()
        conn.execute(sa.text("DELETE FROM trials WHERE run_id = :r AND item_id = :i AND "
                             "agent = :a"), {"r": run_id, "i": item_id, "a": agent})
        conn.execute(sa.text("UPDATE runs SET status = 'running' WHERE id = :r"), {"r": run_id})
    assert run_id in ws.store.complete_but_unmarked_runs()  # every target trial is there
    assert finish_if_done(ws.store, run_id) is None
    assert ws.store.get_run(run_id).status == "running"
    # resuming runs the item again; then the bookkeeping marks it
    execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=50)
    assert ws.store.get_run(run_id).status == "complete"
    assert finish_if_done(ws.store, run_id) is None  # already complete: nothing written
