"""The reference scaffold: three switchable modules that wrap any chat model (seed 002 §16–17).

- ``perspective`` (A′, perspective filtering): before answering a belief question, the model
  first lists only what the person asked about observed or was told, then answers from that list.
- ``witness_log`` (B, explicit witness-set event log): the scaffold presents the story as an
  event log saying, for every event, who witnessed it. When the item carries its structured
  story (``truth["story"]``: only the events, which the prompt already narrates) the log is
  computed exactly from who was present; otherwise the model is asked to write it first.
- ``opponent_sim`` (D, recursive opponent simulation, depth ≤ 2): before choosing in a game, the
  model predicts the opponent's choice as the opponent would reason, then best-responds.

The scaffold does not talk to the model: :meth:`Scaffold.plan` turns an item into a plan, a tuple
of steps (:class:`WitnessLog`: text put in the prompt; :class:`Preliminary`: a model turn before
the answer), and the agent executes it.

A module applies only to the families that declare it (``Family.scaffold_modules`` in
:mod:`mindledger.family`); elsewhere it does nothing, so that an ablation measures exactly what
the module adds. A module gets credit only for the drop when it is
switched off (see reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.config.settings import MODULES
from mindledger import family as registry
from mindledger.items import Item

__all__ = ["MODULES", "Preliminary", "Scaffold", "Step", "WitnessLog", "witness_log_text"]

PERSPECTIVE_STEP = (
    "Before you answer, work from the point of view of the person the question asks about. "
    "List, in order, only the events that this person saw happen or was told about, and who "
    "else they know saw each one. Do not answer yet."
)
WITNESS_STEP = (
    "Before you answer, rewrite the story as a numbered event log. For every event, write who "
    "was present and saw it, and who was told about it. Do not answer yet."
)
OPPONENT_STEP = (
    "Before you choose, simulate your opponent. What will they choose, reasoning as they would "
    "(and, if they think about you, what they expect you to choose)? Go at most two levels "
    "deep. Do not give your own final answer yet."
)
WITNESS_THEN = "Now answer the original question, using your event log."
PERSPECTIVE_THEN = "Now answer the original question from that list alone."
OPPONENT_THEN = "Now choose your own action, best-responding to the opponent you simulated."
STEP_TOKENS = 256


def witness_log_text(story: Mapping[str, Any]) -> str | None:
    """The exact witness log of a structured story (events with who saw them), or None when the
    story is not in the structured form."""
    events = story.get("events")
    agents = story.get("agents")
    if not isinstance(events, list) or not isinstance(agents, list):
        return None
    present = set(story.get("present") or agents)
    lines = ["Event log (who witnessed each event):"]
    for i, ev in enumerate(events, 1):
        kind = ev.get("type")
        if kind == "leave":
            present.discard(ev.get("agent"))
            lines.append(f"{i}. {ev.get('agent')} leaves.")
        elif kind == "enter":
            present.add(ev.get("agent"))
            lines.append(f"{i}. {ev.get('agent')} enters. Present: {', '.join(sorted(present))}.")
        elif kind == "move":
            seen = sorted(present | set(ev.get("hidden") or ()))
            hidden = sorted(set(ev.get("hidden") or ()))
            note = f" (secretly watched by {', '.join(hidden)}; nobody knows)" if hidden else ""
            lines.append(
                f"{i}. {ev.get('agent')} moves the {ev.get('object')} to the {ev.get('to')}. "
                f"Witnessed by: {', '.join(seen)}{note}."
            )
        elif kind == "tell":
            lines.append(
                f"{i}. {ev.get('from')} privately tells {ev.get('to')} about the {ev.get('object')}. "
                f"Only {ev.get('from')} and {ev.get('to')} know of this message."
            )
        else:
            return None
    return "\n".join(lines)


@dataclass(frozen=True)
class WitnessLog:
    """Put the story's exact witness log in the prompt (no model turn)."""

    text: str


@dataclass(frozen=True)
class Preliminary:
    """A model turn before the answer: the prompt so far with ``instruction`` after it goes to
    the model as a user message, its reply stays in the conversation, and ``then`` becomes the
    prompt that follows."""

    module: str
    """The module whose step this is."""
    instruction: str
    then: str
    max_tokens: int = STEP_TOKENS
    """Cap on the step's reply."""


Step = WitnessLog | Preliminary
"""One step of a scaffold's plan."""


class Scaffold:
    """The modules switched on for one agent."""

    def __init__(self, modules: tuple[str, ...]):
        unknown = [m for m in modules if m not in MODULES]
        if unknown:
            raise ValueError(f"unknown {'module' if len(unknown) == 1 else 'modules'} {unknown}; expected some of {MODULES}")
        self.modules = modules

    def plan(self, item: Item) -> tuple[Step, ...]:
        """The steps to take before the answer turn on ``item``, in order; the agent executes
        them (:meth:`harness.agent.agents.ChatAgent.execute_plan`).

        Only the modules that ``item``'s family declares (``Family.scaffold_modules``) act."""
        if not self.modules:
            return ()
        acting = set(self.modules) & set(registry.get(item.family).scaffold_modules)
        steps: list[Step] = []
        if "witness_log" in acting:
            story = item.truth.get("story") if isinstance(item.truth, Mapping) else None
            log = witness_log_text(story) if isinstance(story, Mapping) else None
            if log is not None:
                steps.append(WitnessLog(log))
            else:
                steps.append(Preliminary("witness_log", WITNESS_STEP, WITNESS_THEN))
        if "perspective" in acting:
            steps.append(Preliminary("perspective", PERSPECTIVE_STEP, PERSPECTIVE_THEN))
        if "opponent_sim" in acting:
            steps.append(Preliminary("opponent_sim", OPPONENT_STEP, OPPONENT_THEN))
        return tuple(steps)
