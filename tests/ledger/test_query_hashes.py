"""The proxy's answered queries held as sorted digests: the same set as the hashes' text, in a
fraction of the memory (it grows with the proxy's traffic for as long as the daemon runs)."""

from __future__ import annotations

import hashlib
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from ledger.calls import Calls, QueryHashes


def qh(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@given(st.lists(st.text(max_size=8), max_size=700), st.lists(st.text(max_size=8)))
def test_it_is_the_set_of_the_hashes_it_was_given(added: list[str], probed: list[str]) -> None:
    # past 256 new ones the digests are merged into the sorted part: both parts are probed
    odd = [f"odd:{a}" for a in added[:3]] + ["sha256:" + "zz" * 32, "sha256:ABC"]
    hashes = [qh(a) for a in added] + odd
    held = QueryHashes(hashes[:1])
    for h in hashes[1:]:
        held.add(h)
    assert set(held) == set(hashes) and len(held) == len(set(hashes))
    for p in [*probed, *added]:
        assert (qh(p) in held) == (qh(p) in set(hashes))
    assert all(h in held for h in odd) and 7 not in held and "sha256:" not in held


def test_it_takes_a_third_of_the_memory_of_the_text() -> None:
    texts = [qh(str(n)) for n in range(20_000)]

    def cost(make: type) -> int:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = make(texts)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept) == 20_000
        return after - before

    # the text set's strings are the list's own (shared), so count them against it
    as_text = cost(set) + sum(len(t) + 49 for t in texts)
    assert cost(QueryHashes) < as_text / 3


def test_the_metrics_fold_keeps_counts_without_the_queries() -> None:
    call = {"caller": "a", "target": "t", "request": "r", "query_hash": qh("q"),
            "prediction": None, "status": 200, "answered": True, "response": qh("x")}
    full, counts = Calls(), Calls(asked=False)
    for fold in (full, counts):
        fold.apply(1, "call", call, "2026-12-04T00:00:00Z")
    (a,), (b,) = full.by_caller(), counts.by_caller()
    assert (a.calls, b.calls) == (1, 1) and qh("q") in a.asked and len(b.asked) == 0


def test_merged_and_recent_digests_are_both_found_and_never_doubled() -> None:
    held = QueryHashes()
    texts = [qh(str(n)) for n in range(3_000)]
    for t in texts + texts[::7]:  # past several merges, with repeats of merged ones
        held.add(t)
    assert len(held) == 3_000 and sorted(held) == sorted(texts)
    assert all(t in held for t in texts) and qh("3000") not in held
