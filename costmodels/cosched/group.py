"""Co-execution groups (RollMux §4.1-4.3): the group model, its cost terms and round-robin
schedule, and the residency and SLO tests the judge (``judge``) and validator (``check``) apply.

**Notation.** Pools of g-GPU nodes: rollout (price p_R per GPU-hour, e.g. H20) and training (p_T,
e.g. H800), host memory M per node. Job j: rollout GPUs r_j -> k_j = ceil(r_j / g) rollout nodes,
training GPUs t_j -> n_j = ceil(t_j / g) nodes, worst-case phase durations R_j and T_j (the job
file's ``t_rollout_s`` / ``t_train_s``: every response at the maximum length, §4.2 "conservative
planning"), SLO_j, warm-state host memory per node m^R_j, m^T_j (the job's, or Table 2 by model
size: ``rollmux_host_memory.csv``).

A group G = (J_G, N^R_G rollout nodes, N^T_G training nodes, P_j ⊆ rollout nodes with |P_j| = k_j).

* **Training follows the pool** (footnote 2: the pool is not scaled, the job's DP degree is):
  T'_j = T_j n_j / N^T_G — the same samples per iteration over N^T_G / n_j times the data
  parallelism, at the same per-GPU throughput (linear DP scaling; rlplan's choice).
* Cost(G) = g (N^R_G p_R + N^T_G p_T) in $/h; the plan's objective is the sum over groups.
* T_solo_j = R_j + T_j (alone on its own r_j + t_j GPUs); T^cycle_G = max_j (R_j + T'_j);
  T^load_G = max(Σ_j T'_j, max_node Σ_{j pinned to it} R_j); G is saturated when
  T^load_G >= T^cycle_G (Algorithm 1 line 4).
* T_coexec_j: the steady-state period of the round-robin meta-iteration (§4.3): jobs in group
  order; job j's rollout starts when all its nodes are free and its previous training has ended,
  its training when the training pool is free and its rollout has ended. Computed exactly as the
  maximum cycle mean of that max-plus event graph (:func:`round_robin_period`; a finite replay
  can run faster than the steady state for many rounds — the property test found one).
  SLO: T_coexec_j <= SLO_j T_solo_j for every member.
* Memory residency: on each rollout node Σ_{j pinned} m^R_j <= M; on each training node
  Σ_{j in G} m^T_j n_j / N^T_G <= M (a job's training state sharded over the pool).
* Training-pool GPU memory: the job training on the pool holds its weights, gradients and Adam
  states fully sharded over the pool's GPUs (FSDP, veRL's trainer): P_j (2 + 4 + 12) B /
  (N^T_G g) <= the GPU's memory, BF16 weights, FP32 gradients, FP32 master weights and two
  moments (the bytes of ``costmodels/memory.py``'s training defaults). A physical floor:
  activations come on top. Jobs without a ``model`` have no parameter count and are not checked.
  A job may also name ``min_train_gpus``, the fewest training GPUs its training may run on (a
  planner that knows its memory plan sets it: the fleet plan, ``costmodels.fleet``); the pool
  then has at least that many, in whole nodes.
* **Co-located** (veRL, §7.4): a group of one job with no rollout pool; both phases on its n_j
  training nodes: R_j (B_R / B_T) (k_j / n_j) + T_j, with B the GPUs' HBM bandwidth (decode is
  memory-bound).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.catalog import get_gpu, get_model
from costmodels.cosched.plan import Group, Member
from costmodels.cosched.problem import CoscheduleProblem, RLJobSpec, table_host_memory
from costmodels.memory import TRAIN_STATE_BYTES_PER_PARAM

SLO_RTOL = 1e-9


@dataclass(frozen=True)
class JobModel:
    """The numbers the group model needs of one job (module doc)."""

    name: str
    k: int  # rollout nodes
    n: int  # training nodes
    roll_s: float
    train_s: float
    slo: float
    mem_roll: float  # GB per rollout node
    mem_train: float  # GB per training node at its own n nodes
    params: float = 0.0  # model parameters (0: no model given)
    min_train_nodes: int = 1  # the fewest training nodes its training may run on

    @property
    def solo_s(self) -> float:
        return self.roll_s + self.train_s


def job_model(job: RLJobSpec, g_rollout: int, g_train: int) -> JobModel:
    roll_mem, train_mem = table_host_memory(job.model)
    return JobModel(
        job.name,
        -(-job.rollout_gpus // g_rollout),
        -(-job.train_gpus // g_train),
        job.t_rollout_s,
        job.t_train_s,
        job.slo,
        job.rollout_host_memory_gb or roll_mem,
        job.train_host_memory_gb or train_mem,
        get_model(job.model).params_b * 1e9 if job.model is not None else 0.0,
        -(-(job.min_train_gpus or 1) // g_train),
    )


class CoschedModel:
    """Prices, node sizes and job models of a problem (built once, shared by every solver)."""

    def __init__(self, problem: CoscheduleProblem):
        s = problem.jobs
        self.spec = s
        self.g_r, self.g_t = s.rollout_pool.gpus_per_node, s.train_pool.gpus_per_node
        gr, gt = get_gpu(s.rollout_pool.gpu), get_gpu(s.train_pool.gpu)
        self.price_r = (gr.usd_per_hour or 0.0) * self.g_r  # per node-hour
        self.price_t = (gt.usd_per_hour or 0.0) * self.g_t
        self.mem_r, self.mem_t = (
            s.rollout_pool.host_memory_gb_per_node,
            s.train_pool.host_memory_gb_per_node,
        )
        self.coloc_roll_factor = gr.hbm_gb_per_s / gt.hbm_gb_per_s
        self.gpu_mem_t = gt.memory_gb
        self.jobs = {j.name: job_model(j, self.g_r, self.g_t) for j in s.jobs}
        self.order = [j.name for j in sorted(s.jobs, key=lambda j: j.arrival_s)]

    def cost(self, rollout_nodes: int, train_nodes: int) -> float:
        return rollout_nodes * self.price_r + train_nodes * self.price_t


@dataclass
class GroupState:
    """A group while solvers build it: members in order, their rollout nodes, the pool sizes."""

    train_nodes: int
    members: list[str]
    pins: dict[str, tuple[int, ...]]
    rollout_nodes: int
    colocated: bool = False

    def copy(self) -> GroupState:
        return GroupState(
            self.train_nodes,
            list(self.members),
            dict(self.pins),
            self.rollout_nodes,
            self.colocated,
        )

    def remove(self, name: str) -> None:
        """Take job ``name`` out and release the rollout nodes no remaining member is pinned to
        (renumbered in order); the training pool is not scaled (§4.1)."""
        self.members.remove(name)
        del self.pins[name]
        if self.members and not self.colocated:
            used = sorted({n for pins in self.pins.values() for n in pins})
            renumber = {old: new for new, old in enumerate(used)}
            self.pins = {k: tuple(renumber[n] for n in v) for k, v in self.pins.items()}
            self.rollout_nodes = len(used)

    def to_group(self) -> Group:
        return Group(
            rollout_nodes=self.rollout_nodes,
            train_nodes=self.train_nodes,
            colocated=self.colocated,
            jobs=[Member(name=m, rollout=list(self.pins[m])) for m in self.members],
        )


def train_state_gb_per_gpu(m: CoschedModel, job: JobModel, train_nodes: int) -> float:
    """GB of ``job``'s training state on each GPU of a ``train_nodes``-node pool (module doc)."""
    return job.params * TRAIN_STATE_BYTES_PER_PARAM / (train_nodes * m.g_t) / 1e9


