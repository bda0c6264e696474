"""The public surface of ``matrix``, its purity rules, and its place in the family registry."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import matrix
from mindledger import family

PACKAGE = Path(matrix.__file__).parent


def test_all_names_exist() -> None:
    assert len(set(matrix.__all__)) == len(matrix.__all__)
    for name in matrix.__all__:
        assert hasattr(matrix, name), name
    for name in ("make_items", "candidates", "apply_filter", "prediction_item", "read_score",
                 "TargetRecord", "PredictionRecord", "MATRIX_FAMILY"):  # fmt: skip
        assert name in matrix.__all__


def test_package_does_no_io_reads_no_clock_and_no_global_rng() -> None:
    banned_modules = {"random", "time", "datetime", "os", "pathlib", "io", "socket", "httpx",
                      "sqlite3", "subprocess", "asyncio", "ledger", "harness", "reports", "tui"}  # fmt: skip
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                names = set()
            assert not names & banned_modules, (path.name, names)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("open", "print", "input"), (path.name, node.func.id)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                inner = node.value
                if isinstance(inner.value, ast.Name) and inner.value.id in ("np", "numpy") and (
                        inner.attr == "random"):  # fmt: skip
                    assert node.attr in ("Generator", "default_rng", "SeedSequence"), (
                        path.name, node.attr)  # fmt: skip


def test_the_family_is_builtin_like_nesttoms_and_the_games() -> None:
    """Registered by the registry's BUILTIN, not by importing the harness: a fresh
    interpreter that imports only the registry finds it, and loads no harness module."""
    assert "matrix.family" in family.BUILTIN
    assert family.get("matrix") is matrix.MATRIX_FAMILY
    script = (
        "import sys\n"
        "from mindledger import family\n"
        "fam = family.get('matrix')\n"
        "print(fam.name, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('harness', 'reports', 'ledger', 'tui')))\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["matrix", "[]"]


def test_every_run_item_regenerates_through_the_registry() -> None:
    items = matrix.candidates(3, matrix.candidate_counts(matrix.DEFAULT_KINDS, 12))
    fam = family.get("matrix")
    assert {matrix.kind_of(it) for it in items} == set(matrix.DEFAULT_KINDS)
    assert all(fam.regenerate(it) == it for it in items)
    predicted = matrix.prediction_item(items[0], "p", "t", 3)
    assert fam.regenerate(predicted) is None  # rebuilt from its base item, not from a seed
