"""The profile's contrast blocks, A/B/C and k-curve figures, repeated games and query proxy
records (:mod:`reports.model` assembles them into :class:`~reports.model.AgentProfile` and
:class:`~reports.model.RunProfile`; they are part of its schema, ``mindledger.profile/2``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from reports.model_base import Available, Estimate, Frozen, Interval, Number

__all__ = [
    "DEPTH_KEY",
    "AbcAccuracy",
    "AbcContrast",
    "AgentSeats",
    "CellB6",
    "ContrastFigure",
    "ContrastMetrics",
    "ContrastSection",
    "CounterfactualGap",
    "GameCell",
    "InvalidMoves",
    "KCurvePoint",
    "KMean",
    "ProxyAgent",
    "ProxyObligations",
    "ProxySection",
    "RepeatedB6",
    "RepeatedCell",
    "RepeatedDesignSummary",
    "RepeatedFigure",
    "SameAnswers",
    "SeatCell",
    "SeatOpponent",
]


class ContrastFigure(Frozen):
    """One metric of a contrast block: the two agents' figures under their roles (``agent``
    and ``control``, or ``full`` and ``ablated``; a D50 may be its display text), their
    difference with its interval and test, or why there is none."""

    available: bool | None = None
    agent: Number | str | None = None
    control: Number | str | None = None
    full: Number | str | None = None
    ablated: Number | str | None = None
    difference: Number | None = None
    ci: Interval | None = None
    ci_note: str | None = None
    n: int | None = None
    n_clusters: int | None = None
    interval: str | None = None
    test: str | None = None
    p: Number | None = None
    p_holm: Number | None = Field(
        default=None, description="Holm-adjusted over multiple_comparisons"
    )
    status: str | None = None
    reason: str | None = None
    note: str | None = None
    display: str | None = None
    definition: str | None = None
    upper_bound: Number | None = None


DEPTH_KEY = "accuracy_by_depth.false."
"""The metric key of a contrast's false-belief accuracy at one depth, before its label."""


class ContrastMetrics(Frozen):
    """The metrics of a contrast block, each a :class:`ContrastFigure`; the false-belief
    accuracy also per depth (``accuracy_by_depth``)."""

    false_belief_accuracy: ContrastFigure | None = None
    accuracy_by_depth: dict[str, ContrastFigure] | None = None
    d50: ContrastFigure | None = None
    leakage_resistance: ContrastFigure | None = None
    applied_gap: ContrastFigure | None = None
    games_accuracy: ContrastFigure | None = None
    log_score_c: ContrastFigure | None = None
    abc_dissociation: ContrastFigure | None = None
    opponent_type_inference: ContrastFigure | None = None
    agent_prediction_skill: ContrastFigure | None = None
    repeated_exploitation: ContrastFigure | None = None

    def figure(self, metric: str) -> ContrastFigure | None:
        """The figure of ``metric`` (a field name), None when the block has none."""
        value = getattr(self, metric, None) if metric in type(self).model_fields else None
        return value if isinstance(value, ContrastFigure) else None

    def flat(self) -> list[tuple[str, ContrastFigure]]:
        """Every figure with its metric key (``accuracy_by_depth.false.R3`` for a depth), in
        the block's order."""
        out: list[tuple[str, ContrastFigure]] = []
        for key in self._keys or tuple(type(self).model_fields):
            if key == "accuracy_by_depth":
                by_depth = self.accuracy_by_depth or {}
                out += [(f"{DEPTH_KEY}{label}", d) for label, d in by_depth.items()]
            elif (fig := self.figure(key)) is not None:
                out.append((key, fig))
        return out

    def with_p_holm(self, adjusted: Mapping[str, float]) -> ContrastMetrics:
        """The block with the Holm-adjusted p of each figure in ``adjusted`` (by the keys of
        :meth:`flat`)."""
        update: dict[str, Any] = {}
        by_depth = dict(self.accuracy_by_depth or {})
        for key, p_holm in adjusted.items():
            if key.startswith(DEPTH_KEY):
                label = key.removeprefix(DEPTH_KEY)
                by_depth[label] = by_depth[label].model_copy(update={"p_holm": p_holm})
                update["accuracy_by_depth"] = by_depth
            elif (fig := self.figure(key)) is not None:
                update[key] = fig.model_copy(update={"p_holm": p_holm})
        return self.model_copy(update=update)


