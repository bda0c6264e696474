"""The prediction matrix's orchestration (the pure items, pilot filter and records are the
top-level ``matrix`` package's): plan, run and resume a matrix run (``runs``), the pilot
(``pilot``), one item's predict-commit-ask protocol (``protocol``), how agents are asked
(``asking``) and its trials' writer and bookkeeping (``trials``).
The nightly matrix beside a suite run is planned by ``nightly``.
"""
