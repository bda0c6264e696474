"""``mindledger nesttom``: answer, generate, import-hitom, and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from mindledger.items import Item

STORY: dict[str, Any] = {
    "agents": ["Ann", "Ben", "Cal"],
    "objects": {"key": "drawer"},
    "present": ["Ann", "Ben", "Cal"],
    "events": [
        {"type": "leave", "agent": "Cal"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": ["Cal"]},
        {"type": "enter", "agent": "Cal"},
        {
            "type": "tell",
            "from": "Ann",
            "to": "Ben",
            "object": "key",
            "claimed": "box",
            "received": "box",
        },
    ],
    "questions": [{"chain": ["Ann", "Cal"], "object": "key"}, {"chain": [], "object": "key"}],
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "story.json"
    path.write_text(json.dumps(STORY))
    code, out, _ = run(["nesttom", "answer", str(path)], capsys)
    assert code == 0
    assert json.loads(out) == [
        {"chain": ["Ann", "Cal"], "object": "key", "answer": "drawer"},
        {"chain": [], "object": "key", "answer": "safe"},
    ]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            lambda s: s["events"][1].update(hidden=["Ben"]),
            "events[1].hidden[0]: hidden watcher Ben is present",
        ),
        (
            lambda s: s["events"][1].update(agent="Cal"),
            "events[1].agent: Cal moves the key but is not present",
        ),
        (
            lambda s: s["questions"][0].update(chain=["Ann", "Ann"]),
            "questions[0].chain: the chain names",
        ),
        (lambda s: s["events"][3].pop("object"), "events[3]: missing field 'object'"),
        (lambda s: s["events"][0].update(agent="Zed"), "events[0].agent: unknown agent 'Zed'"),
    ],
)
def test_answer_rejects_bad_stories_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, needle: str
) -> None:
    story = json.loads(json.dumps(STORY))
    edit(story)
    path = tmp_path / "story.json"
    path.write_text(json.dumps(story))
    code, out, err = run(["nesttom", "answer", str(path)], capsys)
    assert code == 2 and out == ""
    assert needle in err and str(path) in err


def test_answer_bad_json_and_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "story.json"
    path.write_text('{"agents": [')
    code, _, err = run(["nesttom", "answer", str(path)], capsys)
    assert code == 2 and "not valid JSON" in err
    code, _, err = run(["nesttom", "answer", str(tmp_path / "none.json")], capsys)
    assert code == 2 and "cannot read" in err


def test_generate_writes_deterministic_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "nesttom",
        "generate",
        "--seed",
        "5",
        "--n",
        "6",
        "--depth",
        "R2,R3-loop",
        "--form",
        "log",
        "--length",
        "6",
    ]
    code, first, _ = run(args, capsys)
    assert code == 0
    _, second, _ = run(args, capsys)
    assert first == second
    items = [Item.from_dict(json.loads(line)) for line in first.splitlines()]
    assert len(items) == 6
    assert {i.meta["depth"] for i in items} == {"R2", "R3-loop"}
    assert {i.meta["form"] for i in items} == {"log"} and {i.meta["length"] for i in items} == {6}


def test_generate_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["nesttom", "generate", "--seed", "1", "--n", "1", "--depth", "R9"], capsys)
    assert code == 2 and "R9" in err
    code, _, err = run(["nesttom", "generate", "--seed", "1"], capsys)
    assert code == 2 and "--n" in err
    code, _, err = run(
        [
            "nesttom",
            "generate",
            "--seed",
            "1",
            "--n",
            "1",
            "--depth",
            "R3-loop",
            "--mechanism",
            "absence",
        ],
        capsys,
    )
    assert code == 2 and "feasible" in err


def test_generate_suite_to_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b4.jsonl"
    code, stdout, err = run(
        ["nesttom", "generate", "--seed", "3", "--suite", "b4", "--out", str(out)], capsys
    )
    assert code == 0 and stdout == "" and "wrote 150 items" in err
    assert len(out.read_text().splitlines()) == 150


def test_import_hitom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "data": [
            {
                "prompting_type": "VP",
                "deception": False,
                "story_length": 1,
                "question_order": 1,
                "sample_id": 1,
                "story": "1 Ann and Ben entered the hall.\n2 The key is in the red_box.\n3 Ben exited the hall.\n"
                "4 Ann moved the key to the blue_tin.\n5 Ann exited the hall.\n",
                "question": "Where does Ben really think the key is?",
                "choices": "A. red_box, B. blue_tin",
                "answer": "red_box",
            }
        ]
    }
    path = tmp_path / "hitom.json"
    path.write_text(json.dumps(data))
    code, out, err = run(["nesttom", "import-hitom", str(path)], capsys)
    assert code == 0
    (line,) = out.splitlines()
    assert Item.from_dict(json.loads(line)).truth["agrees"] is True  # Ben left before the move
    assert json.loads(err)["disagreements"] == 0


def test_through_the_installed_command(tmp_path: Path) -> None:
    path = tmp_path / "story.json"
    path.write_text(json.dumps(STORY))
    exe = Path(sys.executable).with_name("mindledger")
    r = subprocess.run(
        [str(exe), "nesttom", "answer", str(path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and json.loads(r.stdout)[0]["answer"] == "drawer"
