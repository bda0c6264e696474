"""Which stored runs are matrix runs, and which matrix run accompanies a suite run: apart from
:mod:`reports.matrix_summary`, so that whoever only asks (the dashboard choosing a run's screen,
the profile of a run no matrix accompanies) does not import the matrix's statistics."""

from __future__ import annotations

import json

import sqlalchemy as sa

from ledger.models import RunRow
from ledger.store import Store

__all__ = ["SUITE", "accompanying_matrix"]

SUITE = "matrix"
"""The suite name of a stored matrix run."""


def accompanying_matrix(store: Store, run_id: str) -> str | None:
    """The latest complete matrix run that accompanies the suite run ``run_id`` (its params
    say so), or None."""
    table = RunRow.__table__  # type: ignore[attr-defined]
    stmt = (
        sa.select(table.c.id, table.c.params_json)
        .where(table.c.suite == SUITE, table.c.status == "complete")
        .order_by(table.c.created_at.desc())
    )
    with store.engine.connect() as conn:
        for matrix_id, params_json in conn.execute(stmt):
            try:
                params = json.loads(params_json)
            except ValueError:
                continue
            if isinstance(params, dict) and params.get("accompanies") == run_id:
                return str(matrix_id)
    return None
