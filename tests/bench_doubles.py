"""Test-double solvers for the benchmark harness, registered with ``--plugin
tests.bench_doubles:register``: one that crashes, one whose process is killed, and one whose plan
the validator rejects."""

from __future__ import annotations

import os
import signal

from costmodels.circuits.plan import Circuit, CircuitPlan
from costmodels.solving import SolverOutput, Status


def crashing(problem, *, time_limit=None, seed=0):
    raise RuntimeError("test double: this solver always crashes")


def over_budget(problem, *, time_limit=None, seed=0):
    """Every demanded pair gets more circuits than either end has ports: breaks Eq. 6 on purpose."""
    deg = problem.fabric.degrees()
    circuits = []
    for pair in sorted(problem.pair_demand(), key=sorted):
        a, b = sorted(pair)
        circuits.append(Circuit(a=a, b=b, count=max(deg[a], deg[b]) + 1))
    return SolverOutput(Status.FEASIBLE, plan=CircuitPlan(circuits=circuits), message="test double")


def killed(problem, *, time_limit=None, seed=0):
    """Dies like a run the kernel kills for memory: SIGKILL, no result, no traceback."""
    os.kill(os.getpid(), signal.SIGKILL)


def register(reg) -> None:
    reg.register("circuits", "killed", killed, description="test double: its process is killed")
    reg.register("circuits", "crashing", crashing, description="test double: raises")
    reg.register(
        "circuits",
        "over-budget",
        over_budget,
        description="test double: returns a plan that breaks port budgets",
    )
