"""Self-forecasts' entries (issue 29): their checks, the reveal's payload, and their fold.

Three kinds of entry (see :mod:`ledger.forecasts` for the protocol):

- ``forecast`` (subject: the forecast's id, ``f`` + 20 hex digits of its commitment), payload
  ``{predictor, run, figure, commitment, agent_signature, held}``;
- ``run-start`` (subject ``run:<run id>``), payload ``{run}``: the run's *seal*, appended before
  its first trial; no ``forecast`` for the run may follow it;
- ``forecast-reveal`` (subject: the forecast's id), payload ``{forecast, reason, salt, outcome,
  previous, naive, rule, loss, naive_loss, status, note}``, made by :func:`reveal_payload` from
  what the reveal states, so the verifier re-derives it from the same inputs.

:class:`ForecastFold` replays them for :class:`ledger.chain.Fold`: every one is checked (there
is no fast path for them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.errors import LedgerKeyError
from ledger.keys import COMMIT_TAG, parse_public_key, verify_signature
from ledger.protocol import commitment as make_commitment
from ledger.protocol import is_digest
from mindledger.canonical import canonical_json
from mindledger.errors import InputError
from mindledger.forecasts import figure, forecast_body, forecast_loss, naive_like, parse_forecast
from mindledger.names import check_agent_name

__all__ = [
    "FORECAST_KINDS",
    "SALT_BYTES",
    "ForecastFold",
    "check_body",
    "check_previous",
    "check_run_id",
    "forecast_id",
    "forecast_message",
    "opens",
    "reveal_payload",
    "seal_subject",
    "signature_ok",
]

FORECAST_KINDS = frozenset({"forecast", "run-start", "forecast-reveal"})
"""The entry kinds of self-forecasts."""

SALT_BYTES = 32
"""The length of a forecast's salt."""

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
"""What a forecast's run id may be (ASCII: the API states it in its schema as it is checked)."""
_RUN_ID = re.compile(RUN_ID_PATTERN)

_TOLERANCE = 1e-9
"""Relative tolerance when the verifier compares a recorded loss with the one it re-derives."""


def forecast_id(commitment: str) -> str:
    """The id of the forecast with this commitment: ``f`` + its first 20 hex digits."""
    return "f" + commitment.removeprefix("sha256:")[:20]


def seal_subject(run_id: str) -> str:
    """The subject of run ``run_id``'s seal (its ``run-start`` entry)."""
    return f"run:{run_id}"


def check_run_id(run_id: Any, where: str = "run") -> str:
    """``run_id`` if it can name a run, else InputError."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise InputError(
            "expected a run id (letters, digits, '_', '.', ':' or '-', at most 128)", where=where
        )
    return run_id


def forecast_message(payload: Mapping[str, Any]) -> bytes:
    """What an agent signs (after :data:`~ledger.keys.COMMIT_TAG`) to commit a forecast: the
    canonical JSON of its open fields and commitment, with ``"kind": "forecast"`` so that no
    prediction's commit signature can stand for it."""
    fields = {k: payload.get(k) for k in ("predictor", "run", "figure", "commitment")}
    return canonical_json({"kind": "forecast", **fields})


def signature_ok(agent_key: str, payload: Mapping[str, Any]) -> bool:
    """Whether the commit's ``agent_signature`` is ``agent_key``'s over it."""
    try:
        key = parse_public_key(agent_key)
    except (ValueError, LedgerKeyError):
        return False
    sig = payload.get("agent_signature")
    return isinstance(sig, str) and verify_signature(
        key, COMMIT_TAG, forecast_message(payload), sig
    )


def check_body(body: Any, where: str = "body") -> dict[str, Any]:
    """The body a commitment hashes, ``{"forecast": …, "reason": …}``, from ``body`` (a
    mapping with ``forecast`` and optionally ``reason``), or InputError. Not parsed: a body
    that does not hold a valid forecast is judged at the reveal."""
    if not isinstance(body, Mapping):
        raise InputError('expected {"forecast": …, "reason": …}', where=where)
    extra = set(body) - {"forecast", "reason"}
    if extra:
        raise InputError(f"unexpected field {sorted(map(str, extra))[0]!r}", where=where)
    if "forecast" not in body:
        raise InputError("missing", where=f"{where}.forecast")
    out = {"forecast": body["forecast"], "reason": body.get("reason")}
    try:
        canonical_json(out)
    except (TypeError, ValueError):
        raise InputError("expected JSON", where=where) from None
    return out


