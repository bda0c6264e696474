"""Scoring a trial, as the paper scores it: pure functions of the item and the reply.

From the submitted action ``â`` and, when available, the stated belief ``b̂`` and the written
chain ``c`` (read from the reply's structured fields or from a judge's extraction, see
:mod:`games._judge`):

- **accuracy**: ``â == a(k_target)`` (exact; a non-integer or out-of-range number matches no
  depth; a reply with no action is incorrect, never dropped);
- **K_B**: the unique depth ``k ∈ {0…10}`` with ``a(k) = â``; **within-one**:
  ``|K_B − k_target| ≤ 1``;
- **K_L**: one plus the unique depth with ``a(k) = b̂``;
- each signal that fails to resolve is recorded as ``unmatched`` (a value matching no depth),
  ``ambiguous`` (several depths) or ``none`` (no value);
- **best-response consistency**: ``â ∈ BR(b̂)`` against the full best-response set,
  and, when the belief is a distribution, whether ``â`` maximises expected utility under it
  (kept in a separate field);
- **chain**: length ``m = |c|`` and per-step consistency
  ``C = mean[c_{t+1} ∈ BR(c_t)]`` (undefined for ``m < 2``);
- **chance** of each consistency test: the share of the action space that passes it
  (``|BR(b̂)| / |S|``), what a player choosing uniformly at random would reach;
- **mentalizing**: the judge's explicit-strategic-mentalizing flag (``opponent_models_me``
  in the recursive condition, ``spurious_recursion`` in the inductive one), when given.

Items whose target action matches two depths (Ring 11–20 at ``k_target = 10``) carry
``excluded`` in the score details; :func:`summarize` leaves them out of the figures.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from games._spec import Action, GameSpec
from games._strategic import ABC_GENERATOR
from games._strategic_scoring import score_abc_answer
from mindledger.errors import InputError
from mindledger.items import Item, Score

__all__ = [
    "ERROR_CODES",
    "parse_action",
    "read_belief",
    "resolve_chance",
    "score",
    "score_reply",
    "spec_from_truth",
    "summarize",
]

ERROR_CODES: tuple[str, ...] = (
    "no_action",
    "invalid_action",
    "off_sequence",
    "ambiguous",
    "under_iteration",
    "over_iteration",
    "not_best_response_to_belief",
)
"""Error codes of a wrong trial answer, in priority order."""

Number = int | float

_SCALARS = frozenset((int, float, str, bool, type(None)))
"""Exact types that are never mappings: :func:`_is_mapping` skips the ABC check for them."""


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, answered without the ABC check for a dict or a scalar."""
    kind = type(value)
    return kind is dict or (kind not in _SCALARS and isinstance(value, Mapping))


def spec_from_truth(truth: Mapping[str, Any], name: str = "item") -> GameSpec:
    """Rebuild the game from the actions, payoff matrix and anchor stored in an item.

    The items of a run share few games, so a spec is built once per distinct content and name
    and then shared (a :class:`GameSpec` is immutable: frozen fields, a read-only matrix and
    index). The cache key holds the actions and the anchor with their types, so ``60`` and
    ``60.0`` stay apart; the payoffs, which become floats anyway, are compared by value with a
    copy kept beside the spec (comparing lists costs less than hashing a matrix of floats).
    Content that cannot be hashed or compared is built afresh."""
    actions, payoff, anchor = truth["actions"], truth["payoff"], truth["anchor"]
    try:
        key = (name, tuple(actions), tuple(map(type, actions)), anchor, type(anchor))
        built = _cached_spec(key)
        if type(payoff) is list:  # the usual form (lists of rows): compared as it is
            for known, spec in built:
                if known == payoff:
                    return spec
        rows = list(map(list, payoff))
        for known, spec in built:
            if known == rows:
                return spec
    except (TypeError, ValueError):  # unhashable or uncomparable content (a list among the
        return GameSpec.from_matrix(name, actions, payoff, anchor)  # actions): built afresh
    spec = GameSpec.from_matrix(name, actions, payoff, anchor)
    built[:] = [*built[-(_PAYOFFS_PER_KEY - 1) :], (rows, spec)]
    return spec


_PAYOFFS_PER_KEY = 16
"""Most payoff matrices kept per name, actions and anchor by :func:`spec_from_truth`."""


