"""Issue 14 items 2–4 in the matrix run: the pilot chooses and records the items (and says
"not divergent" instead of skill), open and failure items, K = 10 by default, and the
conditions (zero-shot, observe:m, simulate) with their learning curve and contrast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness.matrix.runs as matrix
import matrix as mi
from harness.agent.agents import ReferenceAgent
from harness.config.settings import Settings, load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import (
    MatrixOptions,
    PilotOptions,
    create_matrix_run,
    execute_matrix_run,
    plan_matrix_run,
    prediction_item,
    run_matrix,
    stored_summary,
)
from harness.run.build import plan_agents
from harness.run.runs import create_run
from ledger import open_ledger
from mindledger import family as family_registry
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix_summary import agent_skill, check_conditions


def settings_for(tmp_path: Path, db_url: str) -> Settings:
    return load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path / "home")})


@pytest.fixture
def workspace(tmp_path: Path, db_url: str) -> Iterator[Workspace]:
    ws = Workspace.open(settings_for(tmp_path, db_url))
    yield ws
    ws.close()


def commits(ws: Workspace) -> int:
    return len([e for e in ws.ledger.entries() if e.kind == "commit"])


def test_the_pilot_chooses_and_records_the_run_items(workspace: Workspace) -> None:
    ws = workspace
    planned = plan_agents(ws.settings, agents=(), references=("habit", "projection"),
                          no_control=True)
    run_id, seed, record = plan_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=5, samples=4, seed=11),
        pilot=PilotOptions(kinds=("arbitrary", "preference", "open"), n_candidates=24),
    )
    assert seed == 11 and record.divergent and record.n_candidates == 24 and record.samples == 4
    assert record.filter.min_items == 5  # at most the items asked for
    params = json.loads(ws.store.get_run(run_id).params_json)
    assert mi.PilotRecord.from_dict(params["pilot"]) == record
    items = list(ws.store.run_items(run_id))
    assert [it.id for it in items] == list(record.kept[:5])
    # every run item regenerates from its kind's generator (`mindledger runs --verify`)
    assert all(family_registry.get("matrix").regenerate(it) == it for it in items)
    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=100)
    assert result["pilot"]["verdict"] == record.verdict and "not_divergent" not in result
    assert result["n_items"] == 5 and all(c["n"] == 5 for c in result["cells"])
    assert commits(ws) == 5 * 4
    assert ws.ledger.verify() == []


def test_a_run_on_non_divergent_candidates_says_so_instead_of_skill(
    workspace: Workspace,
) -> None:
    ws = workspace
    planned = plan_agents(ws.settings, agents=(), references=("habit", "random"),
                          no_control=True)
    run_id, _, record = plan_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=5, samples=4, seed=11),
        # a filter that holds the random target's consistency against it (the default
        # exempts it: test_a_random_target_is_exempt_from_the_consistency_filter)
        pilot=PilotOptions(kinds=("arbitrary",), n_candidates=10, rule=mi.PilotFilter(min_items=5)),
    )
    # a random target agrees with itself by chance only: every candidate is inconsistent
    assert not record.divergent and record.verdict.startswith("not divergent:")
    assert "ref:random" in record.verdict
    assert list(ws.store.run_items(run_id)) == []
    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=100)
    assert ws.store.get_run(run_id).status == "complete"
    assert result["not_divergent"] == record.verdict
    assert commits(ws) == 0  # the predictions were not run
    for cell in result["cells"]:
        assert cell["skill"]["value"] is None and cell["skill"]["reason"] == record.verdict
    skill = agent_skill(stored_summary(ws.store, run_id, n_boot=100), "ref:habit").to_dict()
    assert skill["value"] is None and skill["status"] == "not_estimable"
    assert skill["reason"] == record.verdict
    assert ws.ledger.verify() == []


async def test_open_answers_are_clusters_and_failure_targets_are_not_asked(
    tmp_path: Path,
) -> None:
    items = mi.candidates(5, {"open": 2, "failure": 2})
    agents = {n: ReferenceAgent(n, "habit", seed=3) for n in ("a", "b")}
    asked: list[tuple[str, str]] = []
    real = matrix.ask

    async def spy(agent: Any, item: Item, *key: Any) -> Any:
        asked.append((agent.name, item.generator))
        return await real(agent, item, *key)

    failure = [it for it in items if mi.is_failure(it)]
    # b's real trials on the underlying questions: always right
    trials = {"b": {str(it.meta["source"]): [True, True] for it in failure}}
    led = open_ledger(tmp_path / "home", f"sqlite:///{tmp_path / 'l.db'}")
    matrix.ask = spy  # type: ignore[assignment]
    try:
        result = await run_matrix(
            agents, items, led, failure_trials=trials, options=MatrixOptions(samples=3, n_boot=50)
        )
    finally:
        matrix.ask = real  # type: ignore[assignment]
    assert "matrix.failure" not in {g for _, g in asked}  # the failure question is never put
    by_id = {row["id"]: row for row in result["items"]}
    for it in items:
        answers = by_id[it.id]["answers"]
        if mi.is_failure(it):
            assert answers["b"] == ["yes", "yes"]  # from its trials, not asked
            assert len(answers["a"]) == 3 and set(answers["a"]) <= {"yes", "no"}
        else:
            for given in answers.values():
                assert set(given) <= set(it.answer["choices"])  # cluster labels
    # b is asked its samples of the open items only (its own answers: every item)
    samples_of_b = [g for n, g in asked if n == "b"]
    assert samples_of_b.count("matrix.open") == 2 * (1 + 3)
    pi = prediction_item(failure[0], "a", "b", 3)
    assert pi.generator == "matrix.failure-prediction" and pi.answer["choices"] == ["yes", "no"]
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_conditions_each_commit_and_report_their_curve_and_contrast(
    workspace: Workspace,
) -> None:
    ws = workspace
    planned = plan_agents(ws.settings, agents=(), references=("habit", "projection"),
                          no_control=True)
    conditions = ["zero-shot", "observe:2", "observe:3", "simulate"]
    run_id, _ = create_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=10, samples=3, seed=11, conditions=conditions),
    )
    params = json.loads(ws.store.get_run(run_id).params_json)
    assert params["conditions"] == conditions and len(params["exposure"]) == 3
    stored = [it.id for it in ws.store.run_items(run_id)]
    main = [i for i in stored if i not in params["exposure"]]
    assert len(main) == 10 and not set(main) & set(params["exposure"])
    result = execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=100)
    assert ws.store.get_run(run_id).status == "complete"
    assert commits(ws) == 10 * 4 * len(conditions)
    assert result["n_items"] == 10 and result["condition"] == "zero-shot"
    assert set(result["by_condition"]) == set(conditions)
    assert all(c["n"] == 10 for e in result["by_condition"].values() for c in e["cells"])
    curve = result["learning_curve"]
    assert len(curve) == 4 and curve[0]["m"] == [0, 2, 3]
    # reference agents ignore what they are shown: no slope, no simulate effect
    assert all(row["log_score"]["value"] == pytest.approx(0.0) for row in curve)
    contrast = result["simulate_contrast"]
    assert all(row["top1_accuracy"]["value"] == pytest.approx(0.0) for row in contrast)
    stored = stored_summary(ws.store, run_id, n_boot=100).to_dict()
    assert stored["by_condition"] == result["by_condition"]
    # resuming a complete run asks nothing
    execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=100)
    assert commits(ws) == 10 * 4 * len(conditions)
    assert ws.ledger.verify() == []


def test_observe_prompts_show_past_answers_on_other_items_only() -> None:
    item, other, third = mi.candidates(2, {"arbitrary": 3})
    seen = [(other.id, other.prompt, str(other.answer["choices"][0])),
            (third.id, third.prompt, str(third.answer["choices"][1]))]
    plain = prediction_item(item, "p", "t", 10)
    shown = prediction_item(item, "p", "t", 10, "observe:1", seen)
    assert shown.prompt.startswith(plain.prompt) and other.prompt in shown.prompt
    assert third.prompt not in shown.prompt  # m = 1: one past answer
    assert shown.params["observed"] == [[other.id, seen[0][2]]]
    sim = prediction_item(item, "p", "t", 10, "simulate")
    assert sim.prompt.startswith("Simulate another AI model called t")
    assert len({plain.id, shown.id, sim.id}) == 3
    for bad in ("observe:0", "observe:x", "few-shot"):
        with pytest.raises(UserError, match="unknown matrix condition"):
            check_conditions([bad])
    assert check_conditions(["zero-shot", "observe:3", "zero-shot"]) == ["zero-shot", "observe:3"]


def test_cli_pilot_reports_not_divergent(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "matrix", "--reference", "habit",
         "--reference", "random", "--items", "3", "--samples", "3", "--kinds", "arbitrary",
         "--candidates", "2", "--seed", "11"],  # fewer candidates than items: too few kept
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "No skill reported: not divergent:" in r.stdout
    assert "pilot: not divergent:" in r.stderr


def test_a_random_target_is_exempt_from_the_consistency_filter(workspace: Workspace) -> None:
    ws = workspace
    planned = plan_agents(ws.settings, agents=(), references=("habit", "random"),
                          no_control=True)
    _, _, record = plan_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=5, samples=4, seed=11),
        pilot=PilotOptions(kinds=("arbitrary",), n_candidates=10),
    )
    assert record.filter.exempt == ("ref:random",)
    figures = record.candidates
    # the random target is as inconsistent as before; it no longer drops a candidate for it
    assert any((f.consistency["ref:random"] or 0.0) < record.filter.c_min for f in figures)
    assert not any("ref:random" in d.detail for f in figures for d in f.drops
                   if d.code == "inconsistent")
    assert record.n_kept > 0
    assert mi.PilotRecord.from_dict(record.to_dict()) == record


def test_failure_candidates_ask_about_the_suite_items_the_targets_ran(
    workspace: Workspace,
) -> None:
    from harness.daemon import DaemonContext
    from harness.matrix.trials import suite_trials, trials_of_all

    ws = workspace
    ctx = DaemonContext(ws.settings, ws.store)
    # a pinned seed: 4 in 40 seeds give `quick` no game item with a closed answer set
    planned = plan_agents(ws.settings, agents=(), references=("random",), no_control=True)
    suite_run, _, _ = create_run(
        ws.store, ws.settings, suite="quick", planned=planned, seed=11, held_out=True
    )
    ctx.execute(suite_run)
    ran = trials_of_all(ws.store, suite_run, ["ref:random"], suite_trials(ws.store, suite_run))
    assert len(ran) >= 4 and {it.family for it in ran} == {"nesttom", "games"}
    _, _, record = plan_matrix_run(
        ws.store,
        ws.settings,
        planned=ws.store.run_agents(suite_run),
        options=MatrixOptions(n_items=2, samples=3, seed=11, accompanies=suite_run),
        pilot=PilotOptions(kinds=("failure",), n_candidates=4),
    )
    # every candidate asks about an item the target ran (whichever four the seed drew)
    about_ran = {mi.failure_from(11, i, src).id for i in range(4) for src in ran}
    assert len(record.candidates) == 4
    assert all(f.kind == "failure" and f.id in about_ran for f in record.candidates)
    # each target's answers: its real trial, topped up to K = 3 by asking the question
    assert all(f.answers == {"ref:random": 3} for f in record.candidates)
    # a matrix without the suite run draws generated questions, as before
    _, _, alone = plan_matrix_run(
        ws.store,
        ws.settings,
        planned=ws.store.run_agents(suite_run),
        options=MatrixOptions(n_items=2, samples=3, seed=11),
        pilot=PilotOptions(kinds=("failure",), n_candidates=4),
    )
    assert not any(f.id in about_ran for f in alone.candidates)
    # run as matrix items, their observed answers are the target's real trials, not asked
    items = [mi.failure_from(11, i, src) for i, src in enumerate(ran[:2])]
    run_id, _ = create_matrix_run(
        ws.store, ws.settings, planned=ws.store.run_agents(suite_run), items=items,
        options=MatrixOptions(n_items=2, samples=3, seed=11, accompanies=suite_run),
    )
    execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=50)
    correct = suite_trials(ws.store, suite_run)["ref:random"]
    by_id = {it.id: it for it in items}
    targets = [t for t in ws.store.trials(run_id, "ref:random") if t.item_id in by_id]
    assert len(targets) == 2
    for t in targets:
        score = json.loads(t.score_json or "{}")
        flags = correct[by_id[t.item_id].meta["source"]]
        assert score["source"] == "trials"
        assert score["samples"] == ["yes" if c else "no" for c in flags]
    assert ws.ledger.verify() == []


def test_the_nightly_pilot_puts_not_divergent_in_the_profile(workspace: Workspace) -> None:
    from harness.daemon import DaemonContext
    from reports import build_profile
    from reports.present import headlines

    ws = workspace
    ctx = DaemonContext(ws.settings, ws.store, ws.ledger, matrix_items=3, matrix_samples=3,
                        matrix_pilot=True, matrix_kinds=("arbitrary",), matrix_candidates=2,
                        matrix_queue=False)
    suite_run = ctx.plan_run(suite="quick", references=["habit", "random"])
    ctx.execute(suite_run)
    matrix_run = ctx.run_matrix_beside(suite_run)
    assert matrix_run is not None and ws.store.get_run(matrix_run).held_out
    profile = build_profile(ws.store, suite_run, n_boot=100)
    doc = profile.to_json()
    skill = doc["agents"]["ref:habit"]["agent_prediction_skill"]
    assert skill["matrix_run"] == matrix_run and skill["value"] is None
    assert skill["reason"].startswith("not divergent:")
    words = {h.agent: h.skill for h in headlines(profile)}
    assert "not divergent" in words["ref:habit"]
    assert ws.ledger.verify() == []


@pytest.mark.parametrize(
    "args",
    [
        ["--conditions", "bogus", "--no-pilot"],
        ["--conditions", "observe:-3", "--no-pilot"],
        ["--conditions", "simulate", "--second-order", "--no-pilot"],
        ["--kinds", "telepathy"],
        ["--samples", "1"],
    ],
)
def test_bad_matrix_options_are_refused_before_anything_is_written(
    tmp_path: Path, args: list[str]
) -> None:
    """A matrix option it cannot take is a one-line error (exit 2), and the data directory
    stays empty: the options are checked before the database is opened."""
    home = tmp_path / "home"
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "matrix",
         "--reference", "habit", "--reference", "random", *args],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "MINDLEDGER_HOME": str(home)}, cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert not home.exists() or not any(home.iterdir())
