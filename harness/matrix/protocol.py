"""The matrix's protocol on one item (seed 002 §15.2), in the order the seed fixes:

1. every predictor's own answer (the projection baseline) and its distribution for every
   target and condition, each in its own conversation, before any target hears the item;
2. every second-order prediction committed to the ledger, then every first-order one (B9: P's
   prediction of Q's prediction is on the ledger before Q's is);
3. each target asked ``samples`` times (a failure item: its real trials when it has some), every
   answer recorded against every prediction about it;
4. every prediction revealed and scored by the ledger;
5. second order: Q's revealed zero-shot prediction recorded against P's, which is revealed and
   scored against Q's committed distribution.

:class:`ItemProtocol` holds what every item of a run shares; :meth:`ItemProtocol.run` plays one
item and returns its :class:`matrix.ItemOutcome` (:mod:`harness.matrix.runs` stores it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.agent.agents import ReferenceAgent
from harness.matrix.asking import (
    MatrixAgent,
    Reply,
    reference_prediction,
    reference_second_order,
)
from harness.matrix.trials import FailureTrials, Observations
from ledger.client import LedgerClient, Prediction, record_answer, record_answers
from ledger.errors import RevealRejected
from ledger.predictions import RevealResult
from ledger.protocol import provenance, response_hash
from ledger.scoring import default_top1, penalty_scores
from matrix import (
    NO_ANSWER,
    ZERO_SHOT,
    ItemOutcome,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    failure_answers,
    failure_outcome,
    failure_source,
    is_failure,
    observed_answer,
    prediction_item,
    second_order_item,
    second_order_triples,
)
from mindledger.canonical import canonical_json
from mindledger.items import Item
from reports.matrix import SECOND_ORDER_PENALTY, distribution_scores

__all__ = ["ItemProtocol", "reveal"]

Key = tuple[str, str, str]
"""(predictor, target, condition) of a prediction; (P, Q, T) of a second-order one."""
Sample = tuple[str, str, str]
"""(the recorded answer, its request ref, the raw reply) of one target sample."""


def reveal(pred: Prediction) -> tuple[RevealResult, str]:
    """Reveal and score ``pred``: its result and outcome (``scored``, or ``rejected``:
    recorded in the ledger with the penalty)."""
    try:
        return pred.reveal(), "scored"
    except RevealRejected as exc:
        return exc.result, "rejected"


@dataclass
class _Targets:
    """What the targets answered on one item (step 3)."""

    answers: dict[str, list[str]]
    errors: dict[str, int]
    sources: dict[str, str | None]


@dataclass(frozen=True)
class ItemProtocol:
    """What every item of one matrix run shares (see the module docstring)."""

    agents: Mapping[str, MatrixAgent]
    samples: int
    conditions: Sequence[str]
    clients: Mapping[str, LedgerClient]
    ask: Callable[..., Awaitable[Reply]]
    """``ask(agent, item, *key)``: one conversation, within the run's request limit."""
    in_ledger: Callable[..., Awaitable[Any]]
    """``in_ledger(call, *args)``: a ledger write, off the event loop."""
    second_order: bool = False
    observations: Observations = field(default_factory=dict)
    """Each target's answers to the exposure items (what ``observe:m`` shows)."""
    failure_trials: FailureTrials | None = None

    @property
    def names(self) -> list[str]:
        return list(self.agents)

    @property
    def keys(self) -> list[Key]:
        return [(p, t, c) for p in self.agents for t in self.agents for c in self.conditions]

    @property
    def triples(self) -> list[Key]:
        return second_order_triples(self.names) if self.second_order else []

    async def run(self, item: Item) -> ItemOutcome:
        """Play the protocol on ``item`` (see the module docstring)."""
        names, keys, triples = self.names, self.keys, self.triples
        own, own_errors = await self._own_answers(item)
        dists, second_replies = await asyncio.gather(
            asyncio.gather(*(self._predict(item, p, t, c) for p, t, c in keys)),
            asyncio.gather(*(self._predict_second(item, p, q, t) for p, q, t in triples)),
        )
        second_preds, second_records = await self._commit_second_order(
            item, triples, second_replies
        )
        preds, records = await self._commit(item, keys, dists, own)
        targets = await self._ask_targets(item, preds)
        answered = [key for key, pred in preds.items() if pred.answers]
        revealed = dict(
            zip(
                answered,
                await asyncio.gather(*(self.in_ledger(reveal, preds[key]) for key in answered)),
                strict=True,
            )
        )
        truths = {
            (q, t): preds[q, t, c]
            for q, t, c in answered
            if c == ZERO_SHOT and revealed[q, t, c][1] == "scored"
        }
        await asyncio.gather(
            *(
                self._settle(item, key, pred, truths, second_records)
                for key, pred in second_preds.items()
            )
        )
        for key, srec in list(second_records.items()):
            if srec.outcome == "unparsed" and (key[1], key[2]) in truths:
                truth = truths[key[1], key[2]].body["distribution"]
                second_records[key] = replace(srec, truth=truth, scores=SECOND_ORDER_PENALTY)
        _score(preds, revealed, records, own, targets.answers)
        return ItemOutcome(
            item.id,
            {
                t: TargetRecord(
                    t,
                    own[t],
                    tuple(targets.answers[t]),
                    targets.errors[t],
                    own_errors[t],
                    targets.sources[t],
                )
                for t in names
            },
            {key: records[key] for key in keys},
            {key: second_records[key] for key in triples},
        )

    async def _answer_of(
        self, agent: MatrixAgent, item: Item, *key: Any
    ) -> tuple[Reply, str | None]:
        """``agent``'s reply to ``item`` and the answer recorded for it: an open item's
        cluster label; for a failure item, whether its reply to the underlying question is
        correct."""
        if is_failure(item):
            question, source = failure_source(item)
            reply = await self.ask(agent, question, *key)
            value = observed_answer(question, reply.answer)
            return reply, failure_outcome(source, value)
        reply = await self.ask(agent, item, *key)
        return reply, observed_answer(item, reply.answer)

    async def _own_answers(self, item: Item) -> tuple[dict[str, str | None], dict[str, str | None]]:
        """Step 1a: each predictor's own answer (None: an error or no answer) and error."""
        names = self.names
        replies = await asyncio.gather(
            *(self._answer_of(self.agents[p], item, "own") for p in names)
        )
        own: dict[str, str | None] = {}
        own_errors: dict[str, str | None] = {}
        for p, (r, value) in zip(names, replies, strict=True):
            own[p] = None if r.error is not None or value == NO_ANSWER else value
            own_errors[p] = r.error
        return own, own_errors

    async def _predict(self, item: Item, p: str, t: str, c: str) -> Reply:
        """Step 1b: P's distribution for T's answer under condition ``c``."""
        agent = self.agents[p]
        key = ("predict",) if c == ZERO_SHOT else ("predict", c)
        if isinstance(agent, ReferenceAgent):
            return reference_prediction(agent, item, self.agents[t], *key)
        pitem = prediction_item(item, p, t, self.samples, c, self.observations.get(t, ()))
        return await self.ask(agent, pitem, *key)

    async def _predict_second(self, item: Item, p: str, q: str, t: str) -> Reply:
        """Step 1c: P's distribution for what Q commits for T."""
        agent = self.agents[p]
        if isinstance(agent, ReferenceAgent):
            return reference_second_order(agent, item, self.agents[q], self.agents[t])
        return await self.ask(agent, second_order_item(item, p, q, t, self.samples), "second-order")

    async def _commit_second_order(
        self, item: Item, triples: Sequence[Key], replies: Sequence[Reply]
    ) -> tuple[dict[Key, Prediction], dict[Key, SecondOrderRecord]]:
        """Step 2a: commit every second-order prediction before any first-order one."""
        preds: dict[Key, Prediction] = {}
        records: dict[Key, SecondOrderRecord] = {}
        for (p, q, t), reply in zip(triples, replies, strict=True):
            if reply.error is not None:
                records[p, q, t] = SecondOrderRecord(p, q, t, "predictor_error", error=reply.error)
            elif not isinstance(reply.answer, Mapping):
                records[p, q, t] = SecondOrderRecord(p, q, t, "unparsed")
            else:
                preds[p, q, t] = self.clients[p].predict(
                    q,
                    second_order_item(item, p, q, t, self.samples).prompt,
                    reply.answer,
                    top1=reply.top1,
                    item=item.id,
                    condition={
                        "protocol": "matrix",
                        "order": 2,
                        "of": t,
                        "samples": self.samples,
                    },
                )
        await asyncio.gather(*(self.in_ledger(pred.commit) for pred in preds.values()))
        return preds, records

    async def _commit(
        self,
        item: Item,
        keys: Sequence[Key],
        replies: Sequence[Reply],
        own: Mapping[str, str | None],
    ) -> tuple[dict[Key, Prediction], dict[Key, PredictionRecord]]:
        """Step 2b: commit every prediction about this item before any target hears it."""
        preds: dict[Key, Prediction] = {}
        records: dict[Key, PredictionRecord] = {}
        for (p, t, c), reply in zip(keys, replies, strict=True):
            if reply.error is not None:
                records[p, t, c] = PredictionRecord(
                    p, t, "predictor_error", error=reply.error, condition=c
                )
            elif not isinstance(reply.answer, Mapping):
                records[p, t, c] = PredictionRecord(
                    p, t, "unparsed", own_answer=own[p], condition=c
                )
            else:
                protocol: dict[str, Any] = {
                    "protocol": "matrix",
                    "self": p == t,
                    "samples": self.samples,
                }
                if c != ZERO_SHOT:
                    protocol["condition"] = c
                preds[p, t, c] = self.clients[p].predict(
                    t,
                    item.prompt,
                    reply.answer,
                    top1=reply.top1,
                    own_answer=own[p],
                    item=item.id,
                    condition=protocol,
                )
        await asyncio.gather(*(self.in_ledger(pred.commit) for pred in preds.values()))
        return preds, records

    async def _ask_targets(self, item: Item, preds: Mapping[Key, Prediction]) -> _Targets:
        """Step 3: each target asked ``samples`` times (a failure item: its real trials when
        it has some); every answer recorded against every prediction about that target."""
        names = self.names
        got_by = _Targets({t: [] for t in names}, dict.fromkeys(names, 0), dict.fromkeys(names))

        async def record(t: str, got: Sequence[Sample]) -> None:
            """Record the target's answers, in order, against every prediction about it: one
            ledger request for all of them."""
            got_by.answers[t].extend(answer for answer, _, _ in got)
            about = [pred for (_, tt, _), pred in preds.items() if tt == t]
            await self.in_ledger(
                record_answers,
                about,
                [
                    (answer, provenance("matrix", ref, response_hash(raw), target=t))
                    for answer, ref, raw in got
                ],
            )

        async def sample(t: str, k: int) -> Sample | None:
            reply, answer = await self._answer_of(self.agents[t], item, "sample", k)
            if reply.error is not None:
                got_by.errors[t] += 1
                return None
            assert answer is not None
            raw = reply.raw if reply.raw is not None else answer
            return answer, f"matrix:{item.id}:{t}:{k}", raw

        asked: list[tuple[str, int]] = []
        recorded: list[Awaitable[None]] = []
        for t in names:
            known: tuple[str, ...] = ()
            if is_failure(item) and self.failure_trials and t in self.failure_trials:
                known = failure_answers(item, self.failure_trials[t])
            if known:
                got_by.sources[t] = "trials"
                recorded.append(
                    record(
                        t,
                        [
                            (answer, f"trial:{item.meta['source']}:{t}:{k}", answer)
                            for k, answer in enumerate(known)
                        ],
                    )
                )
            else:
                asked.extend((t, k) for k in range(self.samples))
        got = await asyncio.gather(*(sample(t, k) for t, k in asked))
        for t in names:
            mine = [g for (tt, _), g in zip(asked, got, strict=True) if tt == t and g is not None]
            if mine:
                recorded.append(record(t, mine))
        await asyncio.gather(*recorded)
        return got_by

    async def _settle(
        self,
        item: Item,
        key: Key,
        pred: Prediction,
        truths: Mapping[tuple[str, str], Prediction],
        records: dict[Key, SecondOrderRecord],
    ) -> None:
        """Step 5: Q's revealed zero-shot prediction as the observation of P's second-order
        prediction, which is revealed and scored against Q's committed distribution."""
        p, q, t = key
        first = truths.get((q, t))
        common: dict[str, Any] = {
            "distribution": pred.body["distribution"],
            "prediction_id": pred.id,
        }
        if first is None:  # nothing to compare with: stays committed, expires
            records[key] = SecondOrderRecord(p, q, t, "unscored", **common)
            return
        truth = first.body["distribution"]
        top1 = first.body["top1"] or default_top1(truth)
        source = provenance(
            "matrix",
            f"second-order:{item.id}:{p}:{q}:{t}",
            response_hash(canonical_json(truth)),
            target=q,
        )
        await self.in_ledger(record_answer, [pred], str(top1), source)
        result, outcome = await self.in_ledger(reveal, pred)
        records[key] = SecondOrderRecord(
            p,
            q,
            t,
            outcome,
            truth=truth,
            ledger_scores=dict(result.scores),
            scores=distribution_scores(pred.body["distribution"], truth)
            if outcome == "scored"
            else SECOND_ORDER_PENALTY,
            **common,
        )


