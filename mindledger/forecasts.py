"""Self-forecasts: an agent's predictive distribution for a figure of its own profile, and the
proper scores that judge it (issue 29; seed 002 §1.3).

Before a run, an agent may forecast a headline figure of its own profile for that run. This
module is the pure core every layer shares: which figures can be forecast (:func:`figure`),
the two forms a forecast takes (:class:`Quantiles`, :class:`Bins`, read by
:func:`parse_forecast`), their scores against the figure the run produced, and the naive
forecast a forecast is measured against (:func:`naive_like`).

Forms and their scores (each lower is better, 0 is perfect):

- **quantiles** — ``{"form": "quantiles", "levels": [...], "values": [...]}``: the forecast's
  quantile at each level (levels in (0, 1), increasing; values non-decreasing). Scored with the
  *quantile score*, ``2/K · Σ_k ρ_τk(y − q_k)`` with the pinball loss ρ: the discrete
  approximation of the CRPS over the stated levels (Gneiting & Raftery 2007, §4; with levels
  dense in (0, 1) it tends to the CRPS).
- **bins** — ``{"form": "bins", "edges": [e_0, …, e_K], "probs": [p_1, …, p_K]}``: a discretised
  distribution (edges increasing, probabilities summing to 1). Scored with the *log score* of
  the bin the figure falls in, as a loss ``−log max(p, ε)`` (ε = 10⁻⁴: an outcome outside every
  bin or in an empty one costs log 10⁴ ≈ 9.2, not infinity).

The interval score of a central interval (:func:`interval_score`) is given beside them.

Skill (:func:`skill`) is ``1 − Σ loss / Σ naive loss`` over forecasts of one form, the
forecast-skill analogue of S: 1 for a perfect forecaster, 0 for one no better than the naive
forecast (the agent's previous value of the same figure with its interval), negative for a
worse one. The naive forecast is put in the forecast's own form (:func:`naive_like`) so both are
scored by the same rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import NormalDist
from typing import Any, Literal

from mindledger.errors import InputError

__all__ = [
    "BASE_FIGURES",
    "EPSILON",
    "Bins",
    "Figure",
    "Forecast",
    "Quantiles",
    "central_interval",
    "figure",
    "forecast_body",
    "forecast_loss",
    "interval_score",
    "median",
    "naive_like",
    "parse_forecast",
    "skill",
]

EPSILON = 1e-4
"""The probability floor of the bins form's log score."""

MAX_POINTS = 101
"""Most levels (or bins) a forecast may state."""

MAX_REASON = 500
"""Characters of a forecast's one-line reason."""

BASE_FIGURES: dict[str, str] = {
    "false_belief_accuracy": "accuracy on the false-belief questions (0-1)",
    "d50": "recursion span D50: the depth at which accuracy falls to 50%",
    "leakage_resistance": "resistance to leaking the agent's own belief into another's (0-1)",
    "S": "prediction skill S against the projection baseline (the matrix)",
}
"""The headline figures of a profile an agent can forecast by name. Besides these:
``accuracy_at_depth:R<k>`` (false-belief accuracy at depth k, 0-5), ``ablation_credit:<module>``
(the accuracy a module adds, from the run's ablation of it) and ``change:<figure>`` (the change of
a figure from the agent's previous run of the same suite)."""

_DEPTH = re.compile(r"R[0-5]")
_MODULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Figure:
    """A figure that can be forecast, parsed from its name (:func:`figure`)."""

    name: str
    """As written: ``d50``, ``accuracy_at_depth:R2``, ``change:false_belief_accuracy``."""
    base: str
    """``false_belief_accuracy``, ``d50``, ``leakage_resistance``, ``S``,
    ``accuracy_at_depth`` or ``ablation_credit``."""
    arg: str | None = None
    """The depth (``R2``) or module of a parametrised figure."""
    change: bool = False
    """The change from the previous run of the same suite, not the figure itself."""

    @property
    def level(self) -> str:
        """The figure whose value (or change) this is: the name without ``change:``."""
        return self.name.removeprefix("change:")


def figure(name: Any, where: str = "figure") -> Figure:
    """Parse a figure's name, or raise InputError saying which names there are."""
    if not isinstance(name, str) or not name:
        raise InputError("expected a figure's name", where=where)
    change = name.startswith("change:")
    rest = name.removeprefix("change:")
    base, _, arg = rest.partition(":")
    ok = False
    if base in BASE_FIGURES:
        ok = not arg and ":" not in rest
    elif base == "accuracy_at_depth":
        ok = _DEPTH.fullmatch(arg) is not None
    elif base == "ablation_credit":
        ok = _MODULE.fullmatch(arg) is not None
    if not ok:
        names = ", ".join(BASE_FIGURES)
        raise InputError(
            f"unknown figure {name[:80]!r}: expected one of {names}, accuracy_at_depth:R0-R5, "
            "ablation_credit:<module>, or change:<any of those>",
            where=where,
        )
    return Figure(name=name, base=base, arg=arg or None, change=change)


