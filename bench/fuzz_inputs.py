"""Fuzzing of mindledger's input parsers and command line: every target, one report.

    python bench/fuzz_inputs.py                        # every target, plain fuzzer, 2,000 each
    python bench/fuzz_inputs.py --runs 300 --seed 7 json argv
    pip install atheris
    python bench/fuzz_inputs.py --atheris story -atheris_runs=200000   # coverage-guided

Targets: json, story, game, settings, reply, export (a parser each: the fuzzer's bytes go to
one parser), and argv (the command line: read-only and pure commands run in this process with
hostile values, in an empty data directory). Each accepts only its documented outcomes — a
value, or mindledger's InputError / ConfigError / UserError; for argv, an exit code of 0, 1, 2
or 3 with at most one ``error:`` line and no ``Traceback``, and nothing created by a command
that only reads. Anything else is a finding, printed with the input that caused it; the exit
code is 1 when there is one. ``tests/harness/test_fuzz_bench.py`` runs every target on a small
budget in CI.

The plain fuzzer needs nothing installed: from a few valid inputs per target it makes
mutations (bytes flipped, inserted, dropped, spliced; JSON values swapped for hostile ones;
command-line tokens replaced, dropped or repeated), drawn from ``numpy.random.default_rng(seed)``
so that a run can be repeated. ``--atheris`` runs one target under atheris instead. Loading
used to take over a minute per target (each target timed out at 60 s before fuzzing anything):
``atheris.instrument_all()`` rewrote the bytecode of every loaded module — numpy, SQLAlchemy,
cryptography, click — for coverage; now only mindledger's own packages are instrumented, as
they are imported, and a target starts in seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OWN_PACKAGES = ["mindledger", "nesttom", "games", "ledger", "matrix", "harness", "reports"]
"""What ``--atheris`` instruments for coverage (not numpy, SQLAlchemy, … under them)."""

_SCRATCH = Path(tempfile.mkdtemp(prefix="mindledger-fuzz-"))


# -- the parser targets -------------------------------------------------------------------------


def _json(data: bytes) -> None:
    from mindledger.errors import InputError
    from mindledger.jsonin import parse_json

    with contextlib.suppress(InputError):
        parse_json(data)


def _story(data: bytes) -> None:
    from mindledger.errors import InputError
    from mindledger.jsonin import parse_json
    from nesttom import validate_story

    with contextlib.suppress(InputError):
        validate_story(parse_json(data))


def _game(data: bytes) -> None:
    from games import GameSpec
    from mindledger.errors import UserError
    from mindledger.jsonin import parse_json

    with contextlib.suppress(UserError):
        GameSpec.from_dict(parse_json(data), source="fuzz")


def _settings(data: bytes) -> None:
    from harness.config.settings import load_settings
    from mindledger.errors import ConfigError

    path = _SCRATCH / "m.toml"
    path.write_bytes(data)
    with contextlib.suppress(ConfigError):
        load_settings(path, env={})


def _reply(data: bytes) -> None:
    from harness.agent.answers import parse_reply
    from mindledger.errors import InputError
    from mindledger.jsonin import parse_json

    try:
        message = parse_json(data)
    except InputError:
        return
    if isinstance(message, dict):
        parse_reply(message, {"kind": "choice", "choices": ["a", "b"]})


def _export(data: bytes) -> None:
    from ledger.predictions import verify_export

    path = _SCRATCH / "export.jsonl"
    path.write_bytes(data)
    verify_export(path, "00" * 32)


# -- the command-line target --------------------------------------------------------------------

ARGV_SECONDS = 10
"""The longest one command line may take: a longer one is a finding (an unbounded count)."""

READ_ONLY = {"db", "runs", "trials", "report", "history", "ledger", "config", "doctor"}
"""Commands of the argv target that only read: they must leave the data directory uncreated."""

COMMAND_LINES = [
    "db status --format json",
    "runs --limit 5 --format json",
    "runs --verify 20261203-000000-abcdef",
    "trials latest --limit 3 --item 1",
    "report latest --format json --seed 1 --bootstrap 200",
    "history local --metric d50 --since 2026-11-01",
    "ledger show --id p0 --predictor piper --target dusk --format csv",
    "ledger verify --db sqlite:///{tmp}/other.db --full",
    "config show --format json",
    "doctor --no-probe --format json",
    "nesttom generate --seed 7 --n 2 --depth R2 --form chat",
    "games idr 11-20 --depth 3",
    "games generate --seed 7 --n 2 --game 11-20",
    "games list --format json",
]
"""Valid command lines the argv target mutates (each cheap, none with network or long work)."""

HOSTILE = [
    "", " ", "-1", "0", "3", "100000000000", "1e3", "0x10", "nan", "latest~99", "x" * 300,
    "a\tb", "é", "\u202e", "--help", "--", "-o", "concurrency=0", "{}", "[", "'",
    "postgresql://u:p@[::1/db", "sqlite:////nonexistent/dir/x.db", "sqlite:///", "sqlite://",
    "postgres://u:p@h:x/db", "mysql://h/db", "file:x", "sqlite:///{tmp}/nodir/y.db",
]  # fmt: skip
"""Values the argv target puts in place of a token (argv can hold no NUL)."""


def _argv(data: bytes) -> None:
    """Run one mutated command line (``data``: UTF-8, tokens separated by NUL)."""
    from harness.cli.main import main

    tokens = data.decode("utf-8", "replace").split("\x00")
    home = _SCRATCH / "home"
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as tmp:
        args = [t.replace("{tmp}", tmp) for t in tokens]
        env = {"MINDLEDGER_HOME": str(home)}
        out, err = io.StringIO(), io.StringIO()
        with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                with _deadline(ARGV_SECONDS):
                    main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            else:
                code = 0
        problems = []
        if code not in (0, 1, 2, 3):
            problems.append(f"exit {code}")
        text = err.getvalue()
        if "Traceback" in text:
            problems.append("a traceback on stderr")
        if sum(line.startswith("error:") for line in text.splitlines()) > 1:
            problems.append("more than one error line")
        command = next((t for t in args if not t.startswith("-")), "")
        if command in READ_ONLY and "--help" not in args and home.exists():
            problems.append(f"`{command}` (it only reads) created {sorted(os.listdir(home))}")
        nodir = Path(tmp) / "nodir"
        if command in READ_ONLY and nodir.exists():
            problems.append(f"`{command}` (it only reads) created {nodir}")
        if home.exists():
            _remove(home)
        if problems:
            raise AssertionError("; ".join(problems) + f"\nstderr: {text[-2000:]}")


class TookTooLong(Exception):
    """A command line ran past :data:`ARGV_SECONDS`."""


@contextlib.contextmanager
def _deadline(seconds: int) -> Any:
    import signal

    def expire(signum: int, frame: Any) -> None:
        raise TookTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Any:
    saved = {k: v for k, v in os.environ.items() if k.startswith("MINDLEDGER_")}
    for k in saved:
        del os.environ[k]
    os.environ.update(values)
    try:
        yield
    finally:
        for k in values:
            os.environ.pop(k, None)
        os.environ.update(saved)


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# -- seeds and mutations ------------------------------------------------------------------------


def _seeds() -> dict[str, list[bytes]]:
    story = {
        "agents": ["Ann", "Ben"],
        "objects": {"key": "drawer"},
        "present": ["Ann", "Ben"],
        "events": [
            {"type": "leave", "agent": "Ben"},
            {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": []},
            {"type": "enter", "agent": "Ben"},
        ],
        "questions": [{"chain": ["Ben"], "object": "key"}],
    }
    game = {"actions": [11, 12, 13, 14], "payoff": [[1, 2, 3, 4]] * 4, "anchor": 14}
    reply = {"role": "assistant", "content": '{"answer": "a", "confidence": 0.7}'}
    settings = (
        'concurrency = 8\ntimeout = 30.0\n[agents.mybot]\nadapter = "openai"\n'
        'endpoint = "http://127.0.0.1:8000/v1"\nmodel = "m"\nmodules = ["perspective"]\n'
    )
    export = {"seq": 1, "kind": "genesis", "subject": "ledger", "prev": None, "payload": {}}
    return {
        "json": [b'{"a": [1, 2.5, "x", null, true]}', b"[[[]]]", b'"\\u00e9"'],
        "story": [json.dumps(story).encode()],
        "game": [json.dumps(game).encode()],
        "settings": [settings.encode()],
        "reply": [json.dumps(reply).encode()],
        "export": [json.dumps(export).encode() + b"\n"],
        "argv": ["\x00".join(line.split(" ")).encode() for line in COMMAND_LINES],
    }


HOSTILE_JSON = [
    None, True, -1, 0, 1e308, -(10**30), "", "\x00", "é", "\ud800", [], {}, [[[[]]]],
    "x" * 5000,
]  # fmt: skip


def _mutate(data: bytes, rng: np.random.Generator, corpus: Sequence[bytes], target: str) -> bytes:
    """One mutation of ``data``: a few byte-level edits, a JSON value swapped for a hostile one,
    or (argv) command-line tokens replaced, dropped or repeated."""
    if target == "argv":
        return _mutate_argv(data, rng)
    choice = int(rng.integers(0, 6))
    if choice == 0:  # swap a JSON value
        try:
            doc = json.loads(data)
        except ValueError:
            choice = 1
        else:
            return json.dumps(_swap(doc, rng), ensure_ascii=False).encode("utf-8", "surrogatepass")
    buf = bytearray(data)
    for _ in range(int(rng.integers(1, 5))):
        op = int(rng.integers(0, 5)) if buf else 1
        pos = int(rng.integers(0, len(buf) + 1))
        if op == 0 and pos < len(buf):  # flip a bit
            buf[pos] ^= 1 << int(rng.integers(0, 8))
        elif op == 1:  # insert interesting bytes
            pick = [b"\x00", b"\xff", b"{", b"[", b'"', b"\\u", b"9" * 40, b"-", b"\n"]
            buf[pos:pos] = pick[int(rng.integers(0, len(pick)))]
        elif op == 2 and pos < len(buf):  # drop a run of bytes
            del buf[pos : pos + int(rng.integers(1, 16))]
        elif op == 3:  # splice in part of another input
            other = corpus[int(rng.integers(0, len(corpus)))]
            start = int(rng.integers(0, len(other) + 1))
            buf[pos:pos] = other[start : start + int(rng.integers(1, 64))]
        elif pos < len(buf):  # repeat a run of bytes
            buf[pos:pos] = buf[pos : pos + int(rng.integers(1, 32))] * int(rng.integers(2, 8))
    return bytes(buf)


def _swap(doc: Any, rng: np.random.Generator) -> Any:
    if isinstance(doc, dict) and doc and rng.random() < 0.8:
        key = list(doc)[int(rng.integers(0, len(doc)))]
        return {**doc, key: _swap(doc[key], rng)}
    if isinstance(doc, list) and doc and rng.random() < 0.8:
        i = int(rng.integers(0, len(doc)))
        return [*doc[:i], _swap(doc[i], rng), *doc[i + 1 :]]
    return HOSTILE_JSON[int(rng.integers(0, len(HOSTILE_JSON)))]


def _mutate_argv(data: bytes, rng: np.random.Generator) -> bytes:
    tokens = data.decode().split("\x00")
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 5))
        i = int(rng.integers(0, len(tokens)))
        if op <= 1:  # replace a token (most often a value) by a hostile one
            tokens[i] = HOSTILE[int(rng.integers(0, len(HOSTILE)))]
        elif op == 2 and len(tokens) > 1:
            del tokens[i]
        elif op == 3:
            tokens.insert(i, tokens[i])
        else:  # a global option in front
            tokens[:0] = ["--db", HOSTILE[int(rng.integers(0, len(HOSTILE)))]]
    return "\x00".join(tokens).encode()


# -- running ------------------------------------------------------------------------------------

TARGETS: dict[str, Callable[[bytes], None]] = {
    "json": _json,
    "story": _story,
    "game": _game,
    "settings": _settings,
    "reply": _reply,
    "export": _export,
    "argv": _argv,
}


@dataclass
class Result:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    findings: list[tuple[bytes, str]] = field(default_factory=list)


def fuzz(target: str, runs: int, seed: int) -> Result:
    """Run ``target`` on its seeds and ``runs`` mutations of them (reproducible from ``seed``)."""
    fn = TARGETS[target]
    corpus = _seeds()[target]
    rng = np.random.default_rng([seed, sorted(TARGETS).index(target)])
    result = Result(target)
    start = time.perf_counter()
    for n in range(len(corpus) + runs):
        data = (
            corpus[n]
            if n < len(corpus)
            else _mutate(corpus[int(rng.integers(0, len(corpus)))], rng, corpus, target)
        )
        try:
            fn(data)
        except Exception:
            result.findings.append((data, traceback.format_exc()))
        result.inputs += 1
    result.seconds = time.perf_counter() - start
    return result


def _atheris(target: str, argv: list[str]) -> None:
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris (or drop --atheris)", file=sys.stderr)
        sys.exit(2)
    import numpy  # noqa: F401 - the libraries below the project load uninstrumented
    import sqlalchemy  # noqa: F401

    with atheris.instrument_imports(include=OWN_PACKAGES):
        for name in ("games", "harness.agent.answers", "harness.config.settings", "harness.cli.main",
                     "ledger.predictions", "mindledger.jsonin", "nesttom"):  # fmt: skip
            __import__(name)
    if not any(not a.startswith("-") for a in argv):  # no corpus given: start from the seeds
        corpus = _SCRATCH / f"corpus-{target}"
        corpus.mkdir()
        for n, data in enumerate(_seeds()[target]):
            (corpus / f"seed-{n}").write_bytes(data)
        argv = [*argv, str(corpus)]
    atheris.Setup([sys.argv[0], *argv], TARGETS[target])
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--runs", type=int, default=2000, help="mutations per target")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mutations")
    parser.add_argument("--atheris", action="store_true", help="one target, under atheris")
    args, rest = parser.parse_known_args(argv)
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown or (rest and not args.atheris):
        parser.error(f"unknown target or option: {' '.join(unknown + rest)}")
    if args.atheris:
        if len(args.targets) != 1:
            parser.error("--atheris fuzzes one target")
        _atheris(args.targets[0], rest)
        return 0
    total, found = 0, 0
    for target in args.targets or list(TARGETS):
        r = fuzz(target, args.runs, args.seed)
        total += r.inputs
        found += len(r.findings)
        print(
            f"{target:<9} {r.inputs:>6} inputs  {len(r.findings)} tracebacks  ({r.seconds:.1f} s)"
        )
        for data, trace in r.findings[:3]:
            print(f"  input {data[:300]!r}\n" + "\n".join("    " + line for line in
                  trace.rstrip().splitlines()[-8:]))  # fmt: skip
    print(f"total: {total} inputs over {len(args.targets or TARGETS)} targets, {found} tracebacks "
          f"(seed {args.seed})")  # fmt: skip
    _remove(_SCRATCH)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
