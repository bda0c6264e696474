"""How a profile's figures are worded: one module for Markdown, HTML, CSV and the dashboard.

Every rendering asks this module for the text of a figure, so a figure reads the same wherever
it appears. The rules are decided here, once:

- an **estimated** figure shows its value, its 95% interval and its n: ``58.1% [51.2, 64.8]
  n=420``;
- a figure whose n cannot carry an interval (**not estimable**) keeps its value and n and says
  so: ``57.1% n=7 (no interval: n < 10)``; with no value at all it shows the reason;
- a figure that was not measured (**missing**) says ``not measured`` and why;
- an agent that fails its validity check (true-belief controls or the R0 reality check below
  90%) is **invalid**: its false-belief figures (D50, false-belief accuracy, leakage
  resistance) appear only marked ``INVALID (not counted: …)``, in compact cells as
  ``INVALID`` alone, and in a report's headline table, whose "valid" column says INVALID
  once a row, as ``not counted: …`` (``not counted`` alone for a figure with no value);
- a **held-out** run's seed is withheld (:mod:`mindledger.disclosure`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mindledger.words import counted
from reports._json import JsonValue

if TYPE_CHECKING:  # the profile's pydantic models: built when a profile is parsed, not before
    from reports.model import AgentProfile, RunProfile

__all__ = [
    "ABC_CONTRASTS",
    "CLEARLY_HIGHER",
    "CLEARLY_LOWER",
    "EVERY_TRIAL_FAILED",
    "FALSE_BELIEF_FIGURES",
    "FIGURE_TITLES",
    "HEADLINE_COLUMNS",
    "INVALID",
    "MISSING",
    "NOT_ESTIMABLE",
    "NOT_IDENTIFIABLE",
    "NOT_MEASURED",
    "NO_DETECTABLE_CHANGE",
    "NO_STORY_TRIALS",
    "STALE_AFTER_S",
    "Headline",
    "SmallN",
    "abc_contrast_rows",
    "agent_headline",
    "change_verdict",
    "commonest_cause",
    "contrast_label",
    "d50_text",
    "depth_signals_lines",
    "depth_text",
    "difference_text",
    "duration",
    "every_trial_failed",
    "figure_title",
    "headline_columns",
    "headlines",
    "idle_seconds",
    "level_fit_text",
    "level_text",
    "marked_invalid",
    "most_answers_unread",
    "most_trials_failed",
    "no_interval",
    "no_story_trials",
    "number",
    "p_text",
    "pct",
    "proportion_text",
    "role_order",
    "run_status_text",
    "skill_measured",
    "small_n_said_once",
    "validity_word",
]

MISSING = "—"
NOT_ESTIMABLE = "not estimable"
NOT_MEASURED = "not measured"
NOT_IDENTIFIABLE = "not identifiable"
INVALID = "INVALID"
ROLE_ORDER = {"agent": 0, "control": 1, "ablation": 2, "reference": 3}


def number(value: Any) -> float | None:
    """A finite float, or None (for None, NaN, infinities, booleans and non-numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def pct(value: Any, digits: int = 1) -> str:
    """``0.596`` → ``"59.6%"``; anything that is not a finite number → :data:`MISSING`."""
    f = number(value)
    return MISSING if f is None else f"{100.0 * f:.{digits}f}%"


def _ci_pct(ci: Any) -> str:
    if not isinstance(ci, Sequence) or len(ci) != 2:
        return ""
    lo, hi = (number(x) for x in ci)
    left = "?" if lo is None else f"{100.0 * lo:.1f}"
    right = "?" if hi is None else f"{100.0 * hi:.1f}"
    return f" [{left}, {right}]"


@dataclass
class SmallN:
    """The figures a section printed without an interval because their n is below the
    minimum (:func:`small_n_said_once`): the minimum and each figure's n."""

    minimum: int | None = None
    ns: list[float] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.minimum is not None

    def span(self) -> str:
        """``"n = 7"``, ``"n = 1 to 7"``; ``""`` when no n was given."""
        if not self.ns:
            return ""
        lo, hi = min(self.ns), max(self.ns)
        return f"n = {lo:g}" if lo == hi else f"n = {lo:g} to {hi:g}"

    def note(self) -> str:
        """The one line a section says instead of a reason in every cell (``""`` when no
        figure of the section lacked an interval for its size)."""
        if not self:
            return ""
        span = self.span()
        return (f"Intervals need n ≥ {self.minimum}: figures here printed without one rest on "
                f"fewer items ({span})." if span else
                f"Intervals need n ≥ {self.minimum}: figures here printed without one rest on "
                "fewer items.")


_SMALL_N: ContextVar[SmallN | None] = ContextVar("small_n", default=None)


@contextmanager
def small_n_said_once() -> Iterator[SmallN]:
    """Within this block a figure that has no interval only because its n is below the
    minimum is printed with its value and n alone (``"57.1% n=7"``), and the tally it yields
    collects those figures, so that the section says it once (:meth:`SmallN.note`) instead
    of ``"(no interval: n < 10)"`` in every cell. Any other reason is still printed."""
    tally = SmallN()
    token = _SMALL_N.set(tally)
    try:
        yield tally
    finally:
        _SMALL_N.reset(token)


def duration(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


STALE_AFTER_S = 600.0
"""Seconds without a stored trial after which a run marked running is said to be idle."""


def idle_seconds(
    status: str, created_at: str, last_trial_at: str | None, now: dt.datetime
) -> float | None:
    """How long a run marked running has stored no trial (since its last trial, or since it
    was created when it has none) once that is :data:`STALE_AFTER_S` or more: a run whose
    process was killed stays marked running until it is resumed, and only its silence tells
    it from one under way. None for any other run, or a time that cannot be read."""
    if status != "running":
        return None
    try:
        since = dt.datetime.fromisoformat(last_trial_at or created_at)
        idle = (now - since).total_seconds()
    except (TypeError, ValueError):
        return None
    return idle if idle >= STALE_AFTER_S else None


def run_status_text(
    status: str,
    created_at: str,
    last_trial_at: str | None,
    now: dt.datetime,
    *,
    over_limit: int = 0,
) -> str:
    """A run's status as a list of runs shows it: ``running · idle 2h14m`` for a run marked
    running that has stored no trial for a while (:func:`idle_seconds`); ``FAILED`` for a
    complete run with ``over_limit`` agents whose trials failed over the failure limit
    (``max_failure_share``: the run exited 3, as its summary said ``complete · FAILED``);
    else its status."""
    idle = idle_seconds(status, created_at, last_trial_at, now)
    if idle is not None:
        return f"{status} · idle {duration(idle)}"
    return "FAILED" if over_limit and status == "complete" else status


def _short_reason(block: Mapping[str, Any]) -> str:
    """``"n < 10"`` for the profile's small-n reason, else the reason given (``""``: none)."""
    reason = str(block.get("reason") or "")
    m = re.search(r"at least (\d+) are needed", reason)
    return f"n < {m.group(1)}" if m else reason


def no_interval(block: Any) -> str:
    """``" (no interval: n < 10)"`` for the profile's small-n reason, else the reason given;
    ``""`` for the small-n reason inside :func:`small_n_said_once`, which counts it."""
    block = _as_dict(block) or {}
    reason = str(block.get("reason") or "")
    m = re.search(r"at least (\d+) are needed", reason)
    if m:
        tally = _SMALL_N.get()
        if tally is not None:
            tally.minimum = max(int(m.group(1)), tally.minimum or 0)
            n = re.match(r"n = ([0-9.]+)", reason)
            given = number(block.get("n"))
            if n or given is not None:
                tally.ns.append(float(n.group(1)) if n else float(given or 0))
            return ""
        return f" (no interval: n < {m.group(1)})"
    return f" (no interval: {reason})" if reason else " (no interval)"


def _as_dict(block: Any) -> Mapping[str, JsonValue] | None:
    if block is None:
        return None
    if hasattr(block, "model_dump"):
        return block.model_dump(by_alias=True)  # type: ignore[no-any-return]
    return block if isinstance(block, Mapping) else None


def proportion_text(block: Any, *, with_ci: bool = True) -> str:
    """A proportion: ``"58.1% [51.2, 64.8] n=420"``; ``"57.1% n=7 (no interval: n < 10)"``
    when not estimable; ``"not estimable (reason)"`` when it has no value. ``with_ci=False``
    (compact cells): ``"58.1% n=420"``."""
    d = _as_dict(block)
    if d is None or number(d.get("value")) is None:
        reason = d.get("reason") if d else None
        return f"{NOT_ESTIMABLE} ({reason})" if reason else NOT_ESTIMABLE
    text = pct(d["value"])
    if not with_ci:
        return text if d.get("n") is None else f"{text} n={d['n']}"
    estimable = d.get("status") != "not_estimable" and d.get("ci")
    if estimable:
        text += _ci_pct(d.get("ci"))
    n = d.get("n")
    if n is not None:
        text += f" n={n}"
    if not estimable:
        text += no_interval(d)
    return text


def depth_text(block: Any, *, digits: int = 2) -> str:
    """A mean depth (K_B, K_L, K_L − K_B) or mean chain figure: ``"3.00 [3.00, 3.00] n=40"``,
    ``"2.50 n=4 (no interval: n < 10)"``, and the unresolved trials when there are any:
    ``"… (unresolved 3)"``; ``"not estimable (reason)"`` with no value; ``"not identifiable
    (reason)"`` for a K_B or K_L that no level explains better than chance."""
    d = _as_dict(block)
    if d is not None and d.get("identifiable") is False:
        text = f"{NOT_IDENTIFIABLE} ({d.get('reason')})" if d.get("reason") else NOT_IDENTIFIABLE
    elif d is None or number(d.get("value")) is None:
        reason = d.get("reason") if d else None
        text = f"{NOT_ESTIMABLE} ({reason})" if reason else NOT_ESTIMABLE
    else:
        text = f"{number(d['value']):.{digits}f}"
        ci = d.get("ci")
        estimable = False
        if d.get("status") != "not_estimable" and isinstance(ci, Sequence) and len(ci) == 2:
            estimable = True
            text += " [" + ", ".join("?" if x is None else f"{x:.{digits}f}"
                                     for x in map(number, ci)) + "]"
        text += f" n={d.get('n')}"
        if not estimable and d.get("fit") and d.get("identifiable") is None:
            text += _untested(d)  # a K_B or K_L too small to test: one note says both
        elif not estimable:
            text += no_interval(d)
    if d and d.get("unresolved") and d.get("identifiable") is not False:
        text += f" (unresolved {d['unresolved']})"
    return text


def level_fit_text(block: Any) -> str | None:
    """A depth signal's level-k fit against chance: ``"level-k fit 1.00 [1.00, 1.00]: 60 of 60
    choices are some level's (chance 51%, p <0.001 against chance)"``; None when the signal has
    no fit (an old profile)."""
    d = _as_dict(block)
    fit = _as_dict(d.get("fit")) if d else None
    if d is None or not fit or not fit.get("n"):
        return None
    value = number(fit.get("value"))
    text = "level-k fit " + (MISSING if value is None else f"{value:.2f}")
    ci = fit.get("ci")
    if value is not None and isinstance(ci, Sequence) and len(ci) == 2:
        text += " [" + ", ".join("?" if number(x) is None else f"{number(x):.2f}"
                                 for x in ci) + "]"
    text += (f": {fit.get('matched')} of {fit.get('n')} choices are some level's "
             f"(chance {pct(fit.get('chance'), 0)}")
    if number(fit.get("p_chance")) is not None:
        p = p_text(fit["p_chance"])
        text += f", p {p} against chance" if p.startswith("<") else f", p = {p} against chance"
    text += ")"
    if d.get("identifiable") is None and d.get("status") != "not_estimable":
        text += _untested(d)  # (the depth's own text says it when it has no interval)
    return text


def _untested(d: Mapping[str, Any]) -> str:
    """``" (not tested against chance: n < 10)"``, for a depth signal whose level-k fit was
    not tested."""
    reason = _short_reason(d).removeprefix("not tested against chance: ")
    return f" (not tested against chance: {reason})" if reason else " (not tested against chance)"


def level_text(block: Any) -> str:
    """A depth signal said as a level, for one-line summaries: ``"level 2.00 [2.00, 2.00]"``,
    ``"not identifiable as a level-k player"``, ``"level 7.00 (not tested against chance: n <
    10)"``, or the figure's own text when it has no value."""
    d = _as_dict(block)
    if d is not None and d.get("identifiable") is False:
        return f"{NOT_IDENTIFIABLE} as a level-k player"
    value = number(d.get("value")) if d is not None else None
    if d is None or value is None:
        return depth_text(block)
    text = f"level {value:.2f}"
    ci = d.get("ci")
    if isinstance(ci, Sequence) and len(ci) == 2 and None not in ci:
        text += f" [{number(ci[0]):.2f}, {number(ci[1]):.2f}]"
    return text if d.get("identifiable") is True else text + _untested(d)


def depth_signals_lines(block: Any) -> list[str]:
    """The depth signals of the level-k games, worded once (``[]`` when not measured):
    K_B beside K_L, their agreement, best-response consistency against its chance rate (and
    the ``INCONSISTENT PLAYER`` flag when it is not above chance), chain consistency and
    mentalizing."""
    d = _as_dict(block)
    if not d or not d.get("available"):
        return []
    lines = [
        f"K_B {depth_text(d.get('K_B'))} · K_L {depth_text(d.get('K_L'))}",
    ]
    # (a signal that is not identifiable says its fit in its reason)
    fits = [f"{key} {text}" for key in ("K_B", "K_L")
            if (_as_dict(d.get(key)) or {}).get("identifiable") is not False
            and (text := level_fit_text(d.get(key))) is not None]
    if fits:
        lines.append(" · ".join(fits))
    lines.append(f"K_L − K_B {depth_text(d.get('K_L_minus_K_B'))} · K_L = K_B "
                 f"{proportion_text(d.get('K_agreement'))}")
    chance = number(d.get("br_chance"))
    br = f"best-response consistency {proportion_text(d.get('br_consistency'))}"
    if chance is not None:
        br += f" (chance {pct(chance)})"
    eu = _as_dict(d.get("br_consistency_eu"))
    if eu and eu.get("n"):
        br += f" · under a stated distribution {proportion_text(eu)}"
    lines.append(br)
    if d.get("inconsistent_player") is True:
        lines.append("INCONSISTENT PLAYER: its actions are not best responses to its stated "
                     "beliefs more often than chance")
    chain = _as_dict(d.get("chain_consistency"))
    if chain and chain.get("n"):
        lines.append(f"chain consistency {depth_text(chain)} · chain length "
                     f"{depth_text(d.get('chain_length'))}")
    ment = _as_dict(d.get("mentalizing"))
    if ment and ment.get("n"):
        lines.append(f"explicit mentalizing {proportion_text(ment)}")
    lines.extend(_signal_sources_lines(d))
    return lines


def _signal_sources_lines(d: Mapping[str, Any]) -> list[str]:
    """Where the stated signals came from (the answer's own, or the extraction judge's
    reading) and what the judge did; nothing when neither source stated anything."""
    sources = _as_dict(d.get("sources")) or {}
    used = []
    for figure, label in (("K_L", "K_L"), ("br_consistency", "BR consistency"),
                          ("chain_consistency", "chain consistency"),
                          ("mentalizing", "mentalizing")):
        s = _as_dict(sources.get(figure))
        if s and s.get("source"):
            used.append(f"{label} answer n={s.get('answer', 0)}, judge n={s.get('judge', 0)}")
    lines = ["stated signals from: " + "; ".join(used)] if used else []
    j = _as_dict(d.get("judge"))
    if j and j.get("judged"):
        judges = j.get("judges")
        names = ", ".join(str(x) for x in judges) if isinstance(judges, list | tuple) else ""
        lines.append(
            f"extraction judge {names}: {counted(_whole(j, 'judged'), 'trial')} judged "
            f"({counted(_whole(j, 'calls'), 'call')}, "
            f"{counted(_whole(j, 'cache_hits'), 'cache hit')}); "
            f"{counted(_whole(j, 'parse_failures'), 'unreadable reply', 'unreadable replies')}; "
            f"{counted(_whole(j, 'ungrounded'), 'ungrounded quote')}, "
            f"{counted(_whole(j, 'dropped'), 'value')} dropped"
        )
    return lines


def d50_text(block: Any, *, with_ci: bool = True) -> str:
    """D50 as the profile displays it (value and interval, a bound, a bracket) with its n;
    ``"not estimable (reason)"`` when there is nothing to show."""
    d = _as_dict(block)
    if d is None:
        return NOT_ESTIMABLE
    status = str(d.get("status") or "not_estimable")
    if status == "not_estimable":
        reason = d.get("reason")
        return f"{NOT_ESTIMABLE} ({reason})" if reason else NOT_ESTIMABLE
    display = str(d.get("display") or "")
    if not display:
        value = number(d.get("value"))
        display = MISSING if value is None else f"{value:.2f}"
    if not with_ci:
        return display.split(" [")[0].split(" (")[0]
    return f"{display} n={d.get('n', 0)}"


def difference_text(block: Any, *, proportion: bool = True, tag: str = "",
                    with_n: bool = False, with_p: bool = False) -> str:
    """A contrast: ``"+25.0 pts [+13.5, +35.2]"`` for proportions, ``"+1.14 [+0.39, +1.80]"``
    otherwise; ``with_n`` / ``with_p`` add ``n=`` and ``p_holm=``; the reason when it has no
    difference."""
    d = _as_dict(block)
    if d is None:
        return NOT_ESTIMABLE
    if d.get("available") is False:
        reason = d.get("reason")
        return f"{NOT_ESTIMABLE} ({reason})" if reason else NOT_ESTIMABLE
    diff = number(d.get("difference"))
    if diff is None:
        shown = d.get("display") or d.get("note") or d.get("reason")
        return str(shown) if d.get("display") else (
            f"{NOT_ESTIMABLE} ({shown})" if shown else NOT_ESTIMABLE)
    scale, unit, fmt = (100.0, " pts", "{:+.1f}") if proportion else (1.0, "", "{:+.2f}")
    text = fmt.format(scale * diff) + unit
    ci = d.get("ci")
    estimable = d.get("status") != "not_estimable" and isinstance(ci, Sequence) and len(ci) == 2
    if estimable:
        assert isinstance(ci, Sequence)
        ends = [number(x) for x in ci]
        text += " [" + ", ".join("?" if e is None else fmt.format(scale * e) for e in ends) + "]"
        if tag:
            text += f" {tag}"
    if with_n and d.get("n") is not None:
        text += f" n={d['n']}"
    if not estimable:
        text += no_interval(d)
    p = number(d.get("p_holm"))
    if with_p and p is not None:
        text += f" p_holm={p:.3g}"
    return text


ABC_CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("A_minus_B", "A", "B"),
    ("B_minus_C", "B", "C"),
)
"""An agent's A/B/C accuracy contrasts: (key of ``games.abc.contrasts``, first, second)."""


def contrast_label(kind: str, module: str | None = None, metric: str = "") -> str:
    """What a contrast of the report compares: ``agent − control``, ``ablation of <module>``,
    ``A − B (same scenarios)`` for an agent's A/B/C contrast (``metric`` ``abc.A_minus_B``)."""
    if kind == "minus_control":
        return "agent − control"
    if kind == "ablation":
        return f"ablation of {module}"
    if kind == "abc":
        key = metric.removeprefix("abc.")
        for k, x, y in ABC_CONTRASTS:
            if k == key:
                return f"{x} − {y} (same scenarios)"
        return "A/B/C (same scenarios)"
    return kind


def abc_contrast_rows(
    abc: Any, *, tag: Callable[[str | None], str] | None = None
) -> list[list[str]]:
    """One agent's A − B and B − C accuracy contrasts (paired by scenario), worded as the
    agent − control contrasts are: ``[contrast, first, second, difference [95%], n, p,
    p (Holm)]`` per contrast; ``tag(interval)`` names the interval's method after it (``NP``).
    ``[]`` when the agent has no A/B/C contrasts."""
    d = _as_dict(abc) or {}
    blocks = _as_dict(d.get("contrasts")) or {}
    rows = []
    for key, x, y in ABC_CONTRASTS:
        c = _as_dict(blocks.get(key))
        if c is None:
            continue
        interval = c.get("interval")
        rows.append([
            f"{x} − {y}", pct(c.get(x)), pct(c.get(y)),
            difference_text(
                c, tag=tag(interval if isinstance(interval, str) else None)
                if tag is not None else ""),
            MISSING if c.get("n") is None else str(c["n"]),
            p_text(c.get("p")), p_text(c.get("p_holm")),
        ])
    return rows


def p_text(p: Any) -> str:
    f = number(p)
    if f is None:
        return MISSING
    return "<0.001" if f < 0.001 else f"{f:.3f}"


def role_order(role: str, name: str) -> tuple[int, str]:
    return (ROLE_ORDER.get(role, 9), name)


# -- the headline: one row per agent, worded once -------------------------------------------


HEADLINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("agent", "agent"),
    ("role", "role"),
    ("valid", "valid"),
    ("d50", "D50 [95%]"),
    ("false_belief", "false-belief accuracy"),
    ("leakage_resistance", "leakage resistance"),
    ("skill", "skill S"),
    ("true_belief", "true-belief control acc."),
)
"""(field of :class:`Headline`, column title) in the order every rendering shows them."""

