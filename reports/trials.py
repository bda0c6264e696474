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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from ledger.models import TrialRow
from ledger.retention import pruned_transcript
from ledger.store import Store
from mindledger import family as registry
from mindledger.errors import NotFoundError, UserError
from mindledger.items import Item
from reports._json import JsonObject
from reports._outcomes import NO_ANSWER, Outcome, error_kind, outcome_of
from reports.present import MISSING

__all__ = [
    "FAILURES",
    "OUTCOMES",
    "AgentExamples",
    "AgentFailures",
    "Cause",
    "CauseExamples",
    "MessageBlock",
    "Outcome",
    "RunFailures",
    "TrialListing",
    "TrialView",
    "costs_text",
    "failure_summary",
    "list_trials",
    "message_blocks",
    "one_trial",
    "outcome_of",
    "outcome_text",
    "printable",
    "score_text",
    "value_text",
    "wrong_examples",
]

OUTCOMES: tuple[Outcome, ...] = ("ok", "wrong", "unparsed", "error", "answered", "n/a")
"""Every outcome a trial can have, in the order listings count them."""
FAILURES: tuple[Outcome, ...] = ("error", "unparsed")
"""The outcomes that are failures of the agent or its adapter, not of its reasoning."""


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
    prompt: str | None = None
    """The item's prompt: its story and question, or its game (None: withheld)."""
    transcript: tuple[Mapping[str, Any], ...] = ()
    """Every message of the trial in order, exactly as sent and received (tool calls and all)."""
    transcript_pruned: str | None = None
    """The day the transcript was pruned (:mod:`ledger.retention`; then ``transcript`` is
    empty), or None."""
    score: Mapping[str, Any] = field(default_factory=dict)
    """The scorer's record: correct, value, error codes and details."""
    provider: Mapping[str, Any] = field(default_factory=dict)
    """What the endpoint said of itself per turn: models, finish reasons, attempts, cache hits."""
    withheld: bool = False
    """A held-out run's trial seen without ``reveal_held_out``: item, prompt, transcript,
    reply, answer and expected answer are left out."""

    def to_json(self) -> JsonObject:
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
            "prompt": self.prompt,
            "transcript": [dict(m) for m in self.transcript],
            "transcript_pruned": self.transcript_pruned,
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


def _kind(outcome: Outcome, error: str | None, primary_error: str | None) -> str | None:
    """The cause of a trial in one word (:attr:`TrialView.cause`), from its stored columns."""
    if outcome == "error":
        return error_kind(error)[0]
    if outcome == "unparsed":
        return "unparsed"
    if outcome == "wrong":
        return primary_error or "wrong"
    return None


