"""matrix: the cross-model prediction matrix's items, pilot filter and records (seed 002
§15.2, benchmarks B7–B9), as a family beside :mod:`nesttom` and :mod:`games`.

Pure code: no I/O, no clock, no global random state — every generator takes a seed and returns
frozen values whose ids are content hashes. Running a matrix (asking agents, committing
predictions to the ledger, storing trials) is :mod:`harness.matrix.runs`'s; its statistics are
:mod:`reports.matrix_summary`'s.

- Items every target is asked: :func:`make_item` / :func:`make_items` (divergent,
  arbitrary-choice questions) and the candidate kinds of :data:`KINDS` (:func:`candidates`,
  :func:`candidate_counts`; preference, open, NestToM, game and failure items), with
  :func:`observed_answer` (what a reply is recorded as; :func:`cluster_answer` for open items).
- Items a predictor is asked: :func:`prediction_item` (under a condition, :func:`check_conditions`)
  and :func:`second_order_item`.
- The pilot's filter: :class:`PilotFilter`, :func:`apply_filter`, :class:`PilotRecord`.
- What an item comes to, typed and stored as trials' scores: :class:`TargetRecord`,
  :class:`PredictionRecord`, :class:`SecondOrderRecord`, :class:`ExposureRecord`,
  :class:`ItemOutcome`, :func:`read_score`.
- Reference agents: :data:`MATRIX_POLICIES`, :func:`habit`, :func:`reference_distribution`.
- The family: :data:`MATRIX_FAMILY` (:mod:`matrix.family`, in the registry's
  :data:`~mindledger.family.BUILTIN`).
"""

from matrix._base import (
    DIVERGENT,
    FAMILY,
    NO_ANSWER,
    PREDICTION,
    VERSION,
    describe_target,
    make_item,
    make_items,
)
from matrix._conditions import (
    OBSERVE,
    SIMULATE,
    ZERO_SHOT,
    check_conditions,
    observed_count,
    second_order_triples,
)
from matrix._kinds import (
    DEFAULT_KINDS,
    FAILURE_CHOICES,
    FAILURE_SOURCE_FAMILIES,
    KINDS,
    MAX_OPTIONS,
    OTHER,
    CandidateKind,
    candidate_counts,
    candidates,
    cluster_answer,
    failure_answers,
    failure_from,
    failure_prediction_item,
    failure_source,
    failure_source_ok,
    failure_sources,
    is_failure,
    kind_of,
    make_failure,
    make_games,
    make_nesttom,
    make_open,
    make_preference,
    normalise_answer,
    observed_answer,
    regenerate,
    stem,
)
from matrix._pilot import (
    DROP_CODES,
    METHOD,
    CandidateFigures,
    Drop,
    PilotFilter,
    PilotRecord,
    apply_filter,
    failure_outcome,
)
from matrix._prompts import Observation, prediction_item, second_order_item
from matrix._records import (
    OUTCOMES,
    SCORED_BY,
    ExposureRecord,
    ItemOutcome,
    MatrixRecord,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    read_score,
)
from matrix._reference import (
    HABIT_OWN,
    HABIT_SHARED,
    MATRIX_POLICIES,
    habit,
    reference_distribution,
)
from matrix._templates import OPEN_TEMPLATES, PREFERENCE_TEMPLATES, TEMPLATES
from matrix.family import GENERATORS, MATRIX_FAMILY, MatrixFamily

__all__ = [
    "DEFAULT_KINDS",
    "DIVERGENT",
    "DROP_CODES",
    "FAILURE_CHOICES",
    "FAILURE_SOURCE_FAMILIES",
    "FAMILY",
    "GENERATORS",
    "HABIT_OWN",
    "HABIT_SHARED",
    "KINDS",
    "MATRIX_FAMILY",
    "MATRIX_POLICIES",
    "MAX_OPTIONS",
    "METHOD",
    "NO_ANSWER",
    "OBSERVE",
    "OPEN_TEMPLATES",
    "OTHER",
    "OUTCOMES",
    "PREDICTION",
    "PREFERENCE_TEMPLATES",
    "SCORED_BY",
    "SIMULATE",
    "TEMPLATES",
    "VERSION",
    "ZERO_SHOT",
    "CandidateFigures",
    "CandidateKind",
    "Drop",
    "ExposureRecord",
    "ItemOutcome",
    "MatrixFamily",
    "MatrixRecord",
    "Observation",
    "PilotFilter",
    "PilotRecord",
    "PredictionRecord",
    "SecondOrderRecord",
    "TargetRecord",
    "apply_filter",
    "candidate_counts",
    "candidates",
    "check_conditions",
    "cluster_answer",
    "describe_target",
    "failure_answers",
    "failure_from",
    "failure_outcome",
    "failure_prediction_item",
    "failure_source",
    "failure_source_ok",
    "failure_sources",
    "habit",
    "is_failure",
    "kind_of",
    "make_failure",
    "make_games",
    "make_item",
    "make_items",
    "make_nesttom",
    "make_open",
    "make_preference",
    "normalise_answer",
    "observed_answer",
    "observed_count",
    "prediction_item",
    "read_score",
    "reference_distribution",
    "regenerate",
    "second_order_item",
    "second_order_triples",
    "stem",
]
