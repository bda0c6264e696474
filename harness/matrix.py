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
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness.agents import ChatAgent, ReferenceAgent
from harness.build import AgentSpec, built_agents, needs_local_model
from harness.execution import model_per_batch
from harness.families import MATRIX_POLICIES
from harness.matrix_family import (
    DIVERGENT,
    FAMILY,
    MATRIX_FAMILY,
    PREDICTION,
    TEMPLATES,
    VERSION,
    make_item,
    make_items,
)
from harness.runner import NullProgress, ProgressSink
from harness.runs import create_run
from harness.settings import Settings
from harness.workspace import SeedPolicy
from ledger.client import Prediction
from ledger.errors import RevealRejected
from ledger.predictions import Ledger
from ledger.protocol import provenance, response_hash
from ledger.scoring import penalty_scores
from ledger.store import RunAgent, Store, TrialOutcome, TrialRecord
from mindledger.canonical import content_hash
from mindledger.errors import UserError
from mindledger.items import Item
from reports.matrix_summary import (
    OUTCOMES,
    SUITE,
    ItemOutcome,
    PredictionRecord,
    TargetRecord,
    matrix_params,
    summarise_outcomes,
    summarise_run,
)

__all__ = [
    "FAMILY",
    "GENERATOR",
    "MATRIX_FAMILY",
    "NO_ANSWER",
    "OUTCOMES",
    "SUITE",
    "TEMPLATES",
    "VERSION",
    "ItemOutcome",
    "PredictionRecord",
    "TargetRecord",
    "answer_distribution",
    "create_matrix_run",
    "execute_matrix_run",
    "habit",
    "is_matrix_run",
    "make_item",
    "make_items",
    "matrix_agents",
    "matrix_params",
    "outcome_trials",
    "prediction_item",
    "run_matrix",
    "summarise_outcomes",
    "summarise_run",
]

GENERATOR = DIVERGENT
NO_ANSWER = "(no answer)"
"""The answer recorded for a target reply with no parseable answer."""

MatrixAgent = ChatAgent | ReferenceAgent

log = logging.getLogger("mindledger.matrix")

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
        generator=PREDICTION,
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
        },
        error=None if rec.samples else "every sample of the target failed",
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


def outcome_trials(
    run_id: str, item: Item, outcome: ItemOutcome, samples: int
) -> tuple[list[Item], list[TrialRecord]]:
    """The prediction items and the trials that store ``outcome``: one per target (on the
    base item) and one per prediction (on its :func:`prediction_item`)."""
    pitems: list[Item] = []
    trials = [_target_trial(run_id, item, rec) for rec in outcome.targets.values()]
    for (p, t), rec in outcome.predictions.items():
        pitem = prediction_item(item, p, t, samples)
        pitems.append(pitem)
        trials.append(_prediction_trial(run_id, pitem, item, rec))
    return pitems, trials


def _item_done(item: Item, names: Sequence[str], samples: int, done: set[tuple[str, str]]) -> bool:
    """Whether every trial of ``item`` (each target's, each prediction's) is stored."""
    return all((t, item.id) in done for t in names) and all(
        (p, prediction_item(item, p, t, samples).id) in done for p in names for t in names
    )


# -- the matrix ----------------------------------------------------------------------------------


