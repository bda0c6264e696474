"""Which stored runs are matrix runs, and which matrix run accompanies a suite run: apart from
:mod:`reports.matrix_summary`, so that whoever only asks (the dashboard choosing a run's screen,
the profile of a run no matrix accompanies) does not import the matrix's statistics."""

from __future__ import annotations

from ledger.reader import Readable

__all__ = ["SUITE", "accompanying_matrix"]

SUITE = "matrix"
"""The suite name of a stored matrix run."""


def accompanying_matrix(store: Readable, run_id: str) -> str | None:
    """The latest complete matrix run that accompanies the suite run ``run_id`` (its params
    say so), or None."""
    with store.reader() as r:
        for run in r.runs_of_suite(SUITE, "complete"):
            if run.params.get("accompanies") == run_id:
                return run.id
    return None