def train_time(m: CoschedModel, job: JobModel, train_nodes: int) -> float:
    return job.train_s * job.n / train_nodes


def node_loads(m: CoschedModel, g: GroupState) -> list[float]:
    loads = [0.0] * g.rollout_nodes
    for name in g.members:
        for node in g.pins[name]:
            loads[node] += m.jobs[name].roll_s
    return loads


def cycle_and_load(m: CoschedModel, g: GroupState) -> tuple[float, float]:
    """(T^cycle_G, T^load_G) of the module doc."""
    jobs = [m.jobs[n] for n in g.members]
    cycle = max(j.roll_s + train_time(m, j, g.train_nodes) for j in jobs)
    load = max([sum(train_time(m, j, g.train_nodes) for j in jobs), *node_loads(m, g)])
    return cycle, load


def saturated(m: CoschedModel, g: GroupState) -> bool:
    cycle, load = cycle_and_load(m, g)
    return load >= cycle * (1 - 1e-12)


def coexec_times(m: CoschedModel, g: GroupState) -> dict[str, float]:
    """T_coexec of every member: the round-robin meta-iteration's steady period (module doc)."""
    if g.colocated:
        (name,) = g.members
        j = m.jobs[name]
        return {
            name: j.roll_s * m.coloc_roll_factor * j.k / g.train_nodes * (m.g_r / m.g_t)
            + train_time(m, j, g.train_nodes)
        }
    period = round_robin_period(m, g)
    return {name: period for name in g.members}


