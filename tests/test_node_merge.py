"""The merged-node bound (``formulations.placement.node_merge``): merging identical nodes
never makes a plan slower, so the ILP's optimum on the merged cluster bounds the original's."""

from __future__ import annotations

import math
import random

import pytest

from costmodels.combinatorics import set_partitions
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.presets import hetrl_multi_region_hybrid, hetrl_single_region
from costmodels.placement.space import is_heterogeneous, task_configs
from costmodels.solving import Status
from formulations.placement.ilp import solve_placement_ilp
from formulations.placement.node_merge import (
    merge_identical_nodes,
    merged_node_bound,
    merged_problem,
    plan_on,
)
from heuristics.placement.genome import PlacementSpace
from planner.io import build_problem


def _problem(spec, workflow):
    return build_problem("placement", {"cluster": spec, "workflow": workflow})


def test_the_testbed_merges_into_one_node_per_gpu_type_and_zone():
    p = _problem(hetrl_single_region(), "grpo-sync-qwen3-8b")
    merged = merge_identical_nodes(p.cluster)
    assert [(n.gpu, n.count) for n in merged.nodes] == [
        ("A100-40GB", 24),
        ("L40S", 24),
        ("L4", 16),
    ]
    # the multi-region layout's edge nodes are zones of their own: they stay apart
    q = _problem(hetrl_multi_region_hybrid(), "grpo-sync-qwen3-8b")
    assert [(n.zone, n.count) for n in merge_identical_nodes(q.cluster).nodes] == [
        ("ohio", 24),
        ("virginia", 24),
        ("virginia-edge-0", 8),
        ("virginia-edge-1", 8),
    ]
    # nothing to merge: no relaxation
    assert merge_identical_nodes(_problem("small-24", "grpo-sync-qwen3-8b").cluster) is None


def test_nodes_whose_own_link_is_slower_than_the_zone_stay_apart():
    spec = hetrl_single_region()
    spec["network"]["intra_node"] = {"bandwidth_gbps": 50.0, "latency_ms": 0.01}
    assert merge_identical_nodes(_problem(spec, "grpo-sync-qwen3-8b").cluster) is None


def _random_plans(p, rng, count):
    """Plans of every grouping with random GPU groups and random configurations."""
    space = PlacementSpace(p)
    parts = list(set_partitions([t.name for t in p.tasks]))
    n = len(p.topology.devices)
    tasks = {t.name: t for t in p.tasks}
    while count:
        part = rng.choice(parts)
        if len(part) > n:
            continue
        cuts = sorted(rng.sample(range(1, n), len(part) - 1))
        sizes = tuple(b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True))
        ind = space.random_individual(rng, tuple(tuple(x) for x in part), sizes)
        configs = {}
        for names, gpus in zip(ind.grouping, space.groups(ind), strict=True):
            for name in names:
                configs[name] = rng.choice(
                    task_configs(p, tasks[name], len(gpus), is_heterogeneous(p, gpus))
                )
        yield space.decode_with(ind, configs)
        count -= 1


@pytest.mark.parametrize(
    "cluster,workflow,seed",
    [
        (hetrl_single_region, "grpo-sync-qwen3-8b", 0),
        (hetrl_single_region, "ppo-async-qwen3-8b", 1),
        (hetrl_multi_region_hybrid, "grpo-async-qwen3-8b", 2),
        (hetrl_multi_region_hybrid, "ppo-sync-qwen3-8b", 3),
    ],
)
def test_a_plan_costs_no_more_on_the_merged_cluster(cluster, workflow, seed):
    p = _problem(cluster(), workflow)
    q = merged_problem(p)
    checked = 0
    for plan in _random_plans(p, random.Random(seed), 150):
        before = evaluate_placement(p, plan)
        after = evaluate_placement(q, plan_on(plan, p, q))
        assert after.objective <= before.objective * (1 + 1e-12), plan
        checked += 1
    assert checked == 150


