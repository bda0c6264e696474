"""Snapshot tests (pytest-textual-snapshot) of every dashboard screen, over the deterministic
database of ``conftest.nightly`` (seeded draws, a frozen clock, seeded ledger salts) at a fixed
terminal size. Nothing on these screens depends on the wall clock or the machine: the schedule
is computed from an injected clock, the queue of the PostgreSQL case is injected data.

Update after an intended change of the screens: ``pytest tests/tui/test_tui_snapshots.py
--snapshot-update``, then look at the SVGs in ``__snapshots__/``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from harness.cli.dashboard_cmd import queue_reader, schedule_reader
from harness.config.settings import AgentConfig, load_settings
from harness.matrix.runs import MatrixOptions
from tui import DashboardApp, DashboardSource
from tui.depth_view import depth_curve
from tui.operations import QueueBatch, QueueSnapshot, QueueWorker
from tui.screens import CompareScreen, HistoryScreen, MatrixScreen, RunScreen, TranscriptScreen
from tui.widgets import DepthChart, RunsTable, VerifyBanner

from .conftest import N_BOOT, SNAP_SIZE, TRIALS_RUN, Seeded

Snap = Callable[..., bool]


@pytest.fixture(autouse=True)
def colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rendering on every machine: a user's NO_COLOR (read when an App is made) would
    turn every snapshot grey."""
    monkeypatch.delenv("NO_COLOR", raising=False)


