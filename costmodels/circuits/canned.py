"""Canned circuit instances with optima worked out by hand (100 Gbps links: one circuit moves
12.5 GB/s, so a pair's time is GB / (12.5 * circuits) seconds).

* ``four-ring``: ToRs a, b, c, d with 3 ports each; pair demands a-b 40 GB, a-c, b-d, c-d 10 GB.
  Every pair can be covered, so coverage is full (first key). Covering a-c leaves a at most 2
  circuits for a-b, so a-b takes >= 40 / 25 = 1.6 s; a-b = 2 and one circuit elsewhere
  (0.8 s each) reaches it: optimum 1.6 s.
* ``starved-triangle``: a, b, c with one port each, so at most one pair gets a circuit.
  Demands a-b 10, b-c 20, a-c 5 GB: the most volume is covered by b-c, leaving 15 GB uncovered
  (first key), and its one circuit takes 20 / 12.5 = 1.6 s (second key).
"""

from __future__ import annotations

from costmodels.circuits.fabric import DemandSpec, FabricSpec
from costmodels.circuits.problem import CircuitProblem
from costmodels.problem import Canned


def _problem(ports: int, names: str, demand: dict[tuple[str, str], float]) -> CircuitProblem:
    fabric = FabricSpec(
        link_gbps=100, template="all-pairs", endpoints=[{"name": n, "ports": ports} for n in names]
    )
    spec = DemandSpec(
        entries=[{"src": u, "dst": v, "bytes": gb * 1e9} for (u, v), gb in demand.items()]
    )
    fabric.check()
    spec.check_against(fabric)
    return CircuitProblem(fabric, spec)


def canned_circuits() -> list[Canned]:
    ring = {("a", "b"): 40.0, ("a", "c"): 10.0, ("b", "d"): 10.0, ("d", "c"): 10.0}
    triangle = {("a", "b"): 10.0, ("c", "b"): 20.0, ("a", "c"): 5.0}
    return [
        Canned("four-ring", lambda: _problem(3, "abcd", ring), optimum=1.6, primary=0.0),
        Canned("starved-triangle", lambda: _problem(1, "abc", triangle), optimum=1.6, primary=15.0),
    ]
