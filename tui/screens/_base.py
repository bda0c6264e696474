"""The base of the screens that read what they show in a worker: the worker of group
``WORKER_GROUP`` ends in :meth:`WorkerScreen.show_result` or :meth:`WorkerScreen.show_error`."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tui.source import DashboardSource

__all__ = ["WorkerScreen"]


class WorkerScreen(Screen[None]):
    """A screen over ``source`` whose :meth:`load` (a ``@work`` method of group ``WORKER_GROUP``)
    reads its view; with ``LOADING`` its ``#loading`` indicator is hidden when the worker ends
    and shown again on reload. Other workers' events go to :meth:`other_worker_changed`."""

    WORKER_GROUP: ClassVar[str]
    LOADING: ClassVar[bool] = False

    def __init__(self, source: DashboardSource) -> None:
        super().__init__()
        self.source = source

    def load(self) -> object:
        """Start the worker (a subclass decorates it with ``@work(group=WORKER_GROUP)``)."""
        raise NotImplementedError

    def show_result(self, result: Any) -> None:
        raise NotImplementedError

    def show_error(self, error: BaseException | None) -> None:
        raise NotImplementedError

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
