"""The canonical forms are contracts: test vectors (also in docs/ledger.md) and properties."""

from __future__ import annotations

import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.chain import GENESIS_HASH, entry_hash, hash_input, key_change_message, make_entry
from ledger.keys import COMMIT_TAG, KEY_TAG, public_key_hex, sign
from ledger.protocol import (
    check_reveal,
    commit_fields,
    commit_message,
    commitment,
    legacy_query_hash,
    prediction_body,
    prediction_id,
    query_hash,
    query_messages,
    query_text,
)
from ledger.tree import TreeHead, sign_tree_head
from mindledger.canonical import canonical_json
from mindledger.errors import InputError

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
SALT = bytes(range(32, 64))
T = "2026-01-01T00:00:00.000000+00:00"

PUBLIC_KEY = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
PREDICTION = (
    '{"condition":null,"distribution":{"3":0.4,"7":0.6},"item":null,"own_answer":null,'
    '"predictor":"piper","query":"Pick a number from 1 to 10","rationale":null,"target":"dusk",'
    '"top1":"7","v":1}'
)
COMMITMENT = "sha256:871d2d04f1b8e14bd01f3811f3ea3d8f2afa75cf9478292c5864932ba219a020"
PREDICTION_ID = "p871d2d04f1b8e14bd01f"
OPEN_HASH = "sha256:79e0f5f599f162840590cb9cdff9de4cfa24e44312d23471e652f17db68349a8"
OPEN_SIGNATURE = (
    "36c79088fd77aa14bc5b06e28ea3e31c420267e1720886fb028d60d301f7f932"
    "5aabf2999d8b5bf15dcfd6ff38874340e69c18e385f5cee719308d1274779606"
)
COMMIT_HASH = "sha256:caf4965e0073af9504e13661e41ce1ba2a072b57bd479a449f294ae4d8714e69"
COMMIT_SIGNATURE = (
    "dec58512dda9df6ef0c12ff67352f32591cc76656cf6521d5abbc325836ec6cc"
    "363e6753362b2106678f27a0ff95a3e8ebd80607afae231474f12b101c745e0c"
)
AGENT_SIGNATURE = (
    "1ad2f35bc8683835501231a62372962f7f8f0922ed4c4a9e9e41183bc1fcff32"
    "898b8a1eade87c76f93c194ac88dbd42ce1c11ad06854eeaa0e32ba7608e6101"
)


def body() -> dict[str, object]:
    return prediction_body(
        predictor="piper",
        target="dusk",
        query="Pick a number from 1 to 10",
        distribution={"7": 0.6, "3": 0.4},
    )


def test_prediction_and_commitment_vectors() -> None:
    assert public_key_hex(KEY) == PUBLIC_KEY
    assert canonical_json(body()).decode() == PREDICTION
    assert commitment(body(), SALT) == COMMITMENT
    assert prediction_id(COMMITMENT) == PREDICTION_ID
    # probabilities are written as floats, so {"7": 1} and {"7": 1.0} commit alike
    one = dict(predictor="p", target="t", query="q")
    assert prediction_body(**one, distribution={"7": 1}) == prediction_body(
        **one, distribution={"7": 1.0}
    )


def test_entry_vectors() -> None:
    opened = make_entry(
        KEY,
        seq=1,
        prev_hash=GENESIS_HASH,
        prev_signature="",
        time=T,
        kind="open",
        subject="ledger",
        payload={"format": "mindledger-ledger/1", "public_key": PUBLIC_KEY, "nonce": "00" * 16},
    )
    assert opened.hash == OPEN_HASH and opened.signature == OPEN_SIGNATURE
    payload = {
        "predictor": "piper",
        "target": "dusk",
        "query": "Pick a number from 1 to 10",
        "item": None,
        "condition": None,
        "commitment": COMMITMENT,
        "deadline": "2026-01-02T00:00:00.000000+00:00",
        "agent_signature": None,
    }
    committed = make_entry(
        KEY,
        seq=2,
        prev_hash=opened.hash,
        prev_signature=opened.signature,
        time=T,
        kind="commit",
        subject=PREDICTION_ID,
        payload=payload,
    )
    assert committed.hash == COMMIT_HASH and committed.signature == COMMIT_SIGNATURE
    assert sign(KEY, COMMIT_TAG, commit_message(payload)) == AGENT_SIGNATURE
    # the hash input is exactly the canonical JSON of the entry object
    as_object = {
        "v": 1,
        "seq": 2,
        "prev_hash": opened.hash,
        "prev_signature": opened.signature,
        "time": T,
        "kind": "commit",
        "subject": PREDICTION_ID,
        "payload": payload,
    }
    assert hash_input(
        2, opened.hash, opened.signature, T, "commit", PREDICTION_ID, committed.payload_json
    ) == canonical_json(as_object)