def round_robin_period(m: CoschedModel, g: GroupState) -> float:
    """The steady-state meta-iteration period of the round-robin schedule, exactly: the maximum
    cycle mean of its max-plus event graph (a simulation's early rounds can run faster than the
    steady state for a while, so a finite replay is not enough).

    Events per job j in meta-iteration k: rollout start s_j(k), training start u_j(k).
    s_j(k) >= u_j(k-1) + T'_j (one token), s_j(k) >= s_i(·) + R_i for i the job before j on each of
    its nodes (same iteration if i comes earlier in the order, else the previous: one token),
    u_j(k) >= s_j(k) + R_j, u_j(k) >= u_i(·) + T'_i for i before j on the training pool (the last
    job's training of the previous iteration precedes the first's: one token). With A0 the
    token-free arcs (acyclic) and A1 the one-token arcs, x(k) = A0* A1 x(k-1) in max-plus
    algebra, and the period is max over elementary cycles of A = A0* A1 of weight / length."""
    names = g.members
    n = 2 * len(names)
    neg = -np.inf
    a0 = np.full((n, n), neg)  # a[to, from] = weight
    a1 = np.full((n, n), neg)
    roll = {nm: m.jobs[nm].roll_s for nm in names}
    train = {nm: train_time(m, m.jobs[nm], g.train_nodes) for nm in names}
    idx = {nm: i for i, nm in enumerate(names)}

    def arc(mat: np.ndarray, to: int, frm: int, w: float) -> None:
        mat[to, frm] = max(mat[to, frm], w)

    for nm in names:
        i = idx[nm]
        arc(a1, 2 * i, 2 * i + 1, train[nm])  # previous training of the same job
        arc(a0, 2 * i + 1, 2 * i, roll[nm])  # its own rollout
    for node in range(g.rollout_nodes):
        on = [nm for nm in names if node in g.pins[nm]]
        for a, b in zip(on, on[1:], strict=False):
            arc(a0, 2 * idx[b], 2 * idx[a], roll[a])
        if on:
            arc(a1, 2 * idx[on[0]], 2 * idx[on[-1]], roll[on[-1]])
    for a, b in zip(names, names[1:], strict=False):
        arc(a0, 2 * idx[b] + 1, 2 * idx[a] + 1, train[a])
    arc(a1, 2 * idx[names[0]] + 1, 2 * idx[names[-1]] + 1, train[names[-1]])

    def mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # max-plus product
        return np.max(x[:, :, None] + y[None, :, :], axis=1)

    star = np.full((n, n), neg)
    np.fill_diagonal(star, 0.0)
    power = star.copy()
    for _ in range(n):  # A0 is acyclic: its closure is I + A0 + ... + A0^(n-1)
        power = mul(a0, power)
        star = np.maximum(star, power)
    a = mul(star, a1)
    best, walk = neg, a.copy()
    for k in range(1, n + 1):
        best = max(best, float(np.max(np.diag(walk))) / k)
        walk = mul(a, walk)
    return best


def _phase_row(
    k: int, job: str, phase: str, pool: str, nodes: Iterable[int], start: float, end: float
) -> dict[str, Any]:
    """One row of :func:`round_robin_schedule` (its own list of ``nodes``)."""
    return {
        "iteration": k,
        "job": job,
        "phase": phase,
        "pool": pool,
        "nodes": list(nodes),
        "start": start,
        "end": end,
    }


def round_robin_schedule(
    m: CoschedModel, g: GroupState, iterations: int = 2
) -> list[dict[str, Any]]:
    """The round-robin meta-iterations of ``g`` as phases on the pools, earliest start (the event
    rules of :func:`round_robin_period`): one row per phase with its job, ``rollout`` or
    ``train``, the group-local nodes it holds and its start and end (seconds). A co-located
    group runs both phases on its training nodes."""
    rows: list[dict[str, Any]] = []
    node_free = [0.0] * g.rollout_nodes
    train_free = 0.0
    ready = dict.fromkeys(g.members, 0.0)
    times = coexec_times(m, g) if g.colocated else None
    for k in range(iterations):
        for name in g.members:
            j = m.jobs[name]
            t_train = train_time(m, j, g.train_nodes)
            train_nodes = range(g.train_nodes)
            if g.colocated:
                roll = times[name] - t_train
                start = max(ready[name], train_free)
                rows.append(
                    _phase_row(k, name, "rollout", "train", train_nodes, start, start + roll)
                )
                end = start + roll + t_train
                rows.append(_phase_row(k, name, "train", "train", train_nodes, start + roll, end))
                ready[name] = train_free = end
                continue
            pins = g.pins[name]
            start = max([ready[name], *(node_free[n] for n in pins)])
            end = start + j.roll_s
            for n in pins:
                node_free[n] = end
            t0 = max(end, train_free)
            ready[name] = train_free = t0 + t_train
            rows.append(_phase_row(k, name, "rollout", "rollout", pins, start, end))
            rows.append(_phase_row(k, name, "train", "train", train_nodes, t0, t0 + t_train))
    return rows


