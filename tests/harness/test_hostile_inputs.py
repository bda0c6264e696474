"""Regression tests for the hostile inputs of issue 12, each through the real entry point: one
line naming what was wrong and exit 2 (CLI), or a 4xx JSON error (API); never a traceback, a
500, a partial write or a credential shown."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import run_main as cli

DEEP = "[" * 2000 + "]" * 2000
SURROGATE = '{"x": "\\ud800"}'
HUGE_INT = "1" * 5000


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nesttom", "answer", "{file}"], "nested too deeply"),
        (["games", "check", "{file}"], "nested too deeply"),
    ],
)
def test_deep_json_files_get_one_line(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    path = isolated_home / "deep.json"
    path.write_text(DEEP)
    code, _, err = cli(capsys, *[a.format(file=path) for a in args])
    assert code == 2 and needle in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (SURROGATE, "lone surrogate"),
        ('{"actions": [0, 1], "payoff": [[' + HUGE_INT + ", 1], [1, 1]], \"anchor\": 0}", "digits"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        ('{"a": NaN}', "NaN"),
        ('{"a": 1e999}', "out of range"),
    ],
)
def test_hostile_json_documents_get_one_line(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], body: str | bytes, needle: str
) -> None:
    path = isolated_home / "doc.json"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    for command in (["nesttom", "answer"], ["games", "check"]):
        code, _, err = cli(capsys, *command, str(path))
        assert code == 2 and needle in err and "Traceback" not in err, (command, err)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--distribution", DEEP),
        ("--distribution", '{"\\ud800": 1.0}'),
        ("--condition", DEEP),
        ("--condition", SURROGATE),
        ("--distribution", '{"a": ' + HUGE_INT + "}"),
    ],
)
def test_ledger_arguments_are_checked_before_anything_is_written(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    args = ["ledger", "commit", "--predictor", "p", "--target", "t", "--query", "q"]
    if option != "--distribution":
        args += ["--distribution", '{"a": 1.0}']
    code, _, err = cli(capsys, *args, option, value)
    assert code == 2 and option in err and "Traceback" not in err, err
    assert not (isolated_home / "mindledger.db").exists()


def test_verify_file_with_a_hostile_line_reports_it(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = isolated_home / "x.jsonl"
    export.write_text(DEEP + "\n" + SURROGATE + "\n")
    code, _, err = cli(
        capsys, "ledger", "verify", "--file", str(export), "--public-key", "00" * 32
    )
    assert code == 1 and "Traceback" not in err and "line 1" in err


def test_an_argument_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "nesttom", "answer", b"\xff.json"],
        capture_output=True, env=env, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and b"not valid UTF-8" in r.stderr and b"Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("setting", "value"),
    [("timeout", "nan"), ("timeout", "inf"), ("reveal_timeout", "1e300"), ("model_threads", "-4")],
)
def test_bad_numbers_on_the_command_line_write_nothing(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], setting: str, value: str
) -> None:
    code, _, err = cli(
        capsys, "-o", f"{setting}={value}", "run", "--suite", "quick", "--reference", "oracle"
    )
    assert code == 2 and f"{setting}: expected a number from" in err, err
    assert not (isolated_home / "mindledger.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--suite", "nope", "--reference", "oracle"],
        ["run", "--suite", "quick", "--reference", "oracle", "--seed", "7"],  # held out
        ["run", "--suite", "quick", "--reference", "oracle", "--seed", "-3"],
        ["run", "--suite", "quick", "--agent", "nobody"],
    ],
)
def test_run_rejects_bad_arguments_before_creating_the_database(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, _, err = cli(capsys, *args)
    assert code == 2, err
    assert not (isolated_home / "mindledger.db").exists()


def test_the_data_directory_and_database_are_private_whatever_the_umask(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = isolated_home / "fresh"
    os.environ["MINDLEDGER_HOME"] = str(home)
    old = os.umask(0o022)
    try:
        code, _, err = cli(
            capsys, "ledger", "commit", "--predictor", "p", "--target", "t", "--query", "q",
            "--distribution", '{"a": 1.0}',
        )  # fmt: skip
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("mindledger.db", "mindledger.db-wal", "keys/ledger-ed25519.pem"):
        path = home / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert stat.S_IMODE((home / "ledger-witness").stat().st_mode) == 0o700


def test_credentials_in_an_endpoint_never_reach_output_or_storage(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.testing import FakeOpenAI

    with FakeOpenAI() as fake:
        url = fake.base_url.replace("http://", "http://alice:hunter2@") + "?api_key=sk-secret1"
        (isolated_home.parent / "work" / "mindledger.toml").write_text(
            "max_failure_share = 1.0\n"  # the fake's "ok" is no answer; the run still counts
            f'[agents.bot]\nadapter = "openai"\nendpoint = "{url}"\nmodel = "m"\n'
            'control = "bot-control"\n'
            f'[agents.bot-control]\nadapter = "openai"\nendpoint = "{url}"\nmodel = "m"\n'
        )
        secrets = ("hunter2", "sk-secret1", "alice")
        for args in (["config", "show"], ["doctor"]):
            _, out, err = cli(capsys, *args)
            assert not any(s in out + err for s in secrets), args
        code, out, err = cli(capsys, "run", "--suite", "quick", "--agent", "bot", "--seed", "11")
        assert code == 0, err
        assert not any(s in out + err for s in secrets)
        assert fake.stats()["ok"] > 0  # the credentials were used, only never kept
        dump = subprocess.run(
            ["sqlite3", str(isolated_home / "mindledger.db"), ".dump"],
            capture_output=True, text=True, check=False,
        ).stdout  # fmt: skip
        if not dump:  # no sqlite3 program: read the tables through Python
            import sqlite3

            with sqlite3.connect(isolated_home / "mindledger.db") as db:
                dump = json.dumps(
                    [list(r) for t in ("agents", "run_agents", "trials", "runs")
                     for r in db.execute(f"SELECT * FROM {t}")]
                )  # fmt: skip
        assert dump and not any(s in dump for s in secrets)


def test_a_stored_spec_takes_its_credentials_from_the_settings_again(tmp_path: Path) -> None:
    from dataclasses import replace

    from harness.config.settings import AgentConfig, load_settings
    from harness.run.build import _endpoint, plan_agents
    from mindledger.errors import ConfigError

    url = "http://alice:hunter2@h:8000/v1?api_key=sk-1&v=2"
    settings = load_settings(None, env={}, flags={"home": str(tmp_path)}, cwd=tmp_path)
    settings = replace(
        settings, agents={"bot": AgentConfig("bot", endpoint=url, model="m")}
    )
    (planned,) = [p for p in plan_agents(settings, agents=("bot",), no_control=True)]
    assert planned.spec["endpoint"] == "http://h:8000/v1?v=2"
    assert _endpoint("bot", planned.spec, settings) == url
    moved = replace(settings, agents={"bot": AgentConfig("bot", endpoint="http://x/v1")})
    with pytest.raises(ConfigError, match="never stored"):
        _endpoint("bot", planned.spec, moved)


def test_story_mistakes_get_one_short_line(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = isolated_home / "s.json"
    base = {"agents": ["Ann", "Ben"], "objects": {"key": "drawer"}, "questions": []}
    story.write_text(json.dumps({**base, "events": [{"type": ["move"]}]}))
    code, _, err = cli(capsys, "nesttom", "answer", str(story))
    assert code == 2 and "events[0].type" in err and "Traceback" not in err
    many = [f"agent{i}" for i in range(100_000)]
    story.write_text(json.dumps({**base, "agents": many, "present": [*many, "ghost"],
                                 "events": []}))  # fmt: skip
    code, _, err = cli(capsys, "nesttom", "answer", str(story))
    assert code == 2 and "Traceback" not in err
    assert len(err) < 1000, len(err)
