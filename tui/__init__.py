"""tui: the Textual dashboard (``mindledger dashboard``).

Layout: :mod:`tui.app` holds the App, :mod:`tui.screens` and :mod:`tui.widgets` one class per
module, :mod:`tui.state` the pure view-model, :mod:`tui.source` the only I/O (called from
workers).
"""

from tui.app import DashboardApp
from tui.source import DashboardSource, NoLedger

__all__ = ["DashboardApp", "DashboardSource", "NoLedger"]
