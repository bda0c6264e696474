"""Errors of the prediction ledger, under mindledger's one error tree.

::

    MindledgerError
    ├── UserError (exit 2)
    │   ├── InputError, NotFoundError     (from mindledger.errors; carry the field or id)
    │   ├── LedgerStateError              the request does not fit the prediction's state
    │   │   │                             (observe after the reveal, reveal twice, …)
    │   │   └── AgentSignatureError       a commit's agent signature is missing, unexpected
    │   │                                 or does not verify with the registered key
    │   ├── LedgerKeyError                a key file is missing, unreadable, too open or wrong
    │   └── cosign.WitnessRefusal         a witness refuses to cosign a head (``code`` says
    │                                     why: unknown log, bad signature, inconsistent, …)
    ├── StorageError
    │   └── cosign.WitnessRecordError     a witness's record of a log cannot be read
    ├── LedgerIntegrityError (exit 1)     the stored ledger fails verification; the service
    │                                     refuses to append to it
    └── RevealRejected (exit 1)           a reveal was refused and recorded against the
                                          predictor (does not match, or too late)
"""

from __future__ import annotations

from typing import Any

from mindledger.errors import MindledgerError, UserError

__all__ = [
    "AgentSignatureError",
    "LedgerIntegrityError",
    "LedgerKeyError",
    "LedgerStateError",
    "RevealRejected",
]


class LedgerStateError(UserError):
    """The prediction is not in a state that allows this request; says which state it is in."""

    def __init__(self, message: str, *, prediction: str | None = None, state: str | None = None):
        super().__init__(message)
        self.prediction = prediction
        self.state = state


class AgentSignatureError(LedgerStateError):
    """A commit's agent signature does not fit the agent's registration: missing although the
    agent registered a key, given although it did not, or not made with the registered key."""


class LedgerKeyError(UserError):
    """A key is missing, unreadable, readable by others, or not the one the ledger was opened
    with."""


class LedgerIntegrityError(MindledgerError):
    """The stored ledger does not verify (e.g. its head was altered or its tail cut off), so
    nothing more is appended to it. ``failures`` holds what was found."""

    exit_code = 1

    def __init__(self, message: str, failures: list[Any] | None = None):
        super().__init__(message)
        self.failures = failures or []


class RevealRejected(MindledgerError):
    """A reveal was refused and recorded against the predictor: the prediction and salt do not
    hash to the commitment, or the deadline had passed. ``result`` is the recorded outcome."""

    exit_code = 1

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result
