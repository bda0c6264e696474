"""The RFC 6962 Merkle tree over the ledger's entries: hashes, proofs from stored nodes, checks.

Pure: no I/O, no clock, ``hashlib`` only. Hashes are raw 32-byte :class:`bytes`.

**Hashing** (RFC 6962 §2.1, a contract). With ``D[n]`` the list of ``n`` leaf inputs:
``MTH({}) = SHA-256()``; ``MTH({d}) = SHA-256(0x00 || d)`` (:func:`leaf_hash`); for ``n > 1``
and ``k`` the largest power of two below ``n``,
``MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))`` (:func:`node_hash`).

**Stored nodes.** Only roots of *perfect* subtrees are stored. Node ``(level, index)`` is the
root of the perfect subtree over the ``2**level`` leaves ``[index << level, (index + 1) <<
level)``; level 0 holds the leaf hashes. A node is written once, when its last leaf is
appended (:func:`new_nodes`, :class:`CompactRange`), and never changes. Every other node of
the RFC tree of any size lies on the tree's right edge and is the right fold of the perfect
subtrees that tile it, so roots and proofs for *any* size up to the current one are computed
from stored nodes alone. The ``*_keys`` functions name exactly the nodes a computation reads,
so the shell fetches them in one query and passes them as a mapping:

- :func:`root_keys` — at most ``⌊log2 n⌋ + 1`` nodes (one per set bit of ``n``);
- :func:`inclusion_keys` — at most ``2·⌊log2 n⌋`` nodes; the proof has ``≤ ⌈log2 n⌉`` hashes;
- :func:`consistency_keys` — at most ``2·⌊log2 n⌋ + 1`` nodes; the proof has ``≤ ⌈log2 n⌉ + 1``
  hashes.

(Why: every proof hash is the hash of one node of the RFC tree. Perfect ones are one key each,
at distinct levels. At most one proof hash is a right-edge node that is not perfect: the
sibling where the path leaves the right edge, at level ``ℓ``. It is tiled by one stored node
per set bit of ``n`` below ``ℓ``, and the perfect siblings above it are one per set bit of
``n`` above ``ℓ``; the proof hashes below ``ℓ`` are at most one per level, ``≤ ℓ``, or
``ℓ + 1`` with the consistency proof's own starting node. So keys ``≤ (bits of n other than ℓ)
+ ℓ (+ 1) ≤ 2·⌊log2 n⌋ (+ 1)``.)

**Verification** follows RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency) and
answers ``False`` for every bad input of the right types, never raising.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "CompactRange",
    "Node",
    "NodeKey",
    "consistency_keys",
    "consistency_proof",
    "inclusion_keys",
    "inclusion_proof",
    "leaf_hash",
    "new_nodes",
    "new_nodes_batch",
    "node_hash",
    "reference_path",
    "reference_proof",
    "reference_root",
    "root_from",
    "root_keys",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
"""Bytes in every hash of the tree (SHA-256)."""

EMPTY_ROOT = hashlib.sha256(b"").digest()
"""MTH of the empty tree: SHA-256 of the empty string."""

NodeKey = tuple[int, int]
"""``(level, index)`` of a stored node: the perfect subtree over leaves
``[index << level, (index + 1) << level)``."""


class Node(NamedTuple):
    """A stored node: the root hash of the perfect subtree at ``(level, index)``."""

    level: int
    index: int  # type: ignore[assignment]  # deliberately shadows tuple.index(), as in NodeKey
    hash: bytes


def leaf_hash(data: bytes) -> bytes:
    """RFC 6962 leaf hash of one leaf input: ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def _range_keys(start: int, end: int) -> list[NodeKey]:
    """The perfect subtrees tiling leaves ``[start, end)``, left to right, largest first.

    For a node of the RFC tree (``start`` is a multiple of the power of two at or above
    ``end - start``) these are stored nodes whose right fold is the node's hash.
    """
    keys: list[NodeKey] = []
    width = end - start
    for level in range(width.bit_length() - 1, -1, -1):
        if width >> level & 1:
            keys.append((level, start >> level))
            start += 1 << level
    return keys


