"""How the prediction matrix asks its agents (:mod:`harness.matrix.runs`): one fresh conversation
per question, a chat agent through its adapter, a reference agent by its script.

**Reference agents** (scripted, no model; :data:`matrix.MATRIX_POLICIES`) calibrate the scale;
their answer distributions are known (:func:`answer_distribution`), so the truth of every figure
is too:

- ``random`` answers uniformly and predicts the uniform distribution.
- ``habit`` answers from its *habit* (:func:`matrix.habit`): for each item a fixed, non-uniform
  distribution over the choices, derived from the item id (a taste shared by every habit) and
  from the item id with the agent's name (its own); each answer is a draw with the run's seeded
  generator. It predicts itself exactly (its own habit) and every other target uniformly, a
  perfect self-predictor with no model of others.
- ``projection`` answers from its habit and predicts its own habit for every target: S ≈ 0.
- ``clairvoyant`` answers from its habit and predicts every target's true answer distribution,
  with a draw from it as its top-1 guess, the target "predicting itself by resampling" that
  defines S = 1 (seed 002 §15.2); guessing the most probable answer would beat resampling and
  score S > 1. Only reference agents have a known distribution, so a clairvoyant cannot take part
  in a matrix with chat agents (:func:`check_agents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.agent.agents import ChatAgent, ReferenceAgent
from matrix import MATRIX_POLICIES, reference_distribution
from mindledger.canonical import content_hash
from mindledger.errors import UserError
from mindledger.items import Item

__all__ = [
    "MatrixAgent",
    "Reply",
    "answer_distribution",
    "ask",
    "check_agents",
    "reference_prediction",
    "reference_second_order",
]

MatrixAgent = ChatAgent | ReferenceAgent


def check_agents(agents: Mapping[str, MatrixAgent]) -> None:
    """Refuse, with a UserError, a reference agent that has no meaning in the matrix, and a
    clairvoyant beside a chat agent."""
    for agent in agents.values():
        if isinstance(agent, ReferenceAgent) and agent.policy not in MATRIX_POLICIES:
            raise UserError(
                f"reference agent {agent.name!r} ({agent.policy}) has no meaning in the prediction "
                f"matrix: only {', '.join(repr(p) for p in MATRIX_POLICIES)} take part (its answers "
                "have no ground truth to be exact to)"
            )
    chat = [n for n, a in agents.items() if not isinstance(a, ReferenceAgent)]
    seers = [
        n for n, a in agents.items() if isinstance(a, ReferenceAgent) and a.policy == "clairvoyant"
    ]
    if chat and seers:
        raise UserError(
            f"reference agent {seers[0]!r} (clairvoyant) predicts each target's true answer "
            "distribution, which is known only for reference agents: it cannot take part with "
            f"{', '.join(repr(n) for n in chat)}"
        )


@dataclass
class Reply:
    """One conversation's outcome: the answer, or the API error."""

    answer: Any = None
    error: str | None = None
    raw: str | None = None
    """The target's raw reply (hashed into an observation's provenance)."""
    top1: str | None = None
    """A predictor's top-1 guess, when it is not the most probable answer of its distribution."""


def _rng(agent: ReferenceAgent, *key: Any) -> np.random.Generator:
    digest = int(content_hash([agent.seed, *key])[7:23], 16)
    return np.random.default_rng([agent.seed, digest])


def answer_distribution(agent: ReferenceAgent, item: Item) -> dict[str, float]:
    """The distribution a reference agent's answers to ``item`` are drawn from."""
    return reference_distribution(agent.policy, agent.name, item)


def reference_prediction(
    agent: ReferenceAgent, item: Item, target: MatrixAgent, *key: Any
) -> Reply:
    """A reference agent's prediction of ``target`` on ``item`` (see the module docstring)."""
    choices = [str(c) for c in item.answer["choices"]]
    uniform = {c: 1.0 / len(choices) for c in choices}
    if agent.policy == "projection":
        return Reply(answer_distribution(agent, item))
    if agent.policy == "habit":
        return Reply(answer_distribution(agent, item) if target is agent else uniform)
    if agent.policy == "clairvoyant":
        assert isinstance(target, ReferenceAgent)  # checked by check_agents
        dist = answer_distribution(target, item)
        rng = _rng(agent, agent.name, target.name, item.id, *key)
        top1 = choices[int(rng.choice(len(choices), p=[dist[c] for c in choices]))]
        return Reply(dist, top1=top1)
    return Reply(uniform)


def reference_second_order(
    agent: ReferenceAgent, item: Item, about: MatrixAgent, target: MatrixAgent
) -> Reply:
    """A reference agent's second-order prediction: the distribution it expects ``about`` to
    commit for ``target`` on ``item``. The clairvoyant reproduces that prediction exactly
    (``about``'s reference prediction, which is deterministic), projection predicts its own
    habit, habit and random the uniform distribution."""
    choices = [str(c) for c in item.answer["choices"]]
    if agent.policy == "clairvoyant":
        assert isinstance(about, ReferenceAgent)  # checked by check_agents
        return Reply(reference_prediction(about, item, target, "predict").answer)
    if agent.policy == "projection":
        return Reply(answer_distribution(agent, item))
    return Reply({c: 1.0 / len(choices) for c in choices})


async def ask(agent: MatrixAgent, item: Item, *key: Any) -> Reply:
    """One fresh conversation: ``agent``'s answer to ``item`` (a choice; a chat agent's
    prediction of a target when ``item`` is a :func:`matrix.prediction_item`)."""
    if isinstance(agent, ReferenceAgent):
        choices = [str(c) for c in item.answer["choices"]]
        if agent.policy == "random":  # the draw the matrix has always made
            rng = _rng(agent, item.id, *key)
            choice = choices[int(rng.integers(len(choices)))]
        else:
            dist = answer_distribution(agent, item)
            rng = _rng(agent, agent.name, item.id, *key)
            choice = choices[int(rng.choice(len(choices), p=[dist[c] for c in choices]))]
        return Reply(choice, raw=choice)
    att = await agent.attempt(item)
    if att.error is not None:
        return Reply(error=att.error)
    return Reply(att.answer, raw=att.raw_text)
