"""Every exception class defined in mindledger's packages is under the one error tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from mindledger.errors import MindledgerError, NotFoundError, UserError

PACKAGES = ("mindledger", "nesttom", "games", "ledger", "matrix", "reports", "tui", "harness")

EXEMPT = {
    # click's own exception, which click catches by its class to print the message and exit 2;
    # it only carries a MindledgerError (exit status 2) across click's boundary. Its exit_code
    # is a ClassVar in click and an instance attribute in the tree, so it cannot be both.
    "harness.cli.games_cmd._UserFailure",
    # not an error: SIGTERM or SIGHUP raised as Ctrl-C's KeyboardInterrupt is (its subclass),
    # so that every clean-up that Ctrl-C runs runs for it too, and nothing catches it as one
    "harness.cli.main.Terminated",
}


def _modules(package: str) -> list[ModuleType]:
    root = importlib.import_module(package)
    found = [root]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is what importing it does
        found.append(importlib.import_module(info.name))
    return found


def _exception_classes() -> list[type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        for module in _modules(package):
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__
                ):
                    classes[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [classes[name] for name in sorted(classes)]


def test_every_exception_is_a_mindledger_error() -> None:
    classes = _exception_classes()
    outside = [
        name
        for c in classes
        if not issubclass(c, MindledgerError)
        and (name := f"{c.__module__}.{c.__qualname__}") not in EXEMPT
    ]
    assert outside == []
    assert {f"{c.__module__}.{c.__qualname__}" for c in classes} >= EXEMPT  # no stale entry
    # the walk found the classes it exists to check
    names = {c.__qualname__ for c in classes}
    assert {"VariantError", "ApiError", "NoLedger", "LedgerStateError"} <= names


@pytest.mark.parametrize(
    ("path", "base"),
    [
        ("games.VariantError", MindledgerError),
        ("games.VariantError", RuntimeError),
        ("harness.daemon.ApiError", UserError),
        ("tui.NoLedger", NotFoundError),
    ],
)
def test_former_outsiders_keep_their_place(path: str, base: type[BaseException]) -> None:
    module, name = path.rsplit(".", 1)
    assert issubclass(getattr(importlib.import_module(module), name), base)
