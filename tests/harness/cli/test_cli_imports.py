"""Each command imports only what it uses (issue 23, "fast where users live"): checked in a fresh
interpreter per command, by the modules loaded when it exits. ``bench/bench_cli_latency.py``
measures the time; this checks the part that is deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# a command in a fresh interpreter; at exit, the top-level packages it loaded, on stderr
PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write(
    "\\nLOADED " + json.dumps(sorted({m.partition(".")[0] for m in sys.modules})) + "\\n"))
"""
COMMAND = "from harness.cli.main import main\nmain(sys.argv[1:])"

STATS = {"scipy", "statsmodels", "pandas"}
DATABASE = {"sqlalchemy", "sqlmodel", "alembic"}
HEAVY = STATS | DATABASE | {"numpy", "textual", "matplotlib", "httpx"}


def loaded(home: Path, body: str, *args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(home)
    r = subprocess.run(
        [sys.executable, "-c", PROBE + body, *args],
        cwd=home, env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    line = r.stderr.rstrip().rsplit("\n", 1)[-1]
    assert line.startswith("LOADED "), r.stderr
    return set(json.loads(line.removeprefix("LOADED ")))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding one quick run of two reference agents (a few seconds)."""
    home = tmp_path_factory.mktemp("home")
    loaded(home, COMMAND, "run", "--suite", "quick", "--reference", "oracle",
           "--reference", "random", "--no-control", "--seed", "1528201528")
    return home


@pytest.mark.parametrize(
    ("body", "args"),
    [("import harness.cli.main", []), (COMMAND, ["--version"]), (COMMAND, ["--help"])],
    ids=["import", "--version", "--help"],
)
def test_starting_the_command_line_loads_nothing_heavy(
    tmp_path: Path, body: str, args: list[str]
) -> None:
    assert loaded(tmp_path, body, *args) & HEAVY == set()


def test_the_public_packages_load_their_modules_on_first_use(tmp_path: Path) -> None:
    assert loaded(tmp_path, "import ledger, reports, mindledger") & HEAVY == set()
    assert loaded(tmp_path, "import reports.trials") & (STATS | {"numpy"}) == set()
    assert "sqlalchemy" in loaded(tmp_path, "from ledger import Store")


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (["config", "show"], STATS | {"numpy", "sqlmodel", "alembic", "textual", "httpx"}),
        (["runs"], STATS | DATABASE | {"numpy", "textual", "matplotlib", "httpx"}),
        (["trials", "latest"], STATS | {"alembic", "textual", "matplotlib", "httpx"}),
        (["report", "latest", "--format", "json"], STATS | {"alembic", "matplotlib"}),
        (["report", "latest", "--format", "md"], STATS | {"alembic", "matplotlib"}),
        (["report", "latest", "--format", "html"], STATS | {"alembic", "matplotlib"}),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_commands_load_what_they_use(home: Path, args: list[str], absent: set[str]) -> None:
    """A quick run's report needs neither statsmodels nor scipy: its figures come from
    reports._glm and scipy's own quantiles (tests/reports/test_glm.py); nor matplotlib: the
    HTML report's figures are SVG written directly (reports._svg)."""
    assert loaded(home, COMMAND, *args) & absent == set()
