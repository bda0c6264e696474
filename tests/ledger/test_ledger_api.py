"""The public surface: ``ledger.__all__`` names exactly what the package exports, each imported
from its module on first use (PEP 562), so that ``import ledger`` costs nothing."""

from __future__ import annotations

import pytest

import ledger


def test_every_exported_name_resolves_once() -> None:
    assert len(set(ledger.__all__)) == len(ledger.__all__)
    for name in ledger.__all__:
        assert hasattr(ledger, name), name
    assert set(ledger.__all__) <= set(dir(ledger))


def test_a_name_is_its_modules_object() -> None:
    from ledger import Store, verify_entries
    from ledger.chain import verify_entries as of_chain
    from ledger.store import Store as of_store

    assert (Store, verify_entries) == (of_store, of_chain)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Stor'"):
        ledger.Stor  # noqa: B018
    with pytest.raises(ImportError):
        from ledger import Stor  # noqa: F401