FALSE_BELIEF_FIGURES = ("d50", "false_belief", "leakage_resistance")
"""The headline figures an invalid agent's validity check withholds."""


@dataclass(frozen=True)
class Headline:
    """One agent's headline figures as every rendering words them."""

    agent: str
    role: str
    valid: str
    d50: str
    false_belief: str
    leakage_resistance: str
    skill: str
    true_belief: str

    def cells(self, columns: Sequence[tuple[str, str]] = HEADLINE_COLUMNS) -> list[str]:
        return [str(getattr(self, key)) for key, _ in columns]


def _whole(block: Mapping[str, Any], key: str) -> int:
    """``block[key]`` as a whole number (0 when absent or not a number)."""
    value = number(block.get(key))
    return int(value) if value is not None else 0


def every_trial_failed(a: AgentProfile) -> str | None:
    """``"all 26 trials were API errors"`` when every one of the agent's trials in the run
    failed (unreachable, timing out, replying what cannot be read), else None: then it has no
    figure at all, which is said once rather than as "not estimable" for each."""
    errors = a.api_errors
    if errors is None or errors.trials == 0 or errors.count < errors.trials:
        return None
    return f"all {errors.trials} trial{'' if errors.trials == 1 else 's'} were API errors"


def commonest_cause(a: AgentProfile, limit: int = 120) -> str:
    """`` (26 × server_error: HTTP 501 …)``: the commonest cause of the agent's API errors with
    its count and first message (cut to ``limit`` characters), and whether there were others;
    ``""`` when the profile names none (a profile built before causes were kept)."""
    errors = a.api_errors
    if errors is None or not errors.causes:
        return ""
    top = errors.causes[0]
    example = top.example if len(top.example) <= limit else top.example[: limit - 1] + "…"
    others = "; and others" if top.count < errors.count else ""
    return f" ({top.count} × {top.kind}: {example}{others})"


