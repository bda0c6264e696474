"""The pure scorer of NestToM (and imported Hi-ToM) items, its error coding, and the scripted
reference reasoners used as positive and negative controls.

Error coding of a wrong answer, every matching code recorded, the first of
them in this priority order the primary one:

- ``reality_leak`` — the answer is reality (where the object really is);
- ``projection`` — the answer is the outermost agent's own belief (chains of length ≥ 2);
- ``truncation:k`` — the answer is that of the prefix chain of length k (2 ≤ k < n), k ascending;
- ``other`` — none of these.

For a yes/no judgment item ("X looked in the box first; was that reasonable?") a wrong answer
gets the code of each belief that would have produced it: ``reality_leak`` when judging by
reality gives that answer, and so on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mindledger.items import Item, Score

__all__ = [
    "ERROR_TYPES",
    "POLICIES",
    "ambiguities",
    "error_codes",
    "error_type",
    "noisy_probability",
    "normalize_answer",
    "reference_answer",
    "score",
]

POLICIES = ("oracle", "random", "depth-capped:N", "reality-leak", "not-reality", "noisy:P")

_NOISY = re.compile(r"^noisy:(0(?:\.\d+)?|\.\d+|1(?:\.0+)?)$")
"""``noisy:P``, P a probability written as a decimal: ``0``, ``0.35``, ``.5``, ``1``."""

_STRIP = " \t\r\n\"'`*.,;:!?()[]{}<>"
_ARTICLES = ("the ", "a ", "an ")
_SPACES = re.compile(r"[\s_]+")


def normalize_answer(value: Any) -> str:
    """Lower case, outer punctuation and a leading article removed, underscores and runs of
    spaces made one space: ``" The Green_Drawer."`` → ``"green drawer"``."""
    if type(value) is str and value.isalpha() and value.islower():
        return value  # already normal (every generated container name)
    text = str(value).strip().lower().strip(_STRIP)
    text = _SPACES.sub(" ", text)
    for article in _ARTICLES:
        if text.startswith(article):
            text = text[len(article) :]
            break
    return text.strip()


def _beliefs(truth: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (code, container) pairs a wrong answer is compared with, in priority order."""
    out: list[tuple[str, str]] = []
    if truth.get("reality") is not None:
        out.append(("reality_leak", str(truth["reality"])))
    chain: Sequence[str] = truth.get("chain") or ()
    prefixes: Sequence[str] = truth.get("prefix_answers") or ()
    if len(chain) >= 2 and truth.get("projection") is not None:
        out.append(("projection", str(truth["projection"])))
    for k, answer in enumerate(prefixes[1:], start=2):
        out.append((f"truncation:{k}", str(answer)))
    return out


ERROR_TYPES = ("reality_leak", "projection", "truncation")
"""The error types a wrong answer can be coded as, besides ``other`` (``truncation:k`` is of type
``truncation``)."""

_TAG_ORDER = (*ERROR_TYPES, "own_belief", "answer")


def error_type(code: str | None) -> str | None:
    """The type of an error code: ``"truncation:2"`` → ``"truncation"``."""
    return None if code is None else code.split(":", 1)[0]


def ambiguities(truth: Mapping[str, Any], answer_spec: Mapping[str, Any]) -> list[str]:
    """What the error coding of an item cannot tell apart: ``"a=b"`` for every pair of lure
    types ``a`` and ``b`` (``reality_leak``, ``projection``, ``truncation``, and for an item told
    to "you", ``own_belief`` — your own belief) that some wrong answer matches at once, and
    ``"own_belief=answer"`` when your own belief is the right answer (an own-belief leak cannot
    show). Empty when every wrong answer that matches a lure matches one type only.

    Two truncations of different depths with the same answer are not listed (the type is still
    known; ``error_codes`` records every depth). On a yes/no judgment item a lure matches the
    wrong answer when judging by that belief gives it, so with two answers the lures often
    coincide (a "yes" judgment answered "no" matches every lure)."""
    yesno = answer_spec.get("kind") == "yesno"
    correct = normalize_answer(truth["answer"])
    lures = [(code.partition(":")[0], normalize_answer(b)) for code, b in _beliefs(truth)]
    own = truth.get("self_belief")
    if own is not None and not yesno:
        lures.append(("own_belief", normalize_answer(own)))
    if not yesno and len({b for _, b in lures} | {correct}) == len(lures) + 1:
        return []  # every lure names its own container, and none the answer
    looked = normalize_answer(truth.get("looked", "")) if yesno else ""
    matched: dict[str, set[str]] = {}
    tags: set[str] = set()
    for kind, given in lures:
        if yesno:
            given = "yes" if given == looked else "no"
        if given == correct:
            if kind == "own_belief":
                tags.add("own_belief=answer")
            continue
        matched.setdefault(given, set()).add(str(kind))
    for kinds in matched.values():
        ordered = sorted(kinds, key=_TAG_ORDER.index)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                tags.add(f"{a}={b}")
    return sorted(tags, key=lambda t: [_TAG_ORDER.index(p) for p in t.split("=")])


