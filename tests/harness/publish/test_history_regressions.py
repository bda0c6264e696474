"""Acceptance of issue 16's history item: ten nightly runs of a command agent whose false-belief
accuracy drops at run 8 — the drop is flagged at run 8 and the webhook (a real HTTP server on
127.0.0.1) is called once; an unchanged agent is flagged on no run across 20 seeds. Plus the
notification's failure paths, the ``[notify]`` settings and ``mindledger history``."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from harness.config.notify_config import NotifyConfig
from harness.config.settings import AgentConfig, Settings, load_settings
from mindledger.errors import ConfigError

SCRIPT = Path(__file__).parents[1] / "scripts" / "history_agent.py"


class Hook:
    """A webhook receiver on 127.0.0.1 that records every POST and answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                hook.bodies.append(json.loads(self.rfile.read(length)))
                hook.paths.append(self.path)
                self.send_response(hook.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/ml?token=s3cret"

    def __enter__(self) -> Hook:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    with Hook() as h:
        yield h


def _settings(tmp_path: Path, db_url: str, **notify: Any) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path)})
    bot = AgentConfig(name="bot", adapter="command", command=(sys.executable, "-S", str(SCRIPT)),
                      concurrency=4)
    return replace(settings, agents={"bot": bot}, notify=NotifyConfig(**notify))


