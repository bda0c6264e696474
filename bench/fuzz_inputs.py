"""Coverage-guided fuzzing of mindledger's input parsers with atheris, for runs longer than CI's
(the hypothesis fuzz tests in ``tests/harness/test_fuzz_inputs.py`` give every input kind 2,000
cases on every CI run).

    pip install atheris
    python bench/fuzz_inputs.py story -atheris_runs=200000
    python bench/fuzz_inputs.py {json,story,game,settings,reply,export} [libFuzzer options]

Each target feeds the fuzzer's bytes to one parser and accepts only its documented outcomes (a
value, or mindledger's InputError / ConfigError); anything else is a crash the fuzzer reports,
with the input that caused it.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mindledger.errors import ConfigError, InputError, UserError


def _json(data: bytes) -> None:
    from mindledger.jsonin import parse_json

    try:
        parse_json(data)
    except InputError:
        pass


def _story(data: bytes) -> None:
    from mindledger.jsonin import parse_json
    from nesttom import validate_story

    try:
        validate_story(parse_json(data))
    except InputError:
        pass


def _game(data: bytes) -> None:
    from games import GameSpec
    from mindledger.jsonin import parse_json

    try:
        GameSpec.from_dict(parse_json(data), source="fuzz")
    except UserError:
        pass


_SCRATCH = Path(tempfile.mkdtemp()) / "m.toml"


def _settings(data: bytes) -> None:
    from harness.settings import load_settings

    _SCRATCH.write_bytes(data)
    try:
        load_settings(_SCRATCH, env={})
    except ConfigError:
        pass


def _reply(data: bytes) -> None:
    from harness.answers import parse_reply
    from mindledger.jsonin import parse_json

    try:
        message = parse_json(data)
    except InputError:
        return
    if isinstance(message, dict):
        parse_reply(message, {"kind": "choice", "choices": ["a", "b"]})


def _export(data: bytes) -> None:
    from ledger.predictions import verify_export

    path = _SCRATCH.with_suffix(".jsonl")
    path.write_bytes(data)
    verify_export(path, "00" * 32)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "json": _json,
    "story": _story,
    "game": _game,
    "settings": _settings,
    "reply": _reply,
    "export": _export,
}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        print(__doc__)
        sys.exit(2)
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        sys.exit(2)
    target = TARGETS[sys.argv[1]]
    for name in ("games", "harness.answers", "harness.settings", "ledger.predictions",
                 "mindledger.jsonin", "nesttom"):
        __import__(name)
    atheris.instrument_all()
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
