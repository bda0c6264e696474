"""The judge stage: the extraction judge of the games paper (seed 000 Appendix D) reads the
chain of thought of each level-k game trial, and the trial is re-scored with what it read.

For every stored game trial whose transcript carries reasoning text (:func:`chain_of_thought`)
and that this judge has not judged yet, the judge agent (any declared agent; ``local``, the
embedded model, by default: the ``judge_agent`` setting or ``--judge``) is sent
:func:`games.judge_messages`; its reply is read by :func:`games.parse_judge_reply` and
:func:`games.read_extraction` with quotes required (a value whose quote does not occur
verbatim in the chain of thought is dropped and counted); the trial's answer is re-scored by
its family's scorer with the reading's belief, chain and mentalizing flag
(:meth:`games.JudgeReading.answer`); and the judgement is stored
(:meth:`ledger.store.Store.record_judgement`; the trial is never changed). The profile uses a
judgement's figures where the agent's answer stated no belief, chain or flag of its own.

Judge calls go through the response cache whatever the ``cache`` setting (a judgement is an
annotation, not a sample): the same judge spec and the same messages are answered once. A
malformed reply is stored as a ``parse_error`` judgement and counted, never raised; an API
error is counted and leaves the trial unjudged, so that the next pass tries it again.

Resumable: a pass judges only trials without a judgement by that judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from games import judge_messages, parse_judge_reply, read_extraction
from harness.adapters.cache import CachedBackend
from harness.adapters.kinds import BuildContext
from harness.adapters.registry import adapter_kind
from harness.agent import families
from harness.agent.agents import ChatAgent, ChatBackend
from harness.config.settings import AgentConfig, Settings
from harness.model.local_model import ModelEndpoint
from harness.run.build import BUILTIN_AGENTS, AgentSpec
from harness.run.execution import LocalModelSource, model_per_batch
from ledger.retention import pruned_transcript
from ledger.store import JudgementRecord, Store
from mindledger.canonical import canonical_json, content_hash
from mindledger.errors import AgentError, ConfigError, InputError
from mindledger.items import Item

__all__ = [
    "JUDGE_MAX_TOKENS",
    "JudgeCounts",
    "JudgePlan",
    "JudgeProgress",
    "OpenJudge",
    "chain_of_thought",
    "judge_config",
    "judge_run",
    "judge_stored_run",
    "judgeable",
    "opened_judge",
    "plan_judging",
    "read_judgement",
]

JUDGE_MAX_TOKENS = 1024
"""Token cap of a built-in judge's reply (``local``, whose own cap is for short answers; an
extraction with quotes is a few hundred tokens). A declared judge uses its ``max_tokens``."""

_REASONING_KEYS = ("reasoning_content", "reasoning")
"""Assistant-message fields where endpoints return a separate reasoning trace."""


def judgeable(item: Item) -> bool:
    """Whether the judge reads trials of ``item``: a level-k game trial (recursive or
    inductive condition), whose schema the judge fills in."""
    from games import EXTRACTION_SCHEMAS, GENERATOR

    return (
        item.family == "games"
        and item.generator == GENERATOR
        and str(item.meta.get("condition", "recursive")) in EXTRACTION_SCHEMAS
    )


def chain_of_thought(transcript: Sequence[Mapping[str, Any]]) -> str:
    """The reasoning text of a trial: every assistant turn's reasoning trace and text content,
    in order, blank-line separated. A turn's content that is only a JSON object (an answer in
    JSON mode) is not reasoning and is left out; "" when nothing is left."""
    parts: list[str] = []
    for message in transcript:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for key in _REASONING_KEYS:
            trace = message.get(key)
            if isinstance(trace, str) and trace.strip():
                parts.append(trace.strip())
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, Mapping)
            )
        if isinstance(content, str) and content.strip() and not _json_object(content):
            parts.append(content.strip())
    return "\n\n".join(parts)


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def read_judgement(item: Item, answer: Any, cot: str, reply: str) -> dict[str, Any]:
    """What a judge's ``reply`` about a trial comes to (pure): the fields of a
    :class:`~ledger.store.JudgementRecord` besides who judged and the call's cost.

    A reply with no JSON object (or one that canonical JSON cannot hold: NaN, infinities)
    gives ``status="parse_error"`` and nothing else; otherwise the extraction, the reading with
    quotes required (:func:`games.read_extraction`), the trial re-scored by its family's scorer
    with it, and the grounding counts."""
    try:
        extraction = parse_judge_reply(reply)
        canonical_json(extraction)
    except (InputError, ValueError, TypeError):
        return {"status": "parse_error"}
    reading = read_extraction(extraction, cot, require_grounding=True)
    score = families.score(item, reading.answer(answer)).to_dict()
    grounded = sum(1 for ok in reading.grounding.values() if ok)
    return {
        "status": "ok",
        "extraction": extraction,
        "reading": {
            "stated_belief": reading.stated_belief,
            "chain": list(reading.chain),
            "mentalizing": reading.mentalizing,
            "grounding": dict(reading.grounding),
            "dropped": list(reading.dropped),
        },
        "score": score,
        "grounded": grounded,
        "ungrounded": reading.ungrounded,
        "dropped": len(reading.dropped),
    }


def judge_config(settings: Settings, name: str | None = None) -> AgentConfig:
    """The judge agent ``name`` (default: the ``judge_agent`` setting): a declared agent or a
    built-in one; ConfigError naming the known ones otherwise."""
    name = name or settings.judge_agent
    if name in settings.agents:
        return settings.agents[name]
    if name in BUILTIN_AGENTS:
        return BUILTIN_AGENTS[name]
    known = ", ".join(sorted({*settings.agents, *BUILTIN_AGENTS}))
    raise ConfigError(f"no agent named {name!r} to judge with (known: {known})",
                      key="judge_agent")


@dataclass
class JudgeCounts:
    """What one judge pass did."""

    judge: str
    eligible: int = 0
    """Game trials with reasoning text."""
    already: int = 0
    """Of those, judged by this judge before the pass."""
    judged: int = 0
    """Judgements stored by the pass (parse failures included)."""
    calls: int = 0
    """Judge requests that reached the model."""
    cache_hits: int = 0
    """Judge requests answered from the response cache."""
    parse_failures: int = 0
    api_errors: int = 0
    """Judge requests that failed (the trial stays unjudged)."""
    ungrounded: int = 0
    """Quoted values whose quote is not in the chain of thought."""
    dropped: int = 0
    """Of those, values left out of the metrics (the others are not used by them)."""
    no_reasoning: int = 0
    """Game trials without reasoning text (not judged)."""
    pruned: int = 0
    """Game trials whose transcript was pruned (:mod:`ledger.retention`; not judged)."""
    errors: list[str] = field(default_factory=list)
    """The first few API errors, for the operator."""


class JudgeProgress(Protocol):
    """Receives a judge pass's progress: the total at the start, then one call per trial."""

    def start(self, total: int, done: int) -> None: ...

    def advance(self) -> None: ...

    def stop(self) -> None: ...


