"""The independent validator of co-scheduling plans (RollMux §4.1-4.3): every job once, valid
pins, memory residency, the SLO and the group size (``costmodels.cosched.group``'s module
doc)."""

from __future__ import annotations

from costmodels.cosched.group import (
    SLO_RTOL,
    CoschedModel,
    GroupState,
    coexec_times,
    cosched_model,
    host_memory_ok,
    state_of,
    train_state_gb_per_gpu,
)
from costmodels.cosched.plan import CoschedulePlan, Group
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.violations import Violation


def check_cosched(problem: CoscheduleProblem, plan: CoschedulePlan) -> list[Violation]:
    """Independent validator: every job once, pins valid, memory residency, SLO, group size.

    Membership first (every job in exactly one group); only when it holds, each group's size,
    pools and pins, then its memory and SLO."""
    m = cosched_model(problem)
    out = _membership_violations(m, plan)
    if out:
        return out
    for gi, group in enumerate(plan.groups):
        out += _group_violations(m, gi, group)
    return out


def _membership_violations(m: CoschedModel, plan: CoschedulePlan) -> list[Violation]:
    """Every group member is a known job, in one group only, and every job is in a group."""
    out: list[Violation] = []
    seen: dict[str, int] = {}
    for gi, group in enumerate(plan.groups):
        for member in group.jobs:
            if member.name not in m.jobs:
                out.append(Violation("jobs", f"group {gi}: unknown job {member.name!r}"))
            elif member.name in seen:
                out.append(
                    Violation(
                        "jobs", f"job {member.name} is in groups {seen[member.name]} and {gi}"
                    )
                )
            seen.setdefault(member.name, gi)
    for name in m.jobs:
        if name not in seen:
            out.append(Violation("jobs", f"job {name} is in no group"))
    return out


def _group_violations(m: CoschedModel, gi: int, group: Group) -> list[Violation]:
    """Group ``gi``: its size, its pools and pins (a bad one stops there), then training-state
    GPU memory, warm states in host memory and every member's SLO."""
    out: list[Violation] = []
    g = state_of(group)
    if len(g.members) > m.spec.max_group_size:
        out.append(
            Violation(
                "group-size",
                f"group {gi}: {len(g.members)} jobs > max_group_size {m.spec.max_group_size}",
            )
        )
    pools = _pool_violations(m, gi, group, g)
    if pools:
        return out + pools
    for name in g.members:
        if g.train_nodes < m.jobs[name].min_train_nodes:
            out.append(
                Violation(
                    "train-nodes",
                    f"group {gi}: job {name} trains on at least {m.jobs[name].min_train_nodes} "
                    f"training node(s), the group has {g.train_nodes}",
                )
            )
        need = train_state_gb_per_gpu(m, m.jobs[name], g.train_nodes)
        if need > m.gpu_mem_t + 1e-9:
            out.append(
                Violation(
                    "gpu-memory",
                    f"group {gi}: job {name}'s training state needs {need:.1f} GB per GPU on "
                    f"{g.train_nodes} training node(s); a {m.spec.train_pool.gpu} has "
                    f"{m.gpu_mem_t:g} GB",
                )
            )
    if not host_memory_ok(m, g):
        out.append(Violation("memory", f"group {gi}: warm states exceed a node's host memory"))
    times = coexec_times(m, g)
    for name in g.members:
        j = m.jobs[name]
        if times[name] > j.slo * j.solo_s * (1 + SLO_RTOL):
            out.append(
                Violation(
                    "SLO",
                    f"job {name}: co-execution {times[name]:.1f} s > SLO {j.slo} x solo "
                    f"{j.solo_s:.1f} s",
                )
            )
    return out


def _pool_violations(m: CoschedModel, gi: int, group: Group, g: GroupState) -> list[Violation]:
    """A co-located group is one job on at least its training nodes and no rollout pool; a
    disaggregated one has rollout nodes and pins each member to k distinct ones of them."""
    if group.colocated:
        j = m.jobs[g.members[0]]
        if len(g.members) != 1 or group.rollout_nodes or group.train_nodes < j.n:
            return [
                Violation(
                    "colocated",
                    f"group {gi}: a co-located group is one job on at least its {j.n} "
                    "training nodes, no rollout pool",
                )
            ]
        return []
    if group.rollout_nodes < 1:
        return [Violation("pools", f"group {gi}: a disaggregated group needs rollout nodes")]
    out: list[Violation] = []
    for member in group.jobs:
        j = m.jobs[member.name]
        if (
            len(set(member.rollout)) != j.k
            or len(member.rollout) != j.k
            or any(not 0 <= n < group.rollout_nodes for n in member.rollout)
        ):
            out.append(
                Violation(
                    "placement",
                    f"group {gi}: job {member.name} needs {j.k} distinct rollout nodes of "
                    f"0..{group.rollout_nodes - 1}, got {member.rollout}",
                )
            )
    return out
