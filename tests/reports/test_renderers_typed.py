"""The renderers of a profile (Markdown, HTML, figures) read the typed RunProfile: no string-keyed
look-up (``x["key"]``, ``x.get("key")``) in their modules, but for the trials' CSV, which reads
the stored run's record (``RunData.run``), not the profile."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import reports

RENDERERS = ("render.py", "_html.py", "_report_parts.py", "_plots.py")
ALLOWED = {("render.py", "write_csv")}
"""(module, function) pairs that read something else than the profile by key."""


def _keyed_lookups(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function, line, key) of every string-keyed subscript or ``.get`` call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef) else func
            key = None
            if isinstance(child, ast.Subscript) and isinstance(child.slice, ast.Constant):
                key = child.slice.value
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "get"
                and child.args
                and isinstance(child.args[0], ast.Constant)
            ):
                key = child.args[0].value
            if isinstance(key, str):
                found.append((name, child.lineno, key))
            visit(child, name if isinstance(child, ast.FunctionDef) else func)

    visit(tree, "<module>")
    return found


@pytest.mark.parametrize("module", RENDERERS)
def test_renderers_read_no_profile_data_by_key(module: str) -> None:
    path = Path(reports.__file__).parent / module
    keyed = [(f, line, key) for f, line, key in _keyed_lookups(path) if (module, f) not in ALLOWED]
    assert keyed == [], f"{module} reads by key: {keyed}"


def test_the_check_finds_a_keyed_lookup(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('def f(a):\n    return a["d50"], a.get("role"), a[0], a.get(k)\n')
    assert _keyed_lookups(src) == [("f", 2, "d50"), ("f", 2, "role")]
