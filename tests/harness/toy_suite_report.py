"""A toy suite's own report, declared the way the matrix declares its own: one module with a
``SUITE_REPORT`` satisfying :class:`harness.cli.suite_reports.SuiteReport`."""

from __future__ import annotations

from dataclasses import dataclass

from harness.cli.suite_reports import ReportOptions
from ledger.store import Store

SUITE = "toy-suite"


@dataclass(frozen=True)
class ToyReport:
    suite: str = SUITE
    formats: tuple[str, ...] = ("md",)

    def render(self, store: Store, run_id: str, fmt: str, options: ReportOptions) -> str:
        items = len(list(store.run_items(run_id)))
        return f"toy report of {run_id}: {items} items, {options.n_boot} replicates\n"


SUITE_REPORT = ToyReport()
