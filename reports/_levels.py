"""Whether a depth signal (K_B, K_L) identifies a level-k player: its fit against chance. Pure.

Seed 000 reads a depth off a trial by matching (Eq. 8, Eq. 9): K_B is the unique depth ``k`` of
the window ``W = {0…10}`` whose IDR action ``a(k)`` is the submitted action, K_L one plus the
depth whose action is the stated belief. In a level-k distinguishable game each depth has its
own action, but those actions are a subset of the action space S, so a player who picks
uniformly at random lands on one of them too, at the trial's **chance rate**

    c = |{s ∈ S : s matches exactly one depth of W}| / |S|

(0.26 to 1 over the baseline's game variants: in an all-pay auction on {0…10} every action is
some depth's). Its K_B then resolves on about a share c of its trials and averages to the
middle of the window: a number that looks like a measurement and is noise.

**The fit statistic** is the chance-corrected match rate of a level-k model with noise: with
probability π the player plays the IDR action of some depth (it reasons to some level on that
trial), otherwise it picks uniformly over S. A trial then matches a depth with probability
``π + (1 − π)·c_i``, so over N trials with R matches the method-of-moments estimate is

    π̂ = (R − C) / (N − C),    C = Σ c_i,

which is 0 in expectation for a uniformly random player whatever the games (the form of Cohen's
kappa) and 1 for a player every one of whose choices is some level's. Trials whose games give
chance no room (c = 1) count in neither numerator nor denominator: they cannot tell level-k play
from chance, and the statistic says how many trials can (``N − C``).

Why not the share explained by the best single level: the agents this suite is for are told
their opponent's level (or shown its play), so a player that reasons correctly plays a
*different* level on each trial (``a(k_target)``); the best single level would explain a tenth
of the oracle's choices and call it unidentifiable, and a maximum over eleven levels sits above
chance for a random player by selection alone. π needs no selection, and the levels a player
reaches are shown where they belong, against the target depth (the k curves).

**Identifiable** when the player matches more often than chance would let it: the exact
one-sided p-value of R under the null "it chooses uniformly at random" is below
:data:`ALPHA` (1%). Under that null each trial matches independently with probability c_i,
whatever the design's clusters (a random player's trials are independent by the null's own
definition), so R is Poisson-binomial and the test keeps its level exactly (conservatively: R is
discrete). The gate is one-sided at 1%, not 2.5%, because it decides whether a depth is printed
at all, for every agent and both signals of a run: at 2.5% a uniformly random player would be
given a level in one run of four with ten such tests (in simulation the 95% percentile bootstrap
of π, used as a gate at baseline size, let one random player in 25 through). It costs a real
level-k player little: in simulation on 60 trials at chance rates between 0.25 and 0.95, a
player 70% of whose choices are level-k beyond chance is identified in 99.8% of runs (100% at
2.5%), one at 50% in 87% (92%). **Not identifiable** otherwise: no level explains the choices
better than chance, and no depth is reported, only why. Untested (None) below ``min_n``
trials or when no trial leaves chance room (no depth interval then either), or when the trials
give no chance rate (items that do not carry their IDR sequence and action space, such as
synthetic ones: the depth keeps its interval, said to be untested).

π carries a 95% cluster-bootstrap percentile interval (whole game cells resampled within strata:
the profile's one seeded set of replicates) that says how large the fit is; the depth reported
for an identifiable signal is the mean matched depth with its interval from the same replicates.

Limitation: π asks whether the choices are level-k choices, not whether they are *one* level: a
player choosing uniformly among the IDR actions is identifiable, with a mean depth in the middle
of the window and flat k curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reports._estimates import MIN_N, not_estimable_reason
from reports._stats import percentile_interval
from reports.model import LevelFit as FitFigure

__all__ = ["ALPHA", "FIT_STATISTIC", "LevelFit", "SignalSums", "chance_pvalue", "level_fit"]

FloatArray = npt.NDArray[np.float64]
Sum = tuple[float, FloatArray]
"""A full-sample sum and its bootstrap replicates (:meth:`reports._stats.BootstrapSums.total`)."""

FIT_STATISTIC = "chance-corrected level-k match"
"""The fit statistic's name, as the profile records it."""

ALPHA = 0.01
"""One-sided level of the test against a uniformly random player that gates a reported depth."""


@dataclass(frozen=True)
class SignalSums:
    """One agent's depth signal over its trials, as bootstrap sums: trials counted (``n``),
    trials whose value matched one depth (``matched``), the sum of their chance rates
    (``chance``) and of the matched depths (``depth``); and each counted trial's chance rate
    (``rates``, for the exact test)."""

    n: Sum
    matched: Sum
    chance: Sum
    depth: Sum
    rates: FloatArray


