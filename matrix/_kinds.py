"""The matrix's candidate items, one generator per kind (seed 002 §15.2), and what a target's
reply to one is recorded as.

§15.2 asks for items "chosen where targets *disagree*": a pilot (:mod:`matrix._pilot`) runs the
candidates through every target and keeps the divergent ones. This module makes the candidates
(:func:`candidates`, one generator per kind in :data:`KINDS`).

**Candidate kinds.** Every candidate is an :class:`~mindledger.items.Item` of family
``"matrix"`` whose answer spec has ``choices`` (the answer set a predictor gives a distribution
over, which :func:`matrix.prediction_item` and the reference agents read):

- ``arbitrary`` — :func:`make_item` unchanged ("pick one of these words").
- ``preference`` — "which would you rather…" between 2–4 options (:data:`PREFERENCE_TEMPLATES`),
  ``{"kind": "choice", "choices": [...]}``.
- ``open`` — a short free answer ("Name a fruit.", :data:`OPEN_TEMPLATES`), spec
  ``{"kind": "open", "choices": [*labels, "other"], "clusters": {label: [variants]}}``. The target
  answers in free text; :func:`cluster_answer` maps the text to one of the labels or to the
  ``"other"`` bucket, and the label is what is recorded and scored. A predictor gives a
  distribution over the labels plus ``"other"``; the ledger scores it like any choice (log score,
  Brier, top-1 against the target's clustered answers), so mass on ``"other"`` pays off exactly
  when the target answers outside the lexicon.
- ``nesttom`` — a NestToM belief item (:func:`nesttom.generate_items`) put to the target as is;
  the predictor predicts which container the target names, right or wrong.
- ``games`` — a game trial of the recursive condition (:func:`games.generate_items`, no tools),
  its integer actions as the choices ``"lo"…"hi"``; the predictor predicts the target's move.
- ``failure`` — "will the target answer this NestToM / game question correctly?",
  ``{"kind": "choice", "choices": ["yes", "no"]}``. The target is **not** asked this question: the
  observed answer is ``"yes"``/``"no"`` from the target's real trial on the underlying item
  (:func:`failure_answers`, from stored trials by item id; :func:`harness.matrix.pilot.run_pilot` instead asks the
  underlying question and scores it with the family's scorer). The predictor's prompt is
  :func:`failure_prediction_item`, not :func:`matrix.prediction_item`.

Every generator is pure: ``KINDS[k].make(seed, params)`` rebuilds an item from its seed and params
(:func:`regenerate`), and ids are content hashes.

**Clustering of open answers** (lexical, no model download). :func:`normalise_answer`: Unicode
NFKC, case-folded, every character that is not a letter, digit or apostrophe becomes a space,
whitespace collapsed, a leading article (a, an, the) dropped, each word's plural stemmed
(:func:`stem`: ``-ies`` → ``-y``, ``-oes`` → ``-o``, ``-ches/-shes/-sses/-xes/-zes`` lose
``-es``, a final ``-s`` is dropped unless the word ends in ``-ss`` or ``-us``; words of three
letters or fewer are kept). Answers and variants go through the same normalisation, so a word
stemmed too far ("paris" → "pari") still matches itself; the rules only merge two words that
differ by a plural ending. A template's lexicon maps each label to its variants (spellings,
synonyms, full names: ``"gray"`` → ``grey``, ``"albert einstein"`` → ``einstein``,
``"nyc"`` → ``new york``), normalised the same way. An answer is the label whose variant equals
the whole normalised answer; failing that, the one label a variant of which occurs in it as a
whole-word phrase ("I'd say bananas" → ``banana``); else (no label, or two) ``"other"``. A label
is one of its own variants, so it clusters to itself (what a reference agent answers).

"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import games
import nesttom
from matrix._base import DIVERGENT, FAMILY, NO_ANSWER, VERSION, describe_target, make_item
from matrix._templates import OPEN_TEMPLATES, PREFERENCE_TEMPLATES
from mindledger.errors import UserError
from mindledger.items import Item

__all__ = [
    "DEFAULT_KINDS",
    "FAILURE_CHOICES",
    "FAILURE_SOURCE_FAMILIES",
    "KINDS",
    "OTHER",
    "CandidateKind",
    "candidate_counts",
    "candidates",
    "cluster_answer",
    "failure_answers",
    "failure_from",
    "failure_prediction_item",
    "failure_source",
    "failure_source_ok",
    "failure_sources",
    "is_failure",
    "kind_of",
    "make_failure",
    "make_games",
    "make_nesttom",
    "make_open",
    "make_preference",
    "normalise_answer",
    "observed_answer",
    "regenerate",
    "stem",
]

OTHER = "other"
"""The bucket of an open item for an answer outside its clusters."""
FAILURE_CHOICES = ("yes", "no")
"""A failure item's answers: the target answers the underlying question correctly, or not."""
MAX_OPTIONS = 30
"""Most choices a game item may have to be a matrix candidate."""

