"""The benchmark's own validity check: does the profile diagnose each scripted reference agent
as what it is?

:func:`diagnose_references` reads a :class:`~reports.model.RunProfile`; :func:`diagnose_agent`
one agent of it (the verdict asks it reference by reference). Both return what the profile gets
wrong, empty when it is right.
"""

from __future__ import annotations

import math
import re

from reports.model import AgentProfile, DepthEstimate, DepthSignals, RunProfile

__all__ = ["diagnose_agent", "diagnose_references"]


def _listed(ci: tuple[float | None, float | None] | None) -> list[float | None] | None:
    """An interval as the JSON profile writes it (``[lo, hi]``), for a message."""
    return None if ci is None else list(ci)


def _diagnose_depth_signals(name: str, policy: str, ds: DepthSignals | None) -> list[str]:
    """What the depth signals get wrong about a ``level:K`` or ``believer:K`` reference."""
    available = ds is not None and ds.available
    if policy == "random" and ds is not None and available:
        k_b = ds.K_B
        if k_b is not None and k_b.identifiable is True:
            fit = k_b.fit
            return [
                f"{name} (random): K_B should not be identifiable, a uniformly random "
                f"player's choices are no level's; got level-k fit "
                f"{fit.value if fit else None} {_listed(fit.ci) if fit else None}"
            ]
        return []
    m = re.fullmatch(r"(level|believer):(\d+)", policy)
    if not m or int(m.group(2)) < 1 or ds is None or not available:
        return []
    kind, k = m.group(1), int(m.group(2))
    problems: list[str] = []

    def exact(key: str, d: DepthEstimate | None) -> None:
        value = d.value if d is not None else None
        unresolved = d.unresolved if d is not None else None
        ci = (d.ci if d is not None else None) or (value, value)
        if value != k or unresolved or any(x != k for x in ci):
            problems.append(
                f"{name} ({policy}): {key} should be exactly {k}, got "
                f"{value} (unresolved {unresolved})"
            )

    exact("K_L", ds.K_L)
    flag = ds.inconsistent_player
    if kind == "level":
        exact("K_B", ds.K_B)
        br = ds.br_consistency.value if ds.br_consistency is not None else None
        if br != 1.0 or flag is True:
            problems.append(
                f"{name} ({policy}): every action should best-respond to its "
                f"stated belief, got {br}"
            )
    elif flag is False:
        problems.append(
            f"{name} ({policy}): plays at random, so it should be flagged an inconsistent player"
        )
    return problems


def diagnose_agent(name: str, ag: AgentProfile) -> list[str]:
    """What the profile gets wrong about one agent if it is a scripted reference (see
    :func:`diagnose_references`); empty for an agent of no known policy."""
    problems: list[str] = []
    policy = str(ag.spec.get("policy") or name)
    d50 = ag.d50
    status = d50.status
    if policy == "oracle":
        deepest = max(d50.depths_tested or [math.nan])
        if status != "beyond" or d50.lower_bound != deepest:
            problems.append(
                f"{name} (oracle): D50 should be beyond the deepest level tested, got {d50.display}"
            )
        if ag.valid is not True:
            problems.append(f"{name} (oracle): should pass the true-belief control rule")
    m = re.match(r"depth-capped:?(\d+)", policy)
    if m:
        cap = int(m.group(1))
        ok = False
        if status == "estimated" and d50.value is not None:
            ok = cap <= d50.value <= cap + 1
        elif status == "bracketed":
            lower = d50.lower_bound if d50.lower_bound is not None else -1
            upper = d50.upper_bound if d50.upper_bound is not None else 1e9
            ok = lower >= cap and upper <= cap + 1
        if not ok:
            problems.append(
                f"{name} (depth-capped:{cap}): D50 should lie between {cap} and {cap + 1}, "
                f"got {d50.display}"
            )
    if policy in ("not-reality", "random") and ag.valid is not False:
        problems.append(f"{name} ({policy}): should be marked invalid, got valid={ag.valid}")
    problems.extend(_diagnose_depth_signals(name, policy, ag.depth_signals))
    if policy == "reality-leak":
        lr = ag.leakage_resistance.value
        if lr is None or lr != 0:
            problems.append(f"{name} (reality-leak): leakage resistance should be 0, got {lr}")
    return problems


def diagnose_references(profile: RunProfile) -> list[str]:
    """What the profile gets wrong about the scripted reference agents (empty when right).

    - ``oracle``: D50 beyond the deepest level tested, and valid;
    - ``depth-capped:N``: D50 between N and N+1 (estimated inside, or bracketed inside);
    - ``not-reality`` and ``random``: marked invalid by the control rule;
    - ``reality-leak``: leakage resistance 0 (every false-belief answer is reality; R0, the
      reality check, is not a false-belief item);
    - ``level:K`` (K ≥ 1) on level-k game trials: K_B and K_L both exactly K (so identifiable),
      every action a best response to the stated belief, not flagged inconsistent;
    - ``random`` on level-k game trials: K_B not identifiable, or untested;
    - ``believer:K`` (K ≥ 1): K_L exactly K, flagged inconsistent when the flag can be tested.

    A reference is recognised by its spec's ``policy`` or, failing that, its name. Intended for
    the quick-suite test: ``assert diagnose_references(build_profile(store, run_id)) == []``.
    """
    return [p for name, ag in profile.agents.items() for p in diagnose_agent(name, ag)]
