"""The public surface: ``reports.__all__`` names exactly what the package exports."""

from __future__ import annotations

import types

import reports


def test_all_names_are_exported_once() -> None:
    for name in reports.__all__:
        assert hasattr(reports, name), name
    assert len(set(reports.__all__)) == len(reports.__all__)
    public = {n for n in vars(reports) if not n.startswith("_")}
    # submodules imported in this session (by whichever test ran first) are attributes too
    submodules = {n for n, v in vars(reports).items() if isinstance(v, types.ModuleType)}
    assert public - submodules == set(reports.__all__)


def test_names_are_their_modules_objects() -> None:
    """``reports`` imports each name from its module when it is first used: the same object."""
    from reports import build_profile, wilson_interval
    from reports._stats import wilson_interval as of_stats
    from reports.profile import build_profile as of_profile

    assert (build_profile, wilson_interval) == (of_profile, of_stats)
    assert set(reports.__all__) <= set(dir(reports))


def test_no_exported_name_is_also_a_submodule() -> None:
    """Importing a submodule sets the package's attribute of that name to the module: an
    exported function named like its module (``reports.verdict`` in ``reports/verdict.py``)
    would turn into the module as soon as anything imported the module directly."""
    import pkgutil

    import ledger

    for package in (reports, ledger):
        submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
        assert submodules.isdisjoint(package.__all__), (package.__name__, submodules & set(
            package.__all__))
