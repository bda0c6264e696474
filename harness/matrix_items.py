"""The prediction matrix's candidate items and the pilot that filters them (seed 002 §15.2).

§15.2 asks for items "chosen where targets *disagree*": a pilot runs the candidates through every
target and keeps the items with high between-target disagreement and moderate within-target
consistency, "otherwise, everyone predicts everyone by answering the question themselves". This
module makes the candidates (:func:`candidates`, one generator per kind in :data:`KINDS`) and
applies the filter (:func:`apply_filter`, pure; :func:`run_pilot`, which samples the targets
first). The filter's thresholds and every candidate's figures travel in a :class:`PilotRecord`,
to be stored with the run; when too few candidates survive, the record's verdict says
``not divergent: <reason>`` and the caller reports that instead of skill.

**Candidate kinds.** Every candidate is an :class:`~mindledger.items.Item` of family
``"matrix"`` whose answer spec has ``choices`` (the answer set a predictor gives a distribution
over, which :func:`harness.matrix.prediction_item` and the reference agents read):

- ``arbitrary`` — :func:`harness.matrix.make_item` unchanged ("pick one of these words").
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
  (:func:`failure_answers`, from stored trials by item id; :func:`run_pilot` instead asks the
  underlying question and scores it with the family's scorer). The predictor's prompt is
  :func:`failure_prediction_item`, not :func:`harness.matrix.prediction_item`.

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

**The pilot's figures** (per candidate, over the targets with answers; all in [0, 1]):

- *consistency* of target t: ``W_t = Σ_a n_a(n_a − 1) / (K(K − 1))``, the probability that two of
  its K samples agree (needs K ≥ 2). Close to, not the same as, the ledger's leave-one-out
  ceiling (:func:`ledger.scoring.retest_agreement`).
- *between-target agreement* ``B``: the mean over pairs of targets s ≠ t of
  ``Σ_a p_s(a)·p_t(a)``, the probability that a sample of s equals a sample of t.
- *disagreement* ``D = 1 − B / W`` with ``W`` the mean of the ``W_t`` (clamped at 0): 0 when
  targets resemble each other as much as each resembles itself (then answering the question
  yourself predicts another target as well as it predicts itself: projection wins), 1 when their
  answers never coincide. Unlike a divergence between empirical distributions it is not inflated
  by sampling noise alone: K samples of one distribution give ``E[B] = E[W]``.
- also recorded: the modal disagreement (the chance that two targets' modal answers differ, a tie
  broken at random) and the share of answers outside the answer set (``"other"`` or no
  parseable answer).

**The filter** (:class:`PilotFilter`; defaults in brackets). A candidate is kept when every one of
these holds, and its record lists each that fails:

- at least ``min_targets`` [2] targets, each with at least ``min_samples`` [2] answers;
- ``D ≥ d_min`` [0.3] (``agreement``: targets answer alike);
- every target's ``W_t ≥ c_min`` [0.5] (``inconsistent``: some target answers at random, so its
  test-retest ceiling is near any baseline and its skill is noise). A target that is noisy on
  every candidate therefore empties the pilot, and the verdict names it;
- the mean ``W ≤ c_max`` [1.0] (``too-consistent``): the seed's "moderate" upper bound. Open by
  default because a deterministic target on a divergent item is still a fair prediction (its
  ceiling is 1) and models at their normal temperature often answer arbitrary questions almost
  deterministically; a pre-registration may lower it;
- the share of answers outside the answer set ``≤ other_max`` [0.5] (``other``: the clusters or
  the choices do not describe what the targets say).

When fewer than ``min_items`` [20] candidates are kept, the record is *not divergent*: its
``verdict`` reads ``not divergent: …`` with the counts per reason, and ``divergent`` is False.
"""

from __future__ import annotations

import asyncio
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol

import numpy as np

import games
import nesttom
from harness import matrix_base as matrix
from mindledger import family as registry
from mindledger.canonical import content_hash
from mindledger.errors import UserError
from mindledger.items import Item

