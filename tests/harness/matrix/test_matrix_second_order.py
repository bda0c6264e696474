"""Second-order prediction (seed 002 §15.2 step 5, B9) and past-seat prediction (B8) in the
matrix, with reference agents only: the clairvoyant reproduces Q's committed prediction and
scores perfectly, random scores worse; every second-order commit precedes Q's commit, and its
observation (Q's committed top-1) follows Q's reveal, walked in the chain; a past seat is
reported beside the fresh copy with a paired contrast and its test."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.agent.agents import ReferenceAgent
from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import (
    MatrixOptions,
    create_matrix_run,
    execute_matrix_run,
    make_items,
    run_matrix,
    second_order_item,
    stored_summary,
)
from harness.run.build import plan_agents
from ledger import open_ledger
from mindledger.errors import ConfigError, UserError
from reports.matrix import SECOND_ORDER_PENALTY, distribution_scores
from reports.matrix_skill import AgentSkill
from reports.matrix_summary import agent_skill


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'home' / 'mindledger.db'}"


def cell(result: dict[str, Any], p: str, t: str) -> dict[str, Any]:
    return next(c for c in result["cells"] if c["predictor"] == p and c["target"] == t)


def so_cell(result: dict[str, Any], p: str, q: str, t: str) -> dict[str, Any]:
    return next(
        c for c in result["second_order"]["cells"]
        if (c["predictor"], c["about"], c["target"]) == (p, q, t)
    )


def test_distribution_scores_are_zero_only_at_the_committed_distribution() -> None:
    q = {"a": 0.5, "b": 0.3, "c": 0.2}
    exact = distribution_scores(q, q)
    assert exact["brier"] == 0.0 and exact["total_variation"] == 0.0
    assert exact["top1_match"] == 1.0
    assert math.isclose(exact["log_score"], sum(v * math.log(v) for v in q.values()))
    off = distribution_scores({"a": 0.2, "b": 0.3, "c": 0.5}, q)
    assert math.isclose(off["brier"], 0.3**2 + 0.3**2)
    assert math.isclose(off["total_variation"], 0.3)
    assert off["top1_match"] == 0.0 and off["log_score"] < exact["log_score"]
    # the expected Brier score against a draw from q exceeds q's own by exactly the divergence
    p = {"a": 0.1, "b": 0.6, "c": 0.3}

    def expected_brier(d: dict[str, float]) -> float:
        return sum(q[y] * sum((d[c] - (c == y)) ** 2 for c in q) for y in q)

    assert math.isclose(expected_brier(p) - expected_brier(q), distribution_scores(p, q)["brier"])


async def test_clairvoyant_reproduces_q_and_random_scores_worse(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {n: ReferenceAgent(n, n, seed=5) for n in ("clairvoyant", "random", "habit")}
    items = make_items(31, 12)
    result = await run_matrix(
        agents,
        items,
        led,
        options=MatrixOptions(samples=3, n_boot=300, stats_seed=1, second_order=True),
    )
    section = result["second_order"]
    assert section["per_item"] == len(section["cells"]) == 3 * 2 * 3
    for q in ("random", "habit"):
        for t in agents:
            seer = so_cell(result, "clairvoyant", q, t)
            assert seer["n"] == 12 and seer["unscored"] == seer["unparsed"] == 0
            assert seer["brier"]["value"] == pytest.approx(0.0, abs=1e-12)
            assert seer["total_variation"]["value"] == pytest.approx(0.0, abs=1e-12)
            assert seer["top1_match"]["value"] == 1.0
    # habit predicts another target uniformly; random predicts uniformly: against Q = habit
    # (non-uniform when Q predicts itself) random is worse, against Q = random it is exact too
    dice = so_cell(result, "random", "habit", "habit")
    assert dice["brier"]["value"] > 0.1 and dice["top1_match"]["value"] < 1.0
    assert dice["vs_uniform"]["value"] == pytest.approx(0.0, abs=1e-12)
    seer = so_cell(result, "clairvoyant", "habit", "habit")
    assert seer["vs_uniform"]["value"] == pytest.approx(dice["brier"]["value"])
    assert seer["vs_uniform"]["status"] == "estimated"
    assert seer["vs_uniform"]["p_holm"] < 0.05 and "sign-flip" in seer["vs_uniform"]["test"]
    assert so_cell(result, "random", "clairvoyant", "habit")["brier"]["value"] > 0.1
    assert so_cell(result, "random", "habit", "random")["brier"]["value"] == pytest.approx(0.0)
    # each predictor over all its (Q, T) cells, per item: the clairvoyant beats the uniform
    # distribution by the uniform's mean brier; random and habit predict uniformly (gain 0)
    pooled = section["by_predictor"]
    assert set(pooled) == set(agents) and pooled["clairvoyant"]["n_cells"] == 6
    uniform_brier = np.mean([
        so_cell(result, "clairvoyant", q, t)["vs_uniform"]["value"]
        for q in ("random", "habit") for t in agents
    ])
    assert pooled["clairvoyant"]["vs_uniform"]["value"] == pytest.approx(uniform_brier)
    assert pooled["clairvoyant"]["vs_uniform"]["ci"][0] > 0
    assert pooled["clairvoyant"]["vs_uniform"]["p_holm"] < 0.05
    for name in ("random", "habit"):
        assert pooled[name]["vs_uniform"]["value"] == pytest.approx(0.0, abs=1e-12)
    skill = agent_skill(result, "clairvoyant")
    assert isinstance(skill, AgentSkill)
    second = skill.second_order
    assert second.value == pooled["clairvoyant"]["vs_uniform"]["value"] and second.n == 12
    assert skill.to_dict()["second_order"]["n"] == 12
    # the CSV carries every second-order cell, with Q in `about` and no S
    import csv
    import io

    from reports.matrix_render import CSV_COLUMNS, render_matrix_csv

    rows = list(csv.DictReader(io.StringIO(render_matrix_csv(result))))
    assert tuple(rows[0]) == CSV_COLUMNS
    second_rows = [r for r in rows if r["condition"] == "second-order"]
    assert len(second_rows) == len(section["cells"])
    seen = next(r for r in second_rows if (r["predictor"], r["about"], r["target"]) == (
        "clairvoyant", "habit", "habit"))
    assert float(seen["vs_uniform_value"]) == pytest.approx(seer["vs_uniform"]["value"])
    assert float(seen["brier_value"]) == pytest.approx(0.0, abs=1e-12)
    assert seen["skill_value"] == "" and seen["skill_status"] == "not_estimable"
    assert float(seen["p_holm"]) == pytest.approx(seer["vs_uniform"]["p_holm"])
    assert all(r["about"] == "" for r in rows if r["condition"] != "second-order")
    # a second-order cell's failed predictions are in its predictor_errors column (it was
    # always written 0)
    failed = copy.deepcopy(result)
    first = failed["second_order"]["cells"][0]
    first["predictor_error"] = 2
    rows = list(csv.DictReader(io.StringIO(render_matrix_csv(failed))))
    counted = [r["predictor_errors"] for r in rows if r["condition"] == "second-order"]
    assert counted == ["2"] + ["0"] * (len(counted) - 1)
    no_second = agent_skill({k: v for k, v in result.items() if k != "second_order"}, "random")
    assert isinstance(no_second, AgentSkill)
    assert no_second.second_order.value is None
    assert "without second-order" in str(no_second.second_order.reason)
    assert no_second.to_dict()["second_order"] == {
        "value": None, "reason": no_second.second_order.reason}

    # the chain: each second-order commit comes before Q's first-order commit about T on that
    # item (so before Q's reveal), and its observation, Q's committed top-1, after Q's reveal
    assert led.verify() == []
    entries = led.entries()
    seq = {(e.kind, e.subject): e.seq for e in entries}
    first = {}
    for e in entries:
        if e.kind == "commit" and "order" not in e.payload["condition"]:
            first[e.payload["predictor"], e.payload["target"], e.payload["item"]] = e
    second = [e for e in entries if e.kind == "commit" and e.payload["condition"].get("order") == 2]
    assert len(second) == 18 * len(items)
    reveals = {e.subject: e for e in entries if e.kind == "reveal"}
    for e in second:
        q, t, iid = e.payload["target"], e.payload["condition"]["of"], e.payload["item"]
        q_commit = first[q, t, iid]
        assert e.seq < q_commit.seq
        q_reveal = reveals[q_commit.subject]
        (obs,) = [o for o in entries if o.kind == "observe" and o.subject == e.subject]
        assert q_reveal.seq < obs.seq < seq["reveal", e.subject]
        assert obs.payload["answer"] == q_reveal.payload["revealed"]["top1"]
        assert e.payload["query"] == second_order_item(
            next(it for it in items if it.id == iid), e.payload["predictor"], q, t, 3
        ).prompt
    led.close()
    led.engine.dispose()


async def test_second_order_needs_zero_shot(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {n: ReferenceAgent(n, n) for n in ("random", "habit")}
    with pytest.raises(UserError, match="zero-shot"):
        await run_matrix(
            agents,
            make_items(3, 2),
            led,
            options=MatrixOptions(samples=2, conditions=("simulate",), second_order=True),
        )
    led.close()
    led.engine.dispose()


async def test_a_past_seat_is_predicted_beside_a_fresh_copy(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {
        "seer": ReferenceAgent("seer", "clairvoyant", seed=7),
        "dusk": ReferenceAgent("dusk", "habit", seed=7),
        "piper": ReferenceAgent("piper", "habit", seed=7),
    }
    result = await run_matrix(
        agents,
        make_items(41, 40),
        led,
        past_seats=["dusk"],
        options=MatrixOptions(samples=8, n_boot=500, stats_seed=2),
    )
    section = result["past_seat"]
    assert section["seats"] == ["dusk"]
    rows = {r["predictor"]: r for r in section["rows"]}
    assert set(rows) == {"seer", "piper"}  # dusk does not contrast with itself
    seer = rows["seer"]
    # the clairvoyant predicts the past seat as well as it predicts a fresh copy of itself:
    # both relative accuracies (top-1 accuracy / ceiling) are ≈ 1, the resampling ideal
    assert seer["skill_past_seat"]["value"] == pytest.approx(1.0, abs=0.15)
    c = seer["contrast"]
    assert c["status"] == "estimated" and c["n"] == 40
    assert abs(c["value"]) < 0.15 and c["ci"][0] <= 0.0 <= c["ci"][1]
    assert c["p"] > 0.05 and "sign-flip" in c["test"]
    # S on a fresh copy is 0/0 in expectation (the own answer is a resample of the copy): its
    # contrast is reported beside, with its wide interval or the reason it has none
    assert seer["skill_fresh_copy"] == cell(result, "seer", "seer")["skill"]
    assert set(seer["skill_contrast"]) >= {"value", "ci", "test", "p", "p_holm", "status"}
    assert rows["piper"]["skill_contrast"]["reason"] == "no S for piper→piper"
    # a habit agent predicts itself exactly and everyone else uniformly: far worse on the seat
    piper = rows["piper"]["contrast"]
    assert piper["value"] < -0.3 and piper["ci"][1] < 0.0 and piper["p_holm"] < 0.05
    led.close()
    led.engine.dispose()


def _settings(tmp_path: Path, body: str) -> Any:
    path = tmp_path / "mindledger.toml"
    path.write_text(body)
    return load_settings(
        path, env={}, flags={"db_url": _db(tmp_path), "home": str(tmp_path / "home")}
    )


def test_past_seat_is_a_validated_setting(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, '[agents.dusk]\nadapter = "reference"\npolicy = "habit"\npast_seat = true\n'
    )
    assert settings.agents["dusk"].past_seat is True
    with pytest.raises(ConfigError, match="past_seat"):
        _settings(
            tmp_path, '[agents.dusk]\nadapter = "reference"\npolicy = "habit"\npast_seat = "yes"\n'
        )


def test_a_stored_run_keeps_its_second_order_and_past_seats(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, '[agents.dusk]\nadapter = "reference"\npolicy = "habit"\npast_seat = true\n'
    )
    ws = Workspace.open(settings)
    try:
        planned = plan_agents(settings, agents=("dusk",), references=("clairvoyant", "random"),
                              no_control=True)
        run_id, _ = create_matrix_run(
            ws.store,
            settings,
            planned=planned,
            options=MatrixOptions(n_items=3, samples=2, seed=13, second_order=True),
        )
        params = json.loads(ws.store.get_run(run_id).params_json)
        assert params["second_order"] is True and params["past_seats"] == ["dusk"]
        result = execute_matrix_run(ws.store, settings, ws.ledger, run_id, n_boot=100)
        assert ws.store.get_run(run_id).status == "complete"
        rows = [r for r in ws.store.trials(run_id) if json.loads(r.score_json)["role"]
                == "second_order"]
        assert len(rows) == 3 * 3 * 2 * 3  # items × P × Q ≠ P × T
        assert result["second_order"]["cells"] == stored_summary(
            ws.store, run_id, n_boot=100).to_dict()["second_order"]["cells"]
        assert [r["predictor"] for r in result["past_seat"]["rows"]] == [
            n for n in params["agents"] if n != "dusk"
        ]
        # nothing is missing, so resuming asks nothing and writes nothing to the ledger
        before = len(ws.ledger.entries())
        execute_matrix_run(ws.store, settings, ws.ledger, run_id, n_boot=100)
        assert len(ws.ledger.entries()) == before
        assert ws.ledger.verify() == []
    finally:
        ws.close()


def test_an_unparsed_second_order_prediction_gets_the_penalty() -> None:
    assert SECOND_ORDER_PENALTY["brier"] == max(
        distribution_scores({"a": 1.0}, {"b": 1.0})["brier"], 2.0
    )


def test_the_headline_shows_second_order_beside_s() -> None:
    from types import SimpleNamespace

    from reports.model import Skill
    from reports.present import _skill_text

    base = {"available": True, "value": 0.5, "ci": [0.2, 0.8], "n": 30, "status": "estimated",
            "interval": "hierarchical-bootstrap-95"}
    second = {"value": 0.041, "ci": [0.012, 0.07], "n": 30, "n_cells": 2}
    agent = SimpleNamespace(agent_prediction_skill=Skill.model_validate(
        {**base, "second_order": second}))
    assert _skill_text(agent, True) == (  # type: ignore[arg-type]
        "self 0.500 [0.200, 0.800] n=30 · 2nd-order +0.041 [+0.012, +0.070] vs uniform")
    assert _skill_text(agent, False) == "self 0.500 · 2nd-order +0.041"  # type: ignore[arg-type]
    # a matrix without second-order prediction: nothing is added
    plain = SimpleNamespace(agent_prediction_skill=Skill.model_validate(
        {**base, "second_order": {"value": None, "reason": "the matrix ran without it"}}))
    assert _skill_text(plain, True) == "self 0.500 [0.200, 0.800] n=30"  # type: ignore[arg-type]