class SameAnswers(Frozen):
    """Items both agents answered, and how many of them they answered identically."""

    identical: int = 0
    shared: int = 0


class ContrastSection(Available):
    """An agent's base-model subtraction (``minus_control``: agent − ``control``) or one
    module's ablation credit (full − ``ablation_agent``): the paired contrasts, metric by
    metric, or why there are none."""

    control: str | None = Field(default=None, description="the control (agent − control)")
    ablation_agent: str | None = Field(default=None, description="the ablated variant (a credit)")
    direction: str | None = None
    interval: str | None = None
    note: str | None = None
    metrics: ContrastMetrics | None = None
    same_answers: SameAnswers | None = None


class KMean(Frozen):
    """A mean depth signal (K_B, K_L) of one k-curve point."""

    mean: Number | None = None
    ci: Interval | None = None
    interval: str | None = None
    n: int | None = None
    unresolved: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


class KCurvePoint(Frozen):
    """The level-k games of one condition and target depth: K_B, K_L and accuracy."""

    condition: str
    target_depth: Number | None = None
    n: int = 0
    accuracy: Number | None = None
    K_B: KMean = Field(default_factory=KMean)
    K_L: KMean = Field(default_factory=KMean)


class GameCell(Frozen):
    """Accuracy (exact and within one level) in one game and condition."""

    game: str
    condition: str
    accuracy: Estimate | None = None
    within_one: Estimate | None = None


class AbcContrast(Frozen):
    """One agent's A − B or B − C accuracy on the same scenarios (a paired difference)."""

    A: Number | None = None
    B: Number | None = None
    C: Number | None = None
    difference: Number | None = None
    ci: Interval | None = None
    n: int | None = None
    interval: str | None = None
    test: str | None = None
    p: Number | None = None
    p_holm: Number | None = None
    status: str | None = None
    reason: str | None = None
    definition: str | None = None


class AbcAccuracy(Frozen):
    """Accuracy in each A/B/C condition (and the K items)."""

    A: Estimate | None = None
    B: Estimate | None = None
    C: Estimate | None = None
    K: Estimate | None = None


class RepeatedFigure(Frozen):
    """A figure of the repeated games: a mean (exploitation, efficiency, adaptation latency)
    or a share (comprehension, adapted episodes), with its interval and n, or the reason it
    has none."""

    value: Number | None = None
    k: int | None = None
    n: int | None = None
    ci: Interval | None = None
    interval: str | None = None
    status: str | None = None
    reason: str | None = None
    n_clusters: int | None = None
    n_undefined: int | None = Field(default=None, description="episodes whose figure is undefined")
    note: str | None = None
    benchmark: str | None = None
    scale: str | None = None
    unit: str | None = None
    median_m: Number | None = Field(default=None, description="median rounds to comprehension")
    median_m_reason: str | None = None
    rounds: list[int] | None = None


class InvalidMoves(Frozen):
    """Invalid moves: their share of the rounds played, counted."""

    value: Number | None = None
    invalid_rounds: int = 0
    rounds: int = 0
    episodes_with_invalid: int = 0
    interval: str | None = None
    reason: str | None = None


class CellB6(Available):
    """A cell's switching-bot (B6) episodes."""

    n: int | None = None
    adaptation_latency: RepeatedFigure = Field(default_factory=RepeatedFigure)
    adapted: RepeatedFigure = Field(default_factory=RepeatedFigure)


class RepeatedCell(Frozen):
    """One game and counterfactual of the repeated games."""

    game: str
    counterfactual: str
    n_episodes: int = 0
    n_design: int | None = None
    unscored: int | None = None
    api_errors: int | None = None
    exploitation: RepeatedFigure = Field(default_factory=RepeatedFigure)
    comprehension: RepeatedFigure = Field(default_factory=RepeatedFigure)
    efficiency: RepeatedFigure = Field(default_factory=RepeatedFigure)
    invalid_moves: InvalidMoves = Field(default_factory=InvalidMoves)
    b6: CellB6 = Field(default_factory=CellB6)
    opponents: dict[str, int] | None = None