def test_the_merged_optimum_bounds_the_proven_one():
    """The testbed's first three nodes (24 A100): both ILPs prove their optimum."""
    spec = hetrl_single_region()
    spec["nodes"] = spec["nodes"][:3]
    p = _problem(spec, "grpo-sync-qwen3-8b")
    exact = solve_placement_ilp(p)
    bound, out = merged_node_bound(p)
    assert exact.status is Status.OPTIMAL and out.status is Status.OPTIMAL
    assert bound <= exact.objective * (1 + 1e-12)


def test_the_testbed_report_shows_a_row_without_a_bound(tmp_path):
    from benchmarks.testbed_bound import plot, report

    row = {
        "cluster": "hetrl-single-region",
        "workflow": "grpo-sync-qwen3-8b",
        "merged_nodes": "24 A100-40GB + 24 L40S + 16 L4",
        "sha_ea_objective": 143.1,
        "sha_ea_wall_s": 48.0,
        "ilp_status": "optimal",
        "ilp_termination": "optimal",
        "ilp_wall_s": 224.0,
        "build_s": 197.0,
        "master_s": 0.5,
        "expand_s": 19.6,
        "pairs": 42655,
        "bound": 142.7,
        "sha_ea_gap": 143.1 / 142.7 - 1,
    }
    capped = {**row, "workflow": "ppo-sync-qwen3-8b", "ilp_status": "no_solution"}
    capped.update(bound=None, sha_ea_gap=None, pairs=None)
    text = report([row, capped], "python -m benchmarks.testbed_bound")
    assert "0.28%" in text and "| - | - |" in text
    assert "1 of 2 scenarios" in text
    plot([row, capped], tmp_path / "gap.png")
    assert (tmp_path / "gap.png").stat().st_size > 0


def test_the_testbed_report_shows_the_bound_climb_where_the_cap_stopped_it(tmp_path):
    """A capped row's masters: their optima, the pace of the last three, and how many more
    masters at that pace would reach 1% of SHA-EA's step (testbed PPO async's measured climb)."""
    from benchmarks.testbed_bound import climb, plot, report

    masters = [
        [120.0, 170.94, 32.2, 10000],
        [200.0, 175.03, 75.2, 10000],
        [214.0, 175.86, 13.6, 10000],
        [297.0, 179.29, 82.5, 10000],
        [360.0, 179.87, 63.2, 10000],
        [429.0, 180.19, 68.7, 10000],
        [482.0, 180.20, 53.2, 10000],
        [551.0, None, 69.4, 10000],  # stopped by the cap: no optimum
    ]
    row = {
        "cluster": "hetrl-single-region",
        "workflow": "ppo-async-qwen3-8b",
        "merged_nodes": "24 A100-40GB + 24 L40S + 16 L4",
        "sha_ea_objective": 194.66,
        "sha_ea_wall_s": 39.0,
        "ilp_status": "feasible",
        "ilp_termination": "time_limit",
        "ilp_wall_s": 601.0,
        "build_s": 95.0,
        "master_s": 460.0,
        "expand_s": 41.0,
        "pairs": 146228,
        "bound": 181.10,
        "sha_ea_gap": 194.66 / 181.10 - 1,
        "masters": masters,
    }
    c = climb(row)
    assert c["rise"] == pytest.approx((180.20 / 179.29) ** (1 / 3) - 1)
    assert c["seconds"] == pytest.approx((63.2 + 68.7 + 53.2) / 3)
    assert c["needed"] == pytest.approx(194.66 / 1.01)
    # from the proven bound (181.10, above the last optimum) at that pace
    assert c["to_go"] == math.ceil(math.log(194.66 / 1.01 / 181.10) / math.log(1 + c["rise"]))
    text = report([row], "python -m benchmarks.testbed_bound")
    assert "## The bound's climb" in text and "170.9 / 175.0" in text
    assert f"| {c['to_go']} |" in text
    # a proven row has no climb to report, nor does a row from before masters were recorded
    proven = {**row, "ilp_termination": "proof"}
    assert "climb" not in report([proven, {**row, "masters": []}], "x")
    plot([row, proven], tmp_path / "gap.png")
    assert (tmp_path / "gap.png").stat().st_size > 0


