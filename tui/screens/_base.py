"""The base of the screens that read what they show in a worker: :meth:`WorkerScreen.load`
runs the screen's ``read`` in a thread worker of group ``WORKER_GROUP``, which ends in its
``show_result`` or ``show_error``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tui.source import DashboardSource

__all__ = ["WorkerScreen"]


class WorkerScreen(Screen[None]):
    """A screen over ``source`` that reads its view in a thread worker: a subclass gives
    ``WORKER_GROUP`` and three methods, ``read()`` (runs in the worker, returns the view),
    ``show_result(view)`` and ``show_error(error)`` (run on the app's thread). With ``LOADING``
    its ``#loading`` indicator is hidden when the worker ends and shown again on reload. Other
    workers' events go to :meth:`other_worker_changed`."""

    WORKER_GROUP: ClassVar[str]
    LOADING: ClassVar[bool] = False

    read: Callable[[], Any]
    show_result: Callable[[Any], None]
    show_error: Callable[[BaseException | None], None]

    def __init__(self, source: DashboardSource) -> None:
        super().__init__()
        self.source = source

    def load(self) -> None:
        """Read the view again, in a worker that replaces any still running."""
        self.run_worker(
            self.read, thread=True, exclusive=True, group=self.WORKER_GROUP, exit_on_error=False
        )

    def other_worker_changed(self, event: Worker.StateChanged) -> None:
        """A worker of another group changed state; by default nothing happens."""

    def action_reload(self) -> None:
        if self.LOADING:
            self.query_one("#loading").display = True
        self.load()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != self.WORKER_GROUP:
            self.other_worker_changed(event)
            return
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            if self.LOADING:
                self.query_one("#loading").display = False
            self.show_result(event.worker.result)
        elif event.state == WorkerState.ERROR:
            if self.LOADING:
                self.query_one("#loading").display = False
            self.show_error(event.worker.error)
