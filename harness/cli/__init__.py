"""The ``mindledger`` command line: one click group per package, loaded lazily.

:func:`run` is the console script's entry point. It imports the CLI inside its own handler, so
Ctrl-C exits 130 even when it lands while the command line is still being imported.
"""

import os
import sys


def run() -> None:
    """Run ``mindledger``: Ctrl-C anywhere, the imports included, exits 130."""
    try:
        from harness.cli.main import main

        main()
    except KeyboardInterrupt:  # before main's own handler exists (its imports)
        sys.stderr.write("Interrupted.\n")
        sys.stderr.flush()
        os._exit(130)
