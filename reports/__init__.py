"""Reports: the recursive-reasoning profile of a run, its statistics and its renderings.

Public API::

    build_profile(store, run_id, *, seed=0, n_boot=2000) -> RunProfile  # .to_json(): JSON
    report(store, run_id, "md" | "html" | "json" | "csv") -> str
    compare(store, run_a, run_b) -> Comparison  # .to_json(): JSON ; render_compare_markdown(cmp)
    agent_history(store, agent, *, metrics=None, since=None) -> AgentHistory  # reports.history
    diagnose_references(profile) -> list[str]                      # [] when references look right
    verdict(profile) -> Verdict                                    # what every report opens with

``seed`` is always the bootstrap's. A held-out run's own seed (and anything its items regenerate
from) appears in no output unless the caller passes ``reveal_held_out=True``, which every entry
point above and every ``render_*`` takes: operators only.

Statistics (pure; seeded generators only) live in :mod:`reports._stats`; which method each figure
gets (by its n and design) in :mod:`reports._estimates`.
"""

import typing

if typing.TYPE_CHECKING:
    from reports._data import RunData, load_run
    from reports._estimates import (
        MIN_N,
        Contrast,
        Proportion,
        paired_binary,
        paired_values,
        proportion,
    )
    from reports._stats import (
        Calibration,
        ClusterBootstrap,
        D50Result,
        Interval,
        SlopeResult,
        bootstrap_pvalue,
        cluster_bootstrap,
        d50_estimate,
        d50_replicates,
        degradation_slope,
        ece,
        fisher_exact,
        holm,
        mcnemar_exact,
        newcombe_interval,
        newcombe_paired_interval,
        paired_difference,
        sign_flip_pvalue,
        wilson_interval,
    )
    from reports.comparison import Comparison, compare, compare_runs, render_compare_markdown
    from reports.history import (
        DEFAULT_RULE,
        HEADLINE_METRICS,
        AgentHistory,
        HistoryPoint,
        MetricHistory,
        Regression,
        RegressionRule,
        agent_history,
        history_of,
    )
    from reports.profile import (
        PROFILE_SCHEMA,
        TRUE_BELIEF_THRESHOLD,
        Analysis,
        analyse,
        build_profile,
        diagnose_references,
        profile_from_data,
    )
    from reports.render import (
        render_csv,
        render_html,
        render_json,
        render_markdown,
        report,
    )
    from reports.verdicts import Verdict, verdict
else:
    from mindledger.lazy import lazy_exports as _lazy_exports

    __getattr__, __dir__ = _lazy_exports(
        __name__,
        {
            "reports._data": ("RunData", "load_run"),
            "reports._estimates": (
                "MIN_N", "Contrast", "Proportion", "paired_binary", "paired_values", "proportion",
            ),
            "reports._stats": (
                "Calibration", "ClusterBootstrap", "D50Result", "Interval", "SlopeResult",
                "bootstrap_pvalue", "cluster_bootstrap", "d50_estimate", "d50_replicates",
                "degradation_slope", "ece", "fisher_exact", "holm", "mcnemar_exact",
                "newcombe_interval", "newcombe_paired_interval", "paired_difference",
                "sign_flip_pvalue", "wilson_interval",
            ),
            "reports.history": (
                "DEFAULT_RULE", "HEADLINE_METRICS", "AgentHistory", "HistoryPoint",
                "MetricHistory", "Regression", "RegressionRule", "agent_history", "history_of",
            ),
            "reports.profile": (
                "PROFILE_SCHEMA", "TRUE_BELIEF_THRESHOLD", "Analysis", "analyse", "build_profile",
                "diagnose_references", "profile_from_data",
            ),
            "reports.comparison": (
                "Comparison", "compare", "compare_runs", "render_compare_markdown",
            ),
            "reports.render": (
                "render_csv", "render_html", "render_json", "render_markdown", "report",
            ),
            "reports.verdicts": ("Verdict", "verdict"),
        },
    )

__all__ = [
    "DEFAULT_RULE",
    "HEADLINE_METRICS",
    "MIN_N",
    "PROFILE_SCHEMA",
    "TRUE_BELIEF_THRESHOLD",
    "AgentHistory",
    "Analysis",
    "Calibration",
    "ClusterBootstrap",
    "Comparison",
    "Contrast",
    "D50Result",
    "HistoryPoint",
    "Interval",
    "MetricHistory",
    "Proportion",
    "Regression",
    "RegressionRule",
    "RunData",
    "SlopeResult",
    "Verdict",
    "agent_history",
    "analyse",
    "bootstrap_pvalue",
    "build_profile",
    "cluster_bootstrap",
    "compare",
    "compare_runs",
    "d50_estimate",
    "d50_replicates",
    "degradation_slope",
    "diagnose_references",
    "ece",
    "fisher_exact",
    "history_of",
    "holm",
    "load_run",
    "mcnemar_exact",
    "newcombe_interval",
    "newcombe_paired_interval",
    "paired_binary",
    "paired_difference",
    "paired_values",
    "profile_from_data",
    "proportion",
    "render_compare_markdown",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "report",
    "sign_flip_pvalue",
    "verdict",
    "wilson_interval",
]
