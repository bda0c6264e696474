"""The daemon's scheduler: jobs stored in the database survive a restart, missed runs coalesce,
and a run-now request through the API plans and completes a held-out run."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from harness.config.seeds import is_held_out
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.daemon import (
    BackgroundServer,
    DaemonContext,
    DaemonScheduler,
    build_daemon,
    create_token,
)
from harness.daemon.scheduler import coalesced_fires
from ledger.db import open_engine
from ledger.store import Store


def settings_for(tmp_path: Path, db_url: str, *names: str) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path)})
    agents = {n: AgentConfig(name=n, adapter="reference", policy="oracle") for n in names}
    return replace(settings, agents=agents)


class RecordingContext(DaemonContext):
    """Records the suites (and the matrices beside them) the jobs would run instead of running
    them."""

    def __init__(self, settings: Settings, store: Store):
        super().__init__(settings, store)
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.matrices: list[str] = []
        self.run_ids: list[str | None] = []
        """The run id each suite was to take (the announced one, issue 29)."""

    def run_suite(self, *, suite: str, agents: Sequence[str], run_id: str | None = None) -> str:
        self.calls.append((suite, tuple(agents)))
        self.run_ids.append(run_id)
        return "recorded"

    def run_matrix_beside(self, suite_run: str) -> str | None:
        self.matrices.append(suite_run)
        return None


def scheduler(settings: Settings, store: Store, **options: object) -> DaemonScheduler:
    ctx = RecordingContext(settings, store)
    return DaemonScheduler(store.engine, ctx, expire_every=None, **options)  # type: ignore[arg-type]


def test_nightly_jobs_survive_a_restart_and_follow_the_settings(
    db_url: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, db_url, "bot", "other")
    store = Store(open_engine(settings.database_url))
    first = scheduler(settings, store)
    first.start(paused=True)
    jobs = {j["id"]: j for j in first.jobs()}
    assert set(jobs) == {"nightly:bot", "nightly:other"}
    assert jobs["nightly:bot"]["next_run_time"].endswith("03:00:00+00:00")
    first.shutdown()

    # a new scheduler over the same database (a fresh engine, as after a restart) sees them,
    # unchanged; an agent no longer declared loses its job
    engine = open_engine(settings.database_url)
    second = scheduler(settings_for(tmp_path, db_url, "bot"), Store(engine))
    second.start(paused=True)
    again = {j["id"]: j for j in second.jobs()}
    assert set(again) == {"nightly:bot"}
    assert again["nightly:bot"] == jobs["nightly:bot"]
    second.shutdown()
    engine.dispose()
    store.engine.dispose()


def test_runs_missed_during_downtime_coalesce_into_one(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(tmp_path, db_url, "bot")
    store = Store(open_engine(settings.database_url))
    first = scheduler(settings, store)
    first.start(paused=True)
    five_days_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=5)
    first.scheduler.modify_job("nightly:bot", next_run_time=five_days_ago)
    first.shutdown()

    # five nightly runs were missed while "down": the restarted scheduler runs one
    second = scheduler(settings, store, misfire_grace_time=None)
    second.start()
    ctx = second.context
    assert isinstance(ctx, RecordingContext)
    deadline = time.monotonic() + 10
    while not ctx.calls and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert ctx.calls == [("quick", ("bot",))]
    assert ctx.matrices == ["recorded"]  # the matrix follows the suite, beside its run
    # the log says how many fires the one run stands for: the time it was due, five days ago,
    # and the five nightly times since
    (line,) = [r.getMessage() for r in caplog.records if "coalesced" in r.getMessage()]
    assert line.startswith("nightly:bot: 6 fires due from "), line
    (job,) = second.jobs()
    assert dt.datetime.fromisoformat(job["next_run_time"]) > dt.datetime.now(dt.UTC)
    second.shutdown()
    store.engine.dispose()


def test_coalesced_fires_counts_the_trigger_s_fire_times() -> None:
    start = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    every = IntervalTrigger(seconds=2, start_date=start, timezone=dt.UTC)
    late = start + dt.timedelta(seconds=2 * 7)
    assert coalesced_fires(every, start, start) == 1
    assert coalesced_fires(every, start, late) == 8
    assert coalesced_fires(every, start, late + dt.timedelta(seconds=1.9)) == 8
    nightly = CronTrigger.from_crontab("0 2 * * *", timezone=dt.UTC)
    first = dt.datetime(2026, 12, 1, 2, tzinfo=dt.UTC)
    assert coalesced_fires(nightly, first, first + dt.timedelta(days=3, hours=1)) == 4
    assert coalesced_fires(every, start, late, limit=3) == 3


def test_a_missed_run_past_the_grace_time_is_skipped(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, db_url, "bot")
    store = Store(open_engine(settings.database_url))
    first = scheduler(settings, store)
    first.start(paused=True)
    first.scheduler.modify_job(
        "nightly:bot", next_run_time=dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    )
    first.shutdown()
    # settings.schedule every minute would make "late" ambiguous; a 1 s grace is unambiguous
    second = scheduler(settings, store, misfire_grace_time=1)
    second.start()
    time.sleep(0.7)
    ctx = second.context
    assert isinstance(ctx, RecordingContext)
    assert ctx.calls == []
    second.shutdown()
    store.engine.dispose()


def test_a_bad_cron_expression_is_a_config_error(tmp_path: Path, sqlite_url: str) -> None:
    from mindledger.errors import ConfigError

    settings = replace(settings_for(tmp_path, sqlite_url), schedule="every night")
    store = Store(open_engine(settings.database_url))
    with pytest.raises(ConfigError, match="schedule"):
        scheduler(settings, store)
    store.engine.dispose()


def test_run_now_creates_and_completes_a_held_out_reference_run(
    db_url: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, db_url)
    daemon = build_daemon(settings, scheduler_options={"expire_every": None})
    assert daemon.scheduler is not None
    daemon.scheduler.start()
    token = create_token(daemon.engine, "piper")
    try:
        with (
            BackgroundServer(daemon.app) as server,
            httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
            ) as c,
        ):
            assert c.get("/health").json()["scheduler"] == "running"
            r = c.post("/runs", json={"suite": "quick", "references": ["oracle"]})
            assert r.status_code == 202, r.text
            run_id = r.json()["run"]["id"]
            assert r.json()["job"] == f"run:{run_id}"
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                run = c.get(f"/runs/{run_id}").json()
                if run["status"] in ("complete", "incomplete", "interrupted"):
                    break
                time.sleep(0.1)
            assert run["status"] == "complete"
            assert run["held_out"] is True and run["seed"] is None
            counts = run["trial_counts"]["ref:oracle"]
            assert counts["ok"] + counts["not_applicable"] == run["items"] > 0
            assert [x["id"] for x in c.get("/runs").json()["runs"]] == [run_id]
            profile = c.get(f"/runs/{run_id}/profile")
            assert profile.status_code == 200
            assert "agents" in profile.json()
            # the counts span every agent's runs: an operator reads them, the agent may not
            assert c.get("/metrics").status_code == 403
            operator = create_token(daemon.engine, None, scope="operator")
            metrics = c.get(
                "/metrics?format=json", headers={"Authorization": f"Bearer {operator}"}
            )
            assert metrics.json()["runs"] == 1
    finally:
        daemon.close()
    stored = Store(open_engine(settings.database_url)).get_run(run_id)
    assert stored.held_out and is_held_out(stored.seed, settings.held_out_fraction)


def test_a_nightly_run_produces_the_suite_and_the_matrix_whose_s_fills_the_profile(
    db_url: str, tmp_path: Path
) -> None:
    """Acceptance of issue 14: the nightly job runs the suite, then the matrix over the same
    agents on a held-out seed, linked to it; the suite's profile takes S from the matrix."""
    from harness.config.workspace import Workspace
    from harness.matrix.runs import stored_summary
    from reports import build_profile
    from reports.present import headlines

    settings = settings_for(tmp_path, db_url)
    settings = replace(settings, agents={
        "bot": AgentConfig(name="bot", adapter="reference", policy="habit"),
    })
    ws = Workspace.open(settings)
    # in the daemon's process on PostgreSQL too (test_nightly_matrix_queue: for the workers)
    ctx = DaemonContext(settings, ws.store, ws.ledger, matrix_items=4, matrix_samples=2,
                        matrix_queue=False)
    sched = DaemonScheduler(ws.engine, ctx, expire_every=None, misfire_grace_time=None)
    sched.start(paused=True)
    sched.scheduler.modify_job("nightly:bot", next_run_time=dt.datetime.now(dt.UTC))
    sched.resume()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runs = ws.store.list_runs()
            if len(runs) == 2 and all(r.status == "complete" for r in runs):
                break
            time.sleep(0.1)
    finally:
        sched.shutdown()
    by_suite = {r.suite: r for r in ws.store.list_runs()}
    assert set(by_suite) == {"quick", "matrix"}
    suite, matrix = by_suite["quick"], by_suite["matrix"]
    assert suite.status == matrix.status == "complete"
    assert suite.held_out and matrix.held_out
    assert is_held_out(matrix.seed, settings.held_out_fraction)
    summary = stored_summary(ws.store, matrix.id, n_boot=200).to_dict()
    assert summary["accompanies"] == suite.id and summary["agents"] == ["bot"]
    assert matrix.id == f"{suite.id}-matrix"
    assert summary["n_items"] == 4 and summary["cells"][0]["n"] == 4
    assert ws.ledger.verify() == []

    profile = build_profile(ws.store, suite.id, n_boot=200)
    doc = profile.to_json()
    skill = doc["agents"]["bot"]["agent_prediction_skill"]
    assert skill["available"] is True and skill["matrix_run"] == matrix.id
    cell = summary["cells"][0]
    assert skill["self"]["n"] == 4 and skill["value"] == cell["skill"]["value"]
    assert skill["others"]["n_targets"] == 0
    (headline,) = headlines(profile)
    assert headline.skill.startswith("self ")
    ws.close()