def most_answers_unread(a: AgentProfile) -> tuple[int, int] | None:
    """(unread, answered) when more than half of the answers the agent gave in the run (its
    trials but the API errors) could not be read: each counts as wrong, so its figures then say
    more about how it replies than about what it knows, which its verdict says first; else
    None."""
    errors = a.api_errors
    if errors is None:
        return None
    answered = errors.trials - errors.count
    if answered <= 0 or 2 * errors.unparsed <= answered:
        return None
    return errors.unparsed, answered


def most_trials_failed(a: AgentProfile) -> tuple[int, int] | None:
    """(API errors, trials) when more than half of the agent's trials in the run, but not all
    (:func:`every_trial_failed`), were API errors: its figures then rest on the few left,
    which its verdict says first; else None."""
    errors = a.api_errors
    if errors is None or not 0 < errors.count < errors.trials or 2 * errors.count <= errors.trials:
        return None
    return errors.count, errors.trials


def skill_measured(profile: RunProfile) -> bool:
    """Whether any agent of the run has agent-prediction skill S (a matrix run accompanies
    it)."""
    return any(a.agent_prediction_skill.available for a in profile.agents.values())


def headline_columns(profile: Mapping[str, Any] | RunProfile) -> tuple[tuple[str, str], ...]:
    """:data:`HEADLINE_COLUMNS` for this run: without skill S when no agent has it (no matrix
    run accompanies the run: the verdict says once how to get it)."""
    from reports.model import RunProfile

    prof = profile if isinstance(profile, RunProfile) else RunProfile.of(profile)
    if skill_measured(prof):
        return HEADLINE_COLUMNS
    return tuple(c for c in HEADLINE_COLUMNS if c[0] != "skill")


