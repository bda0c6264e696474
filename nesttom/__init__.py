"""NestToM: nested-belief stories with exact ground truth, depth R0–R5.

Pure code: no clock, no global random state; generators take a seed or a
``numpy.random.Generator``. (The one exception to "no I/O" is that :func:`import_hitom` also
accepts a path, for convenience; the CLI passes it parsed data.)

- Story model and validation: :class:`Story`, :func:`validate_story`.
- Exact semantics: :func:`answer_chain` (alias :func:`belief_of_chain`), :func:`chain_answers`,
  :func:`answer_questions` (the ``mindledger nesttom answer`` contract).
- Generation: :func:`generate_items` over a :class:`Design`, :func:`generate_story`,
  :func:`regenerate`, :func:`verify_items`; baseline builders :func:`b1_items`,
  :func:`b2_items`, :func:`b4_items`.
- Scoring: :func:`score`, :func:`error_codes`, :func:`reference_answer`, and
  :func:`ambiguities` (what an item's error coding cannot tell apart).
- External items: :func:`import_hitom`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mindledger.errors import InputError
from mindledger.items import Item
from nesttom._design import (
    APPLIED_DEPTHS,
    BELIEF_TYPES,
    DEPTH_N,
    DEPTHS,
    MECHANISMS,
    Design,
    cell_of,
    decisive_feasible,
    depth_label,
    feasible,
)
from nesttom._generator import (
    GENERATOR,
    LURES,
    VERSION,
    Drawn,
    generate_items,
    generate_story,
    regenerate,
)
from nesttom._hitom import import_hitom, parse_hitom_question, parse_hitom_story
from nesttom._model import Enter, Event, Leave, Move, Question, Story, Tell, validate_story
from nesttom._render import FORMS, render_prompt, render_story
from nesttom._scoring import (
    ERROR_TYPES,
    POLICIES,
    ambiguities,
    error_codes,
    error_type,
    normalize_answer,
    reference_answer,
    score,
)
from nesttom._semantics import (
    answer_chain,
    belief_of_chain,
    chain_answers,
    reality,
    sender_beliefs,
)
from nesttom._suites import b1_items, b2_items, b4_items, baseline_items

__all__ = [
    "APPLIED_DEPTHS",
    "BELIEF_TYPES",
    "DEPTHS",
    "DEPTH_N",
    "ERROR_TYPES",
    "FORMS",
    "GENERATOR",
    "LURES",
    "MECHANISMS",
    "POLICIES",
    "VERSION",
    "Design",
    "Drawn",
    "Enter",
    "Event",
    "Leave",
    "Move",
    "Question",
    "Story",
    "Tell",
    "ambiguities",
    "answer_chain",
    "answer_questions",
    "b1_items",
    "b2_items",
    "b4_items",
    "baseline_items",
    "belief_of_chain",
    "cell_of",
    "chain_answers",
    "decisive_feasible",
    "depth_label",
    "error_codes",
    "error_type",
    "feasible",
    "generate_items",
    "generate_story",
    "import_hitom",
    "normalize_answer",
    "parse_hitom_question",
    "parse_hitom_story",
    "reality",
    "reference_answer",
    "regenerate",
    "render_prompt",
    "render_story",
    "score",
    "sender_beliefs",
    "validate_story",
    "verify_items",
]


def answer_questions(story: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Answer every question of a story in its JSON form: one dict per question, the question
    (as given) plus ``"answer"``. Raises :class:`~mindledger.errors.InputError` for a story that
    breaks the rules, naming the event index or question."""
    validated = validate_story(story)
    if "questions" not in story or story["questions"] is None:
        raise InputError("missing field 'questions'", where="story")
    raw = story["questions"]
    out = []
    for raw_q, q in zip(raw, validated.questions, strict=True):
        out.append({**raw_q, "answer": answer_chain(validated, q.chain, q.object)})
    return out


def verify_items(items: Iterable[Item]) -> list[str]:
    """Re-derive every NestToM item's ground truth from its own story (``truth["story"]``)
    and, where it is of this generator version, regenerate it from its seed and params; return
    one line per item that disagrees (empty when all hold)."""
    problems: list[str] = []
    for item in items:
        problems.extend(item.verify())
        if item.family != "nesttom":
            continue
        truth = item.truth
        try:
            story = validate_story(truth["story"])
            answers = chain_answers(story, truth["chain"], truth["object"])
        except (InputError, KeyError) as exc:
            problems.append(f"{item.id}: cannot re-derive the truth ({exc})")
            continue
        n = len(truth["chain"])
        belief = truth.get("belief", truth["answer"])
        if item.meta.get("question") == "judgment":
            expected = "yes" if truth.get("looked") == answers[n] else "no"
            if truth["answer"] != expected or belief != answers[n]:
                problems.append(
                    f"{item.id}: judgment truth {truth['answer']!r}, derived {expected!r}"
                )
        elif truth["answer"] != answers[n]:
            problems.append(f"{item.id}: answer {truth['answer']!r}, derived {answers[n]!r}")
        if truth["reality"] != answers[0] or list(truth["prefix_answers"]) != answers[1:n]:
            problems.append(f"{item.id}: reality or prefix answers differ from the story")
        if item.version == VERSION and item.generator == GENERATOR:
            try:
                regenerate(item)
            except ValueError as exc:
                problems.append(str(exc))
    return problems
