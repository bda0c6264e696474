"""The witnessed ledger's side: send each new signed tree head to the configured witnesses,
keep their cosignatures, and fetch the latest head a witness cosigned to verify against.

A head goes to ``POST <witness>/witness/cosign`` with a consistency proof from the last size
that witness cosigned (known from the kept cosignatures, else 0; a witness that cosigned
another size says so in its 409 and the head is sent again once with a proof from there).
A witness that is down, refuses, or answers with a cosignature that does not verify is a
warning, never a failure: the next head goes to it again. Cosignatures are appended to
``<data dir>/ledger-cosignatures.jsonl`` (one JSON line each, fsynced), which, like the heads
file, is worth shipping elsewhere — but verification never depends on it: ``ledger verify
--witness URL`` asks the witness itself (:func:`fetch_cosigned`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from harness.config.witness_config import WitnessConfig
from ledger.cosign import CosignedHead
from ledger.db import private_dir
from ledger.predictions import Ledger
from ledger.tree import TreeHead
from mindledger.canonical import canonical_json
from mindledger.errors import InputError, MindledgerError
from mindledger.jsonin import parse_json

__all__ = [
    "COSIGNATURES_FILE",
    "CosignatureLog",
    "WitnessOutcome",
    "WitnessUnavailable",
    "fetch_cosigned",
    "send_head",
    "witnessed_heads",
]

log = logging.getLogger("mindledger.witnesses")

COSIGNATURES_FILE = "ledger-cosignatures.jsonl"
"""The cosignatures the ledger's witnesses returned, relative to the data directory."""
TIMEOUT = 10.0
"""Seconds one request to a witness may take."""


class WitnessUnavailable(MindledgerError):
    """A witness could not be asked, or has no cosigned head to give (exit 1: what was asked
    could not be verified)."""

    exit_code = 1


@dataclass(frozen=True)
class WitnessOutcome:
    """What one witness did with a head: ``cosigned`` it, or ``problem`` says why not."""

    witness: WitnessConfig
    cosigned: CosignedHead | None = None
    problem: str | None = None

    def line(self) -> str:
        """One line for a person."""
        if self.cosigned is not None:
            head = self.cosigned.tree_head
            return f"cosigned by witness {self.witness.url} ({head.size} entries)"
        return f"warning: witness {self.witness.url} did not cosign the head: {self.problem}"


class CosignatureLog:
    """The append-only file of kept cosignatures (one canonical JSON line each:
    ``{"url": witness URL, "cosigned_head": {…}}``)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def append(self, url: str, cosigned: CosignedHead) -> None:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, canonical_json({"cosigned_head": cosigned.to_dict(), "url": url}) + b"\n")
            os.fsync(fd)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def read(self) -> list[tuple[str, CosignedHead]]:
        """Every readable line as (witness URL, cosigned head); unreadable lines are skipped
        (the file is a convenience: the witness holds the record that counts)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for line in data.splitlines():
            try:
                obj = parse_json(line)
                out.append((str(obj["url"]), CosignedHead.from_dict(obj["cosigned_head"])))
            except (InputError, KeyError, TypeError):
                continue
        return out

    def last_size(self, witness: WitnessConfig, ledger_id: str) -> int:
        """The largest size ``witness`` cosigned for ledger ``ledger_id``, by this file."""
        sizes = [
            c.tree_head.size
            for url, c in self.read()
            if url == witness.url and c.log == witness.log and c.tree_head.ledger == ledger_id
        ]
        return max(sizes, default=0)


def _error(response: httpx.Response) -> tuple[str, dict[str, Any]]:
    try:
        body = response.json()
        error = body["error"]
        return f"HTTP {response.status_code} {error['code']}: {error['message']}", body
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}", {}


def _post(
    client: httpx.Client, witness: WitnessConfig, ledger: Ledger, head: TreeHead, old: int
) -> httpx.Response:
    proof = ledger.consistency_proof(old, head.size)["proof"]
    body = {"log": witness.log, "old": old, "proof": proof, "tree_head": head.to_dict()}
    return client.post(f"{witness.url}/witness/cosign", json=body)


def _send_one(
    client: httpx.Client, witness: WitnessConfig, ledger: Ledger, head: TreeHead, old: int
) -> WitnessOutcome:
    old = old if old <= head.size else 0
    try:
        response = _post(client, witness, ledger, head, old)
        if response.status_code == 409:
            _, body = _error(response)
            size = body.get("size")
            if type(size) is int and size != old and 0 <= size <= head.size:
                response = _post(client, witness, ledger, head, size)
    except httpx.HTTPError as exc:
        return WitnessOutcome(witness, problem=f"could not reach it ({exc!r})")
    if response.status_code != 200:
        return WitnessOutcome(witness, problem=_error(response)[0])
    try:
        cosigned = CosignedHead.from_dict(response.json(), where="the witness's answer")
    except (ValueError, InputError) as exc:
        return WitnessOutcome(witness, problem=f"its answer is not a cosigned head: {exc}")
    problems = cosigned.problems(witness.key, witness.log)
    if cosigned.tree_head != head:
        problems.append("it cosigned another head than the one sent")
    if problems:
        return WitnessOutcome(witness, problem="; ".join(problems))
    return WitnessOutcome(witness, cosigned=cosigned)


