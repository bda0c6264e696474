"""No function in reports/ hands back an untyped dict (issue 26).

A value that callers read by string key drifts: two readers spell a key two ways and nothing
notices. So every function in ``reports`` returns a typed value (a frozen dataclass, a NamedTuple,
a TypedDict for a JSON fragment), except the JSON serialisers themselves: the ``to_dict`` /
``to_json`` methods of the typed models, whose output *is* the untyped JSON document.

The check reads the source with ``ast`` rather than importing it, so it sees every function,
nested ones included, and every part of a return annotation (``X | None``, ``tuple[str, dict[str,
Any]]``, ``dict[str, dict[str, Any]]``). A JSON value that really is JSON says so:
:data:`reports._json.JsonObject` (``dict[str, JsonValue]``), as ``json_schema`` returns.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import reports

ROOT = Path(reports.__file__).parent

# The JSON serialisers: a typed model's own JSON form is an untyped JSON object by nature.
SERIALISERS = frozenset({"to_dict", "to_json"})

MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})
UNTYPED = frozenset({"Any", "object"})


def _name(node: ast.expr) -> str | None:
    """`dict`, `typing.Dict`, `collections.abc.Mapping`... -> the last part of the name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _untyped_mappings(node: ast.expr) -> list[str]:
    """Each `dict[K, Any]`-like part of an annotation (also inside `X | None`, `Optional[...]`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _untyped_mappings(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _untyped_mappings(node.left) + _untyped_mappings(node.right)
    if not isinstance(node, ast.Subscript):
        return []
    name = _name(node.value)
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if name in MAPPINGS and len(args) == 2 and _name(args[1]) in UNTYPED:
        return [ast.unparse(node)]
    return [found for arg in args for found in _untyped_mappings(arg)]


def _offenders(source: str, path: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.returns is None or node.name in SERIALISERS:
            continue
        for found in _untyped_mappings(node.returns):
            out.append(f"{path}:{node.lineno} {node.name} -> {found}")
    return out


def test_no_function_in_reports_returns_an_untyped_dict() -> None:
    paths = sorted(ROOT.rglob("*.py"))
    assert len(paths) > 50 and (ROOT / "sections" / "_resamples.py") in paths  # not vacuous
    offenders = [
        found
        for path in paths
        for found in _offenders(
            path.read_text(encoding="utf-8"), str(path.relative_to(ROOT.parent))
        )
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "returns",
    [
        "dict[str, Any]",
        "typing.Dict[str, Any]",
        "Mapping[str, object]",
        "collections.abc.MutableMapping[str, Any]",
        "dict[str, Any] | None",
        "Optional[dict[str, Any]]",
        "tuple[int, dict[str, Any]]",
        "dict[str, dict[str, Any]]",
        "list[Mapping[str, Any]]",
        "'dict[str, Any]'",
    ],
)
def test_the_check_sees_an_untyped_dict(returns: str) -> None:
    found = _offenders(f"def f() -> {returns}: ...\n", "x.py")
    assert len(found) == 1 and found[0].startswith("x.py:1 f -> ")


@pytest.mark.parametrize(
    "source",
    [
        "def f() -> dict[str, float]: ...",
        "def f() -> Mapping[str, list[int]]: ...",
        "def f() -> JsonObject: ...",
        "def f() -> Mapping[str, JsonValue] | None: ...",
        "def f() -> dict[str, AgentExtra]: ...",
        "def f(): ...",
        "def f(x: dict[str, Any]) -> int: ...",
        "class C:\n    def to_dict(self) -> dict[str, Any]: ...",
        "class C:\n    def to_json(self) -> dict[str, Any]: ...",
    ],
)
def test_the_check_lets_typed_returns_and_serialisers_pass(source: str) -> None:
    assert _offenders(source + "\n", "x.py") == []
