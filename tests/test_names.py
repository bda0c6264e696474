"""The agent-name rule has two spellings — Python's (``\\Z``) for checking, JSON Schema's (``$``)
for the API's documents — and they must accept the same names."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from mindledger.names import AGENT_NAME, AGENT_NAME_PATTERN

NAME_ALPHABET = st.sampled_from("aZ09_.:-| \n\x00ï")


@given(st.text(NAME_ALPHABET, max_size=102) | st.text(max_size=8))
def test_both_spellings_accept_the_same_names(name: str) -> None:
    whole = re.fullmatch(AGENT_NAME_PATTERN.removeprefix("^").removesuffix("$"), name)
    assert bool(AGENT_NAME.match(name)) == bool(whole)


def test_a_trailing_newline_is_not_a_name() -> None:
    assert AGENT_NAME.match("bot") and not AGENT_NAME.match("bot\n")
