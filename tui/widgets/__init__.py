"""The dashboard's widgets, one class per module."""

from tui.widgets.agent_detail import AgentDetail
from tui.widgets.depth_chart import DepthChart
from tui.widgets.runs_table import RunsTable
from tui.widgets.verify_banner import VerifyBanner

__all__ = ["AgentDetail", "DepthChart", "RunsTable", "VerifyBanner"]
