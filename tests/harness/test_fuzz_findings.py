"""Regression tests for what fuzzing the command line found (issue 25, item 5), each through
the real entry point: exit 2 and one line naming what was wrong, never a traceback; and a
command that only reads creates nothing on disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import click
import pytest

from ledger.db import private_home
from mindledger.errors import InputError
from tests.cli import run_main as cli


def one_line(err: str) -> str:
    """The one line on stderr (failing the test when there are more, or a traceback)."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- database URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("postgresql://u:s3cret@[::1/db", "opens '[' without closing it"),
        ("postgresql://u:s3cret@host:abc/db", "port could not be cast to integer"),
        ("postgresql://u:s3cret@host:99999/db", "port out of range"),
        ("postgres://u:s3cret@h:1:2/db", "port could not be cast to integer"),
    ],
)
def test_a_database_url_that_does_not_parse_is_named_with_its_password_masked(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], url: str, needle: str
) -> None:
    code, _, err = cli(capsys, "--db", url, "db", "status")
    line = one_line(err)
    assert code == 2 and line.startswith("error: not a database URL: ") and needle in line
    assert "s3cret" not in line and url.rsplit("@", 1)[1] in line


# -- commands that only read create nothing -----------------------------------------------------

READ_ONLY = [
    ["db", "status"],
    ["trials", "latest"],
    ["report", "latest"],
    ["history", "local"],
    ["ledger", "show"],
    ["ledger", "show", "--id", "p0"],
    ["ledger", "verify"],
    ["serve", "token", "--list"],
    ["runs", "--verify", "20261203-000000-abcdef"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_on_a_missing_database_creates_nothing(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    where = tmp_path / "nonexistent" / "dir" / "x.db"
    code, _, err = cli(capsys, "--db", f"sqlite:///{where}", *args)
    line = one_line(err)
    assert code == 2 and f"no database at {where}" in line and "only reads" in line
    assert "`mindledger quickstart` or `mindledger run` store a first run" in line
    assert not (tmp_path / "nonexistent").exists()
    assert list(isolated_home.iterdir()) == []


@pytest.mark.parametrize("args", [*READ_ONLY, ["runs"], ["doctor", "--no-probe"]], ids=" ".join)
def test_a_read_only_command_in_a_fresh_data_directory_creates_nothing(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    home = isolated_home / "fresh"
    os.environ["MINDLEDGER_HOME"] = str(home)
    code, out, err = cli(capsys, *args)
    assert not home.exists(), args
    if args[0] in ("runs", "doctor") and len(args) < 3:  # they answer without a database
        assert code == 0 and "Traceback" not in err, err
        assert "run" in out.split() or "none yet" in out
    else:
        assert code == 2 and "no database at" in one_line(err)


def test_ledger_verify_of_another_missing_database_creates_nothing(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "elsewhere" / "y.db"
    code, _, err = cli(capsys, "ledger", "verify", "--db", f"sqlite:///{where}")
    assert code == 2 and f"no database at {where}" in one_line(err)
    assert not where.parent.exists()


def test_a_read_only_command_creates_no_service_key(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, "db", "migrate")[0] == 0
    before = sorted(p.name for p in isolated_home.iterdir())
    code, out, err = cli(capsys, "ledger", "show")
    assert code == 0 and out == "" and "no predictions" in err, err
    code, out, err = cli(capsys, "ledger", "verify")
    assert code == 0 and out.startswith("ok: 0 entries"), err
    assert sorted(p.name for p in isolated_home.iterdir()) == before  # no keys/, no witness


def test_a_ledger_with_entries_but_no_key_is_refused_not_rekeyed(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(
        capsys, "ledger", "commit", "--predictor", "p", "--target", "t", "--query", "q",
        "--distribution", '{"a": 1.0}',
    )  # fmt: skip
    assert code == 0, err
    keys = isolated_home / "keys"
    for f in keys.iterdir():
        f.unlink()
    keys.rmdir()
    for args in (["ledger", "show"], ["ledger", "verify"]):
        code, _, err = cli(capsys, *args)
        line = one_line(err)
        assert code == 2 and "has 2 entries, but there is no service key" in line, line
    assert not keys.exists()


def test_a_database_without_schema_is_not_given_one_by_a_read_only_command(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    code, _, err = cli(capsys, "--db", f"sqlite:///{other}", "trials", "latest")
    assert code == 2 and "no mindledger database at" in one_line(err)
    with sqlite3.connect(other) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"notes"}


# -- the data directory is private --------------------------------------------------------------


def test_an_open_data_directory_is_made_private_when_opened(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chmod(isolated_home, 0o755)
    code, _, err = cli(capsys, "db", "migrate")
    assert code == 0 and err == ""
    assert stat.S_IMODE(isolated_home.stat().st_mode) == 0o700


def test_a_shared_or_foreign_data_directory_is_left_alone_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    line = private_home(shared)
    assert line is not None and line.startswith("warning: ") and "shared (mode 1777)" in line
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chmod(foreign, 0o750)
    monkeypatch.setattr(os, "geteuid", lambda: foreign.stat().st_uid + 1)
    line = private_home(foreign)
    assert line is not None and "not you" in line
    assert stat.S_IMODE(foreign.stat().st_mode) == 0o750
    os.chmod(foreign, 0o700)
    assert private_home(foreign) is None


# -- every count has a range ----------------------------------------------------------------------

CHECKED_BY_SEED_POLICY = {"run --seed", "quickstart --seed", "matrix --seed"}
"""Integer options whose range the seed policy checks (with the held-out share) before
anything is written: ``harness.config.seeds.check_seed``."""


def _integer_options() -> list[tuple[str, click.Option]]:
    import click

    from harness.cli.main import cli

    found: list[tuple[str, click.Option]] = []

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}".strip())
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, click.types.IntParamType):
                found.append((f"{path} {param.opts[0]}", param))

    walk(cli, "")
    return found


def test_every_integer_option_has_a_documented_range() -> None:
    options = _integer_options()
    assert len(options) >= 15 and "nesttom generate --n" in dict(options)
    unbounded = [
        name
        for name, option in options
        if name not in CHECKED_BY_SEED_POLICY
        and not (
            isinstance(option.type, click.IntRange)
            and option.type.min is not None
            and option.type.max is not None
        )
    ]
    assert unbounded == []


@pytest.mark.parametrize(
    "args",
    [
        ["nesttom", "generate", "--seed", "1", "--n", "100000000000"],
        ["games", "generate", "--seed", "1", "--n", "100000000000"],
        ["games", "abc", "--seed", "-1", "--n", "1"],
        ["runs", "--limit", "100000000000000000000000"],
        ["trials", "latest", "--limit", "0"],
        ["matrix", "--agent", "a", "--items", "100000000000"],
        ["report", "latest", "--seed", "-1"],
        ["quickstart", "--seed", "-1"],
    ],
    ids=" ".join,
)
def test_a_count_out_of_range_is_one_line_and_writes_nothing(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = cli(capsys, *args)
    line = one_line(err)
    assert code == 2 and out == "" and line.startswith("error: ") and "--" in line, line
    assert list(isolated_home.iterdir()) == []


# -- agent names: one rule wherever a name enters -------------------------------------------------


@pytest.mark.parametrize("name", ["a\\u0000b", "a b", "-x", "é", "x" * 101, "a\\nb"])
def test_a_settings_agent_name_outside_the_rule_is_refused(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (isolated_home / "mindledger.toml").write_text(
        f'[agents."{name}"]\nadapter = "reference"\npolicy = "oracle"\n', encoding="utf-8"
    )
    code, _, err = cli(capsys, "config", "show")
    line = one_line(err)
    assert code == 2 and "agents: expected an agent name (letters, digits and _ . : -" in line
    assert "\x00" not in line and "\n" not in line.strip()


@pytest.mark.parametrize(
    "args",
    [
        ["ledger", "commit", "--predictor", "a\x00b", "--target", "t", "--query", "q",
         "--distribution", '{"a": 1.0}'],
        ["ledger", "commit", "--predictor", "p", "--target", "t\x00", "--query", "q",
         "--distribution", '{"a": 1.0}'],
        ["ledger", "register", "--predictor", "a b", "--public-key", "00" * 32],
        ["history", "a\x00b"],
        ["serve", "token", "a\x00b"],
    ],
    ids=["commit --predictor", "commit --target", "register", "history", "serve token"],
)  # fmt: skip
def test_an_agent_name_outside_the_rule_is_refused_on_the_command_line(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, _, err = cli(capsys, *args)
    line = one_line(err)
    assert code == 2 and "expected an agent name" in line and "\x00" not in line, line
    assert list(isolated_home.iterdir()) == []


def test_the_token_api_and_the_settings_share_the_rule() -> None:
    from harness.daemon import tokens
    from mindledger import names

    assert tokens.check_agent_name is names.check_agent_name
    assert names.check_agent_name("ref:oracle") == "ref:oracle"
    with pytest.raises(InputError, match="got 'a\\\\x00b'"):
        names.check_agent_name("a\x00b", where="target")


# -- empty ids --------------------------------------------------------------------------------------

EMPTY_IDS = [
    ["ledger", "show", "--id", ""],
    ["ledger", "show", "--id", "  "],
    ["ledger", "observe", "", "--answer", "a"],
    ["ledger", "reveal", "", "--distribution", "{}", "--salt", "00"],
    ["ledger", "prove", ""],
    ["ledger", "commit", "--predictor", "p", "--target", "t", "--query", "q",
     "--distribution", '{"a": 1.0}', "--item", ""],
    ["ledger", "verify", "--db", ""],
    ["--db", "", "runs"],
    ["runs", "--verify", ""],
    ["trials", ""],
    ["trials", "latest", "--item", ""],
    ["report", ""],
    ["report", "--compare", "latest", ""],
    ["run", "--resume", ""],
    ["matrix", "--resume", ""],
    ["judge", ""],
    ["enqueue", ""],
    ["serve", "token", "--revoke", ""],
    ["witness", "head", ""],
    ["witness", "add-log", "", "00" * 32],
]  # fmt: skip


@pytest.mark.parametrize("args", EMPTY_IDS, ids=lambda a: " ".join(x or "''" for x in a))
def test_an_empty_id_is_refused_in_one_line(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = cli(capsys, *args)
    line = one_line(err)
    assert code == 2 and out == "", line
    assert "got an empty string" in line or "got only spaces" in line, line
    assert list(isolated_home.iterdir()) == []


def test_every_id_parameter_refuses_an_empty_one() -> None:
    """A new option or argument that names a stored thing gets the same callback."""
    from harness.cli import conventions

    ids = [
        (where, param)
        for where, param in _string_parameters()
        if param.name is not None
        and (param.name.endswith(("_id", "_ids", "_ref")) or param.name in ("subject", "item"))
    ]
    assert len(ids) >= 12 and "ledger show prediction_id" in dict(ids)
    assert [where for where, param in ids if param.callback is not conventions.an_id] == []


def _string_parameters() -> list[tuple[str, click.Parameter]]:
    from harness.cli.main import cli

    found: list[tuple[str, click.Parameter]] = []

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}".strip())
        for param in command.params:
            if isinstance(param.type, click.types.StringParamType) and param.name:
                found.append((f"{path} {param.name}", param))

    walk(cli, "")
    return found


def test_config_show_masks_a_database_url_that_does_not_parse(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "--db", "postgres://u:s3cret@h:x/db", "config", "show")
    assert code == 0 and "Traceback" not in err, err
    assert "s3cret" not in out and "@h:x/db" in out