def memory_ok(m: CoschedModel, g: GroupState) -> bool:
    """Host-memory residency and training-pool GPU memory (module doc)."""
    return gpu_memory_ok(m, g) and host_memory_ok(m, g)


def gpu_memory_ok(m: CoschedModel, g: GroupState) -> bool:
    return train_state_fits(m, g.members, g.train_nodes)


def train_state_fits(m: CoschedModel, members: list[str], train_nodes: int) -> bool:
    """Every member's training state on the GPUs of a ``train_nodes``-node pool (module doc),
    and the pool no smaller than any member's ``min_train_gpus``."""
    return all(
        train_state_gb_per_gpu(m, m.jobs[n], train_nodes) <= m.gpu_mem_t + 1e-9
        and train_nodes >= m.jobs[n].min_train_nodes
        for n in members
    )


def train_host_memory_ok(m: CoschedModel, members: list[str], train_nodes: int) -> bool:
    """The members' training warm states, each sharded over the pool, in a training node's host
    memory (module doc)."""
    return sum(m.jobs[n].mem_train * m.jobs[n].n for n in members) / train_nodes <= m.mem_t + 1e-9


def host_memory_ok(m: CoschedModel, g: GroupState) -> bool:
    if g.colocated:
        (name,) = g.members
        j = m.jobs[name]
        return j.mem_train * j.n / g.train_nodes + j.mem_roll <= m.mem_t + 1e-9
    per_node = [0.0] * g.rollout_nodes
    for name in g.members:
        for n in g.pins[name]:
            per_node[n] += m.jobs[name].mem_roll
    if any(x > m.mem_r + 1e-9 for x in per_node):
        return False
    return train_host_memory_ok(m, g.members, g.train_nodes)


def slo_ok(m: CoschedModel, g: GroupState) -> bool:
    """Every member within its SLO. A disaggregated group's members share one period, at least
    T^cycle and T^load, and equal to T^cycle when T^load <= T^cycle (Theorem 1, checked by the
    property test): only a saturated group that the bounds do not settle needs the max-plus
    period (the validator always computes it, :func:`check_cosched`)."""
    if not g.colocated:
        target = min(m.jobs[n].slo * m.jobs[n].solo_s for n in g.members) * (1 + SLO_RTOL)
        cycle, load = cycle_and_load(m, g)
        if max(cycle, load) > target:
            return False
        if load <= cycle:
            return True
    times = coexec_times(m, g)
    return all(times[n] <= m.jobs[n].slo * m.jobs[n].solo_s * (1 + SLO_RTOL) for n in g.members)


def group_ok(m: CoschedModel, g: GroupState, slo: bool = True) -> bool:
    """Group size and memory residency, and every member's SLO unless ``slo`` is False (the
    §7.5 baselines' "can accommodate")."""
    return len(g.members) <= m.spec.max_group_size and memory_ok(m, g) and (not slo or slo_ok(m, g))


def colocated_group(m: CoschedModel, name: str) -> GroupState | None:
    """Job ``name`` co-located on the fewest training nodes, from its n_j up to 8 n_j, that meet its
    SLO and hold both warm states; None when none does."""
    n = m.jobs[name].n
    for nodes in range(n, 8 * n + 1):
        g = GroupState(nodes, [name], {name: ()}, 0, colocated=True)
        if group_ok(m, g):
            return g
    return None


def state_of(group: Group) -> GroupState:
    return GroupState(
        group.train_nodes,
        [j.name for j in group.jobs],
        {j.name: tuple(j.rollout) for j in group.jobs},
        group.rollout_nodes,
        group.colocated,
    )


def cosched_model(problem: CoscheduleProblem) -> CoschedModel:
    """The group model's view of the problem's jobs, built once per problem and shared by every
    solver (kept on the problem object: the problem is the spec layer and does not know this
    one)."""
    cached = problem.__dict__.get("_model")
    if cached is None:
        cached = CoschedModel(problem)
        object.__setattr__(problem, "_model", cached)
    return cached
