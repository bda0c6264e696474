"""The agent's side of the daemon: predict, ask another reasoner through the query proxy, reveal.

::

    from harness.daemon.client import DaemonClient

    with DaemonClient("http://127.0.0.1:8765", token=os.environ["MINDLEDGER_TOKEN"]) as ml:
        messages = [{"role": "user", "content": "Pick a number from 1 to 10"}]
        with ml.predict("dusk", messages, {"7": 0.6, "3": 0.4}) as p:
            reply = p.ask()          # the proxy asks dusk and records its answer
        print(p.scores)

        # or let the proxy decide: predict only when it asks for a prediction (HTTP 428)
        reply = ml.chat("dusk", messages, predict=lambda msgs: {"7": 0.6, "3": 0.4})

The prediction and its salt never leave this process before the reveal: only the commitment
and the request it is about (messages and the fields that shape the answer, which the query
hash covers: see docs/ledger.md) are sent at commit time. The answer is recorded by
the proxy, which asked the target itself; this client never reports an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from harness.daemon.proxy import PREDICTION_HEADER
from ledger.client import PredictionBlock
from ledger.errors import RevealRejected
from ledger.protocol import (
    commitment,
    new_salt,
    prediction_body,
    prediction_id,
    query_hash,
    query_text,
)
from mindledger.errors import MindledgerError

__all__ = ["DaemonClient", "DaemonError", "RemotePrediction"]

Messages = list[dict[str, Any]]


class DaemonError(MindledgerError):
    """The daemon refused a request; ``status`` and ``body`` are its answer."""

    def __init__(self, status: int, body: Any):
        error = body.get("error", {}) if isinstance(body, dict) else {}
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"the daemon answered {status}: {message or body}")
        self.status = status
        self.body = body
        self.code = error.get("code") if isinstance(error, dict) else None


def _messages(query: str | Messages) -> Messages:
    return [{"role": "user", "content": query}] if isinstance(query, str) else list(query)


class DaemonClient:
    """An agent's connection to ``mindledger serve`` (its token names the agent)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ):
        self.http = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            transport=transport,
        )
        self._agent: str | None = None

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, path, **kw)

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            return response.text

    @property
    def agent(self) -> str:
        """The agent this token acts as (asked of the daemon once)."""
        if self._agent is None:
            r = self.http.get("/whoami")
            if r.status_code != 200:
                raise DaemonError(r.status_code, self._json(r))
            agent = r.json().get("agent")
            if not isinstance(agent, str):
                raise DaemonError(403, {"error": {"message": "an operator token predicts nothing"}})
            self._agent = agent
        return self._agent

    def predict(
        self,
        target: str,
        query: str | Messages,
        distribution: Mapping[str, float],
        *,
        params: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> RemotePrediction:
        """A prediction of ``target``'s answer to ``query`` (text, or chat messages exactly as
        they will be sent) asked with the request fields ``params`` (``temperature``,
        ``max_tokens``, ``tools``…: the commitment covers them, so the call must send the same),
        for a ``with`` block: entering commits, :meth:`RemotePrediction.ask` sends the request
        through the proxy, leaving reveals. ``fields``: ``top1``, ``rationale``,
        ``own_answer``, ``item``, ``condition``."""
        messages = _messages(query)
        body = prediction_body(
            predictor=self.agent,
            target=target,
            query=query_text(messages),
            distribution=distribution,
            **fields,
        )
        return RemotePrediction(self, body, {**(params or {}), "messages": messages})

    def chat(
        self,
        target: str,
        query: str | Messages,
        *,
        predict: Callable[[Messages], Mapping[str, float]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """Ask ``target`` through the proxy. When the proxy asks for a prediction (428),
        commit ``predict(messages)`` for this very request, repeat the call carrying it and
        reveal after; without ``predict``, the 428 is raised as a :class:`DaemonError`.
        Returns the completion."""
        messages = _messages(query)
        r = self.http.post(
            f"/proxy/{target}/v1/chat/completions", json={**params, "messages": messages}
        )
        if r.status_code == 428 and predict is not None:
            with self.predict(target, messages, predict(messages), params=params) as p:
                return p.ask()
        if r.status_code != 200:
            raise DaemonError(r.status_code, self._json(r))
        return dict(r.json())


class RemotePrediction(PredictionBlock):
    """One prediction through the daemon: the prediction and its salt stay here."""

    tolerated = (RevealRejected, DaemonError)

    def __init__(self, client: DaemonClient, body: dict[str, Any], request: dict[str, Any]):
        self.client = client
        self.body = body
        self.request = request
        """The chat request the prediction is about (``messages`` and the fields that shape
        the answer): what is committed and what :meth:`ask` sends."""
        self.query_hash = query_hash(request)
        self.salt = new_salt()
        self.commitment = commitment(body, self.salt)
        self.id = prediction_id(self.commitment)
        self.receipt: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.replies: list[dict[str, Any]] = []

    @property
    def messages(self) -> Messages:
        """The committed request's messages."""
        return list(self.request["messages"])

    @property
    def scores(self) -> dict[str, Any] | None:
        return None if self.result is None else self.result.get("scores")

    def commit(self) -> dict[str, Any]:
        if self.receipt is None:
            b = self.body
            payload = {
                "target": b["target"],
                "query": b["query"],
                "commitment": self.commitment,
                "request": self.request,
                "item": b["item"],
                "condition": b["condition"],
            }
            r = self.client.http.post("/predictions", json=payload)
            if r.status_code != 201:
                raise DaemonError(r.status_code, self.client._json(r))
            self.receipt = dict(r.json())
        return self.receipt

    def ask(self, **params: Any) -> dict[str, Any]:
        """Send the committed request to the target through the proxy (once: a prediction
        unlocks one call); the proxy records the answer. ``params`` may add fields no query
        hash covers (``model``, ``user``); any other field given here that changes the
        committed request gets 409 ``query_mismatch``. Returns the completion."""
        self.commit()
        r = self.client.http.post(
            f"/proxy/{self.body['target']}/v1/chat/completions",
            json={**self.request, **params},
            headers={PREDICTION_HEADER: self.id},
        )
        if r.status_code != 200:
            raise DaemonError(r.status_code, self.client._json(r))
        reply = dict(r.json())
        self.replies.append(reply)
        return reply

    def reveal(self) -> dict[str, Any]:
        """Reveal and score; RevealRejected when the daemon recorded it as rejected or
        expired."""
        if self.result is None:
            r = self.client.http.post(
                f"/predictions/{self.id}/reveal",
                json={"prediction": self.body, "salt": self.salt.hex()},
            )
            data = self.client._json(r)
            if r.status_code == 409 and isinstance(data, dict) and "result" in data:
                self.result = dict(data["result"])
            elif r.status_code != 200:
                raise DaemonError(r.status_code, data)
            else:
                self.result = dict(data)
        assert self.result is not None
        if self.result.get("status") != "scored":
            raise RevealRejected(
                f"prediction {self.id} was {self.result.get('status')}: "
                f"{self.result.get('reason')}",
                self.result,
            )
        return self.result

    @property
    def asked(self) -> bool:
        return bool(self.replies)
