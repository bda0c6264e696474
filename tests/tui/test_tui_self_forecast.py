"""Self-forecasts on the dashboard (issue 29): the agent panel's lines, and the history
screen's table of forecast bands beside outcomes with the confidently wrong runs in red."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from textual.widgets import DataTable

from reports.history import DEFAULT_RULE, AgentHistory, RunRef
from reports.model import RunProfile
from reports.profile import profile_from_data
from reports.self_forecast import forecast_line, with_self_forecasts
from reports.self_forecast_render import WRONG
from reports.synthetic import synthetic_run
from tests.reports.forecast_states import q, runs, state
from tui.history_view import FORECAST_COLUMNS, history_view
from tui.screens import HistoryScreen
from tui.source import DashboardSource
from tui.state import agent_views

from .conftest import SNAP_SIZE, Seeded, synthetic_agents
from .test_tui_snapshots import make_app, rows, text, until


@pytest.fixture(scope="module")
def profile() -> RunProfile:
    run = synthetic_run(np.random.default_rng(7), synthetic_agents(), stories=4, games=0)
    return profile_from_data(run.run_data("run-a"), seed=1, n_boot=200)


def _history() -> AgentHistory:
    order = runs(3)
    refs = tuple(
        RunRef(r, f"2026-11-0{i + 1}T03:00:00+00:00", "quick", True, True)
        for i, r in enumerate(order)
    )
    lines = tuple(forecast_line(s) for s in (
        state(order[0], "d50", q(2.5, 0.4), 2.6, seq=0),
        state(order[1], "d50", q(2.5, 0.4), 3.3, seq=1),  # above its 90% interval
        state(order[2], "d50", q(2.6, 0.4), 2.5, seq=2),
        state(order[2], "S", None, None, status="committed", seq=3),
    ))  # fmt: skip
    return AgentHistory("piper", DEFAULT_RULE, refs, (), lines)


def test_the_history_view_lists_bands_newest_first_and_marks_the_wrong() -> None:
    view = history_view(_history())
    assert [r[0] for r in view.forecasts] == ["run-02", "run-02", "run-01", "run-00"]
    assert [r[1] for r in view.forecasts] == ["d50", "S", "d50", "d50"]
    assert view.forecast_wrong == (False, False, True, False)
    wrong = view.forecasts[2]
    assert len(wrong) == len(FORECAST_COLUMNS)
    assert wrong[1:6] == ("d50", "[2.37, 2.63]", "[2.1, 2.9]", "2.5", "3.3")
    assert wrong[6].startswith(WRONG)
    assert view.forecasts[1][1] == "S" and view.forecasts[1][6] == "not revealed"
    assert any(n.startswith("Self-forecasts: 4, 1 ") for n in view.notes)
    plain = history_view(AgentHistory("piper", DEFAULT_RULE, (), ()))
    assert plain.forecasts == () and not any("Self-forecast" in n for n in plain.notes)


def test_the_agent_panel_shows_the_section(profile: RunProfile) -> None:
    order = [*runs(4), profile.run.id]
    fs = [state(r, "d50", q(2.5, 0.4), 2.55, seq=i) for i, r in enumerate(order)]
    with_sf = with_self_forecasts(profile, {"piper": fs}, runs_by_agent={"piper": order})
    views = {v.name: v for v in agent_views(with_sf)}
    lines = views["piper"].self_forecast
    assert lines[0].startswith("Self-forecasts") and "5 forecasts of 5 runs" in lines[0]
    assert any("skill vs naive (quantile_score)" in x for x in lines)
    assert any(x.strip().startswith("d50: 50% [2.37, 2.63]") for x in lines)
    assert views["piper-control"].self_forecast == ()
    assert all(v.self_forecast == () for v in agent_views(profile))


async def test_the_history_screen_shows_the_forecast_table(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(seeded, tmp_path)
    monkeypatch.setattr(app.source, "history", lambda agent: _history())
    async with app.run_test(size=SNAP_SIZE) as pilot:
        app.push_screen(HistoryScreen(app.source, "piper"))
        await until(pilot, lambda: rows(pilot, "#forecasts") == 4)
        table = app.screen.query_one("#forecasts", DataTable)
        assert table.display
        cells = table.get_row_at(2)
        assert [str(c) for c in cells][:2] == ["run-01", "d50"]
        assert "bold red" in str(cells[6].style) or any(
            "red" in str(span.style) for span in cells[6].spans
        )
        ok = table.get_row_at(0)
        assert not any("red" in str(span.style) for span in ok[6].spans)
        assert "Self-forecasts" in text(pilot, "#forecasts-title")


def test_the_reader_says_whether_the_ledger_has_forecasts(seeded: Seeded) -> None:
    """The dashboard reads a run through the Reader, and through the Store (which reads the
    forecasts) only when the ledger has some."""
    import sqlalchemy as sa

    from ledger.reader import Reader

    with seeded.store.engine.connect() as conn:
        kinds = {k for (k,) in conn.execute(sa.text("SELECT DISTINCT kind FROM ledger_entries"))}
    assert kinds and "forecast" not in kinds
    reader = Reader.open(str(seeded.store.engine.url))
    assert reader is not None
    try:
        assert all(reader.has_entries(k) for k in kinds)
        assert not reader.has_entries("forecast")
        source = DashboardSource(seeded.store, None, n_boot=200, seed=1, reader=reader)
        assert source._has_forecasts() is False
        assert DashboardSource(seeded.store)._has_forecasts() is False  # no reader
    finally:
        reader.close()
