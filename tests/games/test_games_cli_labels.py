"""`mindledger games check` with named (string) actions: numbered by position, mapped back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def check(tmp_path: Path, spec: dict) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(spec))
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "games", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rock_paper_scissors_cycles_through_names(tmp_path: Path) -> None:
    # row = own action, column = opponent's: paper beats rock, scissors beat paper, rock beats
    # scissors. br(rock) = paper, br(paper) = scissors, br(scissors) = rock.
    r = check(
        tmp_path,
        {
            "actions": ["rock", "paper", "scissors"],
            "payoff": [[0, -1, 1], [1, 0, -1], [-1, 1, 0]],
            "anchor": "rock",
        },
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["idr"][:4] == ["rock", "paper", "scissors", "rock"]
    assert out["kmax"] == 2 and out["failure"]["action"] == "rock"


def test_ties_go_to_the_action_listed_first(tmp_path: Path) -> None:
    # against b, both z and y pay 1: the one listed first (z) is chosen
    r = check(
        tmp_path,
        {"actions": ["b", "z", "y"], "payoff": [[0, 0, 0], [1, 0, 0], [1, 0, 0]], "anchor": "b"},
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["idr"][1] == "z"


def test_named_anchor_outside_the_actions_exits_2(tmp_path: Path) -> None:
    r = check(tmp_path, {"actions": ["a", "b"], "payoff": [[1, 0], [0, 1]], "anchor": "c"})
    assert r.returncode == 2 and "anchor" in r.stderr