async def until(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 120) -> None:
    """Let the app run until ``condition`` holds (workers report when they report), then let
    it settle."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the app did not get there in time"
        await pilot.pause(0.05)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def rows(pilot: Pilot[None], selector: str) -> int:
    try:
        return pilot.app.screen.query_one(selector, DataTable).row_count
    except Exception:  # not mounted yet
        return 0


def text(pilot: Pilot[None], selector: str) -> str:
    try:
        return str(pilot.app.screen.query_one(selector, Static).render())
    except Exception:  # not mounted yet
        return ""


def injected_queue() -> QueueSnapshot:
    """A queue on PostgreSQL as the harness reads it: one batch stalled on a dead worker, one
    running, two queued, one failed."""
    return QueueSnapshot(
        True,
        batches=(
            QueueBatch(41, "night-4", "piper", 50, "failed", 3, None, None),
            QueueBatch(42, "night-5", "piper", 50, "doing", 1, 7, 4.0),
            QueueBatch(43, "night-5", "piper", 50, "doing", 2, 6, 95.0, stalled=True),
            QueueBatch(44, "night-5", "piper-control", 50, "todo"),
            QueueBatch(45, "night-5", "piper-control", 28, "todo"),
        ),
        workers=(
            QueueWorker(6, "2026-03-05T11:58:25+00:00", 95.0, 1),
            QueueWorker(7, "2026-03-05T11:59:56+00:00", 4.0, 1),
        ),
        stalled_after=30.0,
        now="2026-03-05T12:00:00+00:00",
    )


def make_app(nightly: Seeded, tmp_path: Path, *, queue: Any = None) -> DashboardApp:
    settings = load_settings(None, env={}, flags={"db_url": "sqlite://", "home": str(tmp_path)})
    settings = replace(settings, agents={
        n: AgentConfig(name=n, adapter="reference", policy="oracle") for n in ("piper", "wren")
    })  # fmt: skip
    source = DashboardSource(
        nightly.store, nightly.ledger, n_boot=N_BOOT, seed=1, clock=nightly.clock,
        schedule=schedule_reader(settings, nightly.store, suite="synthetic", clock=nightly.clock),
        queue=queue or queue_reader(nightly.store),
    )
    return DashboardApp(source, refresh_seconds=0, export_dir=tmp_path / "exports")


@pytest.fixture
def app(nightly: Seeded, tmp_path: Path) -> DashboardApp:
    return make_app(nightly, tmp_path)


def test_runs_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        await pilot.press("down", "space", "down")  # night-3 marked, night-2 highlighted
        await until(pilot, lambda: "marked" in text(pilot, "#runs-status"))

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


async def _open_run(pilot: Pilot[None], run_id: str) -> None:
    await until(pilot, lambda: rows(pilot, "#runs") == 6)
    app = pilot.app
    assert isinstance(app, DashboardApp)
    app.push_screen(RunScreen(app.source, run_id, export_dir=app.export_dir))
    await until(pilot, lambda: rows(pilot, "#agents") == 3)


@pytest.mark.parametrize("width", [160, 120])
def test_run_screen_shows_every_column(snap_compare: Snap, app: DashboardApp, width: int) -> None:
    """night-4's reference has a D50 that is not estimable for a long reason: the cell says
    so in short (†) and the reason is on the line under the table, so the true-belief
    control column stays on the screen at 160 and at 120 columns."""
    async def run_before(pilot: Pilot[None]) -> None:
        await _open_run(pilot, "night-4")
        table = pilot.app.screen.query_one("#agents", DataTable)
        assert table.virtual_size.width <= width
        assert "flat D50: not estimable (accuracy does not decline" in text(
            pilot, "#agents-notes")
        assert text(pilot, "#run-verdict").startswith("piper (agent under test) is valid")

    assert snap_compare(app, terminal_size=(width, SNAP_SIZE[1]), run_before=run_before)


def test_run_screen_opens_with_the_verdict(snap_compare: Snap, app: DashboardApp) -> None:
    """run-a: the verdict first (piper, judged against its control and its module; the
    invalid reference in a few words among the references); the reference's INVALID paragraph
    is nowhere on the screen until it is chosen (then in its detail only)."""
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        app = pilot.app
        assert isinstance(app, DashboardApp)
        app.push_screen(RunScreen(app.source, "run-a", export_dir=app.export_dir))
        await until(pilot, lambda: rows(pilot, "#agents") == 4)
        verdict = text(pilot, "#run-verdict")
        assert verdict.startswith("piper (agent under test) is valid")
        assert "Against its control piper-control" in verdict
        assert "not-reality: diagnosed as expected (marked INVALID by the controls)" in verdict
        on_screen = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert on_screen.count("INVALID: not-reality") == 0

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_help_screen_of_the_run_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await _open_run(pilot, "night-4")
        await pilot.press("question_mark")
        await until(pilot, lambda: text(pilot, "#help-text").startswith("Run night-4"))

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_run_screen_charts_the_highlighted_agents_depth_curve(
    snap_compare: Snap, app: DashboardApp
) -> None:
    """Beside the detail, the depth chart follows the highlighted agent: night-4's control
    (8 items per depth: hollow points, no interval bars; its reality check at R0)."""
    async def run_before(pilot: Pilot[None]) -> None:
        await _open_run(pilot, "night-4")
        assert text(pilot, "#depth-chart").startswith("Accuracy by depth: piper\n")
        await pilot.press("down")
        await until(pilot, lambda: text(pilot, "#depth-chart").startswith(
            "Accuracy by depth: piper-control\n"))
        chart = text(pilot, "#depth-chart")
        assert "R0" in chart and "R5" in chart and "○" in chart and "◆" in chart

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


class ChartHost(App[None]):
    """The depth chart alone, given a curve with intervals (its own widget test)."""

    def compose(self) -> ComposeResult:
        yield DepthChart(id="depth-chart")

    def on_mount(self) -> None:
        self.query_one(DepthChart).curve = depth_curve("ada", {
            "valid": True,
            "reality_check": {"value": 1.0, "ci": [0.89, 1.0], "n": 30, "status": "estimated"},
            "accuracy_by_depth": {belief: {
                f"R{d}": {"value": v, "ci": [max(v - 0.15, 0), min(v + 0.12, 1)], "n": 30,
                          "depth_n": d, "status": "estimated"} for d, v in values.items()}
                for belief, values in (("false", {1: 0.93, 2: 0.8, 3: 0.55, 4: 0.3, 5: 0.2}),
                                       ("true", {1: 1.0, 2: 0.97, 3: 0.97, 4: 0.9, 5: 0.93}))},
        })


def test_depth_chart_with_intervals(snap_compare: Snap) -> None:
    assert snap_compare(ChartHost(), terminal_size=(70, 20))


def test_ledger_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        await pilot.press("l")
        await until(pilot, lambda: bool(pilot.app.screen.query(VerifyBanner))
                    and text(pilot, "VerifyBanner").startswith("Ledger intact"))

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_compare_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        assert isinstance(pilot.app, DashboardApp)
        pilot.app.push_screen(CompareScreen(pilot.app.source, "night-3", "night-4"))
        await until(pilot, lambda: rows(pilot, "#compare") > 0)

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_history_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        assert isinstance(pilot.app, DashboardApp)
        pilot.app.push_screen(HistoryScreen(pilot.app.source, "piper"))
        await until(pilot, lambda: rows(pilot, "#history") > 0)
        await pilot.press("down")  # false-belief accuracy, flagged on night-4
        await until(pilot, lambda: text(pilot, "#history-figure").startswith("false-belief"))

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_schedule_screen(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        await pilot.press("s")
        await until(pilot, lambda: rows(pilot, "#schedule") == 2)

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_queue_screen_on_sqlite(snap_compare: Snap, app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        await pilot.press("w")
        await until(pilot, lambda: text(pilot, "#queue-status").startswith("no queue"))

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_queue_screen_with_a_stalled_batch(
    snap_compare: Snap, nightly: Seeded, tmp_path: Path
) -> None:
    app = make_app(nightly, tmp_path, queue=injected_queue)

    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 6)
        await pilot.press("w")
        await until(pilot, lambda: rows(pilot, "#batches") == 5)

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=run_before)


# -- the drill-down: a run's agent → its trials → one transcript -------------------------------


@pytest.fixture
def trials_app(nightly_with_trials: Seeded, tmp_path: Path) -> DashboardApp:
    return make_app(nightly_with_trials, tmp_path)


async def _open_trials(pilot: Pilot[None]) -> None:
    """From the runs screen, by keys: the newest run (quick-1), then its agent under test's
    trials."""
    await until(pilot, lambda: rows(pilot, "#runs") == 7)
    await pilot.press("enter")
    await until(pilot, lambda: rows(pilot, "#agents") == 2)
    assert isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.run_id == TRIALS_RUN
    await pilot.press("enter")
    await until(pilot, lambda: rows(pilot, "#trials") == 16)


@pytest.mark.parametrize("width", [160, 80])
def test_trials_screen(snap_compare: Snap, trials_app: DashboardApp, width: int) -> None:
    """piper's 16 trials in quick-1: right, wrong (item 2, highlighted), unparsed, error."""
    async def run_before(pilot: Pilot[None]) -> None:
        await _open_trials(pilot)
        await pilot.press("down")

    assert snap_compare(trials_app, terminal_size=(width, SNAP_SIZE[1]), run_before=run_before)


