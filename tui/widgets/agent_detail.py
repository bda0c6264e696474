"""One agent's profile: validity first, then the headline figures, accuracy by depth, and
agent − control and ablation credit."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import DataTable, Label, Static

from tui.state import AgentView
from tui.widgets.tables import fill_table

__all__ = ["AgentDetail"]

DEPTH_COLUMNS = ("Depth", "False belief", "True belief")
CONTRAST_COLUMNS = ("Contrast", "Metric", "Difference")


class AgentDetail(VerticalScroll):
    """Set :attr:`agent` to show an agent (None shows a placeholder)."""

    agent: reactive[AgentView | None] = reactive(None, init=False)

    def compose(self) -> ComposeResult:
        yield Static(id="validity", markup=False)
        yield Static(id="metrics", markup=False)
        yield Label("Accuracy by depth (false belief · true belief)", classes="section")
        yield DataTable[Text](id="depth", cursor_type="none", zebra_stripes=True)
        yield Label("Agent − control and ablation credit", classes="section")
        yield DataTable[Text](id="contrasts", cursor_type="none", zebra_stripes=True)

    def on_mount(self) -> None:
        self.watch_agent(self.agent)

    def watch_agent(self, agent: AgentView | None) -> None:
        validity = self.query_one("#validity", Static)
        metrics = self.query_one("#metrics", Static)
        depth = self.query_one("#depth", DataTable)
        contrasts = self.query_one("#contrasts", DataTable)
        if agent is None:
            fill_table(depth, DEPTH_COLUMNS, [])
            fill_table(contrasts, CONTRAST_COLUMNS, [])
            validity.update(Text("Select an agent."))
            validity.remove_class("-valid", "-invalid")
            metrics.update("")
            return
        validity.update(Text(agent.validity))
        validity.set_class(agent.valid, "-valid")
        validity.set_class(not agent.valid, "-invalid")
        lines = [
            f"{agent.name} ({agent.role})",
            f"D50                          {agent.d50}",
            f"Leakage resistance           {agent.leakage_resistance}",
            f"True-belief control accuracy {agent.true_belief}",
            f"False-belief accuracy        {agent.false_belief}",
            f"n                            {agent.n}",
            *agent.notices,
            *agent.self_forecast,
        ]
        metrics.update(Text("\n".join(lines)))
        fill_table(
            depth,
            DEPTH_COLUMNS,
            [[Text(r.depth), Text(r.false_belief), Text(r.true_belief)] for r in agent.depth_rows],
        )
        fill_table(
            contrasts,
            CONTRAST_COLUMNS,
            [[Text(c.contrast), Text(c.metric), Text(c.value)] for c in agent.contrasts],
        )
