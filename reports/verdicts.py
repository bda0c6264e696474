"""The verdict: what a run says about each agent under test, in one or two sentences, computed
once from the typed profile and rendered first by every door (Markdown, HTML, the dashboard's
run screen, ``quickstart``'s closing lines).

For each agent under test (in :func:`reports.present.role_order`): its validity and why, its
headline figures with their intervals (D50, false-belief accuracy, leakage resistance; skill S
and the depth signals K_B / K_L when the run measured them), then its difference from its
control and its largest module credit, each judged from its 95% interval — never from the
point estimate alone:

- **clearly above** / **clearly below**: the interval lies wholly above / below zero (or
  chance, for false-belief accuracy);
- **no detectable difference**: the interval covers zero;
- **cannot be judged at this size**: the figure has no interval (its n is below the minimum).

A contrast that is zero by construction (the control or the ablated variant gave the same
answer on every item both answered: a command agent's derived control is the same program, a
module whose switch changes nothing) is said once, as such (:func:`contrast_note`). Its
control and ablation variants follow the agent (an INVALID one is named after it, never
first); then one line per reference agent, saying whether the suite diagnosed it as designed
(:func:`reports.profile.diagnose_references`); then what cannot be estimated at this run's
size, and how S is measured when it was not, each said once.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mindledger.words import counted
from reports._json import JsonValue
from reports.present import (
    INVALID,
    agent_headline,
    commonest_cause,
    d50_text,
    depth_text,
    difference_text,
    every_trial_failed,
    most_answers_unread,
    most_trials_failed,
    number,
    pct,
    proportion_text,
    role_order,
    skill_measured,
    small_n_said_once,
)

if TYPE_CHECKING:
    from reports.model import AgentProfile, RunProfile

__all__ = [
    "CLEARLY_ABOVE",
    "CLEARLY_BELOW",
    "NOT_JUDGED",
    "NO_DIFFERENCE",
    "REFERENCES_HEADING",
    "AgentVerdict",
    "ReferenceVerdict",
    "Verdict",
    "contrast_note",
    "judge",
    "verdict",
]

CLEARLY_ABOVE = "clearly above"
CLEARLY_BELOW = "clearly below"
NO_DIFFERENCE = "no detectable difference"
NOT_JUDGED = "cannot be judged at this size"

CONTRAST_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("false_belief_accuracy", "false-belief accuracy", True),
    ("d50", "D50", False),
    ("leakage_resistance", "leakage resistance", True),
    ("games_accuracy", "games accuracy", True),
    ("applied_gap", "applied-ToM gap", True),
)
"""The contrast metrics a verdict may quote, in order of preference: (key, label, proportion).
It quotes the first one the contrast has a difference for."""

_SMALL_N = re.compile(r"at least (\d+) are needed")

REFERENCES_HEADING = "References (scripted reasoners that check the suite itself):"


# -- judging a figure from its interval -----------------------------------------------------


def _interval(d: Mapping[str, Any]) -> tuple[float | None, float | None] | None:
    """The 95% interval of a block when it has one (an end may be open: None)."""
    ci = d.get("ci")
    if d.get("status") == "not_estimable" or not isinstance(ci, Sequence) or len(ci) != 2:
        return None
    lo, hi = (number(x) for x in ci)
    return None if lo is None and hi is None else (lo, hi)


def judge(d: Mapping[str, Any], *, against: float = 0.0) -> str:
    """Where a figure lies against ``against`` (0 for a difference, chance for an accuracy),
    from its interval: :data:`CLEARLY_ABOVE`, :data:`CLEARLY_BELOW`, :data:`NO_DIFFERENCE`;
    :data:`NOT_JUDGED` when it has no interval for its size; ``"cannot be judged (reason)"``
    when it has none for another reason."""
    ci = _interval(d)
    if ci is None:
        reason = str(d.get("reason") or "")
        if not reason or _SMALL_N.search(reason):
            return NOT_JUDGED
        return f"cannot be judged ({reason})"
    lo, hi = ci
    if lo is not None and lo > against:
        return CLEARLY_ABOVE
    if hi is not None and hi < against:
        return CLEARLY_BELOW
    return NO_DIFFERENCE


# -- contrasts that are zero by construction -------------------------------------------------


def _block(block: Any) -> Mapping[str, JsonValue]:
    if block is None:
        return {}
    if hasattr(block, "model_dump"):  # the keys it was given, as a profile's JSON holds them
        return block.model_dump(by_alias=True, exclude_unset=True)  # type: ignore[no-any-return]
    return block if isinstance(block, Mapping) else {}


def contrast_note(block: Any, *, agent: str = "", command: bool = False) -> str:
    """One line saying that a contrast (``minus_control`` or one ``ablation_credit`` block)
    is zero by construction, in place of its table of zeros; ``""`` when it is not (or the
    profile predates the ``same_answers`` count). ``command``: the agent is a command agent
    whose derived control is the same program (said as the likely cause)."""
    b = _block(block)
    same = _block(b.get("same_answers"))
    shared, identical = same.get("shared"), same.get("identical")
    if not b.get("available") or not isinstance(shared, int) or not shared or identical != shared:
        return ""
    other = b.get("control") or b.get("ablation_agent") or "the other agent"
    items = f"all {shared} items both answered" if shared > 1 else "the one item both answered"
    who = f"{agent}" if agent else "the agent"
    text = (
        f"{other} gave the same answer as {who} on {items}, so every difference between "
        "them is zero by construction, not a measurement"
    )
    if "control" in b:
        if command and other == f"{agent}-control":
            text += (
                " (a command agent's derived control is the same program, sent a minimal "
                f"system prompt: declare `agents.{agent}.control` to compare with a bare "
                "model)"
            )
    else:
        text += " (switching the module off changed none of its answers)"
    return text + "."


# -- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentVerdict:
    """What the run says about one agent under test."""

    agent: str
    valid: bool | None
    figures: str
    """Its validity and why, then its headline figures with their intervals."""
    contrasts: str
    """Its difference from its control and its largest module credit, judged ("" if none)."""
    variants: str
    """Its control and ablation variants that are INVALID, after it ("" if none)."""

    def sentences(self) -> tuple[str, ...]:
        return tuple(s for s in (self.figures, self.contrasts, self.variants) if s)


@dataclass(frozen=True)
class ReferenceVerdict:
    """One reference agent: whether the suite diagnosed it as designed."""

    agent: str
    policy: str
    as_expected: bool | None
    """None when its policy has no expected diagnosis to check."""
    text: str


@dataclass(frozen=True)
class Verdict:
    """The verdict of a run, rendered first by every door."""

    agents: tuple[AgentVerdict, ...]
    references: tuple[ReferenceVerdict, ...]
    others: tuple[str, ...]
    """Agents that are neither under test nor references of it (a control or an ablation
    whose agent is not in the run), one line each."""
    notes: tuple[str, ...]
    """What cannot be estimated at this run's size, and how S is measured, said once."""
    unfinished: str | None = None
    """Said first when the run is not complete (:func:`unfinished_run`): every figure after
    it rests on the trials stored so far."""

    def paragraphs(self) -> list[str]:
        """The verdict as plain text, one paragraph a line, in order: that the run is not
        finished (if it is not), each agent under test (its sentences in one paragraph), the
        other agents, the references (a heading, then one line each, indented), the notes."""
        out = [self.unfinished] if self.unfinished else []
        out += [" ".join(a.sentences()) for a in self.agents]
        out += list(self.others)
        if self.references:
            out.append(REFERENCES_HEADING)
            out += [f"  {r.text}" for r in self.references]
        out += list(self.notes)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "agents": [
                {
                    "agent": a.agent,
                    "valid": a.valid,
                    "figures": a.figures,
                    "contrasts": a.contrasts,
                    "variants": a.variants,
                }
                for a in self.agents
            ],
            "references": [
                {"agent": r.agent, "policy": r.policy, "as_expected": r.as_expected, "text": r.text}
                for r in self.references
            ],
            "others": list(self.others),
            "notes": list(self.notes),
            "unfinished": self.unfinished,
            "paragraphs": self.paragraphs(),
        }


