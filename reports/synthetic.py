"""Synthetic runs whose trials are drawn from known accuracies: fixtures for tests and benches.

:func:`synthetic_run` builds NestToM items (every depth, false and true belief, behaviour and
judgment questions on some stories), level-k game items and A/B/C scenarios with the meta the
generators use, then draws each agent's trials from the accuracies its
:class:`SyntheticAgent` declares. Pure: all randomness comes from the generator passed in.
:meth:`SyntheticRun.write` stores it through :class:`ledger.store.Store`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ledger.store import RunAgent, Store, TrialRecord
from mindledger.items import Item
from reports.data import DEPTH_ORDER, RunData, depth_label_number, run_data

__all__ = ["SyntheticAgent", "SyntheticRun", "logistic_accuracy", "synthetic_items", "synthetic_run"]

CHOICES = ("drawer", "basket", "box", "cupboard")
GAMES = ("11-20", "beauty-contest")
CONDITIONS = ("recursive", "inductive")


def logistic_accuracy(d50: float, slope: float, chance: float, ceiling: float = 1.0
                      ) -> Callable[[float], float]:
    """Accuracy as a function of depth, ``sigmoid(a + slope·depth)``, with ``a`` chosen so that
    the curve crosses ``chance + (ceiling − chance)/2`` at depth ``d50`` (the D50 definition)."""
    half = chance + (ceiling - chance) / 2.0
    a = math.log(half / (1.0 - half)) - slope * d50

    def f(depth: float) -> float:
        return 1.0 / (1.0 + math.exp(-(a + slope * depth)))

    return f


@dataclass(frozen=True)
class SyntheticAgent:
    """How an agent answers: probabilities of a correct answer by item kind.

    ``fb_accuracy`` maps a numeric depth to the false-belief accuracy; ``tb_accuracy`` is the
    true-belief accuracy. ``leak_share`` of wrong false-belief answers are coded
    ``reality_leak`` and ``projection_share`` ``projection``; the rest ``truncation:<d-1>``.
    ``confidence_noise`` is the sd of stated confidence around the true probability (None: no
    confidence stated). ``api_error_rate`` of trials fail with an API error.
    """

    name: str
    fb_accuracy: Callable[[float], float]
    tb_accuracy: float = 0.97
    role: str = "agent"
    base_agent: str | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)
    behaviour_accuracy: float | None = None
    judgment_accuracy: float = 0.8
    game_accuracy: float = 0.6
    within_one_extra: float = 0.2
    abc_accuracy: float = 0.7
    leak_share: float = 0.5
    projection_share: float = 0.2
    confidence_noise: float | None = 0.1
    api_error_rate: float = 0.0


@dataclass
class SyntheticRun:
    """Items, agents and trials of a synthetic run."""

    items: list[Item]
    agents: list[RunAgent]
    trials: list[TrialRecord]

    def write(self, store: Store, run_id: str, *, held_out: bool = False, seed: int = 0) -> None:
        """Store the run through the :class:`~ledger.store.Store` (one transaction per trial)."""
        store.create_run(
            run_id, suite="synthetic", seed=seed, held_out=held_out, params={"synthetic": True},
            agents=self.agents, items=self.items,
        )
        for t in self.trials:
            store.record_trial(
                TrialRecord(**{**t.__dict__, "run_id": run_id})  # type: ignore[arg-type]
            )
        store.set_run_status(run_id, "complete", finished=True)

    def run_data(self, run_id: str = "synthetic", *, held_out: bool = False) -> RunData:
        """The run as :class:`~reports.data.RunData`, without a database (for fast tests)."""
        from mindledger.canonical import canonical_json

        def js(v: Any) -> str | None:
            return None if v is None else canonical_json(v).decode("utf-8")

        trials = [
            {
                "agent": t.agent,
                "item_id": t.item_id,
                "status": t.status,
                "correct": t.correct,
                "confidence": t.confidence,
                "score_value": t.score_value,
                "primary_error": t.primary_error,
                "tokens_in": t.tokens_in,
                "tokens_out": t.tokens_out,
                "latency_s": t.latency_s,
                "score_json": js(t.score),
                "answer_json": js(t.answer),
                "error": t.error,
            }
            for t in self.trials
        ]
        run = {"id": run_id, "suite": "synthetic", "seed": 0, "held_out": held_out,
               "status": "complete", "created_at": None, "finished_at": None, "params": {}}
        return run_data(run, self.agents, [it.to_dict() for it in self.items], trials)


def _item(family: str, seed: int, meta: dict[str, Any], truth: Any, answer: dict[str, Any]
          ) -> Item:
    return Item(
        family=family,
        generator=f"synthetic-{family}",
        version="1",
        seed=seed,
        params={},
        prompt=f"synthetic {family} item {seed}",
        answer=answer,
        truth={"answer": truth},
        meta=meta,
    )


def synthetic_items(
    *,
    stories: int = 60,
    depths: Sequence[str] = DEPTH_ORDER,
    lengths: Sequence[int] = (6, 12, 20),
    behaviour_every: int = 3,
    games: int = 0,
    abc_scenarios: int = 0,
    items_per_game_cell: int = 4,
) -> list[Item]:
    """NestToM items for ``stories`` stories (one false- and one true-belief belief question
    per depth; no false-belief R0), behaviour and judgment questions at R1–R3 on every
    ``behaviour_every``-th story (0: none), then level-k game items (``games`` games x 2
    conditions x target depths 1–4 x ``items_per_game_cell``) and ``abc_scenarios`` A/B/C
    scenarios per game."""
    items: list[Item] = []
    choice = {"kind": "choice", "choices": list(CHOICES)}
    seed = 0
    for s in range(stories):
        length = lengths[s % len(lengths)]
        for label in depths:
            dn = depth_label_number(label)
            for belief in ("false", "true"):
                if belief == "false" and dn == 0:
                    continue
                questions = ["belief"]
                if behaviour_every and s % behaviour_every == 0 and 1 <= dn <= 3 and label in (
                    "R1", "R2", "R3"
                ):
                    questions += ["behaviour", "judgment"]
                for q in questions:
                    meta = {
                        "depth": label,
                        "depth_n": int(dn),
                        "belief": belief,
                        "mechanism": "absence",
                        "length": length,
                        "agents": 3,
                        "form": "narrative",
                        "question": q,
                        "story_id": f"story-{s}",
                    }
                    seed += 1
                    items.append(_item("nesttom", seed, meta, CHOICES[seed % 4], choice))
    for g in range(games):
        game = GAMES[g % len(GAMES)] + ("" if g < len(GAMES) else f"-{g}")
        for cond in CONDITIONS:
            for td in range(1, 5):
                for _ in range(items_per_game_cell):
                    seed += 1
                    meta = {"game": game, "condition": cond, "target_depth": td,
                            "opponent_level": td - 1, "lambda": 1.0, "variant": "base"}
                    items.append(_item("games", seed, meta, 20 - td,
                                       {"kind": "integer", "min": 11, "max": 20}))
        for sc in range(abc_scenarios):
            for q, truth in zip("ABC", (17, 11, 18), strict=True):
                seed += 1
                meta = {"game": game, "question": q, "scenario_id": f"{game}-sc{sc}",
                        "variant": "base"}
                items.append(_item("games", seed, meta, truth,
                                   {"kind": "integer", "min": 11, "max": 20}))
    return items


def synthetic_run(
    rng: np.random.Generator,
    agents: Sequence[SyntheticAgent],
    items: Sequence[Item] | None = None,
    **item_kwargs: Any,
) -> SyntheticRun:
    """Draw every agent's trials on the same items from its declared accuracies."""
    its = list(items) if items is not None else synthetic_items(**item_kwargs)
    trials: list[TrialRecord] = []
    run_agents = [
        RunAgent(a.name, a.role, dict(a.spec) or {"adapter": "synthetic"}, a.base_agent)
        for a in agents
    ]
    for a in agents:
        u = rng.random((len(its), 4))
        for i, it in enumerate(its):
            m = it.meta
            if u[i, 3] < a.api_error_rate:
                trials.append(TrialRecord(
                    run_id="", agent=a.name, item_id=it.id, status="api_error", transcript=[],
                    error="HTTP 503 from the endpoint",
                ))
                continue
            details: dict[str, Any] = {}
            depth = float(m.get("depth_n", 0))
            if it.family == "nesttom":
                q = m.get("question")
                if q == "behaviour":
                    p = a.behaviour_accuracy if a.behaviour_accuracy is not None else (
                        a.fb_accuracy(depth) if m["belief"] == "false" else a.tb_accuracy
                    )
                elif q == "judgment":
                    p = a.judgment_accuracy
                elif m["belief"] == "false":
                    p = a.fb_accuracy(depth)
                else:
                    p = a.tb_accuracy
            elif m.get("question") in ("A", "B", "C"):
                p = a.abc_accuracy
                if m["question"] == "C":
                    details["log_score"] = float(math.log(0.2 + 0.6 * u[i, 1]))
                    details["brier"] = float(0.2 + 0.5 * u[i, 2])
            else:
                p = a.game_accuracy
            correct = bool(u[i, 0] < p)
            primary = None
            codes: list[str] = []
            if not correct and it.family == "nesttom":
                if m.get("belief") == "false" and m.get("question") == "belief":
                    if u[i, 1] < a.leak_share:
                        primary = "reality_leak"
                    elif u[i, 1] < a.leak_share + a.projection_share:
                        primary = "projection"
                    elif depth >= 1:
                        primary = f"truncation:{int(depth) - 1}"
                    else:
                        primary = "other"
                else:
                    primary = "other"
                codes = [primary]
            if it.family == "games" and m.get("question") not in ("A", "B", "C"):
                td = int(m["target_depth"])
                details["within_one"] = correct or bool(u[i, 1] < a.within_one_extra)
                details["K_B"] = td if correct else (td - 1 if u[i, 2] < 0.7 else None)
                details["K_L"] = td if u[i, 2] < 0.8 else None
                details["br_consistent"] = bool(u[i, 1] < 0.9)
            conf = None
            if a.confidence_noise is not None:
                conf = float(np.clip(p + a.confidence_noise * (u[i, 2] - 0.5) * 3.4, 0.0, 1.0))
            truth = it.truth["answer"]
            answer = truth if correct else "other"
            trials.append(TrialRecord(
                run_id="", agent=a.name, item_id=it.id, status="ok", transcript=[],
                answer=answer, confidence=conf, correct=correct,
                score_value=1.0 if correct else 0.0, primary_error=primary,
                score={"correct": correct, "value": 1.0 if correct else 0.0,
                       "error_codes": codes, "primary_error": primary, "details": details},
                tokens_in=300 + int(40 * depth), tokens_out=20 + int(10 * depth),
                latency_s=0.5 + 0.1 * depth,
            ))
    return SyntheticRun(its, run_agents, trials)