def test_an_upper_bound_below_every_merged_plan_is_the_bound():
    """A proof that no merged plan costs less than the caller's upper bound makes it the bound;
    one above the merged optimum leaves the optimum."""
    spec = hetrl_single_region()
    spec["nodes"] = spec["nodes"][:2]
    p = _problem(spec, "grpo-sync-qwen3-8b")
    optimum, _ = merged_node_bound(p)
    assert merged_node_bound(p, upper_bound=optimum * 0.9)[0] == optimum * 0.9
    assert merged_node_bound(p, upper_bound=optimum * 1.1)[0] == pytest.approx(optimum)


def test_a_plan_read_on_the_merged_cluster_and_back_is_the_same_plan():
    p = _problem(hetrl_single_region(), "ppo-async-qwen3-8b")
    q = merged_problem(p)
    for plan in _random_plans(p, random.Random(5), 20):
        there = plan_on(plan, p, q)
        assert {d for g in there.groups for d in g.devices} <= {d.id for d in q.topology.devices}
        assert plan_on(there, q, p) == plan
    with pytest.raises(ValueError, match="differ in size"):
        plan_on(plan, p, _problem("small-24", "ppo-async-qwen3-8b"))


def test_the_relaxation_report_names_the_scenarios_merging_cannot_prove(tmp_path):
    from benchmarks.testbed_relaxation import plot, report

    row = {
        "cluster": "hetrl-single-region",
        "workflow": "grpo-sync-qwen3-8b",
        "sha_ea_testbed": 143.10,
        "sha_ea_merged": 142.71,
        "merged_plan_on_testbed": 143.56,
        "best_testbed": 143.10,
        "merged_upper": 142.71,
        "least_provable_gap": 143.10 / 142.71 - 1,
        "largest_move": "weight transfer",
        "largest_move_testbed_s": 0.38,
        "largest_move_merged_s": 0.38,
        "published_bound": 142.71,
        "bound_below_merged_plan": 0.0,
    }
    crossing = {
        **row,
        "workflow": "ppo-async-qwen3-8b",
        "sha_ea_testbed": 194.66,
        "sha_ea_merged": 192.19,
        "merged_plan_on_testbed": 194.66,
        "best_testbed": 194.66,
        "merged_upper": 192.19,
        "least_provable_gap": 194.66 / 192.19 - 1,
        "largest_move": "actor_training dp",
        "largest_move_testbed_s": 2.41,
        "largest_move_merged_s": 0.10,
        "published_bound": None,
        "bound_below_merged_plan": None,
    }
    text = report([row, crossing], "python -m benchmarks.testbed_relaxation")
    assert "| nothing |" in text and "actor_training dp (2.41 -> 0.10)" in text
    assert "1 of 2 (ppo-async-qwen3-8b (hetrl-single-region))" in text
    plot([row, crossing], tmp_path / "relax.png")
    assert (tmp_path / "relax.png").stat().st_size > 0


def _nodes(*nodes):
    """A cluster of the testbed's GPUs and network with nodes of ``(gpu, count)``."""
    spec = hetrl_single_region()
    like = {n["gpu"]: n for n in spec["nodes"]}
    spec["nodes"] = [
        {**like[gpu], "name": f"{gpu.lower()}-{i}", "count": count}
        for i, (gpu, count) in enumerate(nodes)
    ]
    return spec


