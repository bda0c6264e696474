"""``mindledger report --compare A B`` over two real stored runs (issue 24, item 5): worded as
the profile words its figures (titles, intervals, ``valid → invalid``, ``not measured (why)``),
never as raw keys or Python booleans, while the JSON keeps its keys for scripts.

The same scripted agent ``bot`` runs the ``quick`` suite twice: as ``oracle`` (valid, plays
the games) and then as ``not-reality`` (fails the true-belief controls, so invalid, and
answers no game item, so its games accuracy is not measured)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import run_main

RAW_KEY = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9_.]+")
BOOLEAN = re.compile(r"\b(True|False|None)\b")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.config.settings import load_settings
    from harness.config.workspace import Workspace
    from harness.run.build import plan_agents
    from harness.run.runs import create_run, execute_stored_run

    home = tmp_path_factory.mktemp("compare")
    for run_id, policy in (("before", "oracle"), ("after", "not-reality")):
        (home / "mindledger.toml").write_text(
            f'[agents.bot]\nadapter = "reference"\npolicy = "{policy}"\n', encoding="utf-8"
        )
        settings = load_settings(home / "mindledger.toml", env={}, flags={"home": str(home)})
        with Workspace.open(settings) as ws:
            planned = plan_agents(settings, agents=("bot",))
            create_run(ws.store, settings, suite="quick", planned=planned, seed=2, run_id=run_id)
            asyncio.run(execute_stored_run(ws.store, settings, run_id))
    return home


@pytest.fixture
def home(stored: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for key in list(os.environ):
        if key.startswith("MINDLEDGER_") and key != "MINDLEDGER_TEST_PG_URL":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MINDLEDGER_HOME", str(stored))
    monkeypatch.chdir(stored)
    yield stored


def _compare(capsys: pytest.CaptureFixture[str], fmt: str) -> str:
    code, out, err = run_main(
        capsys, "report", "--compare", "before", "after", "--format", fmt, "--bootstrap", "200"
    )
    assert code == 0, err
    return out


def _row(md: str, title: str) -> list[str]:
    line = next(line for line in md.splitlines() if line.startswith(f"| {title} |"))
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_markdown_has_no_raw_key_and_no_python_value(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = _compare(capsys, "md")
    assert RAW_KEY.findall(md) == []
    assert BOOLEAN.findall(md) == []
    assert "> **Validity: valid → invalid.** run B: INVALID: bot's true-belief control" in md
    assert "Changed: policy: oracle → not-reality." in md
    assert "| figure | run A | run B | change B − A [95%] | verdict | p (Holm) |" in md
    # a figure one run measured and the other did not: the other side says why
    assert _row(md, "level-k games accuracy") == [
        "level-k games accuracy",
        "100.0% n=4 (no interval: n < 10)",
        "not measured (no game items answered in this run)",
        "—",
        "not compared (not measured in run B)",
        "—",
    ]
    # the invalid run's false-belief figures are marked, and their change is not counted
    fb = _row(md, "false-belief accuracy")
    assert fb[1] == "100.0% n=7 (no interval: n < 10)"
    assert fb[2].startswith("INVALID (not counted: ")
    assert fb[3] == "-85.7 pts (no interval: n < 10)"
    assert fb[4] == "not counted (invalid in run B)"
    assert _row(md, "true-belief control accuracy")[3:5] == [
        "-100.0 pts (no interval: n < 10)",
        "not estimable",
    ]
    assert _row(md, "accuracy at depth R1 (false belief)")[4] == "not counted (invalid in run B)"
    assert _row(md, "D50 (levels)")[4] == (
        "not compared (no point estimate in run A; not estimable in run B)"
    )


def test_json_keeps_its_keys_and_adds_the_words(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cmp = json.loads(_compare(capsys, "json"))
    bot = cmp["agents"]["bot"]
    assert bot["valid"] == [True, False] and bot["spec_changes"] == {
        "policy": ["oracle", "not-reality"]
    }
    assert bot["validity"]["text"] == "valid → invalid"
    fb = bot["metrics"]["false_belief_accuracy"]
    assert {"a", "b", "difference", "ci", "n_a", "n_b", "p", "p_holm", "status", "reason"} <= set(
        fb
    )
    assert (fb["a"], fb["n_a"], fb["title"], fb["unit"]) == (1.0, 7, "false-belief accuracy", "%")
    games = bot["metrics"]["games_accuracy"]
    assert (games["a"], games["b"], games["difference"]) == (1.0, None, None)
    assert games["reason"] == "not measured in run b"
    assert bot["metrics"]["accuracy_by_depth.false.R1"]["title"] == (
        "accuracy at depth R1 (false belief)"
    )
