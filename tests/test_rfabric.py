"""RFabric beyond one allocation: templates, AGGREGATEDEMAND, Algorithm 2 (commit or keep the
previous plan), the slack rule, failures, and the weight-sync broadcast (App. E)."""

from __future__ import annotations

import pytest

from costmodels.broadcast.canned import FOUR_POD_SYNC
from costmodels.broadcast.check import check_broadcast
from costmodels.broadcast.plan import BroadcastPlan, Edge, Wave
from costmodels.broadcast.problem import BroadcastProblem, BroadcastSpec
from costmodels.circuits.fabric import DemandSpec, pair_key
from costmodels.circuits.rfabric import RFabricSpec, aggregate_demand, check_materialized
from costmodels.solving import Status
from heuristics.circuits.materialize import Materializer, should_reconfigure
from planner import solve


def fabric(**kw) -> RFabricSpec:
    pods = [
        {"name": "t0", "role": "train", "tors": 4, "tor_ports": 8, "uplink_ports": 8},
        {"name": "t1", "role": "train", "tors": 4, "tor_ports": 8, "uplink_ports": 8},
        {"name": "g0", "role": "gen", "tors": 4, "tor_ports": 8, "uplink_ports": 8},
    ]
    return RFabricSpec(name="r", link_gbps=400, pods=pods, **kw)


def demand(rows) -> DemandSpec:
    return DemandSpec(entries=[{"src": a, "dst": b, "bytes": v} for a, b, v in rows])


MIXED = demand(
    [
        ("t0.tor0", "t0.tor1", 4e9),
        ("t0.tor2", "t0.tor3", 1e9),
        ("t0.tor0", "t1.tor2", 8e9),
        ("t1.tor1", "t0.tor3", 2e9),
        ("g0.tor0", "g0.tor1", 3e9),
        ("t1.tor0", "g0.tor2", 6e9),
    ]
)


def test_aggregate_demand_lifts_and_drops_inter_pod_traffic():
    g = aggregate_demand(fabric(), MIXED)
    assert g.agg["t0"][("t0.tor0", "t0.tor1")] == 4e9
    assert g.agg["t0"][("t0.tor0", "t0.up")] == 8e9 and g.agg["t1"][("t1.up", "t1.tor2")] == 8e9
    assert g.core == {("t0", "t1"): 8e9, ("t1", "t0"): 2e9, ("t1", "g0"): 6e9}


def test_train_template_meshes_train_pods_only_and_tiers_are_consistent():
    m = Materializer(fabric())
    out = m.materialize(MIXED, "train")
    assert out.committed, out.reason
    plan = out.plan
    assert {pair_key(c.a, c.b) for c in plan.core.circuits} == {("t0", "t1")}
    assert plan.agg["g0"].circuits == []  # generation PoDs are not part of the train template
    assert check_materialized(m.spec, plan, {}) == []
    assert "core" in out.bottleneck_s and "agg:t0" in out.bottleneck_s


def test_gen_template_keeps_only_a_core_slice():
    spec = fabric(core_slice=0.25)
    out = Materializer(spec).materialize(MIXED, "gen")
    assert out.committed
    used = {}
    for c in out.plan.core.circuits:
        for v in (c.a, c.b):
            used[v] = used.get(v, 0) + c.count
    assert used.get("g0", 0) <= 2  # 25 % of 8 boundary ports
    assert out.plan.agg["t0"].circuits == []  # isolated: only generation PoDs' Agg fabrics


def test_algorithm2_keeps_the_previous_plan_when_validation_fails():
    m = Materializer(fabric())
    first = m.materialize(MIXED, "train")
    assert first.committed
    # ports fail between allocation and commit: the candidate now uses dead ports
    busy = first.plan.agg["t0"].circuits[0].a
    second = m.materialize(MIXED, "train", commit_failed={busy: 8})
    assert not second.committed and second.violations
    assert any("port-budget" in v for v in second.violations)
    assert second.plan is first.plan and m.active is first.plan


def test_masked_failures_are_reallocated_under_the_remaining_budget():
    m = Materializer(fabric())
    healthy = m.materialize(MIXED, "train").plan
    failed = {"t0.tor0": 6, "t0.up": 5, "t1": 6}
    out = m.materialize(MIXED, "train", failed=failed)
    assert out.committed and check_materialized(m.spec, out.plan, failed) == []
    ports = {}
    for c in out.plan.agg["t0"].circuits:
        for v in (c.a, c.b):
            ports[v] = ports.get(v, 0) + c.count
    assert ports["t0.tor0"] <= 2 and ports["t0.up"] <= 3
    # connectivity kept: every pair that had a circuit still has one
    before = {pair_key(c.a, c.b) for c in healthy.agg["t0"].circuits}
    after = {pair_key(c.a, c.b) for c in out.plan.agg["t0"].circuits}
    assert before <= after
    assert sum(c.count for c in out.plan.core.circuits) <= 2


