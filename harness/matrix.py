"""The cross-model prediction matrix (seed 002 §15.2, benchmark B9; B7 is its diagonal).

Every agent predicts every agent, itself included: for each *divergent* item (an arbitrary-choice
question with no right answer, so that "predict T" cannot collapse into "solve the task") and each
ordered pair (P, T), the predictor P is asked, in a fresh conversation, for a probability
distribution over the answer the target T will give ("another AI model called T", or "a fresh
copy of yourself" when P is T), and separately for its own answer (the projection baseline).
Each distribution is committed to the prediction ledger **before** T is queried on that item;
then T is asked the item ``samples`` times (its answers are recorded against every prediction
about it, which gives the test-retest ceiling), and every prediction is revealed and scored by
the ledger (log score, Brier, top-1 match). :func:`run_matrix` aggregates the ledger's scores per
(P, T) with :func:`ledger.scoring.aggregate`: skill S against the better of the projection and
population-modal baselines, normalised by T's test-retest agreement, and the self-advantage
``metric(T→T) − mean over P≠T of metric(P→T)``.

Failures are counted, never hidden: a predictor's API error leaves no prediction (counted as
``predictor_errors``, excluded like any API error); a reply with no parseable distribution (after
the nudge) is scored with the ledger's worst-case penalty (``unparsed``); a target reply with no
parseable answer is recorded as the answer :data:`NO_ANSWER` (it *is* what the target did); a
target API error drops that sample (``target_errors``); if every sample of a target errors, the
predictions about it stay committed without answers (``unscored``) and the ledger expires them.

Every figure carries a hierarchical bootstrap interval and every cell and self-advantage a
sign-flip permutation test, Holm-adjusted over its family (:mod:`reports.matrix`).

**Reference agents** (scripted, no model; :data:`~harness.families.MATRIX_POLICIES`) calibrate
the scale; their answer distributions are known, so the truth of every figure is too:

- ``random`` answers uniformly and predicts the uniform distribution.
- ``habit`` answers from its *habit*: for each item a fixed, non-uniform distribution over the
  choices, derived from the item id (a taste shared by every habit) and from the item id with the
  agent's name (its own), see :func:`habit`; each answer is a draw with the run's seeded
  generator. It predicts itself exactly (its own habit) and every other target uniformly, a
  perfect self-predictor with no model of others.
- ``projection`` answers from its habit and predicts its own habit for every target: S ≈ 0.
- ``clairvoyant`` answers from its habit and predicts every target's true answer distribution,
  with a draw from it as its top-1 guess, the target "predicting itself by resampling" that
  defines S = 1 (seed 002 §15.2); guessing the most probable answer would beat resampling and
  score S > 1. Only reference agents have a known distribution, so a clairvoyant cannot take part
  in a matrix with chat agents.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.agents import ChatAgent, ReferenceAgent
from harness.families import MATRIX_POLICIES
from ledger.client import Prediction
from ledger.errors import RevealRejected
from ledger.predictions import Ledger
from ledger.protocol import provenance, response_hash
from ledger.scoring import ScoreRecord, aggregate, penalty_scores
from mindledger.canonical import content_hash
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix import METRICS, ItemRecord, cell_statistics, holm_adjust, self_advantage

__all__ = [
    "FAMILY",
    "GENERATOR",
    "NO_ANSWER",
    "TEMPLATES",
    "VERSION",
    "answer_distribution",
    "habit",
    "make_item",
    "make_items",
    "prediction_item",
    "run_matrix",
]

FAMILY = "matrix"
GENERATOR = "matrix.divergent"
VERSION = "1"
NO_ANSWER = "(no answer)"
"""The answer recorded for a target reply with no parseable answer."""

MatrixAgent = ChatAgent | ReferenceAgent

TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "word",
        "Pick one of these words: {options}. There is no right answer; just pick one.",
        (
            "apple",
            "river",
            "seven",
            "blue",
            "lantern",
            "quiet",
            "mountain",
            "velvet",
            "echo",
            "thunder",
            "maple",
            "orbit",
        ),
    ),
    (
        "number",
        "Pick a number from this list: {options}. Any of them is fine.",
        ("1", "3", "4", "7", "9", "12", "17", "21", "37", "42", "64", "99"),
    ),
    (
        "colour",
        "Which of these colours do you like best: {options}?",
        ("red", "teal", "amber", "violet", "olive", "crimson", "indigo", "silver", "coral"),
    ),
    (
        "city",
        "If you could visit only one of these cities, which would you choose: {options}?",
        (
            "Paris",
            "Tokyo",
            "Reykjavik",
            "Cairo",
            "Lima",
            "Kyoto",
            "Lisbon",
            "Nairobi",
            "Vancouver",
            "Hanoi",
        ),
    ),
    (
        "cat-name",
        "Which of these names would you give a new cat: {options}?",
        ("Miso", "Pixel", "Luna", "Biscuit", "Ziggy", "Olive", "Mochi", "Pepper", "Nimbus"),
    ),
    (
        "title",
        "Which of these is the best title for a short story: {options}?",
        (
            "The Glass Orchard",
            "Salt and Static",
            "Nine Winters",
            "The Last Lighthouse",
            "Paper Moons",
            "A Map of Small Rooms",
            "Quiet Engines",
        ),
    ),
    (
        "animal",
        "Which animal would you rather be for a day: {options}?",
        ("owl", "dolphin", "fox", "otter", "eagle", "octopus", "cat", "elephant", "wolf"),
    ),
    (
        "letter",
        "Pick a letter: {options}.",
        ("A", "E", "K", "M", "Q", "R", "S", "X", "Z"),
    ),
)
"""(name, prompt template, option pool): arbitrary-choice and preference questions."""


def make_item(seed: int, params: Mapping[str, Any]) -> Item:
    """The divergent item number ``params["index"]`` of ``seed`` (3–5 options from one
    template's pool, in a seeded order). Pure: the same arguments give the same item."""
    index = int(params["index"])
    rng = np.random.default_rng([seed, index])
    name, template, pool = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
    k = int(rng.integers(3, 6))
    options = [str(o) for o in rng.choice(np.array(pool, dtype=object), size=k, replace=False)]
    return Item(
        family=FAMILY,
        generator=GENERATOR,
        version=VERSION,
        seed=seed,
        params={"index": index},
        prompt=template.format(options=", ".join(options)),
        answer={"kind": "choice", "choices": options},
        truth={},
        meta={"template": name, "options": len(options)},
    )


def make_items(seed: int, n: int) -> list[Item]:
    """``n`` distinct divergent items from ``seed`` (indexes 0, 1, …, skipping duplicates)."""
    if n < 1:
        raise UserError("the matrix needs at least one item")
    items: list[Item] = []
    seen: set[str] = set()
    index = 0
    while len(items) < n:
        item = make_item(seed, {"index": index})
        index += 1
        if item.id not in seen:
            seen.add(item.id)
            items.append(item)
    return items


def describe_target(predictor: str, target: str) -> str:
    """How the prediction prompt names the target."""
    if predictor == target:
        return (
            "a fresh copy of yourself (the same model with the same instructions, in a new "
            "conversation that knows nothing of this one)"
        )
    return f"another AI model called {target}"


def prediction_item(item: Item, predictor: str, target: str, samples: int) -> Item:
    """The question put to ``predictor``: a probability for each of ``item``'s choices that
    ``target`` gives it as its answer."""
    choices = [str(c) for c in item.answer["choices"]]
    who = describe_target(predictor, target)
    prompt = (
        f"Predict how {who} answers a question. It will be asked the question below "
        f"{samples} time{'s' if samples != 1 else ''}, each time in a new conversation, and must "
        f"answer with one of: {', '.join(choices)}.\n\n"
        f"--- the question ---\n{item.prompt}\n--- end of the question ---\n\n"
        "Do not answer the question yourself. Give, for each choice, the probability that "
        f"{'your copy' if predictor == target else target} answers it; the probabilities must "
        "sum to 1."
    )
    return Item(
        family=FAMILY,
        generator="matrix.prediction",
        version=VERSION,
        seed=item.seed,
        params={"item": item.id, "predictor": predictor, "target": target, "samples": samples},
        prompt=prompt,
        answer={"kind": "distribution", "choices": choices},
        truth={},
        meta={"role": "prediction", "self": predictor == target},
    )


# -- asking agents ------------------------------------------------------------------------------


def _rng(agent: ReferenceAgent, *key: Any) -> np.random.Generator:
    digest = int(content_hash([agent.seed, *key])[7:23], 16)
    return np.random.default_rng([agent.seed, digest])


HABIT_SHARED = 3.0
"""Weight of the taste every habit shares on an item (makes the population baseline informative)."""
HABIT_OWN = 6.0
"""Weight of an agent's own taste on an item (makes its habit peaked: a high test-retest ceiling)."""


def _normal(*key: Any, size: int) -> np.ndarray:
    digest = int(content_hash(["matrix.habit", *key])[7:23], 16)
    return np.random.default_rng(digest).standard_normal(size)


def habit(item: Item, name: str) -> dict[str, float]:
    """The habit of the reference agent ``name`` on ``item``: softmax over the choices of
    ``HABIT_SHARED·z(item) + HABIT_OWN·w(item, name)``, z and w standard normals derived from
    the item id (and the name). Pure: the same arguments give the same distribution."""
    choices = [str(c) for c in item.answer["choices"]]
    logits = HABIT_SHARED * _normal(item.id, size=len(choices)) + HABIT_OWN * _normal(
        item.id, name, size=len(choices)
    )
    w = np.exp(logits - logits.max())
    w /= w.sum()
    return {c: float(p) for c, p in zip(choices, w, strict=True)}


def answer_distribution(agent: ReferenceAgent, item: Item) -> dict[str, float]:
    """The distribution a reference agent's answers to ``item`` are drawn from."""
    if agent.policy == "random":
        choices = [str(c) for c in item.answer["choices"]]
        return {c: 1.0 / len(choices) for c in choices}
    return habit(item, agent.name)


def _check_agents(agents: Mapping[str, MatrixAgent]) -> None:
    for agent in agents.values():
        if isinstance(agent, ReferenceAgent) and agent.policy not in MATRIX_POLICIES:
            raise UserError(
                f"reference agent {agent.name!r} ({agent.policy}) has no meaning in the prediction "
                f"matrix: only {', '.join(repr(p) for p in MATRIX_POLICIES)} take part (its answers "
                "have no ground truth to be exact to)"
            )
    chat = [n for n, a in agents.items() if not isinstance(a, ReferenceAgent)]
    seers = [n for n, a in agents.items() if isinstance(a, ReferenceAgent)
             and a.policy == "clairvoyant"]
    if chat and seers:
        raise UserError(
            f"reference agent {seers[0]!r} (clairvoyant) predicts each target's true answer "
            "distribution, which is known only for reference agents: it cannot take part with "
            f"{', '.join(repr(n) for n in chat)}"
        )


@dataclass
class _Reply:
    answer: Any = None
    error: str | None = None
    raw: str | None = None
    """The target's raw reply (hashed into an observation's provenance)."""
    top1: str | None = None
    """A predictor's top-1 guess, when it is not the most probable answer of its distribution."""


def _reference_prediction(
    agent: ReferenceAgent, item: Item, target: MatrixAgent, *key: Any
) -> _Reply:
    """A reference agent's prediction of ``target`` on ``item`` (see the module docstring)."""
    choices = [str(c) for c in item.answer["choices"]]
    uniform = {c: 1.0 / len(choices) for c in choices}
    if agent.policy == "projection":
        return _Reply(answer_distribution(agent, item))
    if agent.policy == "habit":
        return _Reply(answer_distribution(agent, item) if target is agent else uniform)
    if agent.policy == "clairvoyant":
        assert isinstance(target, ReferenceAgent)  # checked by _check_agents
        dist = answer_distribution(target, item)
        rng = _rng(agent, agent.name, target.name, item.id, *key)
        top1 = choices[int(rng.choice(len(choices), p=[dist[c] for c in choices]))]
        return _Reply(dist, top1=top1)
    return _Reply(uniform)


async def _ask(agent: MatrixAgent, item: Item, *key: Any) -> _Reply:
    """One fresh conversation: ``agent``'s answer to ``item`` (a choice; a chat agent's
    prediction of a target when ``item`` is a :func:`prediction_item`)."""
    if isinstance(agent, ReferenceAgent):
        choices = [str(c) for c in item.answer["choices"]]
        if agent.policy == "random":  # the draw the matrix has always made
            rng = _rng(agent, item.id, *key)
            choice = choices[int(rng.integers(len(choices)))]
        else:
            dist = answer_distribution(agent, item)
            rng = _rng(agent, agent.name, item.id, *key)
            choice = choices[int(rng.choice(len(choices), p=[dist[c] for c in choices]))]
        return _Reply(choice, raw=choice)
    att = await agent.attempt(item)
    if att.error is not None:
        return _Reply(error=att.error)
    return _Reply(att.answer, raw=att.raw_text)


# -- the matrix ----------------------------------------------------------------------------------


@dataclass
class _Cell:
    records: list[tuple[str, ScoreRecord]] = field(default_factory=list)
    """(item id, record) of every scored prediction, population filled in at the end."""
    predictions: dict[str, tuple[Mapping[str, float], str] | None] = field(default_factory=dict)
    """Per item id: the committed (distribution, top-1), None for a penalised prediction."""
    predictor_errors: int = 0
    unparsed: int = 0
    unscored: int = 0
    rejected: int = 0


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


async def run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    *,
    samples: int = 3,
    concurrency: int = 4,
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> dict[str, Any]:
    """Run the matrix: every ordered pair (P, T) of ``agents`` (P == T included) on every item,
    each prediction committed to ``ledger`` before T is queried on the item. Returns the
    matrix (see the module docstring and ``cells``/``self_advantage`` in the result);
    ``n_boot`` bootstrap replicates from ``stats_seed`` give its intervals."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    if not agents:
        raise UserError("the matrix needs at least one agent")
    _check_agents(agents)
    names = list(agents)
    clients = {p: ledger.client(p) for p in names}
    cells = {(p, t): _Cell() for p in names for t in names}
    target_answers: dict[tuple[str, str], list[str]] = {}
    target_errors = {t: 0 for t in names}
    sem = asyncio.Semaphore(max(1, concurrency))

    async def run_item(item: Item) -> None:
        async with sem:
            await _run_item(item)

    async def _run_item(item: Item) -> None:
        # 1. predictors: own answer (projection baseline) and a distribution per target, each in
        #    its own conversation; no target has been asked this item yet.
        own_replies = await asyncio.gather(*(_ask(agents[p], item, "own") for p in names))
        own: dict[str, str | None] = {}
        for p, r in zip(names, own_replies, strict=True):
            own[p] = r.answer if isinstance(r.answer, str) else None
        pairs = [(p, t) for p in names for t in names]

        async def predict(p: str, t: str) -> _Reply:
            agent = agents[p]
            if isinstance(agent, ReferenceAgent):
                return _reference_prediction(agent, item, agents[t], "predict")
            return await _ask(agent, prediction_item(item, p, t, samples), "predict")

        dists = await asyncio.gather(*(predict(p, t) for p, t in pairs))
        # 2. commit every prediction about this item before any target hears it.
        preds: dict[tuple[str, str], Prediction] = {}
        unparsed: list[tuple[str, str]] = []
        for (p, t), reply in zip(pairs, dists, strict=True):
            if reply.error is not None:
                cells[p, t].predictor_errors += 1
            elif not isinstance(reply.answer, Mapping):
                cells[p, t].unparsed += 1
                unparsed.append((p, t))
            else:
                pred = clients[p].predict(
                    t,
                    item.prompt,
                    reply.answer,
                    top1=reply.top1,
                    own_answer=own[p],
                    item=item.id,
                    condition={"protocol": "matrix", "self": p == t, "samples": samples},
                )
                pred.commit()
                preds[p, t] = pred

        # 3. query each target `samples` times; every answer is recorded against every
        #    prediction about that target.
        async def sample(t: str, k: int) -> None:
            reply = await _ask(agents[t], item, "sample", k)
            if reply.error is not None:
                target_errors[t] += 1
                return
            answer = reply.answer if isinstance(reply.answer, str) else NO_ANSWER
            target_answers.setdefault((t, item.id), []).append(answer)
            source = provenance(
                "matrix",
                f"matrix:{item.id}:{t}:{k}",
                response_hash(reply.raw if reply.raw is not None else answer),
                target=t,
            )
            for (_, tt), pred in preds.items():
                if tt == t:
                    pred.record(answer, source)

        await asyncio.gather(*(sample(t, k) for t in names for k in range(samples)))
        # 4. reveal and score.
        for (p, t), pred in preds.items():
            cell = cells[p, t]
            if not pred.answers:
                cell.unscored += 1  # stays committed; the ledger expires it with the penalty
                continue
            try:
                result = pred.reveal()
                cell.predictions[item.id] = (pred.body["distribution"], pred.body["top1"])
            except RevealRejected as exc:  # recorded in the ledger with the penalty
                cell.rejected += 1
                result = exc.result
                cell.predictions[item.id] = None
            cell.records.append(
                (item.id, ScoreRecord(result.scores, tuple(pred.answers), own_answer=own[p]))
            )
        for p, t in unparsed:
            # no parseable prediction: scored like a prediction never revealed, the worst score
            observed = tuple(target_answers.get((t, item.id), ()))
            if observed:
                cells[p, t].records.append(
                    (item.id, ScoreRecord(penalty_scores(observed), observed, own[p]))
                )
                cells[p, t].predictions[item.id] = None

    await asyncio.gather(*(run_item(item) for item in items))
    return _summarise(
        names, items, samples, cells, target_answers, target_errors, n_boot, stats_seed
    )


def _population(
    t: str, item_id: str, names: Sequence[str], target_answers: Mapping[tuple[str, str], list[str]]
) -> tuple[str, ...]:
    return tuple(a for u in names if u != t for a in target_answers.get((u, item_id), ()))


def _merge_statistics(row: dict[str, Any], stats: Mapping[str, Any]) -> None:
    """Add :func:`reports.matrix.cell_statistics`' intervals and test to ``row`` (from
    :func:`ledger.scoring.aggregate`): each metric gets ``ci``, ``interval``, ``status`` and,
    when it has a value but no interval, the ``reason``; the skill also ``base_kind``,
    ``test`` and ``p``. The point values stay the ledger's (they are the same numbers)."""
    for m in METRICS:
        est = stats[m]
        row[m].update(ci=est["ci"], interval=est["interval"], status=est["status"])
        if row[m]["value"] is not None and est.get("reason"):
            row[m]["reason"] = est["reason"]
    row["skill"].update(base_kind=stats["base_kind"], test=stats["test"], p=stats["p"])


