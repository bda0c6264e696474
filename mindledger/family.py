"""Item families: the :class:`Family` protocol and the one registry that every layer asks.

A *family* is one kind of item (``Item.family``): NestToM stories, Hi-ToM stories, level-k and
A/B/C games, repeated games, the prediction matrix's questions. It declares in one place
everything the rest of mindledger needs to know about its items:

- ``name`` (the ``Item.family`` value) and ``title`` (one line for reports);
- ``generators``: the generator names whose items it can rebuild (:meth:`Family.regenerate`);
  the suites keep their own builders, which call the family's generator functions;
- ``score(item, answer)``: its pure scorer;
- ``policies`` and ``reference_answer(item, policy, rng)``: which reference agents mean
  something on its items (by policy kind: ``"oracle"``, ``"level"`` for ``level:K`` …) and what
  they answer;
- ``plays``: ``"single"`` (one question, one answer: the default) or ``"episode"`` (many turns,
  played by :mod:`harness.run.episodes`);
- ``scaffold_modules``: which reference-scaffold modules act on its items;
- ``design(item)``: its items' design factors as one typed
  :class:`~mindledger.design.DesignRecord` (depth, belief, game, condition, the scenario that
  ties A, B and C questions …), mapped from its own ``meta`` spellings.

Reports read the registry too: they take every item's factors from its family's ``design``
(:func:`~mindledger.design.common_design` for an unregistered family), and every family a run
holds gets a per-agent accuracy section keyed by its name (``AgentProfile.families``), whether
or not reports know it specially.

**Where it lives, and why here.** Every layer asks the registry: the harness (runner, agents,
scaffold, item verification) and reports. Reports must not import the harness, so the protocol
and the registry live at the bottom, in :mod:`mindledger`; each family is implemented in its own
package (``nesttom/family.py``, ``games/family.py``, ``matrix/family.py``), next to the pure
code it wraps.
:mod:`mindledger` imports none of them: the built-in families are named in :data:`BUILTIN` as module
paths and loaded on the first lookup, as a package's entry points would be. So adding a family
is one module (a class satisfying :class:`Family`) and one registry line (its module in
:data:`BUILTIN`, or ``register(MyFamily())`` for a family defined elsewhere, e.g. in a test).
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mindledger.design import DesignRecord
from mindledger.errors import MindledgerError, NotFoundError
from mindledger.items import Item, Score

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BUILTIN",
    "DuplicateFamilyError",
    "Family",
    "PlayMode",
    "Registry",
    "UnknownFamilyError",
    "all_families",
    "get",
    "names",
    "register",
    "registered",
    "registry",
]

PlayMode = Literal["single", "episode"]
"""How a family's item is played: one turn (``"single"``) or many (``"episode"``)."""

BUILTIN: tuple[str, ...] = ("nesttom.family", "games.family", "matrix.family")
"""Modules holding the built-in families; each exposes ``ITEM_FAMILIES``, a tuple of them."""


class Family(Protocol):
    """What a kind of item declares (see the module docstring)."""

    @property
    def name(self) -> str:
        """The ``Item.family`` value of its items."""
        ...

    @property
    def title(self) -> str:
        """One line naming the family in reports."""
        ...

    @property
    def plays(self) -> PlayMode:
        """``"single"`` (one answer per item) or ``"episode"`` (many turns)."""
        ...

    @property
    def generators(self) -> tuple[str, ...]:
        """The generator names whose items :meth:`regenerate` rebuilds."""
        ...

    @property
    def policies(self) -> tuple[str, ...]:
        """Reference policy kinds that mean something on its items (``"oracle"``, ``"level"``)."""
        ...

    @property
    def scaffold_modules(self) -> tuple[str, ...]:
        """Reference-scaffold modules that act on its items (the others do nothing there)."""
        ...

    def score(self, item: Item, answer: Any) -> Score:
        """Score a (non-None) answer to ``item``; pure."""
        ...

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        """The answer reference agent ``policy`` gives to ``item`` (``rng`` for its chance)."""
        ...

    def regenerate(self, item: Item) -> Item | None:
        """``item`` rebuilt from (generator, version, seed, params); None when it has no
        generator to rerun (imported items)."""
        ...

    def design(self, item: Item) -> DesignRecord:
        """``item``'s design factors (what reports group and stratify by); pure."""
        ...


class UnknownFamilyError(NotFoundError):
    """An item family no registered :class:`Family` declares."""

    def __init__(self, family: str, known: tuple[str, ...]):
        shown = ", ".join(known) or "none"
        super().__init__(f"unknown item family {family!r} (registered families: {shown})")
        self.family = family
        self.known = known


class DuplicateFamilyError(MindledgerError):
    """A second, different family registered under a name already taken (a bug)."""

    def __init__(self, family: str):
        super().__init__(f"item family {family!r} is already registered")
        self.family = family


class Registry:
    """Families by name. Registering the same object twice is a no-op; a different object
    under a taken name is refused."""

    def __init__(self, builtin: tuple[str, ...] = ()):
        self._builtin = builtin
        self._loaded = not builtin
        self._families: dict[str, Family] = {}
        self._lock = threading.RLock()

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            for path in self._builtin:
                for family in importlib.import_module(path).ITEM_FAMILIES:
                    self.register(family)

    def register(self, family: Family) -> Family:
        """Add ``family``; returns it (so a module can write ``TOY = register(Toy())``)."""
        self._load()
        with self._lock:
            have = self._families.get(family.name)
            if have is not None and have is not family:
                raise DuplicateFamilyError(family.name)
            self._families[family.name] = family
        return family

    def unregister(self, name: str) -> None:
        """Remove the family ``name`` (tests that register a toy family undo it)."""
        with self._lock:
            self._families.pop(name, None)

    def get(self, name: str) -> Family:
        """The family ``name``; :class:`UnknownFamilyError` names the registered ones."""
        self._load()
        try:
            return self._families[name]
        except KeyError:
            raise UnknownFamilyError(name, self.names()) from None

    def names(self) -> tuple[str, ...]:
        self._load()
        return tuple(sorted(self._families))

    def all(self) -> tuple[Family, ...]:
        """Every registered family, by name."""
        self._load()
        return tuple(self._families[n] for n in sorted(self._families))


registry = Registry(BUILTIN)
"""The registry the runner, the scaffold and the reports ask."""


def register(family: Family) -> Family:
    """Register ``family`` in :data:`registry`."""
    return registry.register(family)


def get(name: str) -> Family:
    """The registered family ``name`` (:class:`UnknownFamilyError` otherwise)."""
    return registry.get(name)


def names() -> tuple[str, ...]:
    """The registered families' names, sorted."""
    return registry.names()


def all_families() -> tuple[Family, ...]:
    """Every registered family, by name."""
    return registry.all()


@contextlib.contextmanager
def registered(family: Family) -> Iterator[Family]:
    """Register ``family`` for the duration of a ``with`` block (for tests)."""
    registry.register(family)
    try:
        yield family
    finally:
        registry.unregister(family.name)