def verdict(profile: Mapping[str, Any] | RunProfile) -> Verdict:
    """The verdict of a profile (parsed against the published schema when given as JSON)."""
    from reports.model import RunProfile

    prof = profile if isinstance(profile, RunProfile) else RunProfile.of(profile)
    order = sorted(prof.agents, key=lambda n: role_order(prof.agents[n].role, n))
    under_test = [n for n in order if prof.agents[n].role == "agent"]
    with small_n_said_once() as tally:
        agents = tuple(_agent_verdict(prof, n) for n in under_test)
    others = tuple(
        _other_line(n, prof.agents[n])
        for n in order
        if prof.agents[n].role in ("control", "ablation")
        and prof.agents[n].base_agent not in under_test
    )
    references = tuple(
        _reference_verdict(n, prof.agents[n]) for n in order if prof.agents[n].role == "reference"
    )
    notes = []
    if tally:
        notes.append(_small_n_note(prof, under_test, tally.minimum or 0, tally.span()))
    if not skill_measured(prof) and any(
        every_trial_failed(prof.agents[n]) is None for n in under_test
    ):
        notes.append(_skill_note(prof.agents[under_test[0]]))
    return Verdict(agents, references, others, tuple(notes), unfinished_run(prof))


def unfinished_run(prof: RunProfile) -> str | None:
    """``"Run R is not finished (interrupted): 4 of its 26 trials are stored, and every figure
    here rests on those alone. ..."`` when the run is not complete (a report read while it
    runs, or of a run whose process was stopped: it stays ``running`` until resumed); None
    when it is complete (or its status is unknown)."""
    run = prof.run
    if run.status in (None, "complete"):
        return None
    expected = run.n_items * len(prof.agents)
    stored = f"{run.n_trials} of its {expected}" if expected else str(run.n_trials)
    resume = (
        f" `mindledger run --resume {run.id}` finishes it"
        + (" if its process has stopped." if run.status == "running" else ".")
    )
    return (
        f"Run {run.id} is not finished ({run.status}): {stored} trials are stored, and every "
        f"figure here rests on those alone.{resume}"
    )


