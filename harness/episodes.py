"""Playing a repeated-game episode (family ``"repeated"``, :mod:`games.repeated`) with an agent.

An episode is many turns, not one question, so it does not go through
:meth:`ChatAgent.attempt`; :func:`play_episode` plays it round by round and returns one
:class:`~harness.agents.Attempt` for the whole episode, which the runner scores and stores like
any other.

Each round is a fresh chat: the agent's and the task's system prompts, then one user message
with the rules (the item's prompt), the rounds played so far with their points
(:meth:`Episode.round_prompt`) and the answer instructions of the agent's answer mode. The
agent answers with one of the action labels through the usual answer protocol
(:func:`harness.answers.parse_reply`: the answer tool, JSON, or a last ``ANSWER:`` line).

**Unparseable replies.** A reply with no parseable move gets one nudge turn in that round; if
the nudged reply has none either, the round is an *invalid move*: it is recorded as ``None``,
the opponent's script does not count it as a move (win-stay-lose-shift counts the round as its
win), and it scores the game's worst outcome for the agent (its lowest payoff, e.g. 1 against 6
in the Prisoner's Dilemma, −1 or −3 in Rock-Paper-Scissors). The episode goes on.

**API errors.** An :class:`~mindledger.errors.AgentError` (after the backend's retries) ends the
episode: the attempt carries ``error`` and the moves played so far, and is excluded from
scoring, as for any item.

The attempt keeps the whole transcript (every round's messages, each tagged with its
``round``), the summed tokens and latency, and ``answer = {"moves": [...], "tokens": n,
"score": {...}}``: the agent's moves (None for invalid rounds), the episode's total token count
(prompt + completion) and :func:`games.repeated.score_episode`'s figures. A reference agent
(``oracle``, ``random``) plays by :func:`games.repeated.reference_answer` with no model at all;
one whose policy does not play repeated games (``level:K`` …) gets a ``not_applicable``
attempt, as :meth:`ReferenceAgent.attempt` gives it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from games.repeated import (
    FAMILY,
    Episode,
    Round,
    episode_from_item,
    play_moves,
    reference_answer,
    score_episode,
)
from harness import families
from harness.agents import Attempt, ChatAgent, ReferenceAgent, answer_tool_name
from harness.answers import (
    ParsedAnswer,
    answer_tool,
    instructions,
    nudge_message,
    parse_reply,
    response_format,
)
from mindledger.canonical import content_hash
from mindledger.errors import AgentError, InputError
from mindledger.items import Item

__all__ = ["EpisodeAgent", "play_episode"]


class EpisodeAgent(Protocol):
    """Any agent the runner holds; chat and reference agents are played round by round."""

    name: str

    async def attempt(self, item: Item) -> Attempt: ...


def _provider() -> dict[str, Any]:
    return {"models": [], "finish_reasons": [], "attempts": 0, "cached": 0, "turns": []}


def _merge(into: Attempt, part: Attempt) -> None:
    into.turns += part.turns
    into.tokens_in += part.tokens_in
    into.tokens_out += part.tokens_out
    into.latency_s += part.latency_s
    for key in ("models", "finish_reasons", "turns"):
        into.provider[key].extend(part.provider.get(key, []))
    for key in ("attempts", "cached"):
        into.provider[key] += part.provider[key]


async def _ask(
    agent: ChatAgent, messages: list[dict[str, Any]], att: Attempt, spec: Mapping[str, Any],
    tool: str,
) -> ParsedAnswer:
    tools = [answer_tool(spec, tool)] if agent.mode == "tools" else None
    fmt = response_format(spec) if agent.mode == "json" else None
    message = await agent.turn(messages, att, tools=tools, fmt=fmt)
    calls = message.get("tool_calls") or []
    if calls:
        raw = [c for c in calls if (c.get("function") or {}).get("name") == tool]
        if raw:
            att.raw_text = (raw[0].get("function") or {}).get("arguments")
    return parse_reply(message, spec, tool)


def _answer_tool_calls(messages: list[dict[str, Any]], problem: str) -> None:
    """Answer the tool calls of the last assistant message (the protocol wants a tool message
    for each before the next user message)."""
    for call in messages[-1].get("tool_calls") or []:
        messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                         "content": f"not accepted: {problem}"})


async def _play_chat(agent: ChatAgent, item: Item, episode: Episode) -> Attempt:
    att = Attempt(provider=_provider())
    spec = item.answer
    tool = answer_tool_name(item)
    system_parts = [agent.system_prompt or ""]
    task_system = item.meta.get("system_prompt") if isinstance(item.meta, Mapping) else None
    if isinstance(task_system, str) and task_system:
        system_parts.append(task_system)
    system = "\n\n".join(p for p in system_parts if p)

    history: list[Round] = []
    raw_texts: list[str | None] = []
    confidences: list[float] = []
    problems: list[str] = []
    transcript: list[dict[str, Any]] = []

    for r in range(1, episode.rounds + 1):
        part = Attempt(provider=_provider())
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        prompt = f"{item.prompt}\n\n{episode.round_prompt(history)}"
        try:
            prompt = await agent.execute_plan(item, prompt, messages, part)
            how = instructions(spec, agent.mode, tool)
            messages.append({"role": "user", "content": f"{prompt}\n\n{how}"})
            parsed = await _ask(agent, messages, part, spec, tool)
            if parsed.answer is None:
                _answer_tool_calls(messages, parsed.problem or "no answer")
                messages.append({"role": "user",
                                 "content": nudge_message(spec, agent.mode, tool)})
                parsed = await _ask(agent, messages, part, spec, tool)
        except AgentError as exc:
            _merge(att, part)
            transcript.extend({**m, "round": r} for m in messages)
            att.error = f"{exc.kind}: {exc} (round {r})"
            att.transcript = transcript
            att.answer = {"moves": [a for a, _ in history],
                          "tokens": att.tokens_in + att.tokens_out}
            return att
        _merge(att, part)
        transcript.extend({**m, "round": r} for m in messages)
        raw_texts.append(part.raw_text)
        move = parsed.answer if isinstance(parsed.answer, str) else None
        if move is None:
            problems.append(f"round {r}: {parsed.problem or 'no answer'}")
        if parsed.confidence is not None:
            confidences.append(parsed.confidence)
        history.append((move, episode.opponent_move(history)))

    tokens = att.tokens_in + att.tokens_out
    att.transcript = transcript
    att.raw_text = json.dumps(raw_texts, ensure_ascii=False)
    att.parse_problem = "; ".join(problems) or None
    att.confidence = sum(confidences) / len(confidences) if confidences else None
    att.answer = {"moves": [a for a, _ in history], "tokens": tokens,
                  "score": score_episode(episode, history, tokens)}
    return att


def _play_reference(agent: ReferenceAgent, item: Item, episode: Episode) -> Attempt:
    if not families.applies(item, agent.policy):
        return Attempt(
            not_applicable=True,
            transcript=[{"role": "reference", "policy": agent.policy, "not_applicable": True}],
            provider={"policy": agent.policy},
        )
    # the same generator ReferenceAgent.attempt derives, so both paths give the same moves
    digest = int(content_hash([agent.seed, agent.name, item.id])[7:23], 16)
    rng = np.random.default_rng([agent.seed, digest])
    start = time.perf_counter()
    answer = reference_answer(item, agent.policy, rng)
    history = play_moves(episode, answer["moves"])
    answer["score"] = score_episode(episode, history, None)
    return Attempt(
        answer=answer,
        raw_text=json.dumps(answer["moves"]),
        transcript=[{"role": "reference", "policy": agent.policy, "round": t + 1, "move": a,
                     "opponent": b} for t, (a, b) in enumerate(history)],
        turns=0,
        latency_s=time.perf_counter() - start,
        provider={"policy": agent.policy},
    )


async def play_episode(agent: EpisodeAgent, item: Item) -> Attempt:
    """Play the repeated-game episode of ``item`` with ``agent`` and return the attempt.

    A chat agent plays round by round (one fresh chat per round, see the module docstring);
    a reply with no parseable move gets one nudge, after which the round is an invalid move,
    scored as the agent's worst payoff. A reference agent (``oracle`` | ``random``) plays its
    scripted moves without a model; for another policy the attempt is ``not_applicable``. Any
    other agent (a program, a test double) is handed the whole item, as for a single turn.
    """
    if item.family != FAMILY:
        raise InputError(f"not a repeated-game item (family {item.family!r})", where="item")
    if isinstance(agent, ReferenceAgent):
        return _play_reference(agent, item, episode_from_item(item))
    if isinstance(agent, ChatAgent):
        return await _play_chat(agent, item, episode_from_item(item))
    return await agent.attempt(item)
