"""The daemon hands the C heap's free memory back after each nightly job (issue 27)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.daemon import memory, scheduler


class _Context:
    def __init__(self, fail: bool):
        self.fail = fail
        self.store = object()

    def nightly(self, *, suite: str, agents: Any, run_id: str | None) -> tuple[str, None]:
        if self.fail:
            raise RuntimeError("the night failed")
        return f"{suite}:{agents[0]}:{run_id}", None


@pytest.mark.parametrize("fail", [False, True])
def test_a_nightly_job_releases_free_memory_when_it_ends(
    monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(scheduler, "_context", lambda: _Context(fail))
    monkeypatch.setattr(scheduler, "announced_run_id", lambda job, store: "r1")
    monkeypatch.setattr(scheduler, "release_free_memory", lambda: calls.append("trim") or True)
    if fail:
        with pytest.raises(RuntimeError, match="the night failed"):
            scheduler.nightly_suite("cmd", "smoke")
    else:
        assert scheduler.nightly_suite("cmd", "smoke") == ("smoke:cmd:r1", None)
    assert calls == ["trim"]


def test_release_free_memory_is_a_no_op_without_malloc_trim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)
    assert memory.release_free_memory() is False


def test_release_free_memory_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_pad: int) -> int:
        raise OSError("not this libc's malloc_trim")

    monkeypatch.setattr(memory, "_malloc_trim", lambda: broken)
    assert memory.release_free_memory() is False


def test_release_free_memory_returns_freed_heap_on_glibc() -> None:
    if memory._malloc_trim() is None:
        pytest.skip("no malloc_trim in this C library (not glibc)")
    # freed blocks in the middle of the heap, pinned by live ones above them: trim returns them
    blocks = [bytearray(64 * 1024) for _ in range(256)]
    del blocks[:-1]
    assert memory.release_free_memory() is True


ARENAS_PROBE = """
import ctypes, ctypes.util, os, sys, threading
from harness.daemon.memory import limit_malloc_arenas
print(limit_malloc_arenas(2), flush=True)
go = threading.Barrier(8)
def work():
    go.wait()  # all eight allocate at once, each a thread of its own
    keep = [bytearray(1500) for _ in range(2000)]  # past pymalloc's 512 bytes: glibc's malloc
    go.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
sys.stderr.flush()
libc.malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def _arenas(env: dict[str, str]) -> tuple[str, int]:
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", ARENAS_PROBE],
        env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env,
        capture_output=True, text=True, timeout=120, check=True,
    )
    return out.stdout.strip(), out.stderr.count("Arena ")


@pytest.mark.skipif(memory._malloc_trim() is None, reason="glibc only")
def test_the_daemon_caps_its_malloc_arenas_unless_the_environment_does() -> None:
    said, arenas = _arenas({})
    assert said == "True" and 1 <= arenas <= 2, arenas
    # the operator's MALLOC_ARENA_MAX stands (here a larger one: eight threads, up to 9 arenas)
    said, arenas = _arenas({"MALLOC_ARENA_MAX": "16"})
    assert said == "False" and arenas > 2, arenas