def test_the_profile_says_why_s_is_not_measured_without_a_matrix(
    db_url: str, tmp_path: Path
) -> None:
    from harness.config.workspace import Workspace
    from reports import build_profile
    from reports.present import headlines

    settings = settings_for(tmp_path, db_url)
    ws = Workspace.open(settings)
    run_id = DaemonContext(settings, ws.store).plan_run(suite="quick", references=["oracle"])
    DaemonContext(settings, ws.store).execute(run_id)
    profile = build_profile(ws.store, run_id, n_boot=200)
    doc = profile.to_json()
    skill = doc["agents"]["ref:oracle"]["agent_prediction_skill"]
    assert skill["available"] is False and "no matrix run" in skill["reason"]
    (headline,) = headlines(profile)
    assert headline.skill.startswith("not measured: no matrix run accompanies this run")
    (compact,) = headlines(profile, with_ci=False)
    assert compact.skill == "not measured"
    ws.close()


@pytest.mark.parametrize(
    ("field", "days"),
    [
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("*/2", "sun,tue,thu,sat"),
        ("5-7", "sun,fri,sat"),
        ("MON-fri", "mon,tue,wed,thu,fri"),
        ("1,3", "mon,wed"),
        ("*", "*"),
    ],
)
def test_crontab_day_of_week_counts_from_sunday(field: str, days: str) -> None:
    from harness.daemon.scheduler import crontab_weekdays

    assert crontab_weekdays(field) == days