def marked_invalid(
    text: str, *, compact: bool = False, beside_valid: bool = False, valued: bool = True
) -> str:
    """How an invalid agent's false-belief figure reads: ``INVALID (not counted: 2.60 …)``;
    ``INVALID`` alone in a compact cell; ``not counted: 2.60 …`` in a table row whose "valid"
    cell says INVALID already (``beside_valid``: said once a row, not in every cell), and
    ``not counted`` alone there for a figure with no value (not ``valued``: why it has none
    does not matter while it does not count; the agent's own section says)."""
    if compact:
        return INVALID
    if beside_valid:
        return f"not counted: {text}" if valued else "not counted"
    return f"{INVALID} (not counted: {text})"


def _valid_text(valid: bool | None) -> str:
    return {True: "yes", False: INVALID, None: "unchecked"}[valid]


def _skill_text(a: AgentProfile, with_ci: bool) -> str:
    """S predicting a fresh copy of itself, with its interval and n, then the mean over the
    other targets: ``self 0.812 [0.601, 0.950] n=40 · others 0.310 (2 targets)``; compact:
    ``self 0.812 · others 0.310``; with second-order prediction (B9) its gain over the uniform
    distribution follows: ``· 2nd-order +0.041 [+0.012, +0.070] vs uniform``. Not measured (no
    matrix run): ``not measured: why``."""
    s = a.agent_prediction_skill
    if not s.available:
        return f"{NOT_MEASURED}: {s.reason}" if with_ci and s.reason else NOT_MEASURED
    value = number(s.value)
    if value is None:
        own = f"self {NOT_ESTIMABLE}" + (f" ({s.reason})" if with_ci and s.reason else "")
    else:
        own = f"self {value:.3f}"
        if with_ci:
            ci = s.ci
            if s.status != "not_estimable" and ci is not None and all(
                    number(x) is not None for x in ci):
                own += f" [{number(ci[0]):.3f}, {number(ci[1]):.3f}]"
            if s.n is not None:
                own += f" n={s.n}"
            if s.status == "not_estimable" or ci is None:
                own += no_interval({"reason": s.reason})
    parts = [own]
    others = s.others
    if others is not None and others.n_targets:
        mean = number(others.value)
        if mean is None:
            parts.append(f"others {NOT_ESTIMABLE}" + (
                f" ({others.reason})" if with_ci and others.reason else ""))
        else:
            parts.append(f"others {mean:.3f}" + (
                f" ({others.n_targets} targets)" if with_ci else ""))
    second = s.second_order
    if second is not None and second.n_cells:
        value = number(second.value)
        if value is None:
            parts.append(f"2nd-order {NOT_ESTIMABLE}")
        else:
            text = f"2nd-order {value:+.3f}"
            if with_ci:
                ci = second.ci
                if ci is not None and all(number(x) is not None for x in ci):
                    text += f" [{number(ci[0]):+.3f}, {number(ci[1]):+.3f}]"
                text += " vs uniform"
            parts.append(text)
    return " · ".join(parts)