def error_codes(item: Item, answer: Any) -> tuple[tuple[str, ...], str | None]:
    """Every error code matching ``answer`` (in priority order) and the primary one; empty and
    None when the answer is correct."""
    truth = item.truth
    given = normalize_answer(answer)
    if given == normalize_answer(truth["answer"]):
        return (), None
    codes: list[str] = []
    if item.answer.get("kind") == "yesno":
        looked = normalize_answer(truth.get("looked", ""))
        for code, belief in _beliefs(truth):
            judged = "yes" if normalize_answer(belief) == looked else "no"
            if judged == given:
                codes.append(code)
    else:
        for code, belief in _beliefs(truth):
            if normalize_answer(belief) == given:
                codes.append(code)
    if not codes:
        codes.append("other")
    return tuple(codes), codes[0]


def score(item: Item, answer: Any) -> Score:
    """Score one answer: correct iff the normalised answer equals the normalised truth."""
    codes, primary = error_codes(item, answer)
    correct = primary is None
    given = normalize_answer(answer)
    details: dict[str, Any] = {
        "answer": given,
        "expected": normalize_answer(item.truth["answer"]),
    }
    own = item.truth.get("self_belief")
    if own is not None and item.answer.get("kind") == "choice":
        # R2-self: did the answer give away the answerer's own belief (privileged access)?
        details["is_own_belief"] = given == normalize_answer(own)
    return Score(
        correct=correct,
        value=1.0 if correct else 0.0,
        error_codes=codes,
        primary_error=primary,
        details=details,
    )


def _capped(truth: Mapping[str, Any], depth: int) -> str:
    """The belief of a reasoner that is exact to ``depth`` and answers the deepest prefix it
    can: the whole chain when it is no longer than ``depth``, else the prefix of that length."""
    chain: Sequence[str] = truth.get("chain") or ()
    exact = truth["belief"] if "belief" in truth else truth["answer"]
    if len(chain) <= depth:
        return str(exact)
    if depth == 0:
        return str(truth["reality"])
    prefixes: Sequence[str] | None = truth.get("prefix_answers")
    if not prefixes or len(prefixes) < depth:
        # external items without computed prefixes: the only exact fallback is reality
        return str(truth["reality"])
    return str(prefixes[depth - 1])


def noisy_probability(policy: str) -> float:
    """P of the reference policy ``noisy:P`` (ValueError for a malformed one, or P outside
    [0, 1])."""
    m = _NOISY.match(policy)
    if m is None:
        raise ValueError(
            f"expected noisy:P with P a probability from 0 to 1 (noisy:0.7), got {policy!r}"
        )
    return float(m.group(1))


def _noisy(item: Item, p: float, rng: np.random.Generator) -> str:
    """The exact answer with probability ``p``, else one of the item's wrong answers (or "no
    answer", scored wrong, when it has none), uniformly: the draws come from ``rng``."""
    exact = str(item.truth["answer"])
    if rng.random() < p:
        return exact
    options: Sequence[str] = (
        ("yes", "no") if item.answer.get("kind") == "yesno" else item.answer["choices"]
    )
    wrong = [str(o) for o in options if normalize_answer(o) != normalize_answer(exact)]
    return wrong[int(rng.integers(len(wrong)))] if wrong else ""


def reference_answer(item: Item, policy: str, rng: np.random.Generator) -> str:
    """The answer of a scripted reference reasoner.

    - ``oracle``: the exact answer;
    - ``random``: uniform over the choices (or yes/no), drawn from ``rng``;
    - ``depth-capped:N``: exact to depth N, then the answer of the length-N prefix chain;
    - ``reality-leak``: answers where the object really is;
    - ``not-reality``: the shortcut that always avoids the true state — the first choice (in
      sorted order) that is not reality;
    - ``noisy:P``: the exact answer with probability P, else a wrong one drawn uniformly from
      the item's other choices (the other of yes/no), on every question alike: its expected
      accuracy is P on any mix of items (``noisy:1`` is the oracle, ``noisy:0`` never right).
      Its draws come from ``rng``, which a reference agent seeds with the run's seed and the
      item, so a rerun or a resumed run answers the same.

    On a yes/no judgment item each reasoner judges "did X look where X believes it is?" with
    the belief it would have given (``not-reality``: "yes" exactly when X looked somewhere other
    than reality).
    """
    truth = item.truth
    yesno = item.answer.get("kind") == "yesno"
    if policy == "oracle":
        return str(truth["answer"])
    if policy == "random":
        options: Sequence[str] = ("yes", "no") if yesno else item.answer["choices"]
        return str(options[int(rng.integers(len(options)))])
    if policy.startswith("noisy:"):
        return _noisy(item, noisy_probability(policy), rng)
    reality = str(truth["reality"])
    if policy == "reality-leak":
        belief = reality
    elif policy == "not-reality":
        if yesno:
            return "yes" if normalize_answer(truth["looked"]) != normalize_answer(reality) else "no"
        choices = sorted(item.answer["choices"])
        belief = next(
            (c for c in choices if normalize_answer(c) != normalize_answer(reality)), reality
        )
    elif policy.startswith("depth-capped:") and policy[len("depth-capped:") :].isdigit():
        belief = _capped(truth, int(policy[len("depth-capped:") :]))
    else:
        raise ValueError(
            f"unknown reference policy {policy!r}; expected one of {', '.join(POLICIES)}"
        )
    if yesno:
        return "yes" if normalize_answer(truth["looked"]) == normalize_answer(belief) else "no"
    return belief
