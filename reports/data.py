"""A run's items and trials as columns: the only part of :mod:`reports` that reads the database.

:func:`load_run` issues one query for the run, one for its agents, one for its items and one for
its trials, and turns the rows into numpy arrays (no ORM objects, no per-item hash re-check: the
ledger's ``verify`` does that). Everything downstream is pure.

Item meta conventions read here (missing keys are tolerated; a statistic that needs one says so):

- NestToM (``family == "nesttom"``): ``depth`` ("R0" … "R5", "R2-self", "R3-loop"),
  ``depth_n``, ``belief`` ("true"/"false"), ``question`` ("belief"/"behaviour"/"judgment"),
  ``story_id``, ``length``, ``mechanism``, ``agents``, ``form``, ``selection`` ("companion"
  for the shallower questions asked on a story only for joint accuracy), ``block`` (the
  baseline test the item belongs to: "B1" depth curve, "B2" length sweep, "B4" applied),
  ``reality_check`` (R0), ``r2_self``, and ``ambiguous`` (what the error coding cannot tell
  apart, e.g. ``"reality_leak=own_belief"``). Items whose ``block`` is not a baseline test
  ("quick", or absent) get one inferred from the design (:func:`infer_blocks`), and
  :attr:`ItemTable.block_source` says so.
- Hi-ToM (``"hitom"``): ``depth`` (order), ``story_id``.
- Games (``"games"``): ``game``, ``condition``, ``target_depth``, ``opponent_level``, ``lambda``,
  ``variant``, ``excluded`` (a level-k trial whose K_B would be ambiguous: left out, as the
  games summary does), ``question`` ("A"/"B"/"C", and "K" for opponent-type inference) and a
  group key (``scenario``) tying a scenario's items; ``truth["abc_differ"]`` says whether its
  A, B and C truths differ.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa

from ledger.calls import Calls, summarise
from ledger.models import ItemRow, RunItemRow, TrialRow
from ledger.store import RunAgent, Store, TrialRecord

__all__ = [
    "DEPTH_ORDER",
    "ItemTable",
    "RunData",
    "TrialTable",
    "infer_blocks",
    "load_run",
    "run_data",
    "trial_columns",
]

DEPTH_ORDER = ("R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5")
"""NestToM depth labels in report order."""

_DEPTH_N = {"R0": 0, "R1": 1, "R2": 2, "R2-self": 2, "R3": 3, "R3-loop": 3, "R4": 4, "R5": 5}
ABC_GROUP_KEYS = ("abc_group", "abc_id", "scenario_id", "scenario", "group_id", "group")
"""Meta keys, in order, that tie the A, B and C items about one scenario together."""
BLOCK_KEYS = ("block", "suite_block", "suite")
"""Meta keys, in order, that name an item's baseline test ("B1", "B2", "B4", ...)."""
_BLOCK = re.compile(r"^B\d+$", re.IGNORECASE)


def _block_of(meta: Mapping[str, Any]) -> str:
    for key in BLOCK_KEYS:
        v = meta.get(key)
        if type(v) is str and _BLOCK.match(v.strip()):
            return v.strip().upper()
    return ""


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
    if label in _DEPTH_N:
        return float(_DEPTH_N[label])
    m = re.match(r"^R(\d+)", label)
    return float(m.group(1)) if m else math.nan


def depth_sort_key(label: str) -> tuple[int, float, str]:
    if label in DEPTH_ORDER:
        return (0, float(DEPTH_ORDER.index(label)), label)
    return (1, depth_label_number(label), label)


