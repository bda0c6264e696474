"""Widgets in a small host app: attributes down, messages up."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from tui.depth_view import depth_curve
from tui.state import (
    AgentView,
    ContrastRow,
    DepthRow,
    RunRow,
    VerifyView,
)
from tui.widgets import AgentDetail, DepthChart, RunsTable, VerifyBanner


def _cells(table: DataTable[Text]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _text(widget: Static) -> str:
    return str(widget.render())


class RunsHost(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.chosen: list[str] = []

    def compose(self) -> ComposeResult:
        yield RunsTable(id="runs")

    def on_runs_table_chosen(self, message: RunsTable.Chosen) -> None:
        self.chosen.append(message.run_id)


def _run(key: str, status: str = "complete") -> RunRow:
    return RunRow(key, (key, "quick", "1", "dev", status, "2026-03-01 12:00:00", "1", "4", "x"))


async def test_runs_table_shows_rows_keeps_the_cursor_and_posts_the_chosen_run() -> None:
    app = RunsHost()
    async with app.run_test(size=(120, 24)) as pilot:  # every column fits
        table = app.query_one(RunsTable)
        table.runs = (_run("b"), _run("a"))
        await pilot.pause()
        assert [r[0] for r in _cells(table)] == ["b", "a"]
        # every column is as wide as its widest cell from the first render on
        assert [c.width for c in table.columns.values()] == [3, 5, 4, 8, 8, 19, 6, 6, 8]
        table.focus()
        await pilot.press("down")
        # a refresh adds a newer run above: the cursor stays on run "a"
        table.runs = (_run("c"), _run("b"), _run("a", "failed"))
        await pilot.pause()
        assert table.cursor_row == 2 and _cells(table)[2][4] == "failed"
        await pilot.press("enter")
        await pilot.pause()
        assert app.chosen == ["a"]


class DetailHost(App[None]):
    def compose(self) -> ComposeResult:
        yield AgentDetail()


def _agent(valid: bool) -> AgentView:
    return AgentView(
        name="shortcut",
        role="reference",
        valid=valid,
        validity="VALID: fine" if valid else "INVALID: true-belief control accuracy is 3.1%",
        d50="> 5 (beyond, n=56)",
        leakage_resistance="96.4% [87.9, 99.0] n=56",
        true_belief="3.1% [0.9, 10.7] n=64",
        false_belief="94.6% n=56",
        n="120 trials, 0 API errors",
        depth_rows=(DepthRow("R0", "—", "100.0% n=8"), DepthRow("R1", "87.5% n=8", "—")),
        contrasts=(ContrastRow("agent − control", "D50", "+1.14 n=52"),),
    )


async def test_agent_detail_renders_the_agent_it_is_given_validity_first() -> None:
    app = DetailHost()
    async with app.run_test() as pilot:
        detail = app.query_one(AgentDetail)
        validity = detail.query_one("#validity", Static)
        assert _text(validity) == "Select an agent."
        detail.agent = _agent(valid=False)
        await pilot.pause()
        assert _text(validity).startswith("INVALID: true-belief")
        assert validity.has_class("-invalid") and not validity.has_class("-valid")
        metrics = _text(detail.query_one("#metrics", Static))
        assert "shortcut (reference)" in metrics and "> 5 (beyond, n=56)" in metrics
        assert _cells(detail.query_one("#depth", DataTable)) == [
            ["R0", "—", "100.0% n=8"],
            ["R1", "87.5% n=8", "—"],
        ]
        assert _cells(detail.query_one("#contrasts", DataTable)) == [
            ["agent − control", "D50", "+1.14 n=52"]
        ]
        detail.agent = _agent(valid=True)
        await pilot.pause()
        assert validity.has_class("-valid") and not validity.has_class("-invalid")
        detail.agent = None
        await pilot.pause()
        assert detail.query_one("#depth", DataTable).row_count == 0


class BannerHost(App[None]):
    def compose(self) -> ComposeResult:
        yield VerifyBanner("…")


async def test_verify_banner_says_intact_or_names_the_first_bad_entry() -> None:
    app = BannerHost()
    async with app.run_test() as pilot:
        banner = app.query_one(VerifyBanner)
        banner.verification = VerifyView(True, "Ledger intact: 3 entries, head 3 sha256:ab…")
        await pilot.pause()
        assert _text(banner).startswith("Ledger intact") and banner.has_class("-ok")
        banner.verification = VerifyView(
            False, "LEDGER BROKEN at entry 2: hash mismatch", ("entry 2: hash mismatch: x",)
        )
        await pilot.pause()
        assert _text(banner) == "LEDGER BROKEN at entry 2: hash mismatch\nentry 2: hash mismatch: x"
        assert banner.has_class("-broken") and not banner.has_class("-ok")


class ChartHost(App[None]):
    def compose(self) -> ComposeResult:
        yield DepthChart(id="chart")


async def test_depth_chart_draws_the_curve_it_is_given_and_says_when_invalid() -> None:
    acc = {"false": {"R1": {"value": 0.8, "ci": [0.6, 0.9], "n": 30, "depth_n": 1}},
           "true": {"R1": {"value": 1.0, "ci": [0.9, 1.0], "n": 30, "depth_n": 1}}}
    app = ChartHost()
    async with app.run_test() as pilot:
        chart = app.query_one(DepthChart)
        assert _text(chart) == "Accuracy by depth: select an agent."
        chart.curve = depth_curve("ada", {"accuracy_by_depth": acc})
        await pilot.pause()
        lines = _text(chart).splitlines()
        assert lines[0] == "Accuracy by depth: ada"
        assert lines[-4].strip() == "└───────" and lines[-3].split() == ["R1"]  # depth axis
        assert sum(line.count("●") for line in lines[1:-3]) == 1  # the 80% point
        assert next(i for i, line in enumerate(lines) if "●" in line) == 3  # 100%, 90%, 80%
        chart.curve = depth_curve("ada", {"accuracy_by_depth": acc, "valid": False})
        await pilot.pause()
        assert _text(chart).splitlines()[0] == (
            "Accuracy by depth: ada  INVALID: false belief not counted")
        chart.curve = depth_curve("bob", {})
        await pilot.pause()
        assert _text(chart) == "Accuracy by depth: bob\nno accuracy by depth in this run"
