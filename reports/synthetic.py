"""Synthetic runs whose trials are drawn from known accuracies: fixtures for tests and benches,
and the ground truth of the statistics' simulation study.

:func:`synthetic_run` builds NestToM items (every depth, false and true belief, behaviour and
judgment questions on some stories), level-k game items and A/B/C scenarios with the meta the
generators use, then draws each agent's trials from the accuracies its
:class:`SyntheticAgent` declares. Pure: all randomness comes from the generator passed in.
:meth:`SyntheticRun.write` stores it through :class:`ledger.store.Store`.

For the simulation study (:mod:`reports.simulation`, ``bench/bench_stats.py``):

- :func:`suite_design` builds items with the structure of the shipped suites (``quick`` and
  ``baseline`` of :mod:`harness.run.suites`: B1's depth x belief cells with the generator's crossing
  of mechanism and surface form, R0 reality questions in both cells, B2's length sweep, B4's
  applied questions, level-k game trials and A/B/C scenarios), with ``block`` in their meta;
- :func:`simulate` draws a run's trials as columns, straight into
  :class:`~reports._data.RunData` (the same draws as :func:`synthetic_run`, without storage);
- :func:`expected_figures` gives the value every figure of the profile estimates, computed
  exactly from an agent's declared probabilities on the design's items.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.store import RunAgent, Store, TrialRecord
from mindledger.items import Item
from reports._data import (
    DEPTH_ORDER,
    ItemTable,
    RunData,
    TrialTable,
    depth_label_number,
    run_data,
    trial_columns,
)

__all__ = [
    "SyntheticAgent",
    "SyntheticRun",
    "expected_figures",
    "false_belief_spread",
    "logistic_accuracy",
    "simulate",
    "suite_design",
    "synthetic_items",
    "synthetic_run",
]

CHOICES = ("drawer", "basket", "box", "cupboard")
GAMES = ("11-20", "beauty-contest")
CONDITIONS = ("recursive", "inductive")
MECHANISMS = ("absence", "secret-observation", "lie", "garble", "stale-then-corrected")
FORMS = ("narrative", "chat", "log")
APPLIED_DEPTHS = ("R1", "R2", "R3")
B2_LENGTHS = (6, 12, 20)


def logistic_accuracy(d50: float, slope: float, chance: float, ceiling: float = 1.0
                      ) -> Callable[[float], float]:
    """Accuracy as a function of depth, ``sigmoid(a + slope·depth)``, with ``a`` chosen so that
    the curve crosses ``chance + (ceiling − chance)/2`` at depth ``d50`` (the D50 definition)."""
    half = chance + (ceiling - chance) / 2.0
    a = math.log(half / (1.0 - half)) - slope * d50

    def f(depth: float) -> float:
        return 1.0 / (1.0 + math.exp(-(a + slope * depth)))

    return f


def _logit(p: float) -> float:
    p = min(max(p, 1e-12), 1.0 - 1e-12)
    return math.log(p / (1.0 - p))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class SyntheticAgent:
    """How an agent answers: probabilities of a correct answer by item kind.

    ``fb_accuracy`` maps a numeric depth to the false-belief accuracy (at 12-event stories);
    ``length_slope`` shifts its log-odds per event away from 12 and ``mechanism_shift`` per
    mechanism; ``tb_accuracy`` is the true-belief accuracy and ``reality_accuracy`` the R0
    accuracy (default: ``tb_accuracy``). ``leak_share`` of wrong false-belief answers are coded
    ``reality_leak`` and ``projection_share`` ``projection``; the rest ``truncation:<d-1>``.
    ``own_belief_share`` of wrong R2-self answers name the answerer's own belief.
    ``confidence_noise`` is the sd of stated confidence around the true probability (None: no
    confidence stated). ``api_error_rate`` of trials fail with an API error. ``d50`` records the
    D50 ``fb_accuracy`` was built with, where it was (for :func:`expected_figures`).
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
    reality_accuracy: float | None = None
    length_slope: float = 0.0
    mechanism_shift: Mapping[str, float] = field(default_factory=dict)
    own_belief_share: float = 0.3
    d50: float | None = None

    def p_correct(self, family: str, meta: Mapping[str, Any]) -> float:
        """The probability that this agent answers an item with this meta correctly."""
        if family != "nesttom":
            return self.abc_accuracy if meta.get("question") in ("A", "B", "C") \
                else self.game_accuracy
        depth = float(meta.get("depth_n", 0))
        q = meta.get("question")
        if q == "judgment":
            return self.judgment_accuracy
        if q == "behaviour" and self.behaviour_accuracy is not None:
            return self.behaviour_accuracy
        if depth == 0 and q == "belief" and self.reality_accuracy is not None:
            return self.reality_accuracy
        if meta.get("belief") != "false":
            return self.tb_accuracy
        p = self.fb_accuracy(depth)
        shift = self.mechanism_shift.get(str(meta.get("mechanism")), 0.0)
        length = meta.get("length")
        if self.length_slope and isinstance(length, int | float):
            shift += self.length_slope * (float(length) - 12.0)
        return _sigmoid(_logit(p) + shift) if shift and 0.0 < p < 1.0 else p

    def p_leak(self, family: str, meta: Mapping[str, Any]) -> float:
        """The probability of a reality-leak or projection answer on a false-belief question."""
        if family != "nesttom" or meta.get("belief") != "false" or \
                meta.get("question") != "belief":
            return 0.0
        return (1.0 - self.p_correct(family, meta)) * min(
            1.0, self.leak_share + self.projection_share)


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
                TrialRecord(**{**t.__dict__, "run_id": run_id})
            )
        store.set_run_status(run_id, "complete", finished=True)

    def run_data(self, run_id: str = "synthetic", *, held_out: bool = False) -> RunData:
        """The run as :class:`~reports._data.RunData`, without a database (for fast tests)."""
        trials = [trial_columns(t) for t in self.trials]
        run = {"id": run_id, "suite": "synthetic", "seed": 0, "held_out": held_out,
               "status": "complete", "created_at": None, "finished_at": None, "params": {}}
        return run_data(run, self.agents, [it.to_dict() for it in self.items], trials)


