"""Two runs side by side, as the dashboard shows them: pure functions from the comparison
:func:`reports.comparison.compare` builds (the same one ``mindledger report --compare``
renders) to table rows, in the words it already holds (each figure's title, each run's figure,
the change and its verdict). No Textual, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reports.present import CLEARLY_HIGHER, CLEARLY_LOWER, MISSING, p_text

if TYPE_CHECKING:  # the comparison's records come with the comparison, when it is first read
    from reports.comparison import Comparison, FigureChange

__all__ = ["COMPARE_COLUMNS", "CompareRow", "CompareView", "compare_view"]

COMPARE_COLUMNS = ("Agent", "Figure", "Run A", "Run B", "Change B − A [95%]", "Verdict",
                   "p (Holm)")  # fmt: skip
CHANGE_WIDTH = 32
"""The widest a change cell may be; a longer reason is cut and shown whole below the table."""
VALUE_WIDTH = 14
"""The widest a run's value cell may be (an S beside the others' mean is cut)."""
VERDICT_WIDTH = 24
"""The widest a verdict cell may be (why a figure is not compared is cut)."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class CompareRow:
    agent: str
    metric: str
    cells: tuple[str, ...]
    """In COMPARE_COLUMNS order (long cells cut)."""
    detail: str
    """The whole row for the detail line: each run's figure with its interval and n, the
    change, its interval, test and verdict, or why the runs are not compared on it."""
    direction: int = 0
    """+1 a change that is clearly higher (its interval excludes 0 upwards), -1 clearly
    lower, 0 otherwise."""


@dataclass(frozen=True)
class CompareView:
    title: str
    notes: tuple[str, ...]
    rows: tuple[CompareRow, ...]


def _row(agent: str, key: str, d: FigureChange, first: bool) -> CompareRow:
    title = d.title or key
    a, b = d.a_text or MISSING, d.b_text or MISSING
    change, verdict = d.change_text or MISSING, d.verdict or MISSING
    detail = f"{agent} · {title}: A {a} → B {b}"
    if change != MISSING:
        how = ", ".join(x for x in (d.interval, d.test) if x)
        detail += (f"; change {change}" + (f" ({how})" if how else "")
                   + f", p {p_text(d.p)}, p (Holm) {p_text(d.p_holm)}"
                   + (f"; {d.note}" if d.note else ""))
    detail += f": {verdict}"
    direction = {CLEARLY_HIGHER: 1, CLEARLY_LOWER: -1}.get(verdict, 0)
    return CompareRow(
        agent, key,
        (agent if first else "", title,
         _cut(d.a_compact or a, VALUE_WIDTH),
         _cut(d.b_compact or b, VALUE_WIDTH),
         _cut(change, CHANGE_WIDTH), _cut(verdict, VERDICT_WIDTH), p_text(d.p_holm)),
        detail, direction,
    )


def compare_view(cmp: Comparison) -> CompareView:
    """The comparison of two runs (:func:`reports.comparison.compare`): one row per figure of
    every agent in both runs; notes for suite or held-out differences, agents in one run only,
    validity, roles and settings that changed."""
    ra, rb = cmp.run_a, cmp.run_b
    notes = [f"Changes are B − A (A = {ra.id}, B = {rb.id}) with their 95% "
             f"interval ({cmp.interval}), called clearly higher or lower only when "
             "it excludes 0 and, where the change has a test, its Holm-adjusted p is below 0.05."]
    notes += cmp.notes
    if cmp.only_in_a or cmp.only_in_b:
        notes.append(f"Only in A: {', '.join(cmp.only_in_a) or MISSING}; "
                     f"only in B: {', '.join(cmp.only_in_b) or MISSING}.")
    rows: list[CompareRow] = []
    for name, ag in cmp.agents.items():
        validity = ag.validity
        if validity.a != validity.b or validity.why:
            notes.append(f"{name}: validity {validity.text}"
                         + "".join(f"; {w}" for w in validity.why))
        notes += [f"{name}: changed {c}" for c in ag.changes]
        for i, (key, d) in enumerate(ag.metrics.items()):
            rows.append(_row(name, key, d, i == 0))
    if not rows:
        notes.append("No agent is in both runs: nothing to compare.")
    return CompareView(
        f"Compare {ra.id} (A, suite {ra.suite}) → {rb.id} (B, suite "
        f"{rb.suite})",
        tuple(notes),
        tuple(rows),
    )
