"""Where the dashboard's data comes from: the only module of :mod:`tui` that does I/O.

Every method blocks (database reads, profile statistics, file writes), so the screens call them
only from ``@work(thread=True)`` workers, never on the UI thread.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.catalog import FailureCounts, newest_trial
from ledger.clock import Clock, utc_now
from ledger.reader import Readable, Reader, StoredRun
from mindledger.disclosure import SEED_WITHHELD, disclosed_prediction, shown_seed
from mindledger.errors import NotFoundError
from tui.state import AgentCount, RunSummary

if TYPE_CHECKING:  # what only some screens read is imported when they first read it
    from ledger.chain import Verification
    from ledger.predictions import Ledger
    from ledger.protocol import PredictionState
    from ledger.store import FailureCounts, Store
    from reports.comparison import Comparison
    from reports.history import AgentHistory
    from reports.matrix_model import MatrixSummary
    from reports.model import RunProfile
    from reports.trials import TrialView
    from tui.operations import QueueSnapshot, ScheduleSnapshot
    from tui.trials_view import AgentTrials

__all__ = [
    "EXPORT_FORMATS",
    "DashboardSource",
    "LedgerSnapshot",
    "NoLedger",
    "NoSchedule",
    "run_summary",
]

EXPORT_FORMATS = ("md", "html")


class NoLedger(NotFoundError):
    """There is no prediction ledger to show here; the message says why, for a person."""


class NoSchedule(NotFoundError):
    """There is no schedule to show here; the message says why, for a person."""


def run_summary(
    store: Readable, run: str | StoredRun, *, max_failure_share: float | None = None
) -> RunSummary:
    """A stored run (or its id) with its agents' trial counts, its seed withheld when held
    out, and how many of its agents failed over ``max_failure_share`` of their trials (none
    counted without it)."""
    with store.reader() as r:
        if isinstance(run, str):
            run = r.get_run(run)
        counts = r.failure_counts([run.id]).get(run.id, {})
        none = FailureCounts(0, 0, 0, 0)
        agents = tuple(
            AgentCount(
                name=a.name,
                role=a.role,
                ok=c.trials - c.errors - c.not_applicable,
                api_error=c.errors,
                not_applicable=c.not_applicable,
                correct=c.correct,
            )
            for a in r.run_agents(run.id)
            for c in [counts.get(a.name, none)]
        )
    share = max_failure_share
    return RunSummary(
        id=run.id,
        suite=run.suite,
        seed=shown_seed(run.seed, held_out=run.held_out),
        held_out=run.held_out,
        status=run.status,
        created_at=run.created_at,
        agents=agents,
        # how long it has been idle, if it is (killed, or stuck)
        last_trial_at=newest_trial(counts.values()) if run.status == "running" else None,
        over_limit=0 if share is None else sum(c.over(share) for c in counts.values()),
    )


@dataclass(frozen=True)
class LedgerSnapshot:
    predictions: list[PredictionState]
    verification: Verification
    now: str


class DashboardSource:
    """Reads runs, profiles and the prediction ledger; writes exported reports.

    Nothing it hands the screens or writes holds a held-out run's seed: the runs carry None
    for it, and profiles, reports and trials are built without ``reveal_held_out`` (a held-out
    run's trials come withheld, and none is shown whole).

    ``ledger`` opens the prediction ledger (it is called in a worker, so it may read the key
    file) and raises :class:`NoLedger` when there is none; ``n_boot`` and ``seed`` are the
    profile's bootstrap settings; ``clock`` gives "now" for predictions past their deadline;
    a finished run with an agent over ``max_failure_share`` of failed trials reads
    ``FAILED`` in the runs table (not judged without it).
    ``schedule`` and ``queue`` build the daemon's schedule and the worker queue (the harness
    knows them; :mod:`tui` may not import it); without them those screens say there is none.

    ``store`` is the :class:`~ledger.store.Store`, or a function that opens it (called once,
    in a worker, by the first screen that needs it). With a ``reader`` (a
    :class:`~ledger.reader.Reader` of the same database, opened without SQLAlchemy) the runs
    and a run's screen read through it and do not open the Store (unless a matrix run
    accompanies the run); they read the same SQL either way.
    """

    def __init__(
        self,
        store: Store | Callable[[], Store],
        ledger: Callable[[], Ledger] | None = None,
        *,
        n_boot: int = 2000,
        seed: int = 0,
        clock: Clock = utc_now,
        run_limit: int = 200,
        schedule: Callable[[], ScheduleSnapshot] | None = None,
        queue: Callable[[], QueueSnapshot] | None = None,
        reader: Reader | None = None,
        max_failure_share: float | None = None,
    ):
        self._store = store
        self._store_lock = threading.Lock()
        self.reader = reader
        self.open_ledger = ledger
        self.read_schedule = schedule
        self.read_queue = queue
        self.n_boot = n_boot
        self.seed = seed
        self.clock = clock
        self.run_limit = run_limit
        self.max_failure_share = max_failure_share

    @property
    def store(self) -> Store:
        """The Store (opened on first use when a function to open it was handed in)."""
        with self._store_lock:
            if callable(self._store) and not hasattr(self._store, "engine"):
                self._store = self._store()
            return self._store  # type: ignore[return-value]

    def reads(self) -> Readable:
        """Where the runs and a run's screen read: the reader, else the Store."""
        return self.reader if self.reader is not None else self.store

    def runs(self) -> list[RunSummary]:
        """The latest runs with their agents' trial counts."""
        with self.reads().reader() as r:
            return [
                run_summary(r, run, max_failure_share=self.max_failure_share)
                for run in r.list_runs(self.run_limit)
            ]

    def profile(self, run_id: str) -> RunProfile:
        """The run's profile (see :func:`reports.build_profile`); read through the Store when
        a matrix run accompanies the run (the matrix's summary needs it)."""
        from reports import build_profile
        from reports.matrix_runs import accompanying_matrix

        reads = self.reads()
        if accompanying_matrix(reads, run_id) is not None or self._has_forecasts():
            reads = self.store  # the matrix's summary and the forecasts read through it
        return build_profile(
            reads, run_id, seed=self.seed, n_boot=self.n_boot, reveal_held_out=False
        )

    def _has_forecasts(self) -> bool:
        """Whether the reader sees self-forecasts in the ledger (the Store reads them)."""
        if self.reader is None:
            return False
        with self.reader.reader() as r:
            return r.has_entries("forecast")

    def matrix(self, run_id: str) -> MatrixSummary:
        """A matrix run's summary (see :func:`reports.matrix_summary.stored_summary`)."""
        from reports.matrix_summary import stored_summary

        return stored_summary(self.store, run_id, n_boot=self.n_boot, stats_seed=self.seed)

    def compare(self, run_a: str, run_b: str) -> Comparison:
        """What changed from ``run_a`` to ``run_b`` (see :func:`reports.comparison.compare`, the
        comparison ``mindledger report --compare`` renders); no held-out seed in it."""
        from reports.comparison import compare

        return compare(self.store, run_a, run_b, seed=self.seed, n_boot=self.n_boot,
                       reveal_held_out=False)

    def history(self, agent: str) -> AgentHistory:
        """``agent``'s headline figures over its finished runs as the agent under test, with
        the regression rule's flags (see :func:`reports.history.agent_history`)."""
        from reports.history import agent_history

        return agent_history(self.store, agent, n_boot=self.n_boot, seed=self.seed)

    def failures(self, run_id: str) -> dict[str, FailureCounts]:
        """Per agent of the run with trials: its trials and how many failed (API errors and
        unreadable answers), counted in the database (no trial is read)."""
        with self.reads().reader() as r:
            return r.failure_counts([run_id]).get(run_id, {})

    def trials(self, run_id: str, agent: str, outcome: str | None = None) -> AgentTrials:
        """``agent``'s trials in the run (those with ``outcome`` only, if given), each with its
        item's place in the run (see :func:`reports.trials.list_trials`)."""
        from reports.trials import list_trials
        from tui.trials_view import AgentTrials, item_positions

        views = list_trials(self.store, run_id, agent=agent, outcome=outcome,
                            reveal_held_out=False)
        return AgentTrials(
            run_id,
            agent,
            self.store.get_run(run_id).held_out,
            tuple(views),
            item_positions(views, self.store.run_item_ids(run_id)),
        )

    def trial(self, run_id: str, agent: str, item: str) -> TrialView:
        """One trial whole (see :func:`reports.trials.one_trial`; a held-out run's is
        refused)."""
        from reports.trials import one_trial

        return one_trial(self.store, run_id, agent, item, reveal_held_out=False)

    def schedule(self) -> ScheduleSnapshot:
        """The daemon's schedule (raises :class:`NoSchedule` when none was handed in)."""
        if self.read_schedule is None:
            raise NoSchedule("no schedule is configured for this dashboard")
        return self.read_schedule()

    def queue(self) -> QueueSnapshot:
        """The worker queue; not ``available`` when none was handed in."""
        if self.read_queue is None:
            from tui.operations import QueueSnapshot

            return QueueSnapshot(False, "no queue is configured for this dashboard")
        return self.read_queue()

    def export(self, run_id: str, fmt: str, directory: Path) -> Path:
        """Write the run's report as ``md`` (with its figures in ``<run>_files/``) or ``html``
        into ``directory``; returns the file written."""
        from reports.render import report

        if fmt not in EXPORT_FORMATS:
            raise ValueError(f"unknown export format {fmt!r} (md, html)")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id) or "run"
        path = directory / f"{stem}.{fmt}"
        kw: dict[str, Any] = {}
        if fmt == "md":
            kw = {
                "figures_dir": directory / f"{stem}_files",
                "figures_link_prefix": f"{stem}_files/",
            }
        text = report(
            self.store, run_id, fmt, seed=self.seed, n_boot=self.n_boot, reveal_held_out=False,
            **kw,
        )
        path.write_text(text, encoding="utf-8")
        return path.resolve()

    def ledger_snapshot(self) -> LedgerSnapshot:
        """Every prediction and the ledger's verification (raises :class:`NoLedger`)."""
        if self.open_ledger is None:
            raise NoLedger("no prediction ledger is configured")
        ledger = self.open_ledger()
        try:
            predictions = ledger.predictions()
            verification = ledger.verification()
        finally:
            ledger.close()
        held = self.store.held_out_items(p.item for p in predictions)
        predictions = [_withheld(p) if p.item in held else p for p in predictions]
        return LedgerSnapshot(predictions, verification, self.clock())


def _withheld(state: PredictionState) -> PredictionState:
    """A prediction on a held-out run's item as the dashboard shows it: without its query,
    item and observed answers (:func:`mindledger.disclosure.disclosed_prediction`)."""
    shown = disclosed_prediction(state.to_dict(), held_out=True)
    return replace(
        state,
        query=SEED_WITHHELD,
        item=None,
        observed=[],
        provenance=shown["provenance"],
        condition=shown["condition"],
        proxied=None,
        revealed=None,
        reason=shown["reason"],
        commit={k: v for k, v in state.commit.items() if k not in ("query", "item", "condition")},
    )
