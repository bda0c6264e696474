"""The game value: a finite two-player game seen from one player, and its best responses.

A :class:`GameSpec` holds the strategy space ``S`` (sorted ascending), the payoff matrix
``payoff[i][j] = u(actions[i], actions[j])`` (row = own action ``s``, column = the action ``a``
the player believes the opponent takes) and the level-0 anchor ``a(0)``. A ring game is reduced
to this form the way the paper does it: a level-k player believes both neighbours play
``a(k-1)``, so its payoff depends on a single opponent action.

Best responses follow the paper: ``BR(a)`` is the full set of exact maximisers of
``u(s, a)`` over ``s`` and ``br(a) = min BR(a)`` is the smallest maximiser,
the deterministic selection that defines the IDR sequence. Payoffs are compared exactly: the
built-in games compute them from exact rationals, so equal payoffs are equal floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from mindledger.errors import InputError

__all__ = ["Action", "GameSpec"]

Action = int | float
"""An action is a number; the built-in games use integers."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, eq=True)
class GameSpec:
    """A finite game as one player sees it.

    Fields:
        name: registry name (``"11-20"``) or a variant's name (``"11-20~v:…"``).
        actions: the strategy space S, ascending, without duplicates.
        payoff: ``payoff[i][j] = u(actions[i], actions[j])``.
        anchor: the level-0 anchor a(0), a member of ``actions``.
        family: the game family the spec was built from (``"custom"`` for a JSON spec).
        params: the family's parameters (empty for a custom spec).
        players: number of players (5 in Ring 11–20; the payoff is still a function of one
            opponent action because a level-k player believes all neighbours act alike).
        rules: the rules text shown to the model (empty for a custom spec).
        descriptions: the L0–L3 opponent descriptions (empty for a custom spec).
    """

    name: str
    actions: tuple[Action, ...]
    payoff: tuple[tuple[float, ...], ...]
    anchor: Action
    family: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)
    players: int = 2
    rules: str = ""
    descriptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.actions)
        if n == 0:
            raise InputError("the strategy space is empty", where="actions")
        if list(self.actions) != sorted(set(self.actions)):
            raise InputError("actions must be ascending and distinct", where="actions")
        if len(self.payoff) != n or any(len(row) != n for row in self.payoff):
            raise InputError("the payoff matrix must be square, one row and column per action",
                             where="payoff")
        if self.anchor not in self.index:
            raise InputError(f"the anchor {self.anchor!r} is not one of the actions",
                             where="anchor")

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_matrix(
        cls,
        name: str,
        actions: Sequence[Action],
        matrix: npt.ArrayLike,
        anchor: Action,
        **fields: Any,
    ) -> GameSpec:
        """Build a spec from ascending ``actions`` and a matrix (rows = own action)."""
        m = np.array(matrix, dtype=np.float64)  # a copy: the spec's own, read-only
        m.setflags(write=False)
        spec = cls(
            name=name,
            actions=tuple(actions),
            payoff=tuple(tuple(row) for row in m.tolist()),
            anchor=anchor,
            **fields,
        )
        spec.__dict__["matrix"] = m  # seed the cache with the array we already have
        return spec

    @classmethod
    def from_dict(
        cls, data: Any, *, source: str | None = None, default_name: str = "custom"
    ) -> GameSpec:
        """Validate and build a spec from ``{"actions", "payoff", "anchor"[, "name"]}``.

        Rows are the player's own action ``s``, columns the opponent's action ``a``. Actions
        may be given in any order; they are sorted and the matrix permuted to match. Raises
        :class:`~mindledger.errors.InputError` naming the field for a non-square matrix, a
        non-numeric or non-finite payoff, duplicate or non-numeric actions, or an anchor
        outside the actions.
        """

        def fail(message: str, where: str | None) -> InputError:
            return InputError(message, where=where, source=source)

        if not isinstance(data, Mapping):
            raise fail("a game spec must be a JSON object with actions, payoff and anchor", None)
        for key in ("actions", "payoff", "anchor"):
            if key not in data:
                raise fail(f"the field {key!r} is missing", key)
        actions = data["actions"]
        if not isinstance(actions, list) or not actions:
            raise fail("actions must be a non-empty list of numbers", "actions")
        seen: dict[Action, int] = {}
        for i, a in enumerate(actions):
            if not _is_number(a) or not math.isfinite(a):
                raise fail(f"action {a!r} is not a finite number", f"actions[{i}]")
            if a in seen:
                raise fail(f"action {a!r} repeats actions[{seen[a]}]", f"actions[{i}]")
            seen[a] = i
        n = len(actions)
        payoff = data["payoff"]
        if not isinstance(payoff, list):
            raise fail("payoff must be a list of rows, one per own action", "payoff")
        if len(payoff) != n:
            raise fail(
                f"the payoff matrix is not square: it has {len(payoff)} rows but there are "
                f"{n} actions (one row per own action s)",
                "payoff",
            )
        for i, row in enumerate(payoff):
            if not isinstance(row, list):
                raise fail("each payoff row must be a list of numbers", f"payoff[{i}]")
            if len(row) != n:
                raise fail(
                    f"the payoff matrix is not square: row {i} has {len(row)} entries but "
                    f"there are {n} actions (one column per opponent action a)",
                    f"payoff[{i}]",
                )
            for j, v in enumerate(row):
                if not _is_number(v):
                    raise fail(f"payoff {v!r} is not a number", f"payoff[{i}][{j}]")
                if not math.isfinite(v):
                    raise fail(f"payoff {v!r} is not finite", f"payoff[{i}][{j}]")
        anchor = data["anchor"]
        if not _is_number(anchor) or anchor not in seen:
            raise fail(f"the anchor {anchor!r} is not one of the actions", "anchor")
        name = data.get("name", default_name)
        if not isinstance(name, str):
            raise fail("name must be a string", "name")
        order = sorted(range(n), key=lambda i: actions[i])
        m = np.asarray(payoff, dtype=np.float64)[np.ix_(order, order)]
        anchor_value = next(a for a in actions if a == anchor)
        return cls.from_matrix(name, [actions[i] for i in order], m, anchor_value)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the game (the ``check`` input format plus its metadata)."""
        return {
            "name": self.name,
            "family": self.family,
            "params": dict(self.params),
            "players": self.players,
            "actions": list(self.actions),
            "payoff": [list(row) for row in self.payoff],
            "anchor": self.anchor,
        }

    # -- derived arrays -------------------------------------------------------------------

    @cached_property
    def matrix(self) -> npt.NDArray[np.float64]:
        """The payoff matrix as a read-only array (rows = own action)."""
        m = np.asarray(self.payoff, dtype=np.float64)
        m.setflags(write=False)
        return m

    @cached_property
    def index(self) -> Mapping[Action, int]:
        """Action value -> row/column index (read-only: a spec may be shared, see
        :func:`games._scoring.spec_from_truth`)."""
        return MappingProxyType({a: i for i, a in enumerate(self.actions)})

    @cached_property
    def br_indices(self) -> tuple[int, ...]:
        """``br`` as a map on indices: the smallest maximiser for each opponent column."""
        return tuple(np.argmax(self.matrix, axis=0).tolist())

    @cached_property
    def br_set_sizes(self) -> tuple[int, ...]:
        """``|BR(a)|`` for each opponent column."""
        m = self.matrix
        return tuple((m == m.max(axis=0)).sum(axis=0).tolist())

    # -- best responses -------------------------------------------------------------------

    def has_action(self, value: object) -> bool:
        """Whether ``value`` is a member of S (exact equality, booleans excluded)."""
        return _is_number(value) and value in self.index

    def payoff_of(self, s: Action, a: Action) -> float:
        """``u(s, a)`` for two members of S."""
        return float(self.matrix[self.index[s], self.index[a]])

    def best_responses(self, a: Action) -> tuple[Action, ...]:
        """``BR(a)``: every exact maximiser of ``u(·, a)`` over S, ascending (Eq. 2)."""
        column = self.matrix[:, self.index[a]]
        return tuple(self.actions[int(i)] for i in np.flatnonzero(column == column.max()))

    def br(self, a: Action) -> Action:
        """``br(a) = min BR(a)``, the smallest maximiser (Eq. 3)."""
        return self.actions[self.br_indices[self.index[a]]]

    def expected_payoffs(self, belief: Mapping[Action, float]) -> npt.NDArray[np.float64]:
        """``sum_j p_j u(s, b_j)`` for every ``s`` in S; weights are normalised."""
        total = float(sum(belief.values()))
        if total <= 0:
            raise ValueError("a belief needs positive total weight")
        cols = [self.index[b] for b in belief]
        weights = np.asarray([belief[b] / total for b in belief], dtype=np.float64)
        return np.asarray(self.matrix[:, cols] @ weights, dtype=np.float64)

    def expected_best_responses(self, belief: Mapping[Action, float]) -> tuple[Action, ...]:
        """Maximisers of expected utility under a distributional belief.

        Weights come from stated likelihoods, so sums carry float rounding; actions within
        ``1e-9`` (relative to the payoff scale) of the maximum count as maximisers.
        """
        eu = self.expected_payoffs(belief)
        tol = 1e-9 * max(1.0, float(np.abs(self.matrix).max()))
        return tuple(self.actions[int(i)] for i in np.flatnonzero(eu >= eu.max() - tol))
