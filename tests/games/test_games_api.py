"""The public surface of ``games`` and its purity rules."""

from __future__ import annotations

import ast
from pathlib import Path

import games

PACKAGE = Path(games.__file__).parent


def test_all_names_exist() -> None:
    assert len(set(games.__all__)) == len(games.__all__)
    for name in games.__all__:
        assert hasattr(games, name), name
    for name in ("GAMES", "get_game", "idr_sequence", "check_distinguishability",
                 "generate_items", "score", "score_reply", "reference_answer",
                 "generate_variant", "opponent_history", "generate_abc_items", "summarize_abc"):
        assert name in games.__all__


def test_package_does_no_io_reads_no_clock_and_no_global_rng() -> None:
    banned_modules = {"random", "time", "datetime", "os", "pathlib", "io", "socket", "httpx",
                      "sqlite3", "subprocess"}
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
                        inner.attr == "random"):
                    assert node.attr in ("Generator", "default_rng", "SeedSequence"), (
                        path.name, node.attr)
