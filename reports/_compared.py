"""The comparison of two runs as typed records (``mindledger.compare/1``).

:func:`reports.comparison.compare_runs` builds a :class:`Comparison`; the Markdown, the
dashboard and the API read its attributes, and :meth:`Comparison.to_json` is its one
serialiser (``mindledger report --compare --format json``). :meth:`Comparison.of` parses that
JSON back.

A record writes the keys it was given, in the order its fields are declared: a figure the runs
were not compared on has a ``reason`` and no ``note``, an interval of square-and-add has a
``note``, and the change of S that neither run measured has no ``interval`` or ``test`` keys,
as the schema has always written them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reports._json import JsonObject
from reports.model import RunInfo

__all__ = [
    "COMPARE_SCHEMA",
    "AgentComparison",
    "Comparison",
    "FigureChange",
    "FigureWords",
    "ValidityChange",
]

COMPARE_SCHEMA = "mindledger.compare/1"

Number = int | float
"""A JSON number as it was computed or read: an integer stays an integer (``0``, not ``0.0``),
so that parsing a comparison and writing it again gives the same bytes."""

Value = Number | str | None
"""A run's side of a figure: its number, or (D50 without a point estimate, S not measured)
the words the profile shows instead."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class FigureWords(_Record):
    """How every rendering words one figure's comparison, decided once."""

    title: str
    unit: str | None
    a_text: str
    b_text: str
    a_compact: str
    b_compact: str
    change_text: str
    verdict: str


class FigureChange(_Record):
    """One figure of one agent from run A to run B: each side, the change ``b − a`` with its
    95% interval, method and test, the p-values, ``status`` and why it is not estimable; then
    the words (:class:`FigureWords`) once the table's p-values are Holm-adjusted."""

    a: Value = None
    b: Value = None
    difference: Number | None = None
    n_a: int | None = None
    n_b: int | None = None
    ci: tuple[Number | None, Number | None] | None = None
    interval: str | None = None
    test: str | None = None
    p: Number | None = None
    p_holm: Number | None = None
    status: Literal["estimated", "not_estimable"] | None = None
    reason: str | None = None
    note: str | None = None
    title: str = ""
    unit: str | None = None
    a_text: str = ""
    b_text: str = ""
    a_compact: str = ""
    b_compact: str = ""
    change_text: str = ""
    verdict: str = ""

    def but(self, **changes: Any) -> FigureChange:
        """A copy with ``changes`` (field names) set."""
        unknown = set(changes) - set(type(self).model_fields)
        if unknown:
            raise TypeError(f"FigureChange has no field {sorted(unknown)[0]!r}")
        return self.model_copy(update=changes)

    def worded(self, words: FigureWords) -> FigureChange:
        return self.model_copy(update=dict(words))


class ValidityChange(_Record):
    """The agent's validity in both runs in words (``valid → invalid``) and, for a run where
    it is invalid or unchecked, why."""

    a: str
    b: str
    text: str
    why: tuple[str, ...]


class AgentComparison(_Record):
    """One agent present in both runs: its role and validity in each (A, B), its settings that
    changed (``spec_changes``: key → (A, B)) and the same in words (``changes``), and every
    figure compared, in the order the reports show them."""

    role: tuple[str, str]
    valid: tuple[bool | None, bool | None]
    validity: ValidityChange
    spec_changes: dict[str, tuple[Any, Any]]
    changes: tuple[str, ...]
    metrics: dict[str, FigureChange]


class Comparison(_Record):
    """What changed from run A to run B (``mindledger.compare/1``): the runs' blocks as a
    reader may see them, how changes are measured (``direction``, ``interval``), every agent
    in both runs, the agents in one run only, and notes on what the runs do not share."""

    title: str
    run_a: RunInfo
    run_b: RunInfo
    direction: str
    interval: str
    agents: dict[str, AgentComparison]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    notes: tuple[str, ...]

    @classmethod
    def of(cls, data: Any) -> Comparison:
        """Parse a comparison's JSON (:meth:`to_json`); raises :class:`ValueError` when it is
        not ``mindledger.compare/1`` (:class:`pydantic.ValidationError` when a field does not
        fit)."""
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema != COMPARE_SCHEMA:
            raise ValueError(f"expected a {COMPARE_SCHEMA} comparison, got schema {schema!r}")
        return cls.model_validate({k: v for k, v in data.items() if k != "schema"})

    def to_json(self) -> JsonObject:
        """The comparison as JSON-ready data: the keys each record was given, in order."""
        return {"schema": COMPARE_SCHEMA, **self.model_dump(exclude_unset=True)}
