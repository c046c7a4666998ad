"""Does OrchestrRL's online re-planning pay on a job's generation pool? Measured, not assumed.

The pool is the one the job's placement leaves (``costmodels.job.derive.replan_setting``): its
generation GPUs as whole nodes of one type at the placement's uniform TP. On the generation
simulator (``costmodels.generation``, the request-level engine with continuous batching, KV
capacity and preemption) :data:`STEPS` steps are drawn from the job's length distribution (seeds
0..STEPS-1) and each is run three ways (``heuristics.replan.online``), dispatched as verl does
(contiguous chunks of the batch):

* static at the placement's TP (what the plan deploys);
* OrchestrRL: the same start, with Algorithm 1's proactive planner (Eq. 1 by the greedy, every
  30 s) and reactive balancer; its length forecast is one more step drawn from the job's
  distribution (seed STEPS), never the simulated step's own lengths;
* the best static TP over the same GPUs, chosen on the steps themselves (veRL-TO's oracle): it
  says whether a different static TP would have done what re-planning does.

The decision is ``re-plan`` when OrchestrRL's mean makespan is at least :data:`MARGIN` below the
static one. A systems engineer's threshold: below 2% the switching machinery (KV migration,
weight re-sharding, a framework that runs neither) is not worth deploying for what three
sampled steps can show. The advice is never credited to the step: no framework rlplan exports to
runs OrchestrRL's planner (the paper has no public code), so the plan deploys the static TP.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import numpy as np

from costmodels.decode import ServingParams
from costmodels.generation.request_traces import synthetic_trace
from costmodels.job.derive import ReplanSetting, replan_setting
from costmodels.job.plan import REPLAN_MARGIN, ReplanAdvice
from costmodels.job.problem import JobProblem
from costmodels.placement.plan import PlacementPlan
from costmodels.solving import checkpoint
from heuristics.replan import online

#: steps drawn from the job's length distribution and simulated under each scheme
STEPS = 3
#: the mean makespan re-planning must save to be advised (module doc)
MARGIN = REPLAN_MARGIN


def _run(
    s: ReplanSetting, params: ServingParams, forecast: np.ndarray, reqs: list, scheme: str
) -> tuple[Any, dict[str, Any]]:
    """One step of ``s``'s pool under ``scheme``, dispatched as verl does."""
    return online.run_scheme(
        scheme,
        s.model,
        s.gpu,
        s.nodes * s.gpus_per_node,
        s.tp,
        reqs,
        forecast,
        params,
        gpus_per_node=s.gpus_per_node,
        dispatch="chunked",
    )


def advise_replan(problem: JobProblem, placement: PlacementPlan) -> tuple[ReplanAdvice | None, str]:
    """The re-planning advice for ``placement`` (module doc), or None with the reason the pool
    cannot be re-planned."""
    s, why = replan_setting(problem, placement)
    if s is None:
        return None, why
    params = ServingParams(efficiency=problem.placement.params.efficiency)
    draw = functools.partial(synthetic_trace, s.prompts, s.responses, s.cap, params=s.lengths)
    forecast = np.array([r.output for r in draw(seed=STEPS)])
    static, replanned, best, firsts = [], [], [], []
    best_tp: Counter[int] = Counter()
    switches = migrations = 0
    for seed in range(STEPS):
        checkpoint()  # each step is three simulated schemes: the limit is checked between them
        reqs = draw(seed=seed)
        # the oracle's sweep runs the start TP too: its makespan is the static one
        oracle, sweep = _run(s, params, forecast, reqs, "verl-to")
        spans = sweep["makespans"]
        static.append(
            spans[s.tp] if s.tp in spans else _run(s, params, forecast, reqs, "none")[0].makespan_s
        )
        best.append(oracle.makespan_s)
        best_tp[sweep["tp"]] += 1
        checkpoint()
        res, info = _run(s, params, forecast, reqs, "orchestrrl")
        replanned.append(res.makespan_s)
        applied = [p["time"] for p in info["plans"] if p["applied"]]
        switches += len(applied)
        migrations += info["migrations"]
        if applied:
            firsts.append(applied[0])
    ratio = float(np.mean(replanned) / np.mean(static))
    return (
        ReplanAdvice(
            decision="re-plan" if ratio <= 1 - MARGIN else "keep",
            start_tp=s.tp,
            steps=STEPS,
            static_s=float(np.mean(static)),
            replanned_s=float(np.mean(replanned)),
            ratio=ratio,
            best_static_tp=max(best_tp, key=lambda tp: (best_tp[tp], -tp)),
            best_static_s=float(np.mean(best)),
            first_switch_s=float(np.mean(firsts)) if firsts else None,
            switches=switches,
            migrations=migrations,
        ),
        "",
    )