def _validity_text(a: AgentProfile) -> str:
    """``"valid (true-belief controls 98.0% [..] n=200, R0 reality checks …; 90% needed)"``,
    ``"INVALID: …"`` or ``"unchecked: …"``."""
    v = a.validity
    threshold = pct(v.threshold, 0)
    checks = [f"true-belief controls {proportion_text(a.true_belief_control_accuracy)}"]
    if a.reality_check.n:
        checks.append(f"R0 reality checks {proportion_text(a.reality_check)}")
    if a.valid is True:
        return f"valid ({' and '.join(checks)}; {threshold} needed)"
    if a.valid is False:
        failed = [
            c
            for c, block in zip(
                checks, (a.true_belief_control_accuracy, a.reality_check), strict=False
            )
            if (number(block.value) or 0.0) < v.threshold
        ]
        return (
            f"{INVALID}: {' and '.join(failed or checks)}, below the {threshold} required, "
            "so its false-belief figures do not count"
        )
    return "validity unchecked: the run has no true-belief controls for it"


def _figures(name: str, a: AgentProfile) -> str:
    h = agent_headline(name, a)
    if a.valid is False:
        # the figures are named, but as what they are: not counted
        figures = (
            f"figures, not counted: D50 {d50_text(a.d50)}, false-belief accuracy "
            f"{proportion_text(a.false_belief_accuracy)}, leakage resistance "
            f"{proportion_text(a.leakage_resistance)}"
        )
    else:
        fb = proportion_text(a.false_belief_accuracy)
        chance = number(a.d50.chance)
        if chance is not None and a.false_belief_accuracy.value is not None:
            said = judge(a.false_belief_accuracy.model_dump(), against=chance)
            joint = " from" if said == NO_DIFFERENCE else ""
            fb += f", {said}{joint} the {pct(chance, 0)} of chance"
        figures = (
            f"D50 {h.d50}; false-belief accuracy {fb}; leakage resistance {h.leakage_resistance}"
        )
    if a.agent_prediction_skill.available:
        figures += f"; skill S {h.skill}"
    figures += _depth_signals(a)
    return f"{name} (agent under test) is {_validity_text(a)}. Its {figures}."


