"""Agents: what turns an :class:`~mindledger.items.Item` into an attempt.

Two kinds:

- :class:`ChatAgent` talks to a chat backend (an OpenAI-compatible endpoint, the embedded model,
  or a ``command`` program) through the answer protocol of :mod:`harness.agent.answers`, with the
  reference scaffold's modules (:mod:`harness.agent.scaffold`) switched on or off;
- :class:`ReferenceAgent` is a scripted reasoner (``oracle``, ``random``, ``depth-capped:N``,
  ``reality-leak``, ``not-reality``, ``level:K``) whose answers come from the item's family.

An attempt never raises for an agent's failure: API errors come back as ``error`` (recorded,
excluded from accuracy, counted) and unparseable replies as ``answer=None`` (scored incorrect).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from harness.agent import families
from harness.agent.agent_types import Attempt
from harness.agent.answers import (
    ANSWER_TOOL,
    ParsedAnswer,
    answer_tool,
    instructions,
    nudge_message,
    parse_reply,
    response_format,
)
from harness.agent.command_protocol import read_reply
from harness.agent.frozen_json import FrozenDict, FrozenList, freeze
from harness.agent.scaffold import Scaffold, WitnessLog
from mindledger.canonical import canonical_json, content_hash
from mindledger.errors import AgentError
from mindledger.items import Item
from mindledger.secrets import scrub

__all__ = [
    "MAX_TURNS",
    "Attempt",
    "ChatAgent",
    "ChatBackend",
    "ChatReply",
    "CommandBackend",
    "ReferenceAgent",
]

MAX_TURNS = 10
"""Turn cap per trial (answer turns, tool round trips, scaffold steps and the nudge)."""

CONTROL_SYSTEM_PROMPT = "Answer the question."


@dataclass(frozen=True)
class ChatReply:
    """One assistant turn as a backend returns it."""

    message: dict[str, Any]
    finish_reason: str | None = None
    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False


class ChatBackend(Protocol):
    """Anything that answers a chat request with one assistant message."""

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply: ...

    async def aclose(self) -> None: ...


def answer_tool_name(item: Item) -> str:
    """The answer tool an item asks for: its own (``meta["answer_tool"]``) or submit_answer."""
    meta = item.meta
    name = meta.get("answer_tool") if type(meta) is dict or isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and name else ANSWER_TOOL


@dataclass(frozen=True)
class _AnswerPieces:
    """What the answer protocol adds to the requests of one answer spec, mode and answer tool:
    built once per distinct spec, frozen so that requests share them (and an encoder may keep
    their encoded form; see :mod:`harness.agent.frozen_json`)."""

    tool: FrozenDict | None
    """The answer tool (tools mode)."""
    tools: FrozenList | None
    """The request's tools when the item brings none of its own (tools mode)."""
    fmt: FrozenDict | None
    """The ``response_format`` (json mode)."""
    how: str
    """How to answer, appended to the answer turn's prompt."""


_PIECES: dict[tuple[Any, ...], _AnswerPieces] = {}
_PIECES_MAX = 4096


_PLAIN = frozenset((str, int, bool, type(None)))
"""Value types whose equality, with the type, means sameness (no float's sign, no contents)."""


