"""The CLI through a real subprocess: help, config show layering, doctor, and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    full_env["MINDLEDGER_HOME"] = str(cwd / "home")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_help_lists_groups(tmp_path: Path) -> None:
    r = run(["--help"], tmp_path)
    assert r.returncode == 0
    for name in ("doctor", "config", "db"):
        assert name in r.stdout
    assert "Example" in run(["config", "--help"], tmp_path).stdout


def test_config_show_layers(tmp_path: Path) -> None:
    (tmp_path / "mindledger.toml").write_text("concurrency = 5\ntimeout = 3.0\n")
    show = lambda *a, env=None: json.loads(  # noqa: E731
        run([*a, "config", "show", "--format", "json"], tmp_path, env).stdout
    )
    assert show()["concurrency"] == 5
    assert show(env={"MINDLEDGER_CONCURRENCY": "6"})["concurrency"] == 6
    data = show("-o", "concurrency=7", env={"MINDLEDGER_CONCURRENCY": "6"})
    assert data["concurrency"] == 7 and data["_sources"]["concurrency"] == "flag"
    assert data["timeout"] == 3.0


@pytest.mark.parametrize(
    ("toml", "env", "args", "needle"),
    [
        ("concurrency = [", {}, [], "mindledger.toml"),
        ("wat = 1\n", {}, [], "wat: unknown key"),
        ("concurrency = 'x'\n", {}, [], "concurrency: expected an integer"),
        ("", {}, ["--db", "postgresql://u:pw@127.0.0.1:1/none"], "127.0.0.1:1"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, toml: str, env: dict[str, str], args: list[str], needle: str
) -> None:
    (tmp_path / "mindledger.toml").write_text(toml)
    r = run([*args, "db", "status"], tmp_path, env)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert needle in lines[0]
    assert "Traceback" not in r.stderr
    assert "pw" not in r.stderr.replace("pw@", "")  # password masked
    # nothing was written: no database file appeared in the home
    assert not (tmp_path / "home" / "mindledger.db").exists()


def test_doctor_reports_and_fails_on_dead_agent(tmp_path: Path) -> None:
    r = run(["doctor"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "python" in r.stdout and "database" in r.stdout and "embedded model" in r.stdout
    (tmp_path / "mindledger.toml").write_text(
        "[agents.dead]\nadapter = 'openai'\nendpoint = 'http://127.0.0.1:1/v1'\nmodel = 'm'\n"
    )
    r = run(["doctor"], tmp_path)
    assert r.returncode == 1
    assert "agent dead" in r.stdout and "does not answer" in r.stdout