def agent_headline(
    name: str, a: AgentProfile, *, with_ci: bool = True, beside_valid: bool = False
) -> Headline:
    """The headline of one agent; ``with_ci=False`` for compact cells (values only);
    ``beside_valid`` for a table row whose "valid" cell says INVALID (:func:`marked_invalid`)."""
    figures = {
        "d50": d50_text(a.d50, with_ci=with_ci),
        "false_belief": proportion_text(a.false_belief_accuracy, with_ci=with_ci),
        "leakage_resistance": proportion_text(a.leakage_resistance, with_ci=with_ci),
    }
    if a.valid is False:
        blocks: dict[str, Any] = {
            "d50": a.d50,
            "false_belief": a.false_belief_accuracy,
            "leakage_resistance": a.leakage_resistance,
        }
        figures = {
            k: marked_invalid(
                v,
                compact=not with_ci,
                beside_valid=beside_valid,
                valued=number(blocks[k].value) is not None,
            )
            for k, v in figures.items()
        }
    true_belief = proportion_text(a.true_belief_control_accuracy, with_ci=with_ci)
    valid = _valid_text(a.valid)
    if every_trial_failed(a) is not None:  # not four reasons each figure cannot be estimated
        true_belief = EVERY_TRIAL_FAILED if with_ci else "failed"
        figures = dict.fromkeys(figures, true_belief)
        valid = "n/a"
    elif no_story_trials(a):  # said once a cell, short, rather than four reasons it has none
        true_belief = NO_STORY_TRIALS if with_ci else "n/a"
        figures = dict.fromkeys(figures, true_belief)
        valid = "n/a"
    return Headline(
        agent=name,
        role=a.role,
        valid=valid,
        skill=_skill_text(a, with_ci),
        true_belief=true_belief,
        **figures,
    )


