"""Which report `mindledger report RUN` renders, chosen by the run's suite through one
registry: a suite declared here renders its own report (the prediction matrix: its matrix, not
a profile); every other suite gets the profile (:func:`reports.render.report`).

Each suite's report is declared where it lives, as an object satisfying :class:`SuiteReport`
(a module's ``SUITE_REPORT``), named here by module path and loaded on the first lookup of its
suite, as :data:`mindledger.family.BUILTIN` loads the item families: a suite adds its report
with one module and one line in :data:`BUILTIN`, and the report of any other run imports none
of them. Nothing asks a suite's name anywhere else.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ledger.store import Store

__all__ = ["BUILTIN", "ReportOptions", "SuiteReport", "suite_report"]


@dataclass(frozen=True)
class ReportOptions:
    """How a report is computed and laid out."""

    width: int
    """Columns a text report is fitted to (:data:`harness.cli.tables.PIPED_WIDTH` on a file)."""
    n_boot: int = 2000
    """Bootstrap replicates per interval."""
    stats_seed: int = 0
    """Seed of the bootstraps."""
    reveal_held_out: bool = False
    """Show a held-out run's seed and items (operators only)."""


class SuiteReport(Protocol):
    """The report of one suite's runs."""

    @property
    def suite(self) -> str:
        """The suite whose runs it reports."""
        ...

    @property
    def formats(self) -> tuple[str, ...]:
        """The ``--format`` values it renders."""
        ...

    def render(self, store: Store, run_id: str, fmt: str, options: ReportOptions) -> str:
        """The run's report in ``fmt`` (a UserError for a format it does not render)."""
        ...


BUILTIN: dict[str, str] = {"matrix": "harness.cli.matrix_report"}
"""Per suite with its own report, the module whose ``SUITE_REPORT`` renders it."""


def suite_report(suite: str) -> SuiteReport | None:
    """The report the runs of ``suite`` declare, or None (they get the profile)."""
    path = BUILTIN.get(suite)
    if path is None:
        return None
    report: SuiteReport = importlib.import_module(path).SUITE_REPORT
    if report.suite != suite:  # a bug: the module reports another suite
        raise RuntimeError(f"{path} reports suite {report.suite!r}, not {suite!r}")
    return report
