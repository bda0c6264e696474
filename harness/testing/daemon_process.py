"""``mindledger serve`` as a real child process, and what ``/proc`` says about it: for the soak
benchmark (``bench/soak_daemon.py``) and the daemon's fault tests.

:class:`DaemonProcess` starts the daemon in a directory of its own (its ``mindledger.toml`` and
data directory there, SQLite by default), on a free port of 127.0.0.1, its output appended to
``daemon.log`` in that directory; :func:`process_stats` reads a process's resident memory, open
file descriptors, threads and child processes from ``/proc`` (Linux; psutil is not a dependency).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

__all__ = ["DaemonProcess", "ProcessStats", "free_port", "process_stats", "wait_for"]

T = TypeVar("T")


def free_port() -> int:
    """A port of 127.0.0.1 free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], T | None], *, timeout: float, what: str, every: float = 0.05) -> T:
    """Call ``check`` until it returns something other than None or False; raise TimeoutError
    naming ``what`` after ``timeout`` seconds (a generous bound, never a measured duration)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(every)


@dataclass(frozen=True)
class ProcessStats:
    """One look at a process in ``/proc``."""

    rss_kb: int
    """Resident memory (VmRSS), KiB."""
    fds: int
    """Open file descriptors."""
    threads: int
    """Threads."""
    children: tuple[int, ...]
    """Pids of its child processes (zombies included: a child never waited for is one)."""


def _children(pid: int) -> tuple[int, ...]:
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid …: comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return tuple(sorted(found))


def process_stats(pid: int) -> ProcessStats:
    """Resident memory, open descriptors, threads and children of ``pid`` (Linux ``/proc``)."""
    status = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        status[key] = value.strip()
    return ProcessStats(
        rss_kb=int(status["VmRSS"].split()[0]),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        threads=int(status["Threads"]),
        children=_children(pid),
    )


class DaemonProcess:
    """``mindledger serve`` in ``workdir`` (its ``mindledger.toml`` is read from there; its data
    directory is ``workdir/home``), on ``port`` (default: a free one), as a child process.

    ::

        daemon = DaemonProcess(tmp_path, config_text)
        daemon.start()
        daemon.wait_ready()
        ...
        assert daemon.stop(signal.SIGTERM) == 143
    """

    def __init__(
        self,
        workdir: Path,
        config: str | None = None,
        *,
        port: int | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ):
        self.workdir = Path(workdir).resolve()
        self.home = self.workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        if config is not None:
            (self.workdir / "mindledger.toml").write_text(config, encoding="utf-8")
        self.port = port or free_port()
        self.args = tuple(args)
        self.log_path = self.workdir / "daemon.log"
        base = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
        self.env = {**base, "MINDLEDGER_HOME": str(self.home), **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return self.home / "mindledger.db"

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.db_path}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "the daemon was not started"
        return self.proc.pid

    def start(self) -> None:
        """Start it (again, after :meth:`stop`), appending its output to :attr:`log_path`."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("the daemon is running already")
        cmd = [sys.executable, "-m", "harness.cli.main", "serve", "--port", str(self.port)]
        with self.log_path.open("ab") as log:
            log.write(f"== start {self.starts + 1}: {' '.join(cmd[3:])}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [*cmd, *self.args],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.starts += 1

    def health(self) -> dict[str, Any] | None:
        """``GET /health``'s body, or None while it does not answer (a 503 is an answer: the
        daemon serves, and says a part of it is not ok)."""
        try:
            r = httpx.get(self.url + "/health", timeout=10)
        except httpx.HTTPError:
            return None
        return r.json() if r.status_code in (200, 503) else None

    def wait_ready(self, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until ``/health`` answers (an exit meanwhile raises, with the log's tail)."""

        def ready() -> dict[str, Any] | None:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited {self.proc.returncode}:\n{self.log_tail()}")
            return self.health()

        return wait_for(ready, timeout=timeout, what="the daemon's /health", every=0.1)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120.0) -> int:
        """Send ``sig`` and wait for the exit; returns the exit code (143 after SIGTERM)."""
        if self.proc is None:
            raise RuntimeError("the daemon was not started")
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(
                    f"the daemon did not stop within {timeout:g} s of signal {sig}:\n"
                    f"{self.log_tail()}"
                ) from None
        return int(self.proc.returncode)

    def kill(self) -> None:
        """SIGKILL, if it still runs (cleanup)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def failure_context(self) -> tuple[str, str]:
        """What a failing test shows beside its traceback (the suite's ``conftest.py`` adds it
        to the report of any test holding this object): the last lines of the daemon's log,
        where the reason a wait timed out usually is."""
        return f"daemon log, last 80 lines ({self.log_path})", self.log_tail(80)

    def stats(self) -> ProcessStats:
        return process_stats(self.pid)

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