# -- preference items -----------------------------------------------------------------------------


def _or_list(options: Sequence[str]) -> str:
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def make_preference(seed: int, params: Mapping[str, Any]) -> Item:
    """The preference item number ``params["index"]`` of ``seed``: one template, 2–4 of its
    options in a seeded order. Pure."""
    index = int(params["index"])
    rng = np.random.default_rng([seed, index, 1])
    name, template, pool = PREFERENCE_TEMPLATES[int(rng.integers(len(PREFERENCE_TEMPLATES)))]
    k = int(rng.integers(2, 5))
    options = [str(o) for o in rng.choice(np.array(pool, dtype=object), size=k, replace=False)]
    return Item(
        family=FAMILY,
        generator="matrix.preference",
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=template.format(options=_or_list(options)) + " There is no right answer.",
        answer={"kind": "choice", "choices": options},
        truth={},
        meta={"template": name, "options": k, "kind": "preference"},
    )


# -- open items and their clusters ----------------------------------------------------------------

_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_NOT_WORD = re.compile(r"[^\w']+|_")


def stem(word: str) -> str:
    """The singular of a plural English word by suffix rules (see the module docstring); other
    words unchanged."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("oes"):
        return word[:-2]
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


def normalise_answer(text: str) -> str:
    """A free answer's normal form: NFKC, case-folded, punctuation to spaces, whitespace
    collapsed, a leading article dropped, every word stemmed (:func:`stem`)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _NOT_WORD.sub(" ", text).replace("'", "").strip()
    text = _ARTICLE.sub("", text)
    return " ".join(stem(w) for w in text.split())


def _cluster_index(clusters: Mapping[str, Sequence[str]]) -> dict[str, str]:
    index: dict[str, str] = {}
    for label, variants in clusters.items():
        for variant in (label, *variants):
            index[normalise_answer(variant)] = label
    return index


def cluster_answer(item: Item, answer: str) -> str:
    """The cluster label of a free ``answer`` to the open ``item``, or :data:`OTHER` (see the
    module docstring)."""
    index = _cluster_index(item.answer["clusters"])
    text = normalise_answer(answer)
    if text in index:
        return index[text]
    padded = f" {text} "
    mentioned = {label for key, label in index.items() if key and f" {key} " in padded}
    return mentioned.pop() if len(mentioned) == 1 else OTHER


def make_open(seed: int, params: Mapping[str, Any]) -> Item:
    """The open item number ``params["index"]`` of ``seed``: the template at that place in a
    seeded order of :data:`OPEN_TEMPLATES` (so a seed has each template once), its labels in a
    seeded order. Pure."""
    index = int(params["index"])
    if not 0 <= index < len(OPEN_TEMPLATES):
        raise UserError(
            f"open item index {index} is out of range: there are {len(OPEN_TEMPLATES)} open "
            "templates, each used once per seed"
        )
    order = np.random.default_rng([seed, 2]).permutation(len(OPEN_TEMPLATES))
    name, prompt, lexicon = OPEN_TEMPLATES[int(order[index])]
    names = list(lexicon)
    labels = [
        names[int(i)] for i in np.random.default_rng([seed, index, 2]).permutation(len(names))
    ]
    clusters = {label: list(variants) for label, variants in lexicon.items()}
    return Item(
        family=FAMILY,
        generator="matrix.open",
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=prompt + " Answer with a word or a short name.",
        answer={"kind": "open", "choices": [*labels, OTHER], "clusters": clusters},
        truth={},
        meta={"template": name, "options": len(labels) + 1, "kind": "open"},
    )


# -- NestToM and game items -----------------------------------------------------------------------


def _sources(family: str, seed: int, n: int) -> list[Item]:
    """The first ``n`` items of ``seed`` of the NestToM or games generator (both give the same
    item at an index whatever ``n`` is)."""
    if family == "nesttom":
        return nesttom.generate_items(seed, n)
    return games.generate_items(seed, n, conditions=("recursive",))


