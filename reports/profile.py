"""The recursive-reasoning profile of every agent in a run.

:func:`build_profile` reads a run (:func:`reports._data.load_run`) and returns its
:class:`~reports.model.RunProfile` (``.to_json()`` is the JSON form); :func:`profile_from_data`
is the pure part.

What is counted where (the baseline tests: docs/architecture.md, "Where the specifications
come from"):

- **R0 is the reality check** (``reality_check``): its own row, outside false-belief accuracy,
  D50 and leakage resistance. It must be passed (>= 90%) as the true-belief controls must.
- **B1** (the depth curve: items whose ``block`` is B1, or inferred as B1) alone gives accuracy by
  depth, false-belief accuracy, D50 and leakage resistance, at R1 and deeper.
- **B2** (the length sweep) is reported as accuracy by story length, and the degradation slope is
  the logistic fit of false-belief correctness on depth *and* length over B1 and B2 together,
  which separates the two.
- **B4** (applied questions) gives the applied gap: belief − behaviour accuracy on the same
  stories, overall and per depth.
- The R2-self own-belief leak, and accuracy by mechanism and by surface form, are reported with
  their n and interval.
- Companion questions (``selection == "companion"``) only serve joint accuracy.
- **A/B/C against the run's own agents** (``play`` and ``C-llm`` items): no trial of theirs is
  right or wrong on its own, so they are in no accuracy, calibration or unscored count; each
  agent's C-llm predictions are scored against the other agents' plays of the same scenario
  (:mod:`reports._population`) in ``games.abc.c_llm``, apart from C against scripted bots.

Methods (the profile's ``intervals.kinds`` is the glossary; :mod:`reports._estimates` the rules):
proportions get Wilson intervals (at the design-effect-adjusted n where trials come in clusters);
paired contrasts of proportions (agent − control, full − ablated, an agent's A − B and B − C)
Newcombe's paired interval and the exact McNemar test; paired means a t interval and the
sign-flip permutation test; D50 a cluster-bootstrap percentile interval (strata of fewer than
two clusters merged with their siblings) and, for a contrast, the paired bootstrap interval and
a label-permutation test. A figure whose n cannot carry a claim keeps its value and n, has
``status: "not_estimable"`` and a ``reason``, and is left out of the Holm family (every testable
contrast in the report).

Every figure carries its n. API errors are excluded from accuracy and counted; an ``ok`` trial
without a score counts as wrong (an unparseable answer is wrong, never dropped).

Anti-inflation: an agent whose true-belief control accuracy (or R0 reality-check accuracy)
is below 90% is marked ``valid: false`` and its first notice says its false-belief scores are
invalid; a run on held-out seeds is marked as such, and its seed is withheld (``run.seed`` None,
``run.seed_withheld`` true) unless an operator asks with ``reveal_held_out=True``: the seed
regenerates the held-out items. The profile carries no item seeds or parameters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.reader import Readable, RunAgent
from reports._data import RunData, load_run
from reports._disclosure import disclosed_agent, disclosed_run
from reports._estimates import MIN_N, MetricSample
from reports.diagnosis import diagnose_references
from reports.matrix_runs import accompanying_matrix
from reports.model import (
    PROFILE_SCHEMA,
    AgentProfile,
    Design,
    Intervals,
    RunProfile,
    Skill,
    json_ready,
)
from reports.sections import (
    D50_MIN_PER_DEPTH,
    LEVEL,
    RunDesign,
    RunInputs,
    agent_sections,
    run_inputs,
)
from reports.sections.contrasts import AgentContrasts, PairedContrasts, paired_contrasts
from reports.sections.validity import TRUE_BELIEF_THRESHOLD

if TYPE_CHECKING:  # the matrix's modules load only for a run that has one
    from reports.matrix_model import MatrixSummary

__all__ = [
    "PROFILE_SCHEMA",
    "TRUE_BELIEF_THRESHOLD",
    "Analysis",
    "analyse",
    "build_profile",
    "diagnose_references",
    "profile_from_data",
]

SAFE_SPEC_KEYS = ("adapter", "policy", "model", "ablated", "modules", "depth")

INTERVALS = {
    "wilson-95": "Wilson score interval, 95%: one trial per cluster (independent trials).",
    "wilson-strat-95": (
        "Wilson score interval, 95%, at the stratification-adjusted sample size: the proportion "
        "pools cells whose sizes the design fixes (depth x belief x block), so its variance is "
        "the stratified one (each cell's proportion taken with one success and one failure "
        "added), used where it is below the binomial variance."
    ),
    "wilson-deff-95": (
        "Wilson score interval, 95%, at the design-effect-adjusted sample size (Kish's n / deff, "
        "deff from the ratio-estimator variance over clusters, at least 1) with the t quantile "
        "on clusters − 1 degrees of freedom: trials that share a cluster (a game cell) are not "
        "independent."
    ),
    "newcombe-paired-95": (
        "Newcombe's (1998) square-and-add interval for a difference of paired proportions (the "
        "same items answered by both agents, or the belief and behaviour question of one "
        "story), with Altman et al.'s corrected correlation; the test is the exact McNemar test "
        "on the discordant pairs."
    ),
    "paired-t-95": (
        "t interval, 95%, of the mean paired difference over independent units (items, or "
        "clusters of items); the test is the two-sided sign-flip permutation test over the same "
        "units (exact up to 16 non-zero differences, else Monte Carlo: p >= 1/(B+1))."
    ),
    "bootstrap-percentile-95": (
        "Percentile interval of the statistic over cluster-bootstrap replicates (whole clusters "
        "resampled within the design's strata; a stratum of fewer than two clusters is merged "
        "with its siblings); an end outside the tested depths is reported as a bound (None plus "
        "a note)."
    ),
    "paired-bootstrap-percentile-95": (
        "Percentile interval of the difference of two agents' D50s over shared cluster-bootstrap "
        "resamples of the items both answered; the test swaps the two agents' answers item by "
        "item at random (a permutation test, p >= 1/(B+1))."
    ),
    "cluster-bootstrap-95": (
        "Cluster bootstrap percentile interval, 95%: whole cells resampled with replacement "
        "within the design's strata (strata of fewer than two clusters merged with their "
        "siblings)."
    ),
    "normal-95": "Normal approximation, mean ± 1.96·sd/√n (means of non-binary quantities).",
    "t-95": "t interval, 95%, of a mean over independent units.",
    "wald-95": "Wald interval from the model-based standard errors of a logistic fit "
               "(statsmodels GLM).",
    "wald-cluster-robust-95": "Wald interval with cluster-robust standard errors (statsmodels).",
    "none": "Descriptive totals; no interval.",
}


def build_profile(
    store: Readable,
    run_id: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
) -> RunProfile:
    """The profile of every agent in run ``run_id`` (see the module docstring).

    ``seed`` is the bootstrap's seed, not the run's. Each agent's skill S comes from the
    matrix run that accompanies this run, if any (:func:`reports.matrix_runs.
    accompanying_matrix`). A held-out run's own seed is withheld
    (``run.seed`` None, ``run.seed_withheld`` true) unless ``reveal_held_out`` — for operators
    only: the seed regenerates the held-out items.

    Raises :class:`~mindledger.errors.NotFoundError` for an unknown run id.
    """
    data = load_run(store, run_id)
    matrix = None
    matrix_id = accompanying_matrix(store, run_id)
    if matrix_id is not None:  # the matrix's statistics load only for a run that has one
        from ledger.store import Store
        from reports.matrix_summary import stored_summary

        if not isinstance(store, Store):
            raise TypeError(f"run {run_id!r} has a matrix run beside it ({matrix_id}): its "
                            "profile is built from a Store, not a Reader")
        matrix = stored_summary(store, matrix_id, n_boot=n_boot, stats_seed=seed)
    profile = analyse(
        data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out, matrix=matrix
    ).profile
    from reports.self_forecast import attach_self_forecasts

    return attach_self_forecasts(store, profile)


def profile_from_data(
    data: RunData, *, seed: int = 0, n_boot: int = 2000, reveal_held_out: bool = False
) -> RunProfile:
    """The profile of an already loaded run (pure); ``reveal_held_out`` as in
    :func:`build_profile`."""
    return analyse(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal_held_out).profile


@dataclass(frozen=True)
class Analysis:
    """Everything computed for one run: the profile and what comparisons need.

    ``metric_samples[agent][metric]`` (:class:`~reports._estimates.MetricSample`) holds the
    headline figures with what :func:`reports.comparison.compare_runs` needs to put intervals on
    changes between runs (counts for proportions, bootstrap replicates for the rest).
    """

    profile: RunProfile
    metric_samples: Mapping[str, Mapping[str, MetricSample]]


def analyse(
    data: RunData,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
    matrix: MatrixSummary | None = None,
) -> Analysis:
    """Run every computation for one run; ``.profile`` is the :class:`RunProfile` (a held-out
    run's seed withheld unless ``reveal_held_out``). ``matrix``: the prediction matrix that
    accompanies the run (:func:`reports.matrix_summary.stored_summary`), which gives each
    agent's skill S."""
    run = run_inputs(data, seed=seed, B=n_boot)
    samples: dict[str, Mapping[str, MetricSample]] = {}
    sections: dict[str, Mapping[str, Any]] = {}
    for ai, a in enumerate(run.agents):
        measured = agent_sections(run.agent(ai))
        sections[a.name] = measured.sections
        samples[a.name] = measured.samples
    paired = paired_contrasts(run, {name: s["valid"] for name, s in sections.items()})
    agents = {
        a.name: _agent(a, sections[a.name], _skill(matrix, a.name), paired.by_agent[a.name])
        for a in run.agents
    }
    if data.run.get("held_out") and not reveal_held_out:
        agents = {name: disclosed_agent(a) for name, a in agents.items()}
    profile = _profile(run, agents, paired, reveal_held_out=reveal_held_out)
    return Analysis(profile, samples)


def _agent(
    a: RunAgent, sections: Mapping[str, Any], skill: Skill, contrasts: AgentContrasts
) -> AgentProfile:
    """One agent's profile: its sections, its skill S and its contrasts."""
    out: dict[str, object] = {
        "role": a.role,
        "base_agent": a.base_agent,
        "spec": {k: a.spec[k] for k in SAFE_SPEC_KEYS if k in a.spec},
    }
    out.update(sections)
    out["agent_prediction_skill"] = skill
    out["minus_control"] = contrasts.minus_control
    out["ablation_credit"] = contrasts.ablation_credit
    if contrasts.other_controls is not None:
        out["other_controls"] = contrasts.other_controls
    return AgentProfile.of(out)


def _profile(run_in: RunInputs, agents: Mapping[str, AgentProfile], paired: PairedContrasts,
             *, reveal_held_out: bool) -> RunProfile:
    """The run's profile from its agents' and its contrasts."""
    data, design, res = run_in.data, run_in.design, run_in.res
    run = data.run
    notices = []
    run_block = disclosed_run(
        {k: run.get(k) for k in ("id", "suite", "seed", "held_out", "status", "created_at",
                                 "finished_at")},
        reveal_held_out=reveal_held_out,
    )
    if run.get("held_out"):
        notices.append(
            "HELD-OUT: this run drew its items from the held-out seed range (never used in "
            "development); its scores are the ones that detect tuning to the suite."
            + (" Its seed is withheld: only an operator may see it."
               if run_block["seed_withheld"] else "")
        )
    else:
        notices.append("Development seeds: this run did not use the held-out seed range.")
    for a in run_in.agents:
        ag = agents[a.name]
        if ag.valid is False:
            notices.append(ag.notices[0])
    profile = {
        "schema": PROFILE_SCHEMA,
        "run": run_block | {"n_items": design.n, "n_trials": len(data.trials)},
        "held_out": bool(run.get("held_out")),
        "notices": notices,
        "design": _design(design),
        "intervals": Intervals.of({
            "level": LEVEL,
            "bootstrap_replicates": res.B,
            "bootstrap_seed": res.seed,
            "n_clusters": res.boot.n_clusters,
            "n_strata": len(res.boot.strata),
            "collapsed_strata": [" / ".join(str(x) for x in lab) for lab in design.collapsed],
            "kinds": INTERVALS,
            "min_n": MIN_N,
            "d50_min_per_depth": D50_MIN_PER_DEPTH,
            "proportions": (
                "wilson-95 where each trial is its own cluster (wilson-strat-95 where the "
                "proportion pools the design's depth cells), wilson-deff-95 where trials "
                f"share clusters; below n = {MIN_N} (effective) a proportion keeps its value "
                "but has no interval (status not_estimable, with the reason)"
            ),
        }),
        "agents": agents,
        "proxy": {
            "scope": "every call of the run's agents through the query proxy so far",
            "agents": data.proxy,
        },
        "contrasts": paired.contrasts,
        "multiple_comparisons": {
            "method": "holm",
            "family": "every testable agent − control and full − ablated contrast in this "
            "report (not-estimable contrasts carry no p-value and are not in the family); "
            "the A − B and B − C accuracy contrasts within each agent are a second family, "
            "Holm-adjusted among themselves, so a real dissociation never counts against "
            "the comparison of two agents",
            "m": paired.m,
            "abc_m": run_in.abc_m,
        },
    }
    # parsed against the published schema: a profile that does not fit is a bug
    return RunProfile.of(json_ready(profile))

def _design(d: RunDesign) -> Design:
    it = d.data.items
    nt_items = d.nt & (d.qbel | d.beh | d.jud)
    blocks = Counter(str(b) for b in it.block[nt_items].tolist())
    return Design.of({
        "nesttom_blocks": dict(sorted(blocks.items())),
        "block_names_in_meta": list(it.block_names),
        "block_source": it.block_source,
        "block_note": {
            "meta": "every NestToM item names its block in its meta",
            "inferred": "no NestToM item names a baseline block (B1, B2, B4): they were "
            "inferred from the design (applied questions are B4; with several generator "
            "streams, a stream of applied stories is B4 and one depth at several lengths "
            "is B2; otherwise B1)",
            "mixed": "some NestToM items name their block; the others were inferred",
            "none": "no NestToM items",
        }[it.block_source],
        "reality_check_items": int(d.r0.sum()),
        "companion_items": int((d.nt & ~d.main).sum()),
        "depth_curve": "B1 belief items at R1 and deeper (R0 is the reality check)",
    })

def _skill(matrix: MatrixSummary | None, name: str) -> Skill:
    """Agent-prediction skill S: from the accompanying matrix run, which commits every
    prediction to the ledger before the target is asked (seed 002 §15.2, §18.2 rule 5)."""
    if matrix is None:
        return Skill.of({
            "available": False,
            "reason": "no matrix run accompanies this run (S comes from the prediction "
            "ledger, through a matrix run)",
        })
    from reports.matrix_summary import agent_skill

    return Skill.of(agent_skill(matrix, name).to_dict())
