"""What ``rlplan plan circuits`` prints: the slowest demanded pairs and their circuits."""

from __future__ import annotations

from costmodels.circuits.judge import pair_time_s
from costmodels.circuits.plan import CircuitPlan
from costmodels.circuits.problem import CircuitProblem
from costmodels.problem import SolvedPlan, Summary


def circuits_summary(solved: SolvedPlan[CircuitProblem, CircuitPlan]) -> Summary:
    problem, plan, b = solved.problem, solved.plan, solved.breakdown
    fabric = problem.fabric
    counts = plan.counts()
    link = fabric.link_gbps
    demand = problem.pair_demand()
    ranked = sorted(demand.items(), key=lambda kv: -pair_time_s(kv[1], counts.get(kv[0], 0), link))
    rows = []
    for pair, d in ranked[:10]:
        c = counts.get(pair, 0)
        rows.append(
            (
                "-".join(pair),
                f"{d / 1e9:.3g}",
                str(c),
                f"{pair_time_s(d, c, link):.4g}" if c else "inf (no circuit)",
            )
        )
    return Summary(
        title=(
            f"circuits by {solved.solver}: bottleneck {b['bottleneck_s']:.4g} s, "
            f"{b['circuits']} circuits, {b['ports_used']} of {sum(fabric.degrees().values())} "
            f"ports ({solved.status})"
        ),
        columns=("pair", "demand GB", "circuits", "pair time s"),
        rows=rows,
        caption=f"slowest {min(10, len(ranked))} of {len(ranked)} demanded pairs"
        + (
            f"; {b['uncovered_pairs']} pairs ({b['uncovered_gb']:.3g} GB) have no circuit"
            if b["uncovered_pairs"]
            else ""
        ),
    )
