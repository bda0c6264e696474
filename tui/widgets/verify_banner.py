"""One banner saying whether the prediction ledger verifies, or where it first breaks."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tui.state import VerifyView

__all__ = ["VerifyBanner"]


class VerifyBanner(Static):
    """Set :attr:`verification` (or :meth:`show_message` while there is none)."""

    verification: reactive[VerifyView | None] = reactive(None, init=False)

    def watch_verification(self, view: VerifyView | None) -> None:
        if view is None:
            self.show_message("Verifying the ledger…")
            return
        lines = [view.headline, *view.details]
        self.update(Text("\n".join(lines)))
        self.set_class(view.ok, "-ok")
        self.set_class(not view.ok, "-broken")

    def show_message(self, message: str) -> None:
        self.update(Text(message))
        self.remove_class("-ok", "-broken")
