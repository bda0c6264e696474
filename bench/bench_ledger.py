"""Prediction-ledger speed, side by side with the physical limits, in one run.

    python bench/bench_ledger.py [--commits 1000] [--entries 30000] [--rounds 3]

Each figure is the best of ``--rounds`` runs, commits alternating with the bare loop, so a
shared machine's noise hits both sides alike.

Commits: through the Python client on SQLite (WAL, ``synchronous=FULL``: every commit is on
disk when it returns), against a bare ``sqlite3`` INSERT + COMMIT loop of rows of the same size
in the same directory — the fsync-bound floor. With ``MINDLEDGER_TEST_PG_URL`` set, the same on
PostgreSQL against a bare psycopg loop.

Proofs: an inclusion proof and a consistency proof in a ledger of ``--tree`` entries (default
1,000,000), in milliseconds, with the number of stored tree nodes each reads (O(log n); the
entries are never read).

Verification: entries verified per second over a ledger of commit/observe/reveal entries, in
the default mode (every hash, link and commitment; the head's signature) and the full mode
(every Ed25519 signature, agent signature and score), against raw ``hashlib.sha256`` over the
same bytes and raw Ed25519 verification.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.chain import hash_input
from ledger.db import normalise_url, open_engine
from ledger.keys import ENTRY_TAG
from ledger.merkle import CompactRange, leaf_hash, verify_consistency, verify_inclusion
from ledger.predictions import Ledger
from ledger.protocol import (
    commitment,
    new_salt,
    prediction_body,
    prediction_id,
    provenance,
    query_hash,
    query_messages,
    response_hash,
)
from ledger.scoring import score_prediction
from ledger.tree import digest_bytes

KEY = Ed25519PrivateKey.from_private_bytes(b"\x42" * 32)
DIST = {"a": 0.6, "b": 0.3, "c": 0.1}


def rate(n: int, fn: Callable[[], Any], repeat: int = 1) -> float:
    """Items per second, the best of ``repeat`` runs (the machine is shared)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def bare_sqlite(path: Path, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE t (seq INTEGER PRIMARY KEY, payload TEXT, prev TEXT UNIQUE, h TEXT UNIQUE)"
    )
    payload = "x" * 400

    def loop() -> None:
        for i in range(n):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES (?, ?, ?, ?)", (i, payload, f"p{i}", f"h{i}"))
            db.execute("COMMIT")

    r = rate(n, loop)
    db.close()
    return r


def client_commits(led: Ledger, n: int, tag: str) -> float:
    client = led.client("bench")
    client.commit("target", f"{tag}-warm-up", DIST)

    def loop() -> None:
        for i in range(n):
            client.commit("target", f"{tag}-{i}", DIST)

    return rate(n, loop)


def client_cycles(led: Ledger, n: int, tag: str) -> float:
    client = led.client("bench")

    def loop() -> None:
        for i in range(n):
            with client.predict("target", f"{tag}-cycle-{i}", DIST, via=lambda q: "a") as p:
                p.ask()

    return rate(n, loop)


def populate(led: Ledger, entries: int) -> None:
    """Fill a ledger quickly: many commit/observe/reveal entries per transaction (one
    transaction per 300 predictions; the entries are the same as one at a time)."""
    per_batch = 300
    made = 0
    while made < entries:

        def build(cur: Any, now: str, base: int = made) -> tuple[list[Any], None]:
            specs: list[Any] = []
            for i in range(per_batch):
                body = prediction_body(
                    predictor="bench", target="target", query=f"q{base + i}", distribution=DIST
                )
                salt = new_salt()
                digest = commitment(body, salt)
                pid = prediction_id(digest)
                specs.append(
                    (
                        "commit",
                        pid,
                        {
                            "predictor": "bench",
                            "target": "target",
                            "query": body["query"],
                            "item": None,
                            "condition": None,
                            "commitment": digest,
                            "deadline": led.commit_reveal.deadline(now),
                            "agent_signature": None,
                            "query_hash": query_hash(query_messages(body["query"])),
                        },
                    )
                )
                source = provenance("matrix", f"bench-{base + i}", response_hash("a"))
                specs.append(("observe", pid, {"answer": "a", "provenance": source}))
                scores = score_prediction(DIST, "a", ["a"])
                specs.append(
                    ("reveal", pid, {"revealed": body, "salt": salt.hex(), "scores": scores})
                )
            return specs, None

        led.writer.append(build)  # the bench's shortcut: batches instead of one entry per commit
        made += 3 * per_batch


