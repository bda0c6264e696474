"""The systemd units of ``docs/deploy/`` (see ``docs/deploy.md``): each parses, says what the
deploy guide promises (restart on failure, a private data directory, secrets only in an
environment file, the backup job), and passes ``systemd-analyze verify`` where it is installed."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[1] / "docs" / "deploy"
UNITS = sorted(p.name for p in DEPLOY.iterdir() if p.suffix in (".service", ".timer"))
BINARY = "/opt/mindledger/venv/bin/mindledger"
"""Where the units expect the installed command (docs/deploy.md installs it there)."""


def unit(name: str) -> configparser.ConfigParser:
    """The unit file parsed; a key given twice in a section is an error (strict)."""
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string((DEPLOY / name).read_text(), source=name)
    return parser


def test_the_deploy_guide_ships_its_units() -> None:
    assert UNITS == [
        "mindledger-backup.service",
        "mindledger-backup.timer",
        "mindledger-worker@.service",
        "mindledger.service",
    ]
    guide = (DEPLOY.parent / "deploy.md").read_text()
    for name in UNITS:
        assert f"deploy/{name}" in guide, f"docs/deploy.md does not mention {name}"


@pytest.mark.parametrize("name", ["mindledger.service", "mindledger-worker@.service"])
def test_long_running_units_restart_on_failure_with_a_private_data_directory(name: str) -> None:
    service = unit(name)["Service"]
    assert service["Restart"] == "on-failure"
    assert "143" in service["SuccessExitStatus"].split()  # SIGTERM is a stop, not a failure
    assert service["User"] != "root" and service["User"] == service["Group"]
    assert service["StateDirectory"] == "mindledger"
    assert service["StateDirectoryMode"] == "0700"
    assert service["UMask"] == "0077"
    assert "MINDLEDGER_HOME=/var/lib/mindledger" in service["Environment"].split()
    assert service["ExecStart"].startswith(BINARY + " ")
    command = "serve" if name == "mindledger.service" else "worker"
    assert service["ExecStart"].split()[3] == command


@pytest.mark.parametrize("name", UNITS)
def test_no_secret_is_written_in_a_unit(name: str) -> None:
    parsed = unit(name)
    if parsed.has_section("Service"):
        service = parsed["Service"]
        assert service["EnvironmentFile"].lstrip("-") == "/etc/mindledger/mindledger.env"
        for assignment in service.get("Environment", "").split():
            key = assignment.partition("=")[0]
            assert key in {"MINDLEDGER_HOME", "MINDLEDGER_CACHE_DIR"}, assignment
    text = (DEPLOY / name).read_text()
    for secret in ("MINDLEDGER_DB_URL=", "API_KEY=", "TOKEN=", "postgresql://"):
        assert secret not in text


def test_the_backup_job_runs_db_backup_nightly() -> None:
    timer = unit("mindledger-backup.timer")["Timer"]
    assert timer["OnCalendar"] == "*-*-* 01:30:00" and timer["Persistent"] == "true"
    service = unit("mindledger-backup.service")["Service"]
    assert service["Type"] == "oneshot"
    assert f"{BINARY} --config /etc/mindledger/mindledger.toml db backup " in service["ExecStart"]
    # systemd would expand a lone $ or % itself: the shell's must be doubled
    assert "$(" not in service["ExecStart"].replace("$$(", "")
    assert "%F" not in service["ExecStart"].replace("%%F", "")


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed here (the keys are still checked above)",
)
def test_systemd_analyze_verify_accepts_every_unit(tmp_path: Path) -> None:
    """``systemd-analyze verify`` checks that the command a unit runs exists: the copies
    verified here run ``/bin/true`` in place of the installed ``mindledger`` (nothing else is
    changed). Its warnings go to stderr with exit 0, so the output must be empty too."""
    names = []
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        assert BINARY in text or name.endswith(".timer")
        copy = name.replace("@.service", "@1.service")  # a template is verified as an instance
        (tmp_path / copy).write_text(text.replace(BINARY, "/bin/true"))
        names.append(copy)
    done = subprocess.run(
        ["systemd-analyze", "verify", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    # and it does catch a bad value
    (tmp_path / "broken.service").write_text(
        (DEPLOY / "mindledger.service").read_text().replace(BINARY, "/bin/true")
        .replace("Restart=on-failure", "Restart=sometimes")
    )  # fmt: skip
    done = subprocess.run(
        ["systemd-analyze", "verify", "broken.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Failed to parse service restart specifier" in done.stderr
