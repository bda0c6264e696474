"""The ``openai`` adapter: any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM,
llama.cpp, Ollama, OpenRouter, OpenAI, an agent gateway), through one ``httpx.AsyncClient`` per
endpoint.

Per endpoint, :class:`OpenAIChat` holds at most ``concurrency`` requests in flight (a semaphore)
and sends at most ``rate_limit`` requests per second (a token bucket). A failed attempt is retried
after an exponential backoff with full jitter drawn from a seeded ``numpy.random.Generator``,
``uniform(0, min(backoff_max, backoff_base · 2^(n-1)))`` before retry n, when it is:

* HTTP 429 (``rate_limited``), 5xx (``server_error``) but 501 and 505 (a server that does not
  do this at all), 408 (``timeout``) or 409;
* a timeout: no complete reply within ``timeout`` seconds (``timeout``);
* a connection refused, reset or closed before the reply was complete (``connection``);
* a 2xx reply that is not JSON or has no ``choices[0].message`` (``malformed``).

On 429 and 503 the wait is at least the server's ``Retry-After`` (seconds or an HTTP date;
``retry-after-ms`` too), up to :data:`RETRY_AFTER_CAP`. Other 4xx replies are not retried
(``client_error``). When the retries run out, :class:`ChatError` — an
:class:`~mindledger.errors.AgentError` with ``kind``, ``status`` and ``attempts`` — says what
happened. The API key is passed in by the caller (who reads it from the environment variable
named in the agent's config); it is sent as a bearer token and never logged or shown. Cookies
are neither kept nor sent (the API does not use them; reading them costs CPU on every reply).
"""

from __future__ import annotations

import asyncio
import email.utils
import html
import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.cookiejar import Cookie, CookieJar
from typing import Any

import httpx
import numpy as np

from harness.adapters.fast_transport import FastTransport, Reply, RequestHead
from harness.adapters.transports import default_transport
from harness.agent.frozen_json import FrozenDict, FrozenList
from harness.agent.retries import retried
from mindledger.errors import AgentError

__all__ = [
    "RETRY_AFTER_CAP",
    "ChatError",
    "ChatPolicy",
    "ChatResult",
    "OpenAIChat",
    "RateLimiter",
    "parse_retry_after",
]

log = logging.getLogger(__name__)

RETRY_AFTER_CAP = 120.0
"""Longest wait honoured from a ``Retry-After`` header, in seconds (or backoff_max if longer)."""

USER_AGENT = "mindledger/0.1"


@dataclass(frozen=True)
class ChatResult:
    """One successful chat completion."""

    message: dict[str, Any]
    """The assistant message (role, content, tool_calls, …)."""
    finish_reason: str | None
    """Why generation stopped (stop, length, tool_calls, …) as reported."""
    model: str | None
    """The serving model as reported by the endpoint."""
    tokens_in: int
    """Prompt tokens (usage.prompt_tokens; 0 if not reported)."""
    tokens_out: int
    """Completion tokens (usage.completion_tokens; 0 if not reported)."""
    latency_s: float
    """Wall time of the successful attempt, in seconds."""
    attempts: int
    """1 + the number of retries."""
    raw: dict[str, Any]
    """The full response JSON."""


class ChatError(AgentError):
    """A chat completion failed for good: ``kind`` is rate_limited, server_error, timeout,
    connection, malformed or client_error; ``status`` the last HTTP status (None without one);
    ``attempts`` how many requests were sent."""

    def __init__(
        self, message: str, *, kind: str, status: int | None, attempts: int, url: str
    ) -> None:
        super().__init__(message, kind=kind, status=status)
        self.attempts = attempts
        self.url = url


