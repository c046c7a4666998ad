"""RLinf's auto-placement as a placement baseline: reimplemented from its public code
(``RLinf/RLinf`` ``toolkits/auto_placement`` at a3816b59: ``workflow.py``, ``node.py``,
``placement.py``, ``auto_placement_worker.py``), not copied, and fed by rlplan's judge where RLinf
reads profiles.

**What RLinf plans.** One job on a pool of N interchangeable GPUs, given as a count. The workflow
is a chain of components, rollout -> inference -> actor; RLinf collapses strongly connected
components into a DAG and recurses over the splits of its topological order into a source and a
sink part, memoised on (part, GPU count). Each part runs either *colocated* (time-multiplexed on
all the part's GPUs: the parts' times add) or *pipelined* (source and sink on disjoint GPU ranges,
every split of the count tried). For a reasoning workflow it drops hybrids, so the answers are
"every component on all N GPUs" or "every component on its own contiguous range", and its cost
estimate of a schedule, per prompt group (B prompt groups a step, micro-batches of one group), is

    colocated:  B * sum_k c_k(N)
    pipelined:  sum_k c_k(n_k) + (B - 1) * max_k c_k(n_k)        (fill, then the bottleneck)

**Profiles and their scaling.** RLinf reads each component's seconds per step measured colocated
on all N GPUs (``profile_data``), c_k(N) = profiled / B, and scales to n < N GPUs (s = N / n)::

    rollout:                 c(N)          if (n / mp) instances x cap >= B x group size
                             c(N) * s      otherwise          (cap: max_running_requests,
                                                               x 0.9 from 128 up)
    inference and training:  c(N) * s / (1 + min(0.9, max(s / 10, 0.1)))

with n a multiple of the component's model-parallel size mp (TP x PP, fixed by the profiled
configuration: RLinf does not choose it) and, for inference and training, DP = n / mp dividing
the prompts of a mini-batch (RLinf's ``get_valid_gpu_num_list``; any multiple of mp when none
does). Here the profile is the judge's: the phases of the best verl-style colocated plan on the
pool with the engine's default batch (``costmodels.placement.space.colocated_candidates``, what
the user ran before planning), and each component keeps that plan's TP, PP and generation batch
on the range it gets.

**rlplan's workflow on RLinf's chain.** RLinf models rollout, (recomputed log-prob) inference and
actor training only. Generation is the rollout; every inference task (reference, critic, reward)
is the inference component, sharing its range; every training task (actor, critic) is the
training component. The weight sync is not a component (RLinf does not cost it); the judge does.

**A heterogeneous cluster** is handed to RLinf as it would be by a user: RLinf takes one pool of
one GPU type. Each GPU type's GPUs form a pool of their own, and (with more than one type) so
does the whole cluster in cluster order, as if its GPUs were interchangeable; each pool is
profiled and planned, and the schedule with the smallest RLinf estimate over all pools is
deployed. It is a restriction: RLinf never splits a component across types by speed, never
uses two pools at once, and its ranges ignore node boundaries (TP groups may straddle nodes).

**What is deployed.** RLinf has no memory model, so its best estimate may not fit: schedules are
tried in the order of RLinf's estimate (colocated first on ties, as RLinf keeps the first of equal
costs) and the first that rlplan's validator accepts is returned, judged by rlplan's judge. The
effort is deterministic: at most ``schedules_checked`` validations.

**Why its estimate and the judge part.** RLinf's pipelined runtime streams prompt groups from
rollout to inference to training inside one step; rlplan's synchronous step runs the phases one
after another even on disjoint GPUs (HetRL Appendix B.4), and its asynchronous modes overlap
whole steps. So a pipelined split is judged as the workflow's mode runs it, and RLinf's estimate
of it (its fill plus bottleneck) is optimistic by up to the sum of the other phases.

**Departures**, each what a systems engineer would choose: RLinf's pipelined source range runs
to N - 2 GPUs (its ``range(1, gpu_num - 1)``, which looks like an off-by-one); every split is
tried here. RLinf's embodied (environment) branch is not modelled: rlplan plans reasoning RL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.placement.space import (
    TaskConfig,
    build_plan,
    colocated_candidates,
    placement_keeper,
)
from costmodels.solving import Deadline, SolverOutput, Status
from costmodels.workflow import TaskKind

#: schedules validated, in RLinf's order, before giving up (deterministic effort)
DEFAULT_SCHEDULES = 20_000
#: RLinf's rollout capacity derating: max_running_requests x 0.9 from 128 up
CAP_DERATE, CAP_DERATE_FROM = 0.9, 128
COMPONENTS = ("rollout", "inference", "training")


@dataclass(frozen=True)
class Profile:
    """One pool's profile: the colocated plan's per-component seconds per step, its model-parallel
    sizes and configurations."""

    gpus: tuple[str, ...]
    label: str
    seconds: dict[str, float]
    mp: dict[str, int]
    gen_config: TaskConfig
    shared_config: TaskConfig
    plan: PlacementPlan


def pools(problem: PlacementProblem) -> list[tuple[str, list[str]]]:
    """Each GPU type's GPUs, and with several types the whole cluster, in cluster order (module
    doc)."""
    by_type: dict[str, list[str]] = {}
    for d in problem.topology.devices:
        by_type.setdefault(d.gpu.name, []).append(d.id)
    out = [(f"{t} pool", ids) for t, ids in by_type.items()]
    if len(by_type) > 1:
        out.insert(0, ("whole cluster", [d.id for d in problem.topology.devices]))
    return out


def profile_pool(
    problem: PlacementProblem, label: str, gpus: list[str], deadline: Deadline
) -> Profile | None:
    """The judge's profile of ``gpus``: the best valid verl-style colocated plan there, with the
    engine's default batch ("as many as fit": a profiling run does not tune it), or None when none
    fits."""
    index = problem.topology.index_of()
    nodes: dict[str, int] = {}
    for g in gpus:
        node = problem.topology.devices[index[g]].node
        nodes[node] = nodes.get(node, 0) + 1
    keep = placement_keeper(problem)
    for plan in colocated_candidates(
        problem,
        balances=("even",),
        max_tp=max(min(nodes.values()), 1),
        gpus=gpus,
        as_many_as_fit=True,
    ):
        if deadline.expired() and keep.plan is not None:
            break
        keep.offer(plan)
    if keep.plan is None:
        return None
    plan = keep.plan
    phases = evaluate_placement(problem, plan).breakdown["phases"]
    gen = next(t for t in problem.tasks if t.kind is TaskKind.GENERATION)
    other = next(t for t in problem.tasks if t.kind is not TaskKind.GENERATION)
    g, o = plan.task(gen.name), plan.task(other.name)
    gen_cfg = TaskConfig(g.tp, 1, g.dp, decode_batch=g.decode_batch)
    shared = TaskConfig(o.tp, o.pp, o.dp)
    return Profile(
        gpus=tuple(gpus),
        label=label,
        seconds={
            "rollout": phases["generation_s"],
            "inference": phases["inference_s"],
            "training": phases["training_s"],
        },
        mp={"rollout": g.tp, "inference": o.tp * o.pp, "training": o.tp * o.pp},
        gen_config=gen_cfg,
        shared_config=shared,
        plan=plan,
    )


def cost_tables(problem: PlacementProblem, prof: Profile) -> dict[str, dict[int, float]]:
    """Per component, RLinf's per-group cost at every valid GPU count (module doc)."""
    wf = problem.workflow
    n_all = len(prof.gpus)
    batch = wf.global_batch
    mini_prompts = wf.mini_batch or wf.global_batch
    limit = wf.decode_batch_size
    cap = math.ceil(limit * CAP_DERATE) if limit >= CAP_DERATE_FROM else limit
    out: dict[str, dict[int, float]] = {}
    for comp in COMPONENTS:
        c0 = prof.seconds[comp] / batch
        mp = prof.mp[comp]
        table = {n_all: c0}
        counts = [n for n in range(mp, n_all, mp)]
        if comp != "rollout":
            valid = [n for n in counts if mini_prompts % (n // mp) == 0]
            counts = valid or counts
        for n in counts:
            s = n_all / n
            if comp == "rollout":
                table[n] = c0 if (n // mp) * cap >= batch * wf.responses_per_prompt else c0 * s
            else:
                table[n] = c0 * s / (1 + min(0.9, max(s / 10, 0.1)))
        out[comp] = table
    return out


def schedules(
    problem: PlacementProblem, prof: Profile
) -> list[tuple[float, tuple[int, int, int] | None]]:
    """Every schedule RLinf weighs on the pool with its estimate (module doc): colocated (None)
    first, then every (rollout, inference, training) split of the pool."""
    batch = problem.workflow.global_batch
    tables = cost_tables(problem, prof)
    n_all = len(prof.gpus)
    out: list[tuple[float, tuple[int, int, int] | None]] = [
        (batch * sum(tables[c][n_all] for c in COMPONENTS), None)
    ]
    roll, inf, trn = (tables[c] for c in COMPONENTS)
    for n1, c1 in sorted(roll.items()):
        for n2, c2 in sorted(inf.items()):
            n3 = n_all - n1 - n2
            c3 = trn.get(n3)
            if n3 <= 0 or n1 == n_all or n2 == n_all or c3 is None:
                continue
            out.append((c1 + c2 + c3 + (batch - 1) * max(c1, c2, c3), (n1, n2, n3)))
    return out


def deploy(problem: PlacementProblem, prof: Profile, split: tuple[int, int, int] | None):
    """The rlplan plan of a schedule: colocated, the profiled plan; pipelined, contiguous ranges
    of the pool in chain order, each component with its profiled TP and PP."""
    if split is None:
        return prof.plan
    n1, n2, _ = split
    gpus = list(prof.gpus)
    ranges = {"rollout": gpus[:n1], "inference": gpus[n1 : n1 + n2], "training": gpus[n1 + n2 :]}
    kind_of = {
        TaskKind.GENERATION: "rollout",
        TaskKind.INFERENCE: "inference",
        TaskKind.TRAINING: "training",
    }
    groups: dict[str, list[str]] = {c: [] for c in COMPONENTS}
    configs: dict[str, TaskConfig] = {}
    for t in problem.tasks:
        comp = kind_of[t.kind]
        groups[comp].append(t.name)
        n = len(ranges[comp])
        if comp == "rollout":
            g = prof.gen_config
            configs[t.name] = TaskConfig(g.tp, 1, n // g.tp, decode_batch=g.decode_batch)
        else:
            s = prof.shared_config
            configs[t.name] = TaskConfig(s.tp, s.pp, n // (s.tp * s.pp))
    return build_plan(problem, [(groups[c], ranges[c]) for c in COMPONENTS if groups[c]], configs)


def solve_rlinf(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    schedules_checked: Annotated[
        int,
        Field(
            ge=1,
            le=10**7,
            description="most schedules validated in RLinf's order before giving up",
        ),
    ] = DEFAULT_SCHEDULES,
) -> SolverOutput:
    """RLinf's auto-placement (module doc): profile each pool colocated, rank every schedule by
    RLinf's estimate, deploy the first that rlplan's validator accepts."""
    del seed  # deterministic
    deadline = Deadline(time_limit)
    ranked: list[tuple[float, int, int, Profile, tuple[int, int, int] | None]] = []
    profiled = []
    for label, gpus in pools(problem):
        prof = profile_pool(problem, label, gpus, deadline)
        if prof is None:
            continue
        profiled.append(label)
        p = len(profiled) - 1
        ranked += [
            (est, p, k, prof, split) for k, (est, split) in enumerate(schedules(problem, prof))
        ]
    stats: dict[str, float | int | str] = {"pools": len(profiled), "schedules": len(ranked)}
    if not ranked:
        return SolverOutput(
            Status.INFEASIBLE,
            message="no pool has a co-located plan that fits (RLinf profiles colocated runs)",
            stats=stats,
        )
    ranked.sort(key=lambda r: (r[0], r[1], r[2]))
    for tried, (est, _, _, prof, split) in enumerate(ranked[:schedules_checked], start=1):
        if tried > 1 and deadline.expired():
            stats["validated"] = tried - 1
            return SolverOutput(
                Status.NO_SOLUTION,
                message=f"time limit after validating {tried - 1} of RLinf's schedules",
                stats=stats,
            )
        plan = deploy(problem, prof, split)
        if check_placement(problem, plan):
            continue
        objective = evaluate_placement(problem, plan).objective
        shape = (
            "colocated" if split is None else "rollout/inference/training {}/{}/{}".format(*split)
        )
        stats.update(validated=tried, rlinf_estimate_s=est, pool=prof.label)
        return SolverOutput(
            Status.FEASIBLE,
            plan=plan,
            objective=objective,
            message=(
                f"RLinf's pick #{tried} by its estimate ({est:.1f} s), the first that fits: "
                f"{prof.label}, {shape}"
            ),
            stats=stats,
        )
    stats["validated"] = min(len(ranked), schedules_checked)
    return SolverOutput(
        Status.INFEASIBLE,
        message=f"none of RLinf's {stats['validated']} best-ranked schedules fits in memory",
        stats=stats,
    )


#: RLinf-ranked valid schedules of each pool the SHA-EA seed judges
TOP_JUDGED = 8


def solve_rlinf_pools(
    problem: PlacementProblem, *, time_limit: float | None = None, top: int = TOP_JUDGED
) -> SolverOutput:
    """SHA-EA's seed from what RLinf does better at scale (``heuristics.placement.sha_ea``):
    one GPU type's pool alone, colocated or split into rollout, inference and training ranges,
    the other GPUs idle. Pools are visited fastest GPU type first (dense BF16 FLOP/s), so a
    short time limit profiles the likeliest winner; in each, RLinf's ``top`` best-ranked
    schedules that fit are judged and the best by the judge is kept. Not a registered solver:
    the whole-cluster pool is left to the verl seed, which sweeps it."""
    deadline = Deadline(time_limit)
    index = problem.topology.index_of()

    def speed(gpus: list[str]) -> float:
        return problem.topology.devices[index[gpus[0]]].gpu.tflops_bf16_dense

    type_pools = sorted(
        ((label, gpus) for label, gpus in pools(problem) if label != "whole cluster"),
        key=lambda lg: (-speed(lg[1]), lg[0]),
    )
    best: tuple[float, PlacementPlan, str] | None = None
    judged = 0
    for label, gpus in type_pools:
        if deadline.expired():
            break
        prof = profile_pool(problem, label, gpus, deadline)
        if prof is None:
            continue
        kept = 0
        for _, split in sorted(schedules(problem, prof), key=lambda s: s[0]):
            if kept >= top or deadline.expired():
                break
            plan = deploy(problem, prof, split)
            if check_placement(problem, plan):
                continue
            kept += 1
            judged += 1
            cost = evaluate_placement(problem, plan).objective
            if best is None or cost < best[0]:
                best = (cost, plan, label)
    if best is None:
        return SolverOutput(Status.NO_SOLUTION, message="no single-type pool plan fits")
    return SolverOutput(
        Status.FEASIBLE,
        plan=best[1],
        objective=best[0],
        message=f"best of {judged} RLinf-ranked schedules judged (the {best[2]})",
    )
