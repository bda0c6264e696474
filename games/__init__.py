"""games: level-k distinguishable games, scripted opponents, and A/B/C strategic prediction.

Built on a paper on level-k distinguishable mechanisms ("the paper" in this package's
docstrings; see docs/architecture.md, "Where the specifications come from"). Pure code: no I/O,
no clock, no global random state — everything random takes a seed or a ``numpy.random.Generator``.

- Games: :data:`GAMES` / :func:`get_game` (``11-20``, ``all-pay``, ``nash-demand``,
  ``ring-11-20``), :func:`build_game` for any parameters of those families, and
  :func:`generate_variant` for fresh variants verified distinguishable.
- Analysis: :func:`idr_sequence`, :func:`check_distinguishability`.
- Trials: :func:`generate_items` / :func:`make_trial` (recursive and inductive conditions,
  prompts verbatim), :func:`opponent_history` (quantal level-k histories).
- Scoring: :func:`score`, :func:`score_reply`, :func:`summarize`, the judge's
  pieces in :mod:`games._judge`.
- Reference agents: :func:`reference_answer` (``oracle``, ``random``, ``level:K``,
  ``depth-capped:N``).
- A/B/C: :func:`generate_abc_items`, :func:`summarize_abc`; condition C against the run's own
  LLM population: :func:`generate_population_items` (K plays per agent and a C-llm question
  per scenario) and :func:`population_prediction_scores` (scored at report time).
"""

from games._catalog import CANONICAL_PARAMS, FAMILIES, GAMES, build_game, game_names, get_game
from games._equilibrium import symmetric_equilibria
from games._idr import Distinguishability, Failure, check_distinguishability, idr_sequence
from games._judge import (
    EXTRACTION_SCHEMAS,
    JUDGE_SYSTEM_PROMPT,
    MENTALIZING_FIELDS,
    JudgeReading,
    judge_messages,
    parse_judge_reply,
    quote_grounded,
    read_extraction,
)
from games._prompts import (
    INDUCTIVE_SYSTEM_APPENDIX,
    INDUCTIVE_USER_TEXT,
    NUDGE,
    SYSTEM_PROMPT,
    opponent_description,
    system_prompt,
    user_prompt,
)
from games._quantal import HISTORY_LENGTH, LAMBDAS, opponent_history, quantal_probabilities
from games._reference import POLICIES, parse_policy, reference_answer
from games._scoring import parse_action, read_belief, score, score_reply, summarize
from games._spec import Action, GameSpec
from games._strategic import (
    ABC_GENERATOR,
    ABC_KINDS,
    POPULATION_KINDS,
    POPULATION_MIN_ANSWERS,
    POPULATION_QUESTIONS,
    POPULATION_SAMPLES,
    generate_abc_items,
    generate_population_items,
    make_abc_item,
    make_abc_scenario,
    make_population_item,
    make_population_scenario,
)
from games._strategic_scoring import (
    population_prediction_scores,
    score_abc_answer,
    summarize_abc,
)
from games._trials import CONDITIONS, GENERATOR, design_cells, generate_items, make_trial
from games._variants import VARIANT_FAMILIES, VariantError, generate_variant

__all__ = [
    "ABC_GENERATOR",
    "ABC_KINDS",
    "CANONICAL_PARAMS",
    "CONDITIONS",
    "EXTRACTION_SCHEMAS",
    "FAMILIES",
    "GAMES",
    "GENERATOR",
    "HISTORY_LENGTH",
    "INDUCTIVE_SYSTEM_APPENDIX",
    "INDUCTIVE_USER_TEXT",
    "JUDGE_SYSTEM_PROMPT",
    "LAMBDAS",
    "MENTALIZING_FIELDS",
    "NUDGE",
    "POLICIES",
    "POPULATION_KINDS",
    "POPULATION_MIN_ANSWERS",
    "POPULATION_QUESTIONS",
    "POPULATION_SAMPLES",
    "SYSTEM_PROMPT",
    "VARIANT_FAMILIES",
    "Action",
    "Distinguishability",
    "Failure",
    "GameSpec",
    "JudgeReading",
    "VariantError",
    "build_game",
    "check_distinguishability",
    "design_cells",
    "game_names",
    "generate_abc_items",
    "generate_items",
    "generate_population_items",
    "generate_variant",
    "get_game",
    "idr_sequence",
    "judge_messages",
    "make_abc_item",
    "make_abc_scenario",
    "make_population_item",
    "make_population_scenario",
    "make_trial",
    "opponent_description",
    "opponent_history",
    "parse_action",
    "parse_judge_reply",
    "parse_policy",
    "population_prediction_scores",
    "quantal_probabilities",
    "quote_grounded",
    "read_belief",
    "read_extraction",
    "reference_answer",
    "score",
    "score_abc_answer",
    "score_reply",
    "summarize",
    "summarize_abc",
    "symmetric_equilibria",
    "system_prompt",
    "user_prompt",
]
