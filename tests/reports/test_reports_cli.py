"""``mindledger report``: formats, --out, --compare, and exit 2 for an unknown run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harness.cli.main import cli


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    return env


def test_unknown_run_exits_2_with_a_clear_message(stored_run: Any, tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "--db", stored_run.url, "report", "nope"],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2
    assert "no run with id 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "--db", stored_run.url, "report"],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2 and "missing RUN_ID" in r.stderr


def test_formats_and_out(stored_run: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MINDLEDGER_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    base = ["--db", stored_run.url, "report", stored_run.run_id, "--bootstrap", "200"]
    r = runner.invoke(cli, [*base, "--format", "json"])
    assert r.exit_code == 0, r.output
    prof = json.loads(r.output)
    assert prof["agents"]["not-reality"]["valid"] is False
    assert prof["intervals"]["bootstrap_replicates"] == 200
    out = tmp_path / "r.html"
    r = runner.invoke(cli, [*base, "--format", "html", "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert page.count("<figure id='fig-") == 4 and "data:image" not in page
    assert page.count('class="forest"') == 3  # piper − control and its two ablations
    md = tmp_path / "r.md"
    r = runner.invoke(cli, [*base, "--format", "md", "--out", str(md)])
    assert r.exit_code == 0, r.output
    assert "](r_files/depth_curves.svg)" in md.read_text()
    assert "](r_files/forest-piper-minus-control.svg)" in md.read_text()
    assert (tmp_path / "r_files" / "depth_curves.svg").read_text().startswith("<svg ")
    r = runner.invoke(cli, [*base, "--format", "csv"])
    assert r.exit_code == 0 and r.output.count("\n") == len(stored_run.run.trials) + 1


def test_compare_two_runs(stored_run: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MINDLEDGER_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    base = ["--db", stored_run.url, "report", "--bootstrap", "200"]
    r = runner.invoke(cli, [*base, "--compare", stored_run.run_id, stored_run.run_id])
    assert r.exit_code == 0, r.output
    assert f"# mindledger compare — `{stored_run.run_id}` → `{stored_run.run_id}`" in r.output
    r = runner.invoke(cli, [*base, "--compare", stored_run.run_id, stored_run.run_id,
                            "--format", "json"])
    cmp = json.loads(r.output)
    fb = cmp["agents"]["piper"]["metrics"]["false_belief_accuracy"]
    assert fb["difference"] == 0 and fb["ci"][0] < 0 < fb["ci"][1]
    r = runner.invoke(cli, [*base, "--compare", "a", "b", "--format", "html"])
    assert r.exit_code == 2
    r = runner.invoke(cli, [*base, stored_run.run_id, "--compare", "a", "b"])
    assert r.exit_code == 2
