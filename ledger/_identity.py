"""Which ledger this is, and the service key that signs for it.

A ledger is named by the hash of its first (``open``) entry, which also records the public key
it was opened with; a ``key`` entry, signed by the old key and carrying the new key's proof of
possession, is the only way the key changes (:meth:`LedgerIdentity.key_change`). The service
refuses to write with any other key than the ledger's current one.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger._table import Build, Cursor, Spec, head_entry
from ledger.chain import LEDGER_FORMAT, Entry, key_change_message
from ledger.errors import LedgerKeyError, LedgerStateError
from ledger.keys import KEY_TAG, parse_public_key, public_key_hex, sign
from mindledger.errors import InputError

__all__ = ["LedgerIdentity"]


class LedgerIdentity:
    """The service key (``key``, ``public_key``, ``public_key_hex``) and, once read, the id of
    the ledger it signs."""

    def __init__(self, key: Ed25519PrivateKey):
        self.key = key
        self.public_key = key.public_key()
        self.public_key_hex = public_key_hex(key)
        self._ledger_id: str | None = None

    def ledger_id(self, cur: Cursor) -> str | None:
        """The ledger's id (hash of entry 1), checking that the ledger's current key (the open
        entry's, or the newest ``key`` entry's) is the service key here."""
        if self._ledger_id is not None:
            return self._ledger_id
        row = cur.one("SELECT hash, payload_json FROM ledger_entries WHERE seq = 1")
        if row is None:
            return None
        try:
            opened_with = json.loads(row[1]).get("public_key")
        except (ValueError, AttributeError):
            opened_with = None
        changed = cur.one(
            "SELECT payload_json FROM ledger_entries WHERE kind = 'key' ORDER BY seq DESC LIMIT 1"
        )
        if changed is None:
            if opened_with != self.public_key_hex:
                raise LedgerKeyError(
                    f"this ledger was opened with public key {opened_with}, but the service "
                    f"key here is {self.public_key_hex}: use the key the ledger was created "
                    "with (a key changes only by `mindledger ledger rotate-key`)"
                )
        else:
            current = json.loads(changed[0]).get("public_key")
            if current != self.public_key_hex:
                raise LedgerKeyError(
                    f"this ledger's current key is {current}, but the service key here is "
                    f"{self.public_key_hex}: a key changes only by `mindledger ledger "
                    "rotate-key`, which records the change signed by the old key (if one "
                    "was interrupted, the new key is in keys/ledger-ed25519.next.pem)"
                )
        self._ledger_id = row[0]
        return self._ledger_id

    @property
    def known_ledger_id(self) -> str | None:
        """The ledger's id if this process has read or written it already (no query)."""
        return self._ledger_id

    def opened(self, ledger_id: str) -> None:
        """This process wrote the ledger's first entry, whose hash is ``ledger_id``."""
        self._ledger_id = ledger_id

    def open_spec(self) -> Spec:
        """The ``open`` entry that starts a new ledger under this key."""
        payload = {
            "format": LEDGER_FORMAT,
            "public_key": self.public_key_hex,
            "nonce": secrets.token_hex(16),
        }
        return ("open", "ledger", payload)

    def signer_of(self, head: Entry) -> Ed25519PublicKey | None:
        """The key that signed ``head``: the service key, or for a key change the old key."""
        if head.kind != "key":
            return self.public_key
        try:
            return parse_public_key(str(json.loads(head.payload_json)["previous"]))
        except (ValueError, KeyError, TypeError, LedgerKeyError):
            return None

    def key_change(self, new_key: Ed25519PrivateKey) -> Build:
        """The request appending the ``key`` entry that hands the ledger to ``new_key``: signed
        by the current key, naming the new one and carrying the new key's signature over the
        change (proof of possession). Once it is appended, :meth:`adopt` the new key."""
        new_hex = public_key_hex(new_key)
        if new_hex == self.public_key_hex:
            raise InputError("the new key is the current key", where="key")

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            head = head_entry(cur)
            if head is None:
                raise LedgerStateError(
                    "the ledger is empty: there is no key to change (a new ledger is opened "
                    "with whatever key the service has)"
                )
            lid = self.ledger_id(cur)
            message = key_change_message(lid, head.hash, self.public_key_hex, new_hex)
            payload = {
                "previous": self.public_key_hex,
                "public_key": new_hex,
                "possession": sign(new_key, KEY_TAG, message),
            }
            return [("key", "ledger", payload)], None

        return build

    def adopt(self, new_key: Ed25519PrivateKey) -> None:
        """Sign with ``new_key`` from now on (its ``key`` entry is in the ledger)."""
        self.key = new_key
        self.public_key = new_key.public_key()
        self.public_key_hex = public_key_hex(new_key)
