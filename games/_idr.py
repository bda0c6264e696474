"""IDR sequences and the distinguishability checker (the paper's definition, and its lemma).

The iterated depth response (IDR) sequence of a game is ``a(0) = anchor``,
``a(k) = br(a(k-1))`` with the smallest-maximiser selection (:mod:`games._spec`). A game is
level-K distinguishable within depth K when ``k -> a(k)`` is injective on ``{0, …, K}``;
``K_max`` is the largest such K. Because ``br`` is a function on a finite set, the sequence is
eventually periodic, so ``K_max`` is one less than the first depth at which a value repeats,
which is ``|R| - 1`` for ``R`` the set of values the sequence reaches (with equality).

:func:`check_distinguishability` also reports *where* and *why* it fails (the first repeated
pair of depths, whether it is a fixed point, a return to the anchor or a shorter cycle, and the
best-response step that closes it) and every depth at which ``BR(a(k))`` is not a singleton, so
that the sequence leans on the tie-break convention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from games._spec import Action, GameSpec

__all__ = ["Distinguishability", "Failure", "check_distinguishability", "idr_sequence"]


def _orbit(spec: GameSpec) -> tuple[list[int], int]:
    """Indices of ``a(0), a(1), …`` up to and including the first repeat, and the depth of
    the earlier occurrence of that repeated value."""
    br = spec.br_indices
    seen: dict[int, int] = {}
    seq: list[int] = []
    i = spec.index[spec.anchor]
    while i not in seen:
        seen[i] = len(seq)
        seq.append(i)
        i = br[i]
    seq.append(i)
    return seq, seen[i]


def idr_sequence(game: GameSpec | str, depth: int = 10) -> list[Action]:
    """``[a(0), …, a(depth)]`` computed from the payoffs by iterating ``br`` from the anchor.

    ``game`` is a :class:`GameSpec` or the name of a built-in game.
    """
    spec = _resolve(game)
    if depth < 0:
        raise ValueError("depth must be non-negative")
    return _unroll(spec, *_orbit(spec), depth)


def _unroll(spec: GameSpec, seq: list[int], first: int, depth: int) -> list[Action]:
    """``a(0) … a(depth)`` from the orbit, extended periodically past the first repeat."""
    period = len(seq) - 1 - first
    out: list[Action] = []
    for k in range(depth + 1):
        idx = seq[k] if k < len(seq) else seq[first + (k - first) % period]
        out.append(spec.actions[idx])
    return out


def _resolve(game: GameSpec | str) -> GameSpec:
    if isinstance(game, GameSpec):
        return game
    from games._catalog import get_game

    return get_game(game)


@dataclass(frozen=True)
class Failure:
    """Where distinguishability first fails: ``a(depth) == a(repeats)`` with
    ``repeats < depth``; ``kind`` is ``"fixed_point"``, ``"returns_to_anchor"`` or
    ``"cycle"``; ``reason`` says it in words."""

    depth: int
    repeats: int
    action: Action
    kind: str
    period: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "repeats": self.repeats,
            "action": self.action,
            "kind": self.kind,
            "period": self.period,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Distinguishability:
    """The checker's verdict on one game.

    Fields:
        game: the game's name.
        depth: the depth asked about (the window is ``0 … depth``).
        idr: ``[a(0), …, a(depth)]``.
        kmax: the largest K with ``a(0) … a(K)`` pairwise distinct (not capped at ``depth``).
        reached: ``|R|``, the number of distinct values the sequence ever reaches; Lemma 1
            gives ``kmax <= reached - 1``.
        failure: the first repeat, which bounds ``kmax`` (always present: a finite game
            repeats eventually; it lies inside the window exactly when ``kmax < depth``).
        ties: ``(k, BR(a(k)))`` for every ``k < depth`` at which the best-response set is not
            a singleton, so that ``a(k+1)`` depends on the Eq. (3) tie-break.
        br_sets: ``BR(a(k))`` for ``k = 0 … depth``.
    """

    game: str
    depth: int
    idr: list[Action]
    kmax: int
    reached: int
    failure: Failure
    ties: tuple[tuple[int, tuple[Action, ...]], ...]
    br_sets: tuple[tuple[Action, ...], ...]

    @property
    def distinguishable(self) -> bool:
        """Definition 1 holds through ``depth``: ``a(0) … a(depth)`` are pairwise distinct."""
        return self.kmax >= self.depth

    @property
    def strict(self) -> bool:
        """Distinguishable and no step within the window relies on the tie-break."""
        return self.distinguishable and not self.ties

    def problems(self) -> list[str]:
        """What is wrong with the game as an instrument to ``depth`` (empty when strict)."""
        out: list[str] = []
        if not self.distinguishable:
            out.append(
                f"{self.game}: distinguishable only through depth {self.kmax} < {self.depth}: "
                f"{self.failure.reason}"
            )
        for k, brs in self.ties:
            out.append(
                f"{self.game}: BR(a({k})) = BR({self.idr[k]}) = {set(brs)} is not a singleton; "
                f"a({k + 1}) = {self.idr[k + 1]} relies on the smallest-maximiser convention"
            )
        return out

    def __getitem__(self, key: str) -> Any:
        """Mapping-style access to the JSON form (``result["kmax"]``)."""
        return self.to_dict()[key]

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": self.game,
            "depth": self.depth,
            "idr": list(self.idr),
            "kmax": self.kmax,
            "reached": self.reached,
            "lemma1_bound": self.reached - 1,
            "distinguishable": self.distinguishable,
            "failure": self.failure.to_dict() if not self.distinguishable else None,
            "first_repeat": self.failure.to_dict(),
            "ties": [{"depth": k, "best_responses": list(b)} for k, b in self.ties],
            "problems": self.problems(),
        }


def _explain(spec: GameSpec, seq: list[int], first: int) -> Failure:
    k2 = len(seq) - 1
    k1 = first
    action = spec.actions[seq[k2]]
    prev = spec.actions[seq[k2 - 1]]
    period = k2 - k1
    col = spec.index[prev]
    best = float(spec.matrix[seq[k2], col])
    step = f"br({prev}) = {action} (payoff {best:g})"
    if period == 1:
        kind = "fixed_point"
        reason = (
            f"a({k2}) = a({k1}) = {action}: {step} is a fixed point of the best response, "
            f"so every deeper level plays {action} too"
        )
    elif k1 == 0:
        kind = "returns_to_anchor"
        reason = (
            f"a({k2}) = a(0) = {action}: {step} returns the sequence to the anchor "
            f"(a cycle of period {period})"
        )
    else:
        kind = "cycle"
        reason = (
            f"a({k2}) = a({k1}) = {action}: {step} revisits depth {k1} "
            f"(a cycle of period {period} entered at depth {k1})"
        )
    reason += f"; Lemma 1: K_max <= |R| - 1 = {k2 - 1}"
    return Failure(depth=k2, repeats=k1, action=action, kind=kind, period=period, reason=reason)


def check_distinguishability(
    spec: GameSpec | Mapping[str, Any] | str, depth: int = 10
) -> Distinguishability:
    """Compute the IDR sequence, ``K_max`` and where and why distinguishability fails.

    ``spec`` is a :class:`GameSpec`, a built-in game's name, or a JSON-style mapping
    ``{"actions": [...], "payoff": [[u(s, a) for a in actions] for s in actions],
    "anchor": a0}`` (validated; errors raise :class:`~mindledger.errors.InputError`).
    """
    game = GameSpec.from_dict(spec) if isinstance(spec, Mapping) else _resolve(spec)
    if depth < 0:
        raise ValueError("depth must be non-negative")
    seq, first = _orbit(game)
    kmax = len(seq) - 2
    idr = _unroll(game, seq, first, depth)
    sizes = game.br_set_sizes
    ties: list[tuple[int, tuple[Action, ...]]] = []
    br_sets: list[tuple[Action, ...]] = []
    for k, a in enumerate(idr):
        brs = game.best_responses(a) if sizes[game.index[a]] > 1 else (game.br(a),)
        br_sets.append(brs)
        if k < depth and len(brs) > 1:
            ties.append((k, brs))
    return Distinguishability(
        game=game.name,
        depth=depth,
        idr=idr,
        kmax=kmax,
        reached=len(seq) - 1,
        failure=_explain(game, seq, first),
        ties=tuple(ties),
        br_sets=tuple(br_sets),
    )
