"""What the harness sends to others and never fails for: regression notifications to
webhooks and commands (``notify``) and signed tree heads to the ledger's witnesses, with
their cosignatures kept (``witnesses``).
"""