__all__ = [
    "DEFAULT_KINDS",
    "FAILURE_CHOICES",
    "KINDS",
    "METHOD",
    "OPEN_TEMPLATES",
    "OTHER",
    "PREFERENCE_TEMPLATES",
    "VERSION",
    "CandidateFigures",
    "CandidateKind",
    "Drop",
    "PilotFilter",
    "PilotRecord",
    "apply_filter",
    "candidate_counts",
    "candidates",
    "cluster_answer",
    "failure_answers",
    "failure_outcome",
    "failure_prediction_item",
    "failure_source",
    "is_failure",
    "kind_of",
    "normalise_answer",
    "observed_answer",
    "regenerate",
    "run_pilot",
    "stem",
]

VERSION = "1"
"""Version of this module's generators (``matrix.preference``, ``matrix.open``, …)."""
METHOD = "pilot.v1"
"""Names the figures and the filter rule of the module docstring, recorded with each pilot."""
OTHER = "other"
"""The bucket of an open item for an answer outside its clusters."""
FAILURE_CHOICES = ("yes", "no")
"""A failure item's answers: the target answers the underlying question correctly, or not."""
MAX_OPTIONS = 30
"""Most choices a game item may have to be a matrix candidate."""

# -- preference items -----------------------------------------------------------------------------

PREFERENCE_TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "afternoon",
        "Which would you rather do on a free afternoon: {options}?",
        (
            "read a novel",
            "go for a hike",
            "cook a big meal",
            "visit a museum",
            "take a nap",
            "play a board game",
            "paint",
            "go swimming",
        ),
    ),
    (
        "superpower",
        "Which superpower would you rather have: {options}?",
        (
            "flight",
            "invisibility",
            "teleportation",
            "time travel",
            "telepathy",
            "super strength",
            "breathing underwater",
        ),
    ),
    (
        "breakfast",
        "Which would you rather eat for breakfast: {options}?",
        (
            "pancakes",
            "porridge",
            "eggs on toast",
            "fruit salad",
            "croissant",
            "yogurt",
            "miso soup",
        ),
    ),
    ("season", "Which season do you prefer: {options}?", ("spring", "summer", "autumn", "winter")),
    (
        "home",
        "Would you rather live {options}?",
        (
            "by the sea",
            "in the mountains",
            "in a big city",
            "in a small village",
            "in the desert",
            "on an island",
        ),
    ),
    (
        "travel",
        "Would you rather travel by {options}?",
        ("train", "plane", "boat", "car", "bicycle"),
    ),
    (
        "pet",
        "Which would you rather have as a pet: {options}?",
        ("dog", "cat", "parrot", "rabbit", "tortoise", "goldfish"),
    ),
    (
        "book",
        "Which would you rather read next: {options}?",
        (
            "a mystery",
            "a history of the sea",
            "a science-fiction epic",
            "a book of poems",
            "a biography of a chef",
            "a travel memoir",
        ),
    ),
)
"""(name, prompt template, option pool): "which would you rather…" questions, 2–4 options."""


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
        family=matrix.FAMILY,
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

