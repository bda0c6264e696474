"""A run's items and trials as columns: the only part of :mod:`reports` that reads the database.

:func:`load_run` issues one query for the run, one for its agents, one for its items and one for
its trials, and turns the rows into numpy arrays (no ORM objects, no per-item hash re-check: the
ledger's ``verify`` does that). Everything downstream is pure.

Items' design factors (depth, belief, game, condition, the scenario that ties A, B and C
questions, ...) are not read from their ``meta`` here: each item's family maps its own meta to a
:class:`~mindledger.design.DesignRecord` (:meth:`mindledger.family.Family.design`), computed once
per item (trials share their item's row). An item of a family no one registered gets
:func:`~mindledger.design.common_design` (its number of choices and the truth's ``answer``,
nothing else), so a statistic that needs a factor finds none and says so. NestToM items whose
record names no baseline test (``block`` "quick", or absent) get one inferred from the design
(:func:`infer_blocks`), and :attr:`ItemTable.block_source` says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import numpy.typing as npt

from ledger.calls import Calls, summarise
from ledger.reader import TRIAL_COLUMNS, Readable, RunAgent, StoredRun
from mindledger.design import DesignRecord, common_design
from mindledger.family import UnknownFamilyError, registry
from mindledger.items import Item
from nesttom import DEPTHS
from nesttom.family import depth_number
from reports._json import JsonValue
from reports.model_sections import ProxyAgent

if TYPE_CHECKING:
    from ledger.store import TrialRecord

__all__ = [
    "DEPTH_ORDER",
    "ItemTable",
    "Judged",
    "RunColumns",
    "RunData",
    "TrialColumns",
    "TrialTable",
    "depth_label_number",
    "depth_sort_key",
    "infer_blocks",
    "judgements_of",
    "load_run",
    "run_data",
    "trial_columns",
]

DEPTH_ORDER: tuple[str, ...] = DEPTHS
"""NestToM depth labels in report order (the generator's :data:`nesttom._generator.DEPTHS`)."""


def infer_blocks(
    question: Sequence[str],
    depth: Sequence[str],
    length: Sequence[float],
    story: Sequence[str],
    stream: Sequence[str],
) -> list[str]:
    """The baseline block of NestToM items that do not name theirs (one entry per item).

    Behaviour and judgment questions are B4. Belief questions are grouped by the generator
    stream that drew them (``params["stream"]``; one group when absent): with one group every
    belief question is B1; otherwise a group whose stories all carry applied questions is B4
    (their belief side), a group at a single depth label with several story lengths is B2 (the
    length sweep), and any other group B1.
    """
    n = len(question)
    out = [""] * n
    applied_stories = {
        story[i] for i in range(n) if question[i] in ("behaviour", "judgment") and story[i]
    }
    groups: dict[str, list[int]] = {}
    for i in range(n):
        if question[i] in ("behaviour", "judgment"):
            out[i] = "B4"
        else:
            groups.setdefault(stream[i], []).append(i)
    for members in groups.values():
        block = "B1"
        if len(groups) > 1:
            stories = {story[i] for i in members}
            depths = {depth[i] for i in members}
            lengths = {length[i] for i in members if math.isfinite(length[i])}
            if stories and all(s and s in applied_stories for s in stories):
                block = "B4"
            elif len(depths) == 1 and len(lengths) >= 2:
                block = "B2"
        for i in members:
            out[i] = block
    return out


def depth_label_number(label: str) -> float:
    """The numeric depth of a label: ``R3-loop`` → 3; ``R7`` → 7; unknown → nan."""
    return depth_number(label)


def depth_sort_key(label: str) -> tuple[int, float, str]:
    """Report order of depth labels: NestToM's first, in :data:`DEPTH_ORDER`, then by number."""
    if label in DEPTH_ORDER:
        return (0, float(DEPTH_ORDER.index(label)), label)
    return (1, depth_label_number(label), label)


def _str(v: Any) -> str:
    return "" if v is None else str(v)


def _mapping(v: Any) -> Mapping[str, JsonValue]:
    return v if type(v) is dict or isinstance(v, Mapping) else {}


def _strings(v: Any) -> dict[str, str]:
    return {str(k): _str(x) for k, x in _mapping(v).items()}


def _item(body: Mapping[str, Any], family: str, iid: str) -> Item:
    """A stored item body as an :class:`Item`, without re-hashing it (the ledger's ``verify``
    checks ids); fields a body lacks are left empty (an id-less body gets a placeholder id, not
    a hash)."""
    seed = body.get("seed")
    return Item(
        family=family,
        generator=_str(body.get("generator")),
        version=_str(body.get("version")),
        seed=seed if isinstance(seed, int) else 0,
        params=_mapping(body.get("params")),
        prompt=_str(body.get("prompt")),
        answer=_mapping(body.get("answer")),
        truth=_mapping(body.get("truth")),
        meta=_mapping(body.get("meta")),
        tools=tuple(body.get("tools") or ()),
        tool_results=_strings(body.get("tool_results")),
        id=iid or "unidentified",
    )


def _designs(families: Sequence[str], items: Sequence[Item]) -> list[DesignRecord]:
    """Each item's design record, from its family (:func:`common_design` for an unregistered
    one)."""
    by_family: dict[str, Callable[[Item], DesignRecord]] = {}
    out = []
    for fam, item in zip(families, items, strict=True):
        design = by_family.get(fam)
        if design is None:
            try:
                design = registry.get(fam).design
            except UnknownFamilyError:
                design = common_design
            by_family[fam] = design
        out.append(design(item))
    return out


@dataclass
class ItemTable:
    """One row per item of the run, in run order; string columns are "" when unknown."""

    ids: list[str]
    family: npt.NDArray[Any]
    depth: npt.NDArray[Any]
    depth_n: npt.NDArray[np.float64]
    belief: npt.NDArray[Any]
    question: npt.NDArray[Any]
    story: npt.NDArray[Any]
    length: npt.NDArray[np.float64]
    game: npt.NDArray[Any]
    condition: npt.NDArray[Any]
    target_depth: npt.NDArray[np.float64]
    lam: npt.NDArray[np.float64]
    group: npt.NDArray[Any]
    n_choices: npt.NDArray[np.float64]
    excluded: npt.NDArray[np.bool_]
    abc_differ: list[bool | None]
    truth_answer: list[Any]
    meta: list[Mapping[str, Any]]
    index: dict[str, int] = field(default_factory=dict)
    block: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    """NestToM baseline block ("B1", "B2", "B4"; "" for other families)."""
    block_source: str = "none"
    """"meta" (every NestToM item names its block), "inferred" (none does), "mixed" or "none"."""
    selection: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    """NestToM item selection: "adversarial", "control", "companion" ("" when unknown)."""
    mechanism: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    form: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    reality_check: npt.NDArray[np.bool_] = field(default_factory=lambda: np.empty(0, bool))
    """R0: the question asks where the object really is."""
    r2_self: npt.NDArray[np.bool_] = field(default_factory=lambda: np.empty(0, bool))
    """R2-self: "what does X think *you* believe?"."""
    ambiguous: list[tuple[str, ...]] = field(default_factory=list)
    """What the item's error coding cannot tell apart (empty when nothing)."""
    block_names: tuple[str, ...] = ()
    """Every block name the NestToM items carry, as written ("quick", "B1", ...)."""
    counterfactual: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    """Repeated games: the counterfactual setting ("" for B6 episodes and other families)."""
    opponent: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    """Repeated games: the scripted opponent."""
    matched: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=object))
    """Repeated games: the matched set (same opponent and draws across settings; "": none)."""
    b6: npt.NDArray[np.bool_] = field(default_factory=lambda: np.empty(0, bool))
    """Repeated games: a B6 switching-bot episode."""
    resolve_chance: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    """Level-k trials: the share of the action space a uniformly random action resolves to one
    depth (nan elsewhere; empty when the table was built without it)."""

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {iid: i for i, iid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_bodies(cls, bodies: Sequence[Mapping[str, Any]]) -> ItemTable:
        """Build the columns from item dicts (:meth:`mindledger.items.Item.to_dict` form); each
        item's factors come from its family's design record."""
        n = len(bodies)
        ids = [_str(b.get("id")) for b in bodies]
        families = [_str(b.get("family")) for b in bodies]
        items = [_item(b, fam, iid) for b, fam, iid in zip(bodies, families, ids, strict=True)]
        rec = _designs(families, items)
        blocks = [r.block for r in rec]
        blocked = [i for i in range(n) if rec[i].in_blocks]
        named = sum(1 for i in blocked if blocks[i])
        source = "none" if not blocked else (
            "meta" if named == len(blocked) else "inferred" if named == 0 else "mixed"
        )
        missing = [i for i in blocked if not blocks[i]]
        if missing:
            guessed = infer_blocks(
                [rec[i].question for i in missing],
                [rec[i].depth for i in missing],
                [rec[i].length for i in missing],
                [rec[i].story for i in missing],
                [rec[i].stream for i in missing],
            )
            for i, g in zip(missing, guessed, strict=True):
                blocks[i] = g

        def obj(values: list[Any]) -> npt.NDArray[Any]:
            a = np.empty(n, dtype=object)
            a[:] = values
            return a

        def floats(values: list[float]) -> npt.NDArray[np.float64]:
            return np.asarray(values, dtype=float)

        def flags(values: list[bool]) -> npt.NDArray[np.bool_]:
            return np.asarray(values, dtype=bool)

        return cls(
            ids=ids,
            family=obj(families),
            depth=obj([r.depth for r in rec]),
            depth_n=floats([r.depth_n for r in rec]),
            belief=obj([r.belief for r in rec]),
            question=obj([r.question for r in rec]),
            story=obj([r.story for r in rec]),
            length=floats([r.length for r in rec]),
            game=obj([r.game for r in rec]),
            condition=obj([r.condition for r in rec]),
            target_depth=floats([r.target_depth for r in rec]),
            lam=floats([r.lam for r in rec]),
            group=obj([r.group for r in rec]),
            n_choices=floats([r.n_choices for r in rec]),
            excluded=flags([r.excluded for r in rec]),
            abc_differ=[r.abc_differ for r in rec],
            truth_answer=[r.truth_answer for r in rec],
            meta=[it.meta for it in items],
            block=obj(blocks),
            block_source=source,
            selection=obj([r.selection for r in rec]),
            mechanism=obj([r.mechanism for r in rec]),
            form=obj([r.form for r in rec]),
            reality_check=flags([r.reality_check for r in rec]),
            r2_self=flags([r.r2_self for r in rec]),
            ambiguous=[r.ambiguous for r in rec],
            block_names=tuple(sorted({r.block_name for r in rec if r.block_name is not None})),
            counterfactual=obj([r.counterfactual for r in rec]),
            opponent=obj([r.opponent for r in rec]),
            matched=obj([r.matched for r in rec]),
            b6=flags([r.b6 for r in rec]),
            resolve_chance=floats([r.resolve_chance for r in rec]),
        )


@dataclass
class TrialTable:
    """One row per trial, in id order. ``item`` indexes :class:`ItemTable` (-1: not in the run)."""

    agent: list[str]
    item_id: list[str]
    item: npt.NDArray[np.int64]
    status: list[str]
    ok: npt.NDArray[np.bool_]
    correct: npt.NDArray[np.float64]
    confidence: npt.NDArray[np.float64]
    score_value: npt.NDArray[np.float64]
    primary_error: npt.NDArray[Any]
    tokens_in: npt.NDArray[np.float64]
    tokens_out: npt.NDArray[np.float64]
    latency: npt.NDArray[np.float64]
    score_json: list[str | None]
    answer_json: list[str | None]
    error: list[str | None]
    _details: dict[int, Mapping[str, JsonValue]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.agent)

    def details(self, row: int) -> Mapping[str, JsonValue]:
        """The ``details`` object of the trial's score, as stored (parsed on first use; {} when
        absent): free JSON whose keys each family's scorer chooses, read by the sections that
        know them."""
        d = self._details.get(row)
        if d is None:
            d = {}
            raw = self.score_json[row]
            if raw:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict) and isinstance(parsed.get("details"), dict):
                    d = parsed["details"]
            self._details[row] = d
        return d


