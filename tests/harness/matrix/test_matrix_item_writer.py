"""The matrix's item writer groups the finished items' trials: while one group is written,
the items finishing meanwhile wait and go together in the next write; each caller gets its
own trials' outcomes, and a failed write fails every caller of that group, not the next.
(The stored path through a real database is tested by every stored matrix run.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

import harness.matrix.trials as matrix_trials


async def test_items_finishing_during_a_write_share_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[list[Any], list[Any]]] = []
    release = threading.Event()

    def store_trials(store: Any, pitems: Sequence[Any], trials: Sequence[Any]) -> list[Any]:
        calls.append((list(pitems), list(trials)))
        if len(calls) == 1:
            release.wait(10)  # the first write is slow: the others queue behind it
        if "bad" in trials:
            raise OSError("disk full")
        return [f"ok:{t}" for t in trials]

    monkeypatch.setattr(matrix_trials, "store_trials", store_trials)
    writer = matrix_trials.ItemWriter(object())  # type: ignore[arg-type]
    first = asyncio.ensure_future(writer.write(["p0"], ["t0"]))
    await asyncio.sleep(0.05)
    rest = [asyncio.ensure_future(writer.write([f"p{i}"], [f"t{i}a", f"t{i}b"]))
            for i in (1, 2, 3)]
    await asyncio.sleep(0)
    release.set()
    assert await first == ["ok:t0"]
    assert [await r for r in rest] == [[f"ok:t{i}a", f"ok:t{i}b"] for i in (1, 2, 3)]
    assert calls[1] == (["p1", "p2", "p3"], ["t1a", "t1b", "t2a", "t2b", "t3a", "t3b"])
    assert len(calls) == 2

    # a failed write fails its callers; the writer goes on with the next group
    calls.clear()
    bad = asyncio.ensure_future(writer.write(["p4"], ["bad"]))
    with pytest.raises(OSError, match="disk full"):
        await bad
    assert await writer.write(["p5"], ["t5"]) == ["ok:t5"]