@dataclass(frozen=True)
class LevelFit:
    """A depth signal's level-k fit (see the module docstring) and the depth it reports."""

    n: int
    matched: int
    chance: float | None
    fit: float | None
    fit_ci: tuple[float, float] | None
    p_chance: float | None
    identifiable: bool | None
    reason: str | None
    depth: float | None
    depth_ci: tuple[float, float] | None
    mean_matched_depth: float | None

    def fit_model(self) -> FitFigure:
        """The ``fit`` block of the profile's depth estimate."""
        return FitFigure.of({
            "statistic": FIT_STATISTIC,
            "value": self.fit,
            "ci": list(self.fit_ci) if self.fit_ci else None,
            "interval": "cluster-bootstrap-95" if self.fit_ci else None,
            "matched": self.matched,
            "n": self.n,
            "matched_share": self.matched / self.n if self.n else None,
            "chance": self.chance,
            "p_chance": self.p_chance,
            "alpha": ALPHA,
            "mean_matched_depth": self.mean_matched_depth,
            "definition": "π̂ = (R − C) / (N − C): R of N trials match one depth's IDR action, "
            "C is what a uniformly random choice would match; 0 for chance, 1 when every "
            "choice is some level's",
        })


def chance_pvalue(matched: int, rates: npt.ArrayLike) -> float:
    """P(R ≥ ``matched``) when trial i matches independently with probability ``rates[i]``:
    the exact one-sided p-value of a uniformly random player (R is Poisson-binomial)."""
    p = np.clip(np.asarray(rates, dtype=float), 0.0, 1.0)
    dist = np.zeros(p.size + 1)
    dist[0] = 1.0
    for i, c in enumerate(p.tolist()):
        # the distribution of matches after trial i (only the first i + 2 entries can move)
        dist[1 : i + 2] = dist[1 : i + 2] * (1.0 - c) + dist[: i + 1] * c
        dist[0] *= 1.0 - c
    return float(min(1.0, dist[max(0, matched) :].sum()))


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-9, num / np.where(den > 1e-9, den, 1.0), np.nan)


def _interval(replicates: FloatArray, level: float) -> tuple[float, float] | None:
    lo, hi, used = percentile_interval(replicates, level)
    if used == 0 or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (lo, hi)


def level_fit(
    sums: SignalSums, *, what: str = "actions", level: float = 0.95, min_n: int = MIN_N
) -> LevelFit:
    """The level-k fit of one depth signal from its bootstrap sums. ``what`` names the
    choices in the reason (``"actions"``, ``"stated beliefs"``)."""
    n0, n_rep = sums.n
    r0, r_rep = sums.matched
    c0, c_rep = sums.chance
    s0, s_rep = sums.depth
    n, r = round(n0), round(r0)
    mean_matched = s0 / r0 if r0 > 0 else None
    chance = c0 / n0 if n0 > 0 else None
    room = n0 - c0
    fit = (r0 - c0) / room if room > 1e-9 else None
    # tested from min_n trials on, as every interval of the profile is
    p_chance = chance_pvalue(r, sums.rates) if n >= min_n and fit is not None else None

    def result(
        identifiable: bool | None,
        reason: str | None,
        depth: float | None,
        *,
        fit_ci: tuple[float, float] | None = None,
        depth_ci: tuple[float, float] | None = None,
    ) -> LevelFit:
        return LevelFit(
            n=n,
            matched=r,
            chance=chance,
            fit=fit,
            fit_ci=fit_ci,
            p_chance=p_chance,
            identifiable=identifiable,
            reason=reason,
            depth=depth,
            depth_ci=depth_ci,
            mean_matched_depth=mean_matched,
        )

    if n == 0:
        return result(None, f"no {what} to match", None)
    if not math.isfinite(c0):
        # trials that do not say their action space (synthetic ones): the depth keeps its
        # interval, untested against chance
        depth_ci = _interval(_ratio(s_rep, r_rep), level) if n >= min_n else None
        return result(
            None,
            "not tested against chance: these trials give no chance rate",
            mean_matched,
            depth_ci=depth_ci,
        )
    if fit is None:
        return result(
            None,
            f"every one of these trials' {what} is some depth's, so a random "
            "choice matches as often: the games cannot tell level-k play from chance "
            "here",
            mean_matched,
        )
    if n < min_n:
        return result(None, not_estimable_reason(n, "trials", min_n), mean_matched)
    fit_ci = _interval(_ratio(r_rep - c_rep, n_rep - c_rep), level)
    assert p_chance is not None and chance is not None  # n >= min_n and fit is not None
    if p_chance >= ALPHA:
        shown = "" if fit_ci is None else f" [{fit_ci[0]:+.2f}, {fit_ci[1]:+.2f}]"
        why = (
            f"its {what} match a depth's IDR action in {r / n:.0%} of {n} trials, against "
            f"{chance:.0%} for a uniformly random choice (level-k fit {fit:+.2f}{shown}, "
            f"p = {p_chance:.2g} against chance): no level explains them better than chance"
        )
        return result(False, why, None, fit_ci=fit_ci)
    return result(
        True, None, mean_matched, fit_ci=fit_ci, depth_ci=_interval(_ratio(s_rep, r_rep), level)
    )
