"""The RFC 6962 Merkle tree: the published test vectors, stored-node proofs against the recursive
definitions, verification against an independent recursive verifier, and the key-count bounds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.merkle import (
    EMPTY_ROOT,
    CompactRange,
    Node,
    NodeKey,
    consistency_keys,
    consistency_proof,
    inclusion_keys,
    inclusion_proof,
    leaf_hash,
    new_nodes,
    new_nodes_batch,
    node_hash,
    reference_path,
    reference_proof,
    reference_root,
    root_from,
    root_keys,
    verify_consistency,
    verify_inclusion,
)

h = bytes.fromhex

# --- RFC 6962 test vectors --------------------------------------------------------------------
# The reference tree of the Certificate Transparency implementations, copied from
# transparency-dev/merkle: testonly/constants.go (LeafInputs, NodeHashes, RootHashes) and
# proof/verify_test.go (inclusionProofs, consistencyProofs). The same inputs, roots, paths and
# the first four consistency proofs are in google/certificate-transparency
# cpp/merkletree/merkle_tree_test.cc (kInputs, kSHA256Roots, kSHA256Paths, kSHA256Proofs).
# Those files number leaves from 1; the indices below are 0-based.

LEAF_INPUTS = [
    h(""),
    h("00"),
    h("10"),
    h("2021"),
    h("3031"),
    h("40414243"),
    h("5051525354555657"),
    h("606162636465666768696a6b6c6d6e6f"),
]

NODE_HASHES = [  # [level][index]: every perfect subtree of the 8-leaf tree
    [
        h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
        h("0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7"),
        h("07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7"),
        h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        h("4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658"),
        h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
        h("46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
    ],
    [
        h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
        h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
        h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
        h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
    ],
    [
        h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
    ],
    [h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")],
]

ROOTS = [  # by tree size, 0..8
    h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    h("aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    h("4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    h("76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef"),
    h("ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
]

INCLUSION_PROOFS = [  # (index, size, path)
    (0, 1, []),
    (
        0,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        5,
        8,
        [
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (2, 3, [h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")]),
    (
        1,
        5,
        [
            h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
]

CONSISTENCY_PROOFS = [  # (old, new, proof)
    (1, 1, []),
    (
        1,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        6,
        8,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (
        2,
        5,
        [
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
    (
        6,
        7,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
]

SOME_HASH = h("abacaba000000000000000000000000000000000000000000060061e00123456")


# --- helpers ----------------------------------------------------------------------------------


def store(leaves: Sequence[bytes]) -> dict[NodeKey, bytes]:
    """The stored nodes of a tree, built with :func:`new_nodes` one leaf at a time."""
    nodes: dict[NodeKey, bytes] = {}
    for size, leaf in enumerate(leaves, 1):
        for node in new_nodes(size, leaf, lambda level, index: nodes[level, index]):
            assert (node.level, node.index) not in nodes  # written once, never overwritten
            nodes[node.level, node.index] = node.hash
    return nodes


class Reads(Mapping[NodeKey, bytes]):
    """The nodes named by ``keys`` and no others, recording which are read."""

    def __init__(self, nodes: Mapping[NodeKey, bytes], keys: Sequence[NodeKey]):
        self._nodes = {key: nodes[key] for key in keys}
        self.read: set[NodeKey] = set()

    def __getitem__(self, key: NodeKey) -> bytes:
        value = self._nodes[key]
        self.read.add(key)
        return value

    def __iter__(self) -> Iterator[NodeKey]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def ref_verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """An independent verifier: rebuild the root by the recursion of RFC 6962 §2.1.1."""

    def rebuild(m: int, n: int, path: Sequence[bytes]) -> bytes | None:
        if n == 1:
            return None if path else leaf
        if not path:
            return None
        k = _split(n)
        if m < k:
            sub = rebuild(m, k, path[:-1])
            return None if sub is None else node_hash(sub, path[-1])
        sub = rebuild(m - k, n - k, path[:-1])
        return None if sub is None else node_hash(path[-1], sub)

    if not 0 <= index < size or any(len(x) != 32 for x in [leaf, root, *proof]):
        return False
    return rebuild(index, size, proof) == root


def ref_verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """An independent verifier: rebuild both roots by the recursion of RFC 6962 §2.1.2."""

    def rebuild(m: int, n: int, whole: bool, p: Sequence[bytes]) -> tuple[bytes, bytes] | None:
        if m == n:
            if whole:
                return None if p else (old_root, old_root)
            return (p[0], p[0]) if len(p) == 1 else None
        if not p:
            return None
        k = _split(n)
        if m <= k:
            sub = rebuild(m, k, whole, p[:-1])
            return None if sub is None else (sub[0], node_hash(sub[1], p[-1]))
        sub = rebuild(m - k, n - k, False, p[:-1])
        return None if sub is None else (node_hash(p[-1], sub[0]), node_hash(p[-1], sub[1]))

    if not 0 <= old <= new or any(len(x) != 32 for x in [old_root, new_root, *proof]):
        return False
    if old == 0:
        return not proof and old_root == EMPTY_ROOT
    return rebuild(old, new, True, proof) == (old_root, new_root)


def flip(proof: Sequence[bytes], i: int, byte: int = 0, bit: int = 3) -> list[bytes]:
    out = list(proof)
    changed = bytearray(out[i])
    changed[byte] ^= 1 << bit
    out[i] = bytes(changed)
    return out


def inclusion_probes(
    index: int, size: int, proof: list[bytes], root: bytes, leaf: bytes
) -> list[tuple[str, tuple[bytes, int, int, list[bytes], bytes]]]:
    """Wrong claims built from a good one (after transparency-dev/merkle's
    corruptInclusionProof); none of them may verify."""
    probes = [
        ("index - 1", (leaf, index - 1, size, proof, root)),
        ("index + 1", (leaf, index + 1, size, proof, root)),
        ("index ^ 2", (leaf, index ^ 2, size, proof, root)),
        ("size * 2", (leaf, index, size * 2, proof, root)),
        ("size // 2", (leaf, index, size // 2, proof, root)),
        ("wrong leaf", (b"WrongLeaf", index, size, proof, root)),
        ("wrong leaf hash", (SOME_HASH, index, size, proof, root)),
        ("empty root", (leaf, index, size, proof, EMPTY_ROOT)),
        ("random root", (leaf, index, size, proof, SOME_HASH)),
        ("trailing garbage", (leaf, index, size, [*proof, b""], root)),
        ("trailing root", (leaf, index, size, [*proof, root], root)),
        ("preceding garbage", (leaf, index, size, [b"", *proof], root)),
        ("preceding root", (leaf, index, size, [root, *proof], root)),
    ]
    for i in range(len(proof)):
        probes.append((f"proof[{i}] bit flipped", (leaf, index, size, flip(proof, i), root)))
    if proof:
        probes.append(("removed component", (leaf, index, size, proof[:-1], root)))
    if len(proof) > 1:
        probes.append(
            ("inserted component", (leaf, index, size, [proof[0], SOME_HASH, *proof[1:]], root))
        )
    return probes


def consistency_probes(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> list[tuple[str, tuple[int, int, bytes, bytes, list[bytes]]]]:
    """Wrong claims built from a good one with a non-empty proof (after
    transparency-dev/merkle's corruptConsistencyProof); none of them may verify."""
    probes = [
        ("old - 1", (old - 1, new, old_root, new_root, proof)),
        ("old + 1", (old + 1, new, old_root, new_root, proof)),
        ("old ^ 2", (old ^ 2, new, old_root, new_root, proof)),
        ("new * 2", (old, new * 2, old_root, new_root, proof)),
        ("new // 2", (old, new // 2, old_root, new_root, proof)),
        ("wrong old root", (old, new, b"WrongRoot", new_root, proof)),
        ("wrong new root", (old, new, old_root, b"WrongRoot", proof)),
        ("random old root", (old, new, SOME_HASH, new_root, proof)),
        ("random new root", (old, new, old_root, SOME_HASH, proof)),
        ("swapped roots", (old, new, new_root, old_root, proof)),
        ("empty proof", (old, new, old_root, new_root, [])),
        ("trailing garbage", (old, new, old_root, new_root, [*proof, b""])),
        ("trailing old root", (old, new, old_root, new_root, [*proof, old_root])),
        ("trailing new root", (old, new, old_root, new_root, [*proof, new_root])),
        ("preceding garbage", (old, new, old_root, new_root, [b"", *proof])),
        ("preceding old root", (old, new, old_root, new_root, [old_root, *proof])),
        ("preceding new root", (old, new, old_root, new_root, [new_root, *proof])),
        ("preceding proof[0]", (old, new, old_root, new_root, [proof[0], *proof])),
        ("truncated proof", (old, new, old_root, new_root, proof[:-1])),
    ]
    for i in range(len(proof)):
        probes.append(
            (f"proof[{i}] bit flipped", (old, new, old_root, new_root, flip(proof, i, bit=4)))
        )
    return probes


VECTOR_LEAVES = [leaf_hash(d) for d in LEAF_INPUTS]
VECTOR_NODES = store(VECTOR_LEAVES)


# --- the vectors ------------------------------------------------------------------------------


def test_hashes_match_the_vectors() -> None:
    assert ROOTS[0] == EMPTY_ROOT
    assert NODE_HASHES[0] == VECTOR_LEAVES
    assert node_hash(NODE_HASHES[0][0], NODE_HASHES[0][1]) == NODE_HASHES[1][0]


def test_stored_nodes_are_exactly_the_vector_node_hashes() -> None:
    expected = {
        (level, index): value
        for level, row in enumerate(NODE_HASHES)
        for index, value in enumerate(row)
    }
    assert expected == VECTOR_NODES


@pytest.mark.parametrize("size", range(9))
def test_roots_match_the_vectors(size: int) -> None:
    assert root_from(size, Reads(VECTOR_NODES, root_keys(size))) == ROOTS[size]
    assert reference_root(VECTOR_LEAVES[:size]) == ROOTS[size]
    compact = CompactRange()
    for leaf in VECTOR_LEAVES[:size]:
        compact.append(leaf)
    assert (compact.size, compact.root()) == (size, ROOTS[size])


@pytest.mark.parametrize(("index", "size", "path"), INCLUSION_PROOFS)
def test_inclusion_proofs_match_the_vectors(index: int, size: int, path: list[bytes]) -> None:
    nodes = Reads(VECTOR_NODES, inclusion_keys(index, size))
    assert inclusion_proof(index, size, nodes) == path
    assert nodes.read == set(nodes)
    assert reference_path(index, VECTOR_LEAVES[:size]) == path
    leaf, root = VECTOR_LEAVES[index], ROOTS[size]
    assert verify_inclusion(leaf, index, size, path, root)
    wrong = [
        d for d, args in inclusion_probes(index, size, path, root, leaf) if verify_inclusion(*args)
    ]
    assert wrong == []


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY_PROOFS)
def test_consistency_proofs_match_the_vectors(old: int, new: int, proof: list[bytes]) -> None:
    nodes = Reads(VECTOR_NODES, consistency_keys(old, new))
    assert consistency_proof(old, new, nodes) == proof
    assert nodes.read == set(nodes)
    assert reference_proof(old, VECTOR_LEAVES[:new]) == proof
    assert verify_consistency(old, new, ROOTS[old], ROOTS[new], proof)
    if proof:
        probes = consistency_probes(old, new, ROOTS[old], ROOTS[new], proof)
        assert [d for d, args in probes if verify_consistency(*args)] == []


def test_inclusion_edge_cases_do_not_verify() -> None:
    # transparency-dev/merkle TestVerifyInclusion: no leaf is in an empty tree, no index >= size
    for index, size in [(0, 0), (1, 0), (1, 1), (2, 1), (-1, 1)]:
        assert not verify_inclusion(SOME_HASH, index, size, [], EMPTY_ROOT)
        assert not verify_inclusion(SOME_HASH, index, size, [], SOME_HASH)
    # a one-leaf tree's root is its leaf hash and the path is empty
    assert verify_inclusion(SOME_HASH, 0, 1, [], SOME_HASH)
    assert not verify_inclusion(SOME_HASH, 0, 1, [], b"")
    assert not verify_inclusion(b"", 0, 1, [], b"")


def test_consistency_edge_cases() -> None:
    # after transparency-dev/merkle TestVerifyConsistency, with 32-byte roots
    a, b = ROOTS[3], ROOTS[5]
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert verify_consistency(0, 5, EMPTY_ROOT, b, [])
    assert verify_consistency(3, 3, a, a, [])
    # the empty tree has one root (stricter than transparency-dev, which takes any old root)
    assert not verify_consistency(0, 5, a, b, [])
    assert not verify_consistency(3, 3, a, b, [])  # same size, different roots
    assert not verify_consistency(1, 0, a, b, [])  # time travel to the past
    assert not verify_consistency(5, 3, b, a, [])
    assert not verify_consistency(3, 5, a, b, [])  # empty proof
    assert not verify_consistency(-1, 5, a, b, [])
    for old, new in [(0, 0), (0, 1), (1, 1)]:  # roots match but the proof is not empty
        assert not verify_consistency(old, new, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])


def test_the_proof_binds_the_sizes_only_through_the_roots() -> None:
    """RFC 9162 verification checks a proof against (size, root) pairs as a signed tree head
    states them; a size stated with a root of another size can pass. PROOF(2, D[3]) = [leaf 2]
    also proves "size 2 is a prefix of size 4 whose root is ROOTS[3]", since the tree of 4
    leaves D[0:2] + [leaf 2] would have that root. Sizes must come from a signed tree head."""
    proof = consistency_proof(2, 3, VECTOR_NODES)
    assert proof == [VECTOR_LEAVES[2]]
    assert verify_consistency(2, 4, ROOTS[2], ROOTS[3], proof)
    assert ref_verify_consistency(2, 4, ROOTS[2], ROOTS[3], proof)


def test_proofs_refuse_impossible_requests() -> None:
    for index, size in [(0, 0), (3, 3), (-1, 3)]:
        with pytest.raises(ValueError):
            inclusion_keys(index, size)
        with pytest.raises(ValueError):
            inclusion_proof(index, size, VECTOR_NODES)
    for old, new in [(4, 3), (-1, 3)]:
        with pytest.raises(ValueError):
            consistency_keys(old, new)
        with pytest.raises(ValueError):
            consistency_proof(old, new, VECTOR_NODES)
    with pytest.raises(ValueError):
        root_keys(-1)
    with pytest.raises(ValueError):
        new_nodes(0, SOME_HASH, lambda level, index: SOME_HASH)
    assert consistency_keys(0, 5) == consistency_keys(5, 5) == []
    assert consistency_proof(0, 5, {}) == consistency_proof(5, 5, {}) == []


# --- properties over larger trees -------------------------------------------------------------

N = 4096
LEAVES = [leaf_hash(str(i).encode()) for i in range(N)]
NODES = store(LEAVES)

sizes = st.integers(1, N)


def perfect_keys(size: int) -> set[NodeKey]:
    return {(lv, i) for lv in range(size.bit_length()) for i in range(size >> lv)}


def test_new_nodes_store_exactly_the_perfect_subtrees() -> None:
    assert set(NODES) == perfect_keys(N)
    assert len(NODES) == 2 * N - 1  # 2n - popcount(n) in general
    for (level, index), value in NODES.items():
        if level <= 6 or index % 3 == 0:  # every small subtree, a third of the big ones
            assert value == reference_root(LEAVES[index << level : (index + 1) << level])


def test_root_from_stored_nodes_equals_the_reference_for_every_size() -> None:
    compact = CompactRange()
    pushed = CompactRange()  # the verifier's leaner append
    stored: dict[NodeKey, bytes] = {}
    for size in range(1, 513):
        stored.update({(n.level, n.index): n.hash for n in compact.append(LEAVES[size - 1])})
        pushed.push(LEAVES[size - 1])
        assert set(stored) == perfect_keys(size)
        assert len(stored) == 2 * size - size.bit_count()
        want = reference_root(LEAVES[:size])
        assert compact.root() == want
        assert pushed.root() == want and pushed.size == size
        assert root_from(size, Reads(stored, root_keys(size))) == want
        assert len(root_keys(size)) == size.bit_count()


@given(size=sizes)
@settings(deadline=None, max_examples=60)
def test_root_from_stored_nodes_equals_the_reference(size: int) -> None:
    assert root_from(size, Reads(NODES, root_keys(size))) == reference_root(LEAVES[:size])


@given(size=sizes)
@settings(deadline=None)
def test_new_nodes_reads_only_the_old_frontier(size: int) -> None:
    read: list[NodeKey] = []

    def get(level: int, index: int) -> bytes:
        read.append((level, index))
        return NODES[level, index]

    made = new_nodes(size, LEAVES[size - 1], get)
    assert set(read) <= set(root_keys(size - 1))
    assert made[0] == Node(0, size - 1, LEAVES[size - 1])
    assert all(NODES[n.level, n.index] == n.hash for n in made)
    # the node a leaf completes last is the smallest piece of the new root
    assert (made[-1].level, made[-1].index) == root_keys(size)[-1]


@given(old=st.integers(0, N), data=st.data())
@settings(deadline=None, max_examples=60)
def test_batch_append_equals_one_at_a_time(old: int, data: st.DataObject) -> None:
    new = data.draw(st.integers(old, N))
    one_by_one = [
        node
        for size in range(old + 1, new + 1)
        for node in new_nodes(size, LEAVES[size - 1], lambda lv, i: NODES[lv, i])
    ]
    batch = new_nodes_batch(old, LEAVES[old:new], Reads(NODES, root_keys(old)))
    assert batch == one_by_one
    compact = CompactRange.from_nodes(old, NODES)
    before = compact.copy()
    for leaf in LEAVES[old:new]:
        compact.append(leaf)
    assert compact.size == new
    assert compact.root() == root_from(new, NODES)
    assert (before.size, before.root()) == (old, root_from(old, NODES))  # the copy is untouched


def inclusion_cases() -> st.SearchStrategy[tuple[int, int]]:
    return sizes.flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n)))