@pytest.mark.parametrize(
    "nodes,workflow,proven_merged",
    [
        # the merged optimum's plan costs the same here: proven on the merged cluster
        ((("A100-40GB", 2), ("A100-40GB", 2), ("L40S", 4)), "grpo-sync-qwen3-8b", True),
        (
            (("A100-40GB", 2), ("A100-40GB", 2), ("L40S", 2), ("L40S", 2)),
            "grpo-sync-qwen3-4b",
            True,
        ),
        # its plan spans the two nodes' link, which costs more here: the ILP on these nodes
        ((("A100-40GB", 4), ("A100-40GB", 4)), "grpo-sync-qwen3-4b", False),
    ],
)
def test_the_ilp_solver_proves_through_the_merged_cluster_the_direct_ilps_optimum(
    nodes, workflow, proven_merged
):
    """The placement solver "ilp" (``solve_merging_nodes``) proves the optimum the ILP on the
    cluster as it is proves, either through the merged cluster or on these nodes after it, and
    its plan is valid here and costs what it says."""
    from costmodels.placement.check import check_placement
    from planner.solve import solve

    p = _problem(_nodes(*nodes), workflow)
    direct = solve_placement_ilp(p)
    out = solve(p, "ilp")
    assert direct.status is Status.OPTIMAL and out.status is Status.OPTIMAL
    assert out.objective == pytest.approx(direct.objective, rel=1e-9)
    assert check_placement(p, out.plan) == []
    assert evaluate_placement(p, out.plan).objective == pytest.approx(out.objective, rel=1e-12)
    merged = out.stats["merged"]
    assert merged["merged_nodes"] < merged["nodes"] and merged["status"] == "optimal"
    assert merged["objective"] <= out.objective * (1 + 1e-12)  # T' <= T
    if proven_merged:
        assert merged["plan_here"] == pytest.approx(merged["objective"], rel=1e-9)
        assert "its plan costs the same here" in out.message
    else:
        assert merged["plan_here"] > merged["objective"] * (1 + 1e-9)
        assert "on these nodes" in out.message
    # merge_nodes=false is the ILP on the cluster as it is
    alone = solve(p, "ilp", merge_nodes=False)
    assert "merged" not in alone.stats and alone.objective == pytest.approx(direct.objective)


def test_the_ilp_solver_keeps_the_upper_bound_semantics_through_the_merged_cluster():
    """An upper bound below the optimum: no plan below it, merged or here, as the ILP on the
    cluster as it is says; one above it leaves the optimum."""
    from planner.solve import solve

    p = _problem(_nodes(("A100-40GB", 2), ("A100-40GB", 2), ("L40S", 4)), "grpo-sync-qwen3-8b")
    optimum = solve(p, "ilp").objective
    low = solve(p, "ilp", upper_bound=optimum * 0.9)
    direct = solve(p, "ilp", upper_bound=optimum * 0.9, merge_nodes=False)
    assert low.status is direct.status and low.objective == pytest.approx(direct.objective)
    assert "no plan costs less than upper_bound" in low.message
    assert solve(p, "ilp", upper_bound=optimum * 1.1).objective == pytest.approx(optimum)


def test_the_ilp_solver_does_not_merge_under_a_framework_target():
    """A target's rules bind the plan, which the merged cluster's plan need not keep."""
    from planner.solve import solve

    spec = _nodes(("A100-40GB", 2), ("A100-40GB", 2))
    p = build_problem(
        "placement",
        {"cluster": spec, "workflow": "grpo-sync-qwen3-4b", "target": {"framework": "verl"}},
    )
    out = solve(p, "ilp")
    assert out.status is Status.OPTIMAL and "merged" not in out.stats


