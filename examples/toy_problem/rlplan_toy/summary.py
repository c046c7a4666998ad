"""What ``rlplan plan toy`` prints: the makespan, then each machine's load."""

from __future__ import annotations

from costmodels.problem import SolvedPlan, Summary


def toy_summary(solved: SolvedPlan) -> Summary:
    return Summary(
        f"toy by {solved.solver}: makespan {solved.objective:g} ({solved.status})",
        ("machine", "load"),
        [(str(m), f"{x:g}") for m, x in enumerate(solved.breakdown["loads"])],
    )