async def run_matrix(
    agents: Mapping[str, MatrixAgent],
    items: Sequence[Item],
    ledger: Ledger,
    *,
    samples: int = 3,
    concurrency: int = 4,
    n_boot: int = 2000,
    stats_seed: int = 0,
    store: Store | None = None,
    run_id: str | None = None,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """Run the matrix: every ordered pair (P, T) of ``agents`` (P == T included) on every item,
    each prediction committed to ``ledger`` before T is queried on the item. Returns the
    matrix (see the module docstring and ``cells``/``self_advantage`` in the result);
    ``n_boot`` bootstrap replicates from ``stats_seed`` give its intervals.

    With ``store`` and ``run_id`` (a stored matrix run, :func:`create_matrix_run`), each item's
    outcome is stored as trials when the item is done (one transaction), items already stored
    are skipped (resuming), the run moves to ``running``, then ``complete`` (``incomplete``
    if a trial could not be stored; ``interrupted`` if this raises), and the matrix returned is
    the stored run's (:func:`summarise_run`). ``progress`` hears of every stored trial, per
    agent. An item interrupted midway runs again from the start: its earlier commitments stay
    in the ledger, never revealed, and expire with the penalty."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    if not agents:
        raise UserError("the matrix needs at least one agent")
    if (store is None) != (run_id is None):
        raise ValueError("give both store and run_id, or neither")
    _check_agents(agents)
    names = list(agents)
    clients = {p: ledger.client(p) for p in names}
    sem = asyncio.Semaphore(max(1, concurrency))
    outcomes: dict[str, ItemOutcome] = {}
    sink = progress or NullProgress()
    todo = list(items)
    if store is not None:
        assert run_id is not None
        done = await asyncio.to_thread(store.done_pairs, run_id)
        todo = [it for it in items if not _item_done(it, names, samples, done)]
        per_agent = len(items) * (1 + len(names))
        sink.start(
            dict.fromkeys(names, per_agent),
            {n: sum(1 for a, _ in done if a == n) for n in names},
        )
        if todo:
            await asyncio.to_thread(
                store.transition_run, run_id, "running", unless=("running", "complete")
            )
    failed = 0

    async def run_item(item: Item) -> None:
        nonlocal failed
        async with sem:
            outcome = await _run_item(item)
        if store is None:
            outcomes[item.id] = outcome
            return
        assert run_id is not None
        pitems, trials = outcome_trials(run_id, item, outcome, samples)
        results = await asyncio.to_thread(_store_trials, store, pitems, trials)
        for trial, stored in zip(trials, results, strict=True):
            if isinstance(stored, Exception):
                failed += 1
                log.warning("matrix run %s: trial of %s on %s not stored: %s",
                            run_id, trial.agent, trial.item_id, stored)
            elif stored:
                sink.advance(trial.agent, correct=None, error=trial.status == "api_error")

    async def _run_item(item: Item) -> ItemOutcome:
        # 1. predictors: own answer (projection baseline) and a distribution per target, each in
        #    its own conversation; no target has been asked this item yet.
        own_replies = await asyncio.gather(*(_ask(agents[p], item, "own") for p in names))
        own: dict[str, str | None] = {}
        own_errors: dict[str, str | None] = {}
        for p, r in zip(names, own_replies, strict=True):
            own[p] = r.answer if isinstance(r.answer, str) else None
            own_errors[p] = r.error
        pairs = [(p, t) for p in names for t in names]

        async def predict(p: str, t: str) -> _Reply:
            agent = agents[p]
            if isinstance(agent, ReferenceAgent):
                return _reference_prediction(agent, item, agents[t], "predict")
            return await _ask(agent, prediction_item(item, p, t, samples), "predict")

        dists = await asyncio.gather(*(predict(p, t) for p, t in pairs))
        # 2. commit every prediction about this item before any target hears it.
        preds: dict[tuple[str, str], Prediction] = {}
        records: dict[tuple[str, str], PredictionRecord] = {}
        for (p, t), reply in zip(pairs, dists, strict=True):
            if reply.error is not None:
                records[p, t] = PredictionRecord(p, t, "predictor_error", error=reply.error)
            elif not isinstance(reply.answer, Mapping):
                records[p, t] = PredictionRecord(p, t, "unparsed", own_answer=own[p])
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
        answers: dict[str, list[str]] = {t: [] for t in names}
        errors = dict.fromkeys(names, 0)

        async def sample(t: str, k: int) -> None:
            reply = await _ask(agents[t], item, "sample", k)
            if reply.error is not None:
                errors[t] += 1
                return
            answer = reply.answer if isinstance(reply.answer, str) else NO_ANSWER
            answers[t].append(answer)
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
            common = {"own_answer": own[p], "prediction_id": pred.id,
                      "distribution": pred.body["distribution"], "top1": pred.body["top1"]}
            if not pred.answers:  # stays committed; the ledger expires it with the penalty
                records[p, t] = PredictionRecord(p, t, "unscored", **common)
                continue
            try:
                result = pred.reveal()
                outcome = "scored"
            except RevealRejected as exc:  # recorded in the ledger with the penalty
                result = exc.result
                outcome = "rejected"
            records[p, t] = PredictionRecord(
                p, t, outcome, scores=dict(result.scores), observed=tuple(pred.answers), **common
            )
        for (p, t), rec in list(records.items()):
            if rec.outcome == "unparsed" and answers[t]:
                # no parseable prediction: scored like a prediction never revealed, the worst
                observed = tuple(answers[t])
                records[p, t] = replace(rec, scores=penalty_scores(observed), observed=observed)
        return ItemOutcome(
            item.id,
            {t: TargetRecord(t, own[t], tuple(answers[t]), errors[t], own_errors[t])
             for t in names},
            {pair: records[pair] for pair in pairs},
        )

    try:
        await asyncio.gather(*(run_item(item) for item in todo))
    except BaseException:
        if store is not None:
            assert run_id is not None
            await asyncio.to_thread(_interrupt_run, store, run_id)
        raise
    finally:
        sink.stop()
    if store is None:
        return summarise_outcomes(
            names, items, samples, outcomes, n_boot=n_boot, stats_seed=stats_seed
        )
    assert run_id is not None
    complete = await asyncio.to_thread(_run_done, store, run_id, names, samples)
    await asyncio.to_thread(
        store.transition_run,
        run_id,
        "complete" if complete else "incomplete",
        unless=("complete",) if complete else ("complete", "incomplete"),
    )
    return await asyncio.to_thread(
        summarise_run, store, run_id, n_boot=n_boot, stats_seed=stats_seed
    )


def _store_trials(
    store: Store, pitems: Sequence[Item], trials: Sequence[TrialRecord]
) -> list[TrialOutcome]:
    store.add_items(pitems)
    with store.trial_group_writer() as write:
        return write(trials)


def _run_done(store: Store, run_id: str, names: Sequence[str], samples: int) -> bool:
    """Whether every item of the stored run has every trial."""
    done = store.done_pairs(run_id)
    return all(_item_done(it, names, samples, done) for it in store.run_items(run_id))


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
) -> tuple[str, int]:
    """Store a matrix run (suite ``matrix``): its agents, its ``n_items`` divergent items from
    ``seed`` (drawn by the seed policy when None; held out when ``held_out``) and its params
    (``samples``, ``n_items``, the agents' names in order, ``accompanies``: the suite run it
    accompanies). Returns (run id, seed)."""
    if samples < 1:
        raise UserError("--samples must be at least 1")
    if seed is None:
        seed = SeedPolicy.of(settings).draw_seed(held_out=held_out)
    run_id, seed, _ = create_run(
        store,
        settings,
        suite=SUITE,
        planned=planned,
        seed=seed,
        held_out=held_out,
        run_id=run_id,
        items=make_items(seed, n_items),
        extra_params={
            "samples": samples,
            "n_items": n_items,
            "agents": [ra.name for ra in planned],
            "accompanies": accompanies,
        },
    )
    return run_id, seed


def execute_matrix_run(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    *,
    concurrency: int = 4,
    n_boot: int = 2000,
    stats_seed: int = 0,
    progress: ProgressSink | None = None,
    local_base_url: str | None = None,
) -> dict[str, Any]:
    """Run (or resume) a stored matrix run: its agents rebuilt from their stored specs, its
    items from storage, the embedded model started for it when an agent needs it (unless
    ``local_base_url`` is given). Blocking; returns :func:`summarise_run`'s matrix."""
    params = matrix_params(store, run_id)
    run = store.get_run(run_id)
    planned = store.run_agents(run_id)
    order = {n: i for i, n in enumerate(params.get("agents") or [])}
    planned.sort(key=lambda ra: order.get(ra.name, len(order)))
    items = list(store.run_items(run_id))

    async def go(base_url: str | None) -> dict[str, Any]:
        async with built_agents(
            planned, settings, seed=run.seed, store=None, local_base_url=base_url
        ) as agents:
            return await run_matrix(
                {a.name: a for a in agents},
                items,
                ledger,
                samples=int(params["samples"]),
                concurrency=concurrency,
                n_boot=n_boot,
                stats_seed=stats_seed,
                store=store,
                run_id=run_id,
                progress=progress,
            )

    if local_base_url is not None or not needs_local_model(planned):
        return asyncio.run(go(local_base_url))
    with model_per_batch(settings)() as url:
        return asyncio.run(go(url))
