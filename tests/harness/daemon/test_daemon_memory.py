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
