"""The query proxy: ``POST /proxy/{target}/v1/chat/completions``, OpenAI-compatible.

An agent points its "ask another reasoner" calls here instead of at the target. The proxy

1. finds the target among the declared agents (an ``openai`` agent: its ``endpoint`` and the
   environment variable named by ``api_key_env`` holding its key);
2. if the request names a commitment in the ``X-Mindledger-Prediction`` header, checks that the
   prediction is the caller's, about this target, and still open; otherwise, for the sampled
   share of calls (``settings.prediction_share``), refuses with **428** and a JSON body saying
   how to commit;
3. forwards the body unchanged and returns the target's response unchanged, and, when a
   prediction was named and the target answered, records the answer against it
   (:meth:`Ledger.observe`); the response says so in ``X-Mindledger-Observed``.

**Sampling** is deterministic: a call requires a prediction when a keyed hash of (caller,
target, request body with sorted keys) falls below the share — the same request is sampled the
same way every time (retrying does not dodge it), and, with a secret key, an agent cannot tell
in advance which bodies are sampled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from typing import Any

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from harness.adapters.transports import default_transport
from harness.daemon.web import ApiError, error_response, json_object
from harness.settings import AgentConfig, Settings
from ledger.predictions import Ledger

__all__ = ["PREDICTION_HEADER", "Proxy", "TransportFactory", "answer_text", "sample_point"]

PREDICTION_HEADER = "X-Mindledger-Prediction"
"""Request header naming the caller's commitment (a prediction id) for this query."""
OBSERVED_HEADER = "X-Mindledger-Observed"
"""Response header: the ledger entry (seq) recording the answer, or ``none``."""

TransportFactory = Callable[[str], httpx.AsyncBaseTransport]
"""Target base URL → the transport of the proxy's client for it."""


def sample_point(key: bytes, caller: str, target: str, body: Any) -> float:
    """Where a request falls in [0, 1): HMAC-SHA256 over (caller, target, body with sorted
    keys). A request requires a prediction when this is below the prediction share."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    msg = b"\0".join([caller.encode(), target.encode(), text.encode()])
    digest = hmac.new(key, msg, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def answer_text(response: Any) -> str | None:
    """The target's answer in a chat completion: the first choice's text, else the arguments of
    its first tool call; None when there is neither."""
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return content
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        args = (calls[0].get("function") or {}).get("arguments")
        if isinstance(args, str) and args:
            return args
    return None


class Proxy:
    """Forwards chat completions to declared targets and records answers in the ledger."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        *,
        transport_factory: TransportFactory | None = None,
        sampling_key: bytes = b"",
    ):
        self.settings = settings
        self.ledger = ledger
        self.share = settings.prediction_share
        self.sampling_key = sampling_key
        self.transport_factory = transport_factory or default_transport
        self._clients: dict[str, httpx.AsyncClient] = {}

    def requires_prediction(self, caller: str, target: str, body: Any) -> bool:
        """Whether this request is in the sampled share that must carry a prediction."""
        return sample_point(self.sampling_key, caller, target, body) < self.share

    def target(self, name: str) -> AgentConfig:
        cfg = self.settings.agents.get(name)
        if cfg is None or cfg.adapter != "openai" or not cfg.endpoint:
            known = sorted(
                n for n, a in self.settings.agents.items() if a.adapter == "openai" and a.endpoint
            )
            raise ApiError(
                404,
                "unknown_target",
                f"no proxy target named {name!r} (targets: {', '.join(known) or 'none'})",
                field="target",
            )
        return cfg

    def _client(self, cfg: AgentConfig) -> httpx.AsyncClient:
        assert cfg.endpoint is not None
        client = self._clients.get(cfg.name)
        if client is None:
            client = httpx.AsyncClient(
                transport=self.transport_factory(cfg.endpoint), timeout=self.settings.timeout
            )
            self._clients[cfg.name] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()

    async def handle(self, request: Request, caller: str, target: str) -> Response:
        cfg = self.target(target)
        body = await json_object(request)
        if body.get("stream"):
            raise ApiError(
                400, "invalid_field", "expected false: the proxy does not stream", field="stream"
            )
        pid = request.headers.get(PREDICTION_HEADER, "").strip() or None
        if pid is None:
            if self.requires_prediction(caller, target, body):
                return error_response(
                    428,
                    "prediction_required",
                    "this query was sampled for a prediction: commit one before asking, "
                    f"and name it in the {PREDICTION_HEADER} header",
                    field=PREDICTION_HEADER,
                    extra={"how": _how_to_commit(target)},
                )
        else:
            state = await run_in_threadpool(self.ledger.prediction, pid)
            if state.predictor != caller:
                raise ApiError(
                    403,
                    "forbidden",
                    f"prediction {pid} is not {caller!r}'s",
                    field=PREDICTION_HEADER,
                )
            if state.target != target:
                raise ApiError(
                    409,
                    "wrong_target",
                    f"prediction {pid} is about {state.target!r}, not {target!r}",
                    field=PREDICTION_HEADER,
                )
            if state.final:
                raise ApiError(
                    409,
                    "conflict",
                    f"prediction {pid} is {state.state}: it takes no more answers",
                    field=PREDICTION_HEADER,
                )
        headers = {"content-type": "application/json"}
        if cfg.api_key_env and os.environ.get(cfg.api_key_env):
            headers["authorization"] = f"Bearer {os.environ[cfg.api_key_env]}"
        url = (cfg.endpoint or "").rstrip("/") + "/chat/completions"
        try:
            upstream = await self._client(cfg).post(
                url, content=json.dumps(body).encode(), headers=headers
            )
        except httpx.HTTPError as exc:
            return error_response(
                502, "upstream_unreachable", f"target {target!r} did not answer: {exc!r}"
            )
        out_headers: dict[str, str] = {}
        if pid is not None:
            observed = "none"
            if upstream.status_code == 200:
                try:
                    answer = answer_text(upstream.json())
                except ValueError:
                    answer = None
                if answer is not None:
                    entry = await run_in_threadpool(self.ledger.observe, pid, answer)
                    observed = str(entry.seq)
            out_headers[PREDICTION_HEADER] = pid
            out_headers[OBSERVED_HEADER] = observed
        return Response(
            upstream.content,
            status_code=upstream.status_code,
            headers=out_headers,
            media_type=upstream.headers.get("content-type", "application/json"),
        )


def _how_to_commit(target: str) -> dict[str, Any]:
    return {
        "1_commit": {
            "method": "POST",
            "path": "/predictions",
            "json": {"target": target, "query": "<the question>", "commitment": "sha256:<hex>"},
        },
        "commitment": "sha256: + hex(SHA-256(canonical_json(prediction) + salt)) with a secret "
        "32-byte salt; the prediction stays with you until the reveal (see docs/ledger.md, "
        "or ledger.prediction_body and ledger.commitment in Python)",
        "2_ask": f"repeat this call with the header {PREDICTION_HEADER}: <the id from step 1>",
        "3_reveal": {
            "method": "POST",
            "path": "/predictions/<id>/reveal",
            "json": {"prediction": "<the committed prediction>", "salt": "<hex>"},
        },
    }