def test_weekday_schedule_fires_monday_to_friday() -> None:
    """``1-5`` is Monday to Friday, as in crontab (APScheduler 3's own from_crontab reads it
    from Monday = 0, i.e. Tuesday to Saturday)."""
    import datetime as dt

    from harness.daemon.scheduler import crontab

    trigger = crontab("30 2 * * 1-5")
    fired = []
    now = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)  # a Sunday
    for _ in range(6):
        now = trigger.get_next_fire_time(None, now + dt.timedelta(seconds=1))
        fired.append(now.strftime("%a %H:%M"))
    assert fired == ["Mon 02:30", "Tue 02:30", "Wed 02:30", "Thu 02:30", "Fri 02:30", "Mon 02:30"]
    for bad in ("30 2 * * 8", "30 2 * * 5-1", "30 2 * *", "30 2 * * mon/0"):
        with pytest.raises(ValueError):
            crontab(bad)


def test_a_scheduled_run_names_the_configuration_key_it_refuses(
    db_url: str, tmp_path: Path
) -> None:
    """A nightly run planned from the configuration names the configuration's key, not a
    command-line flag, when a module or agent is unknown; nothing is stored."""
    from harness.config.workspace import Workspace
    from mindledger.errors import ConfigError, InputError

    settings = settings_for(tmp_path, db_url)
    ws = Workspace.open(settings)
    ctx = DaemonContext(settings, ws.store)
    with pytest.raises(InputError) as bad_module:
        ctx.plan_run(suite="quick", references=["oracle"], ablate=["no-such-module"])
    with pytest.raises(ConfigError) as bad_agent:
        ctx.plan_run(suite="quick", agents=["nobody"])
    assert str(bad_module.value).startswith("schedule.ablate: unknown module 'no-such-module'")
    assert bad_agent.value.key == "agents" and "nobody" in str(bad_agent.value)
    assert ws.store.list_runs() == []
    ws.close()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "from 0.1 to 86400"),
        ("-1", "from 0.1 to 86400"),
        ("true", "got True"),
        ("'2'", "got '2'"),
        ("1e9", "from 0.1 to 86400"),
    ],
)
def test_every_seconds_is_validated(tmp_path: Path, value: str, says: str) -> None:
    from mindledger.errors import ConfigError

    (tmp_path / "mindledger.toml").write_text(f"[schedule]\nevery_seconds = {value}\n")
    with pytest.raises(ConfigError, match=r"schedule\.every_seconds") as caught:
        load_settings(None, env={}, cwd=tmp_path)
    assert says in str(caught.value) and "for tests" in str(caught.value)