def test_core_never_exceeds_the_access_capacity():
    spec = RFabricSpec(
        name="tight",
        link_gbps=400,
        pods=[
            {"name": "a", "role": "train", "tors": 2, "tor_ports": 1, "uplink_ports": 8},
            {"name": "b", "role": "train", "tors": 2, "tor_ports": 8, "uplink_ports": 8},
        ],
    )
    d = demand([("a.tor0", "b.tor0", 9e9), ("a.tor1", "b.tor1", 9e9), ("a.tor0", "a.tor1", 1e9)])
    out = Materializer(spec).materialize(d, "train")
    assert out.committed
    assert sum(c.count for c in out.plan.core.circuits) <= 2  # a's ToRs have one port each


@pytest.mark.parametrize(
    ("device", "window_s", "expected"),
    [
        ("piezo", 0.001, False),
        ("piezo", 0.030, True),
        ("rotor", 0.0001, True),
        ("robotic", 10.0, False),
    ],
)
def test_slack_rule(device, window_s, expected):
    assert should_reconfigure(window_s, device) is expected
    m = Materializer(fabric(ocs_device=device))
    out = m.materialize(MIXED, "train", safe_window_s=window_s)
    assert out.committed is expected and (m.active is not None) is expected


def test_unknown_intent_and_tor_are_spec_errors():
    from costmodels.errors import SpecError

    with pytest.raises(SpecError, match="intent"):
        Materializer(fabric()).materialize(MIXED, "decode")
    with pytest.raises(SpecError, match="ToR"):
        aggregate_demand(fabric(), demand([("t0.tor9", "t0.tor0", 1e9)]))


def sync(**kw) -> BroadcastProblem:
    spec = BroadcastSpec(**{**FOUR_POD_SYNC, **kw})
    spec.check()
    return BroadcastProblem(spec)


def test_two_level_beats_naive_and_both_validate():
    p = sync()
    two, naive = solve(p, "two-level"), solve(p, "naive")
    assert two.status is naive.status is Status.FEASIBLE
    assert two.objective < naive.objective
    assert two.breakdown["inter_pod_gb"] == pytest.approx(16 * 4)  # one copy per generation PoD
    assert naive.breakdown["inter_pod_gb"] == pytest.approx(16 * 32)  # one copy per generation rank


def test_the_naive_schedule_stops_at_its_time_limit_and_is_sized_before_work(monkeypatch):
    from heuristics.broadcast.schedule import solve_naive

    # 4 PoDs x 512 ranks x 4 shards: its quadratic wave builder runs far past 0.2 s
    pods = [{**pod, "ranks": 512} for pod in FOUR_POD_SYNC["pods"]]
    big = sync(pods=pods)
    out = solve_naive(big, time_limit=0.2)
    assert out.status is Status.NO_SOLUTION and out.plan is None
    assert "time limit reached" in out.message
    # 8 192 transfers of 1 kB each pass 4 MB (the spec's 2 560 ranks of 1 kB fit)
    monkeypatch.setenv("RLPLAN_MEMORY_LIMIT_GB", "0.004")
    out = solve_naive(big)
    assert out.status is Status.NO_SOLUTION and "memory limit of 0.004 GB" in out.message


def test_relay_needs_no_more_waves_than_direct_seeding():
    p = sync()
    assert (
        solve(p, "two-level").breakdown["waves"]
        <= solve(p, "two-level", relay=False).breakdown["waves"]
    )


def test_broadcast_validator_catches_budgets_sources_and_coverage():
    p = sync()
    over = BroadcastPlan(phase_a=[Wave(edges=[Edge(src="tr/0", dst="g0/0", shard=0, circuits=3)])])
    kinds = {v.constraint for v in check_broadcast(p, over)}
    assert {"pod-budget", "coverage"} <= kinds
    wrong = BroadcastPlan(phase_a=[Wave(edges=[Edge(src="tr/1", dst="g0/0", shard=0, circuits=1)])])
    assert "source" in {v.constraint for v in check_broadcast(p, wrong)}
    same = BroadcastPlan(phase_a=[Wave(edges=[Edge(src="g0/0", dst="g0/1", shard=0, circuits=1)])])
    assert "inter-pod" in {v.constraint for v in check_broadcast(p, same)}
    good = solve(p, "two-level").plan
    assert check_broadcast(p, good) == []
    assert "coverage" in {
        v.constraint
        for v in check_broadcast(p, good.model_copy(update={"phase_b": good.phase_b[1:]}))
    }