def _depth_signals(a: AgentProfile) -> str:
    """``"; K_B 3.00 [2.6, 3.4] n=40, K_L …"`` when the level-k games measured them; an
    unidentifiable level says so (issue 24 item 6: read defensively, the model may not have
    the fields)."""
    s = a.depth_signals
    if s is None or not s.available:
        return ""
    parts = []
    for key in ("K_B", "K_L"):
        est = getattr(s, key, None)
        if est is None:
            continue
        if getattr(est, "identifiable", None) is False:
            why = getattr(est, "reason", None)
            parts.append(f"{key} not identifiable" + (f" ({why})" if why else ""))
        elif number(est.value) is not None:
            parts.append(f"{key} {depth_text(est)}")
    return ("; " + ", ".join(parts)) if parts else ""


def _contrast_phrase(block: Mapping[str, Any]) -> str | None:
    """``"false-belief accuracy +25.0 pts [+13.5, +35.2]: clearly above"`` from the first
    metric of :data:`CONTRAST_METRICS` with a difference; None when none has one."""
    metrics = _block(block.get("metrics"))
    for key, label, proportion in CONTRAST_METRICS:
        d = _block(metrics.get(key))
        if number(d.get("difference")) is None:
            continue
        return f"{label} {difference_text(d, proportion=proportion, with_n=True)}: {judge(d)}"
    return None


def _largest_credit(
    credits: Mapping[str, Mapping[str, JsonValue]],
) -> tuple[str, Mapping[str, JsonValue]] | None:
    """The module whose credit on the first quotable metric is largest in size, preferring
    credits with an interval; None when no module has one."""
    best: tuple[int, float, str, Mapping[str, JsonValue]] | None = None
    for module, block in credits.items():
        metrics = _block(block.get("metrics"))
        for key, _, _ in CONTRAST_METRICS:
            d = _block(metrics.get(key))
            diff = number(d.get("difference"))
            if diff is None:
                continue
            rank = (1 if _interval(d) is not None else 0, abs(diff), module, block)
            if best is None or rank[:2] > best[:2]:
                best = rank
            break
    return None if best is None else (best[2], best[3])


def _contrasts(prof: RunProfile, name: str, a: AgentProfile) -> str:
    command = a.adapter == "command"
    out = []
    judged = False
    mc = _block(a.minus_control)
    zero = contrast_note(mc, agent=name, command=command)
    if zero:
        out.append(zero)
    elif mc.get("available"):
        phrase = _contrast_phrase(mc)
        if phrase:
            judged = True
            out.append(f"Against its control {mc.get('control')}: {phrase}.")
    elif mc.get("reason"):
        out.append(f"No contrast with a control: {mc['reason']}.")
    credits = {m: _block(b) for m, b in a.ablation_credit.items()}
    unchanged = [m for m, b in credits.items() if contrast_note(b, agent=name)]
    if unchanged:
        out.append(_unchanged_modules(name, unchanged, credits))
    rest = {m: b for m, b in credits.items() if m not in unchanged and b.get("available")}
    largest = _largest_credit(rest)
    if largest is not None:
        module, block = largest
        phrase = _contrast_phrase(block)
        which = "Its largest module credit" if len(rest) > 1 else "Module credit"
        if phrase:
            judged = True
            out.append(f"{which}: {module} ({block.get('direction')}), {phrase}.")
    if a.valid is False and judged:
        out.append("None of these is evidence while it is INVALID.")
    return " ".join(out)


