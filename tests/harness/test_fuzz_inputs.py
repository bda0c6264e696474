"""Every input kind fuzzed through its real entry point (issue 12): hypothesis draws both valid
documents and hostile ones (valid documents with one part replaced by arbitrary JSON, arbitrary
JSON, and raw bytes), at least 2,000 cases per kind, and checks the one rule: a clear error or
success, never a traceback (CLI: exit 0, 1 or 2, one short error line) and never a 500 (API).

Longer runs: ``python bench/fuzz_inputs.py --runs 100000`` (every target, the command line too;
``tests/harness/test_fuzz_bench.py`` runs it on a small budget in CI), or ``--atheris TARGET``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli import run_main

BUDGET = settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
"""The CI budget: 2,000 cases per input kind, the same cases every run."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "\ud800", "\x00", "é" * 3, "-1", "nan", "1e999"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)

STORY = {
    "agents": ["Ann", "Ben"],
    "objects": {"key": "drawer"},
    "present": ["Ann", "Ben"],
    "events": [
        {"type": "leave", "agent": "Ben"},
        {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": []},
        {"type": "enter", "agent": "Ben"},
        {
            "type": "tell",
            "from": "Ann",
            "to": "Ben",
            "object": "key",
            "claimed": "box",
            "received": "box",
        },
    ],
    "questions": [{"chain": ["Ben"], "object": "key"}, {"chain": [], "object": "key"}],
}
GAME = {"actions": [0, 1, 2], "payoff": [[1, 0, 0], [0, 2, 0], [0, 0, 3]], "anchor": 0}


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    out = list(doc)
    out[head] = _replace(out[head], rest, value)
    return out


def documents(valid: Any) -> st.SearchStrategy[bytes]:
    """The valid document, the valid document with one part (or key) replaced by arbitrary
    JSON or dropped, arbitrary JSON, and raw bytes — encoded as a file would be."""
    paths = list(_paths(valid))

    @st.composite
    def mutated(draw: st.DrawFn) -> Any:
        path = draw(st.sampled_from(paths))
        if path and draw(st.booleans()) and isinstance(_at(valid, path[:-1]), dict):
            parent = dict(_at(valid, path[:-1]))
            parent.pop(path[-1])
            return _replace(valid, path[:-1], parent)
        return _replace(valid, path, draw(json_values))

    def encode(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=True).encode()

    return st.one_of(
        st.just(encode(valid)),
        mutated().map(encode),
        json_values.map(encode),
        st.binary(max_size=200),
        st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
    )


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code, _, err = run_main(capsys, *args)
    return code, err


def assert_clean(code: int, err: str) -> None:
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err, err
    assert all(len(line) <= 1000 for line in err.splitlines()), err[:300]


@pytest.fixture
def scratch(isolated_home: Path) -> Path:
    return isolated_home / "doc.json"


def test_fuzz_story_files(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @BUDGET
    @given(doc=documents(STORY))
    def case(doc: bytes) -> None:
        scratch.write_bytes(doc)
        assert_clean(*run_cli(capsys, "nesttom", "answer", str(scratch)))

    case()


def test_fuzz_game_specs(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @BUDGET
    @given(doc=documents(GAME))
    def case(doc: bytes) -> None:
        scratch.write_bytes(doc)
        assert_clean(*run_cli(capsys, "games", "check", str(scratch)))

    case()


def test_fuzz_ledger_arguments(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @BUDGET
    @given(
        dist=documents({"7": 0.6, "3": 0.4}),
        condition=st.one_of(st.none(), documents({"round": 1})),
        query=st.text(max_size=30),
    )
    def case(dist: bytes, condition: bytes | None, query: str) -> None:
        args = ["ledger", "commit", "--predictor", "p", "--target", "t", "--query", query]
        args += ["--distribution", dist.decode("utf-8", "surrogateescape")]
        if condition is not None:
            args += ["--condition", condition.decode("utf-8", "surrogateescape")]
        assert_clean(*run_cli(capsys, *args))

    case()


def test_fuzz_settings_files(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.config.settings import load_settings
    from mindledger.errors import ConfigError

    cfg = isolated_home / "m.toml"
    lines = st.sampled_from(
        [
            "concurrency = 3",
            "timeout = nan",
            "reveal_timeout = 1e300",
            "home = 5",
            'home = "x\\u0000"',
            "[agents.a]",
            'adapter = "openai"',
            'endpoint = "http://h/v1"',
            'endpoint = "http://u:p@h:99999/v1"',
            "temperature = -1",
            'control = "a"',
            "max_tokens = 10000000000000000000000",
            "[[x]]",
            "prediction_share = 2",
        ]
    )
    texts = st.one_of(
        st.lists(lines, max_size=8).map(lambda ls: "\n".join(ls).encode()),
        st.binary(max_size=120),
        st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogateescape")),
    )

    @BUDGET
    @given(text=texts, flag=st.sampled_from(["", "nan", "inf", "-3", "1e300", "5", "x"]))
    def case(text: bytes, flag: str) -> None:
        cfg.write_bytes(text)
        flags = {"timeout": flag} if flag else {}
        try:
            s = load_settings(cfg, env={}, flags=flags)
        except ConfigError as exc:
            assert len(str(exc)) <= 1000
            return
        assert math.isfinite(s.timeout) and math.isfinite(s.reveal_timeout)

    case()
    # and a sample through the CLI itself
    cfg.write_bytes(b"concurrency = 3 # \xff\n")
    assert_clean(*run_cli(capsys, "--config", str(cfg), "config", "show"))


def test_fuzz_exports(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ledger.db import open_engine
    from ledger.keys import public_key_hex
    from ledger.predictions import Ledger
    from ledger.protocol import provenance

    key = Ed25519PrivateKey.from_private_bytes(b"\x05" * 32)
    led = Ledger(open_engine(f"sqlite:///{isolated_home / 'e.db'}"), key, witness_dir=None)
    p = led.client("p").commit("t", "q", {"a": 1.0})
    led.observe(p.id, "a", provenance("operator", "r"))
    good = isolated_home / "good.jsonl"
    led.export(good)
    lines = good.read_bytes().splitlines()
    export = isolated_home / "x.jsonl"
    pub = public_key_hex(key)

    @BUDGET
    @given(
        i=st.integers(0, len(lines) - 1),
        line=documents(json.loads(lines[1])),
        drop=st.booleans(),
    )
    def case(i: int, line: bytes, drop: bool) -> None:
        new = list(lines)
        if drop:
            del new[i]
        else:
            new[i] = line.replace(b"\n", b" ")
        export.write_bytes(b"\n".join(new) + b"\n")
        code, err = run_cli(
            capsys, "ledger", "verify", "--file", str(export), "--public-key", pub
        )
        assert_clean(code, err)

    case()


def test_fuzz_model_replies() -> None:
    from harness.agent.answers import parse_reply

    specs = [
        {"kind": "choice", "choices": ["box", "basket"]},
        {"kind": "yesno"},
        {"kind": "integer", "min": 0, "max": 100},
        {"kind": "distribution", "choices": ["a", "b"]},
    ]
    messages = st.fixed_dictionaries(
        {},
        optional={
            "content": st.one_of(st.none(), st.text(max_size=60), json_values),
            "tool_calls": st.one_of(
                json_values,
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "function": st.fixed_dictionaries(
                                {
                                    "name": st.sampled_from(["submit_answer", "x"]),
                                    "arguments": st.one_of(
                                        json_values.map(json.dumps), st.text(), json_values
                                    ),
                                }
                            )
                        }
                    ),
                    max_size=2,
                ),
            ),
        },
    )

    @BUDGET
    @given(message=messages, spec=st.sampled_from(specs))
    def case(message: dict[str, Any], spec: dict[str, Any]) -> None:
        parsed = parse_reply(message, spec)
        assert parsed.answer is None or parsed.via in ("tool", "json", "text")
        if parsed.confidence is not None:
            assert 0 <= parsed.confidence <= 1

    case()


def test_fuzz_api_bodies(tmp_path: Path) -> None:
    """Every body-taking route of the daemon's app, served on 127.0.0.1 as ``mindledger serve``
    serves it, with an agent and an operator token: any body gives a JSON answer below 500."""
    from dataclasses import replace

    import httpx

    from harness.config.settings import AgentConfig, load_settings
    from harness.daemon import BackgroundServer, build_daemon, create_token
    from harness.testing import FakeOpenAI

    with FakeOpenAI() as fake:
        settings = load_settings(
            None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 'a.db'}", "home": str(tmp_path)}
        )
        settings = replace(
            settings,
            agents={"dusk": AgentConfig("dusk", endpoint=fake.base_url, model="m")},
            head_interval=0,
            api_rate_limit=100_000.0,  # not about the rate limit: no 429 on a fast machine
        )
        daemon = build_daemon(settings, scheduler=False)
        agent = create_token(daemon.engine, "piper")
        operator = create_token(daemon.engine, None, scope="operator")
        valid = {
            "/predictions": {"target": "dusk", "query": "q", "commitment": "sha256:" + "a" * 64},
            "/predictions/p0/observe": {"answer": "7"},
            "/predictions/p0/reveal": {"prediction": {"v": 1}, "salt": "00" * 32},
            "/proxy/dusk/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]},
            "/runs": {"suite": "quick", "references": ["oracle"]},
        }
        try:
            with (
                BackgroundServer(daemon.app) as server,
                httpx.Client(base_url=server.url, timeout=30) as client,
            ):

                @BUDGET
                @given(
                    path=st.sampled_from(sorted(valid)),
                    data=st.data(),
                    token=st.sampled_from([agent, operator]),
                    header=st.one_of(st.none(), st.text(max_size=30)),
                )
                def case(path: str, data: st.DataObject, token: str, header: str | None) -> None:
                    body = data.draw(documents(valid[path]))
                    headers = {"Authorization": f"Bearer {token}"}
                    # a value an HTTP client can send: h11 refuses one that starts or ends
                    # with white space before it reaches the wire
                    if (
                        header is not None
                        and header.isascii()
                        and header.isprintable()
                        and header == header.strip()
                    ):
                        headers["X-Mindledger-Prediction"] = header
                    r = client.post(path, content=body, headers=headers)
                    scheduler_off = r.status_code == 503 and path == "/runs"  # documented
                    assert r.status_code < 500 or scheduler_off, (path, body[:200], r.text[:300])
                    assert "error" in r.json() or r.status_code < 300

                case()
        finally:
            daemon.close()
    assert daemon.ledger.verify() == []