def test_a_drop_at_run_8_is_flagged_there_and_the_webhook_is_called_once(
    tmp_path: Path, sqlite_url: str, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, JobExecutionEvent

    from harness.cli.main import cli
    from harness.config.workspace import Workspace
    from harness.daemon import DaemonContext, DaemonScheduler
    from reports.history import agent_history

    run_file = tmp_path / "run-number"
    monkeypatch.setenv("HISTORY_DB", sqlite_url.removeprefix("sqlite:///"))
    monkeypatch.setenv("HISTORY_RUN_FILE", str(run_file))
    monkeypatch.setenv("HISTORY_DROP_AT", "8")
    settings = _settings(tmp_path, sqlite_url, webhook=hook.url)
    ws = Workspace.open(settings)
    ctx = DaemonContext(settings, ws.store)  # no ledger: no matrix beside the suite
    sched = DaemonScheduler(ws.engine, ctx, expire_every=None, misfire_grace_time=None)
    finished = threading.Event()
    errors: list[BaseException] = []

    def on_job(event: JobExecutionEvent) -> None:
        if event.job_id == "nightly:bot":
            if event.exception is not None:
                errors.append(event.exception)
            finished.set()

    sched.scheduler.add_listener(on_job, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    sched.start(paused=True)
    try:
        for night in range(1, 11):
            run_file.write_text(str(night))
            finished.clear()
            sched.scheduler.modify_job("nightly:bot", next_run_time=dt.datetime.now(dt.UTC))
            sched.resume()
            assert finished.wait(600), f"night {night} did not finish"
            sched.scheduler.pause()
            assert errors == []
            # the webhook is called by the nightly job itself, right after run 8
            assert len(hook.bodies) == (1 if night >= 8 else 0), night
    finally:
        sched.shutdown()

    runs = ws.store.agent_runs("bot")
    assert len(runs) == 10
    assert all(ws.store.get_run(r).held_out for r in runs)
    history = agent_history(ws.store, "bot", n_boot=200)
    assert [r.id for r in history.runs] == runs
    assert all(r.held_out for r in history.runs)
    fb = history.metric("false_belief")
    assert [p.value for p in fb.points[:7]] == [1.0] * 7
    assert all(p.value is not None and p.value < 0.5 for p in fb.points[7:])
    # nothing is flagged before the drop; the drop is flagged at run 8
    assert history.regressions(runs[6]) == [] and all(
        history.regressions(r) == [] for r in runs[:7])
    assert fb.points[7].flagged and fb.points[7].p is not None and fb.points[7].p < 1e-4
    new = {r.metric.key for r in history.new_regressions(runs[7])}
    assert "false_belief" in new
    assert history.new_regressions(runs[8]) == history.new_regressions(runs[9]) == []
    assert not history.metric("true_belief").flagged()  # the rest of its answers never changed

    (body,) = hook.bodies
    assert hook.paths == ["/hooks/ml?token=s3cret"]
    assert body["schema"] == "mindledger.regression/1" and body["agent"] == "bot"
    assert body["run"]["id"] == runs[7] and body["run"]["held_out"] is True
    assert "false_belief" in {r["metric"] for r in body["regressions"]}
    (note,) = ws.store.notifications("bot")
    assert (note.run_id, note.channel, note.status, note.attempts) == (runs[7], "webhook",
                                                                      "sent", 1)
    assert note.target == f"http://127.0.0.1:{hook.server.server_address[1]}"  # no token
    assert "s3cret" not in note.payload_json

    # the CLI: JSON history, the HTML trend report, and --notify sends nothing twice
    cfg = tmp_path / "mindledger.toml"
    cfg.write_text(
        f'db_url = "{sqlite_url}"\n[notify]\nwebhook = "{hook.url}"\n', encoding="utf-8")
    runner = CliRunner()
    out = runner.invoke(cli, ["--config", str(cfg), "history", "bot", "--format", "json",
                              "--bootstrap", "200", "--html", str(tmp_path / "trend.html")])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert next(f["run_id"] for f in doc["flagged"] if f["metric"] == "false_belief") == runs[7]
    assert doc["metrics"]["false_belief"]["points"][7]["flagged"] is True
    page = (tmp_path / "trend.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and runs[7] in page
    # the latest run (10) begins no regression; run 8 asked explicitly is already notified
    again = runner.invoke(cli, ["--config", str(cfg), "history", "bot", "--notify",
                                "--metric", "false_belief", "--bootstrap", "200"])
    assert again.exit_code == 0, again.output
    assert "▼" in again.stdout and "no regression begins on the latest run" in again.stderr
    from harness.publish.notify import notify_regressions

    _, regs, deliveries = notify_regressions(ws.store, settings, "bot", runs[7],
                                             history=history)
    assert regs and [d.recorded for d in deliveries] == [False]
    assert len(hook.bodies) == 1 and len(ws.store.notifications("bot")) == 1
    ws.close()


def test_an_unchanged_agent_is_flagged_on_no_run_across_20_seeds() -> None:
    """The rule's false alarms on the synthetic agents: 20 seeds x 10 quick-suite runs of the
    simulation study's agent under test, drawn fresh each run from the same accuracies."""
    from reports.history import history_of
    from reports.profile import profile_from_data
    from reports.simulation import study_agents
    from reports.synthetic import simulate, suite_design

    agent = study_agents()[0]
    items = suite_design("quick")
    tested = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        profiles = []
        for i in range(10):
            data = simulate(rng, [agent], items, run_id=f"s{seed}-{i}")
            profiles.append(profile_from_data(data, n_boot=100))
        h = history_of("agent", profiles)
        assert h.regressions() == [], (seed, [r.point.reason for r in h.regressions()])
        tested += sum(p.tested for m in h.metrics for p in m.points)
    assert tested >= 20 * 7 * 2  # false-belief and leakage at least, from run 4 on


def test_a_failing_webhook_is_recorded_failed_after_a_few_attempts(
    tmp_path: Path, sqlite_url: str
) -> None:
    from harness.config.workspace import Workspace
    from harness.publish.notify import deliver
    from reports.synthetic import SyntheticAgent, synthetic_run

    settings = _settings(tmp_path, sqlite_url)
    ws = Workspace.open(settings)
    run = synthetic_run(np.random.default_rng(0), [SyntheticAgent("bot", lambda d: 0.5)],
                        stories=2, games=1)
    run.write(ws.store, "r1")
    waits: list[float] = []
    with Hook(status=503) as down:
        cfg = NotifyConfig(webhook=down.url, attempts=3)
        (d,) = deliver(ws.store, cfg, "bot", "r1", {"x": 1}, sleep=waits.append)
        assert (d.status, d.attempts) == ("failed", 3) and len(down.bodies) == 3
        assert waits == [1.0, 2.0] and d.error is not None and "503" in d.error
    run.write(ws.store, "r3")
    with Hook(status=404) as gone:  # a 4xx is not tried again
        (d3,) = deliver(ws.store, NotifyConfig(webhook=gone.url), "bot", "r3", {"x": 1},
                        sleep=waits.append)
        assert (d3.status, d3.attempts, len(gone.bodies)) == ("failed", 1, 1)
    # a closed port: connection refused, recorded; never raised
    refused = NotifyConfig(webhook="http://127.0.0.1:9/hook", attempts=2, command=(
        sys.executable, "-c", "import sys; sys.exit(sys.stdin.read() != '{\"x\":1}')"))
    run.write(ws.store, "r2")
    hooks = deliver(ws.store, refused, "bot", "r2", {"x": 1}, sleep=waits.append)
    assert [(h.channel, h.status, h.attempts) for h in hooks] == [
        ("webhook", "failed", 2), ("command", "sent", 1)]
    assert "s3cret" not in (hooks[0].error or "")
    rows = ws.store.notifications("bot")
    assert [(r.run_id, r.channel, r.status) for r in rows] == [
        ("r1", "webhook", "failed"), ("r3", "webhook", "failed"), ("r2", "webhook", "failed"),
        ("r2", "command", "sent")]
    # the same run is not notified again, failed or not
    assert [h.recorded for h in deliver(ws.store, refused, "bot", "r2", {"x": 1},
                                        sleep=waits.append)] == [False, False]
    ws.close()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('webhook = "ftp://example.com/x"', "notify.webhook: expected an http(s)://"),
        ("webhook = 3", "notify.webhook: expected an http(s)://"),
        ("command = []", "notify.command: expected a program and its arguments"),
        ("command = [1, 2]", "notify.command: expected a program and its arguments"),
        ("attempts = 0", "notify.attempts: expected a whole number from 1 to 10"),
        ("timeout = -1", "notify.timeout: expected seconds from 0 to 3600"),
        ("retries = 3", "notify.retries: unknown key (known: attempts, command, timeout"),
        ('webhook = "http://a/x"\nwebhook_env = "X"', "notify.webhook_env: give webhook or"),
    ],
)
def test_bad_notify_settings_name_the_key(tmp_path: Path, table: str, message: str) -> None:
    cfg = tmp_path / "mindledger.toml"
    cfg.write_text(f"[notify]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, env={})
    assert message in str(err.value) and str(cfg) in str(err.value)


def test_notify_settings_keep_the_webhook_secret(tmp_path: Path) -> None:
    cfg = tmp_path / "mindledger.toml"
    cfg.write_text('[notify]\nwebhook_env = "HOOK"\ncommand = "notify-me --loud"\n',
                   encoding="utf-8")
    s = load_settings(cfg, env={})
    assert s.notify.command == ("notify-me", "--loud") and s.notify.enabled
    assert s.notify.webhook_url({"HOOK": "https://h.example/x?token=abc"}) == \
        "https://h.example/x?token=abc"
    with pytest.raises(ConfigError, match=r"\$HOOK: notify.webhook_env: expected"):
        s.notify.webhook_url({"HOOK": "not a url"})
    plain = load_settings(None, env={}, flags={"home": str(tmp_path)})
    assert not plain.notify.enabled
    cfg.write_text('[notify]\nwebhook = "https://h.example:8443/x?token=abc"\n',
                   encoding="utf-8")
    shown = load_settings(cfg, env={}).public_dict()["notify"]
    assert shown["webhook"] == "https://h.example:8443"


def test_history_cli_refuses_a_bad_date_and_prints_an_empty_history(
    tmp_path: Path, sqlite_url: str
) -> None:
    from harness.cli.main import cli

    cfg = tmp_path / "mindledger.toml"  # bot is declared: known, with no run yet
    cfg.write_text(f'db_url = "{sqlite_url}"\n[agents.bot]\nadapter = "reference"\n'
                   'policy = "oracle"\n', encoding="utf-8")
    import subprocess

    bad = subprocess.run([sys.executable, "-m", "harness.cli", "--config", str(cfg), "history",
                          "bot", "--since", "yesterday"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("error: --since: expected a date like 2026-11-30 (or an ISO "
                                  "time), got 'yesterday'")
    runner = CliRunner()
    missing = runner.invoke(cli, ["--config", str(cfg), "history", "bot"])
    assert missing.exit_code == 1 and "no database at" in str(missing.exception)  # reads only
    assert runner.invoke(cli, ["--config", str(cfg), "db", "migrate"]).exit_code == 0
    empty = runner.invoke(cli, ["--config", str(cfg), "history", "bot", "--format", "json"])
    assert empty.exit_code == 0, empty.output
    assert json.loads(empty.stdout)["runs"] == [] and "no finished run" in empty.stderr
    helped = runner.invoke(cli, ["history", "--help"])
    assert helped.output.rstrip().splitlines()[-1].strip().startswith("mindledger history")