def _unchanged_modules(name: str, modules: Sequence[str], credits: Mapping[str, Any]) -> str:
    if len(modules) == 1:
        return contrast_note(credits[modules[0]], agent=name).replace(
            "switching the module off", f"switching {modules[0]} off"
        )
    shared = {int(number(_block(credits[m].get("same_answers")).get("shared")) or 0)
              for m in modules}
    items = f"all {shared.pop()} items" if len(shared) == 1 else "every item"
    return (
        f"Switching off {_and(modules)} changed none of its answers ({items} the same): their "
        "credit is zero by construction, not a measurement."
    )


def _variants(prof: RunProfile, name: str) -> str:
    """Its control and ablation variants whose every trial failed (no contrast with them can
    be made: said with the command that shows why), then those that failed the controls."""
    mine = [
        (n, prof.agents[n])
        for n in sorted(prof.agents, key=lambda n: role_order(prof.agents[n].role, n))
        if prof.agents[n].base_agent == name and prof.agents[n].role in ("control", "ablation")
    ]
    failed = {n: every_trial_failed(v) for n, v in mine}
    said = [
        f"Its {'control' if v.role == 'control' else 'ablation variant'} {n} has no figures: "
        f"its run failed, {failed[n]}{commonest_cause(v)}; `mindledger trials {prof.run.id} "
        f"--agent {n} --status error` shows what went wrong."
        for n, v in mine
        if failed[n] is not None
    ]
    invalid = [(n, v) for n, v in mine if v.valid is False and failed[n] is None]
    if not invalid:
        return " ".join(said)
    controls = [n for n, v in invalid if v.role == "control"]
    variants = [n for n, v in invalid if v.role == "ablation"]
    who = []
    if controls:
        who.append(("its control " if len(controls) == 1 else "its controls ") + _and(controls))
    if variants:
        who.append(
            ("its ablation variant " if len(variants) == 1 else "its ablation variants ")
            + _and(variants)
        )
    checks = {_validity_text(v) for _, v in invalid}
    why = ""
    if len(checks) == 1:
        why = " (" + checks.pop().removeprefix(f"{INVALID}: ").split(", below")[0] + ")"
    return " ".join([*said, f"Also INVALID by the same rule: {' and '.join(who)}{why}."])


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _agent_verdict(prof: RunProfile, name: str) -> AgentVerdict:
    a = prof.agents[name]
    failed = every_trial_failed(a)
    if failed is not None:  # no figure to give: said once, with where to look
        return AgentVerdict(
            name,
            a.valid,
            f"{name} (agent under test) has no figures: its run failed, {failed}"
            f"{commonest_cause(a)}. "
            f"`mindledger trials {prof.run.id} --agent {name} --status error` shows what "
            "each one was asked and what went wrong.",
            "",
            "",
        )
    figures = _figures(name, a)
    first = _said_first(prof.run.id, name, a)
    if first:  # every figure after it rests on, or is explained by, what it says
        figures = f"{first} It is {figures.removeprefix(f'{name} (agent under test) is ')}"
    return AgentVerdict(name, a.valid, figures, _contrasts(prof, name, a), _variants(prof, name))


