"""Condition C against the run's own LLM population (seed 002 §15.1, issue 15 item 4): pure.

A scenario drawn for an LLM population (:func:`games.generate_population_items`) has K play
items, which every agent of the run answers (agents under test, controls, ablations and
reference players alike), and one C-llm item, which asks each agent for the distribution of the
*other* agents' plays. A C-llm answer cannot be scored when it is given; here it is scored
against the run's realised plays:

- **Population.** The valid plays (an integer within the game's limits) of every agent of the
  run except the predictor — leave-one-agent-out: a predictor's own plays are not what it was
  asked about, and counting them would reward predicting oneself. Only the predictor's own
  plays are left out; its control or ablation (often the same model) stays in the population,
  as the prompt says ("the other agents").
- **Scores.** The same as against a scripted population
  (:func:`games.population_prediction_scores`): the mean log score over the population's plays
  (probabilities floored at ``games._strategic_scoring.LOG_FLOOR``), the mean Brier score, and
  top-1 — a unique most likely predicted choice that is a modal choice of the population.
- **Not estimable.** A scenario whose population holds fewer than
  :data:`games.POPULATION_MIN_ANSWERS` valid plays (no play items in the run, the other agents'
  answers all invalid or failed, a run with one agent) scores nothing for that predictor, and
  says why. An ok C-llm trial with no readable distribution counts as a wrong top-1 (as an
  unreadable scripted C answer counts as wrong) and has no log or Brier score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from games import POPULATION_MIN_ANSWERS, population_prediction_scores
from reports._data import RunData

__all__ = ["PopulationPlays", "ScoredPrediction", "population_plays", "score_predictions"]

PopulationPlays = dict[str, dict[str, Counter[str]]]
"""Valid plays per scenario (the items' group key) and agent: how many fell in each label."""


@dataclass(frozen=True)
class ScoredPrediction:
    """One agent's C-llm answer on one scenario, scored against the other agents' plays."""

    item: int
    """The C-llm item's row in the run's item table."""
    population: int
    """Valid plays of the other agents in the scenario."""
    log_score: float | None = None
    brier: float | None = None
    uniform_log_score: float | None = None
    top1: bool | None = None
    """None when the scenario is not estimable for this predictor."""
    reason: str | None = None
    """Why the scenario is not estimable (None when it is)."""


def population_plays(data: RunData, play: npt.NDArray[np.bool_]) -> PopulationPlays:
    """Every agent's valid plays on the play items ``play`` marks, by scenario and label."""
    tr = data.trials
    groups = data.items.group
    out: PopulationPlays = {}
    for row in range(len(tr)):
        i = int(tr.item[row])
        if i < 0 or not play[i] or not tr.ok[row]:
            continue
        label = tr.details(row).get("label")
        if isinstance(label, str) and label:
            out.setdefault(str(groups[i]), {}).setdefault(tr.agent[row], Counter())[label] += 1
    return out


def _labels(meta: Mapping[str, object]) -> list[str] | None:
    labels = meta.get("labels")
    if isinstance(labels, Sequence) and not isinstance(labels, str) and labels:
        return [str(x) for x in labels]
    return None


def score_predictions(
    data: RunData,
    plays: PopulationPlays,
    agent: str,
    items: Sequence[int],
    rows: Sequence[int],
) -> list[ScoredPrediction]:
    """``agent``'s ok C-llm trials (``rows``, on the items ``items``) scored against the
    other agents' plays of the same scenario."""
    tr = data.trials
    it = data.items
    out: list[ScoredPrediction] = []
    for i, row in zip(items, rows, strict=True):
        by_agent = plays.get(str(it.group[i]), {})
        counts: Counter[str] = Counter()
        for other, c in by_agent.items():
            if other != agent:
                counts.update(c)
        n = sum(counts.values())
        if n < POPULATION_MIN_ANSWERS:
            why = ("no play items of this scenario in the run" if not by_agent
                   else f"{n} valid plays of the other agents; at least "
                   f"{POPULATION_MIN_ANSWERS} are needed")
            out.append(ScoredPrediction(i, n, reason=why))
            continue
        labels = _labels(it.meta[i])
        pred = tr.details(row).get("prediction")
        if (labels is None or not isinstance(pred, list) or len(pred) != len(labels)
                or not all(isinstance(p, int | float) for p in pred)):
            out.append(ScoredPrediction(i, n, top1=False))  # unreadable: wrong, no log score
            continue
        s = population_prediction_scores([float(p) for p in pred], labels, counts)
        out.append(ScoredPrediction(i, n, float(s["log_score"]), float(s["brier"]),
                                    float(s["uniform_log_score"]), bool(s["top1"])))
    return out
