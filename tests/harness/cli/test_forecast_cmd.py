"""``mindledger forecast`` (issue 29): an operator commits an agent's self-forecast at the
machine (held by the service), lists and shows forecasts, and lists the nightly runs announced;
the checks are the API's (a started run is closed, a bad forecast names its option)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import run_main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for key in list(os.environ):
        if key.startswith("MINDLEDGER_") and key != "MINDLEDGER_TEST_PG_URL":
            monkeypatch.delenv(key)
    (tmp_path / "mindledger.toml").write_text(
        '[agents.bot]\nadapter = "reference"\npolicy = "oracle"\n'
        '[agents.other]\nadapter = "reference"\npolicy = "oracle"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("MINDLEDGER_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _planned(home: Path, run_id: str) -> None:
    from harness.config.settings import load_settings
    from harness.config.workspace import Workspace
    from harness.run.build import plan_agents
    from harness.run.runs import create_run

    settings = load_settings(home / "mindledger.toml", env={}, flags={"home": str(home)})
    with Workspace.open(settings) as ws:
        create_run(ws.store, settings, suite="smoke", planned=plan_agents(settings, agents=("bot",)),
                   seed=5, run_id=run_id)  # fmt: skip


def ok(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 0, err
    return out


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert (code, out) == (2, ""), (code, out, err)
    return err


def test_commit_list_show_and_the_run_closes_when_it_starts(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _planned(home, "run-cli-1")
    made = json.loads(ok(capsys, "forecast", "commit", "run-cli-1", "false_belief_accuracy",
                         "--agent", "bot", "--quantiles", "0.1=0.5,0.5=0.8,0.9=0.95",
                         "--reason", "the oracle is right"))  # fmt: skip
    assert made["held"] is True and made["predictor"] == "bot" and made["run"] == "run-cli-1"
    listed = json.loads(ok(capsys, "forecast", "list", "--run", "run-cli-1", "--format", "json"))
    assert [f["id"] for f in listed] == [made["id"]] and listed[0]["status"] == "committed"
    assert made["id"] in ok(capsys, "forecast", "list")
    shown = json.loads(ok(capsys, "forecast", "show", made["id"]))
    assert shown["commitment"] == made["commitment"] and shown["figure"] == "false_belief_accuracy"
    assert json.loads(ok(capsys, "forecast", "list", "--agent", "other", "--json")) == []

    # bad input names what is wrong, and writes nothing
    assert "--quantiles" in refused(capsys, "forecast", "commit", "run-cli-1", "d50",
                                    "--agent", "bot", "--quantiles", "0.5")  # fmt: skip
    assert "FIGURE:" in refused(capsys, "forecast", "commit", "run-cli-1", "d99",
                               "--agent", "bot", "--quantiles", "0.5=2")  # fmt: skip
    assert "--forecast.levels" in refused(capsys, "forecast", "commit", "run-cli-1", "d50", "--agent", "bot",
                               "--forecast", '{"form": "quantiles", "levels": [], "values": []}')  # fmt: skip
    assert "--agent:" in refused(capsys, "forecast", "commit", "run-cli-1", "d50",
                                  "--agent", "other", "--quantiles", "0.5=2")  # fmt: skip
    assert "no run" in refused(capsys, "forecast", "commit", "run-none", "d50",
                               "--agent", "bot", "--quantiles", "0.5=2")  # fmt: skip
    assert len(json.loads(ok(capsys, "forecast", "list", "--json"))) == 1

    # the run executes (sealed first): no forecast after that
    ok(capsys, "run", "--resume", "run-cli-1")
    assert "started" in refused(capsys, "forecast", "commit", "run-cli-1", "d50",
                                "--agent", "bot", "--quantiles", "0.5=2")  # fmt: skip
    # ...and what the service held is revealed and scored as the run ends
    (revealed,) = json.loads(ok(capsys, "forecast", "list", "--json"))
    assert revealed["status"] == "scored" and revealed["outcome"] is not None, revealed
    assert revealed["reason"] == "the oracle is right"
    assert json.loads(ok(capsys, "forecast", "reveal", "run-cli-1"))["revealed"] == []
    verified = json.loads(ok(capsys, "ledger", "verify", "--format", "json"))
    assert verified["ok"] is True, verified


def test_next_lists_the_announced_runs_and_a_commit_for_one_gets_its_deadline(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.config.settings import load_settings
    from harness.daemon.scheduler import DaemonContext, DaemonScheduler
    from ledger.db import open_engine
    from ledger.store import Store

    assert json.loads(ok(capsys, "forecast", "next")) == []  # no daemon has stored its jobs
    settings = load_settings(home / "mindledger.toml", env={}, flags={"home": str(home)})
    store = Store(open_engine(settings.database_url))
    sched = DaemonScheduler(store.engine, DaemonContext(settings, store), expire_every=None)
    sched.start(paused=True)
    sched.shutdown()
    store.engine.dispose()
    announced = json.loads(ok(capsys, "forecast", "next", "--agent", "bot"))
    assert [a["agent"] for a in announced] == ["bot"]
    (run,) = announced
    assert run["deadline"] == run["fire_time"] and "d50" in run["figures"]
    made = json.loads(ok(capsys, "forecast", "commit", run["run"], "d50", "--agent", "bot",
                         "--forecast", '{"form": "bins", "edges": [0, 2, 4, 6], '
                         '"probs": [0.2, 0.5, 0.3]}'))  # fmt: skip
    assert made["deadline"] is not None and made["run"] == run["run"]
    assert "--agent:" in refused(capsys, "forecast", "commit", run["run"], "d50",
                                  "--agent", "other", "--quantiles", "0.5=2")  # fmt: skip


def test_run_takes_the_agents_forecasts_before_its_first_trial(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--forecast" in refused(capsys, "run", "--suite", "smoke", "--agent", "bot",
                                   "--forecast", "d99", "0.5=1")  # fmt: skip
    assert "--forecast" in refused(capsys, "run", "--suite", "smoke", "--agent", "bot",
                                   "--agent", "other", "--forecast", "d50", "0.5=1")  # fmt: skip
    bad = refused(capsys, "run", "--suite", "smoke", "--agent", "bot", "--forecast", "d50", "x")
    assert bad.startswith("error: --forecast: expected LEVEL=VALUE pairs"), bad
    assert json.loads(ok(capsys, "runs", "--format", "json")) == []  # nothing stored
    summary = json.loads(ok(capsys, "run", "--suite", "smoke", "--agent", "bot", "--format",
                            "json", "--forecast", "false_belief_accuracy",
                            "0.1=0.5,0.5=0.8,0.9=0.95"))  # fmt: skip
    (made,) = json.loads(ok(capsys, "forecast", "list", "--json"))
    assert made["run_id"] == summary["run"]["id"] and made["predictor"] == "bot"
    assert made["held"] is True and made["status"] == "scored", made
    # the run's closing summary says what became of it
    (said,) = summary["forecasts"]
    assert (said["id"], said["status"], said["outcome"]) == (made["id"], "scored", made["outcome"])
    assert said["median"] == 0.8 and said["loss"] == made["loss"]
    table = ok(capsys, "run", "--suite", "smoke", "--agent", "bot", "--forecast", "d50", "0.5=2")
    assert "self-forecasts (scored in the ledger):" in table
    assert "bot d50: void" in table or "bot d50: outcome" in table, table
    verified = json.loads(ok(capsys, "ledger", "verify", "--format", "json"))
    assert verified["ok"] is True, verified