EVERY_TRIAL_FAILED = "none (every trial failed)"
"""A headline figure of an agent whose every trial in the run failed (:func:`every_trial_failed`:
the verdict says how many and where to see why); ``failed`` in a compact cell."""

NO_STORY_TRIALS = "n/a (no NestToM trials)"
"""A headline figure of an agent that took no NestToM story in the run (:func:`no_story_trials`);
``n/a`` in a compact cell."""


def no_story_trials(a: AgentProfile) -> bool:
    """Whether the agent took none of the run's NestToM stories: none was scored and none failed
    (a games-only reference such as ``level:2`` declines them: its trials are n/a), or the
    run had none. Its belief figures are then not "not estimable" but not applicable."""
    nesttom = (a.families or {}).get("nesttom")
    failed = a.api_errors.by_family.get("nesttom", 0) if a.api_errors is not None else 0
    return (nesttom is None or not nesttom.n) and not failed and a.false_belief_accuracy.n == 0


def headlines(
    profile: Mapping[str, Any] | RunProfile, *, with_ci: bool = True, beside_valid: bool = False
) -> list[Headline]:
    """Every agent's headline, agents under test first, then controls, ablations, references
    (by name within a role). Parses ``profile`` against the published schema. ``beside_valid``
    for the rows of a report's headline table (:func:`marked_invalid`)."""
    from reports.model import RunProfile

    prof = profile if isinstance(profile, RunProfile) else RunProfile.of(profile)
    order = sorted(prof.agents, key=lambda n: role_order(prof.agents[n].role, n))
    return [
        agent_headline(n, prof.agents[n], with_ci=with_ci, beside_valid=beside_valid)
        for n in order
    ]


