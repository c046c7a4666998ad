"""Independent validator of placement plans (HetRL §3.1, constraints C1-C3).

It re-derives every rule from the problem rather than trusting a solver's encoding:

* ``C2-coverage``: every task of the workflow is placed exactly once and belongs to exactly one
  task group; no unknown tasks.
* ``groups``: task groups use existing GPUs and are disjoint; a task's GPUs lie in its group.
* ``shape``: ``devices`` is DP x PP x TP; layer split and batch shares match and are sane;
  TP divides the attention heads; PP does not exceed the layer count.
* ``C1-tasklets``: a task's tasklets sit on distinct GPUs (so at most |V_D| of them).
* ``C3-memory``: on every GPU, resident model memory of all its tasklets plus the largest working
  memory fits (``costmodels.memory``), naming the GPU and the numbers.
* ``verl-runnable`` / ``roll-runnable`` (a problem with a ``target``): the framework runs the
  plan as planned (``costmodels.placement.frameworks``).
"""

from __future__ import annotations

from collections import Counter

from costmodels.catalog import ModelSpec
from costmodels.placement.frameworks import rules_of
from costmodels.placement.memory import device_memory
from costmodels.placement.plan import PlacementPlan, TaskPlacement
from costmodels.placement.problem import PlacementProblem
from costmodels.violations import Violation


def _once_each(wanted: list[str], listed: list[str], code: str, seen: str) -> list[Violation]:
    """A ``code`` violation for each wanted task not listed exactly once; ``seen`` says how often
    it is listed (``{n}``)."""
    return [
        Violation(code, f"task {name!r} {seen.format(n=listed.count(name))} (needs exactly 1)")
        for name in wanted
        if listed.count(name) != 1
    ]


def check_placement(problem: PlacementProblem, plan: PlacementPlan) -> list[Violation]:
    """All violations of ``plan`` for ``problem`` (empty list: the plan is valid).

    Three stages, each run only when the one before found nothing: coverage and GPU groups, each
    task's shape and GPUs, then the target framework's rules and per-GPU memory."""
    known = {d.id for d in problem.topology.devices}
    out, owner = _coverage_and_groups(problem, plan, known)
    if out:
        return out
    group_of = plan.group_of()
    for tp_ in plan.tasks:
        out += _task_violations(problem, tp_, known, owner, group_of)
    if out:
        return out
    rules = rules_of(problem)
    if rules is not None:
        out += rules.violations(problem, plan)
    out += _memory_violations(problem, plan)
    return out


def _coverage_and_groups(
    problem: PlacementProblem, plan: PlacementPlan, known: set[str]
) -> tuple[list[Violation], dict[str, int]]:
    """C2 coverage (every task placed once and in one task group, no unknown task) and disjoint
    GPU groups of known GPUs; with the group index owning each GPU."""
    out: list[Violation] = []
    wf = problem.workflow
    wanted = [t.name for t in problem.tasks]
    placed = [t.task for t in plan.tasks]
    out += _once_each(wanted, placed, "C2-coverage", "is placed {n} times")
    out += [
        Violation("C2-coverage", f"task {name!r} is not a task of this {wf.algorithm} workflow")
        for name in placed
        if name not in wanted
    ]
    grouped = [t for g in plan.groups for t in g.tasks]
    out += _once_each(wanted, grouped, "groups", "is in {n} task groups")
    owner: dict[str, int] = {}
    for gi, g in enumerate(plan.groups):
        for d in g.devices:
            if d not in known:
                out.append(Violation("groups", f"group {gi} uses unknown GPU {d!r}"))
            elif d in owner:
                out.append(
                    Violation(
                        "groups",
                        f"GPU {d} is in groups {owner[d]} and {gi}; GPU groups must be disjoint",
                    )
                )
            else:
                owner[d] = gi
    return out, owner