def _score(
    preds: Mapping[Key, Prediction],
    revealed: Mapping[Key, tuple[RevealResult, str]],
    records: dict[Key, PredictionRecord],
    own: Mapping[str, str | None],
    answers: Mapping[str, Sequence[str]],
) -> None:
    """Step 4's records: each committed prediction's outcome and scores (never revealed: left
    to expire; no parseable distribution: the worst-case penalty on the target's answers)."""
    for (p, t, c), pred in preds.items():
        common = {
            "own_answer": own[p],
            "prediction_id": pred.id,
            "condition": c,
            "distribution": pred.body["distribution"],
            "top1": pred.body["top1"],
        }
        if not pred.answers:  # stays committed; the ledger expires it with the penalty
            records[p, t, c] = PredictionRecord(p, t, "unscored", **common)
            continue
        result, outcome = revealed[p, t, c]
        records[p, t, c] = PredictionRecord(
            p, t, outcome, scores=dict(result.scores), observed=tuple(pred.answers), **common
        )
    for key, rec in list(records.items()):
        if rec.outcome == "unparsed" and answers[key[1]]:
            # no parseable prediction: scored like a prediction never revealed, the worst
            observed = tuple(answers[key[1]])
            records[key] = replace(rec, scores=penalty_scores(observed), observed=observed)
