"""Progress as plain lines when stderr is not a terminal (cron, CI, nohup), and the option that
chooses: the lines' pace and content under a controlled clock, then the CLI for real."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli.progress import LineProgress, TrialProgress, duration, progress_mode
from harness.run.progress import rate
from tests.cli import run_main


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_a_line_at_start_at_each_tenth_and_at_the_end() -> None:
    out, clock = io.StringIO(), Clock()
    p = LineProgress(out, clock=clock, ticker=False)
    p.start({"a": 20}, {})
    for _ in range(20):
        clock.now += 2.0
        p.advance("a")
    p.stop()
    got = lines(out)
    assert got[0] == "progress 0/20 trials (0%) · 0 errors"
    # one line per tenth (every 2 trials) but the last, which the closing line says once
    assert len(got) == 1 + 9 + 1
    assert got[-2].startswith("progress 18/20 trials (90%)")
    assert got[1].startswith("progress 2/20 trials (10%) · 0 errors · 30.0/min · ETA 36s")
    assert got[-1] == "progress 20/20 trials (100%) · 0 errors · 30.0/min · done after 40s"


def test_a_burst_of_instant_trials_prints_one_line_not_ten() -> None:
    out, clock = io.StringIO(), Clock()
    p = LineProgress(out, clock=clock, ticker=False)
    p.start({"ref": 30, "model": 10}, {})
    clock.now += 1.5
    for _ in range(30):
        p.advance("ref")  # all at once: the reference agent is instant
    assert len(lines(out)) == 2
    # the ETA is the slow agent's, and nothing honest can be said before it has done one
    assert "ETA" not in lines(out)[-1]
    assert lines(out)[-1].endswith("running: ref 4/30, model 0/10")
    clock.now += 10.0
    p.advance("model")
    assert lines(out)[-1].startswith("progress 31/40 trials (77%)")
    assert "ETA 1m44s" in lines(out)[-1]  # 9 left at 1 per 11.5 s: 103.5 s
    # the rate is the running agents' (ref is done): 1 in 11.5 s, not 31 in 11.5 s
    assert " · 5.2/min · " in lines(out)[-1]


def test_errors_are_counted_and_the_end_says_stopped_when_work_is_left() -> None:
    out, clock = io.StringIO(), Clock()
    p = LineProgress(out, clock=clock, ticker=False)
    p.start({"a": 4, "b": 4}, {"a": 2})
    clock.now += 5
    p.advance("b", error=True)
    p.advance("b", error=True)
    p.stop()
    assert lines(out)[-1] == "progress 4/8 trials (50%) · 2 errors · 24.0/min · stopped after 5s"


def test_retries_are_counted_with_the_last_reason_before_any_trial_ends() -> None:
    """An endpoint that hangs fails its first trial only after every retry's timeout: until
    then the lines say that requests are being retried, and why."""
    out, clock = io.StringIO(), Clock()
    p = LineProgress(out, clock=clock, interval=10, ticker=False)
    p.start({"bot": 3}, {})
    p.retried("bot", "timeout", "timed out: no reply within 120 s")
    assert p.text() == (
        "progress 0/3 trials (0%) · 0 errors · 1 retry (last: bot: timed out: no reply within 120 s)"
    )
    p.retried("bot", "server_error", "server error: HTTP 503: overloaded")
    p.advance("bot", error=True)
    clock.now += 60
    p.stop()
    assert lines(out)[-1] == (
        "progress 1/3 trials (33%) · 1 error · 2 retries (last: bot: server error: HTTP 503: "
        "overloaded) · 1.0/min · stopped after 1m00s"
    )


def test_bars_count_retries_and_say_the_first_of_each_kind_above_them() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    p = TrialProgress(console, "bars")
    p.start({"bot": 2}, {})
    for _ in range(3):
        p.retried("bot", "timeout", "timed out: no reply within 120 s")
    p.retried("bot", "rate_limited", "rate limited: HTTP 429")
    assert p.progress.tasks[0].description == "bot · 4 retries"
    p.stop()
    said = [ln for ln in out.getvalue().splitlines() if "retrying" in ln]
    assert [ln.replace("\x1b[2K", "").strip() for ln in said] == [  # less the line erase
        "bot: retrying a request: timed out: no reply within 120 s",
        "bot: retrying a request: rate limited: HTTP 429",
    ]


def test_failed_trials_are_counted_with_the_last_cause_while_the_run_goes_on() -> None:
    """An agent whose replies cannot be used says why on the line as it happens, cut to one
    short line (the summary at the end has every cause whole)."""
    out, clock = io.StringIO(), Clock()
    p = LineProgress(out, clock=clock, interval=10, ticker=False)
    p.start({"bot": 3}, {})
    p.advance("bot", error=True)
    p.failed("bot", "malformed: python3 wrote no JSON reply; its stdout began 'lol'")
    assert p.text() == (
        "progress 1/3 trials (33%) · 1 error (last: bot: malformed: python3 wrote no JSON "
        "reply; its stdout began 'lol')"
    )
    p.advance("bot", error=True)
    p.failed("bot", "timeout: " + "x" * 300 + "\nsecond line")
    said = p.text().split("(last: ", 1)[1].removesuffix(")")
    assert said.startswith("bot: timeout: xxx") and said.endswith("…") and "\n" not in said
    assert len(said) == len("bot: ") + 100


def test_bars_count_errors_and_say_the_first_failure_of_each_kind_above_them() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    p = TrialProgress(console, "bars")
    p.start({"bot": 4}, {})
    for what in ("malformed: no JSON reply", "malformed: message: expected an object",
                 "timeout: no reply within 2 s"):  # fmt: skip
        p.advance("bot", error=True)
        p.failed("bot", what)
    p.retried("bot", "timeout", "timed out: no reply within 2 s")
    assert p.progress.tasks[0].description == "bot · 3 errors · 1 retry"
    p.stop()
    said = [ln.replace("\x1b[2K", "").strip() for ln in out.getvalue().splitlines()
            if "a trial failed" in ln]  # fmt: skip
    assert said == ["bot: a trial failed: malformed: no JSON reply",
                    "bot: a trial failed: timeout: no reply within 2 s"]  # fmt: skip


def test_the_ticker_prints_while_nothing_completes() -> None:
    out = io.StringIO()
    p = LineProgress(out, interval=0.05)
    p.start({"a": 3}, {})
    deadline = __import__("time").monotonic() + 30
    while len(lines(out)) < 3 and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.01)
    p.stop()
    assert len(lines(out)) >= 4  # the start, two ticks, the end
    assert all(line.startswith("progress 0/3 trials (0%)") for line in lines(out))


def test_a_broken_stderr_does_not_stop_the_run() -> None:
    out = io.StringIO()
    out.close()
    p = LineProgress(out, ticker=False)
    p.start({"a": 1}, {})
    p.advance("a")
    p.stop()


def test_modes() -> None:
    pipe = Console(file=io.StringIO())
    tty = Console(file=io.StringIO(), force_terminal=True)
    assert progress_mode("auto", pipe) == "lines"
    assert progress_mode("auto", tty) == "bars"
    assert progress_mode("none", tty) == "none"
    assert TrialProgress(pipe, "none").lines is None
    silent = TrialProgress(pipe, "none")
    silent.start({"a": 1}, {})
    silent.advance("a")
    silent.stop()
    assert pipe.file.getvalue() == ""  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (59.6, "1m00s"), (185, "3m05s"), (3725, "1h02m")]
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


AGENT = "import json,sys; json.load(sys.stdin); print(json.dumps({'content': 'ANSWER: x'}))"


def _settings(home: Path) -> None:
    (home.parent / "work" / "mindledger.toml").write_text(
        '[agents.bot]\nadapter = "command"\n'
        f'command = [{sys.executable!r}, "-c", {AGENT!r}]\nanswer_mode = "text"\n'
    )


def test_run_with_stderr_in_a_file_leaves_progress_lines(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mindledger run … 2> log`: stderr is not a terminal, so progress comes as lines. The
    least gap between lines is lifted: on a fast machine the 26 trials take under its second,
    and the lines at each tenth would depend on the machine's speed."""
    monkeypatch.setattr("harness.run.progress.MIN_GAP_S", 0.0)
    _settings(isolated_home)
    code, out, err = run_main(
        capsys, "-o", "max_failure_share=1", "run", "--agent", "bot", "--no-control", "--seed", "3"
    )
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.startswith("progress ")]
    assert len(progress) >= 3, err
    assert progress[-1].startswith("progress 26/26 trials (100%)")
    assert "agent" in out and "bot" in out  # the summary is on stdout
    _code, out, err = run_main(
        capsys, "run", "--agent", "bot", "--no-control", "--seed", "3", "--progress", "none"
    )
    assert not [line for line in err.splitlines() if line.startswith("progress ")]


def test_lines_can_go_to_a_log_instead_of_a_file() -> None:
    """A queue worker's batches log their progress (harness.queue.batches)."""
    logged: list[str] = []
    p = LineProgress(emit=logged.append, label="run r · a:", ticker=False)
    p.start({"a": 2}, {})
    p.advance("a")
    p.stop()
    assert logged[0] == "run r · a: 0/2 trials (0%) · 0 errors"
    assert logged[-1].startswith("run r · a: 1/2 trials (50%)")


@pytest.mark.parametrize(
    ("per_second", "shown"),
    [(12.34, "12.3/s"), (1.0, "1.0/s"), (0.1, "6.0/min"), (1 / 60, "1.0/min"), (1 / 600, "6.0/h")],
)
def test_a_slow_rate_is_shown_per_minute_or_hour_never_as_zero(
    per_second: float, shown: str
) -> None:
    assert rate(per_second) == shown