def _n_choices(answer: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
    kind = answer.get("kind")
    if kind in ("choice", "distribution") and isinstance(answer.get("choices"), list):
        return float(len(answer["choices"])) or math.nan
    if kind == "yesno":
        return 2.0
    if kind == "integer":
        try:
            return float(int(answer["max"]) - int(answer["min"]) + 1)
        except (KeyError, TypeError, ValueError):
            return math.nan
    v = meta.get("n_choices")
    return float(v) if isinstance(v, int | float) and v > 0 else math.nan


def _num(v: Any) -> float:
    if isinstance(v, bool):
        return math.nan
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _str(v: Any) -> str:
    return "" if v is None else str(v)


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
    """R0: the question asks where the object really is (``meta["reality_check"]``, else R0)."""
    r2_self: npt.NDArray[np.bool_] = field(default_factory=lambda: np.empty(0, bool))
    """R2-self: "what does X think *you* believe?" (``meta["r2_self"]``, else the label)."""
    ambiguous: list[tuple[str, ...]] = field(default_factory=list)
    """The item's ``meta["ambiguous"]`` tags (empty when it lists none or has no such key)."""
    block_names: tuple[str, ...] = ()
    """Every ``block`` name the NestToM items' meta carries, as written ("quick", "B1", ...)."""

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {iid: i for i, iid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_bodies(cls, bodies: Sequence[Mapping[str, Any]]) -> ItemTable:
        """Build the columns from item dicts (:meth:`mindledger.items.Item.to_dict` form)."""
        n = len(bodies)
        names: set[str] = set()
        cols: dict[str, list[Any]] = {
            k: [None] * n
            for k in ["family", "depth", "depth_n", "belief", "question", "story", "length",
                      "game", "condition", "target_depth", "lam", "group", "n_choices", "truth",
                      "meta", "ids", "excluded", "abc_differ", "block", "stream", "selection",
                      "mechanism", "form", "reality_check", "r2_self", "ambiguous"]
        }
        for i, b in enumerate(bodies):
            meta = b.get("meta") or {}
            fam = _str(b.get("family"))
            iid = _str(b.get("id"))
            cols["ids"][i] = iid
            cols["family"][i] = fam
            cols["meta"][i] = meta
            depth = meta.get("depth")
            if isinstance(depth, int | float) and not isinstance(depth, bool):
                label = f"R{int(depth)}"
            else:
                label = _str(depth)
            cols["depth"][i] = label
            dn = _num(meta.get("depth_n"))
            if math.isnan(dn):
                dn = depth_label_number(label)
            cols["depth_n"][i] = dn
            cols["belief"][i] = _str(meta.get("belief")).lower()
            q = _str(meta.get("question"))
            if not q and fam in ("nesttom", "hitom"):
                q = "belief"
            cols["question"][i] = q
            cols["story"][i] = _str(meta.get("story_id"))
            cols["length"][i] = _num(meta.get("length"))
            cols["game"][i] = _str(meta.get("game"))
            cols["condition"][i] = _str(meta.get("condition"))
            cols["target_depth"][i] = _num(meta.get("target_depth"))
            cols["lam"][i] = _num(meta.get("lambda"))
            group = ""
            for key in ABC_GROUP_KEYS:
                if meta.get(key) is not None:
                    group = _str(meta[key])
                    break
            cols["group"][i] = group
            cols["n_choices"][i] = _n_choices(b.get("answer") or {}, meta)
            truth = b.get("truth") or {}
            if not isinstance(truth, Mapping):
                truth = {}
            cols["truth"][i] = truth.get("answer", truth.get("target_action"))
            cols["excluded"][i] = meta.get("excluded") is True
            differ = truth.get("abc_differ")
            cols["abc_differ"][i] = differ if isinstance(differ, bool) else None
            if fam == "nesttom":
                cols["block"][i] = _block_of(meta)
                raw = meta.get("block")
                if type(raw) is str:
                    names.add(raw)
            else:
                cols["block"][i] = ""
            params = b.get("params") or {}
            stream = params.get("stream") if isinstance(params, Mapping) else None
            cols["stream"][i] = "" if stream is None else str(stream)
            cols["selection"][i] = _str(meta.get("selection")).lower()
            cols["mechanism"][i] = _str(meta.get("mechanism"))
            cols["form"][i] = _str(meta.get("form"))
            rc = meta.get("reality_check")
            cols["reality_check"][i] = fam == "nesttom" and (
                rc is True if isinstance(rc, bool) else cols["depth_n"][i] == 0)
            rs = meta.get("r2_self")
            cols["r2_self"][i] = fam == "nesttom" and (
                rs is True if isinstance(rs, bool) else label == "R2-self")
            amb = meta.get("ambiguous")
            cols["ambiguous"][i] = tuple(str(x) for x in amb) if isinstance(amb, list) else ()
        nt = [i for i in range(n) if cols["family"][i] == "nesttom"]
        named = sum(1 for i in nt if cols["block"][i])
        source = "none" if not nt else (
            "meta" if named == len(nt) else "inferred" if named == 0 else "mixed"
        )
        missing = [i for i in nt if not cols["block"][i]]
        if missing:
            guessed = infer_blocks(
                [cols["question"][i] for i in missing],
                [cols["depth"][i] for i in missing],
                [cols["length"][i] for i in missing],
                [cols["story"][i] for i in missing],
                [cols["stream"][i] for i in missing],
            )
            for i, g in zip(missing, guessed, strict=True):
                cols["block"][i] = g

        def obj(name: str) -> npt.NDArray[Any]:
            a = np.empty(n, dtype=object)
            a[:] = cols[name]
            return a

        return cls(
            ids=cols["ids"],
            family=obj("family"),
            depth=obj("depth"),
            depth_n=np.asarray(cols["depth_n"], dtype=float),
            belief=obj("belief"),
            question=obj("question"),
            story=obj("story"),
            length=np.asarray(cols["length"], dtype=float),
            game=obj("game"),
            condition=obj("condition"),
            target_depth=np.asarray(cols["target_depth"], dtype=float),
            lam=np.asarray(cols["lam"], dtype=float),
            group=obj("group"),
            n_choices=np.asarray(cols["n_choices"], dtype=float),
            excluded=np.asarray(cols["excluded"], dtype=bool),
            abc_differ=cols["abc_differ"],
            truth_answer=cols["truth"],
            meta=cols["meta"],
            block=obj("block"),
            block_source=source,
            selection=obj("selection"),
            mechanism=obj("mechanism"),
            form=obj("form"),
            reality_check=np.asarray(cols["reality_check"], dtype=bool),
            r2_self=np.asarray(cols["r2_self"], dtype=bool),
            ambiguous=cols["ambiguous"],
            block_names=tuple(sorted(names)),
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
    _details: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.agent)

    def details(self, row: int) -> dict[str, Any]:
        """The ``details`` dict of the trial's score (parsed on first use; {} when absent)."""
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


@dataclass
class RunData:
    """Everything a profile needs about one run."""

    run: dict[str, Any]
    agents: list[RunAgent]
    items: ItemTable
    trials: TrialTable
    proxy: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The query proxy's record of the run's agents as callers (:func:`ledger.calls.summarise`:
    calls, calls that carried a prediction, refusals, open obligations), all calls so far."""


def run_data(
    run: Mapping[str, Any],
    agents: Sequence[RunAgent],
    items: Sequence[Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
) -> RunData:
    """Assemble :class:`RunData` from plain dicts (trial dicts use the ``trials`` columns)."""
    columns = {c: [t.get(c) for t in trials] for c in _TRIAL_COLUMNS}
    return _from_columns(run, agents, items, columns)


def trial_columns(t: TrialRecord) -> dict[str, Any]:
    """A trial record as :func:`run_data` takes it (the ``trials`` table's columns)."""
    from mindledger.canonical import canonical_json

    def js(v: Any) -> str | None:
        return None if v is None else canonical_json(v).decode("utf-8")

    return {
        "agent": t.agent,
        "item_id": t.item_id,
        "status": t.status,
        "correct": t.correct,
        "confidence": t.confidence,
        "score_value": t.score_value,
        "primary_error": t.primary_error,
        "tokens_in": t.tokens_in,
        "tokens_out": t.tokens_out,
        "latency_s": t.latency_s,
        "score_json": js(t.score),
        "answer_json": js(t.answer),
        "error": t.error,
    }


def _floats(values: Sequence[Any]) -> npt.NDArray[np.float64]:
    """None → nan; bools and numbers → float (numpy does the loop)."""
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def _from_columns(
    run: Mapping[str, Any],
    agents: Sequence[RunAgent],
    items: Sequence[Mapping[str, Any]],
    cols: Mapping[str, Sequence[Any]],
) -> RunData:
    table = ItemTable.from_bodies(items)
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


_TRIAL_COLUMNS = (
    "agent",
    "item_id",
    "status",
    "correct",
    "confidence",
    "score_value",
    "primary_error",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "score_json",
    "answer_json",
    "error",
)


def load_run(store: Store, run_id: str) -> RunData:
    """Read one run (raises :class:`~mindledger.errors.NotFoundError` for an unknown id)."""
    row = store.get_run(run_id)
    try:
        params = json.loads(row.params_json)
    except ValueError:
        params = {}
    run = {
        "id": row.id,
        "suite": row.suite,
        "seed": row.seed,
        "held_out": bool(row.held_out),
        "status": row.status,
        "created_at": row.created_at,
        "finished_at": row.finished_at,
        "params": params,
    }
    agents = store.run_agents(run_id)
    it = ItemRow.__table__  # type: ignore[attr-defined]
    ri = RunItemRow.__table__  # type: ignore[attr-defined]
    tr = TrialRow.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        bodies = [
            json.loads(body)
            for (body,) in conn.execute(
                sa.select(it.c.body_json)
                .join(ri, ri.c.item_id == it.c.id)
                .where(ri.c.run_id == run_id)
                .order_by(ri.c.position)
            )
        ]
        rows = conn.execute(
            sa.select(*[tr.c[c] for c in _TRIAL_COLUMNS])
            .where(tr.c.run_id == run_id)
            .order_by(tr.c.id)
        ).all()
    if rows:
        transposed = list(zip(*rows, strict=True))
        columns = {c: transposed[j] for j, c in enumerate(_TRIAL_COLUMNS)}
    else:
        columns = {c: () for c in _TRIAL_COLUMNS}
    data = _from_columns(run, agents, bodies, columns)
    data.proxy = proxy_record(store, [a.base_agent or a.name for a in agents])
    return data


def proxy_record(store: Store, callers: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The query proxy's record (``call`` and ``refuse`` entries of the prediction ledger) of
    ``callers``, per caller; callers that never called the proxy are left out."""
    subjects = sorted({f"agent:{c}" for c in callers})
    if not subjects:
        return {}
    le = sa.table(
        "ledger_entries", sa.column("seq"), sa.column("subject"), sa.column("kind"),
        sa.column("payload_json"),
    )  # fmt: skip
    fold = Calls()
    with store.engine.connect() as conn:
        for seq, kind, payload in conn.execute(
            sa.select(le.c.seq, le.c.kind, le.c.payload_json)
            .where(le.c.subject.in_(subjects), le.c.kind.in_(("call", "refuse")))
            .order_by(le.c.seq)
        ):
            fold.apply(int(seq), kind, json.loads(payload))
    return summarise(fold.by_caller())
