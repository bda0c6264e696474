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

**A matrix is a run** (suite ``matrix``, :func:`create_matrix_run`): its agents (with their
specs, as any run's) and its divergent items are stored first, with its samples and agents in
its params (and ``accompanies``, the suite run it was scheduled beside). Each item's outcome is
stored as trials when the item is done, in one transaction: one trial per target on the base
item (its own answer and its samples) and one per prediction on its :func:`prediction_item`
(the distribution, top-1, own answer, the ledger's prediction id and scores). So
:func:`execute_matrix_run` resumes a run by skipping the items already stored, and
:func:`reports.matrix_summary.summarise_run` rebuilds the matrix from storage alone.

**Items, the pilot and the conditions** (issue 14 items 2–4). :func:`plan_matrix_run` first
pilots candidates of every kind of :mod:`harness.matrix_items` (arbitrary, preference, open,
NestToM, game, failure) through every target K times and stores the run on the divergent ones
with the pilot's :class:`~harness.matrix_items.PilotRecord` in its params; a *not divergent*
verdict stores a run with no items, which asks nothing and reports the verdict instead of
skill. An open item's answers are recorded as cluster labels; a failure item's target is never
asked it (its real trials, or its scored answers to the underlying question, are the observed
``yes``/``no``). Each condition (``zero-shot``; ``observe:m``, m past answers of the target on
the run's *exposure* items, answered once by every target before any prediction; ``simulate``)
is its own prediction item, commit and trial.

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
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness import matrix_items
from harness.agents import ChatAgent, ReferenceAgent
from harness.build import AgentSpec, built_agents, needs_local_model
from harness.execution import (
    LocalModelSource,
    PendingWork,
    model_at,
    model_per_batch,
    nothing_pending,
    settle_status,
)
from harness.families import MATRIX_POLICIES
from harness.local_model import ModelEndpoint
from harness.matrix_base import (
    DIVERGENT,
    FAMILY,
    NO_ANSWER,
    PREDICTION,
    TEMPLATES,
    VERSION,
    describe_target,
    make_item,
    make_items,
)
from harness.matrix_family import MATRIX_FAMILY
from harness.matrix_items import PilotFilter, PilotRecord
from harness.runner import NullProgress, ProgressSink
from harness.runs import create_run
from harness.settings import Settings
from harness.workspace import SeedPolicy
from ledger.client import Prediction, record_answer, record_answers
from ledger.errors import RevealRejected
from ledger.predictions import Ledger, RevealResult
from ledger.protocol import provenance, response_hash
from ledger.scoring import default_top1, penalty_scores
from ledger.store import RunAgent, Store, TrialOutcome, TrialRecord
from mindledger.canonical import canonical_json, content_hash
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix import SECOND_ORDER_PENALTY, distribution_scores
from reports.matrix_summary import (
    OUTCOMES,
    SIMULATE,
    SUITE,
    ZERO_SHOT,
    ItemOutcome,
    PredictionRecord,
    SecondOrderRecord,
    TargetRecord,
    check_conditions,
    matrix_params,
    observed_count,
    second_order_triples,
    summarise_outcomes,
    summarise_run,
)

__all__ = [
    "FAMILY",
    "GENERATOR",
    "MATRIX_FAMILY",
    "NO_ANSWER",
    "OUTCOMES",
    "SIMULATE",
    "SUITE",
    "TEMPLATES",
    "VERSION",
    "ZERO_SHOT",
    "ItemOutcome",
    "MatrixBatchResult",
    "PilotFilter",
    "PilotRecord",
    "PredictionRecord",
    "TargetRecord",
    "answer_distribution",
    "check_matrix_options",
    "create_matrix_run",
    "describe_target",
    "execute_matrix_batch",
    "execute_matrix_run",
    "habit",
    "is_matrix_run",
    "make_item",
    "make_items",
    "matrix_agents",
    "matrix_params",
    "matrix_run_done",
    "missing_matrix_items",
    "outcome_trials",
    "pilot_candidates",
    "pilot_items",
    "plan_matrix_run",
    "prediction_item",
    "run_matrix",
    "second_order_item",
    "suite_trials",
    "summarise_outcomes",
    "summarise_run",
]

GENERATOR = DIVERGENT

MatrixAgent = ChatAgent | ReferenceAgent

log = logging.getLogger("mindledger.matrix")

Observation = tuple[str, str, str]
"""(item id, question, the target's recorded answer): one past answer a predictor is shown."""


def prediction_item(
    item: Item,
    predictor: str,
    target: str,
    samples: int,
    condition: str = ZERO_SHOT,
    observed: Sequence[Observation] = (),
) -> Item:
    """The question put to ``predictor`` under ``condition``: a probability for each of
    ``item``'s choices that ``target`` gives it as its answer (for a failure item,
    :func:`harness.matrix_items.failure_prediction_item`: that ``target`` answers the underlying
    question correctly). ``zero-shot`` is the plain question; ``simulate`` prefixes an explicit
    instruction to simulate the target; ``observe:m`` appends ``observed``, the target's
    recorded answers to other items of the run (at most m are shown; the item's params name
    them)."""
    base = _plain_prediction_item(item, predictor, target, samples)
    if condition == ZERO_SHOT:
        return base
    mine = predictor == target
    name = "your copy" if mine else target
    params: dict[str, Any] = {**base.params, "condition": condition}
    if condition == SIMULATE:
        prompt = (
            f"Simulate {describe_target(predictor, target)}: imagine that you are {name}, "
            f"receiving the question below in a new conversation, reason as {name} would, and "
            "report the distribution of the answers it gives, not what you would answer.\n\n"
            + base.prompt
        )
    else:
        m = observed_count(condition)
        assert m is not None  # check_conditions refused anything else
        shown = list(observed)[:m]
        params["observed"] = [[iid, answer] for iid, _, answer in shown]
        lines = [
            f"{i}. Question: {question}\n   Answer: {answer}"
            for i, (_, question, answer) in enumerate(shown, 1)
        ]
        prompt = base.prompt + (
            f"\n\nFor reference, here are the answers {name} gave to {len(shown)} other "
            "question(s), each in a new conversation:\n" + "\n".join(lines)
            if shown
            else f"\n\n(No past answers of {name} could be shown.)"
        )
    return replace(base, prompt=prompt, params=params, id="")


def _plain_prediction_item(item: Item, predictor: str, target: str, samples: int) -> Item:
    if matrix_items.is_failure(item):
        return matrix_items.failure_prediction_item(item, predictor, target)
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
        generator=PREDICTION,
        version=VERSION,
        seed=item.seed,
        params={"item": item.id, "predictor": predictor, "target": target, "samples": samples},
        prompt=prompt,
        answer={"kind": "distribution", "choices": choices},
        truth={},
        meta={"role": "prediction", "self": predictor == target},
    )


def second_order_item(
    item: Item, predictor: str, about: str, target: str, samples: int
) -> Item:
    """The second-order question put to ``predictor`` P (seed 002 §15.2 protocol step 5,
    B9): the distribution that ``about`` Q (≠ P) gives when asked, zero-shot, its
    :func:`prediction_item` about ``target`` T. Its answer is a distribution over the choices
    of Q's question; its ground truth is Q's committed distribution."""
    first = prediction_item(item, about, target, samples)
    choices = [str(c) for c in first.answer["choices"]]
    who = describe_target(predictor, about)
    prompt = (
        f"Predict a prediction. {who[:1].upper() + who[1:]} is given the "
        "request below in a new conversation, and answers it with a probability for each of: "
        f"{', '.join(choices)}.\n\n"
        f"--- the request to {about} ---\n{first.prompt}\n--- end of the request ---\n\n"
        f"Do not answer the request yourself. Give, for each choice, the probability you expect "
        f"{about} to give it; your probabilities must sum to 1."
    )
    return Item(
        family=FAMILY,
        generator=PREDICTION,
        version=VERSION,
        seed=item.seed,
        params={"item": item.id, "predictor": predictor, "about": about, "target": target,
                "samples": samples, "order": 2},
        prompt=prompt,
        answer={"kind": "distribution", "choices": choices},
        truth={},
        meta={"role": "second_order", "self": False},
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


def _reference_second_order(
    agent: ReferenceAgent, item: Item, about: MatrixAgent, target: MatrixAgent
) -> _Reply:
    """A reference agent's second-order prediction: the distribution it expects ``about`` to
    commit for ``target`` on ``item``. The clairvoyant reproduces that prediction exactly
    (``about``'s reference prediction, which is deterministic), projection predicts its own
    habit, habit and random the uniform distribution."""
    choices = [str(c) for c in item.answer["choices"]]
    if agent.policy == "clairvoyant":
        assert isinstance(about, ReferenceAgent)  # checked by _check_agents
        return _Reply(_reference_prediction(about, item, target, "predict").answer)
    if agent.policy == "projection":
        return _Reply(answer_distribution(agent, item))
    return _Reply({c: 1.0 / len(choices) for c in choices})


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


def _target_trial(run_id: str, item: Item, rec: TargetRecord) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        agent=rec.agent,
        item_id=item.id,
        status="ok" if rec.samples else "api_error",
        transcript=[],
        answer=list(rec.samples),
        score={
            "scored_by": "matrix",
            "role": "target",
            "own_answer": rec.own,
            "own_error": rec.own_error,
            "samples": list(rec.samples),
            "errors": rec.errors,
            **({"source": rec.source} if rec.source else {}),
        },
        error=None if rec.samples else "every sample of the target failed",
    )


def _exposure_trial(run_id: str, item: Item, agent: str, reply: _Reply) -> TrialRecord:
    answer = None if reply.error is not None else matrix_items.observed_answer(item, reply.answer)
    return TrialRecord(
        run_id=run_id,
        agent=agent,
        item_id=item.id,
        status="api_error" if reply.error is not None else "ok",
        transcript=[],
        answer=answer,
        score={"scored_by": "matrix", "role": "exposure", "answer": answer},
        error=reply.error,
    )


def _prediction_trial(run_id: str, pitem: Item, item: Item, rec: PredictionRecord) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        agent=rec.predictor,
        item_id=pitem.id,
        status="api_error" if rec.outcome == "predictor_error" else "ok",
        transcript=[],
        answer=None if rec.distribution is None else dict(rec.distribution),
        score={
            "scored_by": "matrix",
            "role": "prediction",
            "item": item.id,
            "target": rec.target,
            "condition": rec.condition,
            "outcome": rec.outcome,
            "top1": rec.top1,
            "own_answer": rec.own_answer,
            "prediction": rec.prediction_id,
            "scores": None if rec.scores is None else dict(rec.scores),
            "observed": list(rec.observed),
        },
        score_value=None if rec.scores is None else float(rec.scores["top1_match"]),
        error=rec.error,
    )


def _second_order_trial(
    run_id: str, pitem: Item, item: Item, rec: SecondOrderRecord
) -> TrialRecord:
    return TrialRecord(
        run_id=run_id,
        agent=rec.predictor,
        item_id=pitem.id,
        status="api_error" if rec.outcome == "predictor_error" else "ok",
        transcript=[],
        answer=None if rec.distribution is None else dict(rec.distribution),
        score={
            "scored_by": "matrix",
            "role": "second_order",
            "item": item.id,
            "about": rec.about,
            "target": rec.target,
            "outcome": rec.outcome,
            "truth": None if rec.truth is None else dict(rec.truth),
            "prediction": rec.prediction_id,
            "scores": None if rec.scores is None else dict(rec.scores),
            "ledger_scores": None if rec.ledger_scores is None else dict(rec.ledger_scores),
        },
        score_value=None if rec.scores is None else float(rec.scores["top1_match"]),
        error=rec.error,
    )


Observations = Mapping[str, Sequence[Observation]]
"""Per target, its recorded answers to the run's exposure items (what ``observe:m`` shows)."""


def outcome_trials(
    run_id: str,
    item: Item,
    outcome: ItemOutcome,
    samples: int,
    observations: Observations | None = None,
) -> tuple[list[Item], list[TrialRecord]]:
    """The prediction items and the trials that store ``outcome``: one per target (on the
    base item) and one per prediction (on its :func:`prediction_item`)."""
    pitems: list[Item] = []
    trials = [_target_trial(run_id, item, rec) for rec in outcome.targets.values()]
    for (p, t, c), rec in outcome.predictions.items():
        pitem = prediction_item(item, p, t, samples, c, (observations or {}).get(t, ()))
        pitems.append(pitem)
        trials.append(_prediction_trial(run_id, pitem, item, rec))
    for (p, q, t), srec in outcome.second_order.items():
        pitem = second_order_item(item, p, q, t, samples)
        pitems.append(pitem)
        trials.append(_second_order_trial(run_id, pitem, item, srec))
    return pitems, trials


def _item_done(
    item: Item,
    names: Sequence[str],
    samples: int,
    done: set[tuple[str, str]],
    conditions: Sequence[str] = (ZERO_SHOT,),
    observations: Observations | None = None,
    *,
    second_order: bool = False,
) -> bool:
    """Whether every trial of ``item`` (each target's, each prediction's, each second-order
    prediction's with ``second_order``) is stored."""
    seen = observations or {}
    return all((t, item.id) in done for t in names) and all(
        (p, prediction_item(item, p, t, samples, c, seen.get(t, ())).id) in done
        for p in names
        for t in names
        for c in conditions
    ) and (not second_order or all(
        (p, second_order_item(item, p, q, t, samples).id) in done
        for p, q, t in second_order_triples(names)
    ))


def _observations(
    exposure: Sequence[Item], answers: Mapping[tuple[str, str], str | None], names: Sequence[str]
) -> dict[str, list[Observation]]:
    """Each target's answers to the exposure items, in their order (unanswered ones skipped)."""
    out: dict[str, list[Observation]] = {}
    for t in names:
        out[t] = [
            (e.id, e.prompt, answer)
            for e in exposure
            if (answer := answers.get((t, e.id))) is not None
        ]
    return out


def _stored_exposure(store: Store, run_id: str, ids: set[str]) -> dict[tuple[str, str], str | None]:
    out: dict[tuple[str, str], str | None] = {}
    for row in store.trials(run_id):
        if row.item_id in ids:
            score = json.loads(row.score_json) if row.score_json else {}
            out[row.agent, row.item_id] = score.get("answer")
    return out


FailureTrials = Mapping[str, Mapping[str, Sequence[bool]]]
"""Per agent, its correct flags by item id (its real trials, e.g. of a suite run)."""


def suite_trials(store: Store, run_id: str) -> dict[str, dict[str, list[bool]]]:
    """The correct flags of every scored trial of the run ``run_id``, per agent and item id
    (where failure items take their targets' observed answers)."""
    out: dict[str, dict[str, list[bool]]] = {}
    for row in store.trials(run_id):
        if row.status == "ok" and row.correct is not None:
            out.setdefault(row.agent, {}).setdefault(row.item_id, []).append(bool(row.correct))
    return out


# -- the matrix ----------------------------------------------------------------------------------


async def run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    *,
    samples: int = 10,
    concurrency: int = 64,
    n_boot: int = 2000,
    stats_seed: int = 0,
    store: Store | None = None,
    run_id: str | None = None,
    progress: ProgressSink | None = None,
    conditions: Sequence[str] = (ZERO_SHOT,),
    exposure: Sequence[Item] = (),
    failure_trials: FailureTrials | None = None,
    second_order: bool = False,
    past_seats: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the matrix: every ordered pair (P, T) of ``agents`` (P == T included) on every item
    under every condition, each prediction committed to ``ledger`` before T is queried on the
    item. Returns the matrix (see the module docstring and ``cells``/``self_advantage`` in the
    result); ``n_boot`` bootstrap replicates from ``stats_seed`` give its intervals.

    ``second_order`` (B9; needs the zero-shot condition) adds, per item, a second-order
    prediction for every (P, Q, T) with P ≠ Q (n²(n − 1) of them,
    :func:`reports.matrix_summary.second_order_triples`): P's distribution of what Q commits
    for T's answer (:func:`second_order_item`). Order of operations on an item: every
    second-order prediction is committed **before any first-order prediction is committed**
    (so before Q commits, let alone reveals); after the first-order reveals, Q's revealed
    top-1 is recorded against P's second-order prediction as its observation (provenance: the
    hash of Q's committed distribution) and it is revealed; the matrix scores P's distribution
    against Q's committed one (:func:`reports.matrix.distribution_scores`). Without a
    revealed zero-shot prediction of Q about T, P's stays committed (``unscored``) and expires.
    ``past_seats`` (B8; a stored run takes them from its agents' ``past_seat``) adds the
    ``past_seat`` section of a summary made in memory.

    ``conditions`` (:func:`reports.matrix_summary.check_conditions`): each (P, T, item,
    condition) is its own prediction, commit and trial. ``observe:m`` shows P the target's
    answers to the first m ``exposure`` items (other items of the run, asked of every target
    once before any prediction; never the item predicted). An open item's answers are recorded
    as cluster labels (:func:`harness.matrix_items.observed_answer`). A failure item is never
    asked: its observed answers are the target's ``failure_trials`` on the underlying item
    when it has some, else the target is asked the underlying question ``samples`` times and
    each reply scored by its family (a predictor's own answer, likewise, is whether it answers
    the question correctly).

    With ``store`` and ``run_id`` (a stored matrix run, :func:`create_matrix_run`), each item's
    outcome is stored as trials when the item is done (one transaction), items already stored
    are skipped (resuming), the run moves to ``running``, then ``complete`` (``incomplete``
    if a trial could not be stored; ``interrupted`` if this raises), and the matrix returned is
    the stored run's (:func:`summarise_run`). ``progress`` hears of every stored trial, per
    agent. An item interrupted midway runs again from the start: its earlier commitments stay
    in the ledger, never revealed, and expire with the penalty."""
    ran = await _run_matrix(
        agents, items, ledger, samples=samples, concurrency=concurrency, store=store,
        run_id=run_id, progress=progress, conditions=conditions, exposure=exposure,
        failure_trials=failure_trials, second_order=second_order,
    )
    if store is None:
        return summarise_outcomes(
            list(agents), items, samples, ran.outcomes, n_boot=n_boot, stats_seed=stats_seed,
            conditions=check_conditions(conditions), second_order=second_order,
            past_seats=past_seats,
        )
    assert run_id is not None
    return await asyncio.to_thread(
        summarise_run, store, run_id, n_boot=n_boot, stats_seed=stats_seed
    )


async def _run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    *,
    samples: int,
    concurrency: int,
    store: Store | None,
    run_id: str | None,
    progress: ProgressSink | None,
    conditions: Sequence[str],
    exposure: Sequence[Item],
    failure_trials: FailureTrials | None,
    second_order: bool,
    others_pending: PendingWork | None = nothing_pending,
    interrupt_on_failure: bool = True,
) -> _Ran:
    """:func:`run_matrix` without the summary: the items run and the status written.
    ``others_pending`` and ``interrupt_on_failure`` as for
    :func:`harness.execution.execute_batch` (a queued batch: the run's other batches; a
    failure leaves the status to the queue's retries)."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    if not agents:
        raise UserError("the matrix needs at least one agent")
    if (store is None) != (run_id is None):
        raise ValueError("give both store and run_id, or neither")
    conditions = check_conditions(conditions)
    needed = max((observed_count(c) or 0 for c in conditions), default=0)
    if needed > len(exposure):
        raise UserError(
            f"condition observe:{needed} needs {needed} exposure items; the run has "
            f"{len(exposure)}"
        )
    if second_order and ZERO_SHOT not in conditions:
        raise UserError(
            "second-order prediction needs the zero-shot condition: its ground truth is Q's "
            "committed zero-shot prediction"
        )
    _check_agents(agents)
    names = list(agents)
    triples = second_order_triples(names) if second_order else []
    clients = {p: ledger.client(p) for p in names}
    # `concurrency` bounds the model requests in flight; enough items are in flight to fill
    # it even when each is at its narrowest step (one own answer per agent).
    requests = asyncio.Semaphore(max(1, concurrency))
    sem = asyncio.Semaphore(max(1, ITEMS_PER_SLOT * -(-concurrency // len(names))))
    # The ledger's writes run in threads, off the event loop, and the ledger groups the
    # writes of concurrent threads into one transaction (group commit).
    writer = ThreadPoolExecutor(LEDGER_THREADS, thread_name_prefix="matrix-ledger")

    async def in_ledger(call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(writer, call, *args)

    async def ask(agent: MatrixAgent, item: Item, *key: Any) -> _Reply:
        if isinstance(agent, ReferenceAgent):
            return await _ask(agent, item, *key)
        async with requests:
            return await _ask(agent, item, *key)
    outcomes: dict[str, ItemOutcome] = {}
    sink = progress or NullProgress()
    exposure = list(exposure) if items else []
    exposed: dict[tuple[str, str], str | None] = {}
    done: set[tuple[str, str]] = set()
    if store is not None:
        assert run_id is not None
        done = await asyncio.to_thread(store.done_pairs, run_id)
        exposed = await asyncio.to_thread(
            _stored_exposure, store, run_id, {e.id for e in exposure}
        )
    missing = [(t, e) for t in names for e in exposure if (t, e.id) not in done]

    async def expose(t: str, e: Item) -> None:
        reply = await ask(agents[t], e, "exposure")
        trial = _exposure_trial(run_id or "", e, t, reply)
        exposed[t, e.id] = trial.answer
        if store is not None:
            (stored,) = await asyncio.to_thread(_store_trials, store, (), [trial])
            if stored and not isinstance(stored, Exception):
                sink.advance(t, correct=None, error=reply.error is not None)

    observations: dict[str, list[Observation]] = {}
    todo = list(items)
    if store is not None:
        assert run_id is not None
        per_agent = len(items) * (
            1 + len(names) * len(conditions) + len(triples) // len(names)
        ) + len(exposure)
        if missing:  # the exposure trials name no prediction item: start with those known
            observations = {}
            todo = list(items)
        else:
            observations = _observations(exposure, exposed, names)
            todo = [
                it for it in items
                if not _item_done(it, names, samples, done, conditions, observations,
                                 second_order=second_order)
            ]
        sink.start(
            dict.fromkeys(names, per_agent),
            {n: sum(1 for a, _ in done if a == n) for n in names},
        )
        if todo or missing:
            await asyncio.to_thread(
                store.transition_run, run_id, "running", unless=("running", "complete")
            )
    failed = 0
    item_writer = _ItemWriter(store) if store is not None else None

    async def run_item(item: Item) -> None:
        nonlocal failed
        async with sem:
            outcome = await _run_item(item)
        if store is None:
            outcomes[item.id] = outcome
            return
        assert run_id is not None and item_writer is not None
        pitems, trials = outcome_trials(run_id, item, outcome, samples, observations)
        results = await item_writer.write(pitems, trials)
        for trial, stored in zip(trials, results, strict=True):
            if isinstance(stored, Exception):
                failed += 1
                log.warning("matrix run %s: trial of %s on %s not stored: %s",
                            run_id, trial.agent, trial.item_id, stored)
            elif stored:
                sink.advance(trial.agent, correct=None, error=trial.status == "api_error")

    async def answer_of(agent: MatrixAgent, item: Item, *key: Any) -> tuple[_Reply, str | None]:
        """``agent``'s reply to ``item`` and the answer recorded for it: an open item's
        cluster label; for a failure item, whether its reply to the underlying question is
        correct."""
        if matrix_items.is_failure(item):
            question, source = matrix_items.failure_source(item)
            reply = await ask(agent, question, *key)
            value = matrix_items.observed_answer(question, reply.answer)
            return reply, matrix_items.failure_outcome(source, value)
        reply = await ask(agent, item, *key)
        return reply, matrix_items.observed_answer(item, reply.answer)

    async def _run_item(item: Item) -> ItemOutcome:
        # 1. predictors: own answer (projection baseline) and a distribution per target and
        #    condition, each in its own conversation; no target has been asked this item yet.
        own_replies = await asyncio.gather(*(answer_of(agents[p], item, "own") for p in names))
        own: dict[str, str | None] = {}
        own_errors: dict[str, str | None] = {}
        for p, (r, value) in zip(names, own_replies, strict=True):
            own[p] = None if r.error is not None or value == NO_ANSWER else value
            own_errors[p] = r.error
        keys = [(p, t, c) for p in names for t in names for c in conditions]

        async def predict(p: str, t: str, c: str) -> _Reply:
            agent = agents[p]
            key = ("predict",) if c == ZERO_SHOT else ("predict", c)
            if isinstance(agent, ReferenceAgent):
                return _reference_prediction(agent, item, agents[t], *key)
            pitem = prediction_item(item, p, t, samples, c, observations.get(t, ()))
            return await ask(agent, pitem, *key)

        async def predict_second(p: str, q: str, t: str) -> _Reply:
            agent = agents[p]
            if isinstance(agent, ReferenceAgent):
                return _reference_second_order(agent, item, agents[q], agents[t])
            return await ask(agent, second_order_item(item, p, q, t, samples), "second-order")

        dists, second_replies = await asyncio.gather(
            asyncio.gather(*(predict(p, t, c) for p, t, c in keys)),
            asyncio.gather(*(predict_second(p, q, t) for p, q, t in triples)),
        )
        # 2a. commit every second-order prediction before any first-order one (B9: P's
        #     prediction of Q's prediction is on the ledger before Q's is).
        second_preds: dict[tuple[str, str, str], Prediction] = {}
        second_records: dict[tuple[str, str, str], SecondOrderRecord] = {}
        for (p, q, t), reply in zip(triples, second_replies, strict=True):
            if reply.error is not None:
                second_records[p, q, t] = SecondOrderRecord(
                    p, q, t, "predictor_error", error=reply.error
                )
            elif not isinstance(reply.answer, Mapping):
                second_records[p, q, t] = SecondOrderRecord(p, q, t, "unparsed")
            else:
                second_preds[p, q, t] = clients[p].predict(
                    q,
                    second_order_item(item, p, q, t, samples).prompt,
                    reply.answer,
                    top1=reply.top1,
                    item=item.id,
                    condition={"protocol": "matrix", "order": 2, "of": t, "samples": samples},
                )
        await asyncio.gather(*(in_ledger(pred.commit) for pred in second_preds.values()))
        # 2b. commit every prediction about this item before any target hears it.
        preds: dict[tuple[str, str, str], Prediction] = {}
        records: dict[tuple[str, str, str], PredictionRecord] = {}
        for (p, t, c), reply in zip(keys, dists, strict=True):
            if reply.error is not None:
                records[p, t, c] = PredictionRecord(
                    p, t, "predictor_error", error=reply.error, condition=c
                )
            elif not isinstance(reply.answer, Mapping):
                records[p, t, c] = PredictionRecord(
                    p, t, "unparsed", own_answer=own[p], condition=c
                )
            else:
                protocol: dict[str, Any] = {"protocol": "matrix", "self": p == t,
                                            "samples": samples}
                if c != ZERO_SHOT:
                    protocol["condition"] = c
                pred = clients[p].predict(
                    t,
                    item.prompt,
                    reply.answer,
                    top1=reply.top1,
                    own_answer=own[p],
                    item=item.id,
                    condition=protocol,
                )
                preds[p, t, c] = pred
        await asyncio.gather(*(in_ledger(pred.commit) for pred in preds.values()))

        # 3. query each target `samples` times (a failure item: its real trials when it has
        #    some); every answer is recorded against every prediction about that target.
        answers: dict[str, list[str]] = {t: [] for t in names}
        errors = dict.fromkeys(names, 0)
        sources: dict[str, str | None] = dict.fromkeys(names)

        async def record(t: str, got: Sequence[tuple[str, str, str]]) -> None:
            """Record the target's answers, each (answer, request ref, raw reply), in order,
            against every prediction about it: one ledger request for all of them."""
            answers[t].extend(answer for answer, _, _ in got)
            about = [pred for (_, tt, _), pred in preds.items() if tt == t]
            await in_ledger(record_answers, about, [
                (answer, provenance("matrix", ref, response_hash(raw), target=t))
                for answer, ref, raw in got
            ])

        async def sample(t: str, k: int) -> tuple[str, str, str] | None:
            reply, answer = await answer_of(agents[t], item, "sample", k)
            if reply.error is not None:
                errors[t] += 1
                return None
            assert answer is not None
            raw = reply.raw if reply.raw is not None else answer
            return answer, f"matrix:{item.id}:{t}:{k}", raw

        asked: list[tuple[str, int]] = []
        recorded: list[Awaitable[None]] = []
        for t in names:
            known: tuple[str, ...] = ()
            if matrix_items.is_failure(item) and failure_trials and t in failure_trials:
                known = matrix_items.failure_answers(item, failure_trials[t])
            if known:
                sources[t] = "trials"
                recorded.append(record(t, [
                    (answer, f"trial:{item.meta['source']}:{t}:{k}", answer)
                    for k, answer in enumerate(known)
                ]))
            else:
                asked.extend((t, k) for k in range(samples))
        got = await asyncio.gather(*(sample(t, k) for t, k in asked))
        for t in names:
            mine = [g for (tt, _), g in zip(asked, got, strict=True) if tt == t and g is not None]
            if mine:
                recorded.append(record(t, mine))
        await asyncio.gather(*recorded)
        # 4. reveal and score.
        answered = [key for key, pred in preds.items() if pred.answers]
        revealed = dict(zip(answered, await asyncio.gather(
            *(in_ledger(_reveal, preds[key]) for key in answered)
        ), strict=True))
        # 5. second order: Q's revealed zero-shot prediction is the observation of P's.
        truths = {
            (q, t): preds[q, t, c] for q, t, c in answered
            if c == ZERO_SHOT and revealed[q, t, c][1] == "scored"
        }

        async def settle(key: tuple[str, str, str], pred: Prediction) -> None:
            p, q, t = key
            first = truths.get((q, t))
            common: dict[str, Any] = {"distribution": pred.body["distribution"],
                                      "prediction_id": pred.id}
            if first is None:  # nothing to compare with: stays committed, expires
                second_records[key] = SecondOrderRecord(p, q, t, "unscored", **common)
                return
            truth = first.body["distribution"]
            top1 = first.body["top1"] or default_top1(truth)
            source = provenance("matrix", f"second-order:{item.id}:{p}:{q}:{t}",
                                response_hash(canonical_json(truth)), target=q)
            await in_ledger(record_answer, [pred], str(top1), source)
            result, outcome = await in_ledger(_reveal, pred)
            second_records[key] = SecondOrderRecord(
                p, q, t, outcome, truth=truth, ledger_scores=dict(result.scores),
                scores=distribution_scores(pred.body["distribution"], truth)
                if outcome == "scored" else SECOND_ORDER_PENALTY,
                **common,
            )

        await asyncio.gather(*(settle(key, pred) for key, pred in second_preds.items()))
        for key, srec in list(second_records.items()):
            if srec.outcome == "unparsed" and (key[1], key[2]) in truths:
                truth = truths[key[1], key[2]].body["distribution"]
                second_records[key] = replace(srec, truth=truth, scores=SECOND_ORDER_PENALTY)
        for (p, t, c), pred in preds.items():
            common = {"own_answer": own[p], "prediction_id": pred.id, "condition": c,
                      "distribution": pred.body["distribution"], "top1": pred.body["top1"]}
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
        return ItemOutcome(
            item.id,
            {t: TargetRecord(t, own[t], tuple(answers[t]), errors[t], own_errors[t], sources[t])
             for t in names},
            {key: records[key] for key in keys},
            {key: second_records[key] for key in triples},
        )

    try:
        await asyncio.gather(*(expose(t, e) for t, e in missing))
        if missing:
            if store is not None:
                assert run_id is not None
                # the stored answers, not this process's: a batch running beside this one
                # may have stored its answer to an exposure item first, and every prediction
                # of the run must show the same past answers
                exposed = await asyncio.to_thread(
                    _stored_exposure, store, run_id, {e.id for e in exposure}
                )
            observations = _observations(exposure, exposed, names)
            if store is not None:
                assert run_id is not None
                done = await asyncio.to_thread(store.done_pairs, run_id)
                todo = [
                    it for it in items
                    if not _item_done(it, names, samples, done, conditions, observations,
                                 second_order=second_order)
                ]
        tasks = [asyncio.ensure_future(run_item(item)) for item in todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # gather leaves the other items running: stop them before the run is marked
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    except BaseException:
        if store is not None and interrupt_on_failure:
            assert run_id is not None
            await asyncio.to_thread(_interrupt_run, store, run_id)
        raise
    finally:
        sink.stop()
        # ledger writes already handed to the threads finish before this returns, so what
        # the ledger holds afterwards is all this run will ever write to it
        writer.shutdown(wait=True)
    if store is None:
        return _Ran(outcomes, len(todo), None)
    assert run_id is not None
    status = await asyncio.to_thread(_settle, store, run_id, others_pending)
    return _Ran(outcomes, len(todo), status)


@dataclass(frozen=True)
class _Ran:
    """What :func:`_run_matrix` did."""

    outcomes: dict[str, ItemOutcome]
    """Each item's outcome, by item id (kept only without a store)."""
    items: int
    """Items run (in a stored run: those that lacked a trial)."""
    status: str | None
    """The run status the completion bookkeeping wrote, if any."""


def _settle(store: Store, run_id: str, others_pending: PendingWork | None) -> str | None:
    """A matrix run's completion bookkeeping (as :func:`harness.execution.settle_run` for a
    suite run): every trial of every item stored (:func:`matrix_run_done`), ``complete``
    (only the first caller writes); else ``incomplete`` when ``others_pending()`` says no other
    batch of it is queued or running (None: that cannot be known, nothing is written). Returns
    the status written."""
    done = matrix_run_done(store, run_id)
    return settle_status(store, run_id, done=done, others_pending=others_pending)


LEDGER_THREADS = 48
"""Threads making a matrix's ledger writes: the ledger groups the writes of concurrent
threads into one transaction, so more threads make fewer, larger transactions."""
ITEMS_PER_SLOT = 2
"""Items in flight per request slot and agent: an item waiting on the ledger or the store
holds no request, so twice the items keep the requests in flight near the limit."""


def _reveal(pred: Prediction) -> tuple[RevealResult, str]:
    """Reveal and score ``pred``: its result and outcome (``scored``, or ``rejected``:
    recorded in the ledger with the penalty)."""
    try:
        return pred.reveal(), "scored"
    except RevealRejected as exc:
        return exc.result, "rejected"


def _store_trials(
    store: Store, pitems: Sequence[Item], trials: Sequence[TrialRecord]
) -> list[TrialOutcome]:
    store.add_items(pitems)
    with store.trial_group_writer() as write:
        return write(trials)


_Group = tuple[Sequence[Item], Sequence[TrialRecord], "asyncio.Future[list[TrialOutcome]]"]


class _ItemWriter:
    """Stores finished items' trials with group commit, on the event loop's side: while one
    group is being written (in a thread), the items finishing meanwhile wait, and the next
    write takes all of them (their prediction items, then their trials, each kind in one
    transaction). Each caller returns once its own trials are committed, with one outcome per
    trial, as :func:`_store_trials` gives them. A matrix run writes an item every few
    milliseconds: a transaction each would collide with the ledger's on the same database."""

    def __init__(self, store: Store):
        self.store = store
        self._pending: list[_Group] = []
        self._flushing: asyncio.Task[None] | None = None

    async def write(
        self, pitems: Sequence[Item], trials: Sequence[TrialRecord]
    ) -> list[TrialOutcome]:
        future: asyncio.Future[list[TrialOutcome]] = asyncio.get_running_loop().create_future()
        self._pending.append((pitems, trials, future))
        if self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                groups, self._pending = self._pending, []
                try:
                    results = await asyncio.to_thread(
                        _store_trials,
                        self.store,
                        [it for pitems, _, _ in groups for it in pitems],
                        [t for _, trials, _ in groups for t in trials],
                    )
                except BaseException as exc:
                    for _, _, future in groups:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                start = 0
                for _, trials, future in groups:
                    if not future.done():
                        future.set_result(results[start : start + len(trials)])
                    start += len(trials)
        finally:
            self._flushing = None


def _interrupt_run(store: Store, run_id: str) -> None:
    try:
        store.transition_run(run_id, "interrupted", unless=("complete",))
    except Exception:
        log.warning("could not mark matrix run %s interrupted", run_id, exc_info=True)


# -- stored matrix runs ------------------------------------------------------------------------


def is_matrix_run(store: Store, run_id: str) -> bool:
    """Whether ``run_id`` is a matrix run (its suite is ``matrix``)."""
    return store.get_run(run_id).suite == SUITE


def matrix_agents(planned: Sequence[RunAgent]) -> list[RunAgent]:
    """The agents of ``planned`` (a suite run's) that can take part in the matrix: every one
    but the reference agents whose policy has no meaning there, and the clairvoyant when a
    chat agent takes part (its targets' distributions must be known)."""

    def policy(ra: RunAgent) -> str | None:
        cfg = AgentSpec.from_json(ra.name, ra.spec).config
        return cfg.policy if cfg.adapter == "reference" else None

    kept = [ra for ra in planned if policy(ra) is None or policy(ra) in MATRIX_POLICIES]
    if any(policy(ra) is None for ra in kept):
        kept = [ra for ra in kept if policy(ra) != "clairvoyant"]
    return kept


def pilot_candidates(n_items: int, n_candidates: int | None) -> int:
    """How many candidates the pilot draws: ``n_candidates``, by default 5 × ``n_items``."""
    return 5 * n_items if n_candidates is None else n_candidates


def check_matrix_options(
    *,
    samples: int,
    conditions: Sequence[str],
    second_order: bool = False,
    pilot_kinds: Sequence[str] | None = None,
    n_candidates: int = 0,
) -> list[str]:
    """Refuse, with a UserError and before anything is stored, options a matrix run cannot
    take: fewer than one sample (two with a pilot, given ``pilot_kinds``), an unknown
    condition, second-order prediction without the zero-shot condition, unknown item kinds or
    more candidates than they hold. Pure; returns the conditions as
    :func:`~reports.matrix_summary.check_conditions` normalises them."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    checked = check_conditions(conditions)
    if second_order and ZERO_SHOT not in checked:
        raise UserError(
            "--second-order needs the zero-shot condition: its ground truth is Q's committed "
            "zero-shot prediction"
        )
    if pilot_kinds is not None:
        if samples < 2:
            raise UserError("the pilot needs --samples of at least 2 (or --no-pilot)")
        matrix_items.candidate_counts(pilot_kinds, n_candidates)
    return checked


def create_matrix_run(
    store: Store,
    settings: Settings,
    *,
    planned: Sequence[RunAgent],
    n_items: int,
    samples: int,
    seed: int | None = None,
    held_out: bool = False,
    accompanies: str | None = None,
    run_id: str | None = None,
    conditions: Sequence[str] = (ZERO_SHOT,),
    items: Sequence[Item] | None = None,
    exposure: Sequence[Item] | None = None,
    pilot: PilotRecord | None = None,
    second_order: bool = False,
) -> tuple[str, int]:
    """Store a matrix run (suite ``matrix``): its agents, its items and its params
    (``samples``, ``n_items``, the agents' names in order, ``accompanies``: the suite run it
    accompanies, ``conditions``, ``exposure``: the ids of the items every target answers once
    for the ``observe:m`` conditions, ``pilot``: the pilot's record, when one chose the
    items, ``second_order``: whether every (P, Q ≠ P, T) second-order prediction is made,
    and ``past_seats``: the agents declared ``past_seat``). Without ``items``, the first ``n_items`` divergent items of ``seed`` (drawn by the
    seed policy when None; held out when ``held_out``), and, when a condition observes, the
    next ones as exposure items. Returns (run id, seed)."""
    conditions = check_matrix_options(
        samples=samples, conditions=conditions, second_order=second_order
    )
    needed = max((observed_count(c) or 0 for c in conditions), default=0)
    if seed is None:
        seed = SeedPolicy.of(settings).draw_seed(held_out=held_out)
    if items is None:
        drawn = make_items(seed, n_items + needed)
        items, exposure = drawn[:n_items], drawn[n_items:]
    exposure = list(exposure or ())[:needed]
    if items and len(exposure) < needed:
        raise UserError(
            f"condition observe:{needed} needs {needed} exposure items; only {len(exposure)} "
            "are left beside the run's items"
        )
    if not items:
        exposure = []
    run_id, seed, _ = create_run(
        store,
        settings,
        suite=SUITE,
        planned=planned,
        seed=seed,
        held_out=held_out,
        run_id=run_id,
        items=[*items, *exposure],
        extra_params={
            "samples": samples,
            "n_items": n_items,
            "agents": [ra.name for ra in planned],
            "accompanies": accompanies,
            "conditions": list(conditions),
            "exposure": [e.id for e in exposure],
            "pilot": None if pilot is None else pilot.to_dict(),
            "second_order": second_order,
            "past_seats": [
                ra.name for ra in planned if AgentSpec.from_json(ra.name, ra.spec).config.past_seat
            ],
        },
    )
    return run_id, seed


def _exposure_pool(
    chosen: Sequence[Item], kept: Sequence[Item], candidates: Sequence[Item]
) -> list[Item]:
    """Items a pilot leaves for exposure: the kept ones beyond the ``chosen`` (the run's
    items), then the dropped ones; failure items aside (their targets are not asked them)."""
    taken = {it.id for it in chosen}
    kept_ids = {it.id for it in kept}
    extra = [it for it in kept if it.id not in taken]
    dropped = [it for it in candidates if it.id not in kept_ids]
    return [it for it in [*extra, *dropped] if not matrix_items.is_failure(it)]


async def pilot_items(
    agents: Mapping[str, MatrixAgent],
    seed: int,
    *,
    kinds: Sequence[str],
    n_candidates: int,
    samples: int,
    rule: PilotFilter | None = None,
    failure_trials: FailureTrials | None = None,
    concurrency: int = 64,
) -> tuple[list[Item], list[Item], PilotRecord]:
    """Draw ``n_candidates`` candidates of ``kinds`` from ``seed``
    (:func:`harness.matrix_items.candidate_counts`), ask every agent each of them ``samples``
    times and keep the divergent ones (:func:`harness.matrix_items.run_pilot`). Returns (the
    kept items, every candidate, the record)."""
    _check_agents(agents)
    pool = matrix_items.candidates(seed, matrix_items.candidate_counts(kinds, n_candidates))
    kept, record = await matrix_items.run_pilot(
        agents, pool, samples, _ask, rule=rule, trials=failure_trials, concurrency=concurrency
    )
    return kept, pool, record


def plan_matrix_run(
    store: Store,
    settings: Settings,
    *,
    planned: Sequence[RunAgent],
    n_items: int,
    samples: int,
    kinds: Sequence[str] = matrix_items.DEFAULT_KINDS,
    n_candidates: int | None = None,
    rule: PilotFilter | None = None,
    seed: int | None = None,
    held_out: bool = False,
    accompanies: str | None = None,
    conditions: Sequence[str] = (ZERO_SHOT,),
    concurrency: int = 64,
    local_base_url: ModelEndpoint | None = None,
    second_order: bool = False,
) -> tuple[str, int, PilotRecord]:
    """Pilot the candidates through every agent of ``planned``, then store the matrix run on
    the divergent ones (at most ``n_items``; :func:`create_matrix_run`) with the pilot's record
    in its params. ``n_candidates`` defaults to 5 × ``n_items``; ``rule`` to
    :class:`~harness.matrix_items.PilotFilter` with ``min_items`` at most ``n_items``. A
    failure candidate's answers come from the agents' trials in the suite run ``accompanies``
    when it has them. When the verdict is *not divergent*, the run is stored with no items:
    executing it asks nothing, and its summary says why instead of giving skill. Blocking;
    returns (run id, seed, record)."""
    n_candidates = pilot_candidates(n_items, n_candidates)
    conditions = check_matrix_options(
        samples=samples,
        conditions=conditions,
        second_order=second_order,
        pilot_kinds=kinds,
        n_candidates=n_candidates,
    )
    rule = rule or PilotFilter(min_items=min(PilotFilter().min_items, n_items))
    used_seed = SeedPolicy.of(settings).draw_seed(held_out=held_out) if seed is None else seed
    trials = suite_trials(store, accompanies) if accompanies else None

    async def go(base_url: ModelEndpoint | None) -> tuple[list[Item], list[Item], PilotRecord]:
        async with built_agents(
            planned, settings, seed=used_seed, store=None, local_base_url=base_url
        ) as agents:
            return await pilot_items(
                {a.name: a for a in agents},
                used_seed,
                kinds=kinds,
                n_candidates=n_candidates,
                samples=samples,
                rule=rule,
                failure_trials=trials,
                concurrency=concurrency,
            )

    if local_base_url is not None or not needs_local_model(planned):
        kept, pool, record = asyncio.run(go(local_base_url))
    else:
        with model_per_batch(settings)() as url:
            kept, pool, record = asyncio.run(go(url))
    chosen = kept[:n_items] if record.divergent else []
    run_id, seed = create_matrix_run(
        store,
        settings,
        planned=planned,
        n_items=n_items,
        samples=samples,
        seed=used_seed,
        held_out=held_out,
        accompanies=accompanies,
        conditions=conditions,
        items=chosen,
        exposure=_exposure_pool(chosen, kept, pool) if chosen else [],
        pilot=record,
        second_order=second_order,
    )
    return run_id, seed, record


def execute_matrix_run(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    *,
    concurrency: int = 64,
    n_boot: int = 2000,
    stats_seed: int = 0,
    progress: ProgressSink | None = None,
    local_base_url: ModelEndpoint | None = None,
) -> dict[str, Any]:
    """Run (or resume) a stored matrix run in this process, as one batch of all its items
    (:func:`execute_matrix_batch`; the embedded model started for it when an agent needs it,
    unless ``local_base_url`` is given). Blocking; returns :func:`summarise_run`'s matrix."""
    asyncio.run(
        execute_matrix_batch(
            store,
            settings,
            ledger,
            run_id,
            concurrency=concurrency,
            progress=progress,
            local_model=None if local_base_url is None else model_at(local_base_url),
        )
    )
    return summarise_run(store, run_id, n_boot=n_boot, stats_seed=stats_seed)


@dataclass(frozen=True)
class MatrixBatchResult:
    """What one :func:`execute_matrix_batch` did."""

    items: int
    """Items of the batch run (those that lacked a trial; 0: nothing was left to do)."""
    status: str | None
    """The run status the completion bookkeeping wrote (``complete`` or ``incomplete``)."""


async def execute_matrix_batch(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    *,
    item_ids: Collection[str] | None = None,
    concurrency: int = 64,
    progress: ProgressSink | None = None,
    local_model: LocalModelSource | None = None,
    others_pending: PendingWork | None = nothing_pending,
    interrupt_on_failure: bool = True,
) -> MatrixBatchResult:
    """Run the items ``item_ids`` (None: all) of a stored matrix run that lack a trial, each
    whole: every prediction about it committed, then its targets asked, its predictions
    revealed and its trials stored in one transaction. Then the run's completion bookkeeping.

    One path for the in-process matrix (:func:`execute_matrix_run`: every item, one batch)
    and a queue worker's batch (:mod:`harness.queue`): the agents rebuilt from their stored
    specs, the items (and exposure items) from storage, the failure items' trials from the
    suite run it accompanies. An item is the unit: its protocol needs every predictor and
    every target, so a batch takes whole items and two batches share no item. Exposure items
    (the ``observe:m`` conditions) are answered by whichever batch finds them unanswered
    first; every batch then reads the answers back from storage, so all show the same ones.

    ``local_model`` gives the embedded model (default: started for this batch) and is asked
    only if an agent needs it; ``others_pending`` and ``interrupt_on_failure`` as for
    :func:`harness.execution.execute_batch`. Idempotent: an item stored is not run again."""
    params = await asyncio.to_thread(matrix_params, store, run_id)
    run = await asyncio.to_thread(store.get_run, run_id)
    planned = await asyncio.to_thread(store.run_agents, run_id)
    order = {n: i for i, n in enumerate(params.get("agents") or [])}
    planned.sort(key=lambda ra: order.get(ra.name, len(order)))
    stored = list(await asyncio.to_thread(store.run_items, run_id))
    exposure_ids = list(params.get("exposure") or ())
    by_id = {it.id: it for it in stored}
    exposure = [by_id[i] for i in exposure_ids if i in by_id]
    items = [it for it in stored if it.id not in set(exposure_ids)]
    if not items:  # a pilot found the candidates not divergent: nothing to ask
        done = await asyncio.to_thread(
            store.transition_run, run_id, "complete", unless=("complete",)
        )
        return MatrixBatchResult(0, "complete" if done else None)
    if item_ids is not None:
        wanted = set(item_ids)
        if unknown := wanted.difference(it.id for it in items):
            log.warning(
                "matrix run %s has no item(s) %s; skipped", run_id, ", ".join(sorted(unknown))
            )
        items = [it for it in items if it.id in wanted]
    accompanies = params.get("accompanies")
    trials = (
        await asyncio.to_thread(suite_trials, store, str(accompanies))
        if accompanies and any(matrix_items.is_failure(it) for it in items)
        else None
    )
    source = local_model or model_per_batch(settings)
    stack = contextlib.ExitStack()
    try:
        base_url = (
            await asyncio.to_thread(lambda: stack.enter_context(source()))
            if needs_local_model(planned)
            else None
        )
        async with built_agents(
            planned, settings, seed=run.seed, store=None, local_base_url=base_url
        ) as agents:
            ran = await _run_matrix(
                {a.name: a for a in agents},
                items,
                ledger,
                samples=int(params["samples"]),
                concurrency=concurrency,
                store=store,
                run_id=run_id,
                progress=progress,
                conditions=params.get("conditions") or (ZERO_SHOT,),
                exposure=exposure,
                failure_trials=trials,
                second_order=bool(params.get("second_order")),
                others_pending=others_pending,
                interrupt_on_failure=interrupt_on_failure,
            )
    finally:
        await asyncio.to_thread(stack.close)
    return MatrixBatchResult(ran.items, ran.status)


def missing_matrix_items(store: Store, run_id: str) -> list[str]:
    """Ids of the matrix run's items (not its exposure items) without every trial, in the
    run's order: what is left to execute. With an exposure item unanswered, every item (the
    ids of its ``observe:m`` predictions depend on those answers)."""
    return _missing(store, run_id)[1]


def matrix_run_done(store: Store, run_id: str) -> bool:
    """Whether the stored matrix run has every trial: each target's answer to every exposure
    item, and every item's — its targets', its predictions' (every condition) and, with
    second order, its second-order predictions'."""
    exposed, missing = _missing(store, run_id)
    return exposed and not missing


def _missing(store: Store, run_id: str) -> tuple[bool, list[str]]:
    """(whether every target answered every exposure item, :func:`missing_matrix_items`),
    from what the run has stored."""
    params = matrix_params(store, run_id)
    names = [ra.name for ra in store.run_agents(run_id)]
    exposure_ids = list(params.get("exposure") or ())
    stored = list(store.run_items(run_id))
    by_id = {it.id: it for it in stored}
    exposure = [by_id[i] for i in exposure_ids if i in by_id]
    items = [it for it in stored if it.id not in set(exposure_ids)]
    done = store.done_pairs(run_id)
    if any((t, e.id) not in done for t in names for e in exposure):
        return False, [it.id for it in items]
    observations = _observations(
        exposure, _stored_exposure(store, run_id, set(exposure_ids)), names
    )
    samples = int(params["samples"])
    conditions = check_conditions(params.get("conditions") or (ZERO_SHOT,))
    second_order = bool(params.get("second_order"))
    return True, [
        it.id for it in items
        if not _item_done(it, names, samples, done, conditions, observations,
                          second_order=second_order)
    ]
