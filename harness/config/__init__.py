"""What the settings say and what they open: the settings file and environment
(``settings``; its ``[notify]``, ``[schedule.matrix]`` and ``[[witnesses]]`` tables in
``notify_config``, ``schedule_config``, ``witness_config``), the composition root that
opens the store and the ledger from them (``workspace``) and the seed policy (``seeds``).
Imports nothing else of harness.
"""