QUERY_HASH = "sha256:21ea0b98b0525c045958793acf73d0b70f7516932e18f82d27c9d0b88f4cd470"
CHAT_QUERY_HASH = "sha256:aca97cd6e4adc3f9ca56e7cfb3b2652f2d835f7a936494fe2948037b8f75579d"
REQUEST_HASH = "sha256:0fc37db2f4f59f45d4aabde9531c94b2d499f2ae58e9d21e623fdd53a9a95028"
LEGACY_QUERY_HASH = "sha256:739d9fd755d8dc76d237311ed797085a59f2f4bf34b1dc1058330b8982db07e2"
LEGACY_CHAT_QUERY_HASH = "sha256:0d85b4e0efe1f48c0b5b09e15de412b45234694b329b51b4b75a04820f45bc59"
TREE_ROOT = "sha256:8a68bd58560aa38ca6c936d9e7f0da59e50aac39007872a404bdb590795850a7"
TREE_HEAD_SIGNATURE = (
    "630097f1b7d1af85cb054f0a9d9804193dd706c1356c35628c2e92b3a01d880e"
    "e85d164f7574826aa517cc3a985d80bb20d2666b316e396be633fc779dae8c0a"
)
NEW_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32, 64)))
NEW_PUBLIC_KEY = "29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7"
POSSESSION = (
    "62789b3772355ffe625e0d5d1b37214ccc41b7f27c573a2dffd1aeb7958afdf7"
    "ca6ecb4c3bd5a902548e9aef1a3c92bbe0ec35f9d1d495feba32950aab6fff03"
)


def test_query_hash_vectors() -> None:
    text = "Pick a number from 1 to 10"
    canonical = (
        b'{"request":{"messages":[{"content":"Pick a number from 1 to 10","role":"user"}]},"v":2}'
    )
    assert canonical_json({"request": {"messages": query_messages(text)}, "v": 2}) == canonical
    assert "sha256:" + hashlib.sha256(canonical).hexdigest() == QUERY_HASH
    assert query_hash(query_messages(text)) == QUERY_HASH
    assert query_hash({"messages": query_messages(text)}) == QUERY_HASH
    chat = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": text},
    ]
    assert query_hash(chat) == CHAT_QUERY_HASH
    # the JSON's layout does not matter, its content does (a trailing space is another query)
    assert query_hash(json.loads(json.dumps(chat, indent=4))) == CHAT_QUERY_HASH
    assert query_hash(query_messages(text + " ")) != QUERY_HASH
    for bad in ([], "hi", [{"content": "x"}], [{"role": 1}], [{"role": "user", "x": float("nan")}]):
        with pytest.raises(InputError):
            query_hash(bad)


def test_the_query_hash_covers_every_field_but_model_stream_and_user() -> None:
    text = "Pick a number from 1 to 10"
    request = {
        "model": "gpt-x",
        "messages": query_messages(text),
        "max_tokens": 1,
        "temperature": 0.0,
        "stream": False,
        "user": "u1",
    }
    canonical = (
        b'{"request":{"max_tokens":1,"messages":[{"content":"Pick a number from 1 to 10",'
        b'"role":"user"}],"temperature":0.0},"v":2}'
    )
    assert "sha256:" + hashlib.sha256(canonical).hexdigest() == REQUEST_HASH
    assert query_hash(request) == REQUEST_HASH
    # model, stream and user cannot change the answer: leaving them out changes nothing
    bare = {k: v for k, v in request.items() if k not in ("model", "stream", "user")}
    assert query_hash(bare) == REQUEST_HASH
    # every other field does, one at a time
    for key, value in [("max_tokens", 2), ("temperature", 1.0), ("seed", 1), ("n", 2),
                       ("tools", []), ("logit_bias", {"7": 100})]:  # fmt: skip
        assert query_hash({**request, key: value}) != REQUEST_HASH, key
    with pytest.raises(InputError) as err:
        query_hash({"max_tokens": 1})
    assert err.value.where == "messages"
    with pytest.raises(InputError):
        query_hash({"messages": query_messages(text), "temperature": float("inf")})


def test_legacy_query_hash_vectors() -> None:
    """Version 1 hashed the messages alone: the ledger holds such hashes from before version
    2, and they are written down so anyone can recompute them."""
    text = "Pick a number from 1 to 10"
    assert legacy_query_hash(query_messages(text)) == LEGACY_QUERY_HASH
    assert (
        canonical_json({"messages": query_messages(text), "v": 1})
        == b'{"messages":[{"content":"Pick a number from 1 to 10","role":"user"}],"v":1}'
    )
    chat = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": text},
    ]
    assert legacy_query_hash(chat) == LEGACY_CHAT_QUERY_HASH
    assert query_hash(chat) != LEGACY_CHAT_QUERY_HASH


def test_the_query_text_is_the_last_user_message() -> None:
    assert query_text(query_messages("Pick a number")) == "Pick a number"
    chat = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": "Pick a number"},
        {"role": "assistant", "content": None},
    ]
    assert query_text(chat) == "Pick a number"
    parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert query_text(parts) == '[{"content":[{"text":"hi","type":"text"}],"role":"user"}]'
    with pytest.raises(InputError):
        query_text([])


