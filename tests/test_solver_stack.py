"""highspy, PuLP and OR-Tools load together in one process and each solves a tiny model.

docs/architecture.md, "Solver dependencies": ortools 9.15 bundles HiGHS 1.12; any other highspy
makes the second import fail with an undefined-symbol ImportError. Keep this test with the pin; both
import orders are checked in fresh interpreters because import order is what breaks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SNIPPETS = {
    "highspy": """
import highspy, numpy as np
h = highspy.Highs(); h.setOptionValue("output_flag", False)
inf = highspy.kHighsInf
h.addVars(2, np.array([0.0, 0.0]), np.array([inf, inf]))
h.changeColsCost(2, np.array([0, 1], dtype=np.int32), np.array([1.0, 2.0]))
h.addRow(3.0, inf, 2, np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]))
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
assert abs(h.getInfo().objective_function_value - 3.0) < 1e-9
""",
    "pulp": """
import pulp
p = pulp.LpProblem("t", pulp.LpMinimize)
x = pulp.LpVariable("x", 0, cat="Integer"); y = pulp.LpVariable("y", 0, cat="Integer")
p += 2 * x + 3 * y; p += x + y >= 3; p += x <= 1
assert "HiGHS" in pulp.listSolvers(onlyAvailable=True)
p.solve(pulp.HiGHS(msg=False))
assert pulp.LpStatus[p.status] == "Optimal" and abs(pulp.value(p.objective) - 8) < 1e-9
p.solve(pulp.PULP_CBC_CMD(msg=False)); assert abs(pulp.value(p.objective) - 8) < 1e-9
""",
    "cpsat": """
from ortools.sat.python import cp_model
m = cp_model.CpModel(); x = m.new_int_var(0, 10, "x"); y = m.new_int_var(0, 10, "y")
m.add(x + y >= 7); m.add(x - y <= 1); m.minimize(3 * x + 2 * y)
s = cp_model.CpSolver(); assert s.solve(m) == cp_model.OPTIMAL and s.objective_value == 14
""",
    "linear_solver": """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("SCIP") or pywraplp.Solver.CreateSolver("CBC")
x = s.IntVar(0, 10, "x"); s.Add(2 * x >= 5); s.Minimize(x)
assert s.Solve() == pywraplp.Solver.OPTIMAL and x.solution_value() == 3
g = pywraplp.Solver.CreateSolver("GLOP"); z = g.NumVar(0, 10, "z"); g.Add(z >= 2.5); g.Minimize(z)
assert g.Solve() == pywraplp.Solver.OPTIMAL and abs(z.solution_value() - 2.5) < 1e-9
""",
}


@pytest.mark.parametrize(
    "order",
    [["pulp", "highspy", "cpsat", "linear_solver"], ["cpsat", "linear_solver", "highspy", "pulp"]],
)
def test_all_solvers_in_one_process(order: list[str]):
    code = "\n".join(SNIPPETS[name] for name in order) + "\nprint('ok')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")


def test_versions_are_the_pinned_pair():
    from importlib.metadata import version

    assert version("highspy") == "1.12.0"
    assert version("ortools").startswith("9.15.")