def _item(family: str, seed: int, meta: dict[str, Any], truth: Any, answer: dict[str, Any],
          params: Mapping[str, Any] | None = None) -> Item:
    return Item(
        family=family,
        generator=f"synthetic-{family}",
        version="1",
        seed=seed,
        params=dict(params or {}),
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
    items += _game_items(seed, games, abc_scenarios, items_per_game_cell)
    return items


def _game_items(seed: int, games: int, abc_scenarios: int, per_cell: int,
                conditions: Sequence[str] = CONDITIONS, depths: Sequence[int] = (1, 2, 3, 4),
                lam: float | None = 1.0) -> list[Item]:
    items = []
    for g in range(games):
        game = GAMES[g % len(GAMES)] + ("" if g < len(GAMES) else f"-{g}")
        for cond in conditions:
            for td in depths:
                for _ in range(per_cell):
                    seed += 1
                    meta: dict[str, Any] = {"game": game, "condition": cond, "target_depth": td,
                                            "opponent_level": td - 1, "variant": "base"}
                    if lam is not None:
                        meta["lambda"] = lam
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


# -- the draws ------------------------------------------------------------------------------


@dataclass
class _Draws:
    """One agent's trials on a list of items, as columns (see :func:`_draw`)."""

    api_error: npt.NDArray[np.bool_]
    correct: npt.NDArray[np.bool_]
    p: npt.NDArray[np.float64]
    primary: list[str | None]
    details: list[dict[str, Any]]
    confidence: npt.NDArray[np.float64]
    depth: npt.NDArray[np.float64]


def _draw(a: SyntheticAgent, items: Sequence[Item], rng: np.random.Generator) -> _Draws:
    """Draw one agent's answers: four uniforms per item (correctness, error code / detail,
    confidence / detail, API error), so every use of the generator is the same in
    :func:`synthetic_run` and :func:`simulate`."""
    n = len(items)
    u = rng.random((n, 4))
    p = np.array([a.p_correct(it.family, it.meta) for it in items], dtype=float)
    depth = np.array([float(it.meta.get("depth_n", 0)) for it in items], dtype=float)
    correct = u[:, 0] < p
    api = u[:, 3] < a.api_error_rate
    primary: list[str | None] = [None] * n
    details: list[dict[str, Any]] = [{} for _ in range(n)]
    for i, it in enumerate(items):
        if api[i]:
            continue
        m = it.meta
        det = details[i]
        if it.family == "nesttom":
            if not correct[i]:
                if m.get("belief") == "false" and m.get("question") == "belief":
                    if u[i, 1] < a.leak_share:
                        primary[i] = "reality_leak"
                    elif u[i, 1] < a.leak_share + a.projection_share:
                        primary[i] = "projection"
                    elif depth[i] >= 1:
                        primary[i] = f"truncation:{int(depth[i]) - 1}"
                    else:
                        primary[i] = "other"
                else:
                    primary[i] = "other"
            if m.get("depth") == "R2-self" and m.get("belief") == "false" and \
                    m.get("question") == "belief":
                det["is_own_belief"] = bool(not correct[i] and u[i, 2] < a.own_belief_share)
        elif m.get("question") in ("A", "B", "C"):
            if m["question"] == "C":
                det["log_score"] = float(math.log(0.2 + 0.6 * u[i, 1]))
                det["brier"] = float(0.2 + 0.5 * u[i, 2])
        else:
            td = int(m["target_depth"])
            det["within_one"] = bool(correct[i]) or bool(u[i, 1] < a.within_one_extra)
            det["K_B"] = td if correct[i] else (td - 1 if u[i, 2] < 0.7 else None)
            det["K_L"] = td if u[i, 2] < 0.8 else None
            det["br_consistent"] = bool(u[i, 1] < 0.9)
    if a.confidence_noise is not None:
        conf = np.clip(p + a.confidence_noise * (u[:, 2] - 0.5) * 3.4, 0.0, 1.0)
    else:
        conf = np.full(n, np.nan)
    return _Draws(api, correct, p, primary, details, conf, depth)


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
        d = _draw(a, its, rng)
        for i, it in enumerate(its):
            if d.api_error[i]:
                trials.append(TrialRecord(
                    run_id="", agent=a.name, item_id=it.id, status="api_error", transcript=[],
                    error="HTTP 503 from the endpoint",
                ))
                continue
            correct = bool(d.correct[i])
            primary = d.primary[i]
            conf = None if a.confidence_noise is None else float(d.confidence[i])
            truth = it.truth["answer"]
            depth = d.depth[i]
            trials.append(TrialRecord(
                run_id="", agent=a.name, item_id=it.id, status="ok", transcript=[],
                answer=truth if correct else "other", confidence=conf, correct=correct,
                score_value=1.0 if correct else 0.0, primary_error=primary,
                score={"correct": correct, "value": 1.0 if correct else 0.0,
                       "error_codes": [primary] if primary else [], "primary_error": primary,
                       "details": d.details[i]},
                tokens_in=300 + int(40 * depth), tokens_out=20 + int(10 * depth),
                latency_s=0.5 + 0.1 * depth,
            ))
    return SyntheticRun(its, run_agents, trials)


# -- the shipped suites' designs, simulated ----------------------------------------------------


def _cell(index: int, depths: Sequence[str], beliefs: Sequence[str], lengths: Sequence[int]
          ) -> tuple[str, str, str, str, int]:
    """``(depth, belief, mechanism, form, length)`` of story ``index`` of a crossed design, as
    :func:`nesttom._generator.cell_of` crosses them (depth fastest, then belief; within a cell
    the k-th story takes the mixed-radix digits of k over the feasible mechanisms, the forms and
    the lengths, each factor shifted by the digits below it)."""
    nd, nb = len(depths), len(beliefs)
    depth = depths[index % nd]
    belief = beliefs[(index // nd) % nb]
    k = index // (nd * nb)
    mechs = [m for m in MECHANISMS if not (depth == "R3-loop" and m == "absence")]
    d0 = k % len(mechs)
    d1 = (k // len(mechs)) % len(FORMS)
    d2 = (k // (len(mechs) * len(FORMS))) % len(lengths)
    return (depth, belief, mechs[d0], FORMS[(d1 + d0) % len(FORMS)],
            lengths[(d2 + d1 + d0) % len(lengths)])


_PREFIX_LABELS = {
    "R0": (), "R1": ("R0",), "R2": ("R0", "R1"), "R2-self": ("R0", "R1"),
    "R3": ("R0", "R1", "R2"), "R3-loop": ("R0", "R1", "R2"), "R4": ("R0", "R1", "R2", "R3"),
    "R5": ("R0", "R1", "R2", "R3", "R4"),
}
"""The depth labels of a chain's proper prefixes (the companion questions of a story)."""


def _story_items(story: str, block: str, cell: tuple[str, str, str, str, int], seed: int, *,
                 belief_question: bool = True, applied: bool = False, companions: bool = False,
                 stream: int = 0) -> list[Item]:
    depth, belief, mechanism, form, length = cell
    questions: list[tuple[str, str, str]] = []  # (question, depth label, selection)
    selection = "adversarial" if belief == "false" else "control"
    if belief_question:
        questions.append(("belief", depth, selection))
    if companions:
        questions += [("belief", lab, "companion") for lab in _PREFIX_LABELS[depth]]
    if applied:
        questions += [("behaviour", depth, selection), ("judgment", depth, selection)]
    out = []
    for j, (q, label, sel) in enumerate(questions):
        dn = int(depth_label_number(label))
        meta = {
            "depth": label, "depth_n": dn, "belief": belief if sel != "companion" else "false",
            "mechanism": mechanism, "length": length, "agents": 4, "form": form, "question": q,
            "selection": sel, "story_id": story, "block": block,
            "reality_check": dn == 0 and q == "belief", "r2_self": label == "R2-self",
        }
        answer = {"kind": "yesno"} if q == "judgment" else {
            "kind": "choice", "choices": list(CHOICES)}
        truth = ("yes" if (seed // 2) % 2 == 0 else "no") if q == "judgment" else \
            CHOICES[(seed + j) % 4]
        out.append(_item("nesttom", seed * 16 + j, meta, truth, answer, {"stream": stream}))
    return out


def suite_design(name: str, *, blocks_in_meta: bool = True) -> list[Item]:
    """Items with the structure of a shipped suite (:mod:`harness.run.suites` and
    :func:`nesttom.baseline_items`):

    - ``quick``: B1 with one false- and one true-belief story per depth (R0–R5, R2-self,
      R3-loop; R0 asks for reality in both cells), behaviour and judgment questions on its R1,
      R2 and R3 false-belief stories, and 4 level-k game trials (one per game variant); every
      NestToM item's ``block`` is ``"quick"``, as the suite writes it;
    - ``baseline``: B1 with 60 false- and 60 true-belief stories per depth (12 events),
      mechanisms and surface forms crossed as the generator crosses them, and the companion
      questions of every shallower prefix on its false-belief stories (1,200); B2, R2 at 6, 12
      and 20 events (60 false + 60 true each); B4, behaviour and judgment questions on B1's first
      25 stories of R1, R2 and R3 (150); B5, 60 level-k trials and 16 A/B/C scenarios.

    Generator streams are the generator's (B1 and B4 0, B2 2). ``blocks_in_meta=False`` leaves
    ``block`` out of the meta (items as the generator wrote them before it named blocks).
    Repeated games (B6, seed 003) are not simulated."""
    items: list[Item] = []
    nd = len(DEPTH_ORDER)

    def b1_cell(i: int) -> tuple[str, str, str, str, int]:
        return _cell(i, DEPTH_ORDER, ("false", "true"), (12,))

    if name == "quick":
        for i in range(nd * 2):
            items += _story_items(f"b1-{i}", "quick", b1_cell(i), i)
        for depth in APPLIED_DEPTHS:
            i = DEPTH_ORDER.index(depth)
            items += _story_items(f"b1-{i}", "quick", b1_cell(i), i, belief_question=False,
                                  applied=True)
        items += _game_items(10_000, 2, 0, 1, conditions=("recursive",), depths=(2, 4),
                             lam=None)
    elif name == "baseline":
        for i in range(nd * 2 * 60):
            cell = b1_cell(i)
            items += _story_items(f"b1-{i}", "B1", cell, i, companions=cell[1] == "false")
        for length in B2_LENGTHS:
            for i in range(2 * 60):
                items += _story_items(f"b2-{length}-{i}", "B2",
                                      _cell(i, ("R2",), ("false", "true"), (length,)),
                                      100_000 + 1000 * length + i, stream=2)
        for depth in APPLIED_DEPTHS:
            for j in range(25):
                i = DEPTH_ORDER.index(depth) + nd * j
                items += _story_items(f"b1-{i}", "B4", b1_cell(i), i, belief_question=False,
                                      applied=True)
        items += _baseline_games(10_000)
    else:
        raise ValueError(f"unknown design {name!r} (quick, baseline)")
    if not blocks_in_meta:
        items = [_without_block(it) for it in items]
    return items


def _baseline_games(seed: int) -> list[Item]:
    """60 level-k trials (2 games x 2 conditions x 15 target-depth/variant draws, one trial per
    cell) and 16 A/B/C scenarios (8 per game)."""
    items = []
    for g, game in enumerate(GAMES):
        for cond in CONDITIONS:
            for k in range(15):
                seed += 1
                td = 1 + k % 4
                meta = {"game": game, "condition": cond, "target_depth": td,
                        "opponent_level": td - 1, "variant": f"v{g}{k}"}
                items.append(_item("games", seed, meta, 20 - td,
                                   {"kind": "integer", "min": 11, "max": 20}))
        for sc in range(8):
            for q, truth in zip("ABC", (17, 11, 18), strict=True):
                seed += 1
                meta = {"game": game, "question": q, "scenario_id": f"{game}-sc{sc}",
                        "variant": "base"}
                items.append(_item("games", seed, meta, truth,
                                   {"kind": "integer", "min": 11, "max": 20}))
    return items


def _without_block(it: Item) -> Item:
    meta = {k: v for k, v in it.meta.items() if k != "block"}
    return Item(family=it.family, generator=it.generator, version=it.version, seed=it.seed,
                params=it.params, prompt=it.prompt, answer=it.answer, truth=it.truth, meta=meta)


def simulate(
    rng: np.random.Generator,
    agents: Sequence[SyntheticAgent],
    items: Sequence[Item],
    table: ItemTable | None = None,
    run_id: str = "simulated",
) -> RunData:
    """One simulated run of ``agents`` on ``items`` as :class:`~reports._data.RunData`, drawn
    exactly as :func:`synthetic_run` draws (same generator use), without building trial
    records: the fast path for the simulation study. ``table`` reuses an item table."""
    it_table = table if table is not None else ItemTable.from_bodies(
        [it.to_dict() for it in items])
    n = len(items)
    cols: dict[str, list[Any]] = {k: [] for k in (
        "agent", "item_id", "status", "primary_error", "score_json", "answer_json", "error")}
    num: dict[str, list[npt.NDArray[np.float64]]] = {
        k: [] for k in ("correct", "confidence", "tokens_in", "tokens_out", "latency")}
    index: list[npt.NDArray[np.int64]] = []
    ok_all: list[npt.NDArray[np.bool_]] = []
    ids = [it.id for it in items]
    for a in agents:
        d = _draw(a, items, rng)
        ok = ~d.api_error
        cols["agent"] += [a.name] * n
        cols["item_id"] += ids
        cols["status"] += ["ok" if o else "api_error" for o in ok.tolist()]
        cols["primary_error"] += [pe if o else None for pe, o in zip(d.primary, ok.tolist(),
                                                                     strict=True)]
        cols["score_json"] += [
            json.dumps({"details": det}) if (o and det) else None
            for det, o in zip(d.details, ok.tolist(), strict=True)]
        cols["answer_json"] += [None] * n
        cols["error"] += [None if o else "HTTP 503 from the endpoint" for o in ok.tolist()]
        num["correct"].append(np.where(ok, d.correct.astype(float), np.nan))
        num["confidence"].append(np.where(ok, d.confidence, np.nan))
        num["tokens_in"].append(np.where(ok, 300 + np.floor(40 * d.depth), 0.0))
        num["tokens_out"].append(np.where(ok, 20 + np.floor(10 * d.depth), 0.0))
        num["latency"].append(np.where(ok, 0.5 + 0.1 * d.depth, 0.0))
        index.append(np.arange(n, dtype=np.int64))
        ok_all.append(ok)
    pe = np.empty(len(cols["primary_error"]), dtype=object)
    pe[:] = cols["primary_error"]
    correct = np.concatenate(num["correct"]) if agents else np.empty(0)
    trials = TrialTable(
        agent=cols["agent"], item_id=cols["item_id"],
        item=np.concatenate(index) if agents else np.empty(0, np.int64),
        status=cols["status"],
        ok=np.concatenate(ok_all) if agents else np.empty(0, bool),
        correct=correct,
        confidence=np.concatenate(num["confidence"]) if agents else np.empty(0),
        score_value=correct.copy(),
        primary_error=pe,
        tokens_in=np.concatenate(num["tokens_in"]) if agents else np.empty(0),
        tokens_out=np.concatenate(num["tokens_out"]) if agents else np.empty(0),
        latency=np.concatenate(num["latency"]) if agents else np.empty(0),
        score_json=cols["score_json"], answer_json=cols["answer_json"], error=cols["error"],
    )
    run = {"id": run_id, "suite": "simulated", "seed": 0, "held_out": False,
           "status": "complete", "created_at": None, "finished_at": None, "params": {}}
    run_agents = [RunAgent(a.name, a.role, dict(a.spec) or {"adapter": "synthetic"},
                           a.base_agent) for a in agents]
    return RunData(run, run_agents, it_table, trials)


def _main_question(m: Mapping[str, Any]) -> bool:
    return bool(m["question"] == "belief" and m.get("selection") != "companion")


def _b1_false_belief(m: Mapping[str, Any]) -> bool:
    """An item the headline false-belief accuracy counts (B1's false-belief questions, R1 up)."""
    return bool(m.get("block") in ("B1", "quick", None) and _main_question(m)
                and m["belief"] == "false" and m["depth_n"] >= 1)


def false_belief_spread(agent: SyntheticAgent, items: Sequence[Item]) -> tuple[float, float]:
    """The false-belief accuracy ``agent`` is expected to score on ``items`` and its sampling
    standard deviation, with each counted trial an independent draw (no API errors): the mean
    of the items' probabilities p and sqrt(sum p(1 - p)) / n."""
    ps = [agent.p_correct(it.family, it.meta) for it in items
          if it.family == "nesttom" and _b1_false_belief(it.meta)]
    if not ps:
        raise ValueError("the items have no false-belief question the headline counts")
    n = len(ps)
    return float(np.mean(ps)), math.sqrt(sum(p * (1.0 - p) for p in ps)) / n


def expected_figures(agent: SyntheticAgent, items: Sequence[Item]) -> dict[str, float]:
    """The value each profile figure estimates for ``agent`` on ``items`` (no API errors):
    the mean of the agent's probabilities over the items the figure counts, as the profile
    counts them (B1 for the depth curve, R0 apart, B2 by length, B4 pairs by story), and
    ``d50`` when the agent records it. Keys are the figures' paths in an agent's profile
    (``accuracy_by_depth.false.R3``, ``by_mechanism.lie``, ``length_sweep.false.6``, ...)."""
    applied = {str(it.meta.get("story_id")) for it in items
               if it.family == "nesttom" and it.meta.get("question") == "behaviour"}
    metas: list[Mapping[str, Any]] = []
    probs: list[tuple[float, float]] = []
    games = []
    for it in items:
        if it.family != "nesttom":
            if it.family == "games" and it.meta.get("question") is None:
                games.append(agent.p_correct(it.family, it.meta))
            continue
        metas.append(it.meta)
        probs.append((agent.p_correct(it.family, it.meta), agent.p_leak(it.family, it.meta)))

    Select = Callable[[Mapping[str, Any]], bool]

    def mean(sel: Select, which: int = 1) -> float | None:
        v = [pr[which - 1] for m, pr in zip(metas, probs, strict=True) if sel(m)]
        return float(np.mean(v)) if v else None

    main, b1_fb = _main_question, _b1_false_belief

    def on_applied(m: Mapping[str, Any]) -> bool:
        return main(m) and str(m.get("story_id")) in applied

    def eq(key: str, value: Any) -> Select:
        return lambda m: m.get(key) == value

    def both(a: Select, b: Select) -> Select:
        return lambda m: a(m) and b(m)

    fb = mean(b1_fb)
    out: dict[str, float | None] = {
        "false_belief_accuracy": fb,
        "true_belief_control_accuracy": mean(
            lambda m: main(m) and m["belief"] == "true" and m["depth_n"] >= 1),
        "reality_check": mean(lambda m: main(m) and m["depth_n"] == 0),
        "leakage_resistance": None if fb is None else 1.0 - float(mean(b1_fb, 2) or 0.0),
        "games_accuracy": float(np.mean(games)) if games else None,
    }
    for label in DEPTH_ORDER[1:]:
        out[f"accuracy_by_depth.false.{label}"] = mean(both(b1_fb, eq("depth", label)))
    r2s = mean(both(b1_fb, eq("depth", "R2-self")))
    if r2s is not None:
        out["r2_self.own_belief_leak"] = (1.0 - r2s) * agent.own_belief_share
    for mech in MECHANISMS:
        out[f"by_mechanism.{mech}"] = mean(both(b1_fb, eq("mechanism", mech)))
    for form in FORMS:
        out[f"by_form.{form}"] = mean(both(b1_fb, eq("form", form)))
    for length in B2_LENGTHS:
        for belief in ("false", "true"):
            b2: Select = both(both(main, eq("block", "B2")), eq("belief", belief))
            out[f"length_sweep.{belief}.{length}"] = mean(both(b2, eq("length", length)))
    beh = mean(eq("question", "behaviour"))
    bel = mean(on_applied)
    if beh is not None and bel is not None:
        out["applied_gap"] = bel - beh
        for label in APPLIED_DEPTHS:
            hb = mean(both(eq("question", "behaviour"), eq("depth", label)))
            bb = mean(both(on_applied, eq("depth", label)))
            if hb is not None and bb is not None:
                out[f"applied_gap.by_depth.{label}"] = bb - hb
    if agent.d50 is not None:
        out["d50"] = agent.d50
    return {k: v for k, v in out.items() if v is not None}
