"""The ``mindledger`` command line: one click group per package, loaded lazily.

:func:`run` is the console script's entry point. It imports the CLI inside its own handler, so
Ctrl-C exits 130 even when it lands while the command line is still being imported.
"""

import sys


def run() -> None:
    """Run ``mindledger``: Ctrl-C anywhere, the imports included, exits 130."""
    try:
        from harness.cli.main import main

        main()
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