def _fold(hashes: Sequence[bytes]) -> bytes:
    """Right fold of perfect-subtree roots (largest first) into the hash of the range they
    tile: ``node_hash(h0, node_hash(h1, … node_hash(h[-2], h[-1])))``."""
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


def _check_size(size: int) -> None:
    if size < 0:
        raise ValueError(f"tree size must be >= 0, got {size}")


# --- storing nodes ------------------------------------------------------------------------


def new_nodes(size: int, leaf: bytes, get: Callable[[int, int], bytes]) -> list[Node]:
    """The nodes completed by appending leaf ``size - 1`` (leaf hash ``leaf``) to a tree of
    ``size - 1`` leaves: ``Node(0, size - 1, leaf)`` and then each parent it completes,
    bottom-up.

    ``get(level, index)`` must return an already stored node; it is called only for the left
    siblings of the new nodes (a subset of :func:`root_keys` of ``size - 1``). Raises
    :class:`ValueError` if ``size < 1``.
    """
    if size < 1:
        raise ValueError(f"tree size after an append must be >= 1, got {size}")
    index, level, h = size - 1, 0, leaf
    out = [Node(0, index, leaf)]
    while index & 1:
        h = node_hash(get(level, index - 1), h)
        index >>= 1
        level += 1
        out.append(Node(level, index, h))
    return out


def new_nodes_batch(
    old_size: int, leaves: Iterable[bytes], frontier: Mapping[NodeKey, bytes]
) -> list[Node]:
    """The nodes completed by appending the leaf hashes ``leaves`` to a tree of ``old_size``
    leaves, in the order :func:`new_nodes` would give them leaf by leaf.

    ``frontier`` must hold the nodes :func:`root_keys` names for ``old_size`` (the only stored
    nodes the new ones can depend on); a missing one raises :class:`KeyError`.
    """
    compact = CompactRange.from_nodes(old_size, frontier)
    out: list[Node] = []
    for leaf in leaves:
        out.extend(compact.append(leaf))
    return out


class CompactRange:
    """An incremental tree that keeps only the roots of its perfect subtrees (the nodes
    :func:`root_keys` names, at most one per level), so appending is O(log n) time and the
    whole state is O(log n) hashes.

    Used to re-derive roots while streaming the entries of an export, and (through
    :meth:`from_nodes` and the nodes :meth:`append` returns) to extend the stored tree.
    """

    __slots__ = ("_size", "_stack")

    def __init__(self) -> None:
        self._size = 0
        self._stack: list[bytes] = []  # roots of root_keys(size), largest (leftmost) first

    @classmethod
    def from_nodes(cls, size: int, nodes: Mapping[NodeKey, bytes]) -> CompactRange:
        """The compact range of a stored tree of ``size`` leaves; ``nodes`` must hold
        :func:`root_keys` of ``size`` (else :class:`KeyError`)."""
        _check_size(size)
        compact = cls()
        compact._size = size
        compact._stack = [nodes[key] for key in root_keys(size)]
        return compact

    def copy(self) -> CompactRange:
        """An independent copy: appending to one leaves the other as it was."""
        twin = CompactRange()
        twin._size = self._size
        twin._stack = list(self._stack)
        return twin

    @property
    def size(self) -> int:
        """Number of leaves appended so far."""
        return self._size

    def append(self, leaf: bytes) -> list[Node]:
        """Append one leaf hash; return the stored nodes it completes, as :func:`new_nodes`."""
        index, level, h = self._size, 0, leaf
        out = [Node(0, index, leaf)]
        while index & 1:
            h = node_hash(self._stack.pop(), h)
            index >>= 1
            level += 1
            out.append(Node(level, index, h))
        self._stack.append(h)
        self._size += 1
        return out

    def push(self, leaf: bytes) -> None:
        """Append one leaf hash without returning the nodes it completes (for re-deriving a
        root while streaming: the verifier's hot loop)."""
        stack, index = self._stack, self._size
        h = leaf
        while index & 1:
            h = hashlib.sha256(b"\x01" + stack.pop() + h).digest()
            index >>= 1
        stack.append(h)
        self._size += 1

    def root(self) -> bytes:
        """MTH of the leaves appended so far (:data:`EMPTY_ROOT` when there are none)."""
        return _fold(self._stack) if self._stack else EMPTY_ROOT


