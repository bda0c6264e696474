"""A matrix run in the dashboard: opened from the runs table, it shows skill S per predictor ×
target as a table, one condition at a time, with the highlighted cell's figures."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from harness.agent.agents import ReferenceAgent
from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import MatrixOptions, create_matrix_run, run_matrix
from harness.run.build import plan_agents
from reports.matrix_render import skill_grids, skill_text
from reports.matrix_summary import stored_summary
from tui import DashboardApp
from tui.screens import MatrixScreen, RunsScreen
from tui.source import DashboardSource
from tui.state import MATRIX_CORNER, matrix_view
from tui.widgets import RunsTable

POLICIES = ("habit", "projection", "clairvoyant", "random")
NAMES = [f"ref:{p}" for p in POLICIES]
CONDITIONS = ("zero-shot", "simulate")
N_BOOT = 100


async def _until(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 60) -> None:
    """Let the app run until ``condition`` holds (a worker's result arrives as a message some
    unbounded time after it finished on a loaded machine: wait for the effect)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the app did not get there in time"
        await pilot.pause(0.05)


def _cells(table: DataTable[Text]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.fixture
def matrix_run(tmp_path: Path) -> Iterator[tuple[Workspace, str]]:
    """A stored matrix run of the four reference agents: 12 items, K = 3, two conditions."""
    settings = load_settings(None, env={}, flags={
        "db_url": f"sqlite:///{tmp_path / 'm.db'}", "home": str(tmp_path / "home")})
    ws = Workspace.open(settings)
    planned = plan_agents(settings, agents=(), references=POLICIES, no_control=True)
    run_id, _ = create_matrix_run(
        ws.store,
        settings,
        planned=planned,
        options=MatrixOptions(n_items=12, samples=3, seed=11, conditions=CONDITIONS),
    )
    items = list(ws.store.run_items(run_id))
    agents = {n: ReferenceAgent(n, p, seed=11) for n, p in zip(NAMES, POLICIES, strict=True)}
    asyncio.run(
        run_matrix(
            agents,
            items,
            ws.ledger,
            store=ws.store,
            run_id=run_id,
            options=MatrixOptions(samples=3, n_boot=N_BOOT, conditions=CONDITIONS),
        )
    )
    assert ws.store.get_run(run_id).status == "complete"
    yield ws, run_id
    ws.close()


def test_the_view_model_has_a_grid_per_condition(matrix_run: tuple[Workspace, str]) -> None:
    ws, run_id = matrix_run
    summary: dict[str, Any] = stored_summary(ws.store, run_id, n_boot=N_BOOT).to_dict()
    view = matrix_view(summary)
    assert [g.condition for g in view.grids] == list(CONDITIONS)
    grid = view.grids[0]
    assert grid.columns == (MATRIX_CORNER, *NAMES)
    assert [r[0] for r in grid.rows] == NAMES
    cells = {(c["predictor"], c["target"]): c for c in summary["cells"]}
    # the clairvoyant → habit cell shows its S with its interval; random → random has none
    clair = cells["ref:clairvoyant", "ref:habit"]["skill"]
    shown = grid.rows[NAMES.index("ref:clairvoyant")][1 + NAMES.index("ref:habit")]
    assert shown == skill_text(skill_grids(summary)[0].cell("ref:clairvoyant", "ref:habit"))
    assert shown.startswith(f"{clair['value']:.2f}")
    assert view.title.startswith(f"Matrix run {run_id}")


async def test_a_matrix_run_opens_as_its_matrix(
    matrix_run: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, run_id = matrix_run
    source = DashboardSource(ws.store, n_boot=N_BOOT, seed=0)
    expected = matrix_view(stored_summary(ws.store, run_id, n_boot=N_BOOT, stats_seed=0))
    app = DashboardApp(source, refresh_seconds=0, export_dir=tmp_path / "exports")
    async with app.run_test(size=(180, 50)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen)
                     and app.screen.query_one(RunsTable).row_count == 1)
        app.screen.query_one(RunsTable).focus()
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, MatrixScreen))
        screen = app.screen
        table = screen.query_one("#matrix", DataTable)
        await _until(pilot, lambda: table.row_count == len(NAMES))
        assert _cells(table) == [list(r) for r in expected.grids[0].rows]
        assert [str(c.label) for c in table.columns.values()] == list(expected.grids[0].columns)
        condition = screen.query_one("#matrix-condition", Static)
        assert "zero-shot" in str(condition.render())
        detail = screen.query_one("#matrix-cell", Static)
        # the cursor starts on the first target; arrows move it and the detail follows
        assert str(detail.render()).startswith("ref:habit → ref:habit (zero-shot)")
        await pilot.press("down", "right")
        await _until(pilot, lambda: str(detail.render()).startswith(
            "ref:projection → ref:projection (zero-shot)"))
        assert "skill: " in str(detail.render())
        # c shows the next condition, same place in the grid
        await pilot.press("c")
        await _until(pilot, lambda: "simulate" in str(condition.render()))
        assert _cells(table) == [list(r) for r in expected.grids[1].rows]
        assert str(detail.render()).startswith("ref:projection → ref:projection (simulate)")
        await pilot.press("escape")
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen))
