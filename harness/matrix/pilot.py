"""The matrix's pilot run (seed 002 §15.2): every candidate put to every target K times, then
the pure filter (:func:`matrix.apply_filter`) keeps the divergent ones. The candidates, the
filter and its record are the :mod:`matrix` package's; this module only asks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from matrix import (
    PilotFilter,
    PilotRecord,
    apply_filter,
    failure_answers,
    failure_outcome,
    failure_source,
    failure_sources,
    kind_of,
    observed_answer,
)
from mindledger.errors import UserError
from mindledger.items import Item

__all__ = ["Ask", "Reply", "run_pilot"]


class Reply(Protocol):
    """What an ask-callable returns (as :mod:`harness.matrix.runs`'s asking does): the answer, or
    the API error."""

    answer: Any
    error: str | None


Ask = Callable[..., Awaitable[Reply]]
"""``ask(agent, item, *key)``: one fresh conversation's reply of ``agent`` to ``item``; ``key``
tells repeated asks apart (a reference agent draws from it)."""


async def run_pilot(
    agents: Mapping[str, Any],
    items: Sequence[Item],
    samples: int,
    ask: Ask,
    *,
    rule: PilotFilter | None = None,
    trials: Mapping[str, Mapping[str, bool | Sequence[bool]]] | None = None,
    concurrency: int = 4,
) -> tuple[list[Item], PilotRecord]:
    """Ask every target in ``agents`` every candidate ``samples`` (K) times through ``ask`` and
    apply the filter. A failure candidate's answers are the target's ``trials`` on the
    underlying item when given for that target (correct flags by item id), topped up to K by
    asking it the underlying question (a suite run has one trial per item, and one answer says
    nothing of a target's consistency); otherwise the target is asked the underlying question
    K times. Each asked answer is scored with its family's scorer.
    A sample whose reply is an API error is dropped and counted in the record's ``errors``."""
    if samples < 2:
        raise UserError("the pilot needs at least 2 samples per target and item")
    if not agents:
        raise UserError("the pilot needs at least one target")
    answers: dict[str, dict[str, list[str]]] = {t: {} for t in agents}
    errors = {t: 0 for t in agents}
    sem = asyncio.Semaphore(max(1, concurrency))
    sources: dict[str, tuple[Item, Item]] = {}
    failures = [item for item in items if kind_of(item) == "failure"]
    generated = [item for item in failures if "source" not in item.params]
    for seed in {item.seed for item in generated}:  # each seed's sources generated once
        of_seed = [item for item in generated if item.seed == seed]
        pairs = failure_sources(seed, [int(item.params["index"]) for item in of_seed])
        sources.update((item.id, pairs[int(item.params["index"])]) for item in of_seed)
    sources.update((item.id, failure_source(item)) for item in failures if "source" in item.params)

    async def sample(t: str, item: Item, k: int) -> None:
        question = sources[item.id][0] if item.id in sources else item
        async with sem:
            reply = await ask(agents[t], question, "pilot", k)
        if reply.error is not None:
            errors[t] += 1
            return
        value = observed_answer(question, reply.answer)
        if item.id in sources:
            value = failure_outcome(sources[item.id][1], value)
        answers[t].setdefault(item.id, []).append(value)

    jobs: list[Awaitable[None]] = []
    for t in agents:
        for item in items:
            if item.id in sources and trials is not None and t in trials:
                known = failure_answers(item, trials[t])
                if known:  # topped up to K: one trial says nothing of the target's consistency
                    answers[t][item.id] = list(known)
                    jobs.extend(sample(t, item, k) for k in range(len(known), samples))
                    continue
            jobs.extend(sample(t, item, k) for k in range(samples))
    await asyncio.gather(*jobs)
    # answers arrive in completion order; sort for a record independent of scheduling
    ordered = {t: {i: sorted(a) for i, a in by_item.items()} for t, by_item in answers.items()}
    return apply_filter(items, ordered, rule, samples=samples, errors=errors)
