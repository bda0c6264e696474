"""Settings: defaults → TOML → environment → flags, and clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.settings import load_settings
from mindledger.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_layers_override_in_order(tmp_path: Path) -> None:
    cfg = write(tmp_path / "mindledger.toml", "concurrency = 7\ntimeout = 9.5\n")
    s = load_settings(cfg, env={})
    assert s.concurrency == 7 and s.sources["concurrency"] == str(cfg)
    s = load_settings(cfg, env={"MINDLEDGER_CONCURRENCY": "11"})
    assert s.concurrency == 11 and s.sources["concurrency"] == "$MINDLEDGER_CONCURRENCY"
    assert s.timeout == 9.5
    s = load_settings(cfg, env={"MINDLEDGER_CONCURRENCY": "11"}, flags={"concurrency": "13"})
    assert s.concurrency == 13 and s.sources["concurrency"] == "flag"
    assert load_settings(None, env={}, cwd=tmp_path / "nowhere").concurrency == 64


def test_file_found_in_cwd_then_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write(home / "mindledger.toml", "max_retries = 2\n")
    env = {"MINDLEDGER_HOME": str(home)}
    import os

    old = os.environ.get("MINDLEDGER_HOME")
    os.environ["MINDLEDGER_HOME"] = str(home)
    try:
        assert load_settings(None, env=env, cwd=tmp_path).max_retries == 2
        write(tmp_path / "mindledger.toml", "max_retries = 3\n")
        assert load_settings(None, env=env, cwd=tmp_path).max_retries == 3
    finally:
        if old is None:
            del os.environ["MINDLEDGER_HOME"]
        else:
            os.environ["MINDLEDGER_HOME"] = old


def test_agents_parsed(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "m.toml",
        """
[agents.bot]
adapter = "openai"
endpoint = "http://127.0.0.1:9/v1"
model = "m"
api_key_env = "BOT_KEY"
modules = ["perspective", "witness_log"]
control = "bare"

[agents.bare]
adapter = "openai"
endpoint = "http://127.0.0.1:9/v1"
model = "m"
""",
    )
    s = load_settings(cfg, env={})
    assert s.agent("bot").modules == ("perspective", "witness_log")
    assert s.agent("bot").control == "bare"
    assert "BOT_KEY" in str(s.public_dict())


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("concurrency = [", "not valid TOML"),
        ("colour = 3\n", "colour: unknown key"),
        ('concurrency = "many"\n', "concurrency: expected an integer"),
        ("cache = 1\n", "cache: expected true or false"),
        ("[agents.x]\nadapter = 'telepathy'\n", "agents.x.adapter: unknown adapter"),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\nmodules=['magic']\n",
            "agents.x.modules",
        ),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\nwat=1\n",
            "agents.x.wat: unknown key",
        ),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\ncontrol='y'\n",
            "agents.x.control",
        ),
        ("concurrency = 0\n", "concurrency: expected a number from 1 to 10000"),
        ('db_url = "mysql://x"\n', "db_url"),
        # hostile input (issue 12): one line naming the key, never a traceback
        ("concurrency = 3 # \udcff\n", "not UTF-8 text"),
        ("home = 5\n", "home: expected a directory path"),
        ('home = ["a", "b"]\n', "home: expected a directory path"),
        ('home = "a\\u0000b"\n', "home: a path cannot hold a NUL byte"),
        ("model_threads = -4\n", "model_threads: expected a number from 1 to 256"),
        ("reveal_timeout = nan\n", "reveal_timeout: expected a number"),
        ("reveal_timeout = inf\n", "reveal_timeout: expected a number"),
        ("reveal_timeout = 1e300\n", "reveal_timeout: expected a number"),
        ("timeout = -1.0\n", "timeout: expected a number"),
        ("held_out_fraction = 0.0\n", "held_out_fraction: expected a number"),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\ntemperature=-0.5\n",
            "agents.x.temperature: expected a number from 0 to 2",
        ),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\nrate_limit=-1\n",
            "agents.x.rate_limit",
        ),
        ("[agents.x]\nadapter = 'openai'\nendpoint='h:80/v1'\n", "agents.x.endpoint"),
        ("[agents.x]\nadapter = 'openai'\nendpoint='http://h:99999/v1'\n", "agents.x.endpoint"),
        ("[agents.x]\nadapter = 'openai'\nendpoint='http://[::1/v1'\n", "agents.x.endpoint"),
        (
            "[agents.x]\nadapter = 'openai'\nendpoint='http://h/v1'\ncontrol='x'\n",
            "agents.x.control: an agent cannot be its own control",
        ),
        ("[[[agents]]]\n" * 3, "not valid TOML"),
        (  # a command line in one string would run a program named "python agent.py"
            "[agents.x]\nadapter = 'command'\ncommand = 'python agent.py --fast'\n",
            'agents.x.command: expected a list of strings, the program and its arguments: '
            'command = ["python", "agent.py", "--fast"]',
        ),
        ("[agents.x]\nadapter = 'command'\ncommand = 'a \"b'\n", 'command = ["a", "\\"b"]'),
    ],
)
def test_bad_files_name_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, env={})
    assert str(cfg) in str(err.value)
    assert needle in str(err.value)


def test_a_command_may_be_one_programs_path_in_a_string(tmp_path: Path) -> None:
    cfg = tmp_path / "one.toml"
    cfg.write_text('[agents.x]\nadapter = "command"\ncommand = "/usr/bin/agent"\n')
    assert load_settings(cfg, env={}).agents["x"].command == ("/usr/bin/agent",)


def test_bad_env_and_flag_name_source() -> None:
    with pytest.raises(ConfigError, match=r"\$MINDLEDGER_TIMEOUT: timeout: expected float"):
        load_settings(None, env={"MINDLEDGER_TIMEOUT": "soon"}, cwd=Path("/nonexistent"))
    with pytest.raises(ConfigError, match="command line: nope: unknown setting"):
        load_settings(None, env={}, flags={"nope": "1"}, cwd=Path("/nonexistent"))


def test_secrets_masked() -> None:
    s = load_settings(
        None, env={"MINDLEDGER_DB_URL": "postgresql://me:hunter2@db/x"}, cwd=Path("/nonexistent")
    )
    assert "hunter2" not in str(s.public_dict())
    assert s.public_dict()["db_url"] == "postgresql://***@db/x"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1", "0"])
def test_numbers_from_flags_and_the_environment_stay_in_range(value: str) -> None:
    for key in ("timeout", "reveal_timeout"):
        with pytest.raises(ConfigError, match=f"{key}: expected a number from"):
            load_settings(None, env={}, flags={key: value}, cwd=Path("/nonexistent"))
        with pytest.raises(ConfigError, match=f"{key}: expected a number from"):
            load_settings(
                None, env={f"MINDLEDGER_{key.upper()}": value}, cwd=Path("/nonexistent")
            )


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    cfg = tmp_path / "bom.toml"
    cfg.write_bytes(b"\xef\xbb\xbfconcurrency = 3\n")
    assert load_settings(cfg, env={}).concurrency == 3


def test_credentials_in_an_endpoint_url_are_masked_when_shown(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "c.toml",
        "[agents.x]\nadapter = 'openai'\n"
        "endpoint='http://alice:hunter2@h/v1?api_key=sk-123&api-version=1'\n",
    )
    s = load_settings(cfg, env={})
    shown = str(s.public_dict())
    assert "hunter2" not in shown and "sk-123" not in shown and "alice" not in shown
    assert "api-version=1" in shown
    assert s.agent("x").endpoint == "http://alice:hunter2@h/v1?api_key=sk-123&api-version=1"