_SPEC_KEYS = 64
"""Most names, actions and anchors whose specs :func:`_cached_spec` keeps (a run's items share a
few games). A kept spec with the payoff rows beside it costs ~80 bytes a payoff (~70 KiB for a
30 x 30 game, ~120 KiB for 39 x 39), and the daemon's nightly runs score a new game variant (a
new name: a new key) every night or two, so this bound is what that memory grows to. At 1,024
keys it grew ~60-80 KiB a night for over a thousand nights (``bench/soak_daemon.py``:
tracemalloc in the soaked daemon put its growing allocation sites here)."""


@functools.lru_cache(maxsize=_SPEC_KEYS)
def _cached_spec(key: tuple[Any, ...]) -> list[tuple[list[list[Any]], GameSpec]]:
    """The specs built for one name, actions and anchor (``key``), each beside its payoff rows
    (a copy of its own): filled by :func:`spec_from_truth`."""
    return []


def parse_action(answer: Any) -> tuple[Number | None, str]:
    """``(value, status)`` with status ``"ok"``, ``"none"`` (no answer) or ``"invalid"``.

    Accepts an int, a finite float (integral floats become ints), a numeric string, or a
    mapping with an ``"action"`` key (the ``submit_action`` arguments).
    """
    if _is_mapping(answer):
        answer = answer.get("action", answer.get("answer"))
    if answer is None:
        return None, "none"
    if type(answer) is int:  # the usual answer, as the isinstance checks below would take it
        return answer, "ok"
    if isinstance(answer, bool):
        return None, "invalid"
    if isinstance(answer, int):
        return answer, "ok"
    if isinstance(answer, float):
        if not math.isfinite(answer):
            return None, "invalid"
        return (int(answer) if answer.is_integer() else answer), "ok"
    if isinstance(answer, str):
        text = answer.strip()
        if not text:
            return None, "none"
        try:
            return int(text), "ok"
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            return None, "invalid"
        return parse_action(value)
    return None, "invalid"


def _signal(value: Number | None, idr: Sequence[Action]) -> tuple[list[int], str]:
    if value is None:
        return [], "none"
    # (a parsed value is never NaN, so list.count's identity shortcut changes nothing)
    count = idr.count(value)
    if count == 0:
        return [], "unmatched"
    if count == 1:
        return [idr.index(value)], "resolved"
    matches = [k for k, a in enumerate(idr) if a == value]
    if not matches:
        return matches, "unmatched"
    if len(matches) > 1:
        return matches, "ambiguous"
    return matches, "resolved"


def resolve_chance(truth: Mapping[str, Any]) -> float | None:
    """The share of the action space whose action matches exactly one depth of the IDR window:
    how often a uniformly random action (or a uniformly random stated belief) resolves to a
    K_B (a K_L), the chance rate the level-k fit is judged against. None when the truth holds
    no IDR sequence or no action space (not a level-k trial)."""
    idr, actions = truth.get("idr"), truth.get("actions")
    if not isinstance(idr, Sequence) or not isinstance(actions, Sequence) or not actions:
        return None
    once = {v for v, count in Counter(idr).items() if count == 1}
    return sum(1 for a in actions if a in once) / len(actions)


def _number(value: Any) -> Number | None:
    v, status = parse_action(value)
    return v if status == "ok" else None


def read_belief(stated: Any) -> dict[str, Any]:
    """Normalise a stated belief into ``{"point", "ambiguous", "distribution", "source"}``.

    Accepted forms: a number; a mapping with ``final_belief_point`` (or ``point`` /
    ``belief``), ``final_belief_ambiguous``, ``belief_support`` (a list of values or of
    ``{"value", "p" | "probability" | "weight"}``) or ``distribution`` (value → weight).
    A belief given only as a distribution takes its unique mode as the point belief.
    """
    out: dict[str, Any] = {"point": None, "ambiguous": False, "distribution": None,
                           "source": None}
    if stated is None:
        return out
    if not _is_mapping(stated):
        out["point"] = _number(stated)
        out["source"] = "point" if out["point"] is not None else None
        return out
    for key in ("final_belief_point", "point", "belief"):
        if stated.get(key) is not None:
            out["point"] = _number(stated[key])
            out["source"] = "point" if out["point"] is not None else None
            break
    out["ambiguous"] = bool(stated.get("final_belief_ambiguous", False))
    dist: dict[Number, float] = {}
    support = stated.get("belief_support")
    if isinstance(support, Sequence) and not isinstance(support, str) and support:
        for entry in support:
            if isinstance(entry, Mapping):
                v = _number(entry.get("value"))
                w = next((entry[k] for k in ("p", "probability", "weight", "likelihood")
                          if isinstance(entry.get(k), int | float)), 1.0)
            else:
                v, w = _number(entry), 1.0
            if v is not None and float(w) > 0:
                dist[v] = dist.get(v, 0.0) + float(w)
    mapping = stated.get("distribution")
    if isinstance(mapping, Mapping):
        for key, w in mapping.items():
            v = _number(key)
            if v is not None and isinstance(w, int | float) and w > 0:
                dist[v] = dist.get(v, 0.0) + float(w)
    if dist:
        total = sum(dist.values())
        out["distribution"] = {v: w / total for v, w in dist.items()}
        if out["point"] is None:
            top = max(dist.values())
            modes = [v for v, w in dist.items() if w == top]
            if len(modes) == 1:
                out["point"] = modes[0]
                out["source"] = "distribution_mode"
    return out