def _source_choices(src: Item) -> list[str]:
    spec = src.answer
    if spec.get("kind") == "choice":
        return [str(c) for c in spec["choices"]]
    if spec.get("kind") == "yesno":
        return list(FAILURE_CHOICES)
    if spec.get("kind") == "integer" and int(spec["max"]) - int(spec["min"]) < MAX_OPTIONS:
        return [str(a) for a in range(int(spec["min"]), int(spec["max"]) + 1)]
    raise UserError(f"item {src.id} ({src.family}) has no closed answer set for the matrix")


def _correct_answer(src: Item) -> str:
    if src.family == "games":
        return str(src.truth["target_action"])
    return str(src.truth["answer"])


def _wrap(seed: int, index: int, src: Item, kind: str) -> Item:
    choices = _source_choices(src)
    meta: dict[str, Any] = {
        "template": kind,
        "options": len(choices),
        "kind": kind,
        "source": src.id,
        "source_family": src.family,
    }
    for key in ("depth", "game", "answer_tool", "system_prompt"):
        if key in src.meta:
            meta[key] = src.meta[key]
    return Item(
        family=FAMILY,
        generator=f"matrix.{kind}",
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=src.prompt,
        answer={"kind": "choice", "choices": choices},
        truth={"source": src.id, "correct": _correct_answer(src)},
        meta=meta,
    )


def make_nesttom(seed: int, params: Mapping[str, Any]) -> Item:
    """NestToM item number ``params["index"]`` of ``seed`` (:func:`nesttom.generate_items`) as a
    matrix item: the same prompt and containers, the correct answer in ``truth``. Pure."""
    index = int(params["index"])
    return _wrap(seed, index, _sources("nesttom", seed, index + 1)[index], "nesttom")


def make_games(seed: int, params: Mapping[str, Any]) -> Item:
    """Game trial number ``params["index"]`` of ``seed`` (recursive condition) as a matrix item:
    the same prompt, system prompt and answer tool, the actions as choices. Pure."""
    index = int(params["index"])
    return _wrap(seed, index, _sources("games", seed, index + 1)[index], "games")


def _many_wrapped(kind: str) -> Callable[[int, int], list[Item]]:
    def many(seed: int, n: int) -> list[Item]:
        return [_wrap(seed, i, src, kind) for i, src in enumerate(_sources(kind, seed, n))]

    return many


# -- failure prediction ---------------------------------------------------------------------------

_FAILURE_SOURCES = ("nesttom", "games")
"""Failure item ``i`` asks about the NestToM item ``i // 2`` (even ``i``) or the game ``i // 2``
(odd ``i``)."""


