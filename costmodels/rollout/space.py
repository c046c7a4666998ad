"""The discrete space of rollout plans every solver draws from (the exact one enumerates it), and
the two fixed plans the baselines return.

==================  ===============================================================
η_P, η_R            {1, 1.125, 1.25, 1.5} each (RollPacker Fig. 11's range)
TP                  fixed (short, long) over the allowed TPs, or the adaptive rule,
                    plain or guarded, from any allowed TP (only when more than one TP
                    is allowed)
reward              sync, async
timeout             fixed; adaptive with λ in {1.25, 1.5, 2}
stream trainer      off; adaptive; fixed at 20/30/40% (Table 3); frees 1/4 or 1/2
fetch               stream; once capped at 20-50% of the round (Table 4), when scaling
==================  ===============================================================

Grouped by rollout knobs: one simulated epoch per distinct ``RolloutPlan.rollout_key`` (a group,
and under asynchronous reward with speculation each timeout too, since short rounds race on
scores); the other knobs re-time reward and training on it. ``verl_plan`` and ``paper_plan``
are points of the space, so the exhaustive optimum is never worse than either.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

from costmodels.rollout.plan import RolloutPlan
from costmodels.rollout.replay import rollout_tps
from costmodels.rollout.workload import RolloutWorkload
from costmodels.solving import DeadlineExceeded

ETAS = (1.0, 1.125, 1.25, 1.5)
LAMBDAS = (1.25, 1.5, 2.0)
FRACTIONS = (0.25, 0.5)
FIXED_TRIGGERS = (0.2, 0.3, 0.4)
FETCH_CAPS = (0.2, 0.3, 0.4, 0.5)


def default_tp(workload: RolloutWorkload) -> int:
    """The job's configured rollout TP when allowed, else the smallest allowed."""
    allowed = rollout_tps(workload)
    return workload.tp if workload.tp in allowed else allowed[0]


def verl_plan(workload: RolloutWorkload) -> RolloutPlan:
    """veRL's synchronous baseline: no speculation, the configured TP, reward after rollout with
    the fixed timeout, no stream trainer."""
    tp = default_tp(workload)
    return RolloutPlan(short_tp=tp, long_tp=tp)


def paper_plan(workload: RolloutWorkload) -> RolloutPlan:
    """RollPacker's settings (§3-§4): η = 1.25 for both, the adaptive TP rule from the configured
    TP, asynchronous reward with λ = 1.5, the adaptive stream trainer freeing half."""
    tp = default_tp(workload)
    return RolloutPlan(
        eta_prompts=1.25,
        eta_responses=1.25,
        short_tp=tp,
        long_tp=tp,
        tp_rule="adaptive" if len(rollout_tps(workload)) > 1 else "fixed",
        reward="async",
        timeout="adaptive",
        timeout_lambda=1.5,
        scale="adaptive",
        scale_fraction=0.5,
    )


def tp_options(workload: RolloutWorkload) -> list[dict[str, Any]]:
    allowed = rollout_tps(workload)
    out: list[dict[str, Any]] = [
        {"tp_rule": "fixed", "short_tp": s, "long_tp": lt} for s in allowed for lt in allowed
    ]
    if len(allowed) > 1:
        out += [
            {"tp_rule": rule, "short_tp": s, "long_tp": s}
            for rule in ("adaptive", "guarded")
            for s in allowed
        ]
    return out


def scale_options() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"scale": "off"}]
    out += [{"scale": "adaptive", "scale_fraction": f} for f in FRACTIONS]
    out += [
        {"scale": "fixed", "scale_at": a, "scale_fraction": f}
        for a in FIXED_TRIGGERS
        for f in FRACTIONS
    ]
    return out


def eta_options() -> list[dict[str, Any]]:
    return [{"eta_prompts": p, "eta_responses": r} for p, r in itertools.product(ETAS, ETAS)]


def reward_options() -> list[dict[str, Any]]:
    timeouts: list[dict[str, Any]] = [{"timeout": "fixed"}] + [
        {"timeout": "adaptive", "timeout_lambda": lam} for lam in LAMBDAS
    ]
    return [{"reward": r, **t} for r in ("sync", "async") for t in timeouts]


def fetch_options(scaling: bool) -> list[dict[str, Any]]:
    return [{"fetch": "stream"}] + (
        [{"fetch": "once", "fetch_cap": c} for c in FETCH_CAPS] if scaling else []
    )


def rollout_groups(workload: RolloutWorkload) -> Iterator[dict[str, Any]]:
    """Every combination of rollout knobs (one to five simulated epochs each: one per distinct
    ``rollout_key`` among its completions)."""
    for eta, tp, sc in itertools.product(eta_options(), tp_options(workload), scale_options()):
        yield {**eta, **tp, **sc}


def completions(rollout: dict[str, Any]) -> Iterator[RolloutPlan]:
    """Every plan sharing these rollout knobs."""
    for rw, fe in itertools.product(
        reward_options(), fetch_options(rollout.get("scale", "off") != "off")
    ):
        yield RolloutPlan(**{**rollout, **rw, **fe})


def space_size(workload: RolloutWorkload) -> tuple[int, int]:
    """(rollout groups, plans) of the space."""
    groups = list(rollout_groups(workload))
    return len(groups), sum(
        len(reward_options()) * len(fetch_options(g.get("scale", "off") != "off")) for g in groups
    )


def offer_all(problem: Any, keep: Any, deadline: Any, trace: Any, groups: int | None = None) -> int:
    """Offer every plan of the space to ``keep`` (a ``costmodels.solving.KeepBest``), the paper's
    and veRL's first so an early stop still holds the better of them; returns the rollout groups
    finished. ``groups`` is a work budget: the first that many rollout groups in enumeration
    order, the same on every machine. A group costs its distinct epochs; under a caller's time
    limit (``deadline.time_limit``) the enumeration stops before a step that the time left cannot
    hold, judged by the slowest step so far; otherwise the limit is the façade's safety cap, and
    an epoch that runs past it stops inside (``costmodels.solving.checkpoint``)."""
    slowest = 0.0
    by_time = deadline.time_limit is not None

    def step(offer: Any) -> None:
        nonlocal slowest
        remaining = deadline.remaining()
        if keep.plan is not None:  # the first plan is always scored, so a plan always comes back
            if by_time and remaining is not None and remaining < slowest:
                raise DeadlineExceeded(
                    f"time limit: {remaining:.1f} s left, a step takes {slowest:.1f} s"
                )
            deadline.check()
        start = time.perf_counter()
        offer()
        slowest = max(slowest, time.perf_counter() - start)

    for first in (paper_plan(problem.workload), verl_plan(problem.workload)):
        step(lambda first=first: keep.offer(first))
    seen = 0
    for group in rollout_groups(problem.workload):
        if groups is not None and seen >= groups:
            break
        step(lambda group=group: [keep.offer(plan) for plan in completions(group)])
        seen += 1
        trace.record(keep.best, keep.offered)
    return seen
