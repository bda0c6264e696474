"""`mindledger report` chooses a run's report through one registry keyed by its suite
(:mod:`harness.cli.suite_reports`): a suite declared there renders its own report, every
other run gets the profile, and nothing tests a suite's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import suite_reports
from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.run.build import plan_agents
from harness.run.runs import create_run
from matrix import make_items
from tests.cli import run_main
from tests.harness import toy_suite_report


def test_the_matrix_suite_declares_its_report_and_other_suites_get_the_profile() -> None:
    report = suite_reports.suite_report("matrix")
    assert report is not None and report.suite == "matrix"
    assert set(report.formats) == {"md", "json", "html", "csv"}
    assert suite_reports.suite_report("baseline") is None
    assert suite_reports.suite_report("quick") is None


def test_a_suite_added_to_the_registry_renders_its_own_report(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        suite_reports.BUILTIN, toy_suite_report.SUITE, "tests.harness.toy_suite_report"
    )
    settings = load_settings(None)
    with Workspace.open(settings) as ws:
        planned = plan_agents(settings, agents=(), references=("random",), no_control=True)
        run_id, _, _ = create_run(ws.store, settings, suite=toy_suite_report.SUITE,
                                  planned=planned, seed=11, items=make_items(11, 3))  # fmt: skip
    code, out, err = run_main(capsys, "report", run_id, "--bootstrap", "100")
    assert code == 0, err
    assert out == f"toy report of {run_id}: 3 items, 100 replicates\n"


def test_a_module_declaring_another_suite_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(suite_reports.BUILTIN, "other", "tests.harness.toy_suite_report")
    with pytest.raises(RuntimeError, match="reports suite 'toy-suite', not 'other'"):
        suite_reports.suite_report("other")
