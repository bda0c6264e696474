"""Reading JSON that someone else wrote: one rule for every input document.

Story files, game specs, ledger arguments, exports, proof bundles, API bodies: each is parsed
by :func:`parse_json`, which accepts only what every later step can handle, and otherwise
raises :class:`~mindledger.errors.InputError` naming the input and what was expected:

- at most ``max_bytes`` bytes (default 16 MiB), valid UTF-8 (a byte-order mark is allowed);
- nested at most ``max_depth`` levels (default 64);
- strings without lone surrogates (``"\\ud800"`` parses as JSON but cannot be written as UTF-8,
  so it could never be hashed or stored);
- integers of at most 30 digits, finite floats, and no ``NaN`` or ``Infinity`` literals.

Nothing else is checked here: what the fields mean is the caller's business.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from mindledger.errors import InputError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "check_json_value",
    "parse_json",
    "read_json_file",
]

MAX_BYTES = 16 * 1024 * 1024
"""Largest JSON document accepted by default."""
MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted by default."""
MAX_INT_DIGITS = 30
"""Longest integer accepted (a 30-digit integer is already far beyond any count or seed)."""


def _int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)
"""What ``json.loads`` with these hooks would build on every call (a decoder keeps no state
between calls; building one costs as much as parsing a small document): built once."""


def parse_json(
    data: str | bytes,
    *,
    where: str | None = None,
    source: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Parse ``data`` under the rule in the module docstring. ``source`` names the input (a
    file, an option), ``where`` the field; both go into the error message."""
    if isinstance(data, bytes | bytearray):
        if len(data) > max_bytes:
            raise InputError(
                f"{len(data):,} bytes is more than the {max_bytes:,} accepted",
                where=where,
                source=source,
            )
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not valid UTF-8 (byte {exc.start}: {exc.reason})", where=where, source=source
            ) from None
    else:
        text = data
        if len(text) > max_bytes:
            raise InputError(
                f"{len(text):,} characters is more than the {max_bytes:,} accepted",
                where=where,
                source=source,
            )
    text = text.removeprefix("\ufeff")
    try:
        if text.startswith("\ufeff"):  # a second one: refused as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except RecursionError:
        raise InputError(
            f"nested too deeply (at most {max_depth} levels)", where=where, source=source
        ) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", where=where, source=source) from None
    if not _cannot_break_the_rule(text, max_depth):
        check_json_value(value, where=where, source=source, max_depth=max_depth)
    return value


def _cannot_break_the_rule(text: str, max_depth: int) -> bool:
    """True when the value parsed from ``text`` is sure to pass :func:`check_json_value`, as
    most small documents are, found by scanning the text instead of walking the value: no more
    opening brackets than ``max_depth`` cannot nest deeper, and without ``\\u`` escapes a
    string holds a lone surrogate only if the text does (which encoding it finds)."""
    if "\\u" in text or text.count("[") + text.count("{") > max_depth:
        return False
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def check_json_value(
    value: Any,
    *,
    where: str | None = None,
    source: str | None = None,
    max_depth: int = MAX_DEPTH,
) -> None:
    """Check an already parsed value (depth, strings that are valid Unicode), iteratively so
    that a deep value cannot exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node, where, source)
        elif isinstance(node, dict | list):
            if depth > max_depth:
                raise InputError(
                    f"nested too deeply (at most {max_depth} levels)", where=where, source=source
                )
            if isinstance(node, dict):
                for k, v in node.items():
                    _check_text(k, where, source)
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in node)


def _check_text(text: str, where: str | None, source: str | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"a string holds a lone surrogate ({text[exc.start]!r}), which is not Unicode text",
            where=where,
            source=source,
        ) from None


def read_json_file(path: str | Path, *, max_bytes: int = MAX_BYTES) -> Any:
    """Read and parse the JSON file at ``path`` (``-``: standard input) under the rule of
    :func:`parse_json`; a file that cannot be read is an InputError naming it."""
    source = str(path)
    try:
        if source == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", source=source) from None
    return parse_json(data, source=source, max_bytes=max_bytes)