@dataclass(frozen=True)
class Judged:
    """The extraction judge's judgement of one trial, as the profile uses it (a row of
    ``judgements``; see :mod:`harness.run.judging`)."""

    judge: str
    status: str
    """``ok`` or ``parse_error``."""
    cached: bool
    """Answered from the response cache (no model call)."""
    grounded: int
    ungrounded: int
    """Quoted values whose quote is not in the chain of thought."""
    dropped: int
    """Values left out of the re-scoring for that."""
    details: Mapping[str, Any]
    """The trial re-scored with the judge's reading (its score's ``details``; {} when the
    reply could not be read)."""


@dataclass
class RunData:
    """Everything a profile needs about one run."""

    run: dict[str, Any]
    agents: list[RunAgent]
    items: ItemTable
    trials: TrialTable
    proxy: dict[str, ProxyAgent] = field(default_factory=dict)
    """The query proxy's record of the run's agents as callers (:func:`ledger.calls.summarise`:
    calls, calls that carried a prediction, refusals, open obligations), all calls so far."""
    judgements: dict[tuple[str, str], Judged] = field(default_factory=dict)
    """The extraction judge's judgements by (agent, item id) (:func:`judgements_of`)."""


def run_data(
    run: Mapping[str, Any],
    agents: Sequence[RunAgent],
    items: Sequence[Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
) -> RunData:
    """Assemble :class:`RunData` from plain dicts (trial dicts use the ``trials`` columns)."""
    columns = {c: [t.get(c) for t in trials] for c in _TRIAL_COLUMNS}
    return _from_columns(run, agents, ItemTable.from_bodies(items), columns)


class TrialColumns(TypedDict):
    """A trial as :func:`run_data` takes it: the ``trials`` table's columns a profile reads
    (:data:`ledger.reader.TRIAL_COLUMNS`), the score and answer as canonical JSON."""

    agent: str
    item_id: str
    status: str
    correct: bool | None
    confidence: float | None
    score_value: float | None
    primary_error: str | None
    tokens_in: int
    tokens_out: int
    latency_s: float
    score_json: str | None
    answer_json: str | None
    error: str | None


def trial_columns(t: TrialRecord) -> TrialColumns:
    """A trial record as :func:`run_data` takes it (the ``trials`` table's columns)."""
    from mindledger.canonical import canonical_json

    def js(v: Any) -> str | None:
        return None if v is None else canonical_json(v).decode("utf-8")

    return TrialColumns(
        agent=t.agent,
        item_id=t.item_id,
        status=t.status,
        correct=t.correct,
        confidence=t.confidence,
        score_value=t.score_value,
        primary_error=t.primary_error,
        tokens_in=t.tokens_in,
        tokens_out=t.tokens_out,
        latency_s=t.latency_s,
        score_json=js(t.score),
        answer_json=js(t.answer),
        error=t.error,
    )


def _floats(values: Sequence[Any]) -> npt.NDArray[np.float64]:
    """None → nan; bools and numbers → float (numpy does the loop)."""
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def _from_columns(
    run: Mapping[str, Any],
    agents: Sequence[RunAgent],
    table: ItemTable,
    cols: Mapping[str, Sequence[Any]],
) -> RunData:
    item_ids = [str(x) for x in cols["item_id"]]
    n = len(item_ids)
    get = table.index.get
    idx = np.fromiter((get(i, -1) for i in item_ids), np.int64, n)
    pe = np.empty(n, dtype=object)
    pe[:] = list(cols["primary_error"])
    status = [str(s) for s in cols["status"]]
    tt = TrialTable(
        agent=[str(a) for a in cols["agent"]],
        item_id=item_ids,
        item=idx,
        status=status,
        ok=np.array([s == "ok" for s in status], dtype=bool),
        correct=_floats(cols["correct"]),
        confidence=_floats(cols["confidence"]),
        score_value=_floats(cols["score_value"]),
        primary_error=pe,
        tokens_in=np.nan_to_num(_floats(cols["tokens_in"])),
        tokens_out=np.nan_to_num(_floats(cols["tokens_out"])),
        latency=np.nan_to_num(_floats(cols["latency_s"])),
        score_json=list(cols["score_json"]),
        answer_json=list(cols["answer_json"]),
        error=list(cols["error"]),
    )
    return RunData(dict(run), list(agents), table, tt)


_TRIAL_COLUMNS = TRIAL_COLUMNS


def load_run(store: Readable, run_id: str) -> RunData:
    """Read one run (raises :class:`~mindledger.errors.NotFoundError` for an unknown id)
    through a :class:`~ledger.reader.Reader`: a :class:`~ledger.store.Store`'s, or one opened
    without SQLAlchemy."""
    with store.reader() as r:
        run = run_dict(r.get_run(run_id))
        agents = r.run_agents(run_id)
        bodies = [json.loads(body) for body in r.item_bodies(run_id)]
        # the items' columns before the trials' rows: fewer live objects for the collector
        table = ItemTable.from_bodies(bodies)
        del bodies
        rows = r.trial_rows(run_id)
    if rows:
        transposed = list(zip(*rows, strict=True))
        columns = {c: transposed[j] for j, c in enumerate(_TRIAL_COLUMNS)}
    else:
        columns = {c: () for c in _TRIAL_COLUMNS}
    data = _from_columns(run, agents, table, columns)
    data.proxy = proxy_record(store, [a.base_agent or a.name for a in agents])
    data.judgements = judgements_of(store, run_id)
    return data


class RunColumns(TypedDict):
    """A stored run's columns as :attr:`RunData.run` holds them (``params`` decoded)."""

    id: str
    suite: str
    seed: int
    held_out: bool
    status: str
    created_at: str
    finished_at: str | None
    params: dict[str, Any]


def run_dict(run: StoredRun) -> RunColumns:
    """A stored run as :attr:`RunData.run` holds it."""
    return RunColumns(
        id=run.id,
        suite=run.suite,
        seed=run.seed,
        held_out=run.held_out,
        status=run.status,
        created_at=run.created_at,
        finished_at=run.finished_at,
        params=run.params,
    )


def judgements_of(store: Readable, run_id: str) -> dict[tuple[str, str], Judged]:
    """The run's judgements by (agent, item id); of a trial judged by several judges, the
    latest readable one (the latest, if none is); {} when there are none."""
    out: dict[tuple[str, str], Judged] = {}
    with store.reader() as r:
        rows = r.judgement_rows(run_id)
    for agent, item_id, judge, status, cached, grounded, ungrounded, dropped, score_json in rows:
        details: Mapping[str, Any] = {}
        if score_json:
            parsed = json.loads(score_json)
            if isinstance(parsed, dict) and isinstance(parsed.get("details"), dict):
                details = parsed["details"]
        key = (str(agent), str(item_id))
        if status != "ok" and key in out and out[key].status == "ok":
            continue  # an unreadable reply does not hide another judge's reading
        out[key] = Judged(
            str(judge), str(status), bool(cached), int(grounded), int(ungrounded), int(dropped),
            details,
        )
    return out


def proxy_record(store: Readable, callers: Sequence[str]) -> dict[str, ProxyAgent]:
    """The query proxy's record (``call`` and ``refuse`` entries of the prediction ledger) of
    ``callers``, per caller, with their obligations as of the ledger's last entry; callers that
    never called the proxy are left out."""
    subjects = sorted({f"agent:{c}" for c in callers})
    if not subjects:
        return {}
    fold = Calls()
    with store.reader() as r:
        for seq, kind, payload, time in r.proxy_entries(subjects):
            fold.apply(seq, kind, json.loads(payload), time)
        if not fold.tallies:
            return {}
        as_of = r.last_entry_time()
    rows = summarise(fold.by_caller(), as_of)
    return {caller: ProxyAgent.of(row) for caller, row in rows.items()}