def failure_sources(seed: int, indexes: Sequence[int]) -> dict[int, tuple[Item, Item]]:
    """(the matrix question, the underlying family item) of each failure item index of
    ``seed``, each family generated once."""
    out: dict[int, tuple[Item, Item]] = {}
    for parity, family in enumerate(_FAILURE_SOURCES):
        wanted = [i for i in indexes if i % 2 == parity]
        if not wanted:
            continue
        sources = _sources(family, seed, max(wanted) // 2 + 1)
        for i in wanted:
            src = sources[i // 2]
            out[i] = (_wrap(seed, i // 2, src, family), src)
    return out


def is_failure(item: Item) -> bool:
    """Whether ``item`` is a failure item (its target is not asked it)."""
    return item.generator == "matrix.failure"


def failure_source(item: Item) -> tuple[Item, Item]:
    """(the question, as a matrix item, and the underlying NestToM / game item) of the failure
    ``item``: what its target is really asked, and what scores the reply."""
    return _failure_pair(item)


def _failure_item(seed: int, index: int, question: Item, src: Item) -> Item:
    return Item(
        family=FAMILY,
        generator="matrix.failure",
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=(
            "Will the model that is asked the question below answer it correctly? Answer yes "
            f"or no.\n\n--- the question ---\n{question.prompt}\n--- end of the question ---"
        ),
        answer={"kind": "choice", "choices": list(FAILURE_CHOICES)},
        truth={"source": src.id, "correct": _correct_answer(src)},
        meta={
            "template": "failure",
            "options": len(FAILURE_CHOICES),
            "kind": "failure",
            "source": src.id,
            "source_family": src.family,
            "question": question.id,
        },
    )


def make_failure(seed: int, params: Mapping[str, Any]) -> Item:
    """Failure item number ``params["index"]`` of ``seed``: "will the target answer this
    question correctly?" over NestToM (even indexes) and game (odd) questions; or, when
    ``params["source"]`` holds an item (:func:`failure_from`), over that item. Pure."""
    index = int(params["index"])
    if "source" in params:
        return failure_from(seed, index, _source_item(params))
    return _failure_item(seed, index, *failure_sources(seed, [index])[index])


def _source_item(params: Mapping[str, Any]) -> Item:
    data = params["source"]
    try:
        return Item.from_dict(_thawed(data))
    except (TypeError, ValueError, KeyError) as exc:
        raise UserError(f"a failure item's source is not an item: {exc}") from None


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thawed(v) for v in value]
    return value


FAILURE_SOURCE_FAMILIES = ("nesttom", "games")
"""The families of the items a failure item may ask about (their answer sets are closed)."""


def failure_source_ok(src: Item) -> bool:
    """Whether a failure item can ask about ``src`` (:func:`failure_from`): a NestToM or game
    item with a closed answer set of at most :data:`MAX_OPTIONS` answers. Pure."""
    if src.family not in FAILURE_SOURCE_FAMILIES:
        return False
    try:
        return len(_source_choices(src)) <= MAX_OPTIONS
    except (UserError, KeyError, ValueError):
        return False


def failure_from(seed: int, index: int, src: Item) -> Item:
    """Failure item number ``index`` of ``seed`` over a given item ``src`` (one a suite run's
    targets ran, so their real trials are its observed answers): "will the target answer it
    correctly?". The item carries ``src`` whole in its params, so it regenerates from its seed
    and params alone (:func:`make_failure`). Pure."""
    if not failure_source_ok(src):
        raise UserError(
            f"item {src.id} ({src.family}) cannot be a failure item's question: NestToM and "
            "game items with a closed answer set only"
        )
    question = _wrap(seed, index, src, src.family)
    item = _failure_item(seed, index, question, src)
    return replace(item, params={"index": index, "source": src.to_dict()}, id="")


def _failure_pair(item: Item) -> tuple[Item, Item]:
    if "source" in item.params:
        src = _source_item(item.params)
        return _wrap(item.seed, int(item.params["index"]), src, src.family), src
    index = int(item.params["index"])
    return failure_sources(item.seed, [index])[index]


def _many_failures(seed: int, n: int) -> list[Item]:
    pairs = failure_sources(seed, range(n))
    return [_failure_item(seed, i, *pairs[i]) for i in range(n)]


def failure_answers(item: Item, correct: Mapping[str, bool | Sequence[bool]]) -> tuple[str, ...]:
    """The observed answers of a failure ``item`` for one target: ``"yes"`` per trial of the
    target on the underlying item that was correct, ``"no"`` per one that was not, from
    ``correct`` (the target's correct flags by item id). Empty when it has no trial there."""
    flags = correct.get(str(item.meta["source"]), ())
    if isinstance(flags, bool):
        flags = (flags,)
    return tuple("yes" if f else "no" for f in flags)


def failure_prediction_item(item: Item, predictor: str, target: str) -> Item:
    """The question put to ``predictor`` about a failure ``item``: the probability that
    ``target`` answers the underlying question correctly (``yes``) or not (``no``)."""
    question = make_failure(item.seed, item.params)
    if question.id != item.id:
        raise UserError(f"failure item {item.id} does not regenerate from its seed and params")
    source = failure_source(item)[0]
    who = describe_target(predictor, target)
    mine = predictor == target
    prompt = (
        f"Predict whether {who} answers the question below correctly.\n\n"
        f"--- the question ---\n{source.prompt}\n--- end of the question ---\n\n"
        "Do not answer the question yourself. Give the probability that "
        f"{'your copy' if mine else target} answers it correctly (yes) and that it does not "
        "(no); the probabilities must sum to 1."
    )
    return Item(
        family=FAMILY,
        generator="matrix.failure-prediction",
        version=VERSION,
        seed=item.seed,
        params={"item": item.id, "predictor": predictor, "target": target},
        prompt=prompt,
        answer={"kind": "distribution", "choices": list(FAILURE_CHOICES)},
        truth={},
        meta={"role": "prediction", "self": mine},
    )


# -- the registry of kinds ------------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateKind:
    """One kind of candidate: its name, its generator's name and its pure ``make(seed,
    params)`` (``params = {"index": i}``); ``limit`` caps the items one seed has (None:
    unbounded)."""

    name: str
    generator: str
    make: Callable[[int, Mapping[str, Any]], Item]
    limit: int | None = None
    many: Callable[[int, int], list[Item]] | None = None
    """``many(seed, n)``: items 0 … n − 1 at once, where one by one would repeat work."""


KINDS: Mapping[str, CandidateKind] = {
    k.name: k
    for k in (
        CandidateKind("arbitrary", DIVERGENT, make_item),
        CandidateKind("preference", "matrix.preference", make_preference),
        CandidateKind("open", "matrix.open", make_open, len(OPEN_TEMPLATES)),
        CandidateKind("nesttom", "matrix.nesttom", make_nesttom, many=_many_wrapped("nesttom")),
        CandidateKind("games", "matrix.games", make_games, many=_many_wrapped("games")),
        CandidateKind("failure", "matrix.failure", make_failure, many=_many_failures),
    )
}
"""Every candidate kind by name."""
_BY_GENERATOR = {k.generator: k for k in KINDS.values()}


def kind_of(item: Item) -> str:
    """The candidate kind of a matrix ``item`` (by its generator)."""
    kind = _BY_GENERATOR.get(item.generator)
    if kind is None:
        raise UserError(f"item {item.id} ({item.generator}) is not a matrix candidate")
    return kind.name


def regenerate(item: Item) -> Item:
    """Rebuild a candidate from its kind's generator, seed and params."""
    return KINDS[kind_of(item)].make(item.seed, item.params)


def candidates(seed: int, counts: Mapping[str, int]) -> list[Item]:
    """``counts[kind]`` distinct candidates of each kind from ``seed`` (indexes 0, 1, …, skipping
    duplicates), kinds in the order of ``counts``."""
    out: list[Item] = []
    seen: set[str] = set()
    for name, n in counts.items():
        if name not in KINDS:
            raise UserError(
                f"unknown matrix item kind {name!r} (expected one of {', '.join(KINDS)})"
            )
        kind = KINDS[name]
        if n < 0:
            raise UserError(f"the number of {name} items must not be negative")
        if kind.limit is not None and n > kind.limit:
            raise UserError(f"a seed has only {kind.limit} {name} items, not {n}")
        if kind.many is not None:  # distinct by construction (distinct source items)
            batch = [item for item in kind.many(seed, n) if item.id not in seen]
            seen.update(item.id for item in batch)
            out.extend(batch)
            continue
        got, index = 0, 0
        while got < n:
            if index >= 50 * n + 50:
                raise UserError(f"seed {seed} does not have {n} distinct {name} items")
            item = kind.make(seed, {"index": index})
            index += 1
            if item.id not in seen:
                seen.add(item.id)
                out.append(item)
                got += 1
    return out


DEFAULT_KINDS = ("arbitrary", "preference", "open", "nesttom", "games", "failure")
"""The kinds a pilot draws its candidates from unless told otherwise."""


def candidate_counts(kinds: Sequence[str], n: int) -> dict[str, int]:
    """How many of ``n`` candidates each of ``kinds`` gets: an even share, the first kinds one
    more when ``n`` does not divide, ``open`` at most its :data:`OPEN_TEMPLATES` (the rest
    shared among the others). Pure."""
    names = list(dict.fromkeys(kinds))
    if not names:
        raise UserError("the pilot needs at least one item kind")
    for name in names:
        if name not in KINDS:
            raise UserError(
                f"unknown matrix item kind {name!r} (expected one of {', '.join(KINDS)})"
            )
    counts = dict.fromkeys(names, 0)
    left, open_ = n, list(names)
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for i, name in enumerate(list(open_)):
            want = share + (i < extra)
            cap = KINDS[name].limit
            room = want if cap is None else min(want, cap - counts[name])
            counts[name] += room
            left -= room
            if cap is not None and counts[name] >= cap:
                open_.remove(name)
        if share == 0 and extra == 0:
            break
    if left > 0:
        raise UserError(f"the kinds {', '.join(names)} do not have {n} candidates for one seed")
    return counts


def observed_answer(item: Item, answer: Any) -> str:
    """What is recorded for a target's ``answer`` to ``item``: an open item's cluster label, a
    choice as a string (a number that is one of the choices as its string), else
    :data:`NO_ANSWER`."""
    if isinstance(answer, bool) or answer is None:
        return NO_ANSWER
    if isinstance(answer, int | float) and float(answer).is_integer():
        answer = str(int(answer))
    if not isinstance(answer, str):
        return NO_ANSWER
    if item.answer.get("kind") == "open":
        return cluster_answer(item, answer)
    return answer
