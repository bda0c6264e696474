"""What an agent's answers cost (``cost``: tokens and latency per correct answer) and the API
errors left out of its accuracy (``api_errors``)."""

from __future__ import annotations

from collections import Counter

from reports._data import depth_sort_key
from reports._outcomes import NO_ANSWER, error_kind, outcome_of
from reports.model import ApiErrors, Cost, CostRow, ErrorCause
from reports.sections._design import BoolArray
from reports.sections._inputs import AgentInputs, Measured

__all__ = ["cost_sections"]


def cost_sections(inp: AgentInputs) -> Measured:
    """``cost`` and ``api_errors``."""
    return Measured({"cost": _cost(inp), "api_errors": _api_errors(inp)})


def _cost(inp: AgentInputs) -> Cost:
    rd, c = inp.design, inp.cols
    it = inp.data.items

    def row(m: BoolArray) -> CostRow:
        k = int(c.cor[m].sum())
        tok = float(c.tokens[m].sum())
        lat = float(c.latency[m].sum())
        return CostRow.of(
            {
                "n_trials": int(m.sum()),
                "n_correct": k,
                "tokens": tok,
                "latency_s": lat,
                "tokens_per_correct": tok / k if k else None,
                "latency_s_per_correct": lat / k if k else None,
                "interval": "none",
            }
        )

    by_depth = {}
    for label in rd.nt_all_depths:
        m = c.has & rd.nt & rd.is_("depth", label)
        if m.any():
            by_depth[label] = row(m)
    by_family = {}
    for fam in sorted(set(it.family[c.has].tolist())):
        by_family[fam] = row(c.has & rd.is_("family", fam))
    return Cost.of(
        {
            "by_depth": by_depth,
            "by_family": by_family,
            "total": row(c.has),
            "definition": "tokens (in + out) and latency of every trial, API errors included, "
            "divided by the number of correct answers",
        }
    )


def _api_errors(inp: AgentInputs) -> ApiErrors:
    rd, c = inp.design, inp.cols
    it = inp.data.items
    bad = c.has & ~c.ok
    statuses = Counter(str(s) for s in c.status[bad].tolist())
    by_family = Counter(str(f) for f in it.family[bad].tolist())
    by_depth = Counter(str(d) for d in it.depth[bad & rd.nt].tolist())
    tr = inp.data.trials
    unread = [
        r
        for r in c.rows[c.has & c.ok]
        if r >= 0 and outcome_of(tr.status[r], tr.answer_json[r], None) == "unparsed"
    ]
    why = (tr.details(unread[0]).get("parse_problem") or NO_ANSWER) if unread else None
    return ApiErrors.of(
        {
            "causes": _causes([tr.error[r] for r in c.rows[bad] if r >= 0]),
            "unparsed": len(unread),
            "unparsed_example": None if why is None else _one_line(str(why)),
            "count": int(bad.sum()),
            "trials": int(c.has.sum()),
            "by_status": dict(statuses),
            "by_family": dict(by_family),
            "by_depth": dict(sorted(by_depth.items(), key=lambda kv: depth_sort_key(kv[0]))),
            "excluded_from_accuracy": True,
            "ok_without_score": int(c.unscored.sum()),
            "ok_without_score_note": "ok trials without a score are counted as wrong",
        }
    )


CAUSES = 3
"""Causes of an agent's API errors its profile keeps."""

EXAMPLE_CHARS = 200
"""Characters of a cause's example message kept."""


def _causes(errors: list[str | None]) -> list[ErrorCause]:
    """The commonest :data:`CAUSES` causes of ``errors`` (the stored messages of the agent's
    API errors, ``kind: message``), each with its count and first message, on one line and cut
    to :data:`EXAMPLE_CHARS` characters."""
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for error in errors:
        kind, message = error_kind(error)  # as `mindledger trials` names its cause
        counts[kind] += 1
        if kind not in example:
            example[kind] = _one_line(message) or "no message"
    return [
        ErrorCause(kind=kind, count=n, example=example[kind])
        for kind, n in counts.most_common(CAUSES)
    ]


def _one_line(text: str) -> str:
    """``text`` on one line, cut to :data:`EXAMPLE_CHARS` characters."""
    line = " ".join(text.split())
    return line if len(line) <= EXAMPLE_CHARS else line[: EXAMPLE_CHARS - 1] + "…"