# --- roots and proofs from stored nodes ---------------------------------------------------


def root_keys(size: int) -> list[NodeKey]:
    """The stored nodes whose right fold is the root of a tree of ``size`` leaves: one per set
    bit of ``size``, left to right (largest first). Empty for ``size == 0``."""
    _check_size(size)
    return _range_keys(0, size)


def root_from(size: int, nodes: Mapping[NodeKey, bytes]) -> bytes:
    """MTH of the first ``size`` leaves, from ``nodes`` holding :func:`root_keys` of ``size``
    (:class:`KeyError` if one is missing)."""
    keys = root_keys(size)
    return _fold([nodes[key] for key in keys]) if keys else EMPTY_ROOT


def _inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose hashes make PATH(index, D[size]), in proof order (bottom-up)."""
    out: list[tuple[int, int]] = []
    start, width, m = 0, size, index
    while width > 1:
        k = _split(width)
        if m < k:
            out.append((start + k, start + width))
            width = k
        else:
            out.append((start, start + k))
            start, width, m = start + k, width - k, m - k
    out.reverse()
    return out


def _consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The leaf ranges whose hashes make PROOF(old, D[new]) for ``0 < old < new``, in proof
    order (RFC 6962 §2.1.2 SUBPROOF, unrolled)."""
    out: list[tuple[int, int]] = []
    start, width, m, whole = 0, new, old, True
    while m != width:
        k = _split(width)
        if m <= k:
            out.append((start + k, start + width))
            width = k
        else:
            out.append((start, start + k))
            start, width, m, whole = start + k, width - k, m - k, False
    if not whole:
        out.append((start, start + width))
    out.reverse()
    return out


def _keys_of(ranges: list[tuple[int, int]]) -> list[NodeKey]:
    return [key for start, end in ranges for key in _range_keys(start, end)]


def _hashes_of(ranges: list[tuple[int, int]], nodes: Mapping[NodeKey, bytes]) -> list[bytes]:
    return [_fold([nodes[key] for key in _range_keys(start, end)]) for start, end in ranges]


def _check_inclusion(index: int, size: int) -> None:
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of {size} leaves")


def _check_consistency(old: int, new: int) -> None:
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from size {old} to size {new}")


def inclusion_keys(index: int, size: int) -> list[NodeKey]:
    """The stored nodes :func:`inclusion_proof` reads for leaf ``index`` in a tree of ``size``
    leaves: at most ``2·⌊log2 size⌋``, no duplicates. Raises :class:`ValueError` unless
    ``0 <= index < size``."""
    _check_inclusion(index, size)
    return _keys_of(_inclusion_ranges(index, size))


def inclusion_proof(index: int, size: int, nodes: Mapping[NodeKey, bytes]) -> list[bytes]:
    """The audit path PATH(index, D[size]) of RFC 6962 §2.1.1 (bottom-up), computed from
    ``nodes`` holding :func:`inclusion_keys` (:class:`KeyError` if one is missing). Raises
    :class:`ValueError` unless ``0 <= index < size``."""
    _check_inclusion(index, size)
    return _hashes_of(_inclusion_ranges(index, size), nodes)


def consistency_keys(old: int, new: int) -> list[NodeKey]:
    """The stored nodes :func:`consistency_proof` reads from size ``old`` to ``new``: at most
    ``2·⌊log2 new⌋ + 1``, no duplicates; none when ``old == 0`` or ``old == new``. Raises
    :class:`ValueError` unless ``0 <= old <= new``."""
    _check_consistency(old, new)
    return _keys_of(_consistency_ranges(old, new)) if 0 < old < new else []


