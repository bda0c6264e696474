"""Who may see what of a held-out run: operators who ask for it, and nobody else.

The daemon's scheduled runs draw their seeds from the held-out share of the seed space so that an
agent tuned to the suite shows up. That works only while the agent under test cannot learn the
held-out items, so every door — the reports (md, html, json, csv, headline csv, compare,
history), ``trials``, ``ledger show`` and ``ledger export``, the dashboard and every route of the
daemon's API — withholds, for a held-out run and unless an operator asks for it
(``--reveal-held-out`` at the command line; an operator token with ``?reveal_held_out=true`` on
the API; ``reveal_held_out=True`` in Python):

- its **seeds** (the run's and its items'): they regenerate the items;
- its **item bodies**: story text, prompts, matrix prompts, game parameters, and the targets'
  answers to each matrix item (the observations recorded in the ledger included);
- its **expected answers** and everything a scorer derived from an item (score details);
- the **ids that identify its items**: item ids, story ids, the ids of the exposure and pilot
  items of a matrix run, and the item a ledger prediction names. Rows keep run-local labels
  (``item 3``, ``story 2``) so that they still group.

What stays: the run's id, suite, status, agents, counts, every figure with its interval, each
trial's outcome and costs, and a ledger entry's hashes (its entry hash, signature, commitment
and query hash), which prove the record without showing it.

A development run is never withheld: its seed reproduces it. The predicate is
:func:`withholds`; the functions below apply it to one kind of record each, as data in, data
out, so that every layer words the rule the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "HELD_OUT_NOTE",
    "SEED_WITHHELD",
    "SEED_WITHHELD_PHRASE",
    "TrialRowRedactor",
    "disclosed_matrix",
    "disclosed_params",
    "disclosed_prediction",
    "item_label",
    "seed_cell",
    "seed_phrase",
    "shown_seed",
    "withholds",
]

SEED_WITHHELD = "withheld"
"""What a table cell shows in place of a held-out run's seed."""

SEED_WITHHELD_PHRASE = "seed withheld (held-out run)"
"""What a sentence says in place of ``seed N`` for a held-out run."""


HELD_OUT_NOTE = "held-out run: its items are withheld (operators: --reveal-held-out)"
"""What a record whose items were withheld says about it (its ``withheld`` field)."""


def withholds(*, held_out: bool, reveal_held_out: bool = False) -> bool:
    """The rule: whether a reader sees a run without its seeds, items and expected answers —
    a held-out run, unless an operator asks (``reveal_held_out``)."""
    return bool(held_out) and not reveal_held_out


