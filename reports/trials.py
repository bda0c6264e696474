"""A run's trials as a person reads them: what each agent was asked, what it answered, what the
right answer was, and why a trial failed.

Every trial has one **outcome** (:data:`OUTCOMES`):

- ``ok`` — an answer was read and it is right;
- ``wrong`` — an answer was read and it is wrong;
- ``unparsed`` — the agent replied, but no answer could be read from its reply (scored
  incorrect; the reason is the trial's ``parse_problem``);
- ``error`` — the agent could not be asked or did not reply within the protocol (an API error,
  a timeout, a program that wrote no JSON: excluded from accuracy, the reason in ``error``);
- ``answered`` — an answer was read, and the item has no right answer per trial (a play of an
  A/B/C population, a prediction-matrix answer: scored elsewhere);
- ``n/a`` — a reference agent to which the item's family means nothing.

Errors and unreadable answers are *failures*: :func:`failure_summary` counts them per agent and
groups them by cause with one example each, which is what `mindledger run` says when a run
fails and what `mindledger trials RUN --status error` lists.

Held-out runs: their items regenerate from their seeds, so without ``reveal_held_out`` a view
of one carries no item id, prompt, transcript, reply, answer or expected answer — only the
agent, the outcome, the cause's kind and the costs (:attr:`TrialView.withheld`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.models import TrialRow
from ledger.store import Store
from mindledger import family as registry
from mindledger.errors import NotFoundError, UserError
from mindledger.items import Item

__all__ = [
    "FAILURES",
    "OUTCOMES",
    "AgentFailures",
    "Cause",
    "Outcome",
    "RunFailures",
    "TrialView",
    "failure_summary",
    "list_trials",
    "one_trial",
    "outcome_of",
]

Outcome = Literal["ok", "wrong", "unparsed", "error", "answered", "n/a"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "wrong", "unparsed", "error", "answered", "n/a")
"""Every outcome a trial can have, in the order listings count them."""
FAILURES: tuple[Outcome, ...] = ("error", "unparsed")
"""The outcomes that are failures of the agent or its adapter, not of its reasoning."""


def outcome_of(status: str, answer_json: str | None, correct: bool | None) -> Outcome:
    """The outcome of a stored trial from its status, stored answer and correctness."""
    if status == "api_error":
        return "error"
    if status == "not_applicable":
        return "n/a"
    if answer_json is None or answer_json == "null":
        return "unparsed"
    if correct is None:
        return "answered"
    return "ok" if correct else "wrong"


@dataclass(frozen=True)
class TrialView:
    """One trial, whole (see the module docstring for ``outcome`` and ``withheld``)."""

    run_id: str
    agent: str
    item_id: str
    """The item's id; for a withheld view, its position in the run (``item 12``)."""
    family: str
    label: str
    """Where the item sits in its family: a depth (``R3``, with ``false``/``true`` belief), a
    game, a question kind; ``""`` when there is nothing to say."""
    outcome: Outcome
    answer: Any
    """The answer read from the reply (None: none could be read)."""
    expected: Any
    """The right answer, as the item's truth states it (None: the item has none)."""
    correct: bool | None
    cause: str | None
    """Why the trial failed or was wrong, in one phrase: an API error's kind (``malformed``,
    ``timeout``…), ``unparsed``, or the scorer's primary error code (``reality_leak``…)."""
    detail: str | None
    """The whole reason: the API error's message or the parse problem."""
    confidence: float | None = None
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    raw_text: str | None = None
    """The last reply's text (or the answer tool's arguments) as the agent wrote it."""
    transcript: tuple[Mapping[str, Any], ...] = ()
    """Every message of the trial in order, exactly as sent and received (tool calls and all)."""
    score: Mapping[str, Any] = field(default_factory=dict)
    """The scorer's record: correct, value, error codes and details."""
    provider: Mapping[str, Any] = field(default_factory=dict)
    """What the endpoint said of itself per turn: models, finish reasons, attempts, cache hits."""
    withheld: bool = False
    """A held-out run's trial seen without ``reveal_held_out``: item, prompt, transcript,
    reply, answer and expected answer are left out."""

    def to_json(self) -> dict[str, Any]:
        """The view as JSON data (``mindledger trials --format json``): every field, the
        transcript as a list of messages."""
        return {
            "run_id": self.run_id,
            "agent": self.agent,
            "item_id": self.item_id,
            "family": self.family,
            "label": self.label,
            "status": self.outcome,
            "answer": self.answer,
            "expected": self.expected,
            "correct": self.correct,
            "error": self.cause if self.outcome in FAILURES else None,
            "cause": self.cause,
            "detail": self.detail,
            "confidence": self.confidence,
            "turns": self.turns,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "latency_s": self.latency_s,
            "raw_text": self.raw_text,
            "transcript": [dict(m) for m in self.transcript],
            "score": dict(self.score),
            "provider": dict(self.provider),
            "withheld": self.withheld,
        }


def _load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


_KIND = re.compile(r"^([a-z_]+): ")