def check_previous(previous: Any) -> list[Any] | None:
    """The naive forecast's inputs ``(value, ci, level)`` as JSON (a list), or InputError."""
    if previous is None:
        return None
    if not isinstance(previous, Sequence) or isinstance(previous, str) or len(previous) != 3:
        raise InputError("expected (value, ci or None, level)", where="previous")
    value, ci, level = previous
    if not _finite(value):
        raise InputError("expected a finite number", where="previous.value")
    if ci is not None and (
        not isinstance(ci, Sequence) or len(ci) != 2 or not all(_finite(c) for c in ci)
    ):
        raise InputError("expected None or two finite numbers", where="previous.ci")
    if not _finite(level) or not 0.0 < float(level) < 1.0:
        raise InputError("expected a number between 0 and 1", where="previous.level")
    return [float(value), None if ci is None else [float(c) for c in ci], float(level)]


def _finite(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x)


def opens(commitment: str, body: Mapping[str, Any], salt: Any) -> str | None:
    """None when ``body`` and ``salt`` (hex) open ``commitment`` and ``body`` holds a valid
    forecast; else what is wrong."""
    if not isinstance(salt, str):
        return "the salt is not a hex string"
    try:
        salt_bytes = bytes.fromhex(salt)
    except ValueError:
        return "the salt is not hex"
    if len(salt_bytes) != SALT_BYTES:
        return f"the salt is {len(salt_bytes)} bytes, not {SALT_BYTES}"
    try:
        digest = make_commitment(dict(body), salt_bytes)
    except (TypeError, ValueError):
        return "the revealed forecast is not JSON"
    if digest != commitment:
        return "the revealed forecast and salt do not hash to the commitment"
    try:
        forecast_body(parse_forecast(body["forecast"]), body["reason"])
    except InputError as exc:
        return f"the committed forecast is not valid: {exc}"
    return None


def reveal_payload(
    commitment: str,
    body: Mapping[str, Any],
    salt: Any,
    outcome: float | None,
    previous: list[Any] | None,
    note: str | None,
) -> dict[str, Any]:
    """The ``forecast-reveal`` payload of a reveal: ``rejected`` (no scores; ``note`` says
    why) when ``body`` and ``salt`` do not open ``commitment``; ``void`` (``note`` says why
    the run has no value) when ``outcome`` is None; else ``scored``, with the forecast's loss
    and the naive forecast's (from ``previous``, when there is one) by the form's rule."""
    payload: dict[str, Any] = {
        "forecast": body["forecast"],
        "reason": body["reason"],
        "salt": salt,
        "outcome": outcome,
        "previous": previous,
        "naive": None,
        "rule": None,
        "loss": None,
        "naive_loss": None,
        "status": "scored",
        "note": note,
    }
    wrong = opens(commitment, body, salt)
    if wrong is not None:
        payload.update(status="rejected", note=wrong)
        return payload
    if outcome is None:
        payload["status"] = "void"
        return payload
    f = parse_forecast(body["forecast"])
    payload["rule"] = "quantile_score" if f.form == "quantiles" else "log_score"
    payload["loss"] = forecast_loss(f, outcome)
    if previous is not None:
        naive = naive_like(f, previous[0], previous[1], previous[2])
        payload["naive"] = naive.to_json()
        payload["naive_loss"] = forecast_loss(naive, outcome)
    return payload


def _same(a: Any, b: Any) -> bool:
    """Equal, floats within :data:`_TOLERANCE` (recursively)."""
    if isinstance(a, float) and isinstance(b, int | float) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=_TOLERANCE, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) and type(a) is type(b)


