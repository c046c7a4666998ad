"""One generation step on the simulator under a named OrchestrRL scheme (OrchestrRL §6):
what ``rlplan simulate generation --policy`` and ``benchmarks/replan_end_to_end.py`` run.

Every scheme dispatches the step's requests the way verl does (``dispatch="chunked"``: each
instance a contiguous chunk of the batch, so a prompt's responses share an instance,
``costmodels.generation.requests.chunked_assignment``); ``dispatch="round-robin"`` deals them out
one by one instead (a kinder baseline: no prompt's tail lands on one instance).

* ``none``: the instances as given, no policy;
* ``verl-to``: the best static TP over the same GPUs (a sweep, judged on this step: an oracle);
* ``verl-lo``: the largest TP that holds the model, everywhere;
* ``proactive``, ``reactive``, ``orchestrrl``: the given uniform TP to start, with Algorithm 1's
  Event 1, Event 2 or both (``heuristics.replan.policies``). The planner's length forecast is
  ``forecast`` (recent steps' lengths or a prior), never the step's true lengths.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, ServingParams, feasible_tps
from costmodels.generation.engine import Engine, simulate
from costmodels.generation.request_traces import synthetic_trace
from costmodels.generation.requests import Request, balanced_assignment, chunked_assignment
from costmodels.generation.result import SimResult
from heuristics.replan.greedy import solve_greedy
from heuristics.replan.policies import (
    Orchestrator,
    Pool,
    ProactivePlanner,
    ReactiveBalancer,
    StartInactive,
)

SCHEMES = ("none", "verl-to", "verl-lo", "proactive", "reactive", "orchestrrl")


DISPATCH = ("chunked", "round-robin")


def assignment(reqs: list[Request], instances: int, dispatch: str) -> list[int]:
    """Request -> instance under ``dispatch`` (module doc)."""
    if dispatch == "chunked":
        return chunked_assignment(reqs, instances)
    if dispatch == "round-robin":
        return balanced_assignment(reqs, instances)
    raise ValueError(f"unknown dispatch {dispatch!r}; known: {', '.join(DISPATCH)}")


def static_run(
    model: str,
    gpu: str,
    gpus: int,
    tp: int,
    reqs: list[Request],
    params: ServingParams | None = None,
    block_size: int = 16,
    dispatch: str = "chunked",
) -> SimResult:
    inst = Instance(get_model(model), get_gpu(gpu), tp, params or ServingParams())
    n = gpus // tp
    return simulate([inst] * n, reqs, assignment(reqs, n, dispatch), block_size=block_size)


def policy_run(
    model: str,
    gpu: str,
    nodes: int,
    gpus_per_node: int,
    tp: int,
    reqs: list[Request],
    forecast: np.ndarray,
    proactive: bool,
    reactive: bool,
    tps: list[int],
    params: ServingParams | None = None,
    block_size: int = 16,
    solver: Any = None,
    dispatch: str = "chunked",
    planner_options: dict[str, Any] | None = None,
) -> tuple[SimResult, dict[str, Any]]:
    """Start at uniform TP ``tp`` and run the chosen policies (module doc)."""
    params = params or ServingParams()
    pool = Pool(model, gpu, nodes, gpus_per_node, min(tps), params)
    instances, active = pool.instances(tp)
    order = sorted(active)
    first = [order[k] for k in assignment(reqs, len(order), dispatch)]
    engine = Engine(instances, reqs, first, block_size)
    policies: list[Any] = [StartInactive([i for i in range(len(instances)) if i not in active])]
    planner = (
        ProactivePlanner(pool, forecast, solver or solve_greedy, tps, **(planner_options or {}))
        if proactive
        else None
    )
    balancer = ReactiveBalancer(block_size=block_size) if reactive else None
    if planner and balancer:
        policies.append(Orchestrator(planner, balancer))
    elif planner or balancer:
        policies.append(planner or balancer)
    res = engine.run(policies)
    return res, {
        "plans": planner.log if planner else [],
        "migrations": len(balancer.moves) if balancer else 0,
    }


def replayed_start(
    model: str,
    gpu: str,
    nodes: int,
    gpus_per_node: int,
    past_steps: list[list[Request]],
    forecast: np.ndarray,
    tps: list[int],
    starts: list[int] | None = None,
    **run: Any,
) -> tuple[int, dict[int, float]]:
    """The uniform TP a step starts from: the last steps (``past_steps``), whose lengths are all
    known once they have finished, replayed under OrchestrRL (planner and balancer, as they will
    run, ``run`` passed on to :func:`policy_run`) from every TP of ``starts`` (default: ``tps``,
    which the planner may choose from); the start with the least total, and every start's
    replayed total makespan.

    *Why a replay.* Where a step should start is not a property of the start alone: on 14B under
    chunked dispatch TP2 or TP4 then TP8 beats any layout held throughout, and on 32B under
    round-robin TP8 throughout wins because its longest responses need TP8 from the first token
    (``benchmarks/replan_end_to_end.py``). A look at the step's first tick judges a switch against
    standing still and cannot credit the re-plans still to come, so it picks the best static
    layout (measured there: 0.98-1.01x of starting at TP2 with the check); simulating each
    start's whole step on the forecast alone misses the prompt groups' correlation and was as
    noisy (0.98-1.08x). Lengths drift slowly from step to step (5%/step in the §6 traces), so the
    last steps' real lengths stand in for the next step's. The replay plans on ``forecast``,
    never on the lengths it replays. Ties go to the smaller TP (the paper's start)."""
    spans = {}
    starts = starts or tps
    for tp in starts:
        spans[tp] = sum(
            policy_run(
                model, gpu, nodes, gpus_per_node, tp, step, forecast, True, True, tps, **run
            )[0].makespan_s
            for step in past_steps
        )
    return min(starts, key=lambda t: (spans[t], t)), spans


def prior_lengths(seed: int = 0) -> np.ndarray:
    """A length forecast with no history: the calibrated synthetic generator (a different seed
    than any step it plans), never the step's own lengths."""
    return np.array([r.output for r in synthetic_trace(256, 16, 16384, seed=seed + 1)])


def run_scheme(
    scheme: str,
    model: str,
    gpu: str,
    gpus: int,
    tp: int,
    reqs: list[Request],
    forecast: np.ndarray | None,
    params: ServingParams | None = None,
    block_size: int = 16,
    gpus_per_node: int = 8,
    seed: int = 0,
    dispatch: str = "chunked",
) -> tuple[SimResult, dict[str, Any]]:
    """One step under ``scheme`` on ``gpus`` GPUs (module doc); (result, details). ``forecast``
    None: :func:`prior_lengths`."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown policy {scheme!r}; known: {', '.join(SCHEMES)}")
    if forecast is None:
        forecast = prior_lengths(seed)
    tps = [
        t
        for t in feasible_tps(get_model(model), gpus_per_node, gpus_per_node)
        if Instance(
            get_model(model), get_gpu(gpu), t, params or ServingParams()
        ).kv_capacity_tokens()
        > 0
    ]
    if scheme == "none":
        return static_run(model, gpu, gpus, tp, reqs, params, block_size, dispatch), {"tp": tp}
    if scheme in ("verl-to", "verl-lo"):
        runs = {
            t: static_run(model, gpu, gpus, t, reqs, params, block_size, dispatch)
            for t in (tps if scheme == "verl-to" else [max(tps)])
        }
        best = min(runs, key=lambda t: runs[t].makespan_s)
        return runs[best], {"tp": best, "makespans": {t: r.makespan_s for t, r in runs.items()}}
    if gpus % gpus_per_node:
        raise ValueError(
            f"policies re-plan whole {gpus_per_node}-GPU nodes; {gpus} GPUs is not a multiple"
        )
    res, info = policy_run(
        model,
        gpu,
        gpus // gpus_per_node,
        gpus_per_node,
        tp,
        reqs,
        forecast,
        scheme in ("proactive", "orchestrrl"),
        scheme in ("reactive", "orchestrrl"),
        tps,
        params,
        block_size,
        dispatch=dispatch,
    )
    return res, {"tp": tp, **info}
