"""rlplan's placement search space (HetRL §3.2), shared by every placement solver.

Levels 1-4 are searched as in HetRL: a task grouping (set partition of the tasks), disjoint GPU
groups, the concrete GPUs of each group, and a parallel strategy per task. Level 5 (tasklet to
GPU) is canonical: a task uses all of its group's GPUs, taken in cluster order (node by node),
filled TP-innermost, then PP stages, then DP replicas; what Level 5 would tune is instead chosen
by HetRL §4.2's load balancing, a choice per task (``balance``): ``even`` (equal batch shares and
layers, what verl and every homogeneous framework do), ``speed`` (shares and layers in proportion
to the GPUs' speed: HBM bandwidth for generation, FLOP/s otherwise) or ``memory`` (in proportion
to GPU memory, which lets a mixed group fit what an even split cannot); and, for generation, by
the sequences in flight per replica ``dbs``: "as many as fit" (``None``: the workflow's limit
capped per replica by the KV cache that fits beside the group's resident models, which is what a
serving engine does), or the limit and its first three halvings.

Because GPUs of one node are interchangeable on a hierarchical network, a GPU group is
characterised by how many GPUs it takes from each node (its *composition*); the exact ILP and the
brute-force enumerator use that symmetry, the evolutionary searches work on concrete GPUs. All
solvers explore exactly this space, so their objectives are comparable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from costmodels.placement.check import check_placement
from costmodels.placement.frameworks import rules_of
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.memory import task_memory
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import UNLIMITED, Deadline, KeepBest
from costmodels.workflow import Task, TaskKind

#: largest TP degree considered (TP inside an 8-GPU server, as in HetRL's testbed)
MAX_TP = 8


#: load-balancing choices of HetRL §4.2 (module doc)
BALANCES = ("even", "speed", "memory")


@dataclass(frozen=True, order=True)
class TaskConfig:
    """Level 4 (+ load balancing): one task's parallel strategy on its group."""

    tp: int
    pp: int
    dp: int
    balance: str = "even"
    decode_batch: int | None = None

    def label(self) -> str:
        extra = (f", {self.balance}-balanced" if self.balance != "even" else "") + (
            f", dbs={self.decode_batch}" if self.decode_batch else ""
        )
        return f"TP{self.tp} PP{self.pp} DP{self.dp}{extra}"


def decode_batch_candidates(max_dbs: int, count: int = 4) -> tuple[int, ...]:
    """The engine limit and its halvings (``count`` values at most, never below 1). Smaller
    explicit caps are left out: "as many as fit" (``None``) already runs every smaller batch the
    memory forces, and a decode never gets faster with fewer sequences in flight."""
    out = []
    b = max_dbs
    while b >= 1 and len(out) < count:
        out.append(b)
        b //= 2
    return tuple(out)


def task_configs(
    problem: PlacementProblem, task: Task, gpus: int, heterogeneous: bool = True
) -> list[TaskConfig]:
    """Every (TP, PP, DP) with TP*PP*DP == ``gpus`` that the model admits, with and without
    load balancing (only when the group mixes GPU types), and decode-batch choices for
    generation; with a framework target, only those the framework runs
    (:meth:`~costmodels.placement.frameworks.FrameworkRules.admits_config`)."""
    m = problem.workflow.model(task.role)
    rules = rules_of(problem)
    out = []
    for tp in range(1, min(gpus, MAX_TP) + 1):
        if gpus % tp or m.query_heads % tp or (m.kv_heads % tp and tp % m.kv_heads):
            continue
        rest = gpus // tp
        for pp in range(1, min(rest, m.layers) + 1):
            if rest % pp:
                continue
            dp = rest // pp
            balances = BALANCES if heterogeneous and (dp > 1 or pp > 1) else ("even",)
            dbs_options: tuple[int | None, ...] = (None,)
            if task.kind is TaskKind.GENERATION:
                # None: as many as fit beside the group's resident models, per replica (vLLM's
                # admission under max_num_seqs = the workflow's limit; what verl runs)
                dbs_options = (None, *decode_batch_candidates(problem.workflow.decode_batch_size))
            for bal in balances:
                for dbs in dbs_options:
                    cfg = TaskConfig(tp, pp, dp, bal, dbs)
                    if rules is None or rules.admits_config(problem, task.name, cfg):
                        out.append(cfg)
    return out


def _weights(problem: PlacementProblem, task: Task, balance: str) -> dict[str, float]:
    """Each GPU's balancing weight (memory GB, HBM GB/s for generation, dense BF16 TFLOP/s
    otherwise; a TP group weighs its least member's), per topology (a search places every
    configuration on every group)."""
    what = (
        "memory_gb"
        if balance == "memory"
        else ("hbm_gb_per_s" if task.kind is TaskKind.GENERATION else "tflops_bf16_dense")
    )
    memo = problem.topology.memo.setdefault("balance_weights", {})
    hit = memo.get(what)
    if hit is None:
        hit = memo[what] = {d: getattr(g, what) for d, g in problem.topology.gpu_of().items()}
    return hit


