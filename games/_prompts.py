"""The paper's prompts, verbatim, and the tools of a trial.

- :data:`SYSTEM_PROMPT` — the same for every game, condition and model; in the inductive
  condition :data:`INDUCTIVE_SYSTEM_APPENDIX` is appended as a further paragraph.
- The user turn is the rules text followed, in the recursive condition, by the opponent's
  description (L0–L3 in the paper's words, L4–L9 by the template with the L0 sentence
  substituted) and, in the inductive condition, by :data:`INDUCTIVE_USER_TEXT`.
- Tools: ``submit_action`` (the answer; the harness maps it to its own answer tool) and, in the
  inductive condition, ``query_opponent_history``, which takes no arguments and returns 30
  integers; its one-call limit is stated in its description but not enforced.

Neither condition asks for a belief: ``submit_action`` takes the action alone, as in the paper,
and the stated belief and chain are read from the chain of thought by the extraction judge
(:mod:`games._judge`). A scripted reference player states its belief in its answer mapping
instead (:mod:`games._reference`); the scorer reads both the same way.
"""

from __future__ import annotations

from typing import Any

from games._spec import GameSpec

__all__ = [
    "ANSWER_TOOL",
    "HISTORY_TOOL",
    "INDUCTIVE_SYSTEM_APPENDIX",
    "INDUCTIVE_USER_TEXT",
    "NUDGE",
    "SYSTEM_PROMPT",
    "history_tool_spec",
    "opponent_description",
    "submit_action_tool_spec",
    "system_prompt",
    "user_prompt",
]

_APOS = "\u2019"

SYSTEM_PROMPT = (
    "You are a rational game-theory player. Think step by step about your strategy. Show all "
    "your reasoning, then call the submit_action tool with your final chosen number. You MUST "
    "use the tool to submit --- do not just state your answer in text."
)

INDUCTIVE_SYSTEM_APPENDIX = (
    "You also have access to a query_opponent_history tool that returns your opponent"
    + _APOS
    + "s raw action choices from their previous games against other players. You may call it "
    "to inform your decision."
)

INDUCTIVE_USER_TEXT = (
    "You may use the query_opponent_history tool to view your opponent" + _APOS + "s past "
    "action choices in previous games against other players. This data may help you "
    "anticipate their strategy."
)

NUDGE = (
    "You have not submitted an action yet. Call the submit_action tool now with your final "
    "chosen number. Do not write any more reasoning."
)

ANSWER_TOOL = "submit_action"
HISTORY_TOOL = "query_opponent_history"


def system_prompt(condition: str) -> str:
    """The system turn for ``"recursive"`` or ``"inductive"``."""
    if condition == "inductive":
        return SYSTEM_PROMPT + "\n\n" + INDUCTIVE_SYSTEM_APPENDIX
    return SYSTEM_PROMPT


def opponent_description(spec: GameSpec, level: int) -> str:
    """The recursive-condition description of a level-``level`` opponent (0 ≤ level)."""
    if not spec.descriptions:
        raise ValueError(f"{spec.name} has no opponent descriptions")
    if level < 0:
        raise ValueError("level must be non-negative")
    if level <= 3:
        return spec.descriptions[level]
    subject = "Your opponents are" if spec.players > 2 else "Your opponent is"
    return (
        f"{subject} Level {level}. A Level k player best-responds to a Level (k-1) player, "
        f"all the way down to Level 0, which is defined as follows: {spec.descriptions[0]}"
    )


def user_prompt(spec: GameSpec, condition: str, opponent_level: int) -> str:
    """The user turn: the rules, then the opponent description or the inductive text."""
    if condition == "recursive":
        return spec.rules + "\n\n" + opponent_description(spec, opponent_level)
    if condition == "inductive":
        return spec.rules + "\n\n" + INDUCTIVE_USER_TEXT
    raise ValueError(f"unknown condition {condition!r}")


def submit_action_tool_spec(lo: int, hi: int) -> dict[str, Any]:
    """The paper's ``submit_action`` tool (the value is deliberately not constrained to S)."""
    return {
        "type": "function",
        "function": {
            "name": ANSWER_TOOL,
            "description": f"Submit your final chosen number (an integer from {lo} to {hi}).",
            "parameters": {
                "type": "object",
                "properties": {"action": {"type": "number", "description": "Your final choice."}},
                "required": ["action"],
            },
        },
    }


def history_tool_spec() -> dict[str, Any]:
    """The ``query_opponent_history`` tool: no arguments, returns 30 integers."""
    return {
        "type": "function",
        "function": {
            "name": HISTORY_TOOL,
            "description": (
                "Returns your opponent" + _APOS + "s raw action choices (30 integers) from "
                "their previous games against other players. Call it at most once."
            ),
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    }
