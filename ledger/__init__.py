"""ledger: the database of runs, items and trials, and the prediction ledger.

The prediction ledger turns "the agent can model
other reasoners" into a measurement: an agent commits a salted hash of its predicted answer
distribution before the query runs, mindledger records the target's answers, the agent reveals,
and mindledger verifies and scores. Every state change is an entry in one append-only,
hash-chained log signed with the service's Ed25519 key; :meth:`Ledger.verify` names the first
entry that was changed, removed, reordered, forged or cut off. See ``docs/ledger.md``.

::

    ledger = open_ledger(home, db_url).client("piper")
    with ledger.predict("dusk", "Pick a number from 1 to 10", {"7": 0.6, "3": 0.4}) as p:
        p.observe(ask_dusk("Pick a number from 1 to 10"))
    p.scores
"""

import typing

if typing.TYPE_CHECKING:
    from ledger._receipts import CommitReceipt, RevealResult
    from ledger.chain import (
        GENESIS_HASH,
        PROBLEMS,
        Entry,
        Failure,
        Verification,
        Witness,
        entry_hash,
        verify_entries,
    )
    from ledger.client import LedgerClient, Prediction
    from ledger.db import open_engine, utc_now
    from ledger.errors import (
        LedgerIntegrityError,
        LedgerKeyError,
        LedgerStateError,
        RevealRejected,
    )
    from ledger.keys import (
        generate_key,
        load_or_create_service_key,
        parse_public_key,
        public_key_hex,
    )
    from ledger.models import LedgerEntryRow
    from ledger.predictions import Ledger, open_ledger, verify_export
    from ledger.protocol import (
        PredictionState,
        commit_message,
        commitment,
        new_salt,
        prediction_body,
        prediction_id,
    )
    from ledger.scoring import (
        EPSILON,
        MAX_ANSWERS,
        Metric,
        ScoreRecord,
        aggregate,
        brier_score,
        expected_calibration_error,
        log_score,
        modal_answers,
        normalised_skill,
        penalty_log_score,
        penalty_scores,
        retest_agreement,
        score_prediction,
        top1_match,
    )
    from ledger.store import RunAgent, Store, TrialRecord
else:
    from mindledger.lazy import lazy_exports as _lazy_exports

    __getattr__, __dir__ = _lazy_exports(
        __name__,
        {
            "ledger._receipts": ("CommitReceipt", "RevealResult"),
            "ledger.chain": (
                "GENESIS_HASH", "PROBLEMS", "Entry", "Failure", "Verification", "Witness",
                "entry_hash", "verify_entries",
            ),
            "ledger.client": ("LedgerClient", "Prediction"),
            "ledger.db": ("open_engine", "utc_now"),
            "ledger.errors": (
                "LedgerIntegrityError", "LedgerKeyError", "LedgerStateError", "RevealRejected",
            ),
            "ledger.keys": (
                "generate_key", "load_or_create_service_key", "parse_public_key",
                "public_key_hex",
            ),
            "ledger.models": ("LedgerEntryRow",),
            "ledger.predictions": ("Ledger", "open_ledger", "verify_export"),
            "ledger.protocol": (
                "PredictionState", "commit_message", "commitment", "new_salt", "prediction_body",
                "prediction_id",
            ),
            "ledger.scoring": (
                "EPSILON", "MAX_ANSWERS", "Metric", "ScoreRecord", "aggregate", "brier_score",
                "expected_calibration_error", "log_score", "modal_answers", "normalised_skill",
                "penalty_log_score", "penalty_scores", "retest_agreement", "score_prediction",
                "top1_match",
            ),
            "ledger.store": ("RunAgent", "Store", "TrialRecord"),
        },
    )

__all__ = [
    "EPSILON",
    "GENESIS_HASH",
    "MAX_ANSWERS",
    "PROBLEMS",
    "CommitReceipt",
    "Entry",
    "Failure",
    "Ledger",
    "LedgerClient",
    "LedgerEntryRow",
    "LedgerIntegrityError",
    "LedgerKeyError",
    "LedgerStateError",
    "Metric",
    "Prediction",
    "PredictionState",
    "RevealRejected",
    "RevealResult",
    "RunAgent",
    "ScoreRecord",
    "Store",
    "TrialRecord",
    "Verification",
    "Witness",
    "aggregate",
    "brier_score",
    "commit_message",
    "commitment",
    "entry_hash",
    "expected_calibration_error",
    "generate_key",
    "load_or_create_service_key",
    "log_score",
    "modal_answers",
    "new_salt",
    "normalised_skill",
    "open_engine",
    "open_ledger",
    "parse_public_key",
    "penalty_log_score",
    "penalty_scores",
    "prediction_body",
    "prediction_id",
    "public_key_hex",
    "retest_agreement",
    "score_prediction",
    "top1_match",
    "utc_now",
    "verify_entries",
    "verify_export",
]
