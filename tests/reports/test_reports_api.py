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