def _spec_key(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """A hashable key equal only for answer specs that build the same pieces: scalars with
    their types (``50`` and ``50.0`` stay apart) and a float's sign (``0.0`` and ``-0.0``
    too), lists of scalars as tuples; hashing it raises TypeError for anything deeper."""
    types = tuple(map(type, spec.values()))
    if _PLAIN.issuperset(types):  # the usual spec (kind, min, max): its items and their types
        return ("plain", tuple(spec.items()), types)  # never equal to a key built below
    return tuple(
        (k, tuple(map(_typed, v)) if isinstance(v, list | tuple) else _typed(v))
        for k, v in spec.items()
    )


def _typed(value: Any) -> tuple[Any, ...]:
    if isinstance(value, float):
        return value, type(value), math.copysign(1.0, value)
    return value, type(value)


def _answer_pieces(spec: Mapping[str, Any], mode: str, tool: str) -> _AnswerPieces:
    """The answer protocol's pieces for ``spec`` (pure; cached by the spec's content)."""
    try:
        key: tuple[Any, ...] | None = (mode, tool, _spec_key(spec))
        hit = _PIECES.get(key)  # type: ignore[arg-type]
    except TypeError:  # a spec that cannot be hashed: build its pieces afresh
        key = hit = None
    if hit is not None:
        return hit
    answer = freeze(answer_tool(spec, tool)) if mode == "tools" else None
    pieces = _AnswerPieces(
        tool=answer,
        tools=FrozenList([answer]) if answer is not None else None,
        fmt=freeze(response_format(spec)) if mode == "json" else None,
        how=instructions(spec, mode, tool),
    )
    if key is not None:
        if len(_PIECES) >= _PIECES_MAX:
            _PIECES.clear()
        _PIECES[key] = pieces
    return pieces


class ReferenceAgent:
    """A scripted reasoner. Its random choices come from a generator seeded by the run seed and
    the item id, so a resumed run gives the same answers."""

    def __init__(self, name: str, policy: str, *, seed: int = 0):
        families.check_policy(policy)
        self.name = name
        self.policy = policy
        self.seed = seed

    @property
    def spec(self) -> dict[str, Any]:
        return {"adapter": "reference", "policy": self.policy}

    async def attempt(self, item: Item) -> Attempt:
        digest = int(content_hash([self.seed, self.name, item.id])[7:23], 16)
        rng = np.random.default_rng([self.seed, digest])
        if not families.applies(item, self.policy):
            return Attempt(
                not_applicable=True,
                transcript=[{"role": "reference", "policy": self.policy, "not_applicable": True}],
                provider={"policy": self.policy},
            )
        start = time.perf_counter()
        answer = families.reference_answer(item, self.policy, rng)
        return Attempt(
            answer=answer,
            raw_text=json.dumps(answer) if not isinstance(answer, str) else answer,
            transcript=[{"role": "reference", "policy": self.policy, "answer": answer}],
            turns=0,
            latency_s=time.perf_counter() - start,
            provider={"policy": self.policy},
        )

    async def aclose(self) -> None:
        return None


class ChatAgent:
    """An LLM agent behind a chat backend, with the answer protocol and scaffold modules: before
    the answer turn it executes the steps the scaffold plans for the item (:meth:`execute_plan`).
    ``spec`` is what it shows of its configuration (no secrets)."""

    def __init__(
        self,
        name: str,
        backend: ChatBackend,
        *,
        spec: Mapping[str, Any] | None = None,
        system_prompt: str | None = None,
        modules: Sequence[str] = (),
        answer_mode: str = "tools",
        temperature: float = 0.0,
        max_tokens: int = 512,
    ):
        if answer_mode not in ("tools", "json", "text"):
            raise ValueError(f"answer_mode must be tools, json or text, not {answer_mode!r}")
        self.name = name
        self.backend = backend
        self.spec = dict(spec or {})
        self.system_prompt = system_prompt
        self.scaffold = Scaffold(tuple(modules))
        self.mode = answer_mode
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def aclose(self) -> None:
        await self.backend.aclose()

    async def attempt(self, item: Item) -> Attempt:
        att = Attempt(provider={"models": [], "finish_reasons": [], "attempts": 0, "cached": 0})
        messages: list[dict[str, Any]] = []
        system = [self.system_prompt or ""]
        meta = item.meta
        task_system = (
            meta.get("system_prompt") if type(meta) is dict or isinstance(meta, Mapping) else None
        )
        if isinstance(task_system, str) and task_system:
            system.append(task_system)  # the task's own instructions (e.g. the paper's prompts)
        if any(system):
            messages.append({"role": "system", "content": "\n\n".join(p for p in system if p)})
        use_item_tools = self.mode == "tools" and bool(item.tools)
        prompt = item.prompt
        if item.tools and not use_item_tools:
            # No tool calls in this answer mode: give the tool's content in the prompt instead.
            extra = "\n\n".join(f"[{name}]\n{text}" for name, text in item.tool_results.items())
            prompt = f"{prompt}\n\n{extra}" if extra else prompt
        try:
            prompt = await self.execute_plan(item, prompt, messages, att)
            tool = answer_tool_name(item)
            pieces = _answer_pieces(item.answer, self.mode, tool)
            messages.append({"role": "user", "content": f"{prompt}\n\n{pieces.how}"})
            tools: list[dict[str, Any]] | None = pieces.tools
            if use_item_tools and pieces.tool is not None:
                tools = [pieces.tool, *(dict(t) for t in item.tools)]
            parsed = await self._answer_loop(item, messages, att, tool, tools, pieces.fmt)
            if parsed.answer is None and att.turns < MAX_TURNS:
                # One nudge that says what was wrong; the calls it answers get a tool message
                # first (a chat API refuses tool calls left unanswered).
                _answer_calls(item, messages, tool, tools, f"not accepted: {parsed.problem}")
                nudge = nudge_message(item.answer, self.mode, tool, parsed.problem)
                messages.append({"role": "user", "content": nudge})
                first = parsed.problem
                parsed = await self._answer_loop(item, messages, att, tool, tools, pieces.fmt)
                if parsed.problem and first and parsed.problem != first:
                    parsed = replace(parsed, problem=f"{parsed.problem}; before the nudge: {first}")
        except AgentError as exc:
            att.error = scrub(f"{exc.kind}: {exc}")
            att.transcript = messages
            return att
        att.answer = parsed.answer
        att.confidence = parsed.confidence
        att.parse_problem = parsed.problem
        att.transcript = messages
        return att

    async def execute_plan(
        self, item: Item, prompt: str, messages: list[dict[str, Any]], att: Attempt
    ) -> str:
        """Take the scaffold's steps for ``item`` before the answer turn (model turns are
        appended to ``messages`` and recorded on ``att``); return the answer turn's prompt."""
        for step in self.scaffold.plan(item):
            if isinstance(step, WitnessLog):
                prompt = f"{prompt}\n\n{step.text}"
            else:
                messages.append({"role": "user", "content": f"{prompt}\n\n{step.instruction}"})
                # a step is capped like any turn of the agent's (the embedded model's are short)
                await self.turn(messages, att, max_tokens=min(step.max_tokens, self.max_tokens))
                prompt = step.then
        return prompt

    async def turn(
        self,
        messages: list[dict[str, Any]],
        att: Attempt,
        *,
        tools: list[dict[str, Any]] | None = None,
        fmt: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """One model turn: send, record usage, append the reply to ``messages``."""
        if att.turns >= MAX_TURNS:
            raise AgentError(f"turn cap of {MAX_TURNS} reached", kind="turn_cap")
        reply = await self.backend.chat(
            messages,
            tools=tools,
            response_format=fmt,
            temperature=self.temperature,
            max_tokens=max_tokens or self.max_tokens,
        )
        att.turns += 1
        att.tokens_in += reply.tokens_in
        att.tokens_out += reply.tokens_out
        att.latency_s += reply.latency_s
        provider = att.provider
        provider["models"].append(reply.model)
        provider["finish_reasons"].append(reply.finish_reason)
        provider["attempts"] += reply.attempts
        provider["cached"] += int(reply.cached)
        provider.setdefault("turns", []).append(
            {
                "model": reply.model,
                "finish_reason": reply.finish_reason,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "latency_s": round(reply.latency_s, 6),
                "attempts": reply.attempts,
                "cached": reply.cached,
            }
        )
        message = {k: v for k, v in reply.message.items() if v is not None}
        message.setdefault("role", "assistant")
        messages.append(message)
        content = message.get("content")
        if isinstance(content, str):
            att.raw_text = content
        return message

    async def _answer_loop(
        self,
        item: Item,
        messages: list[dict[str, Any]],
        att: Attempt,
        tool: str,
        tools: list[dict[str, Any]] | None,
        fmt: dict[str, Any] | None,
    ) -> ParsedAnswer:
        while True:
            message = await self.turn(messages, att, tools=tools, fmt=fmt)
            calls = message.get("tool_calls") or []
            raw: list[dict[str, Any]] = []  # the calls of the answer tool
            other: list[dict[str, Any]] = []  # the rest
            for c in calls:
                (raw if (c.get("function") or {}).get("name") == tool else other).append(c)
            if calls and not raw:
                # Only non-answer tool calls (e.g. query_opponent_history): answer them, go on.
                _answer_calls(item, messages, tool, tools, "")
                if att.turns >= MAX_TURNS:
                    cap = f"the turn cap of {MAX_TURNS} was reached before {tool} was called"
                    return ParsedAnswer(None, None, None, cap)
                continue
            if calls:
                att.raw_text = (raw[0].get("function") or {}).get("arguments")
            return parse_reply(message, item.answer, tool)


def _answer_calls(
    item: Item,
    messages: list[dict[str, Any]],
    tool: str,
    tools: Sequence[Mapping[str, Any]] | None,
    refusal: str,
) -> None:
    """Answer every tool call of the last message with a tool message: an item tool with its
    result, the answer tool ``tool`` with ``refusal`` (why its answer was not accepted), any
    other name with the tools there are."""
    last = messages[-1]
    if last.get("role") != "assistant":
        return
    for call in last.get("tool_calls") or ():
        name = (call.get("function") or {}).get("name", "")
        if name == tool:
            content = refusal
        elif name in item.tool_results:
            content = item.tool_results[name]
        else:
            offered = [(t.get("function") or {}).get("name") for t in tools or ()]
            there = ", ".join(str(n) for n in offered) if offered else "none on this turn"
            content = f"unknown tool {name!r}; the tools are: {there}"
        messages.append({"role": "tool", "tool_call_id": call.get("id") or "", "content": content})


class CommandBackend:
    """The ``command`` adapter: runs a program per turn, the chat request as JSON on stdin, and
    reads a JSON reply on stdout: either ``{"message": {...}}``, an OpenAI chat completion
    (``{"choices": [{"message": {...}}]}``), or ``{"content": "..."}``. The protocol, both
    schemas and what each failure becomes are in :mod:`harness.agent.command_protocol` and
    ``docs/command-agent.md``. At most ``concurrency`` runs of the program are under way at
    once; each has ``timeout`` seconds and is killed after it."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout: float = 120.0,
        concurrency: int = 4,
        env: Mapping[str, str] | None = None,
    ):
        self.command = list(command)
        self.timeout = timeout
        self.concurrency = concurrency
        self.env = dict(env) if env else None
        """Variables set over the harness's environment for the program (None: it inherits)."""
        self._sem = asyncio.Semaphore(concurrency)

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> ChatReply:
        request = {
            "messages": messages,
            "tools": tools,
            "response_format": response_format,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        program = self.command[0]
        async with self._sem:
            start = time.perf_counter()
            try:
                proc = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env={**os.environ, **self.env} if self.env else None,
                    start_new_session=True,  # its own process group: stopped whole below
                )
            except OSError as exc:
                raise AgentError(
                    f"cannot start {program}: {exc.strerror or exc}", kind="connection"
                ) from None
            try:
                out, err = await asyncio.wait_for(
                    proc.communicate(canonical_json(request)), self.timeout
                )
            except TimeoutError:
                _kill_group(proc)
                await proc.wait()
                raise AgentError(
                    f"{program} did not reply within {self.timeout:g} s and was stopped",
                    kind="timeout",
                ) from None
            except asyncio.CancelledError:  # the run stops: so does the program
                _kill_group(proc)
                raise
            latency = time.perf_counter() - start
        if proc.returncode != 0:
            raise AgentError(_exit_message(program, proc.returncode, err), kind="server_error")
        reply = read_reply(out, program)
        return ChatReply(
            message=reply.message,
            finish_reason=reply.finish_reason,
            model=reply.model,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=latency,
        )

    async def aclose(self) -> None:
        return None


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL a timed-out program and every process it started (its process group: a
    program that is a script runs the real client as a child, which killing the script alone
    left running, orphaned, holding the reply pipe)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # gone already
    except PermissionError:
        proc.kill()


def _exit_message(program: str, code: int | None, stderr: bytes) -> str:
    """Why a run of ``program`` failed: its exit code (or signal) and its last stderr line."""
    lines = stderr.decode(errors="replace").strip().splitlines()
    said = f"; its last line on stderr: {lines[-1].strip()}" if lines else "; stderr was empty"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{program} was killed by {name}{said}"
    return f"{program} exited with code {code}{said}"
