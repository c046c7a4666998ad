"""The judge of OrchestrRL Eq. 1: objective (1), the makespan of a plan, with its breakdown per
instance (``costmodels.replan.problem``'s module doc)."""

from __future__ import annotations

from typing import Any

from costmodels.replan.plan import ReplanPlan, layout_names, plan_counts
from costmodels.replan.problem import ReplanProblem, instance_cost
from costmodels.step_error import expected_error


def evaluate_replan(problem: ReplanProblem, plan: ReplanPlan) -> tuple[float, dict[str, Any]]:
    """Objective (1) of the plan and its breakdown per instance."""
    x = plan_counts(problem, plan)
    costs = [
        instance_cost(problem, i.node, i.gpu, i.tp, x[j]) for j, i in enumerate(plan.instances)
    ]
    makespan = max((c.total_s for c in costs), default=0.0)
    rows = [
        {
            "node": i.node,
            "gpu": i.gpu,
            "tp": i.tp,
            "requests": c.requests,
            "steps": c.steps,
            "decode_s": c.decode_s,
            "migrate_s": c.migrate_s,
            "switch_s": c.switch_s,
            "total_s": c.total_s,
            "kept": c.kept,
            "kv_share": c.kv_share,
        }
        for i, c in zip(plan.instances, costs, strict=True)
    ]
    return makespan, {
        "makespan_s": makespan,
        "instances": rows,
        "migrated_requests": sum(c.migrated for c in costs),
        "kept_instances": sum(c.kept is not None for c in costs),
        "switched_instances": sum(1 for c in costs if c.kept is None and c.requests),
        "gpus": sum(i.tp for i in plan.instances),
        "layout": layout_names(problem, plan),
        "current_makespan_s": problem.current_makespan_s,
        # how far to trust the makespan (``costmodels.step_error``): None until measured
        "expected_error": expected_error("generation", judge="replan"),
        "model": {
            "T_j": "sum_b x_jb w_yb + alpha_y * max(max L_b, sum_b x_jb L_b / B_yb)",
            "bin_tokens": problem.spec.bin_tokens,
            "alpha_s": {t: c.alpha for t, c in problem.configs.items()},
            "beta_s": {t: c.beta for t, c in problem.configs.items()},
            "gamma_s_per_token": {t: c.gamma for t, c in problem.configs.items()},
        },
    }


def current_makespan(problem: ReplanProblem) -> float:
    """Obj_cur of Algorithm 1: the makespan if nothing changes."""
    return problem.current_makespan_s