def _said_first(run_id: str, name: str, a: AgentProfile) -> str:
    """What an agent's verdict says before its figures: that most of its trials were API
    errors (its figures rest on the few left), else that most of its answers could not be read
    (each counted wrong, its figures say how it replies); ``""`` when neither."""
    see = f"`mindledger trials {run_id} --agent {name} --status"
    mostly = most_trials_failed(a)
    if mostly is not None:
        errors, trials = mostly
        return (
            f"{name} (agent under test): {errors} of its {trials} trials were API errors"
            f"{commonest_cause(a)}, so what follows rests on the "
            f"{counted(trials - errors, 'other')} ({see} error` shows what went wrong)."
        )
    unread = most_answers_unread(a)
    if unread is None or a.api_errors is None:
        return ""
    n, answered = unread
    which = (
        f"none of its {answered} answers could be read"
        if n == answered
        else f"{n} of its {answered} answers could not be read"
    )
    why = a.api_errors.unparsed_example
    return (
        f"{name} (agent under test): {which}{f' ({why})' if why else ''}, and each counts as "
        "wrong, so its figures say more about how it replies than about what it knows "
        f"({see} unparsed` shows them)."
    )


def _other_line(name: str, a: AgentProfile) -> str:
    return f"{name} ({a.role}, its agent not in this run) is {_validity_text(a)}."


_DIAGNOSED = re.compile(
    r"^(oracle|random|not-reality|reality-leak|depth-capped:?\d+|"
    r"level:\d+|believer:\d+)$"
)


def _reference_verdict(name: str, a: AgentProfile) -> ReferenceVerdict:
    from reports.diagnosis import diagnose_agent

    policy = str(a.spec.get("policy") or name.removeprefix("ref:"))
    evidence = _reference_evidence(policy, a)
    if not _DIAGNOSED.match(policy):
        valid = {True: "valid", False: INVALID, None: "validity unchecked"}[a.valid]
        return ReferenceVerdict(
            name, policy, None, f"{policy}: no expected diagnosis to check ({valid})"
        )
    problems = diagnose_agent(name, a)
    if not problems:
        return ReferenceVerdict(name, policy, True, f"{policy}: diagnosed as expected ({evidence})")
    why = "; ".join(p.split("): ", 1)[-1] for p in problems)
    return ReferenceVerdict(name, policy, False, f"{policy}: NOT diagnosed as designed — {why}")


def _reference_evidence(policy: str, a: AgentProfile) -> str:
    """The figure that shows what a reference is: its D50, its leakage, its level, or that
    the controls mark it invalid."""
    if policy in ("random", "not-reality"):
        return "marked INVALID by the controls"
    if policy == "reality-leak":
        return f"leakage resistance {pct(a.leakage_resistance.value)}"
    if policy.startswith(("level:", "believer:")) and a.depth_signals is not None:
        s = a.depth_signals
        return (
            ", ".join(
                f"{k} {number(getattr(s, k).value):g}"
                for k in ("K_B", "K_L")
                if getattr(s, k, None) is not None and number(getattr(s, k).value) is not None
            )
            or "no level resolved"
        )
    return f"D50 {d50_text(a.d50, with_ci=False)}"


def _small_n_note(prof: RunProfile, under_test: Sequence[str], minimum: int, span: str) -> str:
    suite = prof.run.suite
    fix = "run the `baseline` suite" if suite != "baseline" else "a larger run gives them"
    fb = [prof.agents[n].false_belief_accuracy.n for n in under_test]
    if fb and fb[0] is not None and fb[0] < minimum:
        return (
            f"This run has {fb[0]} false-belief items per agent; intervals need ≥ {minimum}: {fix}."
        )
    return (
        f"Some figures rest on fewer items than an interval needs ({span}; intervals "
        f"need ≥ {minimum}): {fix}."
    )


def _skill_note(a: AgentProfile) -> str:
    s = a.agent_prediction_skill
    why = s.reason or "no matrix run accompanies this run"
    return (
        f"Agent-prediction skill S is not measured: {why}. The daemon measures it beside "
        "each nightly suite (`[schedule.matrix]`); `mindledger matrix --agent NAME` "
        "measures it on its own."
    )