class CounterfactualGap(Available):
    """Exploitation in the default setting − in a counterfactual one, over matched pairs
    (``counterfactual`` null: an agent seat's game with no counterfactual setting to pair)."""

    game: str
    counterfactual: str | None
    default: Number | None = None
    value: Number | None = None
    difference: Number | None = None
    ci: Interval | None = None
    interval: str | None = None
    n_default: int | None = None
    n_counterfactual: int | None = None
    n_pairs: int | None = None
    pairs_undefined: int | None = None
    p: Number | None = None
    test: str | None = None
    status: str | None = None
    note: str | None = None


class SeatOpponent(Frozen):
    """The opponent seat's figures in agent-seat episodes (the other agent of the run)."""

    exploitation: RepeatedFigure | None = None
    comprehension: RepeatedFigure | None = None
    efficiency: RepeatedFigure | None = None
    total: RepeatedFigure | None = None


class SeatCell(Frozen):
    """Agent-seat episodes of one seat (pooled over games and settings, with the
    counterfactual gaps) or of one seat, game and setting."""

    seat: str
    opponent: str | None = None
    game: str | None = None
    counterfactual: str | None = None
    n_design: int | None = None
    n_episodes: int | None = None
    api_errors: int | None = None
    unscored: int | None = None
    exploitation: RepeatedFigure | None = None
    comprehension: RepeatedFigure | None = None
    efficiency: RepeatedFigure | None = None
    invalid_moves: InvalidMoves | None = None
    adaptation_latency: RepeatedFigure | None = None
    opponent_seat: SeatOpponent | None = None
    total: RepeatedFigure | None = None
    mutual_cooperation: RepeatedFigure | None = None
    counterfactual_gap: list[CounterfactualGap] | None = None


class RepeatedDesignSummary(Frozen):
    """The repeated games' design as the run holds it: episodes per game and counterfactual
    cell, whether the cells are balanced, the matched sets and the B6 episodes."""

    episodes_per_cell: dict[str, int] = Field(default_factory=dict)
    balanced: bool | None = None
    matched_sets: int | None = None
    b6_episodes: int | None = None


class AgentSeats(Available):
    """Repeated games against the run's own agents (``agent:control``, ``agent:self``): per
    seat and per seat, game and setting."""

    n_episodes: int | None = None
    design: RepeatedDesignSummary | None = None
    by_seat: list[SeatCell] | None = None
    by_seat_game_counterfactual: list[SeatCell] | None = None
    metrics: list[str] | None = None
    definition: str | None = None


class RepeatedB6(Available):
    """The switching-bot (B6) episodes, apart from the counterfactual cells."""

    n: int | None = None
    n_design: int | None = None
    n_episodes: int | None = None
    unscored: int | None = None
    api_errors: int | None = None
    exploitation: RepeatedFigure = Field(default_factory=RepeatedFigure)
    adaptation_latency: RepeatedFigure = Field(default_factory=RepeatedFigure)
    adapted: RepeatedFigure = Field(default_factory=RepeatedFigure)
    comprehension: RepeatedFigure | None = None
    efficiency: RepeatedFigure | None = None
    invalid_moves: InvalidMoves | None = None
    opponents: dict[str, int] | None = None


class ProxyObligations(Frozen):
    """Prediction obligations the query proxy opened for an agent, and what became of them."""

    opened: int = 0
    met: int = 0
    abandoned: int = 0
    pending: int = 0


class ProxyAgent(Frozen):
    """One agent's calls through the query proxy (counts: the record, not an estimate)."""

    calls: int = 0
    predicted: int = 0
    unpredicted: int = 0
    refused: int = 0
    refusals: dict[str, int] = Field(default_factory=dict)
    open_obligations: list[str] = Field(default_factory=list)
    obligations: ProxyObligations = Field(default_factory=ProxyObligations)


class ProxySection(Frozen):
    """The query proxy's record for the run's agents (empty when none went through it)."""

    scope: str | None = None
    agents: dict[str, ProxyAgent] | None = None