def verify_rates(led: Ledger, repeat: int) -> dict[str, float]:
    entries = led.entries()
    n = len(entries)
    out = {"entries": float(n)}
    assert led.verification().ok
    out["default"] = rate(n, lambda: led.verification(), repeat)
    out["full"] = rate(n, lambda: led.verification(full=True))
    data = [
        hash_input(e.seq, e.prev_hash, e.prev_signature, e.time, e.kind, e.subject, e.payload_json)
        for e in entries
    ]
    out["sha256"] = rate(n, lambda: [hashlib.sha256(d).hexdigest() for d in data], repeat)
    pub = KEY.public_key()
    sample = entries[: min(n, 3000)]
    sigs = [(bytes.fromhex(e.signature), ENTRY_TAG + e.hash.encode()) for e in sample]
    out["ed25519"] = rate(len(sample), lambda: [pub.verify(s, m) for s, m in sigs], repeat)
    out["read"] = rate(n, lambda: sum(1 for _ in led.iter_entries()), repeat)
    return out


def big_tree(path: Path, n: int) -> Ledger:
    """A ledger of ``n`` entries as the proofs see it: its Merkle tree in full (2n stored
    nodes over synthetic entry hashes) and, of the entries themselves, only the rows a proof
    names. Proofs read the tree, never the entries: that is what this measures."""
    engine = open_engine(f"sqlite:///{path}")
    tree = CompactRange()
    raw = engine.raw_connection()
    cur = raw.cursor()
    batch: list[tuple[int, int, str]] = []
    for i in range(n):
        digest = hashlib.sha256(i.to_bytes(8, "big")).digest()
        batch.extend((x.level, x.index, x.hash.hex()) for x in tree.append(leaf_hash(digest)))
        if len(batch) >= 50_000:
            cur.executemany("INSERT INTO ledger_tree VALUES (?, ?, ?)", batch)
            batch.clear()
    cur.executemany("INSERT INTO ledger_tree VALUES (?, ?, ?)", batch)
    for seq in sorted({1, n // 3, n // 2, n - 7, n}):
        digest = "sha256:" + hashlib.sha256((seq - 1).to_bytes(8, "big")).hexdigest()
        cur.execute(
            "INSERT INTO ledger_entries VALUES (?, 'x', 'x', '{}', '', ?, '', ?, '')",
            (seq, f"prev{seq}", digest),
        )
    raw.commit()
    raw.close()
    return Ledger(engine, KEY, witness_dir=None)


def proof_timings(led: Ledger, n: int, repeat: int) -> dict[str, float]:
    """Milliseconds per inclusion and consistency proof (the best of ``repeat`` rounds of
    several proofs), checked against the root; the nodes each read."""
    picks = sorted({1, n // 3, n // 2, n - 7, n})
    root = led.inclusion_proof(n, n)["root"]
    best_inc = best_con = float("inf")
    nodes_inc = nodes_con = 0
    for _ in range(repeat):
        t = time.perf_counter()
        proofs = [led.inclusion_proof(seq, n) for seq in picks]
        best_inc = min(best_inc, (time.perf_counter() - t) / len(picks))
        t = time.perf_counter()
        cons = [led.consistency_proof(old, n) for old in picks[:-1]]
        best_con = min(best_con, (time.perf_counter() - t) / len(cons))
    for seq, p in zip(picks, proofs, strict=True):
        leaf = leaf_hash(hashlib.sha256((seq - 1).to_bytes(8, "big")).digest())
        path = [digest_bytes(h) for h in p["proof"]]
        assert verify_inclusion(leaf, seq - 1, n, path, digest_bytes(root))
        nodes_inc = max(nodes_inc, p["nodes_read"])
    for c in cons:
        path = [digest_bytes(h) for h in c["proof"]]
        assert verify_consistency(
            c["old"], n, digest_bytes(c["old_root"]), digest_bytes(c["new_root"]), path
        )
        nodes_con = max(nodes_con, c["nodes_read"])
    return {
        "inclusion_ms": best_inc * 1000,
        "consistency_ms": best_con * 1000,
        "inclusion_nodes": nodes_inc,
        "consistency_nodes": nodes_con,
    }


def postgres(url: str, n: int, tmp: Path) -> tuple[float, float] | None:
    import sqlalchemy as sa

    schema = "bench_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(normalise_url(url))
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        sep = "&" if "?" in url else "?"
        engine = open_engine(f"{url}{sep}options=-csearch_path%3D{schema}")
        raw = engine.raw_connection()
        cur = raw.cursor()
        cur.execute("CREATE TABLE t (seq BIGINT PRIMARY KEY, payload TEXT, h TEXT UNIQUE)")
        raw.commit()

        def loop() -> None:
            for i in range(n):
                cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (i, "x" * 400, f"h{i}"))
                raw.commit()

        bare = rate(n, loop)
        raw.close()
        led = Ledger(engine, KEY, witness_dir=tmp / "pg-witness")
        ours = client_commits(led, n, "pg")
        assert led.verify() == []
        led.close()
        engine.dispose()
        return bare, ours
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--entries", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=3, help="Repeat and keep the best of each.")
    ap.add_argument(
        "--tree", type=int, default=1_000_000, help="Entries in the ledger the proofs run on."
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        tmp = Path(d)
        engine = open_engine(f"sqlite:///{tmp / 'ledger.db'}")
        led = Ledger(engine, KEY, witness_dir=tmp / "witness")
        bare = commits = cycles = 0.0
        for r in range(args.rounds):  # alternate, so both see the same disk and load
            bare = max(bare, bare_sqlite(tmp / f"bare{r}.db", args.commits))
            commits = max(commits, client_commits(led, args.commits, f"c{r}"))
            cycles = max(cycles, client_cycles(led, args.cycles, f"r{r}"))
        assert led.verify() == []
        big = Ledger(open_engine(f"sqlite:///{tmp / 'big.db'}"), KEY, witness_dir=tmp / "w2")
        populate(big, args.entries)
        v = verify_rates(big, args.rounds)
        t = time.perf_counter()
        proofs_led = big_tree(tmp / "tree.db", args.tree)
        built = time.perf_counter() - t
        proofs = proof_timings(proofs_led, args.tree, args.rounds)
        pg = None
        if os.environ.get("MINDLEDGER_TEST_PG_URL"):
            pg = postgres(os.environ["MINDLEDGER_TEST_PG_URL"], min(args.commits, 300), tmp)

    print(f"{'measure':<58}{'per second':>12}{'ratio':>10}")
    rows = [
        ("bare sqlite3 INSERT+COMMIT (WAL, synchronous=FULL)", bare, None),
        ("ledger commits via the Python client (SQLite, durable)", commits, commits / bare),
        ("  predict blocks: commit+observe+reveal, 3 entries each", cycles, cycles * 3 / bare),
    ]
    if pg:
        rows += [
            ("bare psycopg INSERT+COMMIT (PostgreSQL)", pg[0], None),
            ("ledger commits via the Python client (PostgreSQL)", pg[1], pg[1] / pg[0]),
        ]
    rows += [
        ("raw hashlib.sha256 over the entries' canonical bytes", v["sha256"], None),
        ("reading the entries (SQLite, no checks)", v["read"], v["read"] / v["sha256"]),
        ("ledger verify, default (hashes, links, reveals, head sig)", v["default"],
         v["default"] / v["sha256"]),
        ("raw Ed25519 verify (cryptography)", v["ed25519"], None),
        ("ledger verify --full (every signature, every score)", v["full"],
         v["full"] / v["ed25519"]),
    ]  # fmt: skip
    for name, value, ratio in rows:
        shown = f"{ratio:>9.2f}x" if ratio is not None else f"{'(base)':>10}"
        print(f"{name:<58}{value:>12,.0f}{shown}")
    log2 = (args.tree - 1).bit_length()
    print(
        f"\nproofs in a ledger of {args.tree:,} entries (tree of {2 * args.tree:,} stored nodes "
        f"built in {built:.1f} s):\n"
        f"  inclusion proof   {proofs['inclusion_ms']:.2f} ms, reads ≤ "
        f"{proofs['inclusion_nodes']} stored nodes (⌈log2 n⌉ = {log2}), no entries\n"
        f"  consistency proof {proofs['consistency_ms']:.2f} ms, reads ≤ "
        f"{proofs['consistency_nodes']} stored nodes, no entries"
    )
    print(
        f"\ngoals: commits ≥ 1,000/s → {commits:,.0f}/s "
        f"({'met' if commits >= 1000 else 'NOT met'}); verify ≥ 50,000 entries/s → "
        f"{v['default']:,.0f}/s ({'met' if v['default'] >= 50000 else 'NOT met'}) "
        f"over {int(v['entries']):,} entries; inclusion proof < 5 ms in {args.tree:,} → "
        f"{proofs['inclusion_ms']:.2f} ms ({'met' if proofs['inclusion_ms'] < 5 else 'NOT met'})"
        f"; consistency proof O(log n) nodes → {proofs['consistency_nodes']} ≤ "
        f"{2 * log2 + 1} ({'met' if proofs['consistency_nodes'] <= 2 * log2 + 1 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