class ForecastFold:
    """Replays forecast entries (for :class:`ledger.chain.Fold`): each forecast committed once,
    with its id as subject, a valid figure, before its run's seal; each run sealed once; each
    forecast revealed at most once, its reveal's status, scores and naive forecast re-derived
    from what it states (:func:`reveal_payload`). ``agent_keys`` are the registered agents'
    keys (the fold's own, kept current by it); ``full`` also checks agents' signatures."""

    def __init__(self, agent_keys: Mapping[str, str], *, full: bool):
        self.agent_keys = agent_keys
        self.full = full
        self.commits: dict[str, dict[str, Any]] = {}
        """Each forecast's commit payload, by id."""
        self.revealed: dict[str, str] = {}
        """Each revealed forecast's status, by id."""
        self.seals: dict[str, int] = {}
        """Each sealed run's seal, by run id: its seq."""

    def states(self) -> dict[str, int]:
        """How many forecasts are in each state (``committed`` until revealed)."""
        counts: dict[str, int] = {}
        for fid in self.commits:
            status = self.revealed.get(fid, "committed")
            counts[status] = counts.get(status, 0) + 1
        return counts

    def apply(
        self, kind: str, subject: str, seq: int, payload: dict[str, Any]
    ) -> list[tuple[str, str]]:
        """The problems with one entry (problem, message), folding it in."""
        if kind == "run-start":
            return self._seal(subject, seq, payload)
        if kind == "forecast":
            return self._commit(subject, payload)
        return self._reveal(subject, payload)

    def _seal(self, subject: str, seq: int, payload: dict[str, Any]) -> list[tuple[str, str]]:
        run = payload["run"]
        if not isinstance(run, str) or subject != seal_subject(run) or set(payload) != {"run"}:
            return [("invalid-entry", "a run-start entry's subject must be run:<its run>")]
        if run in self.seals:
            return [("invalid-entry", f"run {run} is sealed twice (entry {self.seals[run]})")]
        self.seals[run] = seq
        return []

    def _commit(self, subject: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
        c = payload["commitment"]
        if not is_digest(c):
            return [("invalid-entry", "a forecast's commitment is not sha256: and 64 hex digits")]
        fid = forecast_id(c)
        if subject != fid:
            return [("invalid-entry", f"a forecast's subject must be its id {fid}")]
        if fid in self.commits:
            return [("invalid-entry", f"forecast {fid} is committed twice")]
        want = {"predictor", "run", "figure", "commitment", "agent_signature", "held"}
        if set(payload) != want or not isinstance(payload["held"], bool):
            return [("invalid-entry", "a forecast entry's fields are not the protocol's")]
        try:
            check_agent_name(payload["predictor"], where="predictor")
            check_run_id(payload["run"])
            figure(payload["figure"])
        except InputError as exc:
            return [("invalid-entry", f"the forecast names no valid {exc.where}")]
        self.commits[fid] = payload
        run = payload["run"]
        if run in self.seals:
            return [
                (
                    "invalid-entry",
                    f"forecast {fid} for run {run} was committed after the run's seal "
                    f"(entry {self.seals[run]}): after its first trial could be written",
                )
            ]
        sig = payload["agent_signature"]
        if sig is None:
            return []
        key = self.agent_keys.get(payload["predictor"])
        if key is None:
            return [("invalid-entry", "an agent signature without a registered agent key")]
        if self.full and not signature_ok(key, payload):
            return [("signature-invalid", "the agent's signature over the forecast is invalid")]
        return []

    def _reveal(self, subject: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
        commit = self.commits.get(subject)
        if commit is None:
            return [("invalid-entry", "a forecast-reveal for a forecast never committed")]
        if subject in self.revealed:
            return [("invalid-entry", f"forecast {subject} is revealed twice")]
        self.revealed[subject] = str(payload.get("status"))
        outcome, note = payload["outcome"], payload["note"]
        try:
            previous = check_previous(payload["previous"])
            if outcome is not None and not _finite(outcome):
                raise InputError("expected a finite number", where="outcome")
        except InputError as exc:
            return [("invalid-entry", f"a forecast-reveal's {exc.where} is malformed")]
        body = {"forecast": payload["forecast"], "reason": payload["reason"]}
        want = reveal_payload(commit["commitment"], body, payload["salt"], outcome, previous, note)
        if payload["status"] == "rejected" and want["status"] != "rejected":
            return [("reveal-mismatch", "a reveal that opens the commitment is recorded rejected")]
        if want["status"] == "rejected" and payload["status"] != "rejected":
            return [("reveal-mismatch", f"recorded {payload['status']}, but {want['note']}")]
        if want["status"] == "rejected":
            want["note"] = payload["note"]  # why: in words that may change between versions
        elif want["status"] == "void" and not (isinstance(note, str) and note):
            return [("invalid-entry", "a void forecast-reveal does not say why (note)")]
        if not _same(want, payload):
            wrong = sorted(k for k in want if not _same(want[k], payload.get(k)))
            wrong += sorted(set(payload) - set(want))
            return [
                (
                    "reveal-mismatch",
                    f"the reveal's {', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} "
                    "not follow from its forecast, salt, outcome and previous value",
                )
            ]
        return []
