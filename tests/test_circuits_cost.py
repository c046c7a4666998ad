"""OrchestrRL Eq. 7 (pair completion-time proxy) and the circuit-plan validator, by hand."""

from __future__ import annotations

import math

from costmodels.circuits.check import check_circuits
from costmodels.circuits.judge import evaluate_circuits, pair_time_s
from costmodels.circuits.plan import Circuit, CircuitPlan
from planner.io import build_problem


def problem():
    fabric = {
        "link_gbps": 100,
        "endpoints": [{"name": n, "ports": 2} for n in "abcd"],
        "eligible": [["a", "b"], ["a", "c"], ["b", "c"], ["c", "d"]],
    }
    demand = [
        {"src": "a", "dst": "b", "bytes": 25e9},
        {"src": "b", "dst": "a", "bytes": 50e9},
        {"src": "a", "dst": "c", "bytes": 12.5e9},
        {"src": "c", "dst": "d", "bytes": 1e9},
    ]
    return build_problem("circuits", {"fabric": fabric, "demand": demand})


def test_eq7_pair_time():
    assert pair_time_s(50e9, 2, 100) == 2.0  # 400 Gbit over 2 x 100 Gbps
    assert pair_time_s(0, 0, 100) == 0.0
    assert math.isinf(pair_time_s(1, 0, 100))


def test_bottleneck_uses_the_larger_direction_and_reports_uncovered():
    p = problem()
    plan = CircuitPlan(circuits=[Circuit(a="a", b="b", count=1), Circuit(a="a", b="c", count=1)])
    objective, b = evaluate_circuits(p, plan)
    assert objective == 4.0  # max(25, 50) GB over one 100 Gbps circuit
    assert b["bottleneck_pair"] == ["a", "b"]
    assert b["uncovered_pairs"] == 1 and b["uncovered_gb"] == 1.0  # c-d has no circuit
    assert check_circuits(p, plan) == []


def test_validator_catches_ports_eligibility_and_duplicates():
    p = problem()
    over = CircuitPlan(circuits=[Circuit(a="a", b="b", count=2), Circuit(a="a", b="c", count=1)])
    assert {v.constraint for v in check_circuits(p, over)} == {"port-budget"}
    assert {
        v.constraint
        for v in check_circuits(p, CircuitPlan(circuits=[Circuit(a="b", b="d", count=1)]))
    } == {"eligibility"}
    dup = CircuitPlan(circuits=[Circuit(a="a", b="b", count=1), Circuit(a="b", b="a", count=1)])
    assert "duplicate" in {v.constraint for v in check_circuits(p, dup)}
    ghost = CircuitPlan(circuits=[Circuit(a="a", b="z", count=1)])
    assert "endpoint" in {v.constraint for v in check_circuits(p, ghost)}
