"""Playing a repeated-game episode (family ``"repeated"``, :mod:`games.repeated`) with an agent.

An episode is many turns, not one question, so it does not go through
:meth:`ChatAgent.attempt`; :func:`play_episode` plays it round by round and returns one
:class:`~harness.agent.agents.Attempt` for the whole episode, which the runner scores and stores like
any other.

Each round is a fresh chat: the agent's and the task's system prompts, then one user message
with the rules (the item's prompt), the rounds played so far with their points
(:meth:`Episode.round_prompt`) and the answer instructions of the agent's answer mode. The
agent answers with one of the action labels through the usual answer protocol
(:func:`harness.agent.answers.parse_reply`: the answer tool, JSON, or a last ``ANSWER:`` line).

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

**Agent seats.** An episode whose opponent is another agent of the run (``agent:control``,
``agent:self``) is played by two chat agents: the one whose trial it is and the one
:class:`Seats` puts in the seat (its control, or itself). Each round both are asked at once,
each in a fresh chat reading the history from its own side (its own move and points first), with
the same nudge rule; an API error on either side ends the episode. The trial is the agent's (its
turns, tokens, latency); the answer holds both seats' moves (``moves``, ``opponent_moves``) and
token counts, the transcript both seats' messages tagged ``seat``, ``provider["opponent"]`` the
other seat's usage. No agent for the seat (no control in the run; the agent is itself a
control; a reference agent other than ``random`` in the self seat): ``not_applicable``, with
the reason in the transcript.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from games.repeated import (
    FAMILY,
    Episode,
    Round,
    SeatEpisode,
    agent_seat,
    episode_from_item,
    play_moves,
    reference_answer,
    score_episode,
    score_seats,
    seat_episode_from_item,
)
from harness.agent import families
from harness.agent.agents import Attempt, ChatAgent, ReferenceAgent, answer_tool_name
from harness.agent.answers import (
    ParsedAnswer,
    answer_tool,
    instructions,
    nudge_message,
    parse_reply,
    response_format,
)
from ledger.store import RunAgent
from mindledger.canonical import content_hash
from mindledger.errors import AgentError, InputError
from mindledger.items import Item

__all__ = ["EpisodeAgent", "Seats", "control_seats", "play_episode"]


class EpisodeAgent(Protocol):
    """Any agent the runner holds; chat and reference agents are played round by round."""

    name: str

    async def attempt(self, item: Item) -> Attempt: ...


@dataclass(frozen=True)
class Seats:
    """Who sits across the table in agent-seat episodes (opponent ``agent:control`` or
    ``agent:self``, :data:`games.repeated.AGENT_OPPONENTS`).

    ``controls`` maps an agent's name to the agent object in its control seat (see
    :func:`control_seats`); the ``self`` seat is the agent itself — the same configuration
    and backend, with its own chats and its own history each round, so nothing but the
    model's weights (and the response cache, where two seats send the very same request)
    is shared between the seats."""

    controls: Mapping[str, EpisodeAgent] = field(default_factory=dict)

    @classmethod
    def of(cls, agents: Sequence[EpisodeAgent], control_of: Mapping[str, str]) -> Seats:
        """The seats of ``agents`` (built agents) from ``control_of`` (agent name → the name of
        its control seat's agent); a control that is not among ``agents`` is left out."""
        by_name = {a.name: a for a in agents}
        return cls({n: by_name[c] for n, c in control_of.items() if c in by_name})

    def opponent(self, agent: EpisodeAgent, seat: str) -> EpisodeAgent | None:
        """The agent in ``agent``'s ``seat``; None when the run has none (no control)."""
        return agent if seat == "self" else self.controls.get(agent.name)


def control_seats(planned: Sequence[RunAgent]) -> dict[str, str]:
    """Who sits in the control seat of each agent of a run: an agent under test faces its own
    control; an ablation variant, the control of its base agent. Controls and reference agents
    have no control seat (the control's moves are recorded in its agent's trials)."""
    controls = {ra.base_agent: ra.name for ra in planned if ra.role == "control" and ra.base_agent}
    out: dict[str, str] = {}
    for ra in planned:
        base = ra.name if ra.role == "agent" else ra.base_agent if ra.role == "ablation" else None
        if base is not None and base in controls:
            out[ra.name] = controls[base]
    return out


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


def _system(agent: ChatAgent, item: Item) -> str:
    system_parts = [agent.system_prompt or ""]
    task_system = item.meta.get("system_prompt") if isinstance(item.meta, Mapping) else None
    if isinstance(task_system, str) and task_system:
        system_parts.append(task_system)
    return "\n\n".join(p for p in system_parts if p)


@dataclass
class _Turn:
    """One seat's round: its model turns, its messages, its parsed move or its API error."""

    part: Attempt
    messages: list[dict[str, Any]]
    parsed: ParsedAnswer | None = None
    error: AgentError | None = None

    @property
    def move(self) -> str | None:
        answer = self.parsed.answer if self.parsed is not None else None
        return answer if isinstance(answer, str) else None


async def _chat_round(agent: ChatAgent, item: Item, system: str, prompt: str) -> _Turn:
    """Ask ``agent`` for one round's move (one fresh chat; one nudge when the reply has none)."""
    spec = item.answer
    tool = answer_tool_name(item)
    turn = _Turn(Attempt(provider=_provider()),
                 [{"role": "system", "content": system}] if system else [])
    try:
        prompt = await agent.execute_plan(item, prompt, turn.messages, turn.part)
        how = instructions(spec, agent.mode, tool)
        turn.messages.append({"role": "user", "content": f"{prompt}\n\n{how}"})
        parsed = await _ask(agent, turn.messages, turn.part, spec, tool)
        if parsed.answer is None:
            _answer_tool_calls(turn.messages, parsed.problem or "no answer")
            nudge = nudge_message(spec, agent.mode, tool, parsed.problem)
            turn.messages.append({"role": "user", "content": nudge})
            parsed = await _ask(agent, turn.messages, turn.part, spec, tool)
        turn.parsed = parsed
    except AgentError as exc:
        turn.error = exc
    return turn


async def _play_chat(agent: ChatAgent, item: Item, episode: Episode) -> Attempt:
    att = Attempt(provider=_provider())
    system = _system(agent, item)
    history: list[Round] = []
    raw_texts: list[str | None] = []
    confidences: list[float] = []
    problems: list[str] = []
    transcript: list[dict[str, Any]] = []

    for r in range(1, episode.rounds + 1):
        turn = await _chat_round(agent, item, system,
                                 f"{item.prompt}\n\n{episode.round_prompt(history)}")
        _merge(att, turn.part)
        transcript.extend({**m, "round": r} for m in turn.messages)
        if turn.error is not None:
            att.error = f"{turn.error.kind}: {turn.error} (round {r})"
            att.transcript = transcript
            att.answer = {"moves": [a for a, _ in history],
                          "tokens": att.tokens_in + att.tokens_out}
            return att
        raw_texts.append(turn.part.raw_text)
        move = turn.move
        if move is None:
            problems.append(f"round {r}: {(turn.parsed and turn.parsed.problem) or 'no answer'}")
        if turn.parsed is not None and turn.parsed.confidence is not None:
            confidences.append(turn.parsed.confidence)
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


def _not_applicable(agent: EpisodeAgent, why: str) -> Attempt:
    return Attempt(not_applicable=True,
                   transcript=[{"role": "harness", "agent": agent.name, "not_applicable": True,
                                "reason": why}])


async def _play_seats(agent: ChatAgent, opponent: ChatAgent, item: Item,
                      episode: SeatEpisode) -> Attempt:
    """Both seats play round by round, each choosing at the same time from its own side of
    the history; the trial is ``agent``'s: its turns, tokens and latency, with the opponent
    seat's usage under ``provider["opponent"]`` and both seats' messages in the transcript
    (tagged ``seat``)."""
    att = Attempt(provider=_provider())
    opp = Attempt(provider=_provider())
    systems = (_system(agent, item), _system(opponent, item))
    mine: list[str | None] = []
    theirs: list[str | None] = []
    raw_texts: list[str | None] = []
    confidences: list[float] = []
    problems: list[str] = []
    transcript: list[dict[str, Any]] = []
    error: str | None = None
    for r in range(1, episode.rounds + 1):
        a, b = await asyncio.gather(
            _chat_round(agent, item, systems[0],
                        f"{item.prompt}\n\n{episode.round_prompt(mine, theirs)}"),
            _chat_round(opponent, item, systems[1],
                        f"{item.prompt}\n\n{episode.round_prompt(theirs, mine)}"),
        )
        _merge(att, a.part)
        _merge(opp, b.part)
        transcript.extend({**m, "round": r, "seat": "agent"} for m in a.messages)
        transcript.extend({**m, "round": r, "seat": "opponent", "agent": opponent.name}
                          for m in b.messages)
        if a.error is not None or b.error is not None:
            exc, whose = (a.error, "") if a.error is not None else (b.error, ", opponent seat")
            assert exc is not None
            error = f"{exc.kind}: {exc} (round {r}{whose})"
            break
        raw_texts.append(a.part.raw_text)
        if a.move is None:
            problems.append(f"round {r}: {(a.parsed and a.parsed.problem) or 'no answer'}")
        if a.parsed is not None and a.parsed.confidence is not None:
            confidences.append(a.parsed.confidence)
        mine.append(a.move)
        theirs.append(b.move)
    tokens = att.tokens_in + att.tokens_out
    opp_tokens = opp.tokens_in + opp.tokens_out
    att.transcript = transcript
    att.provider["opponent"] = {
        "agent": opponent.name, "seat": episode.seat, "turns": opp.turns,
        "tokens_in": opp.tokens_in, "tokens_out": opp.tokens_out,
        "latency_s": round(opp.latency_s, 6), "models": opp.provider["models"],
    }
    att.answer = {"moves": mine, "opponent_moves": theirs, "tokens": tokens,
                  "opponent_tokens": opp_tokens, "opponent_agent": opponent.name}
    if error is not None:
        att.error = error
        return att
    att.raw_text = json.dumps(raw_texts, ensure_ascii=False)
    att.parse_problem = "; ".join(problems) or None
    att.confidence = sum(confidences) / len(confidences) if confidences else None
    att.answer["score"] = score_seats(episode, mine, theirs, tokens, opp_tokens)
    return att


def _play_reference_seats(agent: ReferenceAgent, item: Item, episode: SeatEpisode) -> Attempt:
    """A reference agent against a second instance of itself (``random`` only: the others
    best-respond to a script, and an agent-seat episode has none)."""
    if episode.seat != "self":
        return _not_applicable(agent, "a reference agent has no control to sit in its "
                                      "control seat")
    if agent.policy != "random":
        return _not_applicable(agent, f"reference policy {agent.policy!r} best-responds to a "
                                      "scripted opponent; an agent-seat episode has none")
    digest = int(content_hash([agent.seed, agent.name, item.id])[7:23], 16)
    answer = reference_answer(item, agent.policy, np.random.default_rng([agent.seed, digest]))
    answer["score"] = score_seats(episode, answer["moves"], answer["opponent_moves"])
    return Attempt(
        answer=answer,
        raw_text=json.dumps(answer["moves"]),
        transcript=[{"role": "reference", "policy": agent.policy, "round": t + 1, "move": a,
                     "opponent": b}
                    for t, (a, b) in enumerate(zip(answer["moves"], answer["opponent_moves"],
                                                   strict=True))],
        provider={"policy": agent.policy, "opponent": {"agent": agent.name, "seat": "self"}},
    )


async def play_episode(agent: EpisodeAgent, item: Item, seats: Seats | None = None) -> Attempt:
    """Play the repeated-game episode of ``item`` with ``agent`` and return the attempt.

    A chat agent plays round by round (one fresh chat per round, see the module docstring);
    a reply with no parseable move gets one nudge, after which the round is an invalid move,
    scored as the agent's worst payoff. A reference agent (``oracle`` | ``random``) plays its
    scripted moves without a model; for another policy the attempt is ``not_applicable``. Any
    other agent (a program, a test double) is handed the whole item, as for a single turn.

    An agent-seat item (opponent ``agent:control`` | ``agent:self``) is played against the
    agent ``seats`` puts in that seat (see :class:`Seats`); with no agent for the seat (no
    control in the run, or ``agent`` is itself a control) the attempt is ``not_applicable``
    and its transcript says why.
    """
    if item.family != FAMILY:
        raise InputError(f"not a repeated-game item (family {item.family!r})", where="item")
    seat = agent_seat(item)
    if seat is not None:
        return await _play_seat_item(agent, item, seat, seats or Seats())
    if isinstance(agent, ReferenceAgent):
        return _play_reference(agent, item, episode_from_item(item))
    if isinstance(agent, ChatAgent):
        return await _play_chat(agent, item, episode_from_item(item))
    return await agent.attempt(item)


async def _play_seat_item(agent: EpisodeAgent, item: Item, seat: str, seats: Seats) -> Attempt:
    episode = seat_episode_from_item(item)
    if isinstance(agent, ReferenceAgent):
        return _play_reference_seats(agent, item, episode)
    if not isinstance(agent, ChatAgent):
        return await agent.attempt(item)
    opponent = seats.opponent(agent, seat)
    if opponent is None:
        return _not_applicable(agent, f"no agent sits in {agent.name}'s control seat (a control "
                                      "plays in its agent's trials; a run without controls has "
                                      "none)")
    if not isinstance(opponent, ChatAgent):
        return _not_applicable(agent, f"{opponent.name} does not play round by round")
    return await _play_seats(agent, opponent, item, episode)