def test_every_seconds_fires_the_nightly_job_that_often_instead_of_by_cron(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The test-only acceleration: ``[schedule] every_seconds = 0.2`` replaces the cron
    expression, so the nightly job fires again and again within seconds; without it the job
    keeps its cron trigger."""
    (tmp_path / "mindledger.toml").write_text(
        '[agents.bot]\nadapter = "reference"\npolicy = "oracle"\n'
        '[schedule]\ncron = "0 3 * * *"\nevery_seconds = 0.2\n'
    )
    loaded = load_settings(None, env={}, cwd=tmp_path, flags={"db_url": sqlite_url})
    assert loaded.schedule_every == 0.2 and loaded.schedule == "0 3 * * *"
    assert loaded.sources["schedule_every"] == str(tmp_path / "mindledger.toml")
    assert loaded.public_dict()["schedule_every"] == 0.2
    store = Store(open_engine(loaded.database_url))
    sched = scheduler(loaded, store)
    ctx = sched.context
    assert isinstance(ctx, RecordingContext)
    sched.start()
    try:
        deadline = time.monotonic() + 30
        while len(ctx.calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        (job,) = sched.jobs()
        assert job["trigger"].startswith("interval[")
    finally:
        sched.shutdown()
    assert len(ctx.calls) >= 3 and set(ctx.calls) == {("quick", ("bot",))}
    # back to the cron expression: the stored job's trigger is replaced
    cron = scheduler(replace(loaded, schedule_every=None), store)
    cron.start(paused=True)
    (job,) = cron.jobs()
    assert job["trigger"].startswith("cron[") and job["next_run_time"].endswith("03:00:00+00:00")
    cron.shutdown()
    store.engine.dispose()


def test_a_failed_nightly_run_is_marked_interrupted_once_the_database_takes_it(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The write that marks a failed run ``interrupted`` is refused by what failed the run
    (here twice, as a full disk refuses it): it is tried again until the database takes it,
    and never once the daemon stops (the next start's recovery marks the run then)."""
    import sqlalchemy as sa

    from harness.config.workspace import Workspace

    settings = settings_for(tmp_path, sqlite_url)
    ws = Workspace.open(settings)
    ctx = DaemonContext(settings, ws.store)
    run_id = ctx.plan_run(suite="smoke", references=["oracle"])
    assert ws.store.transition_run(run_id, "running")
    real = ws.store.transition_run
    refusals = [sa.exc.OperationalError("UPDATE runs", {}, Exception("database or disk is full"))] * 2

    def refuse_then_take(*args: object, **kwargs: object) -> bool:
        if refusals:
            raise refusals.pop()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ws.store, "transition_run", refuse_then_take)
    ctx.interrupt_patiently(run_id)
    assert ws.store.get_run(run_id).status == "interrupted"
    said = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
    assert len(said) == 2 and "database or disk is full" in said[0]

    # a daemon stopping: one refusal, and the run is left for the next start
    other = ctx.plan_run(suite="smoke", references=["oracle"])
    assert real(other, "running")
    refusals.extend([sa.exc.OperationalError("UPDATE runs", {}, Exception("locked"))] * 50)
    ctx.stopping.set()
    ctx.interrupt_patiently(other)
    assert ws.store.get_run(other).status == "running" and len(refusals) == 49
    ws.close()


def test_a_finished_runs_last_log_line_says_what_failed(
    tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The daemon's line at the end of a run names its trials and whose failed, so that a log
    read in the morning says how the night went without a query."""
    import sys

    from harness.config.workspace import Workspace

    settings = settings_for(tmp_path, sqlite_url)
    garbage = AgentConfig(name="brokenbot", adapter="command",
                          command=(sys.executable, "-c", "print('hello, not json')"))
    settings = replace(settings, agents={"brokenbot": garbage})
    ws = Workspace.open(settings)
    ctx = DaemonContext(settings, ws.store)
    run_id = ctx.plan_run(suite="smoke", agents=["brokenbot"], references=["oracle"])
    with caplog.at_level(logging.INFO, logger="mindledger.daemon"):
        ctx.execute(run_id)
    last = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"run {run_id}")]
    failed = {agent: c.failed for agent, c in ws.store.failure_counts([run_id])[run_id].items()}
    broken = {a: n for a, n in failed.items() if n}
    assert set(broken) >= {"brokenbot"} and failed["ref:oracle"] == 0
    trials = sum(c.trials for c in ws.store.failure_counts([run_id])[run_id].values())
    who = ", ".join(f"{a} {n}" for a, n in sorted(broken.items()))
    assert last[-1] == (
        f"run {run_id}: complete: {trials} trials, {sum(broken.values())} failed ({who})"
    )
    ws.close()
