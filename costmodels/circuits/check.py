"""The independent validator of circuit plans (OrchestrRL App. D.1): known endpoints, eligible
pairs, and each endpoint's circuits within its ports."""

from __future__ import annotations

from costmodels.circuits.fabric import Pair, pair_key
from costmodels.circuits.plan import CircuitPlan
from costmodels.circuits.problem import CircuitProblem
from costmodels.violations import Violation


def check_circuits(problem: CircuitProblem, plan: CircuitPlan) -> list[Violation]:
    fabric = problem.fabric
    deg = fabric.degrees()
    eligible = fabric.eligibility()
    out: list[Violation] = []
    seen: set[Pair] = set()
    used: dict[str, int] = {}
    for i, c in enumerate(plan.circuits):
        for v in (c.a, c.b):
            if v not in deg:
                out.append(Violation("endpoint", f"circuits[{i}]: unknown endpoint {v!r}"))
        if c.a == c.b:
            out.append(
                Violation(
                    "endpoint",
                    f"circuits[{i}]: a circuit joins two different endpoints, got {c.a!r} twice",
                )
            )
            continue
        pair = pair_key(c.a, c.b)
        if pair in seen:
            out.append(Violation("duplicate", f"circuits[{i}]: pair {c.a}-{c.b} listed twice"))
        seen.add(pair)
        if c.a in deg and c.b in deg and not eligible(c.a, c.b):
            out.append(
                Violation(
                    "eligibility", f"circuits[{i}]: pair {c.a}-{c.b} is not eligible in this fabric"
                )
            )
        for v in (c.a, c.b):
            used[v] = used.get(v, 0) + c.count
    for v, n in sorted(used.items()):
        if v in deg and n > deg[v]:
            out.append(
                Violation(
                    "port-budget",
                    f"endpoint {v} uses {n} ports but has {deg[v]} allocatable (Eq. 6)",
                )
            )
    return out