@pytest.mark.parametrize("width", [160, 80])
def test_transcript_screen(snap_compare: Snap, trials_app: DashboardApp, width: int) -> None:
    """The first wrong trial whole (item 2): the answer beside the expected one, the cause,
    and its three messages, the answer's tool call indented."""
    async def run_before(pilot: Pilot[None]) -> None:
        await _open_trials(pilot)
        await pilot.press("i", "enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen)
                    and len(pilot.app.screen.query(".message")) == 3)

    assert snap_compare(trials_app, terminal_size=(width, SNAP_SIZE[1]), run_before=run_before)


# -- the matrix screen: a small matrix run of the reference agents ------------------------------


@pytest.fixture
def matrix_app(fixed_secrets: None, tmp_path: Path) -> Iterator[DashboardApp]:
    from harness.agent.agents import ReferenceAgent
    from harness.config.workspace import Workspace
    from harness.matrix.runs import create_matrix_run, run_matrix
    from harness.run.build import plan_agents

    policies = ("habit", "projection", "clairvoyant")
    settings = load_settings(None, env={}, flags={
        "db_url": f"sqlite:///{tmp_path / 'm.db'}", "home": str(tmp_path / "home")})
    ws = Workspace.open(settings)
    planned = plan_agents(settings, agents=(), references=policies, no_control=True)
    run_id, _ = create_matrix_run(
        ws.store,
        settings,
        planned=planned,
        run_id="matrix-1",
        options=MatrixOptions(n_items=20, samples=3, seed=11, conditions=("zero-shot",)),
    )
    items = list(ws.store.run_items(run_id))
    agents = {f"ref:{p}": ReferenceAgent(f"ref:{p}", p, seed=11) for p in policies}
    asyncio.run(
        run_matrix(
            agents,
            items,
            ws.ledger,
            store=ws.store,
            run_id=run_id,
            options=MatrixOptions(samples=3, n_boot=N_BOOT, conditions=("zero-shot",)),
        )
    )
    source = DashboardSource(ws.store, n_boot=N_BOOT, seed=0)
    yield DashboardApp(source, refresh_seconds=0, export_dir=tmp_path / "exports")
    ws.close()


def test_matrix_screen(snap_compare: Snap, matrix_app: DashboardApp) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await until(pilot, lambda: rows(pilot, "#runs") == 1)
        assert isinstance(pilot.app, DashboardApp)
        pilot.app.push_screen(MatrixScreen(pilot.app.source, "matrix-1"))
        await until(pilot, lambda: rows(pilot, "#matrix") == 3)
        # its own help, then back
        await pilot.press("question_mark")
        await until(pilot, lambda: text(pilot, "#help-text").startswith("Matrix matrix-1 — keys"))
        assert "c Next condition" in " ".join(text(pilot, "#help-text").split())
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, MatrixScreen))

    assert snap_compare(matrix_app, terminal_size=SNAP_SIZE, run_before=run_before)


def test_the_runs_table_is_sorted_and_marked(app: DashboardApp) -> None:
    """What the runs snapshot shows, said in words too (a snapshot alone hides the why)."""

    async def go() -> list[str]:
        async with app.run_test(size=SNAP_SIZE) as pilot:
            await until(pilot, lambda: rows(pilot, "#runs") == 6)
            table = app.screen.query_one(RunsTable)
            return [r.key for r in table.runs]

    assert asyncio.run(go()) == ["night-4", "night-3", "night-2", "night-1", "run-a", "run-empty"]