# -- forms ------------------------------------------------------------------------------------


def _pinball(tau: float, y: float, q: float) -> float:
    return (tau - (y < q)) * (y - q)


@dataclass(frozen=True)
class Quantiles:
    """A forecast as quantiles: ``values[i]`` is the quantile at ``levels[i]``."""

    levels: tuple[float, ...]
    values: tuple[float, ...]
    form: Literal["quantiles"] = "quantiles"

    def quantile(self, tau: float) -> float | None:
        """The quantile at ``tau``, interpolated linearly between stated levels; None outside
        the stated range (the forecast says nothing there)."""
        lv, vs = self.levels, self.values
        if not lv[0] - 1e-12 <= tau <= lv[-1] + 1e-12:
            return None
        for i in range(len(lv) - 1):
            if tau <= lv[i + 1] + 1e-12:
                w = (tau - lv[i]) / (lv[i + 1] - lv[i])
                return vs[i] + min(max(w, 0.0), 1.0) * (vs[i + 1] - vs[i])
        return vs[-1]

    def loss(self, y: float) -> float:
        """The quantile score (CRPS approximation) of outcome ``y``."""
        k = len(self.levels)
        return (
            2.0
            * math.fsum(_pinball(t, y, q) for t, q in zip(self.levels, self.values, strict=True))
            / k
        )

    def to_json(self) -> dict[str, Any]:
        return {"form": "quantiles", "levels": list(self.levels), "values": list(self.values)}


@dataclass(frozen=True)
class Bins:
    """A forecast as a discretised distribution: ``probs[i]`` on ``[edges[i], edges[i+1])``
    (the last bin closed on the right)."""

    edges: tuple[float, ...]
    probs: tuple[float, ...]
    form: Literal["bins"] = "bins"

    def bin_of(self, y: float) -> int | None:
        """The index of the bin holding ``y``; None outside the edges."""
        e = self.edges
        if not e[0] <= y <= e[-1]:
            return None
        for i in range(len(self.probs)):
            if y < e[i + 1]:
                return i
        return len(self.probs) - 1

    def quantile(self, tau: float) -> float | None:
        """The quantile at ``tau`` of the distribution uniform within each bin."""
        if not 0.0 <= tau <= 1.0:
            return None
        acc = 0.0
        for i, p in enumerate(self.probs):
            if p > 0 and acc + p >= tau - 1e-12:
                w = min(max((tau - acc) / p, 0.0), 1.0)
                return self.edges[i] + w * (self.edges[i + 1] - self.edges[i])
            acc += p
        return self.edges[-1]

    def loss(self, y: float) -> float:
        """The log score of outcome ``y`` as a loss: ``−log max(p of its bin, ε)``."""
        i = self.bin_of(y)
        return -math.log(max(self.probs[i] if i is not None else 0.0, EPSILON))

    def to_json(self) -> dict[str, Any]:
        return {"form": "bins", "edges": list(self.edges), "probs": list(self.probs)}


Forecast = Quantiles | Bins


def central_interval(f: Forecast, mass: float) -> tuple[float, float] | None:
    """The central interval holding ``mass`` (0.5, 0.9) of forecast ``f``; None when the
    forecast does not state the quantiles it needs."""
    lo, hi = f.quantile((1.0 - mass) / 2.0), f.quantile((1.0 + mass) / 2.0)
    return None if lo is None or hi is None else (lo, hi)


def median(f: Forecast) -> float | None:
    """The forecast's median (None when a quantile forecast does not cover 0.5)."""
    return f.quantile(0.5)


def _numbers(value: Any, where: str, *, least: int) -> tuple[float, ...]:
    if not isinstance(value, list) or not least <= len(value) <= MAX_POINTS:
        raise InputError(f"expected a list of {least} to {MAX_POINTS} numbers", where=where)
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise InputError("expected a finite number", where=f"{where}[{i}]")
        out.append(float(v))
    return tuple(out)