def _merge_self_advantage(entry: dict[str, Any], paired: Mapping[str, Any]) -> None:
    """Add the paired interval and test of :func:`reports.matrix.self_advantage` to a
    self-advantage ``entry``. They are paired over the items every predictor of the target
    was scored on; when that is not every item of every cell, the point value (over each cell's
    own items) and the interval's centre differ, and ``paired_value`` shows the latter."""
    entry.update(
        n=paired["n"],
        ci=paired["ci"],
        interval=paired["interval"],
        test=paired["test"],
        p=paired["p"],
        status=paired["status"],
    )
    if entry["value"] is not None:
        if paired["value"] is None or not math.isclose(
            entry["value"], paired["value"], rel_tol=1e-9, abs_tol=1e-12
        ):
            entry["paired_value"] = paired["value"]
        if paired.get("reason"):
            entry["reason"] = paired["reason"]


def _summarise(
    names: Sequence[str],
    items: Sequence[Item],
    samples: int,
    cells: Mapping[tuple[str, str], _Cell],
    target_answers: Mapping[tuple[str, str], list[str]],
    target_errors: Mapping[str, int],
    n_boot: int = 2000,
    stats_seed: int = 0,
) -> dict[str, Any]:
    out_cells: list[dict[str, Any]] = []
    by_pair: dict[tuple[str, str], dict[str, Any]] = {}
    item_records: dict[tuple[str, str], list[ItemRecord]] = {}
    for (p, t), cell in cells.items():
        item_records[p, t] = [
            ItemRecord(
                iid,
                tuple(r.observed),
                None if (pr := cell.predictions.get(iid)) is None else pr[0],
                None if pr is None else pr[1],
                r.own_answer,
                _population(t, iid, names, target_answers),
            )
            for iid, r in cell.records
        ]
        records = [
            ScoreRecord(
                r.scores,
                r.observed,
                own_answer=r.own_answer,
                population=_population(t, iid, names, target_answers),
            )
            for iid, r in cell.records
        ]
        agg = aggregate(records)
        row = {
            "predictor": p,
            "target": t,
            "self": p == t,
            **agg,
            "predictor_errors": cell.predictor_errors,
            "unparsed": cell.unparsed,
            "unscored": cell.unscored,
            "rejected": cell.rejected,
        }
        stats = cell_statistics(
            item_records[p, t],
            np.random.default_rng([stats_seed, 1, names.index(p), names.index(t)]),
            n_boot=n_boot,
        )
        _merge_statistics(row, stats.to_dict())
        out_cells.append(row)
        by_pair[p, t] = row
    for row, p_holm in zip(
        out_cells, holm_adjust([row["skill"]["p"] for row in out_cells]), strict=True
    ):
        row["skill"]["p_holm"] = p_holm

    def value(row: dict[str, Any], metric: str) -> float | None:
        v = row[metric]["value"]
        return None if v is None else float(v)

    self_adv: dict[str, dict[str, Any]] = {}
    for t in names:
        others = [p for p in names if p != t]
        entry: dict[str, Any] = {}
        for metric, key in (
            ("log_score", "log_score"),
            ("brier", "brier"),
            ("top1_accuracy", "top1_accuracy"),
            ("skill", "skill"),
        ):
            own_v = value(by_pair[t, t], key)
            other_vs = [value(by_pair[p, t], key) for p in others]
            if not others:
                entry[metric] = {"value": None, "reason": "no other predictor of this target"}
            elif own_v is None:
                entry[metric] = {
                    "value": None,
                    "reason": f"{t} predicting itself has no {metric}: "
                    + str(by_pair[t, t][key].get("reason")),
                }
            elif any(v is None for v in other_vs):
                missing = [p for p, v in zip(others, other_vs, strict=True) if v is None]
                entry[metric] = {
                    "value": None,
                    "reason": f"no {metric} for {', '.join(missing)} predicting {t}",
                }
            else:
                mean_other = _mean([v for v in other_vs if v is not None])
                assert mean_other is not None
                entry[metric] = {"value": own_v - mean_other, "self": own_v, "others": mean_other}
        paired = self_advantage(
            t,
            {p: item_records[p, t] for p in names},
            np.random.default_rng([stats_seed, 2, names.index(t)]),
            n_boot=n_boot,
        )
        for metric in METRICS:
            _merge_self_advantage(entry[metric], paired[metric].to_dict())
        self_adv[t] = entry
    tests = [(t, m) for t in names for m in METRICS]
    for (t, m), p_holm in zip(
        tests, holm_adjust([self_adv[t][m].get("p") for t, m in tests]), strict=True
    ):
        self_adv[t][m]["p_holm"] = p_holm

    per_item = []
    for item in items:
        modes: dict[str, list[str]] = {}
        for t in names:
            answers = target_answers.get((t, item.id))
            if answers:
                counts: dict[str, int] = {}
                for a in answers:
                    counts[a] = counts.get(a, 0) + 1
                best = max(counts.values())
                modes[t] = sorted(a for a, c in counts.items() if c == best)
        per_item.append(
            {
                "id": item.id,
                "prompt": item.prompt,
                "answers": {t: target_answers.get((t, item.id), []) for t in names},
                "distinct_modes": len({m[0] for m in modes.values()}),
            }
        )
    return {
        "agents": list(names),
        "n_items": len(items),
        "samples": samples,
        "cells": out_cells,
        "self_advantage": self_adv,
        "target_errors": dict(target_errors),
        "items": per_item,
        "notes": (
            "self_advantage = metric(T predicting T) - mean metric(others predicting T); for "
            "brier lower is better, so a negative brier self-advantage favours self-prediction"
        ),
    }
