"""The Q4_1 → Q8_0 re-encoding of the embedded model's weights: ggml's rule on hand-computed
blocks, its error bound on any block, a hand-built GGUF file copied faithfully, bad files
refused with what is wrong, and the fallback to the packaged weights."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model.gguf_q8 import (
    Q4_1,
    Q8_0,
    GGUFError,
    cached_path,
    q4_1_to_q8_0,
    q8_model_file,
    read_layout,
    write_q8_0,
)


def q4_1_block(d: float, m: float, q: list[int]) -> np.ndarray:
    """One Q4_1 block: f16 d, f16 m, weights j and j+16 in byte j's low and high nibble."""
    assert len(q) == 32
    nibbles = bytes(q[j] | (q[j + 16] << 4) for j in range(16))
    raw = np.float16(d).tobytes() + np.float16(m).tobytes() + nibbles
    return np.frombuffer(raw, dtype=np.uint8).reshape(1, 20)


def q4_1_values(blocks: np.ndarray) -> np.ndarray:
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    q = np.concatenate([blocks[:, 4:] & 0x0F, blocks[:, 4:] >> 4], axis=1)
    return q.astype(np.float32) * d + m


def q8_0_values(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    return q * scale, scale


def test_a_hand_computed_block_follows_ggml_rule() -> None:
    # d = 1, m = -8: the weights are q - 8, from -8 to 7; max |x| = 8, so the Q8_0 scale is
    # 8/127 and each weight becomes roundf(x * 127 / 8), half away from zero
    q = list(range(16)) * 2
    out = q4_1_to_q8_0(q4_1_block(1.0, -8.0, q))
    assert out.shape == (1, 34)
    assert out[0, 0:2].view(np.float16)[0] == np.float16(8 / 127)
    expected = [int(np.sign(v) * np.floor(abs(v) * 127 / 8 + 0.5)) for v in (x - 8 for x in q)]
    assert out[0, 2:].view(np.int8).tolist() == expected
    assert expected[:3] == [-127, -111, -95] and expected[9] == 16 and expected[15] == 111


def test_an_all_zero_block_stays_zero() -> None:
    out = q4_1_to_q8_0(q4_1_block(0.0, 0.0, [5] * 32))
    assert out.tolist() == [[0] * 34]


finite_half = st.floats(-60000, 60000, allow_nan=False, width=16)


@settings(max_examples=300, deadline=None)
@given(d=finite_half, m=finite_half, q=st.lists(st.integers(0, 15), min_size=32, max_size=32))
def test_every_weight_moves_by_at_most_half_a_q8_step(d: float, m: float, q: list[int]) -> None:
    block = q4_1_block(d, m, q)
    before = q4_1_values(block)
    if not np.isfinite(before).all():
        return  # d·15 + m beyond float16's range in the source: not a real block
    after, _ = q8_0_values(q4_1_to_q8_0(block))
    step = np.abs(before).max() / 127
    # half a step, plus the step's f16 rounding (relative 2**-11, or 2**-25 where it is
    # subnormal) times the largest q, 127
    bound = step / 2 + 127 * max(step * 2.0**-11, 2.0**-25)
    assert (np.abs(after - before) <= bound).all()


# --- a GGUF file built by hand -----------------------------------------------------------


def gguf_string(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def kv(key: bytes, kind: int, payload: bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", kind) + payload


def build_gguf(path: Path, tensors: list[tuple[bytes, tuple[int, ...], int, bytes]]) -> bytes:
    """A GGUF v3 file with metadata of every kind the reader skips, then ``tensors`` (name,
    dims, ggml type, raw bytes) aligned to 32. Returns the metadata bytes."""
    kvs = [
        kv(b"general.architecture", 8, gguf_string(b"llama")),
        kv(b"general.file_type", 4, struct.pack("<I", 3)),
        kv(b"general.alignment", 4, struct.pack("<I", 32)),
        kv(b"tokens", 9, struct.pack("<IQ", 8, 3) + b"".join(map(gguf_string, [b"a", b"", b"\xc3\xa9"]))),
        kv(b"scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, -1.0)),
        kv(b"flag", 7, b"\x01"),
        kv(b"big", 10, struct.pack("<Q", 2**40)),
        kv(b"nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 5, 2) + struct.pack("<ii", -1, 2)),
    ]  # fmt: skip
    metadata = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    table, data, offset = b"", b"", 0
    for name, dims, kind, raw in tensors:
        table += gguf_string(name) + struct.pack("<I", len(dims))
        table += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", kind, offset)
        pad = b"\0" * (-len(raw) % 32)
        data += raw + pad
        offset += len(raw) + len(pad)
    head = metadata + table
    path.write_bytes(head + b"\0" * (-len(head) % 32) + data)
    return metadata


def tensor_bytes(path: Path, name: bytes) -> tuple[int, bytes]:
    layout = read_layout(path)
    (t,) = [t for t in layout.tensors if t.name == name]
    raw = path.read_bytes()[layout.data_start + t.offset :][: t.nbytes()]
    return t.type, raw


def test_a_hand_built_file_is_copied_but_for_its_q4_1_tensors(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    q4 = np.concatenate(
        [q4_1_block(float(rng.uniform(0.01, 0.1)), float(rng.uniform(-1, 0)),
                    rng.integers(0, 16, 32).tolist()) for _ in range(4)]
    )  # fmt: skip
    f32 = np.arange(5, dtype=np.float32).tobytes()  # 20 bytes: the next tensor needs padding
    q8 = q4_1_to_q8_0(q4[:1]).tobytes()
    source, target = tmp_path / "m.gguf", tmp_path / "m8.gguf"
    metadata = build_gguf(
        source,
        [(b"w", (64, 2), Q4_1, q4.tobytes()), (b"norm", (5,), 0, f32), (b"e", (32,), Q8_0, q8)],
    )
    write_q8_0(source, target)

    before, after = read_layout(source), read_layout(target)
    assert [(t.name, t.dims) for t in after.tensors] == [(t.name, t.dims) for t in before.tensors]
    assert [t.type for t in after.tensors] == [Q8_0, 0, Q8_0]
    assert all(t.offset % 32 == 0 for t in after.tensors)
    # the metadata byte for byte, but the file type: 7, mostly Q8_0
    at = before.file_type_at
    assert at is not None and after.file_type_at == at
    expected = bytearray(metadata)
    expected[at : at + 4] = struct.pack("<I", 7)
    assert after.metadata == bytes(expected)
    assert tensor_bytes(target, b"norm") == (0, f32)
    assert tensor_bytes(target, b"e") == (Q8_0, q8)
    kind, w = tensor_bytes(target, b"w")
    values, scale = q8_0_values(np.frombuffer(w, dtype=np.uint8).reshape(-1, 34))
    assert kind == Q8_0 and np.allclose(values, q4_1_values(q4), atol=float(scale.max()))


def test_bad_files_are_refused_saying_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + b"\0" * 40)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_layout(bad)
    good = tmp_path / "good.gguf"
    build_gguf(good, [(b"w", (32,), Q4_1, q4_1_block(1, 0, [1] * 32).tobytes())])
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:60])
    with pytest.raises(GGUFError, match="truncated"):
        read_layout(cut)
    odd = tmp_path / "odd.gguf"
    build_gguf(odd, [(b"w", (7,), Q4_1, b"\0" * 20)])
    with pytest.raises(GGUFError, match="whole number of blocks"):
        write_q8_0(odd, tmp_path / "out.gguf")
    short = tmp_path / "short.gguf"
    short.write_bytes(good.read_bytes()[:-24])  # into the tensor, past its padding
    with pytest.raises(GGUFError, match="past the end"):
        write_q8_0(short, tmp_path / "out2.gguf")


def test_the_copy_is_made_once_and_atomically(tmp_path: Path) -> None:
    source = tmp_path / "x.Q4_1.gguf"
    build_gguf(source, [(b"w", (32,), Q4_1, q4_1_block(0.5, -1, [3] * 32).tobytes())])
    cache = tmp_path / "cache"
    first = q8_model_file(source, cache)
    assert first == cached_path(source, cache) and first.name.startswith("x.Q8_0.")
    made = first.stat().st_mtime_ns
    assert q8_model_file(source, cache) == first and first.stat().st_mtime_ns == made
    assert sorted(p.name for p in cache.iterdir()) == [first.name]  # no temporary file left
    # a file where the cache directory should be: OSError, and nothing half-written
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    with pytest.raises(OSError):
        q8_model_file(source, blocked / "sub")


def test_the_packaged_weights_are_served_when_no_copy_can_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.model import local_model

    source = tmp_path / "x.Q4_1.gguf"
    build_gguf(source, [(b"w", (32,), Q4_1, q4_1_block(0.5, -1, [3] * 32).tobytes())])
    monkeypatch.setattr(local_model, "find_model_file", lambda: source)
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    monkeypatch.setenv("MINDLEDGER_CACHE_DIR", str(blocked / "sub"))
    assert local_model.served_model_file() == source
    assert "serving the packaged Q4_1 weights" in capsys.readouterr().err
    assert local_model.served_model_file("as-packaged") == source
    monkeypatch.setenv("MINDLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    served = local_model.served_model_file()
    assert served.parent == tmp_path / "cache" and read_layout(served).tensors[0].type == Q8_0


def test_model_weights_takes_only_its_values(tmp_path: Path) -> None:
    from harness.config.settings import load_settings
    from mindledger.errors import ConfigError

    base = {"home": str(tmp_path)}
    assert load_settings(None, env={}, flags=base).model_weights == "q8_0"
    assert (
        load_settings(
            None, env={"MINDLEDGER_MODEL_WEIGHTS": "as-packaged"}, flags=base
        ).model_weights
        == "as-packaged"
    )
    with pytest.raises(ConfigError, match=r"model_weights.*one of q8_0, as-packaged"):
        load_settings(None, env={"MINDLEDGER_MODEL_WEIGHTS": "q4"}, flags=base)