def _chain_values(chain: Sequence[Any] | None) -> list[Number | None]:
    if not chain:
        return []
    values: list[Number | None] = []
    for entry in chain:
        values.append(_number(entry.get("value") if isinstance(entry, Mapping) else entry))
    return values


def score_reply(
    item: Item,
    action: Any,
    stated_belief: Any = None,
    chain: Sequence[Any] | None = None,
) -> Score:
    """Score a trial reply per Appendix D (see the module docstring for the fields).

    ``action`` may be the ``submit_action`` arguments; when ``stated_belief`` or ``chain`` is
    not given and those arguments carry belief fields (``final_belief_point``, ``point``,
    ``belief``, ``belief_support``, ``distribution``) or a ``chain``, they are used, and so is
    a boolean ``mentalizing`` (or ``opponent_models_me`` / ``spurious_recursion``) flag.
    """
    mentalizing: bool | None = None
    if _is_mapping(action):
        for key in ("mentalizing", "opponent_models_me", "spurious_recursion"):
            if isinstance(action.get(key), bool):
                mentalizing = action[key]
                break
        if stated_belief is None and any(
            k in action for k in ("final_belief_point", "point", "belief", "belief_support",
                                  "distribution")
        ):
            stated_belief = action
        if chain is None and isinstance(action.get("chain"), Sequence):
            chain = action["chain"]
    truth = item.truth
    idr: list[Action] = list(truth["idr"])
    k = int(truth["target_depth"])
    target = truth["target_action"]
    spec = spec_from_truth(truth, str(item.meta.get("game_name", "item")))

    value, status = parse_action(action)
    in_space = value is not None and spec.has_action(value)
    correct = status == "ok" and value == target
    b_matches, b_status = _signal(value, idr)
    k_b = b_matches[0] if b_status == "resolved" else None

    belief = read_belief(stated_belief)
    point = belief["point"]
    l_matches, l_status = _signal(point, idr)
    k_l = l_matches[0] + 1 if l_status == "resolved" else None

    br_consistent: bool | None = None
    br_set: list[Action] | None = None
    br_chance: float | None = None
    if point is not None and spec.has_action(point):
        br_set = list(spec.best_responses(point))
        br_consistent = None if value is None else (in_space and value in br_set)
        br_chance = len(br_set) / len(spec.actions)
    eu_consistent: bool | None = None
    eu_best: list[Action] | None = None
    eu_chance: float | None = None
    dist = belief["distribution"]
    if dist and all(spec.has_action(v) for v in dist):
        eu_best = list(spec.expected_best_responses(dist))
        eu_consistent = None if value is None else (in_space and value in eu_best)
        eu_chance = len(eu_best) / len(spec.actions)

    values = _chain_values(chain)
    steps: list[bool] = []
    for prev, nxt in itertools.pairwise(values):
        steps.append(
            prev is not None and nxt is not None and spec.has_action(prev)
            and spec.has_action(nxt) and nxt in spec.best_responses(prev)
        )
    chain_consistency = sum(steps) / len(steps) if steps else None

    codes: list[str] = []
    if not correct:
        if status == "none":
            codes.append("no_action")
        elif status == "invalid" or not in_space:
            codes.append("invalid_action")
        elif b_status == "unmatched":
            codes.append("off_sequence")
        elif b_status == "ambiguous":
            codes.append("ambiguous")
        elif k_b is not None and k_b < k:
            codes.append("under_iteration")
        elif k_b is not None and k_b > k:
            codes.append("over_iteration")
        if br_consistent is False:
            codes.append("not_best_response_to_belief")

    details: dict[str, Any] = {
        "action": value,
        "no_action": status == "none",
        "target_action": target,
        "target_depth": k,
        "excluded": bool(truth.get("excluded", False)),
        "within_one": k_b is not None and abs(k_b - k) <= 1,
        "K_B": k_b,
        "K_B_status": b_status,
        "K_B_matches": b_matches,
        "K_L": k_l,
        "K_L_status": l_status,
        "K_L_matches": l_matches,
        "belief_point": point,
        "belief_source": belief["source"],
        "belief_ambiguous": belief["ambiguous"],
        "belief_distribution": (
            None if dist is None else [[v, w] for v, w in sorted(dist.items())]
        ),
        "br_set": br_set,
        "br_consistent": br_consistent,
        "br_chance": br_chance,
        "eu_best_responses": eu_best,
        "br_consistent_eu": eu_consistent,
        "eu_chance": eu_chance,
        "mentalizing": mentalizing,
        "chain": values,
        "chain_length": len(values),
        "chain_steps": steps,
        "chain_consistency": chain_consistency,
        "depth_error": None if k_b is None else k_b - k,
    }
    return Score(
        correct=correct,
        value=1.0 if correct else 0.0,
        error_codes=tuple(codes),
        primary_error=codes[0] if codes else None,
        details=details,
    )