def _cause(row: TrialRow, outcome: Outcome, score: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(cause, detail) of a trial: see :attr:`TrialView.cause`."""
    if outcome == "error":
        message = row.error or "no reason recorded"
        m = _KIND.match(message)
        return (m.group(1) if m else "error"), message
    if outcome == "unparsed":
        details = score.get("details") if isinstance(score, Mapping) else None
        problem = details.get("parse_problem") if isinstance(details, Mapping) else None
        return "unparsed", str(problem) if problem else "no answer could be read from the reply"
    if outcome == "wrong":
        return row.primary_error or "wrong", None
    return None, None


def _label(item: Item | None) -> str:
    if item is None:
        return ""
    try:
        design = registry.get(item.family).design(item)
    except Exception:  # an unknown family or a malformed item: a listing still shows the trial
        return ""
    if design.depth:
        return f"{design.depth} {design.belief}".strip()
    if design.game:
        return design.game if not design.question else f"{design.game} {design.question}"
    return design.question


def _expected(item: Item | None) -> Any:
    if item is None:
        return None
    try:
        return registry.get(item.family).design(item).truth_answer
    except Exception:
        return None


def _view(
    row: TrialRow, item: Item | None, *, position: int | None, withheld: bool
) -> TrialView:
    outcome = outcome_of(row.status, row.answer_json, row.correct)
    score = _load(row.score_json) or {}
    cause, detail = _cause(row, outcome, score)
    provider = _load(row.provider_json) or {}
    if withheld:
        return TrialView(
            run_id=row.run_id,
            agent=row.agent,
            item_id=f"item {position}" if position is not None else "item (withheld)",
            family=item.family if item is not None else "",
            label="",
            outcome=outcome,
            answer=None,
            expected=None,
            correct=row.correct,
            cause=cause,
            detail=None,
            turns=row.turns,
            tokens_in=row.tokens_in,
            tokens_out=row.tokens_out,
            latency_s=row.latency_s,
            withheld=True,
        )
    transcript = _load(row.transcript_json)
    return TrialView(
        run_id=row.run_id,
        agent=row.agent,
        item_id=row.item_id,
        family=item.family if item is not None else "",
        label=_label(item),
        outcome=outcome,
        answer=_load(row.answer_json),
        expected=_expected(item),
        correct=row.correct,
        cause=cause,
        detail=detail,
        confidence=row.confidence,
        turns=row.turns,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        latency_s=row.latency_s,
        raw_text=row.raw_text,
        transcript=tuple(transcript) if isinstance(transcript, list) else (),
        score=score if isinstance(score, Mapping) else {},
        provider=provider if isinstance(provider, Mapping) else {},
    )


def _check_agent(store: Store, run_id: str, agent: str | None) -> None:
    if agent is None:
        return
    names = [ra.name for ra in store.run_agents(run_id)]
    if agent not in names:
        raise NotFoundError(
            f"run {run_id} has no agent named {agent!r} (its agents: {', '.join(names)})"
        )


def list_trials(
    store: Store,
    run_id: str,
    *,
    agent: str | None = None,
    outcome: str | Iterable[str] | None = None,
    family: str | None = None,
    limit: int | None = None,
    reveal_held_out: bool = False,
) -> list[TrialView]:
    """The run's trials in the order they were stored, optionally of one agent, with some
    outcomes, of one family, at most ``limit``. NotFoundError for an unknown run or agent, a
    UserError for an unknown outcome or family."""
    run = store.get_run(run_id)
    _check_agent(store, run_id, agent)
    wanted = {outcome} if isinstance(outcome, str) else set(outcome or ())
    if unknown := wanted - set(OUTCOMES):
        raise UserError(
            f"unknown trial status {sorted(unknown)[0]!r} (expected one of {', '.join(OUTCOMES)})"
        )
    if family is not None and family not in registry.names():
        raise UserError(f"unknown family {family!r} (expected one of {', '.join(registry.names())})")
    withheld = run.held_out and not reveal_held_out
    ids = store.run_item_ids(run_id)
    position = {item_id: n for n, item_id in enumerate(ids, 1)}
    rows = store.trials(run_id, agent)
    keep: list[TrialRow] = []
    for row in rows:
        if wanted and outcome_of(row.status, row.answer_json, row.correct) not in wanted:
            continue
        keep.append(row)
    items = {it.id: it for it in store.items_by_id(sorted({r.item_id for r in keep}))}
    views: list[TrialView] = []
    for row in keep:
        item = items.get(row.item_id)
        if family is not None and (item is None or item.family != family):
            continue
        views.append(_view(row, item, position=position.get(row.item_id), withheld=withheld))
        if limit is not None and len(views) >= limit:
            break
    return views


def one_trial(
    store: Store, run_id: str, agent: str, item: str, *, reveal_held_out: bool = False
) -> TrialView:
    """One trial whole: ``item`` is the item's id, its unique start, or its position in the
    run (``12``, as listings number a held-out run's items). A held-out run's trial is
    refused without ``reveal_held_out`` (its transcript is the item)."""
    run = store.get_run(run_id)
    _check_agent(store, run_id, agent)
    ids = store.run_item_ids(run_id)
    if item.isdigit() and 1 <= int(item) <= len(ids) and item not in ids:
        item_id = ids[int(item) - 1]
    else:
        matches = [i for i in ids if i == item or i.startswith(item)]
        if not matches:
            matches = [i for i in ids if i.startswith(f"sha256:{item}")]
        if len(matches) != 1:
            raise NotFoundError(
                f"run {run_id} has no item {item!r}" if not matches
                else f"{item!r} matches {len(matches)} items of run {run_id}: give more of the id"
            )
        item_id = matches[0]
    if run.held_out and not reveal_held_out:
        raise UserError(
            f"run {run_id} is held out: its trials show its items, which regenerate from its "
            "withheld seed; operators at the machine see them with --reveal-held-out"
        )
    rows = [r for r in store.trials(run_id, agent) if r.item_id == item_id]
    if not rows:
        raise NotFoundError(f"agent {agent!r} has no trial of item {item_id} in run {run_id} yet")
    (found,) = store.items_by_id([item_id])
    return _view(rows[0], found, position=ids.index(item_id) + 1, withheld=False)


@dataclass(frozen=True)
class Cause:
    """One reason trials failed: its kind, how many trials, and one of them as an example."""

    outcome: Outcome
    """``error`` or ``unparsed``."""
    kind: str
    """The error's kind (``malformed``, ``timeout``, ``server_error``…) or ``unparsed``."""
    count: int
    example: str
    """The whole message of one such trial."""
    example_item: str
    """That trial's item (its id; a position for a held-out run)."""


@dataclass(frozen=True)
class AgentFailures:
    """One agent's trials by outcome, and its failures by cause (most frequent first)."""

    agent: str
    role: str
    counts: Mapping[Outcome, int]
    causes: tuple[Cause, ...]

    @property
    def attempted(self) -> int:
        """Trials that asked the agent something (every outcome but ``n/a``)."""
        return sum(n for o, n in self.counts.items() if o != "n/a")

    @property
    def failed(self) -> int:
        """Trials that ended in an error or an unreadable answer."""
        return sum(self.counts.get(o, 0) for o in FAILURES)

    @property
    def failure_share(self) -> float:
        """Failed ÷ attempted (0 when nothing was attempted)."""
        return self.failed / self.attempted if self.attempted else 0.0


@dataclass(frozen=True)
class RunFailures:
    """Every agent's failures in one run."""

    run_id: str
    agents: tuple[AgentFailures, ...]

    def over(self, share: float) -> tuple[AgentFailures, ...]:
        """The agents whose failure share is above ``share``."""
        return tuple(a for a in self.agents if a.attempted and a.failure_share > share)


_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+(?:\.\d+)?")


def _cause_key(message: str) -> str:
    """What trials failing for the same reason share: the message with its quoted values and
    numbers masked (``timed out after 120 s`` and ``… 121 s`` are one cause)."""
    return _VARYING.sub("…", message)


def failure_summary(store: Store, run_id: str, *, reveal_held_out: bool = False) -> RunFailures:
    """Per agent of the run: its trials by outcome and its failures grouped by cause, most
    frequent first, each with one example message (for a held-out run without
    ``reveal_held_out``, examples that could quote the item are reduced to their kind)."""
    run = store.get_run(run_id)
    withheld = run.held_out and not reveal_held_out
    ids = store.run_item_ids(run_id)
    position = {item_id: n for n, item_id in enumerate(ids, 1)}
    counts: dict[str, Counter[Outcome]] = {}
    tally: dict[str, Counter[tuple[Outcome, str, str]]] = {}
    first: dict[tuple[str, Outcome, str, str], tuple[str, str]] = {}  # an example per cause
    for row in store.trials(run_id):
        outcome = outcome_of(row.status, row.answer_json, row.correct)
        counts.setdefault(row.agent, Counter())[outcome] += 1
        if outcome not in FAILURES:
            continue
        kind, detail = _cause(row, outcome, _load(row.score_json) or {})
        kind = kind or outcome
        message = detail or kind
        key = (outcome, kind, _cause_key(message))
        tally.setdefault(row.agent, Counter())[key] += 1
        if (row.agent, *key) not in first:
            where = f"item {position.get(row.item_id, '?')}" if withheld else row.item_id
            first[(row.agent, *key)] = (kind if withheld and outcome == "unparsed" else message, where)
    agents: list[AgentFailures] = []
    for ra in store.run_agents(run_id):
        by_cause = tally.get(ra.name, Counter())
        agents.append(
            AgentFailures(
                agent=ra.name,
                role=ra.role,
                counts=dict(counts.get(ra.name, Counter())),
                causes=tuple(
                    Cause(o, kind, n, *first[(ra.name, o, kind, masked)])
                    for (o, kind, masked), n in sorted(
                        by_cause.items(), key=lambda kv: (-kv[1], kv[0])
                    )
                ),
            )
        )
    return RunFailures(run_id, tuple(agents))