def _cause(row: TrialRow, outcome: Outcome, score: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(cause, detail) of a trial: see :attr:`TrialView.cause`."""
    kind = _kind(outcome, row.error, row.primary_error)
    if outcome == "error":
        return kind, row.error or "no reason recorded"
    if outcome == "unparsed":
        details = score.get("details") if isinstance(score, Mapping) else None
        problem = details.get("parse_problem") if isinstance(details, Mapping) else None
        return kind, str(problem) if problem else NO_ANSWER
    return kind, None


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
        prompt=item.prompt if item is not None else None,
        transcript=tuple(transcript) if isinstance(transcript, list) else (),
        transcript_pruned=pruned_transcript(transcript),
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


class TrialListing(list[TrialView]):
    """The trials :func:`list_trials` shows (a list of views), and the outcomes of every trial
    the filters matched, shown or not (:attr:`matched`): a listing cut at ``limit`` still says
    what it left out."""

    def __init__(self, views: Iterable[TrialView], matched: Counter[str]) -> None:
        super().__init__(views)
        self.matched = matched

    @property
    def total(self) -> int:
        """How many trials the filters matched."""
        return sum(self.matched.values())


def list_trials(
    store: Store,
    run_id: str,
    *,
    agent: str | None = None,
    outcome: str | Iterable[str] | None = None,
    family: str | None = None,
    limit: int | None = None,
    reveal_held_out: bool = False,
) -> TrialListing:
    """The run's trials in the order they were stored, optionally of one agent, with some
    outcomes, of one family: the first ``limit`` as views (only their items are read), with
    the outcomes of all of them. NotFoundError for an unknown run or agent, a UserError for an
    unknown outcome or family."""
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
    stored = store.run_items(run_id)  # the ids and families only: no item is read
    position = {item_id: n for n, item_id in enumerate(stored.ids, 1)}
    family_of = dict(zip(stored.ids, stored.families, strict=True))
    keep: list[TrialRow] = []
    matched: Counter[str] = Counter()
    for row in store.trials(run_id, agent):
        found = outcome_of(row.status, row.answer_json, row.correct)
        if (wanted and found not in wanted) or (
            family is not None and family_of.get(row.item_id) != family
        ):
            continue
        matched[found] += 1
        keep.append(row)
    shown = keep if limit is None else keep[:limit]
    items = {it.id: it for it in store.items_by_id(sorted({r.item_id for r in shown}))}
    views = [
        _view(row, items.get(row.item_id), position=position.get(row.item_id), withheld=withheld)
        for row in shown
    ]
    return TrialListing(views, matched)


def one_trial(
    store: Store, run_id: str, agent: str, item: str, *, reveal_held_out: bool = False
) -> TrialView:
    """One trial whole: ``item`` is the item's id, its unique start, or its position in the
    run (``12``, as listings number a held-out run's items). A held-out run's trial is
    refused without ``reveal_held_out`` (its transcript is the item)."""
    run = store.get_run(run_id)
    _check_agent(store, run_id, agent)
    if run.held_out and not reveal_held_out:  # before the item is looked up: not even its id
        raise UserError(
            f"run {run_id} is held out: its trials show its items, which regenerate from its "
            "withheld seed; operators at the machine see them with --reveal-held-out"
        )
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


_VARYING = re.compile(
    r"(?<=one of: ).*?(?=, got |$)"  # an item's choices
    r"|'[^']*'|\"[^\"]*\"|\d+(?:\.\d+)?"
)

_RUN_OF_MASKS = re.compile(r"…(?:, …)+")  # a list of quoted choices: "a", "b", "c"


def _cause_key(message: str) -> str:
    """What trials failing for the same reason share: the message with its quoted values,
    numbers and the item's list of choices masked (``timed out after 120 s`` and ``… 121 s``
    are one cause; so are ``expected one of: jar, tin, got 'ok'`` and ``expected one of: box,
    safe, got 'no'``)."""
    return _RUN_OF_MASKS.sub("…", _VARYING.sub("…", message))


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


@dataclass(frozen=True)
class CauseExamples:
    """Trials of one agent that went wrong for one reason: how many, and the first few."""

    cause: str
    """:attr:`TrialView.cause`: the scorer's primary error, an API error's kind, ``unparsed``."""
    outcome: Outcome
    """``wrong``, ``unparsed`` or ``error``."""
    count: int
    trials: tuple[TrialView, ...]
    """The first few such trials, in the order they were stored, each whole."""


@dataclass(frozen=True)
class AgentExamples:
    """One agent's wrong and failed trials by cause, the most frequent cause first."""

    agent: str
    role: str
    causes: tuple[CauseExamples, ...]


_NOT_RIGHT: tuple[Outcome, ...] = ("wrong", *FAILURES)


def wrong_examples(
    store: Store,
    run_id: str,
    *,
    per_cause: int = 3,
    roles: Sequence[str] = ("agent",),
    reveal_held_out: bool = False,
) -> tuple[AgentExamples, ...]:
    """Per agent of the run in one of ``roles`` (the agents under test), its wrong, unparsed
    and failed trials grouped by cause (:attr:`TrialView.cause`), each cause with its count and
    its first ``per_cause`` trials whole. Agents with none are left out; so is everything of a
    held-out run without ``reveal_held_out`` (its trials show its items).

    Cheap on a large run: one query reads the few small columns that decide a trial's cause, of
    the trials that are not right, and only the examples are read whole."""
    run = store.get_run(run_id)
    if run.held_out and not reveal_held_out:
        return ()
    agents = [ra for ra in store.run_agents(run_id) if ra.role in roles]
    if not agents:
        return ()
    tr = TrialRow.__table__  # type: ignore[attr-defined]
    stmt = (
        sa.select(tr.c.id, tr.c.agent, tr.c.status, tr.c.answer_json, tr.c.correct,
                  tr.c.primary_error, tr.c.error)
        .where(
            tr.c.run_id == run_id,
            tr.c.agent.in_([ra.name for ra in agents]),
            sa.or_(tr.c.status == "api_error", tr.c.correct.is_(None), tr.c.correct == sa.false()),
        )
        .order_by(tr.c.id)
    )  # fmt: skip
    counts: Counter[tuple[str, Outcome, str]] = Counter()
    chosen: dict[tuple[str, Outcome, str], list[int]] = {}
    with store.engine.connect() as conn:
        for trial_id, agent, status, answer_json, correct, primary_error, error in conn.execute(
            stmt
        ):
            outcome = outcome_of(status, answer_json, correct)
            if outcome not in _NOT_RIGHT:
                continue
            key = (agent, outcome, _kind(outcome, error, primary_error) or outcome)
            counts[key] += 1
            if len(ids := chosen.setdefault(key, [])) < per_cause:
                ids.append(trial_id)
    views = _views_by_id(store, [i for ids in chosen.values() for i in ids])
    out: list[AgentExamples] = []
    for ra in agents:
        causes = [
            CauseExamples(kind, outcome, n, tuple(views[i] for i in chosen[(agent, outcome, kind)]))
            for (agent, outcome, kind), n in counts.items()
            if agent == ra.name
        ]
        if causes:
            causes.sort(key=lambda c: (-c.count, c.cause))
            out.append(AgentExamples(ra.name, ra.role, tuple(causes)))
    return tuple(out)


def _views_by_id(store: Store, ids: Sequence[int]) -> dict[int, TrialView]:
    """The trials with these row ids, whole, by id."""
    if not ids:
        return {}
    with Session(store.engine) as s:
        rows = list(s.exec(select(TrialRow).where(col(TrialRow.id).in_(ids))).all())
    items = {it.id: it for it in store.items_by_id(sorted({r.item_id for r in rows}))}
    return {
        r.id: _view(r, items.get(r.item_id), position=None, withheld=False)
        for r in rows
        if r.id is not None
    }


# -- a trial as text -------------------------------------------------------------------------
# What `mindledger trials --item` prints and the dashboard's transcript screen shows, worded
# once: every text an agent wrote made safe for a terminal, answers as a person reads them.

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe for a terminal: control characters (an escape sequence in a reply could
    rewrite the screen) shown as ``\\xNN``; line breaks and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def value_text(value: Any) -> str:
    """An answer as a person reads it: text as itself, anything else as compact JSON, none as
    :data:`MISSING`."""
    if value is None:
        return MISSING
    if isinstance(value, str):
        return printable(value)
    return printable(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _pretty(value: Any) -> str:
    """Tool-call arguments or any other structure as indented JSON (a string that is not JSON
    as it is)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return printable(value)
    return printable(json.dumps(value, indent=2, ensure_ascii=False))


@dataclass(frozen=True)
class MessageBlock:
    """One message of a transcript as text: ``title`` (its number, role and place),
    ``body`` (its content as sent, its tool calls with their arguments indented)."""

    title: str
    role: str
    body: str


_PLACE_KEYS = ("round", "seat", "agent", "name")
_SHOWN_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id", *_PLACE_KEYS))


def _content(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [printable(content)]
    if isinstance(content, list):  # content parts
        return [
            printable(p["text"]) if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            else _pretty(p)
            for p in content
        ]  # fmt: skip
    return [_pretty(content)]


def _calls(calls: Any) -> list[str]:
    lines = []
    for call in calls if isinstance(calls, list) else [calls]:
        if not isinstance(call, Mapping):
            lines.append(f"→ {_pretty(call)}")
            continue
        fn = call.get("function") or {}
        name = printable(str(fn.get("name", "?"))) if isinstance(fn, Mapping) else "?"
        ident = f" ({printable(str(call['id']))})" if call.get("id") else ""
        lines.append(f"→ calls {name}{ident} with")
        arguments = fn.get("arguments", "") if isinstance(fn, Mapping) else fn
        lines += ["  " + line for line in _pretty(arguments).splitlines()]
    return lines


def _message(n: int, message: Mapping[str, Any]) -> MessageBlock:
    role = printable(str(message.get("role", "?")))
    place = [f"{k} {printable(str(message[k]))}" for k in _PLACE_KEYS if message.get(k) is not None]
    title = f"{n} · {role}" + (f" ({', '.join(place)})" if place else "")
    if message.get("tool_call_id"):
        title += f" · result of {printable(str(message['tool_call_id']))}"
    lines = _content(message.get("content"))
    if message.get("tool_calls"):
        lines += _calls(message["tool_calls"])
    lines += [f"{printable(str(k))}: {value_text(v)}" for k, v in message.items()
              if k not in _SHOWN_KEYS]  # fmt: skip
    return MessageBlock(title, role, "\n".join(lines) if lines else "(empty)")


def message_blocks(transcript: Sequence[Mapping[str, Any]]) -> tuple[MessageBlock, ...]:
    """Every message of a transcript in order, numbered from 1: each text as it was sent."""
    return tuple(
        _message(n, m) if isinstance(m, Mapping) else MessageBlock(f"{n} · ?", "?", _pretty(m))
        for n, m in enumerate(transcript, 1)
    )


def outcome_text(view: TrialView) -> str:
    """``wrong: reality_leak``, ``error: timeout — python3 timed out``, ``ok``: the detail
    without the cause it repeats (errors are stored as ``timeout: python3 timed out``)."""
    text: str = view.outcome
    if view.cause and view.cause != view.outcome:
        text += f": {printable(view.cause)}"
    if view.detail:
        detail = view.detail.removeprefix(f"{view.cause}: ") if view.cause else view.detail
        text += f" — {printable(detail)}"
    return text


_SHOWN_DETAILS = frozenset(("answer", "expected", "parse_problem"))
"""The scorer's details shown elsewhere (the answers, the outcome's detail)."""


def score_text(score: Mapping[str, Any]) -> str:
    """The scorer's record in a line: value, error codes, other details."""
    parts = []
    if score.get("value") is not None:
        parts.append(f"value {value_text(score['value'])}")
    codes = score.get("error_codes")
    if codes:
        parts.append("codes " + ", ".join(printable(str(c)) for c in codes))
    details = score.get("details")
    if isinstance(details, Mapping):
        shown = {k: v for k, v in details.items() if k not in _SHOWN_DETAILS}
        if shown:
            parts.append("details " + value_text(shown))
    return " · ".join(parts) or MISSING


def costs_text(view: TrialView) -> str:
    """Turns, tokens, latency, and what the endpoint said: requests sent (retries included),
    answers from the response cache, models, finish reasons."""
    p = view.provider
    parts = [
        f"{view.turns} turn{'' if view.turns == 1 else 's'}",
        f"{view.tokens_in} tokens in, {view.tokens_out} out",
        f"{view.latency_s:.2f} s",
    ]
    attempts = p.get("attempts")
    if isinstance(attempts, int) and attempts > 0:
        parts.append(f"{attempts} request{'' if attempts == 1 else 's'} sent")
    cached = p.get("cached")
    if isinstance(cached, int) and cached > 0:
        parts.append(f"{cached} from the response cache")
    models = sorted({printable(str(m)) for m in p.get("models") or () if m})
    if models:
        parts.append("model " + ", ".join(models))
    finishes = [printable(str(f)) for f in p.get("finish_reasons") or () if f]
    if finishes:
        parts.append("finish " + ", ".join(finishes))
    return " · ".join(parts)