def parse_forecast(value: Any, where: str = "forecast") -> Forecast:
    """Read a forecast from its JSON form, or raise InputError naming the field."""
    if not isinstance(value, dict):
        raise InputError('expected an object with "form": "quantiles" or "bins"', where=where)
    form = value.get("form")
    if form == "quantiles":
        extra = set(value) - {"form", "levels", "values"}
        levels = _numbers(value.get("levels"), f"{where}.levels", least=1)
        values = _numbers(value.get("values"), f"{where}.values", least=1)
        if len(levels) != len(values):
            raise InputError("expected as many values as levels", where=f"{where}.values")
        if any(not 0.0 < t < 1.0 for t in levels):
            raise InputError("expected levels strictly between 0 and 1", where=f"{where}.levels")
        if any(b <= a for a, b in pairwise(levels)):
            raise InputError("expected increasing levels", where=f"{where}.levels")
        if any(b < a for a, b in pairwise(values)):
            raise InputError(
                "expected values that do not decrease as the level rises", where=f"{where}.values"
            )
        result: Forecast = Quantiles(levels, values)
    elif form == "bins":
        extra = set(value) - {"form", "edges", "probs"}
        edges = _numbers(value.get("edges"), f"{where}.edges", least=2)
        probs = _numbers(value.get("probs"), f"{where}.probs", least=1)
        if len(edges) != len(probs) + 1:
            raise InputError("expected one edge more than probabilities", where=f"{where}.edges")
        if any(b <= a for a, b in pairwise(edges)):
            raise InputError("expected increasing edges", where=f"{where}.edges")
        if any(p < 0 for p in probs) or abs(math.fsum(probs) - 1.0) > 1e-6:
            raise InputError("expected probabilities >= 0 that sum to 1", where=f"{where}.probs")
        result = Bins(edges, probs)
    else:
        raise InputError(
            f'expected "form": "quantiles" or "bins", not {form!r}'[:200], where=f"{where}.form"
        )
    if extra:
        raise InputError(f"unexpected field {sorted(extra)[0]!r}", where=where)
    return result


def forecast_body(forecast: Forecast, reason: str | None) -> dict[str, Any]:
    """What a forecast's commitment hashes (with the salt after it; see
    :func:`ledger.protocol.commitment`): its JSON form and its reason."""
    if reason is not None and (
        not isinstance(reason, str) or len(reason) > MAX_REASON or "\n" in reason
    ):
        raise InputError(f"expected one line of at most {MAX_REASON} characters", where="reason")
    return {"forecast": forecast.to_json(), "reason": reason}


# -- scores -----------------------------------------------------------------------------------


def forecast_loss(f: Forecast, y: float) -> float:
    """The proper score of ``f`` for outcome ``y``, as a loss (0 is perfect): the quantile
    score for quantiles, the log score for bins."""
    return f.loss(y)


def interval_score(lo: float, hi: float, y: float, alpha: float) -> float:
    """The interval score of the central (1 − alpha) interval [lo, hi] for outcome ``y``:
    its width plus 2/alpha times how far ``y`` falls outside it (Gneiting & Raftery 2007,
    eq. 43)."""
    return (hi - lo) + (2.0 / alpha) * (max(lo - y, 0.0) + max(y - hi, 0.0))


def _normal_quantile(mu: float, sd: float, tau: float) -> float:
    return mu if sd <= 0 else NormalDist(mu, sd).inv_cdf(tau)


def naive_like(
    f: Forecast, previous: float, ci: Sequence[float] | None, level: float = 0.95
) -> Forecast:
    """The naive forecast in the form of ``f``: normal around the agent's previous value of the
    figure, its spread read from that value's ``level`` interval ``ci`` (a point mass when
    there is none, or it has no width)."""
    sd = 0.0
    if ci is not None and len(ci) == 2 and ci[1] > ci[0]:
        sd = (ci[1] - ci[0]) / (2.0 * NormalDist().inv_cdf(0.5 + level / 2.0))
    if isinstance(f, Quantiles):
        return Quantiles(f.levels, tuple(_normal_quantile(previous, sd, t) for t in f.levels))
    if sd <= 0:
        probs = [0.0] * len(f.probs)
        i = f.bin_of(previous)
        if i is not None:
            probs[i] = 1.0
        return Bins(f.edges, tuple(probs))
    dist = NormalDist(previous, sd)
    cdf = [dist.cdf(e) for e in f.edges]
    return Bins(f.edges, tuple(b - a for a, b in pairwise(cdf)))


def skill(losses: Sequence[float], naive_losses: Sequence[float]) -> float | None:
    """``1 − Σ losses / Σ naive losses`` (forecasts of one form, paired); None when there are
    none or the naive forecasts lost nothing."""
    if len(losses) != len(naive_losses):
        raise ValueError("losses and naive losses are paired")
    total = math.fsum(naive_losses)
    if not losses or total <= 0:
        return None
    return 1.0 - math.fsum(losses) / total
