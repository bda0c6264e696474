"""``bench/fuzz_inputs.py`` in CI, on a small budget: every target runs and none finds a
traceback (longer runs: ``python bench/fuzz_inputs.py --runs 100000``, or ``--atheris``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fuzz_inputs.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_inputs", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_target_runs_and_finds_no_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH.parents[1]), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(BENCH), "--runs", "300", "--seed", "0"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    targets = {line.split()[0] for line in lines[:-1] if "inputs" in line}
    assert targets == set(_bench().TARGETS) and len(targets) == 7
    assert all(" 0 tracebacks" in line for line in lines if "inputs" in line)
    assert lines[-1].startswith("total: ") and lines[-1].endswith("0 tracebacks (seed 0)")


def test_a_target_that_raises_is_reported_with_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()

    def fragile(data: bytes) -> None:
        if b"\x00" in data or len(data) < 5:
            raise ValueError("boom")

    monkeypatch.setitem(bench.TARGETS, "json", fragile)
    result = bench.fuzz("json", 50, seed=0)
    assert result.inputs == 53 and result.findings
    data, trace = result.findings[0]
    assert isinstance(data, bytes) and "ValueError: boom" in trace


def test_the_argv_target_holds_a_read_only_command_to_creating_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _bench()
    from harness.config.workspace import Workspace

    real_open = Workspace.open
    # as the commands were before issue 25: a read-only open that creates the database
    monkeypatch.setattr(
        Workspace,
        "open",
        classmethod(lambda cls, s, **kw: real_open(s, **{**kw, "read_only": False})),
    )
    with pytest.raises(AssertionError, match=r"`trials` \(it only reads\) created"):
        bench.TARGETS["argv"](b"trials\x00latest")
    bench.TARGETS["argv"](b"nesttom\x00generate\x00--seed\x001\x00--n\x00100000000000")
