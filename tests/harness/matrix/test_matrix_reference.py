"""The matrix diagnoses its reference predictors: on scripted ``habit`` targets, whose answer
distributions are known, the clairvoyant scores S ≈ 1, projection S ≈ 0 and random S ≤ 0, and
every interval covers the true S, computed from the known distributions (exact
expectations over the target's K samples, the population's mode by a large simulation:
:mod:`harness.testing.matrix_truth`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.agent.agents import ReferenceAgent
from harness.matrix.runs import MatrixOptions, make_items, run_matrix
from harness.testing import matrix_truth
from ledger import open_ledger
from mindledger.errors import UserError
from mindledger.items import Item

N_ITEMS = 200
"""Enough items for projection's and random's bands to hold in most runs (at 50 they hold in
82% and 28%: ``bench/bench_matrix_calibration.py``); this seed is one run."""
K = 8


def true_skill(
    items: list[Item], agents: dict[str, ReferenceAgent], predictor: str, target: str
) -> float:
    return matrix_truth.true_skill(items, agents, predictor, target, samples=K)


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'home' / 'mindledger.db'}"


def cell(result: dict[str, Any], p: str, t: str) -> dict[str, Any]:
    return next(c for c in result["cells"] if c["predictor"] == p and c["target"] == t)


async def test_reference_predictors_are_diagnosed(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {
        n: ReferenceAgent(n, policy, seed=5)
        for n, policy in (
            ("habit", "habit"),
            ("seer", "clairvoyant"),
            ("mirror", "projection"),
            ("dice", "random"),
        )
    }
    items = make_items(21, N_ITEMS)
    result = await run_matrix(
        agents, items, led, options=MatrixOptions(samples=K, n_boot=1000, stats_seed=3)
    )
    skills = {}
    for p in ("seer", "mirror", "dice"):
        s = cell(result, p, "habit")["skill"]
        truth = true_skill(items, agents, p, "habit")
        skills[p] = (s["value"], s["ci"], truth)
        assert s["status"] == "estimated" and s["interval"] == "hierarchical-bootstrap-95"
        lo, hi = s["ci"]
        assert lo <= s["value"] <= hi
        assert lo <= truth <= hi, (p, s, truth)
    seer, mirror, dice = skills["seer"], skills["mirror"], skills["dice"]
    # S = 1 is "the target predicting itself by resampling", which is what the clairvoyant does;
    # its estimate scatters about a truth near 1 (above as often as below).
    assert abs(seer[2] - 1.0) < 0.05
    assert 0.9 <= seer[0] <= 1.1
    assert seer[1][0] > 0.5 and cell(result, "seer", "habit")["skill"]["p_holm"] < 0.05
    assert abs(mirror[0]) <= 0.1 and abs(mirror[2]) <= 0.1
    assert dice[0] <= 0.0 and dice[1][1] <= 0.1 and dice[2] < 0
    # the base the projection predictor is measured against is its own answer or the population
    assert cell(result, "mirror", "habit")["skill"]["base_kind"] in (
        "population", "projection", "population = projection")
    # the clairvoyant's distribution is exact: the best log score and Brier in the column
    col = [cell(result, p, "habit") for p in agents]
    assert max(c["log_score"]["value"] for c in col) == cell(result, "seer", "habit")[
        "log_score"]["value"]
    assert min(c["brier"]["value"] for c in col) == cell(result, "seer", "habit")["brier"]["value"]
    # habit predicts itself exactly and others uniformly: a real self-advantage, found
    adv = result["self_advantage"]["habit"]["log_score"]
    assert adv["value"] > 0 and adv["ci"][0] > 0 and adv["p_holm"] < 0.05
    assert "sign-flip" in adv["test"]
    # every prediction about a target on an item is committed before the first observation of
    # that target's answers on it (walking the chain)
    entries = led.entries()
    about = {e.subject: (e.payload["target"], e.payload["item"]) for e in entries
             if e.kind == "commit"}
    assert len(about) == len(agents) ** 2 * N_ITEMS
    last_commit: dict[tuple[str, str], int] = {}
    first_observe: dict[tuple[str, str], int] = {}
    for e in entries:
        if e.kind == "commit":
            key = about[e.subject]
            last_commit[key] = max(last_commit.get(key, -1), e.seq)
        elif e.kind == "observe":
            key = about[e.subject]
            first_observe.setdefault(key, e.seq)
    assert set(first_observe) == set(last_commit)
    assert all(last_commit[k] < first_observe[k] for k in last_commit)
    assert led.verify() == []
    led.close()
    led.engine.dispose()


async def test_a_clairvoyant_needs_reference_targets(tmp_path: Path) -> None:
    from harness.adapters import OpenAIBackend, OpenAIChat
    from harness.agent.agents import ChatAgent

    led = open_ledger(tmp_path / "home", _db(tmp_path))
    chat = ChatAgent("chat", OpenAIBackend(OpenAIChat("http://127.0.0.1:1/v1", "m")))
    with pytest.raises(UserError, match="known only for reference agents"):
        await run_matrix({"seer": ReferenceAgent("seer", "clairvoyant"), "chat": chat},
                         make_items(1, 1), led)
    await chat.aclose()
    led.close()
    led.engine.dispose()


async def test_skill_by_depth_splits_the_cells_by_the_items_belief_depth(tmp_path: Path) -> None:
    import matrix as matrix_items

    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {n: ReferenceAgent(n, policy, seed=5) for n, policy in (
        ("habit", "habit"), ("mirror", "projection"), ("dice", "random"))}
    items = matrix_items.candidates(7, {"nesttom": 16, "arbitrary": 4})
    result = await run_matrix(
        agents, items, led, options=MatrixOptions(samples=3, n_boot=200, stats_seed=1)
    )
    by_depth = result["by_depth"]
    labels = [d["depth"] for d in by_depth]
    assert labels == sorted(labels, key=lambda x: (int(x[1]), x)) and "R2-self" in labels
    depth_of = {it.id: it.meta.get("depth") for it in items}
    assert sum(d["n_items"] for d in by_depth) == sum(v is not None for v in depth_of.values())
    for p in agents:
        for t in agents:
            whole = cell(result, p, t)
            parts = [next(c for c in d["cells"] if c["predictor"] == p and c["target"] == t)
                     for d in by_depth]
            # the arbitrary items have no depth: the depths' cells cover the NestToM items only
            assert sum(c["n"] for c in parts) == whole["n"] - 4
            assert all("value" in c["skill"] and "status" in c["skill"] for c in parts)
    # every format carries them: CSV rows with their depth, a table in the HTML page
    import csv
    import io

    from reports.matrix_render import render_matrix_csv, render_matrix_html

    rows = list(csv.DictReader(io.StringIO(render_matrix_csv(result))))
    assert [r["depth"] for r in rows[: len(agents) ** 2]] == [""] * len(agents) ** 2
    deep = [r for r in rows if r["depth"]]
    assert len(deep) == len(by_depth) * len(agents) ** 2
    assert {r["depth"] for r in deep} == set(labels)
    assert "Skill S by belief depth" in render_matrix_html(result, figures=False)
    led.close()
    led.engine.dispose()


async def test_the_summary_does_not_depend_on_its_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each cell's and target's bootstrap has its own seeded generator: computing them in
    parallel gives the very same figures as one after the other."""
    import json

    import reports.matrix_summary as summary

    agents = {n: ReferenceAgent(n, policy, seed=5) for n, policy in (
        ("habit", "habit"), ("mirror", "projection"), ("dice", "random"))}
    items = make_items(4, 30)
    results = []
    for threads in (1, 4):
        monkeypatch.setattr(summary, "STATS_THREADS", threads)
        led = open_ledger(tmp_path / f"home{threads}", f"sqlite:///{tmp_path / f'{threads}.db'}")
        results.append(
            await run_matrix(
                agents, items, led, options=MatrixOptions(samples=4, n_boot=300, stats_seed=2)
            )
        )
        led.close()
        led.engine.dispose()
    one, many = (json.dumps(r, sort_keys=True, default=str) for r in results)
    assert one == many
    assert any(c["skill"]["ci"] for c in results[0]["cells"])  # intervals were computed


