"""A suite run, end to end: its items (``suites``), its agents (``build``), stored and
executed in batches (``runs``, ``execution``), each trial attempted and scored
(``runner``, ``episodes`` for repeated games), progress lines (``progress``) and the
judge stage over its stored game trials (``judging``).
"""