class RateLimiter:
    """At most ``rate`` acquisitions per second, in bursts of at most ``burst``.

    A token bucket in its GCRA form: each caller reserves the next free slot at once and sleeps
    until it, so concurrent callers never race and the order of arrival is kept.
    """

    def __init__(
        self,
        rate: float,
        *,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not rate > 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = rate
        self.burst = burst
        self._interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next = -math.inf  # theoretical arrival time of the next request

    async def acquire(self) -> None:
        now = self._clock()
        slot = max(self._next, now)
        self._next = slot + self._interval
        wait = slot - (self.burst - 1) * self._interval - now
        if wait > 0:
            await self._sleep(wait)


def parse_retry_after(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (delta-seconds or HTTP date);
    None if absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
            if math.isfinite(value):
                return max(0.0, value)
        except ValueError:
            pass
    text = headers.get("retry-after")
    if not text:
        return None
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""The request body's JSON form (one encoder, not one per request)."""

_SHARED_MAX = 1024
"""Most encoded shared request parts an :class:`OpenAIChat` keeps (then it starts afresh)."""


class _NoCookieJar(CookieJar):
    """A cookie jar that never stores a cookie."""

    def set_cookie(self, cookie: Cookie) -> None:
        return None

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None


class _NoCookies(httpx.Cookies):
    """No cookies, ever: the API does not use them, and looking for ``Set-Cookie`` in every
    response (httpx builds urllib request and response stand-ins for it) costs about as much
    CPU per request as all the rest of the client's bookkeeping."""

    def __init__(self) -> None:
        super().__init__(_NoCookieJar())

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _CookielessClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` whose cookie store stays empty (see :class:`_NoCookies`)."""

    @property  # type: ignore[override]
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        return None  # cookies set on the client are not kept either


_NO_COOKIES = _NoCookies()

_READ = httpx.ByteStream(b"")
"""The stream left on a response once the adapter has read it."""


class _Failure(AgentError):
    """One failed attempt (caught by the retry loop; never escapes the adapter)."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, kind=kind, status=status)
        self.message = message
        self.retry_after = retry_after
        self.retryable = retryable


_WHAT = {
    "rate_limited": "rate limited",
    "server_error": "server error",
    "timeout": "timed out",
    "connection": "connection failed",
    "malformed": "malformed reply",
    "client_error": "request rejected",
}


@dataclass(frozen=True)
class ChatPolicy:
    """How an :class:`OpenAIChat` client sends its requests (the module docstring says how they
    are retried). Raises ValueError for a value out of range."""

    concurrency: int = 64
    """Requests in flight at once (at least 1)."""
    rate_limit: float | None = None
    """Requests sent per second at most; None: no limit."""
    timeout: float | None = 120.0
    """Seconds to wait for a complete reply; None: no timeout."""
    max_retries: int = 5
    """Retries after the first attempt."""
    backoff_base: float = 0.5
    """The backoff ceiling before the first retry, in seconds (it doubles per retry)."""
    backoff_max: float = 30.0
    """The highest backoff ceiling, in seconds."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError("timeout must be positive (or None for no timeout)")
        if self.max_retries < 0 or self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("max_retries, backoff_base and backoff_max must not be negative")
        if self.rate_limit is not None and not self.rate_limit > 0:
            raise ValueError("rate_limit must be positive (or None for no limit)")


class OpenAIChat:
    """Client of one OpenAI-compatible endpoint. ``base_url`` is the API root (``…/v1``; a bare
    ``http://host:port`` gets ``/v1``); ``model`` None leaves the model to the server.

    ``policy`` says how many requests it holds in flight, how fast it sends, how long it waits
    and how it retries (:class:`ChatPolicy`). ``transport`` defaults to the fastest correct one
    (see :mod:`harness.adapters.transports`);
    tests inject ``httpx.MockTransport``. ``rng`` draws the backoff jitter; ``sleep`` waits it
    out (tests pass a fake). ``headers`` are sent with every request besides the client's own
    (an agent's declared headers); ``extra_body`` fields are added to every request body, as
    :meth:`chat`'s ``extra`` is (which overrides them).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None,
        *,
        api_key: str | None = None,
        policy: ChatPolicy = ChatPolicy(),
        transport: httpx.AsyncBaseTransport | None = None,
        rng: np.random.Generator | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        root = httpx.URL(base_url)
        path = root.path.rstrip("/") or "/v1"
        self.base_url = str(root.copy_with(path=path))
        self.url = root.copy_with(path=path + "/chat/completions")
        # What messages and logs show: no user:password, no query (where some put keys).
        self.shown_url = str(self.url.copy_with(userinfo=b"", query=None))
        self.model = model
        self.policy = policy
        # the policy's fields the client reads per request, as its own attributes
        self.concurrency = policy.concurrency
        self.timeout = policy.timeout
        self.max_retries = policy.max_retries
        self.backoff_base = policy.backoff_base
        self.backoff_max = policy.backoff_max
        self._rng = rng if rng is not None else np.random.default_rng()
        self._sleep = sleep
        self._slots = asyncio.Semaphore(policy.concurrency)
        self._limiter = RateLimiter(policy.rate_limit, sleep=sleep) if policy.rate_limit else None
        sent = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": USER_AGENT,
            **{k.lower(): v for k, v in (headers or {}).items()},  # the agent's own, after ours
        }
        if api_key:
            sent["authorization"] = f"Bearer {api_key}"
        # the agent's own body fields, sent with every request (as chat's ``extra``, under it)
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        if transport is None:
            transport = default_transport(self.base_url, max_connections=policy.concurrency)
        self._client = _CookielessClient(
            transport=transport,
            headers=sent,
            timeout=httpx.Timeout(policy.timeout),
            follow_redirects=False,
            trust_env=False,
        )
        # What client.post would build into every request, built once: the head (Host, then the
        # client's headers: httpx's defaults and ours; Content-Length follows per request) and
        # the timeouts.
        self._head = [(b"Host", self.url.netloc), *self._client.headers.raw]
        self._timeouts = self._client.timeout.as_dict()
        # On FastTransport, the request goes out by its direct path (FastTransport.exchange:
        # the same bytes, pools, limits and errors, without httpx's request and response
        # objects), its head encoded once; through the client when there is a user:password in
        # the URL (httpx turns it into an Authorization header) or a header it would refuse.
        self._direct: tuple[FastTransport, RequestHead] | None = None
        if isinstance(transport, FastTransport) and not self.url.userinfo:
            try:
                self._direct = (transport, RequestHead("POST", self.url, self._head))
            except (httpx.LocalProtocolError, ValueError):
                pass  # sent through the client (which refuses a CR or LF per request)
        # The body's opening up to the messages for self.model (rebuilt if model is changed),
        # and the encoded form of shared (frozen) request parts by identity: see _body.
        self._opening: tuple[str | None, bytes] | None = None
        self._shared: dict[int, tuple[Any, bytes]] = {}
        self._sampling: dict[Any, bytes] = {}

    def __repr__(self) -> str:
        return f"OpenAIChat({self.shown_url!r}, model={self.model!r})"

    async def __aenter__(self) -> OpenAIChat:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion, retried as the module docstring says; raises ChatError."""
        if self.extra_body:
            extra = {**self.extra_body, **extra} if extra else self.extra_body
        if extra:
            payload = _ENCODER.encode(
                self.request_body(
                    messages,
                    tools=tools,
                    tool_choice=tool_choice,
                    response_format=response_format,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    extra=extra,
                )
            ).encode()
        else:
            payload = self._body(
                messages, tools, tool_choice, response_format, temperature, max_tokens, seed
            )
        attempts = 0
        while True:
            attempts += 1
            try:
                return await self._attempt(payload, attempts)
            except _Failure as failure:
                if not failure.retryable or attempts > self.max_retries:
                    raise self._error(failure, attempts) from failure.__cause__
                delay = self.retry_delay(attempts, failure.retry_after)
                retried(failure.kind, f"{_WHAT[failure.kind]}: {failure.message}")
                log.info(
                    "retry %d/%d of POST %s in %.2f s: %s",
                    attempts,
                    self.max_retries,
                    self.shown_url,
                    delay,
                    failure.message,
                )
                await self._sleep(delay)

    def request_body(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body :meth:`chat` sends, as a dict: keys in this order, the optional ones
        only when given (``tool_choice`` only with tools); ``extra`` last, replacing any key it
        repeats in place. Sent encoded compact, UTF-8, non-ASCII as itself."""
        body: dict[str, Any] = {}
        if self.model is not None:
            body["model"] = self.model
        body["messages"] = messages
        body["temperature"] = temperature
        body["max_tokens"] = max_tokens
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if response_format is not None:
            body["response_format"] = response_format
        if seed is not None:
            body["seed"] = seed
        if extra:
            body.update(extra)
        return body

    def _body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int,
        seed: int | None,
    ) -> bytes:
        """The encoded :meth:`request_body` (without ``extra``), byte for byte, spliced from
        pieces: the opening up to the messages is encoded once per model, and a frozen part
        (:mod:`harness.agent.frozen_json`: the answer tool, a ``response_format``, shared by many
        requests and unable to change) once per object; only the rest is encoded per
        request."""
        opening = self._opening
        if opening is None or opening[0] is not self.model:
            model = self.model
            head = (
                b'{"messages":'
                if model is None
                else b'{"model":%s,"messages":' % _ENCODER.encode(model).encode()
            )
            self._opening = opening = (model, head)
        # the sampling settings, encoded once per distinct pair (see _exact)
        settings: tuple[Any, ...] | None = (*_exact(temperature), *_exact(max_tokens))
        try:
            sampling = self._sampling.get(settings)
        except TypeError:  # an unhashable value: encoded below (and refused by the encoder)
            settings, sampling = None, None
        if sampling is None:
            sampling = b',"temperature":%s,"max_tokens":%s' % (
                _ENCODER.encode(temperature).encode(),
                _ENCODER.encode(max_tokens).encode(),
            )
            if settings is not None:
                if len(self._sampling) >= _SHARED_MAX:
                    self._sampling.clear()
                self._sampling[settings] = sampling
        parts = [opening[1], _ENCODER.encode(messages).encode(), sampling]
        if tools:
            parts += (b',"tools":', self._encoded(tools))
            if tool_choice is not None:
                parts += (b',"tool_choice":', self._encoded(tool_choice))
        if response_format is not None:
            parts += (b',"response_format":', self._encoded(response_format))
        if seed is not None:
            parts += (b',"seed":', _ENCODER.encode(seed).encode())
        parts.append(b"}")
        return b"".join(parts)

    def _encoded(self, value: Any) -> bytes:
        """``value`` encoded; kept by identity when it is frozen (it cannot change)."""
        if type(value) is not FrozenList and type(value) is not FrozenDict:
            return _ENCODER.encode(value).encode()
        hit = self._shared.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        encoded = _ENCODER.encode(value).encode()
        if len(self._shared) >= _SHARED_MAX:
            self._shared.clear()
        self._shared[id(value)] = (value, encoded)  # holding value keeps its id from reuse
        return encoded

    def retry_delay(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the ``failures``-th failed attempt: full jitter under
        ``min(backoff_max, backoff_base · 2^(failures-1))``, but at least ``retry_after``."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** min(failures - 1, 60))
        delay = float(self._rng.uniform(0.0, ceiling)) if ceiling > 0 else 0.0
        if retry_after is not None:
            delay = max(delay, min(retry_after, max(RETRY_AFTER_CAP, self.backoff_max)))
        return delay

    async def _attempt(self, payload: bytes, attempts: int) -> ChatResult:
        async with self._slots:
            if self._limiter is not None:
                await self._limiter.acquire()
            started = time.perf_counter()
            direct = self._direct
            response: httpx.Response | Reply
            try:
                async with asyncio.timeout(self.timeout):
                    if direct is not None:
                        # the read timeout would end after this attempt's own deadline: left out
                        response = await direct[0].exchange(
                            direct[1],
                            payload,
                            pool_timeout=self.timeout,
                            connect_timeout=self.timeout,
                            write_timeout=self.timeout,
                        )
                    else:
                        response = await self._client.send(self._request(payload))
            except (httpx.TimeoutException, TimeoutError) as exc:
                if _mislabelled_timeout(exc):
                    raise _Failure("connection", str(exc) or "connection failed") from exc
                raise _Failure("timeout", f"no reply within {self.timeout:g} s") from exc
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                raise _Failure("connection", str(exc), retryable=False) from exc
            except httpx.DecodingError as exc:  # a body whose Content-Encoding does not decode
                raise _Failure("malformed", f"undecodable body: {exc}") from exc
            except httpx.RequestError as exc:  # refused, reset, closed early, proxy errors
                detail = str(exc) or type(exc).__name__
                raise _Failure("connection", detail) from exc
            latency = time.perf_counter() - started
        if isinstance(response, Reply):
            return self._result(response, latency, attempts)
        try:
            return self._result(response, latency, attempts)
        finally:
            # httpx's client wraps the response's stream in one that refers back to the
            # response: a cycle that only the garbage collector would free, and by then (at
            # hundreds of requests in flight) the request, response and headers it holds have
            # been promoted to the oldest generation, whose collections walk the whole heap.
            # The body has been read: drop the wrapper so that they are freed now.
            response.stream = _READ

    def _request(self, payload: bytes) -> httpx.Request:
        """The request ``client.post(self.url, content=payload)`` would build, byte for byte,
        made from the head built once (httpx would merge the client's settings into a new
        request, then look each automatic header up by name, several times a request)."""
        request = httpx.Request(
            "POST",
            self.url,
            headers=[*self._head, (b"Content-Length", b"%d" % len(payload))],
            stream=httpx.ByteStream(payload),
            extensions={"timeout": self._timeouts},
        )
        request.read()  # the body is in memory: make it request.content
        return request

    def _result(
        self, response: httpx.Response | Reply, latency: float, attempts: int
    ) -> ChatResult:
        status = response.status_code
        if 200 <= status < 300:
            try:
                data = json.loads(response.content)
            except ValueError as exc:  # also UnicodeDecodeError
                snippet = response.content[:80].decode("utf-8", "replace")
                raise _Failure(
                    "malformed",
                    f"HTTP {status} with a body that is not JSON: {snippet!r}",
                    status=status,
                ) from exc
            choice = _first_choice(data)
            if choice is None:
                if isinstance(data, dict) and "error" in data:
                    raise _Failure(
                        "server_error",
                        f"HTTP {status} carrying an error: {_error_text(data)}",
                        status=status,
                    )
                raise _Failure(
                    "malformed", f"HTTP {status} without choices[0].message", status=status
                )
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            model = data.get("model")
            finish = choice.get("finish_reason")
            return ChatResult(
                message=choice["message"],
                finish_reason=finish if isinstance(finish, str) else None,
                model=model if isinstance(model, str) else None,
                tokens_in=_count(usage.get("prompt_tokens")),
                tokens_out=_count(usage.get("completion_tokens")),
                latency_s=latency,
                attempts=attempts,
                raw=data,
            )
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        detail = f"HTTP {status}{reason}: {_response_error(response)}"
        if status == 429:
            retry_after = parse_retry_after(response.headers)
            raise _Failure("rate_limited", detail, status=status, retry_after=retry_after)
        if status in (501, 505):  # the server does not do this at all: asking again cannot help
            detail += f" ({_NOT_AN_API})"
            raise _Failure("server_error", detail, status=status, retryable=False)
        if status >= 500:
            retry_after = parse_retry_after(response.headers) if status == 503 else None
            raise _Failure("server_error", detail, status=status, retry_after=retry_after)
        if status == 408:
            raise _Failure("timeout", detail, status=status)
        if status == 409:
            raise _Failure("client_error", detail, status=status)
        if status in (401, 403):
            detail += " (check the API key: it is read from the agent's api_key_env variable)"
        elif status in (404, 405):
            detail += f" ({_NOT_AN_API})"
        raise _Failure("client_error", detail, status=status, retryable=False)

    def _error(self, failure: _Failure, attempts: int) -> ChatError:
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        # what went wrong first (a progress line shows a cause's first 100 characters); the
        # kind, which a trial's error is prefixed with, is not said again in words
        message = f"{failure.message} (POST {self.shown_url}, failed after {tries})"
        return ChatError(
            message, kind=failure.kind, status=failure.status, attempts=attempts, url=self.shown_url
        )


def _exact(value: Any) -> tuple[Any, ...]:
    """A key equal only for values that encode alike: the value, its type (``1`` is not
    ``1.0``) and a float's sign (``0.0`` is not ``-0.0``)."""
    sign = math.copysign(1.0, value) if isinstance(value, float) else 0.0
    return value, type(value), sign


def _mislabelled_timeout(exc: BaseException) -> bool:
    """httpx-aiohttp maps every aiohttp ClientConnectionError (a server that hung up, a reset)
    to ``httpx.ConnectTimeout``; those are connection failures, not timeouts."""
    cause = exc.__cause__
    return (
        cause is not None
        and type(cause).__module__.startswith("aiohttp")
        and not isinstance(cause, TimeoutError)
    )


def _first_choice(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        return None
    return choice


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _error_text(data: Any) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        text = error.get("message") or json.dumps(error)[:200]
    elif error is not None:
        text = str(error)
    elif isinstance(data, dict) and "detail" in data:
        text = str(data["detail"])
    else:
        text = json.dumps(data)[:200]
    return str(text)[:300]


_NOT_AN_API = (
    "is the agent's endpoint the base URL of an OpenAI-compatible API, such as "
    "http://127.0.0.1:8000/v1? Requests go to its /chat/completions"
)

_ERROR_CHARS = 200
"""Characters of an error reply's body said in a failure's message."""

_HTML_SKIPPED = re.compile(rb"(?is)<(head|script|style)\b.*?</\1\s*>")
_HTML_TAG = re.compile(rb"(?s)<[^>]*>")


def _response_error(response: httpx.Response | Reply) -> str:
    """What an error reply says, on one line: its JSON error's message, the text of an HTML
    page (a proxy's or a web server's error page: its tags, head and scripts left out), or its
    text; cut to :data:`_ERROR_CHARS` characters."""
    content = response.content
    try:
        text = _error_text(json.loads(content))
    except ValueError:
        body = content[:65536]  # enough for an error page's head and style, which are skipped
        head = body[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
            body = _HTML_TAG.sub(b" ", _HTML_SKIPPED.sub(b" ", body))
            text = "an HTML page: " + html.unescape(body.decode("utf-8", "replace"))
        else:
            text = body.decode("utf-8", "replace")
    line = " ".join(text.split())
    if len(line) > _ERROR_CHARS:
        line = line[: _ERROR_CHARS - 1].rstrip() + "…"
    return line or "no body"