OPEN_TEMPLATES: tuple[tuple[str, str, Mapping[str, tuple[str, ...]]], ...] = (
    (
        "fruit",
        "Name a fruit.",
        {
            "apple": (),
            "banana": (),
            "orange": (),
            "mango": (),
            "strawberry": (),
            "grape": (),
            "pear": (),
            "cherry": (),
            "pineapple": (),
            "peach": (),
            "kiwi": ("kiwifruit", "kiwi fruit"),
            "watermelon": ("water melon",),
            "blueberry": (),
            "lemon": (),
        },
    ),
    (
        "colour",
        "Name a colour.",
        {
            "red": (),
            "blue": (),
            "green": (),
            "yellow": (),
            "purple": (),
            "orange": (),
            "black": (),
            "white": (),
            "pink": (),
            "grey": ("gray",),
            "teal": (),
            "violet": (),
        },
    ),
    (
        "animal",
        "Name an animal.",
        {
            "cat": ("kitten",),
            "dog": ("puppy",),
            "elephant": (),
            "lion": (),
            "tiger": (),
            "owl": (),
            "dolphin": (),
            "fox": (),
            "wolf": ("wolves",),
            "horse": (),
            "giraffe": (),
            "penguin": (),
            "octopus": (),
        },
    ),
    (
        "city",
        "Name a city.",
        {
            "paris": (),
            "tokyo": (),
            "london": (),
            "new york": ("new york city", "nyc"),
            "rome": (),
            "sydney": (),
            "berlin": (),
            "kyoto": (),
            "barcelona": (),
            "cairo": (),
            "san francisco": ("sf",),
        },
    ),
    (
        "scientist",
        "Name a famous scientist.",
        {
            "einstein": ("albert einstein",),
            "newton": ("isaac newton", "sir isaac newton"),
            "curie": ("marie curie", "marie sklodowska curie"),
            "darwin": ("charles darwin",),
            "tesla": ("nikola tesla",),
            "galileo": ("galileo galilei",),
            "hawking": ("stephen hawking",),
            "feynman": ("richard feynman",),
        },
    ),
    (
        "sea-word",
        "Give one word that describes the sea.",
        {
            "vast": ("immense", "endless"),
            "deep": (),
            "blue": (),
            "calm": ("tranquil", "serene", "peaceful"),
            "mysterious": (),
            "powerful": (),
            "restless": (),
            "salty": (),
            "wild": ("stormy", "turbulent"),
        },
    ),
    (
        "joy-word",
        "Give one word for happiness.",
        {
            "joy": ("joyful",),
            "bliss": (),
            "delight": (),
            "contentment": ("content",),
            "elation": (),
            "cheer": ("cheerfulness",),
            "glee": (),
            "euphoria": (),
            "gladness": (),
        },
    ),
    (
        "instrument",
        "Name a musical instrument.",
        {
            "piano": (),
            "guitar": (),
            "violin": ("fiddle",),
            "drum": ("drum kit", "drum set"),
            "flute": (),
            "cello": ("violoncello",),
            "trumpet": (),
            "saxophone": ("sax",),
            "harp": (),
        },
    ),
    (
        "vegetable",
        "Name a vegetable.",
        {
            "carrot": (),
            "broccoli": (),
            "potato": (),
            "tomato": (),
            "spinach": (),
            "onion": (),
            "pepper": ("bell pepper",),
            "cucumber": (),
            "lettuce": (),
            "pea": (),
        },
    ),
    (
        "planet",
        "Name a planet other than Earth.",
        {
            "mars": (),
            "jupiter": (),
            "saturn": (),
            "venus": (),
            "mercury": (),
            "neptune": (),
            "uranus": (),
        },
    ),
)
"""(name, prompt, lexicon): a short free answer; the lexicon's keys are the cluster labels, each
with its variants besides itself."""

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
        family=matrix.FAMILY,
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
        family=matrix.FAMILY,
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


def _failure_sources(seed: int, indexes: Sequence[int]) -> dict[int, tuple[Item, Item]]:
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
    index = int(item.params["index"])
    return _failure_sources(item.seed, [index])[index]