def consistency_proof(old: int, new: int, nodes: Mapping[NodeKey, bytes]) -> list[bytes]:
    """PROOF(old, D[new]) of RFC 6962 §2.1.2, computed from ``nodes`` holding
    :func:`consistency_keys` (:class:`KeyError` if one is missing). Empty when ``old == 0`` or
    ``old == new``. Raises :class:`ValueError` unless ``0 <= old <= new``."""
    _check_consistency(old, new)
    return _hashes_of(_consistency_ranges(old, new), nodes) if 0 < old < new else []


# --- verification (RFC 9162) --------------------------------------------------------------


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes) and len(value) == HASH_SIZE


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """Whether ``proof`` shows that leaf hash ``leaf`` is leaf ``index`` of the tree of ``size``
    leaves with root ``root`` (RFC 9162 §2.1.3.2).

    ``False`` for any bad input: ``index`` outside ``[0, size)``, a proof that is too short or
    too long, any hash that is not 32 bytes, or a root that does not match.
    """
    if not (0 <= index < size and _is_hash(leaf) and _is_hash(root)):
        return False
    if not all(_is_hash(p) for p in proof):
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows that the tree of ``old`` leaves with root ``old_root`` is a
    prefix of the tree of ``new`` leaves with root ``new_root`` (RFC 9162 §2.1.4.2).

    Edge cases: ``old == new`` holds iff the proof is empty and the roots are equal;
    ``old == 0`` holds iff the proof is empty and ``old_root`` is :data:`EMPTY_ROOT` (the empty
    tree is a prefix of every tree). ``False`` for any other bad input: ``old > new``, negative
    sizes, a proof that is too short or too long, any hash that is not 32 bytes, or roots that
    do not match.
    """
    if not (0 <= old <= new and _is_hash(old_root) and _is_hash(new_root)):
        return False
    if not all(_is_hash(p) for p in proof):
        return False
    if old == 0:
        return not proof and old_root == EMPTY_ROOT
    if old == new:
        return not proof and old_root == new_root
    if not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:  # old is a power of two: its root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


# --- reference definitions (the oracle) ---------------------------------------------------


def reference_root(leaves: Sequence[bytes]) -> bytes:
    """MTH over the leaf hashes ``leaves``, straight from the recursive definition (O(n))."""
    n = len(leaves)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaves[0]
    k = _split(n)
    return node_hash(reference_root(leaves[:k]), reference_root(leaves[k:]))


def reference_path(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(index, D[n]) over the leaf hashes ``leaves``, straight from RFC 6962 §2.1.1 (O(n)).
    Raises :class:`ValueError` unless ``0 <= index < len(leaves)``."""
    _check_inclusion(index, len(leaves))
    n = len(leaves)
    if n == 1:
        return []
    k = _split(n)
    if index < k:
        return [*reference_path(index, leaves[:k]), reference_root(leaves[k:])]
    return [*reference_path(index - k, leaves[k:]), reference_root(leaves[:k])]


def reference_proof(old: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(old, D[n]) over the leaf hashes ``leaves`` (``n = len(leaves)``), straight from
    RFC 6962 §2.1.2 (O(n)); empty when ``old`` is 0 or ``n``. Raises :class:`ValueError`
    unless ``0 <= old <= n``."""
    _check_consistency(old, len(leaves))
    if old in (0, len(leaves)):
        return []
    return _reference_subproof(old, leaves, True)


def _reference_subproof(m: int, leaves: Sequence[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [reference_root(leaves)]
    k = _split(n)
    if m <= k:
        return [*_reference_subproof(m, leaves[:k], whole), reference_root(leaves[k:])]
    return [*_reference_subproof(m - k, leaves[k:], False), reference_root(leaves[:k])]
