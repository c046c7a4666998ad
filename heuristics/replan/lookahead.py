"""The proactive planner's simulated check (OrchestrRL §4.1, Event 1, made safe): before a plan is
applied, the rest of the step is simulated on the request-level engine
(``costmodels.generation.engine``) from what the planner observes, once as it stands and once
per candidate plan, on the same estimated lengths; the plan is applied only when its simulated
makespan beats standing still.

*Why.* Eq. 1 judges a plan by a plane model of each instance's completion time T_j over
estimated lengths. Its optimum exploits that model's error: on Qwen2.5-32B under round-robin
dispatch a mixed plan looked like 127 s and ran 263-281 s, since a 15 360-token request left on a
TP2 instance alone takes about 218 s, and the MILP as the online solver accepted by Eq. 1's margin
fell to 0.93x the best static layout where behind this check it reaches 1.02-1.08x
(``benchmarks/results/replan/end_to_end.md``). The engine
that scores the benchmark is the one that checks the plan, so what remains is the length
estimate's error, not the model's, and a decision that never beats keeping the current layout is
never taken (the comparison is on common draws: both sides see the same lengths).

**The what-if.** From an observation: every instance at its TP (released ones stay released);
every request not done where it is, with ``generated`` tokens already made and an estimated
output ``generated + r``, r a draw of the forecast's remaining length given what it has made
(``forecast.conditional_remaining``); requests that are running keep their KV (no prefill), the
waiting ones queue behind them. A candidate's actions (reconfigure, release, acquire, migrate,
dispatch: ``ProactivePlanner.plan_actions``) are applied at time 0 by the engine itself, which
charges the weight re-sharding, the KV transfer or recompute of moved requests and the restart of
a reconfigured instance (OrchestrRL Appendix A), exactly as in the run being planned.

**Draws.** Draw k gives request i the level (u_i + k / K) mod 1, u_i the golden-ratio level of
``forecast.spread_level``: K shifted copies of the same low-discrepancy sequence, so every draw
reproduces the conditional distribution, tail included, and the result depends on nothing but
the observation. The score of a candidate is its mean simulated makespan over the draws.

**Work budget.** A decision simulates at most ``budget`` request-runs (requests x candidates x
draws): draws fall first (down to one), then the candidates ranked last by Eq. 1's objective, so
the decision's cost is bounded by work, never by wall time (docs/architecture.md, "Solver
plumbing"). Units: seconds, tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, ServingParams
from costmodels.generation.engine import Engine
from costmodels.generation.policy import Action, Observation, Release
from costmodels.generation.requests import Request
from heuristics.replan.forecast import conditional_remaining, spread_level

#: request-runs a decision may simulate (requests x (candidates + 1) x draws): the §6 settings
#: (1 024 requests, six candidates) never reach it at three draws; a look over 16 384 requests
#: falls to fewer draws, then fewer candidates (at 1 024 GPUs the planner's looks came after most
#: requests were done and kept three draws, 0.7 s a look: ``benchmarks/replan_end_to_end.py``)
BUDGET = 50_000


@dataclass(frozen=True)
class WhatIf:
    """What the simulated check needs besides the observation: the pool's model, GPU, serving
    knobs and the forecast's sorted lengths."""

    model: str
    gpu: str
    serving: ServingParams
    sorted_forecast: np.ndarray
    block_size: int = 16


def draw_outputs(
    obs: Observation, sorted_forecast: np.ndarray, draw: int, draws: int
) -> dict[int, int]:
    """Estimated output length of every request not done, for draw ``draw`` of ``draws`` (module
    doc, "Draws")."""
    out = {}
    for rid, r in obs.requests.items():
        if r.state in ("done", "aborted"):
            continue
        level = (spread_level(rid) + draw / draws) % 1.0
        out[rid] = r.generated + conditional_remaining(sorted_forecast, r.generated, level)
    return out


def simulate_from(
    obs: Observation, what: WhatIf, outputs: dict[int, int], actions: Sequence[Action] = ()
) -> float:
    """Seconds from ``obs.time`` until every request is done, when ``actions`` are applied now and
    the requests have ``outputs`` tokens (module doc, "The what-if"); inf when a candidate puts a
    request where it cannot fit."""
    model, gpu = get_model(what.model), get_gpu(what.gpu)
    by_tp: dict[int, Instance] = {}
    instances = [
        by_tp.setdefault(v.tp, Instance(model, gpu, v.tp, what.serving)) for v in obs.instances
    ]
    running = {rid: v.index for v in obs.instances for rid in v.running}
    queued = {rid: v.index for v in obs.instances for rid in (*v.waiting, *v.pending)}
    reqs, where = [], []
    for rid, out in outputs.items():
        r = obs.requests[rid]
        # running requests are admitted first (they hold their KV); queued ones right after
        ready = 0.0 if rid in running else 1e-9
        reqs.append(Request(rid, r.prompt, max(out, r.generated + 1), r.group, ready, r.generated))
        where.append(running.get(rid, queued.get(rid, -1)))
    try:
        engine = Engine(instances, reqs, where, what.block_size)
        for rid, inst in running.items():
            if rid in outputs:
                engine.states[inst].kv_ready.add(rid)
        for v in obs.instances:
            if not v.active:
                engine.apply(Release(v.index), 0.0)
        for a in actions:
            engine.apply(a, 0.0)
        return engine.run().makespan_s
    except ValueError:  # a request the candidate sends somewhere it does not fit
        return float("inf")


def budgeted(requests: int, candidates: int, draws: int, budget: int) -> tuple[int, int]:
    """(candidates, draws) that fit ``budget`` request-runs with keep always simulated (module
    doc, "Work budget"): draws fall first, then candidates; at least keep and one candidate."""
    requests = max(1, requests)
    while draws > 1 and requests * (candidates + 1) * draws > budget:
        draws -= 1
    while candidates > 1 and requests * (candidates + 1) * draws > budget:
        candidates -= 1
    return candidates, draws


def check(
    obs: Observation,
    what: WhatIf,
    candidates: Sequence[Sequence[Action]],
    draws: int,
    budget: int = BUDGET,
) -> tuple[float, list[float], int]:
    """Mean simulated makespan of keeping the pool as it is and of each candidate (in order; the
    ones the budget leaves out score inf), and the draws used (module doc)."""
    pending = sum(1 for r in obs.requests.values() if r.state not in ("done", "aborted"))
    n, k = budgeted(pending, len(candidates), draws, budget)
    keep, scores = 0.0, [0.0] * n
    for d in range(k):
        outputs = draw_outputs(obs, what.sorted_forecast, d, k)
        keep += simulate_from(obs, what, outputs) / k
        for c in range(n):
            scores[c] += simulate_from(obs, what, outputs, candidates[c]) / k
    return keep, scores + [float("inf")] * (len(candidates) - n), k