@pytest.mark.parametrize("seed", [4, 11, 12])
async def test_every_self_cell_keeps_its_scale(tmp_path: Path, seed: int) -> None:
    """Issue 24: a self cell of reference agents read S = 4.11 [3.32, 11.35] (habit → habit),
    and on these seeds 10.0, 4.0, 3.33, 10.0 and 1.99 before. A fresh copy's own answer is one
    more sample of itself, so the projection baseline and the ceiling coincide in expectation:
    every self cell's S is now not estimable with that reason (or, were it given, within
    [−1, 1.5]), and so is the self-advantage in S."""
    from reports.matrix import SELF_PROJECTION

    led = open_ledger(tmp_path / "home", _db(tmp_path))
    agents = {f"ref:{p}": ReferenceAgent(f"ref:{p}", p, seed=seed)
              for p in ("habit", "projection", "clairvoyant", "random")}
    result = await run_matrix(
        agents, make_items(seed, 20), led, options=MatrixOptions(samples=10, n_boot=200)
    )
    for name in agents:
        s = cell(result, name, name)["skill"]
        assert s["value"] is None or -1.0 <= s["value"] <= 1.5, (name, s)
        assert s["status"] == "not_estimable" and s["reason"] == SELF_PROJECTION, (name, s)
        assert s["p"] is None and s["p_holm"] is None
        adv = result["self_advantage"][name]["skill"]
        assert adv["value"] is None and adv["ci"] is None and adv["reason"] == SELF_PROJECTION
        # self-prediction is still measured, in top-1 and log score
        assert result["self_advantage"][name]["log_score"]["value"] is not None
    # the clairvoyant still predicts the habit target at S ≈ 1, with an interval
    seer = cell(result, "ref:clairvoyant", "ref:habit")["skill"]
    assert seer["status"] == "estimated" and seer["ci"][0] > 0.2
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_the_readmes_matrix_example_reports_skill(tmp_path: Path) -> None:
    """Issue 24: the README's matrix example ended "not divergent" and showed nothing. Its
    command, as written in the README, reports a numeric S with an interval (the clairvoyant
    predicting the habit), and the self cells say why they have none."""
    import json
    import os
    import re
    import shlex
    import subprocess
    import sys

    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The prediction matrix", 1)[1]
    block = re.search(r"```sh\n(.*?)\n```", section, re.DOTALL)
    assert block is not None
    words = shlex.split(block.group(1))
    assert words[:2] == ["mindledger", "matrix"], words
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env.update(MINDLEDGER_HOME=str(tmp_path / "home"), COLUMNS="200")

    def cli(*args: str) -> str:
        r = subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    table = cli(*words[1:])
    assert "not divergent" not in table
    row = re.search(r"ref:clairvoyant → ref:habit\s*│\s*\d+\s*│[^│]*│[^│]*│[^│]*│\s*"
                    r"(-?\d+\.\d+) \[(-?\d+\.\d+), (-?\d+\.\d+)\]", table)
    assert row is not None, table
    value, lo, hi = (float(x) for x in row.groups())
    assert lo <= value <= hi and lo > 0
    out = json.loads(cli("report", "latest", "--format", "json"))
    estimated = [c for c in out["cells"] if c["skill"]["status"] == "estimated"]
    assert estimated and all(not c["self"] for c in estimated)
    assert all(c["skill"]["value"] is None for c in out["cells"] if c["self"])
