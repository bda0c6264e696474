"""Two runs side by side, as the dashboard shows them: pure functions from the comparison
:func:`reports.render.compare` builds (the same one ``mindledger report --compare`` renders) to
table rows. No Textual, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reports.present import MISSING, difference_text, number, p_text, pct
from reports.render import COMPARE_METRICS

__all__ = ["COMPARE_COLUMNS", "CompareRow", "CompareView", "compare_view", "metric_label"]

COMPARE_COLUMNS = ("Agent", "Metric", "Run A", "Run B", "Change B − A [95%]", "n (A / B)",
                   "p (Holm)")  # fmt: skip
CHANGE_WIDTH = 34
"""The widest a change cell may be; a longer reason is cut and shown whole below the table."""
VALUE_WIDTH = 22
"""The widest a run's value cell may be (a D50 bound or an S not measured says why)."""

_PROPORTIONS = {k for k, proportion in COMPARE_METRICS if proportion}
_LABELS = {
    "d50": "D50",
    "ece": "ECE",
    "log_score_c": "log score (C)",
    "abc_dissociation": "A/B/C dissociation",
    "agent_prediction_skill": "agent-prediction skill S",
}


def metric_label(key: str) -> str:
    """``"false_belief_accuracy"`` → ``"false-belief accuracy"``; ``"accuracy_by_depth.R2"``
    → ``"accuracy R2"``; ``"accuracy_by_depth.false.R2"`` → ``"false-belief R2"``."""
    if key.startswith("accuracy_by_depth."):
        rest = key.split(".", 1)[1]
        kind, _, depth = rest.partition(".")
        if kind in ("false", "true") and depth:
            return f"{kind}-belief {depth}"
        return "accuracy " + rest
    if key in _LABELS:
        return _LABELS[key]
    return key.replace("_", " ").replace("false belief", "false-belief").replace(
        "true belief", "true-belief")


def _is_proportion(key: str) -> bool:
    return key in _PROPORTIONS or key.startswith("accuracy_by_depth.")


def _value(x: Any, proportion: bool) -> str:
    if isinstance(x, str):
        return x
    f = number(x)
    if f is None:
        return MISSING
    return pct(f) if proportion else f"{f:.3f}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class CompareRow:
    agent: str
    metric: str
    cells: tuple[str, ...]
    """In COMPARE_COLUMNS order (the change cut to CHANGE_WIDTH)."""
    detail: str
    """The whole row for the detail line: the change, its interval and test, or the reason."""
    direction: int = 0
    """+1 a change whose interval excludes 0 upwards, -1 downwards, 0 otherwise."""


@dataclass(frozen=True)
class CompareView:
    title: str
    notes: tuple[str, ...]
    rows: tuple[CompareRow, ...]


def _row(agent: str, key: str, d: Mapping[str, Any], first: bool) -> CompareRow:
    proportion = _is_proportion(key)
    label = metric_label(key)
    a, b = _value(d.get("a"), proportion), _value(d.get("b"), proportion)
    if number(d.get("difference")) is None:
        change = str(d.get("reason") or MISSING)
        n = MISSING
        detail = f"{agent} · {label}: {a} → {b}; no change to show: {change}"
        direction = 0
    else:
        change = difference_text(d, proportion=proportion)
        n = f"{d.get('n_a', MISSING)} / {d.get('n_b', MISSING)}"
        how = ", ".join(str(x) for x in (d.get("interval"), d.get("test")) if x)
        detail = (f"{agent} · {label}: {a} → {b}, change {change}"
                  + (f" ({how})" if how else "")
                  + f", p {p_text(d.get('p'))}, p (Holm) {p_text(d.get('p_holm'))}"
                  + (f"; {d['note']}" if d.get("note") else "")
                  + (f"; {d['reason']}" if d.get("reason") else ""))
        ci = d.get("ci") or (None, None)
        lo, hi = (number(x) for x in ci) if len(ci) == 2 else (None, None)
        direction = 1 if lo is not None and lo > 0 else -1 if hi is not None and hi < 0 else 0
    return CompareRow(
        agent, key,
        (agent if first else "", label, _cut(a, VALUE_WIDTH), _cut(b, VALUE_WIDTH),
         _cut(change, CHANGE_WIDTH), n, p_text(d.get("p_holm"))),
        detail, direction,
    )


def compare_view(cmp: Mapping[str, Any]) -> CompareView:
    """The comparison of two runs (:func:`reports.render.compare`): one row per metric of
    every agent in both runs; notes for suite or held-out differences, agents in one run only,
    validity and settings that changed."""
    ra, rb = cmp.get("run_a") or {}, cmp.get("run_b") or {}
    notes = [f"Differences are {cmp.get('direction', 'b − a')} (A = {ra.get('id')}, B = "
             f"{rb.get('id')}); {cmp.get('interval', '')}."]
    notes += [str(n) for n in cmp.get("notes") or ()]
    if cmp.get("only_in_a") or cmp.get("only_in_b"):
        notes.append(f"Only in A: {', '.join(cmp.get('only_in_a') or ()) or MISSING}; "
                     f"only in B: {', '.join(cmp.get('only_in_b') or ()) or MISSING}.")
    rows: list[CompareRow] = []
    for name, ag in (cmp.get("agents") or {}).items():
        valid = ag.get("valid") or [None, None]
        if valid[0] != valid[1]:
            notes.append(f"{name}: validity changed from {valid[0]} to {valid[1]}")
        for k, v in sorted((ag.get("spec_changes") or {}).items()):
            notes.append(f"{name}: {k} changed from {v[0]!r} to {v[1]!r}")
        for i, (key, d) in enumerate((ag.get("metrics") or {}).items()):
            rows.append(_row(name, key, d, i == 0))
    if not rows:
        notes.append("No agent is in both runs: nothing to compare.")
    return CompareView(
        f"Compare {ra.get('id')} (A, suite {ra.get('suite')}) → {rb.get('id')} (B, suite "
        f"{rb.get('suite')})",
        tuple(notes),
        tuple(rows),
    )