def test_the_size_curve_report_says_which_ilp_proved_each_size(tmp_path):
    from benchmarks.ilp_size_curve import plot, report

    row = {
        "gpus": 40,
        "mix": "24 A100-40GB + 16 L40S",
        "merged_mix": "24 A100-40GB + 16 L40S",
        "ilp_status": "optimal",
        "ilp_termination": "optimal",
        "ilp_wall_s": 8.1,
        "build_s": 3.0,
        "master_s": 2.0,
        "expand_s": 2.0,
        "pairs": 1234,
        "proved_by": "merged",
        "merged_plan_here": 170.81,
        "direct_status": "feasible",
        "direct_termination": "time_limit",
        "direct_wall_s": 303.3,
        "direct_objective": 176.8,
        "direct_bound": None,
        "ilp_objective": 170.81,
        "ilp_bound": 170.81,
        "ilp_gap": 0.0,
        "sha_ea_objective": 172.4,
        "sha_ea_wall_s": 27.0,
        "sha_ea_over_ilp": 172.4 / 170.81,
        "sha_ea_over_bound": 172.4 / 170.81,
    }
    spanning = {
        **row,
        "gpus": 48,
        "ilp_status": "feasible",
        "ilp_termination": "converged",
        "proved_by": "merged bound",
        "merged_plan_here": 143.53,
        "ilp_objective": 143.53,
        "ilp_bound": 142.68,
        "ilp_gap": 143.53 / 142.68 - 1,
        "sha_ea_objective": 143.1,
        "sha_ea_over_bound": 143.1 / 142.68,
    }
    text = report([row, spanning], "python -m benchmarks.ilp_size_curve")
    assert (
        "Proven optimal by the ILP: 40 GPUs; by the ILP on the cluster as it is alone: none" in text
    )
    assert "| merged |" in text and "| merged bound |" in text
    assert "At 48 GPUs the ILP's plan, 143.53 s, is within 0.60% of the proven bound" in text
    assert "SHA-EA's within 0.29%: the merged optimum's plan costs 143.53 s here" in text
    assert "configured again" not in text  # its plan here is the ILP's
    better = {**spanning, "ilp_objective": 143.07, "ilp_gap": 143.07 / 142.68 - 1}
    assert "are the ILP's plan" in report([better], "x")
    plot([row, spanning], tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_the_merged_plans_groups_configured_here_cost_no_less_than_the_optimum():
    """Level 4 on the original nodes for the merged optimum's groups (``configured_here``): a
    valid plan here, no slower than the plan read back, no faster than the proven optimum; on
    the testbed's first three nodes it is the optimum (243.14 s against 245.12 s read back)."""
    from costmodels.placement.check import check_placement
    from costmodels.solving import UNLIMITED
    from formulations.placement.node_merge import configured_here

    spec = hetrl_single_region()
    spec["nodes"] = spec["nodes"][:3]
    p = _problem(spec, "grpo-sync-qwen3-8b")
    q = merged_problem(p)
    exact = solve_placement_ilp(p)
    merged = solve_placement_ilp(q)
    back = plan_on(merged.plan, q, p)
    read = evaluate_placement(p, back).objective
    cost, plan = configured_here(p, back, read, UNLIMITED)
    assert check_placement(p, plan) == []
    assert evaluate_placement(p, plan).objective == cost
    assert exact.objective * (1 - 1e-12) <= cost < read
    assert cost == pytest.approx(exact.objective, rel=1e-9)
    # nothing below the optimum: the pruned search finds no plan
    assert configured_here(p, back, exact.objective * 0.99, UNLIMITED) is None


def test_an_upper_bound_between_the_merged_optimum_and_its_plan_here_keeps_the_better_plan():
    """Two nodes of 4 A100: the merged optimum's plan costs more here than the merged optimum.
    With the caller's upper bound between the two, nothing here is below it (the direct ILP
    proves it), and the plan returned is the best known: the merged plan read back, no worse
    than what the direct ILP alone returns."""
    from planner.solve import solve

    p = _problem(_nodes(("A100-40GB", 4), ("A100-40GB", 4)), "grpo-sync-qwen3-4b")
    full = solve(p, "ilp")
    merged = full.stats["merged"]
    assert merged["objective"] < merged["plan_here"]
    between = (merged["objective"] + merged["plan_here"]) / 2
    out = solve(p, "ilp", upper_bound=between)
    alone = solve(p, "ilp", upper_bound=between, merge_nodes=False)
    assert out.status is Status.FEASIBLE and "no plan costs less than upper_bound" in out.message
    assert out.objective == pytest.approx(merged["plan_here"], rel=1e-12)
    assert out.objective <= alone.objective
