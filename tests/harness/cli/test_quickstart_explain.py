"""The lines ``mindledger quickstart`` ends with are the run's verdict (:mod:`reports.verdicts`,
tested with the reports), framed by where to go next: the real quickstart command, without the
embedded model, checks that it prints them for its own profile."""

from __future__ import annotations

from pathlib import Path

from harness.cli.quickstart_cmd import DASHBOARD_COMMAND, README_SECTION, explain_run

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_section_it_names_exists() -> None:
    assert f"\n## {README_SECTION}\n" in README.read_text(encoding="utf-8")


def test_quickstart_through_the_command_line_ends_with_its_own_profile_explained(
    isolated_home: Path,
) -> None:
    """The whole command, without the embedded model: `local` declared in the settings as a
    scripted depth-capped:3 reasoner, so the run is quick and its profile known (valid, above
    chance, D50 between 3 and 4). The real model's run is in test_local_model.py."""
    from click.testing import CliRunner

    from harness.cli.main import cli
    from ledger.db import open_engine
    from ledger.store import Store
    from reports import build_profile, verdict

    (isolated_home / "mindledger.toml").write_text(
        '[agents.local]\nadapter = "reference"\npolicy = "depth-capped:3"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["quickstart", "--seed", "12"])
    assert result.exit_code == 0, result.output
    url = f"sqlite:///{isolated_home / 'mindledger.db'}"
    store = Store(open_engine(url))
    run_id = store.list_runs()[0].id
    profile = build_profile(store, run_id)
    store.engine.dispose()
    lines = explain_run(profile)
    assert result.stdout.rstrip().endswith("\n".join(lines))
    assert lines[0] == "What you just saw:"
    assert lines[1:-2] == verdict(profile).paragraphs()
    assert lines[-2] == f"Browse the results: {DASHBOARD_COMMAND}"
    assert lines[-1] == f'Evaluate your own agent: the README section "{README_SECTION}".'
    text = "\n".join(lines)
    assert lines[1].startswith("local (agent under test) is valid")
    assert "D50 between 3 and 4" in lines[1] and "INVALID" not in lines[1]
    assert "  oracle: diagnosed as expected (D50 > 5)" in lines
    assert "NOT diagnosed" not in text
