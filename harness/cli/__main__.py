"""``python -m harness.cli``: the ``mindledger`` command."""

from harness.cli import run

run()
