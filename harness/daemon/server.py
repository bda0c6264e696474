"""The daemon assembled: database, ledger, scheduler and API in one process, served by uvicorn.

:func:`build_daemon` wires the parts over one engine; :meth:`Daemon.serve` runs them until
interrupted; :class:`BackgroundServer` serves the app on a thread (a real socket on
127.0.0.1), for tests and embedding.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import logging.config
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import HANDLED_SIGNALS as UVICORN_SIGNALS

from harness.config.settings import Settings
from harness.config.workspace import Workspace
from harness.daemon.api import create_app
from harness.daemon.logs import log_config
from harness.daemon.proxy import Draw, TransportFactory, system_draw
from harness.daemon.scheduler import DaemonContext, DaemonScheduler
from ledger.predictions import Ledger
from ledger.store import Store
from mindledger.errors import ConfigError

__all__ = ["BackgroundServer", "Daemon", "JsonErrorsH11", "build_daemon"]

HANDLED_SIGNALS = (*UVICORN_SIGNALS, signal.SIGHUP)
"""The signals that stop the daemon cleanly: uvicorn's (Ctrl-C, SIGTERM) and SIGHUP (its
terminal or SSH session closed; ignored under ``nohup``, which the daemon then keeps)."""


class JsonErrorsH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, answering a request that is not valid HTTP (a
    ``Content-Length`` of ``^``, a header name with a space) with the API's JSON error body
    rather than uvicorn's plain text: every 400 a client can get has one shape."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps(
            {
                "error": {
                    "code": "bad_http",
                    "message": f"{msg.rstrip('.')}: expected a valid HTTP/1.1 request "
                    "(request line, header names and values, Content-Length)",
                    "field": None,
                }
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


@dataclass
class Daemon:
    """The daemon's parts over one database."""

    settings: Settings
    engine: Engine
    store: Store
    ledger: Ledger
    scheduler: DaemonScheduler | None
    app: Starlette

    def serve(
        self,
        host: str | None = None,
        port: int | None = None,
        *,
        announce: Callable[[], None] | None = None,
    ) -> None:
        """Bind ``host``:``port`` (ConfigError, before anything is said or started, when it
        cannot be: :func:`listen`), start the scheduler and serve the API until interrupted
        (logging as ``settings.log_format`` says: :mod:`harness.daemon.logs`): after a clean shutdown,
        Ctrl-C (SIGINT) raises KeyboardInterrupt and SIGTERM exits 143 (SIGHUP 129), wherever
        the signal landed. From ``announce`` (the caller's "daemon on …" line) on, a signal is
        recorded rather than raised — a KeyboardInterrupt raised inside a garbage-collector
        callback is printed and dropped by CPython, which left a daemon running after Ctrl-C —
        and acted on once uvicorn is up."""
        logging_config = log_config(self.settings.log_format)
        logging.config.dictConfig(logging_config)  # before the announcement: it logs too
        host = host or self.settings.api_host
        port = port or self.settings.api_port
        listening = listen(host, port)  # before saying so, and before the scheduler starts
        early: list[int] = []
        in_main = threading.current_thread() is threading.main_thread()
        original = (
            {sig: signal.signal(sig, lambda signum, _frame: early.append(signum))
             for sig in HANDLED_SIGNALS
             if sig != signal.SIGHUP or signal.getsignal(sig) is not signal.SIG_IGN}
            if in_main else {}
        )  # fmt: skip
        try:
            if announce is not None:
                announce()
            if self.scheduler is not None:
                self.scheduler.start()
        except BaseException:
            for sig, handler in original.items():
                signal.signal(sig, handler)
            listening.close()
            raise
        server = _Server(
            uvicorn.Config(
                self.app,
                host=host,
                port=port,
                log_level="info",
                log_config=logging_config,
                lifespan="on",
                http=JsonErrorsH11,
            )
        )
        server.early = early
        server.original_handlers = original
        try:
            server.run(sockets=[listening])
        finally:
            listening.close()
            for sig, handler in original.items():
                signal.signal(sig, handler)
            self.close()
        caught = server.caught
        if signal.SIGINT in caught:
            raise KeyboardInterrupt
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if sig in caught:
                raise SystemExit(128 + sig)

    def close(self) -> None:
        """Stop the scheduler (waiting for running jobs), release the ledger and the engine."""
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
        self.ledger.close()
        self.engine.dispose()


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` for the daemon to serve on (bound as uvicorn binds
    one: an IPv6 address when the host holds a colon, the address reusable at once after a
    restart), or ConfigError saying why it cannot be and what to do: the daemon says it is
    listening only once it is, and starts nothing when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        shown = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise ConfigError(f"cannot listen on {shown}: {_why(exc, port)}") from exc
    sock.set_inheritable(True)
    return sock


def _why(exc: OSError, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            "the address is already in use (another mindledger serve, or another program: "
            f"`ss -ltnp 'sport = :{port}'` shows which); stop it, or listen elsewhere with "
            "--port or api_port in the settings"
        )
    if exc.errno == errno.EACCES:
        return "permission denied (a port below 1024 needs root): use --port 8765 or above"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "no interface of this machine has that address: use --host or api_host"
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({exc.strerror})"
    return exc.strerror or str(exc)


class _Server(uvicorn.Server):
    """uvicorn, minus its re-raising of the signal that stopped it: whether that re-raised
    signal reaches the caller depends on where the event loop is when it lands (asyncio's own
    SIGINT handler cancels the main task, and a task that finishes first swallows it), which
    made ``mindledger serve`` exit 0 instead of 130 now and then. The signals are recorded
    (uvicorn's ``handle_exit``) and :meth:`Daemon.serve` acts on them after the shutdown."""

    early: list[int]
    """Signals recorded before uvicorn was up (see :meth:`Daemon.serve`)."""
    original_handlers: dict[signal.Signals, Any]

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if sockets and self.started:  # uvicorn says so only for the sockets it binds itself
            host, port = sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            logging.getLogger("uvicorn.error").info(
                "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, port
            )

    @property
    def caught(self) -> list[int]:
        return list(getattr(self, "_captured_signals", []))

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        for sig in getattr(self, "original_handlers", {}):  # SIGHUP not if ignored (nohup)
            signal.signal(sig, self.handle_exit)
        for sig in getattr(self, "early", []):
            self.handle_exit(sig, None)  # a Ctrl-C before uvicorn was up stops it now
        try:
            yield
        finally:
            for sig, handler in getattr(self, "original_handlers", {}).items():
                signal.signal(sig, handler)


def build_daemon(
    settings: Settings,
    *,
    scheduler: bool = True,
    suite: str = "quick",
    transport_factory: TransportFactory | None = None,
    draw: Draw = system_draw,
    scheduler_options: dict[str, Any] | None = None,
) -> Daemon:
    """Open the database (migrated), the ledger and, unless ``scheduler`` is false, the
    scheduler (not started: :meth:`Daemon.serve` starts it), and build the app."""
    workspace = Workspace.open(settings)
    engine, store, ledger = workspace.engine, workspace.store, workspace.ledger
    sched = (
        DaemonScheduler(
            engine, DaemonContext(settings, store, ledger), suite=suite, **(scheduler_options or {})
        )
        if scheduler
        else None
    )
    app = create_app(
        settings,
        store=store,
        ledger=ledger,
        scheduler=sched,
        transport_factory=transport_factory,
        draw=draw,
        on_shutdown=[] if sched is None else [lambda: sched.shutdown(wait=True)],
    )
    return Daemon(settings, engine, store, ledger, sched, app)


class BackgroundServer:
    """Serve an ASGI app with uvicorn on a thread, on a real socket (port 0: a free one).

    ::

        with BackgroundServer(app) as server:
            httpx.get(server.url + "/health")
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        self.app = app
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> BackgroundServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: without it, a small response waits out the
        # client's delayed ACK (40 ms a request), as it does not when uvicorn binds itself
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", http=JsonErrorsH11)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
