"""``mindledger games``: list, idr, check, generate, abc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.games_cmd import games
from mindledger.items import Item


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(games, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_list_names_the_papers_four() -> None:
    code, out, _ = invoke("list")
    assert code == 0
    for name in ("11-20", "all-pay", "nash-demand", "ring-11-20"):
        assert name in out
    code, out, _ = invoke("list", "--json")
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["11-20", "all-pay", "nash-demand", "ring-11-20"]
    assert [r["kmax"] for r in rows] == [10, 10, 10, 9]


def test_idr_prints_the_sequence_and_kmax() -> None:
    code, out, _ = invoke("idr", "ring-11-20")
    assert code == 0
    assert json.loads(out) == {"game": "ring-11-20",
                               "idr": [20, 17, 14, 11, 18, 15, 12, 19, 16, 13, 20], "kmax": 9}
    code, _, err = invoke("idr", "chess")
    assert code == 2 and "unknown game" in err


def test_check_a_spec_file(tmp_path: Path) -> None:
    spec = tmp_path / "rotation.json"
    spec.write_text(json.dumps({"actions": [3, 1, 2],
                                "payoff": [[0, 1, 0], [0, 0, 1], [1, 0, 0]], "anchor": 1}))
    code, out, _ = invoke("check", str(spec))
    assert code == 0
    data = json.loads(out)
    assert data["game"] == "rotation"
    # rows are own actions 3, 1, 2: br(1) = 3, br(3) = 2, br(2) = 1
    assert data["idr"][:4] == [1, 3, 2, 1] and data["kmax"] == 2
    assert data["distinguishable"] is False
    assert data["failure"]["kind"] == "returns_to_anchor"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"actions": [1, 2, 3], "payoff": [[1, 2, 3], [3, 2, 1]], "anchor": 1}, "not square"),
        ({"actions": [1, 2], "payoff": [[1, 2], [3, 4]], "anchor": 9}, "anchor"),
        ({"actions": [1, 2], "payoff": [[1, "a"], [3, 4]], "anchor": 1}, "payoff[0][1]"),
    ],
)
def test_check_rejects_bad_specs_with_exit_2(tmp_path: Path, content: object,
                                             needle: str) -> None:
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps(content))
    code, _, err = invoke("check", str(spec))
    assert code == 2 and needle in err and "bad.json" in err


def test_check_rejects_invalid_json_and_missing_files(tmp_path: Path) -> None:
    spec = tmp_path / "broken.json"
    spec.write_text("{not json")
    code, _, err = invoke("check", str(spec))
    assert code == 2 and "not valid JSON" in err
    code, _, err = invoke("check", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_generate_writes_json_lines(tmp_path: Path) -> None:
    code, out, _ = invoke("generate", "--seed", "4", "--n", "6", "--game", "all-pay",
                          "--condition", "inductive", "--lambda", "3")
    assert code == 0
    items = [Item.from_dict(json.loads(line)) for line in out.splitlines()]
    assert len(items) == 6
    assert {(i.meta["game"], i.meta["condition"], i.meta["lambda"]) for i in items} == {
        ("all-pay", "inductive", 3)}
    target = tmp_path / "items.jsonl"
    code, _, _ = invoke("generate", "--seed", "4", "--n", "6", "--game", "all-pay",
                        "--condition", "inductive", "--lambda", "3", "--out", str(target))
    assert code == 0 and target.read_text() == out
    code, out, _ = invoke("generate", "--seed", "4", "--n", "2", "--variants")
    assert all(json.loads(line)["meta"]["variant"] for line in out.splitlines())


def test_abc_writes_json_lines() -> None:
    code, out, _ = invoke("abc", "--seed", "1", "--n", "2", "--kind", "guessing")
    assert code == 0
    questions = [json.loads(line)["meta"]["question"] for line in out.splitlines()]
    assert questions == ["A", "B", "C", "K"] * 2


def test_exit_code_through_the_real_entry_point(tmp_path: Path) -> None:
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"actions": [1, 2], "payoff": [[1, 2], [3, 4]], "anchor": 9}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    r = subprocess.run([sys.executable, "-m", "harness.cli.main", "games", "check", str(spec)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "anchor" in r.stderr
    r = subprocess.run([sys.executable, "-m", "harness.cli.main", "games", "idr", "11-20"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0
    assert json.loads(r.stdout)["idr"] == [70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50]