def test_tree_head_vector() -> None:
    """The signed tree head of the two vector entries: RFC 6962 leaf and node hashes written
    out by hand, the head's canonical JSON, and its (deterministic) Ed25519 signature."""
    leaves = [
        hashlib.sha256(b"\x00" + bytes.fromhex(h[7:])).digest() for h in (OPEN_HASH, COMMIT_HASH)
    ]
    root = hashlib.sha256(b"\x01" + leaves[0] + leaves[1]).digest()
    assert "sha256:" + root.hex() == TREE_ROOT
    head = sign_tree_head(KEY, ledger=OPEN_HASH, size=2, root=root, head=COMMIT_HASH, time=T)
    assert canonical_json(head.body()) == (
        '{"head":"' + COMMIT_HASH + '","ledger":"' + OPEN_HASH + '","public_key":"'
        + PUBLIC_KEY + '","root":"' + TREE_ROOT + '","size":2,"time":"' + T + '","v":1}'
    ).encode()
    assert head.signature == TREE_HEAD_SIGNATURE and head.signature_ok()
    assert TreeHead.from_dict(json.loads(json.dumps(head.to_dict()))) == head
    forged = TreeHead.from_dict({**head.to_dict(), "tree_head": {**head.body(), "size": 3}})
    assert not forged.signature_ok()


def test_key_change_vector() -> None:
    message = key_change_message(OPEN_HASH, COMMIT_HASH, PUBLIC_KEY, NEW_PUBLIC_KEY)
    assert message == (
        '{"ledger":"' + OPEN_HASH + '","prev_hash":"' + COMMIT_HASH + '","previous":"'
        + PUBLIC_KEY + '","public_key":"' + NEW_PUBLIC_KEY + '"}'
    ).encode()
    assert public_key_hex(NEW_KEY) == NEW_PUBLIC_KEY
    assert sign(NEW_KEY, KEY_TAG, message) == POSSESSION


def test_an_agent_signature_covers_the_query_hash() -> None:
    fields = commit_fields(body(), COMMITMENT)
    assert fields["query_hash"] == QUERY_HASH
    signed = commit_message(fields)
    assert b'"query_hash":"' + QUERY_HASH.encode() + b'"' in signed
    # without a query hash (format 1) the message is the one of the vector above
    assert sign(KEY, COMMIT_TAG, commit_message({**fields, "query_hash": None})) == AGENT_SIGNATURE


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    seq=st.integers(1, 2**62),
    text=st.text(),
    payload=st.dictionaries(st.text(), json_values, max_size=4),
)
def test_hash_input_is_canonical_json(seq: int, text: str, payload: dict[str, object]) -> None:
    payload_json = canonical_json(payload).decode()
    got = hash_input(seq, text, text[::-1], text + "t", "k" + text, "s" + text, payload_json)
    assert got == canonical_json(
        {
            "v": 1,
            "seq": seq,
            "prev_hash": text,
            "prev_signature": text[::-1],
            "time": text + "t",
            "kind": "k" + text,
            "subject": "s" + text,
            "payload": payload,
        }
    )
    assert json.loads(got)["payload"] == payload


def test_entry_hash_rejects_a_non_integer_seq() -> None:
    e = make_entry(
        KEY,
        seq=1,
        prev_hash=GENESIS_HASH,
        prev_signature="",
        time=T,
        kind="k",
        subject="s",
        payload={},
    )
    with pytest.raises(TypeError):
        entry_hash(e, seq="1")  # type: ignore[arg-type]


def test_check_reveal_says_what_is_wrong() -> None:
    commit = {
        "predictor": "piper",
        "target": "dusk",
        "query": "Pick a number from 1 to 10",
        "item": None,
        "condition": None,
        "commitment": COMMITMENT,
    }
    ok, reason, dist, top1 = check_reveal(commit, body(), SALT.hex())
    assert ok and reason is None and top1 == "7" and dist == {"7": 0.6, "3": 0.4}
    cases = [
        (body(), "00" * 32, "do not hash"),
        ({**body(), "distribution": {"7": 0.7, "3": 0.3}}, SALT.hex(), "do not hash"),
        (body(), SALT.hex()[:-2], "31 bytes"),
        (body(), "zz", "not hex"),
        ("not an object", SALT.hex(), "not a JSON object"),
    ]
    for revealed, salt, needle in cases:
        ok, reason, _, _ = check_reveal(commit, revealed, salt)
        assert not ok and needle in (reason or ""), needle
    # a commitment over a body naming another target does not open this commit
    other = {**body(), "target": "someone-else"}
    ok, reason, _, _ = check_reveal(
        {**commit, "commitment": commitment(other, SALT)}, other, SALT.hex()
    )
    assert not ok and "target" in (reason or "")


def test_prediction_body_names_bad_fields() -> None:
    with pytest.raises(InputError, match="predictor"):
        prediction_body(predictor="", target="t", query="q", distribution={"a": 1})
    with pytest.raises(InputError, match="condition"):
        prediction_body(
            predictor="p", target="t", query="q", distribution={"a": 1}, condition=float("nan")
        )
    with pytest.raises(InputError, match="distribution"):
        prediction_body(predictor="p", target="t", query="q", distribution={"a": 0.2})