@given(case=inclusion_cases())
@settings(deadline=None)
def test_inclusion_proofs_from_stored_nodes(case: tuple[int, int]) -> None:
    index, size = case
    keys = inclusion_keys(index, size)
    assert len(keys) == len(set(keys)) <= 2 * (size.bit_length() - 1)
    assert all((i + 1) << lv <= size for lv, i in keys)  # only complete subtrees
    nodes = Reads(NODES, keys)
    proof = inclusion_proof(index, size, nodes)
    assert nodes.read == set(keys)  # exactly the nodes named
    assert proof == reference_path(index, LEAVES[:size])
    assert len(proof) <= (size - 1).bit_length()  # ⌈log2 size⌉
    leaf, root = LEAVES[index], reference_root(LEAVES[:size])
    assert verify_inclusion(leaf, index, size, proof, root)
    assert ref_verify_inclusion(leaf, index, size, proof, root)
    for desc, args in inclusion_probes(index, size, proof, root, leaf):
        assert not verify_inclusion(*args), desc
    for i in range(len(proof)):
        for byte in (0, 17, 31):
            assert not verify_inclusion(leaf, index, size, flip(proof, i, byte, 0), root)
    # any other size agrees with the independent recursive verifier
    for other in {size - 1, size + 1, size + 2, 2 * size, size // 2, (size + 1) // 2}:
        args = (leaf, index, other, proof, root)
        assert verify_inclusion(*args) == ref_verify_inclusion(*args), other


def consistency_cases() -> st.SearchStrategy[tuple[int, int]]:
    return st.integers(2, N).flatmap(lambda n: st.tuples(st.integers(1, n - 1), st.just(n)))


@given(case=consistency_cases())
@settings(deadline=None)
def test_consistency_proofs_from_stored_nodes(case: tuple[int, int]) -> None:
    old, new = case
    keys = consistency_keys(old, new)
    assert len(keys) == len(set(keys)) <= 2 * (new.bit_length() - 1) + 1
    assert all((i + 1) << lv <= new for lv, i in keys)
    nodes = Reads(NODES, keys)
    proof = consistency_proof(old, new, nodes)
    assert nodes.read == set(keys)
    assert proof == reference_proof(old, LEAVES[:new])
    assert 1 <= len(proof) <= (new - 1).bit_length() + 1
    old_root, new_root = reference_root(LEAVES[:old]), reference_root(LEAVES[:new])
    assert verify_consistency(old, new, old_root, new_root, proof)
    assert ref_verify_consistency(old, new, old_root, new_root, proof)
    for desc, args in consistency_probes(old, new, old_root, new_root, proof):
        # a wrong size can pass only when it fits the same roots (see the test above); the
        # independent verifier is the judge there, everything else must fail outright
        if desc in ("old - 1", "old + 1", "old ^ 2", "new * 2", "new // 2"):
            assert verify_consistency(*args) == ref_verify_consistency(*args), desc
        else:
            assert not verify_consistency(*args), desc
    for i in range(len(proof)):
        for byte in (0, 17, 31):
            assert not verify_consistency(old, new, old_root, new_root, flip(proof, i, byte, 0))
    for o, n in {(old, new + 1), (old, new - 1), (old + 1, new + 1), (old - 1, new - 1)}:
        args = (o, n, old_root, new_root, proof)
        assert verify_consistency(*args) == ref_verify_consistency(*args), (o, n)


def test_wrong_length_proofs_never_verify() -> None:
    """A proof with more or fewer hashes than the stated sizes call for fails whatever the
    hashes; checked exhaustively for sizes up to 64."""
    for new in range(1, 65):
        root = reference_root(LEAVES[:new])
        for index in range(new):
            good = len(reference_path(index, LEAVES[:new]))
            for length in (good - 1, good + 1):
                if length >= 0:
                    proof = [SOME_HASH] * length
                    assert not verify_inclusion(LEAVES[index], index, new, proof, root)
        for old in range(1, new):
            good = len(reference_proof(old, LEAVES[:new]))
            for length in (good - 1, good + 1):
                proof = [SOME_HASH] * length
                old_root = reference_root(LEAVES[:old])
                assert not verify_consistency(old, new, old_root, root, proof)


# --- key-count bounds -------------------------------------------------------------------------


def test_key_count_bounds_hold_and_are_tight() -> None:
    """inclusion_keys ≤ 2·⌊log2 n⌋ and consistency_keys ≤ 2·⌊log2 n⌋ + 1, for every
    (m, n) with n ≤ 300; both are reached (so no smaller bound of this form holds)."""
    tight_inclusion = tight_consistency = False
    for n in range(1, 301):
        b = n.bit_length() - 1
        most_inclusion = max(len(inclusion_keys(m, n)) for m in range(n))
        most_consistency = max([len(consistency_keys(m, n)) for m in range(n + 1)])
        assert most_inclusion <= 2 * b
        assert most_consistency <= 2 * b + 1
        tight_inclusion |= most_inclusion == 2 * b and b > 0
        tight_consistency |= most_consistency == 2 * b + 1 and b > 0
    assert tight_inclusion and tight_consistency


@given(st.integers(1, 2**48).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_key_count_bounds_on_huge_trees(case: tuple[int, int]) -> None:
    m, n = case
    b = n.bit_length() - 1
    inclusion = inclusion_keys(m, n)
    consistency = consistency_keys(m, n)
    assert len(inclusion) == len(set(inclusion)) <= 2 * b
    assert len(consistency) == len(set(consistency)) <= 2 * b + 1
    assert all((i + 1) << lv <= n for lv, i in inclusion + consistency)


# --- verification never raises ----------------------------------------------------------------

hashes = st.one_of(st.binary(min_size=32, max_size=32), st.binary(max_size=40))
ints = st.integers(-(2**70), 2**70) | st.integers(-3, 20)


@given(leaf=hashes, index=ints, size=ints, proof=st.lists(hashes, max_size=8), root=hashes)
def test_verify_inclusion_answers_a_bool_for_any_input(
    leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes
) -> None:
    result = verify_inclusion(leaf, index, size, proof, root)
    assert result is ref_verify_inclusion(leaf, index, size, proof, root)


@given(old=ints, new=ints, r1=hashes, r2=hashes, proof=st.lists(hashes, max_size=8))
def test_verify_consistency_answers_a_bool_for_any_input(
    old: int, new: int, r1: bytes, r2: bytes, proof: list[bytes]
) -> None:
    result = verify_consistency(old, new, r1, r2, proof)
    assert result is ref_verify_consistency(old, new, r1, r2, proof)
