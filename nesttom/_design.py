"""The design space of NestToM items: depths, belief types, mechanisms, story lengths and agent
counts, which cells of it are feasible, and how a crossed :class:`Design` assigns a cell to the
n-th story of a run (:func:`cell_of`). See :mod:`nesttom._generator` for what each factor means.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nesttom._render import FORMS, YOU

__all__ = [
    "APPLIED_DEPTHS",
    "BELIEF_TYPES",
    "DEPTHS",
    "DEPTH_N",
    "MAX_AGENTS",
    "MAX_LENGTH",
    "MECHANISMS",
    "MIN_AGENTS",
    "MIN_LENGTH",
    "Cell",
    "Design",
    "cell_of",
    "check_cell",
    "decisive_feasible",
    "depth_label",
    "feasible",
]

DEPTHS = ("R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5")
DEPTH_N = {"R0": 0, "R1": 1, "R2": 2, "R2-self": 2, "R3": 3, "R3-loop": 3, "R4": 4, "R5": 5}
BELIEF_TYPES = ("false", "true")
MECHANISMS = ("absence", "secret-observation", "lie", "garble", "stale-then-corrected")
APPLIED_DEPTHS = ("R1", "R2", "R3")
MIN_AGENTS, MAX_AGENTS = 3, 6
MIN_LENGTH, MAX_LENGTH = 4, 1000

Cell = tuple[str, str, str, int, int]
"""One story's cell: ``(depth, belief type, mechanism, length in events, agents)``."""


def feasible(depth: str, mechanism: str) -> bool:
    """Whether the cell ``(depth, mechanism)`` can have false-belief items: not R3-loop ×
    absence (an R3-loop false belief needs a secret watcher; see :mod:`nesttom._generator`)."""
    return not (depth == "R3-loop" and mechanism == "absence")


def decisive_feasible(depth: str, mechanism: str) -> bool:
    """Whether a false belief at ``depth`` can hinge on ``mechanism``. A message is perceived
    only by chains made of its sender and recipient, so lies, garbles and corrections can decide
    R1, R2, R2-self and R3-loop answers but never R3 (three distinct agents), R4 or R5 ones
    (a longer chain of two agents has the same answer as its prefix). Absence is never
    "neutralised" (None), and R0 is reality."""
    if mechanism == "absence" or depth == "R0":
        return False
    return mechanism == "secret-observation" or depth in ("R1", "R2", "R2-self", "R3-loop")


def depth_label(chain: Sequence[str]) -> str:
    """The depth label of a chain: R0…R5, with R2-self (``[x, "you"]``) and R3-loop
    (``[a, b, a]``) told apart."""
    n = len(chain)
    if n == 2 and chain[1] == YOU:
        return "R2-self"
    if n == 3 and chain[0] == chain[2]:
        return "R3-loop"
    return f"R{n}"


def check_cell(depth: str, belief: str, mechanism: str, length: int, agents: int) -> None:
    """Raise ValueError, naming the factor, unless the cell is a known and feasible one."""
    if depth not in DEPTH_N:
        raise ValueError(f"unknown depth {depth!r}; expected one of {', '.join(DEPTHS)}")
    if belief not in BELIEF_TYPES:
        raise ValueError(f"unknown belief type {belief!r}; expected false or true")
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"unknown mechanism {mechanism!r}; expected one of {', '.join(MECHANISMS)}"
        )
    if not feasible(depth, mechanism):
        raise ValueError(
            f"{depth} × {mechanism} is infeasible: an R3-loop false belief needs a secret watcher"
        )
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ValueError(f"length must be {MIN_LENGTH}..{MAX_LENGTH} events, got {length}")
    if not MIN_AGENTS <= agents <= MAX_AGENTS:
        raise ValueError(f"agents must be {MIN_AGENTS}..{MAX_AGENTS}, got {agents}")


def cell_of(
    index: int,
    *,
    depths: Sequence[str],
    belief_types: Sequence[str],
    mechanisms: Sequence[str],
    forms: Sequence[str],
    lengths: Sequence[int],
    agents: Sequence[int],
) -> tuple[Cell, str, bool]:
    """The cell, surface form and judgment polarity of item ``index`` of a crossed design.

    Depth varies fastest, then belief type, so any run of ``len(depths) * len(belief_types)``
    items is balanced. Within a (depth, belief) cell, the k-th item takes the digits of k in the
    mixed radix (mechanisms, forms, lengths, agent counts) and shifts each factor by the digits
    below it: every full cycle still crosses all levels once, and every factor changes from one
    item to the next, so even a short run covers the levels of each factor. Only the feasible
    mechanisms of a depth are used. Judgments alternate yes/no.
    """
    nd, nb = len(depths), len(belief_types)
    depth = depths[index % nd]
    belief = belief_types[(index // nd) % nb]
    k = index // (nd * nb)
    mechs = [m for m in mechanisms if feasible(depth, m)]
    if not mechs:
        raise ValueError(f"no feasible mechanism for {depth} among {list(mechanisms)}")
    digits = []
    rest = k
    for size in (len(mechs), len(forms), len(lengths), len(agents)):
        digits.append(rest % size)
        rest //= size
    mechanism = mechs[digits[0]]
    form = forms[(digits[1] + digits[0]) % len(forms)]
    length = lengths[(digits[2] + digits[1] + digits[0]) % len(lengths)]
    n_agents = agents[(digits[3] + digits[2] + digits[1] + digits[0]) % len(agents)]
    return (depth, belief, mechanism, length, n_agents), form, k % 2 == 0


@dataclass(frozen=True)
class Design:
    """The levels of the factors a run of stories crosses (:func:`cell_of` says how): the depths,
    belief types, mechanisms, surface forms, story lengths (events) and agent counts to draw
    from. Every factor needs at least one level, and depths, belief types, mechanisms and
    forms known ones (ValueError); lengths and agent counts are checked as each story is drawn.
    Sequences are kept as tuples."""

    depths: tuple[str, ...] = DEPTHS
    belief_types: tuple[str, ...] = BELIEF_TYPES
    mechanisms: tuple[str, ...] = MECHANISMS
    forms: tuple[str, ...] = FORMS
    lengths: tuple[int, ...] = (12,)
    agents: tuple[int, ...] = (4,)

    def __post_init__(self) -> None:
        for name in ("depths", "belief_types", "mechanisms", "forms", "lengths", "agents"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for label, values, allowed in (
            ("depth", self.depths, DEPTHS),
            ("mechanism", self.mechanisms, MECHANISMS),
            ("form", self.forms, FORMS),
            ("belief type", self.belief_types, BELIEF_TYPES),
        ):
            if not values:
                raise ValueError(f"no {label} given")
            for v in values:
                if v not in allowed:
                    raise ValueError(f"unknown {label} {v!r}; expected one of {', '.join(allowed)}")
        if not self.lengths or not self.agents:
            raise ValueError("no length or agent count given")

    def cell(self, index: int) -> tuple[Cell, str, bool]:
        """The cell, surface form and judgment polarity of story ``index`` (:func:`cell_of`)."""
        return cell_of(
            index,
            depths=self.depths,
            belief_types=self.belief_types,
            mechanisms=self.mechanisms,
            forms=self.forms,
            lengths=self.lengths,
            agents=self.agents,
        )
