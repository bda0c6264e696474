"""A run's trials as the dashboard shows them: one agent's trials as table rows under a line of
counts by outcome, the trials screen's filters, and one trial as its transcript's messages
under its answer beside the expected answer, its outcome, score and costs. Pure functions from
:class:`reports.trials.TrialView` (what ``mindledger trials`` prints), worded with its text
helpers (:func:`reports.trials.message_blocks` …). No Textual, no I/O.

A held-out run's views come withheld (:attr:`TrialView.withheld`): their rows show the item's
position, family, outcome and cause only, and none of them is shown whole (its transcript is
the item, which regenerates from the withheld seed).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from shlex import quote

from reports.present import MISSING, pct
from reports.trials import (
    FAILURES,
    OUTCOMES,
    MessageBlock,
    Outcome,
    TrialView,
    costs_text,
    message_blocks,
    outcome_text,
    printable,
    score_text,
    value_text,
)
from tui.state import failed_cell

__all__ = [
    "CELL_WIDTH",
    "TRIAL_COLUMNS",
    "TRIAL_FILTERS",
    "AgentTrials",
    "TranscriptView",
    "TrialFilter",
    "TrialLine",
    "TrialsHeader",
    "item_positions",
    "transcript_view",
    "trial_lines",
    "trials_header",
]

TRIAL_COLUMNS = ("#", "Family", "Label", "Outcome", "Answer", "Expected", "Cause")
CELL_WIDTH = 24
"""The widest an answer's, an expected answer's or a cause's cell may be; a longer one ends in
… (the transcript screen shows it whole)."""


@dataclass(frozen=True)
class TrialFilter:
    """Which trials the trials screen lists: those with one of ``outcomes`` (none: all), chosen
    with ``key``."""

    key: str
    name: str
    outcomes: tuple[Outcome, ...] = ()

    def keeps(self, outcome: Outcome) -> bool:
        return not self.outcomes or outcome in self.outcomes


TRIAL_FILTERS = (
    TrialFilter("a", "all"),
    TrialFilter("e", "errors", ("error",)),
    TrialFilter("u", "unparsed", ("unparsed",)),
    TrialFilter("i", "wrong", ("wrong",)),
)
"""The trials screen's filters, the first shown when it opens. Wrong answers are ``i``
(incorrect): ``w`` opens the queue on every screen."""


@dataclass(frozen=True)
class AgentTrials:
    """One agent's trials in a run, in the order they were stored; ``positions[i]`` is trial
    ``i``'s item's place in the run (1 is the first item), None when unknown."""

    run_id: str
    agent: str
    held_out: bool
    trials: tuple[TrialView, ...]
    positions: tuple[int | None, ...]


_WITHHELD_ITEM = re.compile(r"^item (\d+)$")


def item_positions(views: Sequence[TrialView], item_ids: Sequence[str]) -> tuple[int | None, ...]:
    """Each view's item's place among the run's items ``item_ids`` (in run order); a withheld
    view carries its place as its item id (``"item 12"``)."""
    place = {item_id: n for n, item_id in enumerate(item_ids, 1)}
    out: list[int | None] = []
    for v in views:
        m = _WITHHELD_ITEM.match(v.item_id) if v.withheld else None
        out.append(int(m.group(1)) if m else place.get(v.item_id))
    return tuple(out)


def _cut(text: str, width: int = CELL_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# -- the trials screen ----------------------------------------------------------------------


@dataclass(frozen=True)
class TrialLine:
    """One row of the trials table: ``key`` is the item's id (what opens the trial), or a
    withheld item's ``"item N"``."""

    key: str
    position: int | None
    outcome: Outcome
    withheld: bool
    cells: tuple[str, ...]


