"""Pure statistics for profiles: intervals, exact and permutation tests, the cluster bootstrap,
D50, slopes, Holm, ECE.

Nothing here does I/O, reads a clock or touches a global random state: every resampling function
takes a seeded :class:`numpy.random.Generator`, so the same seed gives the same interval.

Which method for which estimate is decided by the caller (see :mod:`reports._estimates`); this
module holds the methods. All intervals are two-sided, 95% unless a ``level`` says otherwise.

- **Wilson score interval** for a proportion (:func:`wilson_interval`): good near 0 and 1, where
  the Wald interval fails. Where trials come in clusters of several, the Wilson interval is taken
  at the **design-effect-adjusted** n (:func:`clustered_proportion`, Kish's n / deff with the
  ratio-estimator variance over clusters and a t quantile on clusters − 1 degrees of freedom);
  where a proportion pools strata whose sizes the design fixes (depth cells), at the
  **stratification-adjusted** n (:func:`stratified_n`).
- **Newcombe's intervals** for differences of proportions: the hybrid score interval for two
  independent proportions (:func:`newcombe_interval`, statsmodels) and Newcombe's square-and-add
  interval for paired proportions (:func:`newcombe_paired_interval`).
- **Exact and permutation tests**: the exact McNemar test for paired binary outcomes
  (:func:`mcnemar_exact`, scipy), Fisher's exact test for two independent proportions
  (:func:`fisher_exact`, scipy), and the sign-flip permutation test for paired differences over
  clusters (:func:`sign_flip_pvalue`: exact enumeration up to 2**16 sign patterns, else Monte
  Carlo with ``p = (1 + #{|T*| >= |T|}) / (B + 1)``, never below ``1 / (B + 1)``).
- **Cluster bootstrap** (:class:`ClusterBootstrap`, :func:`cluster_bootstrap`): whole clusters are
  resampled with replacement, optionally *within strata* (the design's fixed cells, e.g. belief
  type x depth), and the percentile interval of the replicates is reported. A stratum holding a
  single cluster would contribute no variance at all, so callers first merge such strata with
  their siblings (:func:`collapse_strata`); the bootstrap is only used where every stratum holds at
  least two clusters. Its p-value (:func:`bootstrap_pvalue`) is the percentile one, never below
  ``2 / (B + 1)``.
- **Normal approximation** for means of non-binary quantities (:func:`mean_interval`) and the
  paired t interval over clusters (:func:`clustered_mean_interval`).

D50 (:func:`d50_estimate`) is the depth at which the fitted false-belief accuracy of a logistic
regression on depth falls halfway between the ceiling and chance:
``halfway = chance + (ceiling - chance) / 2``. Chance is the mean of ``1 / number of choices``
over the items; the ceiling defaults to **1.0**, the accuracy of an exact reasoner, so that an
agent that is poor at every depth cannot buy a deep D50 with a low ceiling (its true-belief
accuracy is reported, and policed, separately). A caller can pass another ceiling (for example the
agent's R0 or true-belief accuracy). When the data cannot support a number the result says so
and why: perfect separation gives the bracket between two tested depths, accuracy still above
halfway at the deepest level gives a lower bound ("beyond the deepest level tested"), and so on.

The methods live in one module per kind, re-exported here: :mod:`~reports._stats.intervals`,
:mod:`~reports._stats.pvalues`, :mod:`~reports._stats.calibration`,
:mod:`~reports._stats.bootstrap`, :mod:`~reports._stats.d50` and :mod:`~reports._stats.slope`.
"""

from __future__ import annotations

from reports._stats.bootstrap import (
    BootstrapSums,
    ClusterBootstrap,
    cluster_bootstrap,
    collapse_strata,
    paired_difference,
)
from reports._stats.calibration import Calibration, ece
from reports._stats.d50 import (
    D50Result,
    d50_estimate,
    d50_from_fit,
    d50_replicates,
    fit_logistic_grouped,
    logistic_batch,
)
from reports._stats.intervals import (
    T975,
    Z95,
    Interval,
    clustered_mean_interval,
    clustered_proportion,
    effective_n,
    expanded_level,
    mean_interval,
    newcombe_interval,
    newcombe_paired_interval,
    normal_quantile,
    percentile_interval,
    stratified_n,
    t_quantile,
    wilson_interval,
)
from reports._stats.pvalues import (
    SIGN_FLIP_EXACT_MAX,
    bootstrap_pvalue,
    fisher_exact,
    holm,
    mcnemar_exact,
    permutation_pvalue,
    sign_flip_pvalue,
)
from reports._stats.slope import SlopeResult, degradation_slope

__all__ = [
    "SIGN_FLIP_EXACT_MAX",
    "T975",
    "Z95",
    "BootstrapSums",
    "Calibration",
    "ClusterBootstrap",
    "D50Result",
    "Interval",
    "SlopeResult",
    "bootstrap_pvalue",
    "cluster_bootstrap",
    "clustered_mean_interval",
    "clustered_proportion",
    "collapse_strata",
    "d50_estimate",
    "d50_from_fit",
    "d50_replicates",
    "degradation_slope",
    "ece",
    "effective_n",
    "expanded_level",
    "fisher_exact",
    "fit_logistic_grouped",
    "holm",
    "logistic_batch",
    "mcnemar_exact",
    "mean_interval",
    "newcombe_interval",
    "newcombe_paired_interval",
    "normal_quantile",
    "paired_difference",
    "percentile_interval",
    "permutation_pvalue",
    "sign_flip_pvalue",
    "stratified_n",
    "t_quantile",
    "wilson_interval",
]