def send_head(
    ledger: Ledger,
    head: TreeHead,
    witnesses: Sequence[WitnessConfig],
    kept: CosignatureLog,
    *,
    transport: httpx.BaseTransport | None = None,
) -> list[WitnessOutcome]:
    """Send ``head`` (a head of ``ledger``) to every witness; keep each cosignature in
    ``kept``; say what each witness did. Never raises for a witness's failure."""
    outcomes = []
    with httpx.Client(timeout=TIMEOUT, transport=transport) as client:
        for witness in witnesses:
            outcome = _send_one(client, witness, ledger, head, kept.last_size(witness, head.ledger))
            if outcome.cosigned is not None:
                kept.append(witness.url, outcome.cosigned)
            else:
                log.warning("%s", outcome.line())
            outcomes.append(outcome)
    return outcomes


def fetch_cosigned(
    url: str, log_name: str, *, transport: httpx.BaseTransport | None = None
) -> CosignedHead:
    """The latest head the witness at ``url`` cosigned for log ``log_name`` (its form checked,
    not its signatures); :class:`WitnessUnavailable` when it cannot be had."""
    try:
        with httpx.Client(timeout=TIMEOUT, transport=transport) as client:
            response = client.get(f"{url.rstrip('/')}/witness/heads", params={"log": log_name})
    except httpx.HTTPError as exc:
        raise WitnessUnavailable(f"could not reach witness {url}: {exc!r}") from None
    if response.status_code == 404:
        raise WitnessUnavailable(
            f"witness {url} has cosigned no head of log {log_name!r}: there is nothing to "
            "verify against"
        )
    if response.status_code != 200:
        raise WitnessUnavailable(f"witness {url} answered {_error(response)[0]}")
    try:
        return CosignedHead.from_dict(response.json(), where=f"witness {url}'s head")
    except (ValueError, InputError) as exc:
        raise WitnessUnavailable(f"witness {url} sent no cosigned head: {exc}") from None


def witnessed_heads(
    witnesses: Sequence[WitnessConfig],
    urls: Sequence[str],
    files: Sequence[str],
    *,
    key: str | None = None,
    log_name: str | None = None,
    transport: httpx.BaseTransport | None = None,
) -> tuple[list[tuple[TreeHead, str]], list[str]]:
    """The tree heads the witnesses at ``urls`` last cosigned for this ledger, and those in
    the exported cosigned-head ``files``, each with where it came from — only those whose
    cosignature verifies with the witness's key (``key``, else the configured witness's) —
    and what went wrong with the others (a witness unreachable or with nothing cosigned
    counts: what was asked could not be verified). InputError when a witness's key or this
    ledger's name at it is unknown."""
    from ledger.keys import parse_public_key, public_key_hex
    from mindledger.jsonin import read_json_file

    given = None if key is None else public_key_hex(parse_public_key(key))
    found: list[tuple[TreeHead, str]] = []
    problems: list[str] = []

    def check(cosigned: CosignedHead, wkey: str, name: str | None, where: str) -> None:
        wrong = cosigned.problems(wkey, name)
        if wrong:
            problems.append(f"{where}: {'; '.join(wrong)}")
        else:
            at = dt.datetime.fromtimestamp(cosigned.cosignature.time, tz=dt.UTC)
            found.append((cosigned.tree_head, f"{where} at {at.isoformat(timespec='seconds')}"))

    for url in urls:
        url = url.rstrip("/")
        conf = next((w for w in witnesses if w.url == url), None)
        wkey = given or (conf.key if conf else None)
        name = log_name or (conf.log if conf else None)
        if wkey is None or name is None:
            raise InputError(
                f"{url} is not a witness in the settings ([[witnesses]]): give its key "
                "with --witness-key and this ledger's name there with --witness-log",
                where="--witness",
            )
        try:
            cosigned = fetch_cosigned(url, name, transport=transport)
        except WitnessUnavailable as exc:
            problems.append(str(exc))
            continue
        check(cosigned, wkey, name, f"the head witness {url} cosigned for log {name!r}")
    for path in files:
        cosigned = CosignedHead.from_dict(read_json_file(path), where=path)
        conf = next((w for w in witnesses if w.key == cosigned.cosignature.key), None)
        wkey = given or (conf.key if conf else None)
        if wkey is None:
            raise InputError(
                f"no witness in the settings has key {cosigned.cosignature.key}: give the "
                "witness's key with --witness-key",
                where="--witness-head",
            )
        name = log_name or (conf.log if conf else None)
        check(cosigned, wkey, name, f"the head in {path} cosigned by the witness")
    return found, problems
