"""The independent validator of OrchestrRL Eq. 1's plans: constraints (2)-(6) and known bins
(``costmodels.replan.problem``'s module doc)."""

from __future__ import annotations

import numpy as np

from costmodels.replan.plan import NewInstance, ReplanPlan, layout_names, plan_counts
from costmodels.replan.problem import ReplanProblem, instance_cost
from costmodels.violations import Violation


def check_replan(problem: ReplanProblem, plan: ReplanPlan) -> list[Violation]:
    """Independent validator: (3)-(6), (2) when on, and known bins.

    The instances' GPU blocks first; only when they hold, node layouts and the budget (3), then
    the counts: (4) assignment, (5) fit and (2) KV balance per instance."""
    out = _block_violations(problem, plan)
    if out:
        return out
    out += _layout_violations(problem, plan)
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
    out += _assignment_violations(problem, x)
    if (x < 0).any():  # reported above; an instance's time and KV share mean nothing then
        return out
    for j, i in enumerate(plan.instances):
        out += _instance_violations(problem, j, i, x)
    return out


def _block_violations(problem: ReplanProblem, plan: ReplanPlan) -> list[Violation]:
    """Every instance is an aligned TP block of an existing node, of a candidate configuration
    (or a current instance), and no GPU is used twice."""
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
    return out


def _layout_violations(problem: ReplanProblem, plan: ReplanPlan) -> list[Violation]:
    """Each node keeps its current instances or takes a uniform TP layout."""
    out: list[Violation] = []
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
    return out


def _assignment_violations(problem: ReplanProblem, x: np.ndarray) -> list[Violation]:
    """(4): counts are non-negative and every bin's pending requests are all assigned."""
    out: list[Violation] = []
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
    return out


def _instance_violations(
    problem: ReplanProblem, j: int, i: NewInstance, x: np.ndarray
) -> list[Violation]:
    """Instance ``j``: (5) every bin it serves fits its KV cache; (2) its KV share within
    ``kv_delta`` of the target, when (2) is on."""
    out: list[Violation] = []
    s = problem.spec
    cfg = problem.configs.get(i.tp)
    if cfg is None:
        return out
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