def _task_violations(
    problem: PlacementProblem,
    tp_: TaskPlacement,
    known: set[str],
    owner: dict[str, int],
    group_of: dict[str, int],
) -> list[Violation]:
    """One task's shape (a wrong device grid stops there) and its GPUs (known, inside its task
    group, C1: one tasklet per GPU)."""
    role = next(t.role for t in problem.tasks if t.name == tp_.task)
    m = problem.workflow.model(role)
    name = tp_.task
    if (
        len(tp_.devices) != tp_.dp
        or any(len(r) != tp_.pp for r in tp_.devices)
        or any(len(s) != tp_.tp for r in tp_.devices for s in r)
    ):
        return [
            Violation(
                "shape",
                f"{name}: devices must be {tp_.dp} x {tp_.pp} x {tp_.tp} (dp x pp x tp)",
            )
        ]
    return _shape_violations(tp_, m) + _device_violations(tp_, known, owner, group_of)


def _shape_violations(tp_: TaskPlacement, m: ModelSpec) -> list[Violation]:
    """TP divides the heads, PP at most the layers, a sane layer split and batch shares."""
    out: list[Violation] = []
    name = tp_.task
    if m.query_heads % tp_.tp or (m.kv_heads % tp_.tp and tp_.tp % m.kv_heads):
        out.append(
            Violation(
                "shape",
                f"{name}: tp={tp_.tp} does not divide {m.name}'s {m.query_heads} query / "
                f"{m.kv_heads} KV heads",
            )
        )
    if tp_.pp > m.layers:
        out.append(Violation("shape", f"{name}: pp={tp_.pp} exceeds {m.name}'s {m.layers} layers"))
    if tp_.layers_per_stage is not None and (
        len(tp_.layers_per_stage) != tp_.pp
        or sum(tp_.layers_per_stage) != m.layers
        or min(tp_.layers_per_stage) < 1
    ):
        out.append(
            Violation(
                "shape",
                f"{name}: layers_per_stage {tp_.layers_per_stage} must be {tp_.pp} positive "
                f"counts summing to {m.layers}",
            )
        )
    if tp_.batch_shares is not None and (
        len(tp_.batch_shares) != tp_.dp
        or min(tp_.batch_shares) <= 0
        or abs(sum(tp_.batch_shares) - 1) > 1e-6
    ):
        out.append(
            Violation(
                "shape",
                f"{name}: batch_shares {tp_.batch_shares} must be {tp_.dp} positive shares "
                "summing to 1",
            )
        )
    return out


def _device_violations(
    tp_: TaskPlacement, known: set[str], owner: dict[str, int], group_of: dict[str, int]
) -> list[Violation]:
    """A task's GPUs are known and inside its task group (``groups``), and C1: no GPU hosts two
    of its tasklets."""
    out: list[Violation] = []
    name = tp_.task
    devs = tp_.all_devices()
    for d in devs:
        if d not in known:
            out.append(Violation("shape", f"{name}: unknown GPU {d!r}"))
        elif owner.get(d) != group_of[name]:
            out.append(
                Violation("groups", f"{name}: GPU {d} is outside its task group {group_of[name]}")
            )
    dup = sorted(d for d, k in Counter(devs).items() if k > 1)
    if dup:
        out.append(
            Violation("C1-tasklets", f"{name}: GPUs {dup} host more than one tasklet of the task")
        )
    return out


def _memory_violations(problem: PlacementProblem, plan: PlacementPlan) -> list[Violation]:
    """C3: on every GPU, resident models plus the largest working memory fit its capacity."""
    out: list[Violation] = []
    for d, slot in sorted(device_memory(problem, plan).items()):
        need = slot["model_gb"] + slot["working_gb"]
        if need > slot["capacity_gb"] + 1e-9:
            dev = problem.topology.devices[d]
            out.append(
                Violation(
                    "C3-memory",
                    f"GPU {dev.id} ({dev.gpu.name}) needs {need:.2f} GB (models "
                    f"{slot['model_gb']:.2f} + working {slot['working_gb']:.2f}) "
                    f"but has {slot['capacity_gb']:.2f} GB usable",
                )
            )
    return out