def proportional_split(total: int, weights: list[float]) -> list[int]:
    """Integers >= 1 summing to ``total`` in proportion to ``weights`` (largest remainder)."""
    n = len(weights)
    if total < n:
        raise ValueError("fewer units than parts")
    raw = [total * w / sum(weights) for w in weights]
    base = [max(1, math.floor(r)) for r in raw]
    while sum(base) > total:
        i = max(range(n), key=lambda k: (base[k] - raw[k], k))
        base[i] -= 1
    order = sorted(range(n), key=lambda k: (-(raw[k] - base[k]), k))
    k = 0
    while sum(base) < total:
        base[order[k % n]] += 1
        k += 1
    return base


def tasklet_layout(devices: list[str], tp: int, pp: int, dp: int) -> list[list[list[str]]]:
    """Tasklet map [dp][pp][tp] filling ``devices`` in order, TP innermost (Level 5)."""
    return [
        [devices[(i * pp + j) * tp : (i * pp + j + 1) * tp] for j in range(pp)] for i in range(dp)
    ]


def place_task(
    problem: PlacementProblem, task: Task, group_gpus: list[str], cfg: TaskConfig
) -> TaskPlacement:
    """Canonical tasklet layout of ``task`` on ``group_gpus`` (already in cluster order)."""
    if cfg.tp * cfg.pp * cfg.dp != len(group_gpus):
        raise ValueError(
            f"{cfg.label()} needs {cfg.tp * cfg.pp * cfg.dp} GPUs, the group has {len(group_gpus)}"
        )
    devices = tasklet_layout(group_gpus, cfg.tp, cfg.pp, cfg.dp)
    layers = shares = None
    if cfg.balance != "even":
        m = problem.workflow.model(task.role)
        # each TP group's weight (its slowest member's speed, or its smallest memory), taken
        # once for both splits below
        per_gpu = list(map(_weights(problem, task, cfg.balance).__getitem__, group_gpus))
        if cfg.tp > 1:  # the layout's TP groups are consecutive runs of tp GPUs
            per_gpu = [min(per_gpu[k : k + cfg.tp]) for k in range(0, len(per_gpu), cfg.tp)]
        w = [per_gpu[i * cfg.pp : (i + 1) * cfg.pp] for i in range(cfg.dp)]
        if cfg.pp > 1:
            # a stage's weight: its weakest TP group over the replicas
            stage_w = [min(w[i][j] for i in range(cfg.dp)) for j in range(cfg.pp)]
            layers = proportional_split(m.layers, stage_w)
        if cfg.dp > 1:
            weight = [sum(row) for row in w]
            total = sum(weight)
            shares = [s / total for s in weight]
    # built from a TaskConfig and the group's own GPUs, so valid by construction: validating
    # it again was a tenth of the ILP's single-task tables (a search places every
    # configuration on every composition)
    return TaskPlacement.model_construct(
        task=task.name,
        tp=cfg.tp,
        pp=cfg.pp,
        dp=cfg.dp,
        devices=devices,
        layers_per_stage=layers,
        batch_shares=shares,
        decode_batch=cfg.decode_batch,
    )


def build_plan(
    problem: PlacementProblem,
    groups: list[tuple[list[str], list[str]]],
    configs: dict[str, TaskConfig],
) -> PlacementPlan:
    """A plan from (tasks, GPUs) groups and a config per task; GPUs are put in cluster order."""
    index = problem.topology.index_of()
    tasks = {t.name: t for t in problem.tasks}
    plan_groups, placements = [], []
    for names, gpus in groups:
        ordered = sorted(gpus, key=lambda d: index[d])
        plan_groups.append(TaskGroup(tasks=list(names), devices=ordered))
        for name in names:
            placements.append(place_task(problem, tasks[name], ordered, configs[name]))
    order = {t.name: i for i, t in enumerate(problem.tasks)}
    placements.sort(key=lambda p: order[p.task])
    return PlacementPlan(groups=plan_groups, tasks=placements)


def node_classes(problem: PlacementProblem) -> list[tuple[str, list[str]]]:
    """Interchangeable GPU classes: the GPUs of each node on a hierarchical network, each GPU on
    its own with an explicit per-GPU matrix."""
    topo = problem.topology
    if topo.explicit_matrix:
        return [(d.id, [d.id]) for d in topo.devices]
    out: dict[str, list[str]] = {}
    for d in topo.devices:
        out.setdefault(d.node, []).append(d.id)
    return list(out.items())


def compositions(capacity: list[int]) -> Iterator[tuple[int, ...]]:
    """Every nonzero per-class GPU count vector within ``capacity``."""
    for c in itertools.product(*(range(k + 1) for k in capacity)):
        if any(c):
            yield c


def is_heterogeneous(problem: PlacementProblem, gpus: list[str]) -> bool:
    index = problem.topology.index_of()
    return len({problem.topology.devices[index[d]].gpu.name for d in gpus}) > 1


