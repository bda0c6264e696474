"""The canonical JSON form. **This is a contract**: hashes of items, trials and ledger entries
depend on it, so changing it invalidates every stored hash.

The canonical form of a JSON-compatible value is ``json.dumps`` with

- keys sorted (by code point, which is what ``sort_keys`` does for ``str`` keys),
- compact separators ``(",", ":")`` and no whitespace anywhere,
- ``ensure_ascii=False``: non-ASCII characters appear as themselves, encoded as UTF-8,
- ``allow_nan=False``: NaN and the infinities are refused,
- floats written by Python's shortest round-trip ``repr`` (``0.1`` stays ``0.1``), integers as
  integers; tuples are written as lists.

Test vectors (``tests/test_canonical.py``):

>>> canonical_json({"b": 1, "a": [1.5, "é", None, True]})
b'{"a":[1.5,"\\xc3\\xa9",null,true],"b":1}'
>>> content_hash({"a": 1})
'sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862'
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "content_hash"]


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
"""What ``json.dumps`` with these arguments would build on every call (an encoder keeps no
state between calls): built once, as trials store several canonical values each."""


def canonical_json(value: Any) -> bytes:
    """Return the canonical UTF-8 JSON bytes of ``value`` (see the module docstring)."""
    return _ENCODER.encode(value).encode("utf-8")


def content_hash(value: Any) -> str:
    """Return ``"sha256:<hex>"`` of the canonical JSON of ``value``: its identity."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