class _NoProgress:
    def start(self, total: int, done: int) -> None:
        return None

    def advance(self) -> None:
        return None

    def stop(self) -> None:
        return None


@dataclass(frozen=True)
class OpenJudge:
    """A judge ready to be asked: its name, the hash of its spec, and its cached backend."""

    name: str
    spec_hash: str
    backend: ChatBackend
    max_tokens: int
    concurrency: int
    response_format: dict[str, Any] | None = None


@contextlib.asynccontextmanager
async def opened_judge(
    settings: Settings,
    store: Store,
    name: str | None = None,
    *,
    local_model: LocalModelSource | None = None,
) -> AsyncIterator[OpenJudge]:
    """Build the judge agent ``name`` (default: the ``judge_agent`` setting) behind the
    response cache in ``store``; start the embedded model for it if it needs it (from
    ``local_model``, default: started here and stopped on exit)."""
    config = judge_config(settings, name)
    kind = adapter_kind(config.adapter, agent=config.name)
    spec = AgentSpec.of(config).to_json()
    spec_hash = content_hash({"judge": config.name, "spec": spec})
    async with contextlib.AsyncExitStack() as stack:
        base_url: ModelEndpoint | None = None
        if kind.needs_local_model:
            source = local_model or model_per_batch(settings)
            sync = contextlib.ExitStack()
            stack.push_async_callback(asyncio.to_thread, sync.close)
            base_url = await asyncio.to_thread(lambda: sync.enter_context(source()))
        agent = kind.build(config, BuildContext(settings, seed=0, local_base_url=base_url))
        stack.push_async_callback(agent.aclose)
        if not isinstance(agent, ChatAgent):
            raise ConfigError(
                f"agent {config.name!r} cannot judge: a judge must be a chat agent "
                "(openai, local or command), not a scripted reference",
                key="judge_agent",
            )
        yield OpenJudge(
            name=config.name,
            spec_hash=spec_hash,
            backend=CachedBackend(agent.backend, store, endpoint=f"judge:{spec_hash}",
                                  model=config.model),
            max_tokens=(
                config.max_tokens if config.name in settings.agents else JUDGE_MAX_TOKENS
            ),
            concurrency=kind.concurrency(config, settings),
            # llama.cpp constrains the reply to JSON with this (the embedded model needs it)
            response_format={"type": "json_object"} if kind.needs_local_model else None,
        )


