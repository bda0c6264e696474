"""The daemon's scheduler: jobs stored in the database survive a restart, missed runs coalesce,
and a run-now request through the API plans and completes a held-out run."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from harness.daemon import (
    BackgroundServer,
    DaemonContext,
    DaemonScheduler,
    build_daemon,
    create_token,
)
from harness.seeds import is_held_out
from harness.settings import AgentConfig, Settings, load_settings
from ledger.db import open_engine
from ledger.store import Store


def settings_for(tmp_path: Path, db_url: str, *names: str) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path)})
    agents = {n: AgentConfig(name=n, adapter="reference", policy="oracle") for n in names}
    return replace(settings, agents=agents)


class RecordingContext(DaemonContext):
    """Records the suites the jobs would run instead of running them."""

    def __init__(self, settings: Settings, store: Store):
        super().__init__(settings, store)
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def run_suite(self, *, suite: str, agents: Sequence[str]) -> str:
        self.calls.append((suite, tuple(agents)))
        return "recorded"


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


def test_runs_missed_during_downtime_coalesce_into_one(db_url: str, tmp_path: Path) -> None:
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
    (job,) = second.jobs()
    assert dt.datetime.fromisoformat(job["next_run_time"]) > dt.datetime.now(dt.UTC)
    second.shutdown()
    store.engine.dispose()


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
            assert c.get("/metrics").json()["runs"] == 1
    finally:
        daemon.close()
    stored = Store(open_engine(settings.database_url)).get_run(run_id)
    assert stored.held_out and is_held_out(stored.seed, settings.held_out_fraction)
