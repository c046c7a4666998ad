"""The independent validator of OrchestrRL Eq. 1's plans: constraints (2)-(6) and known bins
(``costmodels.replan.problem``'s module doc)."""

from __future__ import annotations

from costmodels.replan.plan import ReplanPlan, layout_names, plan_counts
from costmodels.replan.problem import ReplanProblem, instance_cost
from costmodels.violations import Violation


def check_replan(problem: ReplanProblem, plan: ReplanPlan) -> list[Violation]:  # noqa: C901
    """Independent validator: (3)-(6), (2) when on, and known bins."""
    out: list[Violation] = []
    s, g = problem.spec, problem.gpus_per_node
    seen: set[tuple[int, int]] = set()
    for j, i in enumerate(plan.instances):
        if i.node >= s.nodes or i.tp & (i.tp - 1) or i.gpu % i.tp or i.gpu + i.tp > g:
            out.append(
                Violation(
                    "gpus",
                    f"instance {j}: TP{i.tp} at GPU {i.gpu} of node {i.node} is not an aligned "
                    "block of an existing node",
                )
            )
            continue
        if i.tp not in problem.configs or (
            i.tp not in s.candidate_tps() and (i.node, i.gpu, i.tp) not in problem.current
        ):
            out.append(
                Violation(
                    "configuration", f"instance {j}: TP{i.tp} is not a candidate configuration"
                )
            )
        for k in range(i.gpu, i.gpu + i.tp):
            if (i.node, k) in seen:
                out.append(
                    Violation("disjoint", f"instance {j}: GPU {k} of node {i.node} is used twice")
                )
            seen.add((i.node, k))
    if out:
        return out
    for n, name in enumerate(layout_names(problem, plan)):
        if name == "invalid":
            out.append(
                Violation(
                    "layout",
                    f"node {n}: instances "
                    f"{sorted((i.gpu, i.tp) for i in plan.instances if i.node == n)} are neither "
                    "its current ones nor a uniform TP layout",
                )
            )
    if sum(i.tp for i in plan.instances) > problem.budget:
        out.append(
            Violation(
                "(3) budget", f"{sum(i.tp for i in plan.instances)} GPUs > budget {problem.budget}"
            )
        )
    try:
        x = plan_counts(problem, plan)
    except KeyError as e:
        return [*out, Violation("bins", f"bin upper bound {e.args[0]} holds no pending request")]
    if (x < 0).any():
        out.append(Violation("(4) assignment", "negative counts"))
    for b, bn in enumerate(problem.bins):
        if int(x[:, b].sum()) != bn.count:
            out.append(
                Violation(
                    "(4) assignment",
                    f"bin {bn.upper}: {int(x[:, b].sum())} requests assigned, {bn.count} pending",
                )
            )
    for j, i in enumerate(plan.instances):
        cfg = problem.configs.get(i.tp)
        if cfg is None:
            continue
        for b, bn in enumerate(problem.bins):
            if x[j, b] and not cfg.fits(b):
                out.append(
                    Violation(
                        "(5) fit",
                        f"instance {j} (TP{i.tp}, {cfg.kv_tokens} KV tokens) cannot hold a "
                        f"{bn.context}+{bn.upper}-token request",
                    )
                )
        if s.kv_delta is not None and x[j].any():
            share = instance_cost(problem, i.node, i.gpu, i.tp, x[j]).kv_share
            if abs(share - problem.kv_target) > s.kv_delta + 1e-9:
                out.append(
                    Violation(
                        "(2) KV balance",
                        f"instance {j}: KV share {share:.3f} outside {problem.kv_target:.3f} +- "
                        f"{s.kv_delta}",
                    )
                )
    return out