@dataclass
class JudgePlan:
    """What a judge pass has to do: the counts so far and the trials to judge."""

    counts: JudgeCounts
    todo: list[tuple[str, Item, Any, str]]
    """(agent, item, the trial's answer, its chain of thought) per trial to judge."""


def plan_judging(store: Store, run_id: str, judge: str) -> JudgePlan:
    """The game trials of ``run_id`` with reasoning text and no judgement by ``judge``
    (blocking: it reads the run's trials)."""
    counts = JudgeCounts(judge)
    stored = store.run_items(run_id)
    game_ids = [i for i, fam in zip(stored.ids, stored.families, strict=True) if fam == "games"]
    if not game_ids:
        return JudgePlan(counts, [])
    items = {it.id: it for it in store.items_by_id(game_ids)}
    done = store.judged_pairs(run_id, judge)
    todo: list[tuple[str, Item, Any, str]] = []
    for t in store.trials(run_id):
        item = items.get(t.item_id)
        if item is None or t.status != "ok" or not judgeable(item):
            continue
        transcript = json.loads(t.transcript_json)
        if pruned_transcript(transcript):
            counts.pruned += 1
            continue
        cot = chain_of_thought(transcript)
        if not cot:
            counts.no_reasoning += 1
            continue
        counts.eligible += 1
        if (t.agent, t.item_id) in done:
            counts.already += 1
            continue
        answer = None if t.answer_json is None else json.loads(t.answer_json)
        todo.append((t.agent, item, answer, cot))
    return JudgePlan(counts, todo)


async def judge_run(
    store: Store,
    judge: OpenJudge,
    run_id: str,
    *,
    progress: JudgeProgress | None = None,
    plan: JudgePlan | None = None,
) -> JudgeCounts:
    """Judge every game trial of ``run_id`` that has reasoning text and no judgement by
    ``judge`` (or those of ``plan``); store each judgement as it completes. Safe to call
    again: what is judged is skipped (see the module docstring)."""
    progress = progress or _NoProgress()
    if plan is None:
        plan = await asyncio.to_thread(plan_judging, store, run_id, judge.name)
    counts = plan.counts
    progress.start(counts.eligible, counts.already)
    gate = asyncio.Semaphore(max(1, judge.concurrency))

    async def one(agent: str, item: Item, answer: Any, cot: str) -> None:
        async with gate:
            try:
                reply = await judge.backend.chat(
                    judge_messages(item, cot),
                    response_format=judge.response_format,
                    temperature=0.0,
                    max_tokens=judge.max_tokens,
                )
            except AgentError as exc:
                counts.api_errors += 1
                if len(counts.errors) < 3:
                    counts.errors.append(f"{agent} on {item.id}: {exc}")
                progress.advance()
                return
        if reply.cached:
            counts.cache_hits += 1
        else:
            counts.calls += 1
        text = _reply_text(reply.message)
        fields = read_judgement(item, answer, cot, text)
        if fields["status"] == "parse_error":
            counts.parse_failures += 1
        counts.ungrounded += int(fields.get("ungrounded", 0))
        counts.dropped += int(fields.get("dropped", 0))
        rec = JudgementRecord(
            run_id=run_id, agent=agent, item_id=item.id, judge=judge.name,
            judge_hash=judge.spec_hash, cached=reply.cached, reply_text=text,
            tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
            latency_s=round(reply.latency_s, 6), **fields,
        )  # fmt: skip
        if await asyncio.to_thread(store.record_judgement, rec):
            counts.judged += 1
        progress.advance()

    try:
        await asyncio.gather(*(one(*job) for job in plan.todo))
    finally:
        progress.stop()
    return counts


def _reply_text(message: Mapping[str, Any]) -> str:
    """The text of a judge's reply (its content; the arguments of a tool call if it made one
    instead)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    if isinstance(content, str) and content.strip():
        return content
    for call in message.get("tool_calls") or []:
        args = (call.get("function") or {}).get("arguments") if isinstance(call, Mapping) else None
        if isinstance(args, str):
            return args
    return ""


async def judge_stored_run(
    store: Store,
    settings: Settings,
    run_id: str,
    *,
    judge: str | None = None,
    progress: JudgeProgress | None = None,
    local_model: LocalModelSource | None = None,
) -> JudgeCounts:
    """Judge a stored run with the judge ``judge`` (default: the ``judge_agent`` setting):
    the judge (and the embedded model, if it needs it) is started only when some trial needs
    judging (:func:`plan_judging`), then :func:`judge_run`."""
    name = judge_config(settings, judge).name
    plan = await asyncio.to_thread(plan_judging, store, run_id, name)
    if not plan.todo:
        return plan.counts
    async with opened_judge(settings, store, judge, local_model=local_model) as opened:
        return await judge_run(store, opened, run_id, progress=progress, plan=plan)