def shown_seed(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> int | None:
    """The seed a reader may see: ``seed`` for a development run or when an operator asks,
    else None."""
    return None if withholds(held_out=held_out, reveal_held_out=reveal_held_out) else seed


def seed_cell(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> str:
    """A table cell: ``"1234"``, or :data:`SEED_WITHHELD` for a held-out run (also when an
    operator asks but the seed was already withheld upstream)."""
    shown = shown_seed(seed, held_out=held_out, reveal_held_out=reveal_held_out)
    if shown is None:
        return SEED_WITHHELD if held_out else "—"
    return str(shown)


def seed_phrase(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> str:
    """Prose: ``"seed 1234"``, or :data:`SEED_WITHHELD_PHRASE` for a held-out run."""
    shown = shown_seed(seed, held_out=held_out, reveal_held_out=reveal_held_out)
    if shown is None:
        return SEED_WITHHELD_PHRASE if held_out else "seed unknown"
    return f"seed {shown}"


def item_label(position: int | None) -> str:
    """What a withheld item is called: its place in the run (``item 3``), never its id."""
    return f"item {position if position is not None else '?'}"


_PILOT_KEPT = ("method", "filter", "targets", "samples", "n_candidates", "n_kept", "dropped",
               "by_kind", "divergent", "verdict", "errors")  # fmt: skip
"""What a withheld run's pilot record keeps: its verdict and counts, not its candidates (their
ids and every target's answers to them) nor the ids it kept."""


def disclosed_params(
    params: Mapping[str, Any], *, held_out: bool, reveal_held_out: bool = False
) -> dict[str, Any]:
    """A run's stored params as a reader may see them: for a withheld run without ``seed``,
    with ``exposure`` (a matrix run's exposure item ids) as its count and ``pilot`` without
    its candidates and kept ids."""
    out = dict(params)
    if not withholds(held_out=held_out, reveal_held_out=reveal_held_out):
        return out
    out.pop("seed", None)
    if isinstance(out.get("exposure"), list):
        out["exposure"] = len(out["exposure"])
    pilot = out.get("pilot")
    if isinstance(pilot, Mapping):
        out["pilot"] = {k: pilot[k] for k in _PILOT_KEPT if k in pilot}
    return out


class TrialRowRedactor:
    """Withholds a held-out run's trials row by row (the per-trial CSV): an item id becomes
    :func:`item_label` of its place in the run, a story id ``story N`` (in order of first
    appearance, so rows of one story still group), the agent's answer and an error's text are
    left out (they quote the item), and the scorer's record keeps its verdict (``correct``,
    ``value``, ``error_codes``, ``primary_error``) but not its details (expected answer, best
    responses, target action …), except an A/B/C ``scenario``, relabelled ``scenario-N``."""

    def __init__(self, positions: Mapping[str, int]) -> None:
        self.positions = positions
        self.stories: dict[str, str] = {}
        self.scenarios: dict[str, str] = {}

    def item(self, item_id: str) -> str:
        return item_label(self.positions.get(item_id))

    def story(self, story_id: str) -> str:
        if not story_id:
            return story_id
        return self.stories.setdefault(story_id, f"story {len(self.stories) + 1}")

    def score(self, raw: str | None) -> str | None:
        if not raw:
            return raw
        try:
            score = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(score, dict):
            return None
        kept = {k: score[k] for k in ("correct", "value", "error_codes", "primary_error")
                if k in score}  # fmt: skip
        details = score.get("details")
        if isinstance(details, dict) and details.get("scenario") is not None:
            scenario = str(details["scenario"])
            label = self.scenarios.setdefault(scenario, f"scenario-{len(self.scenarios) + 1}")
            kept["details"] = {"scenario": label}
        return json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @staticmethod
    def text(value: str | None) -> str:
        """An answer or an error message: withheld when there is one."""
        return SEED_WITHHELD if value else ""


def disclosed_matrix(
    summary: Mapping[str, Any], *, held_out: bool, reveal_held_out: bool = False
) -> dict[str, Any]:
    """A matrix run's summary as a reader may see it: for a withheld run, each of its
    ``items`` without its id, prompt and the targets' answers — its label, how many answers
    each target gave and how many distinct modal answers they had."""
    out = dict(summary)
    if not withholds(held_out=held_out, reveal_held_out=reveal_held_out):
        return out
    out["seed"] = None
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [
            {
                "item": item_label(n),
                "answers": {
                    t: len(a) for t, a in (it.get("answers") or {}).items() if isinstance(a, list)
                },
                "distinct_modes": it.get("distinct_modes"),
                "withheld": HELD_OUT_NOTE,
            }
            for n, it in enumerate(items, 1)
            if isinstance(it, Mapping)
        ]
    return out


def disclosed_prediction(
    record: Mapping[str, Any], *, held_out: bool, reveal_held_out: bool = False
) -> dict[str, Any]:
    """A ledger prediction (``PredictionState.to_dict``) as a reader may see it. One made on a
    held-out run's item keeps its id, state, predictor and target, its hashes (commitment and
    query hash), times and scores; its ``query`` and ``item`` become None, its ``observed``
    answers an empty list (``observed_count`` says how many), its provenance only who observed
    it, its condition only its plain fields; ``withheld`` says why. Every other prediction is
    shown as it is (with ``withheld`` None)."""
    out = dict(record)
    if not withholds(held_out=held_out, reveal_held_out=reveal_held_out):
        out.setdefault("withheld", None)
        return out
    observed = record.get("observed") or []
    condition = record.get("condition")
    out.update(
        query=None,
        item=None,
        observed=[],
        observed_count=len(observed),
        provenance=[
            {k: p[k] for k in ("by", "target") if k in p}
            for p in record.get("provenance") or []
            if isinstance(p, Mapping)
        ],
        condition=(
            {k: v for k, v in condition.items() if isinstance(v, str | int | float | bool)}
            if isinstance(condition, Mapping)
            else None
        ),
        proxied=None,
        reason=None if record.get("reason") is None else "withheld",
        withheld=HELD_OUT_NOTE,
    )
    return out
