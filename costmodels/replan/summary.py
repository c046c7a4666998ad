"""What ``rlplan plan replan`` prints: the new instances, their T_j, C_mig, C_sw and the move."""

from __future__ import annotations

from costmodels import step_error
from costmodels.efficiency import kernels_phrase
from costmodels.problem import SolvedPlan, Summary
from costmodels.replan.plan import ReplanPlan
from costmodels.replan.problem import ReplanProblem


def _kernels(problem: ReplanProblem) -> str:
    """The kernels and engine the instances' decode was costed with, a calibration's
    (``--profile``) named as the user's, as the placement summary does."""
    e = problem.spec.serving.efficiency
    return f"{kernels_phrase(e.kernels, e.profiles)}, engine {e.engine}"


def replan_summary(solved: SolvedPlan[ReplanProblem, ReplanPlan]) -> Summary:
    b = solved.breakdown
    rows = []
    for r in sorted(b["instances"], key=lambda r: -r["total_s"])[:12]:
        rows.append(
            (
                f"node {r['node']} GPU {r['gpu']}-{r['gpu'] + r['tp'] - 1}",
                f"TP{r['tp']}",
                str(r["requests"]),
                f"{r['decode_s']:.1f}",
                f"{r['migrate_s']:.2f}",
                f"{r['switch_s']:.2f}",
                f"{r['total_s']:.1f}",
                "kept" if r["kept"] is not None else "new",
            )
        )
    more = len(b["instances"]) - len(rows)
    layouts: dict[str, int] = {}
    for name in b["layout"]:
        layouts[name] = layouts.get(name, 0) + 1
    return Summary(
        title=(
            f"re-plan by {solved.solver}: makespan {solved.objective:.1f} s ({solved.status}); "
            "unchanged: "
            f"{b['current_makespan_s']:.1f} s"
        ),
        columns=("instance", "config", "requests", "T_j s", "C_mig s", "C_sw s", "total s", "kept"),
        rows=rows,
        caption=(
            f"nodes: {', '.join(f'{n} {k}' for k, n in layouts.items())}; {b['kept_instances']} "
            "instances kept, "
            f"{b['switched_instances']} switched, {b['migrated_requests']} requests migrated"
            + (f"; {more} more instances in the plan file" if more > 0 else "")
            + "\n"
            + _kernels(solved.problem)
            + "\n"
            + step_error.describe("generation", judge="replan")
        ),
    )