def trial_lines(trials: AgentTrials, chosen: TrialFilter) -> tuple[TrialLine, ...]:
    """The rows of the trials that ``chosen`` keeps, in :data:`TRIAL_COLUMNS` order."""
    lines = []
    for view, position in zip(trials.trials, trials.positions, strict=True):
        if not chosen.keeps(view.outcome):
            continue
        lines.append(
            TrialLine(
                view.item_id,
                position,
                view.outcome,
                view.withheld,
                (
                    MISSING if position is None else str(position),
                    view.family or MISSING,
                    view.label or MISSING,
                    view.outcome,
                    "" if view.withheld else _cut(value_text(view.answer)),
                    "" if view.withheld else _cut(value_text(view.expected)),
                    _cut(printable(view.cause)) if view.cause else "",
                ),
            )
        )
    return tuple(lines)


@dataclass(frozen=True)
class TrialsHeader:
    title: str
    counts: str
    """The agent's trials by outcome, then its failed share: ``"11 ok · 2 wrong · 1 unparsed ·
    1 error — failed 2/15 (13%)"``."""
    showing: str
    """What the table shows: ``"Showing wrong: 2 of 16 · enter: …"``."""
    notice: str = ""


def trials_header(trials: AgentTrials, chosen: TrialFilter) -> TrialsHeader:
    """The lines above the trials table: whose trials, their counts by outcome and failure
    share (over every trial, whatever is shown), what is shown, and a held-out run's notice."""
    counts = Counter(v.outcome for v in trials.trials)
    total = len(trials.trials)
    title = f"{trials.agent} in run {trials.run_id}: {total} trial{'' if total == 1 else 's'}"
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o]]
    attempted = total - counts["n/a"]
    failed = sum(counts[o] for o in FAILURES)
    share = f"failed {failed_cell(failed, attempted)}"
    if attempted:
        share += f" ({pct(failed / attempted, 0)})"
    counts_text = (" · ".join(parts) + " — " + share) if parts else "no trials stored yet"
    kept = sum(1 for v in trials.trials if chosen.keeps(v.outcome))
    if not chosen.outcomes:
        showing = f"Showing all {kept}"
    else:
        showing = f"Showing {chosen.name}: {kept} of {total}" if kept else f"No {chosen.name}"
    if kept and not trials.held_out:
        showing += " · enter: the highlighted trial whole"
    notice = (
        f"Run {trials.run_id} is held out: its items, answers and transcripts are withheld "
        "(they regenerate from its withheld seed); outcomes and causes are shown."
        if trials.held_out
        else ""
    )
    return TrialsHeader(title, counts_text, showing, notice)


# -- the transcript screen ------------------------------------------------------------------


@dataclass(frozen=True)
class TranscriptView:
    """One trial whole: its title, the agent's answer beside the expected one, the facts
    (outcome and cause, score, costs) and its messages."""

    title: str
    outcome: Outcome
    answer: str
    expected: str
    facts: tuple[str, ...]
    messages: tuple[MessageBlock, ...]


def transcript_view(view: TrialView, position: int | None = None) -> TranscriptView:
    """One trial as the transcript screen shows it; ``position`` is its item's place in the
    run."""
    where = " ".join(p for p in (view.family, view.label) if p)
    item = f"item {position}" if position is not None else printable(view.item_id)
    title = f"{printable(view.agent)} · {item} of run {view.run_id}" + (
        f" · {where}" if where else "")
    answer = value_text(view.answer)
    if view.confidence is not None:
        answer += f"\nconfidence {view.confidence:.2f}"
    facts = (
        f"Outcome  {outcome_text(view)}",
        f"Score    {score_text(view.score)}",
        f"Costs    {costs_text(view)}",
        f"CLI      mindledger trials {quote(view.run_id)} --item "
        f"{position if position is not None else quote(view.item_id)} --agent {quote(view.agent)}",
    )
    messages = message_blocks(view.transcript)
    if not messages and view.raw_text:
        messages = (MessageBlock("raw reply", "assistant", printable(view.raw_text)),)
    if view.transcript_pruned:
        pruned = f"The transcript was pruned on {view.transcript_pruned} (retention)."
        messages = (MessageBlock("transcript pruned", "?", pruned), *messages)
    if not messages:
        messages = (MessageBlock("no messages", "?", "This trial recorded no messages."),)
    return TranscriptView(title, view.outcome, answer, value_text(view.expected), facts, messages)