# -- a figure's title, a change's verdict, validity in words --------------------------------


FIGURE_TITLES: Mapping[str, str] = {
    "false_belief_accuracy": "false-belief accuracy",
    "true_belief_control_accuracy": "true-belief control accuracy",
    "reality_check": "reality check (R0 accuracy)",
    "d50": "D50 (levels)",
    "leakage_resistance": "leakage resistance",
    "applied_gap": "applied-ToM gap (belief − behaviour)",
    "games_accuracy": "level-k games accuracy",
    "log_score_c": "log score of C",
    "abc_dissociation": "A/B/C dissociation",
    "ece": "calibration error (ECE)",
    "agent_prediction_skill": "skill S (self)",
}
"""The title of each figure of an agent's profile that is followed or compared between runs,
by its key in the profile (and in ``mindledger report --compare --format json``)."""


def figure_title(key: str) -> str:
    """A profile figure's title: ``"d50"`` → ``"D50 (levels)"``;
    ``"accuracy_by_depth.false.R1"`` → ``"accuracy at depth R1 (false belief)"``. An unknown
    key reads as its words (``"some_figure"`` → ``"some figure"``)."""
    if key in FIGURE_TITLES:
        return FIGURE_TITLES[key]
    if key.startswith("accuracy_by_depth."):
        kind, _, depth = key.removeprefix("accuracy_by_depth.").partition(".")
        if kind in ("false", "true") and depth:
            return f"accuracy at depth {depth} ({kind} belief)"
        return f"accuracy at depth {kind}"
    return key.replace("_", " ").replace(".", " ")


