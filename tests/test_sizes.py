"""Sizes a reader can hold (issue 26, item 6): no source module over 1,000 lines, no function
over 150 lines, no function with more than 10 parameters (``self``/``cls`` not counted).

The code written before the rule has offenders. They are listed below with their size today,
as a ratchet: a new offender fails, an offender that grows fails, and one that no longer
offends fails too until it is struck from the list — so the list only ever shrinks. Click
commands are offenders like any other (their options are parameters): a command with many
options reads better as a small function over an options value.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mindledger", "nesttom", "games", "ledger", "matrix", "harness", "reports", "tui")

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 150
MAX_PARAMETERS = 10

MODULES_OVER: dict[str, int] = {
}
"""Modules over :data:`MAX_MODULE_LINES`, with their lines today."""

FUNCTIONS_OVER: dict[str, int] = {
}
"""Functions over :data:`MAX_FUNCTION_LINES`, with their lines today."""

PARAMETERS_OVER: dict[str, int] = {
}
"""Functions with more than :data:`MAX_PARAMETERS` parameters, with their count today."""


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    n += (a.vararg is not None) + (a.kwarg is not None)
    first = (a.posonlyargs + a.args)[:1]
    return n - 1 if first and first[0].arg in ("self", "cls") else n


def measure() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Every module, function and parameter list over its limit: ``path`` or
    ``path:Class.function.inner`` → its size."""
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    parameters: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            lines = len(text.splitlines())
            if lines > MAX_MODULE_LINES:
                modules[rel] = lines

            def walk(node: ast.AST, prefix: str, rel: str = rel) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                        name = f"{prefix}{child.name}"
                        length = (child.end_lineno or child.lineno) - child.lineno + 1
                        if length > MAX_FUNCTION_LINES:
                            functions[f"{rel}:{name}"] = length
                        count = _parameters(child)
                        if count > MAX_PARAMETERS:
                            parameters[f"{rel}:{name}"] = count
                        walk(child, name + ".")
                    elif isinstance(child, ast.ClassDef):
                        walk(child, f"{prefix}{child.name}.")
                    else:
                        walk(child, prefix)

            walk(ast.parse(text, filename=rel), "")
    return modules, functions, parameters


def _ratchet(what: str, found: dict[str, int], known: dict[str, int], limit: int) -> list[str]:
    problems = []
    for name, size in sorted(found.items()):
        if name not in known:
            problems.append(f"{name}: {size} {what} (the limit is {limit}): split it")
        elif size > known[name]:
            problems.append(f"{name}: grew to {size} {what} from {known[name]}: split it")
    for name in sorted(set(known) - set(found)):
        problems.append(f"{name}: no longer over {limit} {what}: strike it from the list here")
    return problems


def test_no_new_oversized_module_function_or_parameter_list() -> None:
    modules, functions, parameters = measure()
    problems = (
        _ratchet("lines", modules, MODULES_OVER, MAX_MODULE_LINES)
        + _ratchet("lines", functions, FUNCTIONS_OVER, MAX_FUNCTION_LINES)
        + _ratchet("parameters", parameters, PARAMETERS_OVER, MAX_PARAMETERS)
    )
    assert not problems, "\n".join(problems)


def test_the_measure_sees_a_long_function_and_a_long_parameter_list(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    params = ", ".join(f"p{i}" for i in range(MAX_PARAMETERS + 1))
    source = f"class C:\n  def m(self, {params}):\n    pass\n\ndef long():\n{body}\n"
    tree = ast.parse(source)
    method = tree.body[0].body[0]  # type: ignore[attr-defined]
    assert _parameters(method) == MAX_PARAMETERS + 1
    long = tree.body[1]
    assert isinstance(long, ast.FunctionDef)
    assert (long.end_lineno or 0) - long.lineno + 1 == MAX_FUNCTION_LINES + 1
