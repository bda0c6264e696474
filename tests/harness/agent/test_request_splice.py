"""The openai adapter splices a request body from pieces encoded once (the opening up to the
messages, the sampling settings, frozen tools and response formats, kept by identity): the bytes
it sends must be exactly those of encoding the whole body at once, for any request, however
often the same pieces are reused, and the frozen pieces must not be changeable."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.adapters import ChatPolicy, OpenAIChat
from harness.agent.agents import ChatAgent, ChatReply
from harness.agent.answers import answer_tool
from harness.agent.frozen_json import FrozenDict, FrozenList, freeze
from mindledger.canonical import canonical_json
from mindledger.items import Item

REPLY = {
    "model": "m",
    "choices": [{"message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
}


def plain(model: str | None, messages: Any, **kw: Any) -> bytes:
    """The body as the adapter built it before splicing: one dict, encoded at once."""
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = messages
    body["temperature"] = kw.get("temperature", 0.0)
    body["max_tokens"] = kw.get("max_tokens", 512)
    if kw.get("tools"):
        body["tools"] = kw["tools"]
        if kw.get("tool_choice") is not None:
            body["tool_choice"] = kw["tool_choice"]
    if kw.get("response_format") is not None:
        body["response_format"] = kw["response_format"]
    if kw.get("seed") is not None:
        body["seed"] = kw["seed"]
    if kw.get("extra"):
        body.update(kw["extra"])
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def sent(client: OpenAIChat, seen: list[bytes], messages: Any, **kw: Any) -> bytes | str:
    """The bytes one chat call sent, or the name of the exception encoding raised."""
    try:
        asyncio.run(client.chat(messages, **kw))
    except (TypeError, ValueError) as exc:  # unencodable (UnicodeEncodeError is a ValueError)
        return type(exc).__name__
    return seen.pop()


def expected(model: str | None, messages: Any, **kw: Any) -> bytes | str:
    try:
        return plain(model, messages, **kw)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


def recording_client(model: str | None) -> tuple[OpenAIChat, list[bytes]]:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, json=REPLY)

    client = OpenAIChat(
        "http://test/v1",
        model,
        transport=httpx.MockTransport(handler),
        policy=ChatPolicy(max_retries=0),
    )
    return client, seen


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # lone surrogates included: both ways must refuse them alike
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"])}).flatmap(
        lambda m: st.fixed_dictionaries(
            {**{k: st.just(v) for k, v in m.items()}, "content": st.text() | values}
        )
    )
    | st.dictionaries(st.text(), values, max_size=3),
    max_size=4,
)
numbers = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(-5, 10**6)
    | st.booleans()
    | st.sampled_from([0.0, -0.0, 1, 1.0, True])
)
tool_lists = st.none() | st.just([]) | st.lists(st.dictionaries(st.text(), values), max_size=3)
objects = st.none() | st.dictionaries(st.text(), values, max_size=3)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.none() | st.text(),
    turns=st.lists(
        st.tuples(
            messages,
            numbers,
            numbers,
            st.integers(0, 2),  # which of the shared tools (or none)
            st.none() | st.text() | objects,
            st.integers(0, 2),  # which of the shared response formats (or none)
            st.none() | st.integers(-(2**63), 2**63),
            st.none()
            | st.dictionaries(st.sampled_from(["model", "tools", "x", "é"]), values, max_size=2),
        ),
        min_size=1,
        max_size=6,
    ),
    tools=st.tuples(tool_lists, tool_lists),
    formats=st.tuples(objects, objects),
    freeze_them=st.booleans(),
)
def test_spliced_bodies_are_the_plain_encoding(
    model: str | None,
    turns: list[tuple[Any, ...]],
    tools: tuple[Any, Any],
    formats: tuple[Any, Any],
    freeze_them: bool,
) -> None:
    client, seen = recording_client(model)
    if freeze_them:  # shared by identity across the calls, as the agents share them
        tools = tuple(freeze(t) for t in tools)  # type: ignore[assignment]
        formats = tuple(freeze(f) for f in formats)  # type: ignore[assignment]
    for msgs, temperature, max_tokens, t, choice, f, seed, extra in turns:
        kw = {
            "tools": (None, *tools)[t],
            "tool_choice": choice,
            "response_format": (None, *formats)[f],
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "extra": extra,
        }
        assert sent(client, seen, msgs, **kw) == expected(model, msgs, **kw)


def test_settings_that_compare_equal_but_encode_apart_are_kept_apart() -> None:
    client, seen = recording_client("m")
    msgs = [{"role": "user", "content": "hi"}]
    for temperature in (0.0, -0.0, 0, False, 1, 1.0, True, 0.0, -0.0, float("nan")):
        for max_tokens in (1, 1.0, True, -0.0):
            got = sent(client, seen, msgs, temperature=temperature, max_tokens=max_tokens)
            assert got == plain("m", msgs, temperature=temperature, max_tokens=max_tokens)


def test_answer_specs_that_compare_equal_but_encode_apart_get_their_own_tools() -> None:
    backend = Recorder()
    agent = ChatAgent("a", backend, answer_mode="tools")
    specs = [
        {"kind": "integer", "min": 0.0, "max": 5},
        {"kind": "integer", "min": -0.0, "max": 5},
        {"kind": "integer", "min": 0, "max": 5},
        {"kind": "integer", "min": False, "max": 5},
        {"kind": "choice", "choices": [1, "a"]},
        {"kind": "choice", "choices": [1.0, "a"]},
        {"kind": "choice", "choices": [True, "a"]},
    ]
    encoded = set()
    for n, spec in enumerate(specs * 2):
        asyncio.run(agent.attempt(item(n, spec)))
        for tools in backend.tools:  # the answer turn, and the nudge's when there is one
            assert json.dumps(tools) == json.dumps([answer_tool(spec)])
            encoded.add(json.dumps(tools))
        backend.tools.clear()
    assert len(encoded) == len(specs)


def test_the_opening_follows_a_changed_model() -> None:
    client, seen = recording_client("a")
    msgs = [{"role": "user", "content": "hi"}]
    for model in ("a", None, "b", "b", "é"):
        client.model = model
        assert sent(client, seen, msgs) == plain(model, msgs)


def test_a_frozen_part_is_encoded_once_and_reused() -> None:
    client, _seen = recording_client("m")
    tools = freeze([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    first = client._encoded(tools)
    assert client._encoded(tools) is first  # the same bytes object: kept, not re-encoded
    unfrozen = [dict(tools[0])]
    assert client._encoded(unfrozen) is not client._encoded(unfrozen)  # plain: each time


def test_frozen_values_cannot_change_and_copy_as_plain_json() -> None:
    value = freeze({"a": [1, {"b": (2, 3)}], "c": "é"})
    assert isinstance(value, FrozenDict) and isinstance(value["a"], FrozenList)
    assert value == {"a": [1, {"b": [2, 3]}], "c": "é"}
    assert canonical_json(value) == canonical_json({"a": [1, {"b": [2, 3]}], "c": "é"})
    for change in (
        lambda: value.__setitem__("a", 1),
        lambda: value.update(a=1),
        lambda: value.pop("a"),
        lambda: value.setdefault("z", 1),
        lambda: value.clear(),
        lambda: value["a"].append(1),
        lambda: value["a"].__setitem__(0, 2),
        lambda: value["a"][1]["b"].sort(),
    ):
        with pytest.raises(TypeError):
            change()
    for copied in (copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert copied == value and type(copied) is dict and type(copied["a"]) is list
        copied["a"].append(4)  # the copies are plain, mutable JSON
    assert value["a"] == [1, {"b": [2, 3]}]
    assert type(copy.copy(value)) is dict


class Recorder:
    """A chat backend that records what each request carried."""

    def __init__(self) -> None:
        self.tools: list[Any] = []

    async def chat(self, messages: Any, *, tools: Any = None, **kw: Any) -> ChatReply:
        self.tools.append(tools)
        return ChatReply(message={"role": "assistant", "content": "ANSWER: 3"})

    async def aclose(self) -> None:
        return None


def item(n: int, answer: dict[str, Any]) -> Item:
    return Item(
        family="toy",
        generator="toy",
        version="1",
        seed=n,
        params={},
        prompt=f"question {n}",
        answer=answer,
        truth={},
    )


def test_agents_share_one_frozen_answer_tool_per_spec() -> None:
    backend = Recorder()
    agent = ChatAgent("a", backend, answer_mode="tools")
    specs = [{"kind": "integer", "min": 1, "max": 5}, {"kind": "integer", "min": 1.0, "max": 5}]
    for n in range(4):
        asyncio.run(agent.attempt(item(n, dict(specs[n % 2]))))
    first, second, third, fourth = backend.tools
    assert first is third and second is fourth and first is not second  # 1 and 1.0 apart
    assert isinstance(first, FrozenList)
    assert json.dumps(second) != json.dumps(first)
