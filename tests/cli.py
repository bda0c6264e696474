"""``mindledger ARGS`` in the test's own process, for the tests of the command line."""

from __future__ import annotations

import pytest


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI on ``args`` through its own error handling: the exit code, stdout, stderr."""
    from harness.cli.main import main

    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    else:  # pragma: no cover - main always exits
        code = 0
    out, err = capsys.readouterr()
    return code, out, err