def colocated_candidates(
    problem: PlacementProblem,
    balances: tuple[str, ...] = BALANCES,
    max_tp: int = MAX_TP,
    gpus: list[str] | None = None,
    as_many_as_fit: bool = False,
) -> Iterator[PlacementPlan]:
    """verl-style plans inside this space: every task on all GPUs (one group; ``gpus``, in
    cluster order, when given), generation with its own TP (PP = 1), the other tasks sharing one
    (TP, PP, DP), for every decode batch choice (only "as many as fit" with ``as_many_as_fit``,
    the engine's default); only the given load-balancing choices and TP up to ``max_tp``."""
    if gpus is None:
        gpus = [d.id for d in problem.topology.devices]
    names = [t.name for t in problem.tasks]
    for configs in _colocated_configs(problem, balances, max_tp, gpus, as_many_as_fit):
        yield build_plan(problem, [(names, gpus)], configs)


def _colocated_configs(
    problem: PlacementProblem,
    balances: tuple[str, ...],
    max_tp: int,
    gpus: list[str],
    as_many_as_fit: bool,
) -> Iterator[dict[str, TaskConfig]]:
    """The configurations of :func:`colocated_candidates`' plans, in its order."""
    n = len(gpus)
    het = is_heterogeneous(problem, gpus)
    tasks = problem.tasks

    def allowed(c: TaskConfig) -> bool:
        return (
            c.balance in balances
            and c.tp <= max_tp
            and not (as_many_as_fit and c.decode_batch is not None)
        )

    gen = next(t for t in tasks if t.kind is TaskKind.GENERATION)
    gen_cfgs = [c for c in task_configs(problem, gen, n, het) if c.pp == 1 and allowed(c)]
    others = [t for t in tasks if t.kind is not TaskKind.GENERATION]
    shared = None
    for t in others:
        cfgs = {c for c in task_configs(problem, t, n, het) if allowed(c)}
        shared = cfgs if shared is None else shared & cfgs
    for gc in gen_cfgs:
        for oc in sorted(shared or ()):
            yield {gen.name: gc, **{t.name: oc for t in others}}


def _overflows(
    problem: PlacementProblem, gpus: list[str]
) -> Callable[[dict[str, TaskConfig]], bool]:
    """Whether a co-located plan's configurations surely overflow a GPU's memory (C3, as
    ``check.check_placement`` sums it: resident models plus the largest working memory), by a
    margin no summation order can close. Each task's per-GPU memory is computed once per
    configuration, so a sweep builds and validates only the plans that may fit (small-24 PPO:
    150 of 3 600)."""
    tasks = {t.name: t for t in problem.tasks}
    index = problem.topology.index_of()
    devs = [index[g] for g in gpus]
    capacity = np.array(
        [problem.topology.devices[d].gpu.memory_gb - problem.params.memory_reserve_gb for d in devs]
    )
    memo: dict[tuple[str, TaskConfig], tuple[np.ndarray, np.ndarray]] = {}

    def memory(name: str, cfg: TaskConfig) -> tuple[np.ndarray, np.ndarray]:
        hit = memo.get((name, cfg))
        if hit is None:
            per = task_memory(problem, tasks[name], place_task(problem, tasks[name], gpus, cfg))
            hit = memo[(name, cfg)] = (
                np.array([per[d][0] for d in devs]),
                np.array([per[d][1] for d in devs]),
            )
        return hit

    def overflows(configs: dict[str, TaskConfig]) -> bool:
        model, working = np.zeros(len(devs)), np.zeros(len(devs))
        for name, cfg in configs.items():
            mo, wo = memory(name, cfg)
            model += mo
            np.maximum(working, wo, out=working)
        return bool(np.any(model + working > capacity + 1e-6))

    return overflows


def placement_keeper(problem: PlacementProblem, tol: float = 0.0) -> KeepBest:
    """Validate, score and keep the best placement plan (the sweeps of the baselines and of brute
    force): invalid plans are counted, never kept."""
    return KeepBest(
        problem, lambda p, plan: evaluate_placement(p, plan).objective, check_placement, tol
    )


def best_colocated(
    problem: PlacementProblem, deadline: Deadline = UNLIMITED
) -> tuple[float, PlacementPlan | None]:
    """The best valid plan of :func:`colocated_candidates` (an in-space upper bound that the
    exact ILP prunes with and SHA-EA starts from); (inf, None) when none fits."""
    keep = placement_keeper(problem)
    gpus = [d.id for d in problem.topology.devices]
    names = [t.name for t in problem.tasks]
    overflows = _overflows(problem, gpus)
    for configs in _colocated_configs(problem, BALANCES, MAX_TP, gpus, False):
        if deadline.expired():
            break
        if not overflows(configs):  # the validator still judges every plan offered
            keep.offer(build_plan(problem, [(names, gpus)], configs))
    return keep.best, keep.plan
