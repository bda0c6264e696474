"""parse_json's one shared decoder reads every document as ``json.loads`` with the same hooks
would, and the rule's checks, skipped when the text shows they cannot fail, refuse what
check_json_value refuses: the same value, or the same message in its InputError."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindledger.errors import InputError
from mindledger.jsonin import _constant, _float, _int, check_json_value, parse_json

JSON_TEXT = st.one_of(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=12,
    ).map(lambda v: json.dumps(v, ensure_ascii=False)),
    st.text(alphabet='{}[]",:0123456789.eE-+ntrufalsNIy\\\ufeff ', max_size=30),
    # nesting around the depth limit, and strings with escapes (lone surrogates among them)
    st.integers(1, 70).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 70).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.lists(st.sampled_from(["\\ud800", "\\udc00", "\\u00e9", "\\ud83d\\ude00", "x", "\ud800", "é"]))
    .map(lambda parts: '["' + "".join(parts) + '"]'),
)


def per_call(text: str) -> Any:
    """What parse_json did before it kept one decoder: a decoder built by json.loads."""
    try:
        value = json.loads(
            text.removeprefix("\ufeff"), parse_int=_int, parse_float=_float, parse_constant=_constant
        )
    except ValueError as exc:
        return ("error", f"not valid JSON: {exc}")
    try:
        check_json_value(value)  # the rule's other checks, on the value
    except InputError as exc:
        return ("error", str(exc))
    return ("value", value)


def shared(text: str) -> Any:
    try:
        return ("value", parse_json(text))
    except InputError as exc:
        return ("error", str(exc))


@given(JSON_TEXT)
def test_the_shared_decoder_reads_as_a_decoder_per_call(text: str) -> None:
    got, expected = shared(text), per_call(text)
    if expected[0] == "value" and got[0] == "value":
        assert json.dumps(got[1]) == json.dumps(expected[1])  # NaN-free: equal as text
    else:
        assert got == expected


@pytest.mark.parametrize("text", ["\ufeff\ufeff{}", "[1e400]", "[NaN]", "1" * 40, "", "{\"a\":"])
def test_refusals_are_worded_as_before(text: str) -> None:
    assert shared(text) == per_call(text) and shared(text)[0] == "error"


def test_threads_share_the_decoder() -> None:
    docs = [json.dumps({f"k{i}": list(range(i)), "s": "é" * i}) for i in range(200)]
    failures: list[str] = []

    def read() -> None:
        for doc in docs:
            if parse_json(doc) != json.loads(doc):
                failures.append(doc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
