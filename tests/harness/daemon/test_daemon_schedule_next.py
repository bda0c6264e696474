"""Issue 29: the nightly runs announced ahead of time. ``GET /schedule/next``'s run id is the id
the nightly job uses when it fires; the announcement survives a restart (it is derived from the
stored job's next fire time); the figures an agent can forecast follow the suite and its
ablations."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config.schedule_config import MatrixSchedule
from harness.daemon.scheduler import DaemonScheduler, stored_announcements
from harness.run.forecasting import forecastable, scheduled_run_id
from ledger.db import open_engine
from ledger.store import Store
from mindledger.forecasts import figure
from tests.harness.daemon.test_daemon_scheduler import RecordingContext, settings_for


def test_the_scheduled_run_id_is_the_fire_time_and_a_digest_of_the_job() -> None:
    at = dt.datetime(2026, 12, 4, 3, 0, tzinfo=dt.UTC)
    rid = scheduled_run_id("nightly:bot", at)
    assert rid.startswith("20261204-030000-") and len(rid) == len("20261204-030000-") + 6
    # the same job and time, however the time is written: the same id
    assert scheduled_run_id("nightly:bot", at.astimezone(dt.timezone(dt.timedelta(hours=5)))) == rid
    assert scheduled_run_id("nightly:bot", at + dt.timedelta(days=1)) != rid
    assert scheduled_run_id("nightly:other", at) != rid


def test_forecastable_figures_follow_the_suite_the_matrix_and_the_ablations(
    sqlite_url: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, sqlite_url, "bot")
    settings = replace(settings, schedule_ablations={"bot": ("planner",)},
                       schedule_matrix=replace(MatrixSchedule(), enabled=True))  # fmt: skip
    names = forecastable(settings, "quick", "bot")
    for name in (
        "false_belief_accuracy",
        "d50",
        "leakage_resistance",
        "accuracy_at_depth:R5",
        "S",
        "ablation_credit:planner",
        "change:d50",
        "change:ablation_credit:planner",
    ):
        assert name in names  # fmt: skip
    assert all(figure(n).name == n for n in names)
    assert "ablation_credit:planner" not in forecastable(settings, "quick", "other")
    off = replace(settings, schedule_matrix=replace(MatrixSchedule(), enabled=False))
    assert "S" not in forecastable(off, "quick", "bot")
    # a suite without false-belief questions has none of the NestToM figures
    seats = forecastable(settings, "seats", "bot")
    assert "d50" not in seats and "S" in seats


def test_the_announcement_survives_a_restart(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, sqlite_url, "bot", "other")
    store = Store(open_engine(settings.database_url))
    first = DaemonScheduler(store.engine, RecordingContext(settings, store), expire_every=None)
    first.start(paused=True)
    announced = {a.agent: a for a in first.announcements()}
    assert set(announced) == {"bot", "other"}
    bot = announced["bot"]
    assert bot.fire_time.hour == 3 and bot.deadline == bot.fire_time
    assert bot.run_id == scheduled_run_id("nightly:bot", bot.fire_time)
    assert first.announced(bot.run_id) == bot
    assert [a.agent for a in first.announcements("other")] == ["other"]
    first.shutdown()

    engine = open_engine(settings.database_url)  # a restart: a fresh engine, a new scheduler
    assert stored_announcements(engine) == sorted(announced.values(),
                                                  key=lambda a: (a.fire_time, a.agent))  # fmt: skip
    second = DaemonScheduler(engine, RecordingContext(settings, Store(engine)), expire_every=None)
    second.start(paused=True)
    assert second.announced(bot.run_id) == bot
    second.shutdown()
    engine.dispose()
    store.engine.dispose()


@pytest.mark.parametrize("late_days", [0, 3])
def test_the_nightly_job_uses_the_id_it_announced(
    sqlite_url: str, tmp_path: Path, late_days: int
) -> None:
    """The job fires (on time, or three days late after downtime, its missed fires coalesced):
    the suite runs under the id announced for the fire it was due at (the one forecasts were
    committed for)."""
    settings = settings_for(tmp_path, sqlite_url, "bot")
    store = Store(open_engine(settings.database_url))
    first = DaemonScheduler(store.engine, RecordingContext(settings, store), expire_every=None,
                            misfire_grace_time=None)  # fmt: skip
    first.start(paused=True)
    due = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=1)
    due -= dt.timedelta(days=late_days)
    first.scheduler.modify_job("nightly:bot", next_run_time=due)
    (announced,) = first.announcements()
    assert announced.fire_time == due
    first.shutdown()

    ctx = RecordingContext(settings, store)
    second = DaemonScheduler(store.engine, ctx, expire_every=None, misfire_grace_time=None)
    second.start()
    try:
        deadline = time.monotonic() + 30
        while not ctx.run_ids and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        second.shutdown()
    assert ctx.run_ids == [announced.run_id]
    store.engine.dispose()


def test_a_daemon_without_a_scheduler_announces_nothing(sqlite_url: str, tmp_path: Path) -> None:
    import httpx

    from harness.daemon import BackgroundServer, build_daemon, create_token

    settings = settings_for(tmp_path, sqlite_url, "bot")
    daemon = build_daemon(settings, scheduler=False)
    token = create_token(daemon.engine, "bot")
    try:
        with BackgroundServer(daemon.app) as server:
            r = httpx.get(server.url + "/schedule/next", timeout=30,
                          headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    finally:
        daemon.close()
    assert r.status_code == 200 and r.json() == {"runs": []}
