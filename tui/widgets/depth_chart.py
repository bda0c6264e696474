"""The depth curve as a small chart: one agent's false- and true-belief accuracy at each depth,
with its 95% intervals as bars (:mod:`tui.depth_view` lays it out)."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tui.depth_view import MARKS, DepthCurve, chart_rows

__all__ = ["DepthChart", "chart_text"]

STYLES = {
    "false": "bold #56B4E9",
    "true": "#E69F00",
    "reality": "bold #009E73",
    "threshold": "#D55E00",
    "axis": "dim",
    "": "",
}
"""Okabe–Ito colours (the marks differ in shape too: ● ▲ ◆)."""
INVALID_FALSE = "#8c8c8c"
LABEL_WIDTH = 4


def chart_text(curve: DepthCurve | None) -> Text:
    """The chart of ``curve`` as styled text (a line saying so when there is nothing to
    draw)."""
    if curve is None:
        return Text("Accuracy by depth: select an agent.", style="dim")
    title = Text(f"Accuracy by depth: {curve.agent}", style="bold")
    if not curve.valid:
        title.append("  INVALID: false belief not counted", style="bold red")
    if curve.empty:
        title.append("\nno accuracy by depth in this run", style="dim")
        return title
    out = Text()
    out.append_text(title)
    for row in chart_rows(curve):
        first = row.cells[0] if row.cells else ("", "")
        axis = (
            " ┤"
            if row.label
            else " └"
            if first == ("─", "axis")
            else "  "
            if first[1] == "axis"
            else " │"
        )
        out.append("\n" + row.label.rjust(LABEL_WIDTH) + axis, style="dim")
        for char, kind in row.cells:
            style = INVALID_FALSE if kind == "false" and not curve.valid else STYLES[kind]
            out.append(char, style=style)
    out.append("\n")
    for mark, kind, label in (
        (MARKS["false"], "false", "false belief"),
        (MARKS["true"], "true", "true belief"),
        (MARKS["reality"], "reality", "R0 reality check"),
    ):
        out.append(f"{mark} ", style=STYLES[kind]).append(f"{label}  ")
    out.append(
        f"\n{MARKS['bar']} 95% interval  {MARKS['false-bare']}{MARKS['true-bare']} no interval  "
    )
    out.append(MARKS["threshold"] * 2, style=STYLES["threshold"]).append(" 90% validity")
    return out


class DepthChart(Static):
    """Set :attr:`curve` to draw an agent's depth curve (None shows a placeholder)."""

    curve: reactive[DepthCurve | None] = reactive(None, init=False)

    def on_mount(self) -> None:
        self.watch_curve(self.curve)

    def watch_curve(self, curve: DepthCurve | None) -> None:
        self.update(chart_text(curve))