CLEARLY_HIGHER = "clearly higher"
CLEARLY_LOWER = "clearly lower"
NO_DETECTABLE_CHANGE = "no detectable change"


def change_verdict(block: Any, *, alpha: float = 0.05) -> str:
    """What a change between two runs shows, judged from its 95% interval and never from the
    point estimate alone: ``clearly higher`` (the interval is above 0), ``clearly lower``
    (below 0), ``no detectable change`` (it covers 0); ``not estimable`` without an interval.
    A change whose interval excludes 0 but whose Holm-adjusted p (``p_holm``, across the
    table it sits in) is not below ``alpha`` reads ``higher (not after Holm)``: one of many
    intervals excluding 0 by chance is no clear change."""
    d = _as_dict(block) or {}
    ci = d.get("ci")
    if d.get("status") == "not_estimable" or not isinstance(ci, Sequence) or len(ci) != 2:
        return NOT_ESTIMABLE
    lo, hi = (number(x) for x in ci)
    if lo is None or hi is None:
        return NOT_ESTIMABLE
    if lo <= 0 <= hi:
        return NO_DETECTABLE_CHANGE
    direction = "higher" if lo > 0 else "lower"
    p = number(d.get("p_holm"))
    if p is not None and p >= alpha:
        return f"{direction} (not after Holm)"
    return CLEARLY_HIGHER if lo > 0 else CLEARLY_LOWER


def validity_word(valid: bool | None) -> str:
    """An agent's validity in one word: ``valid``, ``invalid`` (it failed the true-belief
    controls or the R0 reality check) or ``unchecked`` (no control items answered)."""
    return {True: "valid", False: "invalid", None: "unchecked"}[valid]