def _failure_item(seed: int, index: int, question: Item, src: Item) -> Item:
    return Item(
        family=matrix.FAMILY,
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
    question correctly?" over NestToM (even indexes) and game (odd) questions. Pure."""
    index = int(params["index"])
    return _failure_item(seed, index, *_failure_sources(seed, [index])[index])


def _many_failures(seed: int, n: int) -> list[Item]:
    pairs = _failure_sources(seed, range(n))
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
    index = int(item.params["index"])
    source = _failure_sources(item.seed, [index])[index][0]
    who = matrix.describe_target(predictor, target)
    mine = predictor == target
    prompt = (
        f"Predict whether {who} answers the question below correctly.\n\n"
        f"--- the question ---\n{source.prompt}\n--- end of the question ---\n\n"
        "Do not answer the question yourself. Give the probability that "
        f"{'your copy' if mine else target} answers it correctly (yes) and that it does not "
        "(no); the probabilities must sum to 1."
    )
    return Item(
        family=matrix.FAMILY,
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
        CandidateKind("arbitrary", matrix.DIVERGENT, matrix.make_item),
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
    :data:`harness.matrix_base.NO_ANSWER`."""
    if isinstance(answer, bool) or answer is None:
        return matrix.NO_ANSWER
    if isinstance(answer, int | float) and float(answer).is_integer():
        answer = str(int(answer))
    if not isinstance(answer, str):
        return matrix.NO_ANSWER
    if item.answer.get("kind") == "open":
        return cluster_answer(item, answer)
    return answer


# -- the pilot filter -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PilotFilter:
    """The pilot's thresholds (see the module docstring)."""

    d_min: float = 0.3
    """Least between-target disagreement D a kept item has."""
    c_min: float = 0.5
    """Least consistency W_t every target has on a kept item."""
    c_max: float = 1.0
    """Most mean consistency W of a kept item (1: no upper bound)."""
    other_max: float = 0.5
    """Most share of answers outside the answer set ("other", no parseable answer)."""
    min_samples: int = 2
    """Fewest answers of each target on an item (consistency needs 2)."""
    min_targets: int = 2
    """Fewest targets with answers on an item (disagreement needs 2)."""
    min_items: int = 20
    """Fewest kept items for the candidates to count as divergent."""

    def __post_init__(self) -> None:
        for name in ("d_min", "c_min", "c_max", "other_max"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UserError(f"pilot threshold {name} must be in [0, 1], not {value}")
        if self.c_min > self.c_max:
            raise UserError(f"pilot threshold c_min ({self.c_min}) is above c_max ({self.c_max})")
        if self.min_samples < 2 or self.min_targets < 2 or self.min_items < 0:
            raise UserError("the pilot needs min_samples ≥ 2, min_targets ≥ 2 and min_items ≥ 0")

    def to_dict(self) -> dict[str, Any]:
        return {
            "d_min": self.d_min,
            "c_min": self.c_min,
            "c_max": self.c_max,
            "other_max": self.other_max,
            "min_samples": self.min_samples,
            "min_targets": self.min_targets,
            "min_items": self.min_items,
        }


DROP_CODES = ("targets", "samples", "agreement", "inconsistent", "too-consistent", "other")
"""Why a candidate is dropped, in the order the filter checks."""


@dataclass(frozen=True)
class Drop:
    """One reason a candidate was dropped: its code (:data:`DROP_CODES`) and, for a person, the
    figures that broke the threshold."""

    code: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


@dataclass(frozen=True)
class CandidateFigures:
    """One candidate's pilot figures and verdict (None where a figure is undefined)."""

    id: str
    kind: str
    answers: Mapping[str, int]
    """Answers per target."""
    consistency: Mapping[str, float | None]
    """W_t per target."""
    modes: Mapping[str, tuple[str, ...]]
    """Each target's modal answers."""
    disagreement: float | None
    between: float | None
    within: float | None
    consistency_min: float | None
    modal_disagreement: float | None
    outside_share: float | None
    """Share of answers outside the answer set ("other" or no parseable answer)."""
    kept: bool
    drops: tuple[Drop, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "answers": dict(self.answers),
            "consistency": dict(self.consistency),
            "modes": {t: list(m) for t, m in self.modes.items()},
            "disagreement": self.disagreement,
            "between": self.between,
            "within": self.within,
            "consistency_min": self.consistency_min,
            "modal_disagreement": self.modal_disagreement,
            "outside_share": self.outside_share,
            "kept": self.kept,
            "drops": [d.to_dict() for d in self.drops],
        }


@dataclass(frozen=True)
class PilotRecord:
    """What the pilot did: its method, thresholds, targets and K, every candidate's figures, and
    whether enough survived (``divergent``, worded in ``verdict``). JSON form: :meth:`to_dict`."""

    filter: PilotFilter
    targets: tuple[str, ...]
    samples: int
    candidates: tuple[CandidateFigures, ...]
    kept: tuple[str, ...]
    dropped: Mapping[str, int]
    """Candidates dropped per reason code (a candidate may count under several)."""
    by_kind: Mapping[str, Mapping[str, int]]
    """Per kind: ``{"candidates": n, "kept": k}``."""
    divergent: bool
    verdict: str
    errors: Mapping[str, int] = field(default_factory=dict)
    """Target samples lost to API errors, per target."""
    method: str = METHOD

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def n_kept(self) -> int:
        return len(self.kept)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "filter": self.filter.to_dict(),
            "targets": list(self.targets),
            "samples": self.samples,
            "n_candidates": self.n_candidates,
            "n_kept": self.n_kept,
            "kept": list(self.kept),
            "dropped": dict(self.dropped),
            "by_kind": {k: dict(v) for k, v in self.by_kind.items()},
            "divergent": self.divergent,
            "verdict": self.verdict,
            "errors": dict(self.errors),
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PilotRecord:
        """Rebuild a record from :meth:`to_dict` output."""
        return cls(
            filter=PilotFilter(**data["filter"]),
            targets=tuple(data["targets"]),
            samples=int(data["samples"]),
            candidates=tuple(
                CandidateFigures(
                    **{
                        **c,
                        "modes": {t: tuple(m) for t, m in c["modes"].items()},
                        "drops": tuple(Drop(**d) for d in c["drops"]),
                    }
                )
                for c in data["candidates"]
            ),
            kept=tuple(data["kept"]),
            dropped=dict(data["dropped"]),
            by_kind={k: dict(v) for k, v in data["by_kind"].items()},
            divergent=bool(data["divergent"]),
            verdict=str(data["verdict"]),
            errors=dict(data["errors"]),
            method=str(data["method"]),
        )

    @property
    def digest(self) -> str:
        """The content hash of :meth:`to_dict` (to store with the run)."""
        return content_hash(self.to_dict())


def _consistency(counts: Counter[str], k: int) -> float:
    return math.fsum(n * (n - 1) for n in counts.values()) / (k * (k - 1))


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _figures(
    item: Item, answers: Mapping[str, Sequence[str]], rule: PilotFilter
) -> CandidateFigures:
    kind = kind_of(item)
    drops: list[Drop] = []
    given = {t: list(a) for t, a in answers.items() if a}
    short = [t for t, a in given.items() if len(a) < rule.min_samples]
    counts = {t: Counter(a) for t, a in given.items()}
    consistency: dict[str, float | None] = {
        t: _consistency(c, len(given[t])) if len(given[t]) >= 2 else None for t, c in counts.items()
    }
    modes: dict[str, tuple[str, ...]] = {}
    for t, c in counts.items():
        best = max(c.values())
        modes[t] = tuple(sorted(a for a, n in c.items() if n == best))
    total = sum(len(a) for a in given.values())
    outside = {OTHER, matrix.NO_ANSWER} if item.answer.get("kind") == "open" else {matrix.NO_ANSWER}
    outside_share = (
        sum(n for c in counts.values() for a, n in c.items() if a in outside) / total
        if total
        else None
    )
    usable = [t for t in given if len(given[t]) >= rule.min_samples]
    between = within = disagreement = cmin = modal = None
    if len(usable) >= 2:
        dists = {t: {a: n / len(given[t]) for a, n in counts[t].items()} for t in usable}
        pairs = list(combinations(usable, 2))
        between = math.fsum(
            math.fsum(p * dists[t].get(a, 0.0) for a, p in dists[s].items()) for s, t in pairs
        ) / len(pairs)
        ws = [consistency[t] for t in usable]
        within = math.fsum(w for w in ws if w is not None) / len(ws)
        cmin = min(w for w in ws if w is not None)
        disagreement = max(0.0, 1.0 - between / within) if within > 0 else None
        modal = 1.0 - math.fsum(
            len(set(modes[s]) & set(modes[t])) / (len(modes[s]) * len(modes[t])) for s, t in pairs
        ) / len(pairs)
    if len(given) < rule.min_targets:
        drops.append(
            Drop("targets", f"{len(given)} target(s) answered; the filter needs {rule.min_targets}")
        )
    if short:
        drops.append(
            Drop(
                "samples",
                ", ".join(f"{t} answered {len(given[t])} time(s)" for t in short)
                + f" (fewer than {rule.min_samples})",
            )
        )
    if len(usable) >= 2 and len(given) >= rule.min_targets and not short:
        assert within is not None and cmin is not None
        if disagreement is None or disagreement < rule.d_min:
            shown = "undefined" if disagreement is None else _fmt(disagreement)
            drops.append(
                Drop(
                    "agreement",
                    f"disagreement {shown} < d_min {_fmt(rule.d_min)}: the targets answer alike",
                )
            )
        low = [t for t in usable if (consistency[t] or 0.0) < rule.c_min]
        if low:
            drops.append(
                Drop(
                    "inconsistent",
                    ", ".join(f"{t} agrees with itself {_fmt(consistency[t] or 0.0)}" for t in low)
                    + f" (< c_min {_fmt(rule.c_min)})",
                )
            )
        if within > rule.c_max:
            drops.append(
                Drop(
                    "too-consistent", f"mean consistency {_fmt(within)} > c_max {_fmt(rule.c_max)}"
                )
            )
    if outside_share is not None and outside_share > rule.other_max:
        drops.append(
            Drop(
                "other",
                f"{_fmt(outside_share)} of the answers are outside the answer set "
                f"(> other_max {_fmt(rule.other_max)})",
            )
        )
    return CandidateFigures(
        id=item.id,
        kind=kind,
        answers={t: len(a) for t, a in given.items()},
        consistency=consistency,
        modes=modes,
        disagreement=disagreement,
        between=between,
        within=within,
        consistency_min=cmin,
        modal_disagreement=modal,
        outside_share=outside_share,
        kept=not drops,
        drops=tuple(drops),
    )


def _verdict(figures: Sequence[CandidateFigures], rule: PilotFilter) -> tuple[bool, str]:
    kept = sum(f.kept for f in figures)
    n = len(figures)
    if kept >= rule.min_items and kept > 0:
        return True, f"divergent: {kept} of {n} candidates kept"
    counts = Counter(d.code for f in figures for d in f.drops)
    why = "; ".join(f"{counts[c]} {c}" for c in DROP_CODES if counts[c])
    reason = f"{kept} of {n} candidates kept (minimum {rule.min_items})"
    if why:
        reason += f"; dropped for {why}"
    noisy = Counter(
        t for f in figures for t, w in f.consistency.items() if w is not None and w < rule.c_min
    )
    if counts["inconsistent"] and noisy:
        t, k = noisy.most_common(1)[0]
        reason += f"; most often inconsistent: {t} ({k} candidates)"
    return False, f"not divergent: {reason}"


def apply_filter(
    items: Sequence[Item],
    answers: Mapping[str, Mapping[str, Sequence[str]]],
    rule: PilotFilter | None = None,
    *,
    samples: int | None = None,
    errors: Mapping[str, int] | None = None,
) -> tuple[list[Item], PilotRecord]:
    """Keep the candidates the pilot filter passes (see the module docstring). ``answers`` maps
    each target to its recorded answers (cluster labels for open items) by item id; ``samples``
    (K) and ``errors`` are recorded as given. Returns the kept items, in order, and the
    record. Pure."""
    rule = rule or PilotFilter()
    targets = tuple(answers)
    figures = [
        _figures(item, {t: answers[t].get(item.id, ()) for t in targets}, rule) for item in items
    ]
    kept = [item for item, f in zip(items, figures, strict=True) if f.kept]
    by_kind: dict[str, dict[str, int]] = {}
    for f in figures:
        entry = by_kind.setdefault(f.kind, {"candidates": 0, "kept": 0})
        entry["candidates"] += 1
        entry["kept"] += int(f.kept)
    dropped = Counter(d.code for f in figures for d in f.drops)
    divergent, verdict = _verdict(figures, rule)
    k = (
        samples
        if samples is not None
        else max((n for f in figures for n in f.answers.values()), default=0)
    )
    record = PilotRecord(
        filter=rule,
        targets=targets,
        samples=k,
        candidates=tuple(figures),
        kept=tuple(item.id for item in kept),
        dropped={c: dropped[c] for c in DROP_CODES if dropped[c]},
        by_kind=by_kind,
        divergent=divergent,
        verdict=verdict,
        errors=dict(errors or {}),
    )
    return kept, record


# -- the pilot run --------------------------------------------------------------------------------


class Reply(Protocol):
    """What an ask-callable returns (as :mod:`harness.matrix`'s asking does): the answer, or
    the API error."""

    answer: Any
    error: str | None


Ask = Callable[..., Awaitable[Reply]]
"""``ask(agent, item, *key)``: one fresh conversation's reply of ``agent`` to ``item``; ``key``
tells repeated asks apart (a reference agent draws from it)."""


def failure_outcome(source: Item, answer: Any) -> str:
    """A failure item's observed answer for one reply to its underlying question ``source``:
    ``"yes"`` when the family's scorer marks ``answer`` correct, else ``"no"`` (no answer, an
    unparseable number)."""
    if answer is None or answer == matrix.NO_ANSWER:
        return "no"
    if source.answer.get("kind") == "integer" and isinstance(answer, str):
        try:
            answer = int(answer)
        except ValueError:
            return "no"
    return "yes" if registry.get(source.family).score(source, answer).correct else "no"


async def run_pilot(
    agents: Mapping[str, Any],
    items: Sequence[Item],
    samples: int,
    ask: Ask,
    *,
    rule: PilotFilter | None = None,
    trials: Mapping[str, Mapping[str, bool | Sequence[bool]]] | None = None,
    concurrency: int = 4,
) -> tuple[list[Item], PilotRecord]:
    """Ask every target in ``agents`` every candidate ``samples`` (K) times through ``ask`` and
    apply the filter. A failure candidate's answers are the target's ``trials`` on the
    underlying item when given for that target (correct flags by item id); otherwise the target
    is asked the underlying question K times and each answer scored with its family's scorer.
    A sample whose reply is an API error is dropped and counted in the record's ``errors``."""
    if samples < 2:
        raise UserError("the pilot needs at least 2 samples per target and item")
    if not agents:
        raise UserError("the pilot needs at least one target")
    answers: dict[str, dict[str, list[str]]] = {t: {} for t in agents}
    errors = {t: 0 for t in agents}
    sem = asyncio.Semaphore(max(1, concurrency))
    sources: dict[str, tuple[Item, Item]] = {}
    failures = [item for item in items if kind_of(item) == "failure"]
    for seed in {item.seed for item in failures}:
        of_seed = [item for item in failures if item.seed == seed]
        pairs = _failure_sources(seed, [int(item.params["index"]) for item in of_seed])
        sources.update((item.id, pairs[int(item.params["index"])]) for item in of_seed)

    async def sample(t: str, item: Item, k: int) -> None:
        question = sources[item.id][0] if item.id in sources else item
        async with sem:
            reply = await ask(agents[t], question, "pilot", k)
        if reply.error is not None:
            errors[t] += 1
            return
        value = observed_answer(question, reply.answer)
        if item.id in sources:
            value = failure_outcome(sources[item.id][1], value)
        answers[t].setdefault(item.id, []).append(value)

    jobs: list[Awaitable[None]] = []
    for t in agents:
        for item in items:
            if item.id in sources and trials is not None and t in trials:
                known = failure_answers(item, trials[t])
                if known:
                    answers[t][item.id] = list(known)
                    continue
            jobs.extend(sample(t, item, k) for k in range(samples))
    await asyncio.gather(*jobs)
    # answers arrive in completion order; sort for a record independent of scheduling
    ordered = {t: {i: sorted(a) for i, a in by_item.items()} for t, by_item in answers.items()}
    return apply_filter(items, ordered, rule, samples=samples, errors=errors)