def score(item: Item, answer: Any) -> Score:
    """Score one answer to a games item (pure): a trial by :func:`score_reply` (a mapping
    answer's belief, chain and mentalizing fields are read as stated); an A/B/C/K item by
    :func:`games._strategic_scoring.score_abc_answer`."""
    if item.family != "games":
        raise InputError(f"not a games item (family {item.family!r})", where="item")
    if item.generator == ABC_GENERATOR:
        return score_abc_answer(item, answer)
    return score_reply(item, answer)


def summarize(scores: Iterable[Score]) -> dict[str, Any]:
    """Pooled figures over trial scores, excluded trials left out (each figure with its n).

    Returns accuracy, within-one accuracy, the resolution counts of K_B and K_L (resolved /
    unmatched / ambiguous / none) and K_L coverage, best-response consistency over trials
    with a point belief in S (with its chance rate over the same trials), mean per-step chain
    consistency over chains with m ≥ 2, mean chain length, and the mentalizing rate over
    trials that carry the flag.
    """
    kept = [s for s in scores if not s.details.get("excluded")]
    n = len(kept)

    def rate(flags: list[bool]) -> dict[str, Any]:
        return {"n": len(flags), "rate": (sum(flags) / len(flags)) if flags else None}

    def counts(key: str) -> dict[str, int]:
        out = {"resolved": 0, "unmatched": 0, "ambiguous": 0, "none": 0}
        for s in kept:
            out[str(s.details.get(key, "none"))] += 1
        return out

    br = [bool(s.details["br_consistent"]) for s in kept
          if s.details.get("br_consistent") is not None]
    chance = [float(s.details["br_chance"]) for s in kept
              if s.details.get("br_consistent") is not None
              and s.details.get("br_chance") is not None]
    ment = [bool(s.details["mentalizing"]) for s in kept
            if isinstance(s.details.get("mentalizing"), bool)]
    cs = [float(s.details["chain_consistency"]) for s in kept
          if s.details.get("chain_consistency") is not None]
    ms = [int(s.details.get("chain_length", 0)) for s in kept]
    kl = counts("K_L_status")
    return {
        "n": n,
        "accuracy": rate([s.correct is True for s in kept]),
        "within_one": rate([bool(s.details.get("within_one")) for s in kept]),
        "K_B": counts("K_B_status"),
        "K_L": kl,
        "K_L_coverage": {"n": n, "rate": (kl["resolved"] / n) if n else None},
        "br_consistency": rate(br),
        "br_chance": {"n": len(chance), "mean": (sum(chance) / len(chance)) if chance else None},
        "mentalizing": rate(ment),
        "chain_consistency": {"n": len(cs), "mean": (sum(cs) / len(cs)) if cs else None},
        "chain_length": {"n": len(ms), "mean": (sum(ms) / len(ms)) if ms else None},
        "no_action": sum(1 for s in kept if s.details.get("no_action")),
    }
