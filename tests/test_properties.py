"""Property tests (hypothesis): plans pass the validator; the cost model is monotone where
physics says so (more bandwidth or faster GPUs never make a fixed plan slower)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.problem import PlacementProblem
from heuristics.placement.colocated import colocated_plan
from planner import solve
from planner.io import load_cluster, load_workflow
from planner.planfile import plan_file_from_dict, recheck, result_to_dict

GPUS = ["A100-40GB", "L40S", "H800", "H20"]


@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(1, 3))
    zones = draw(st.lists(st.sampled_from(["z0", "z1"]), min_size=n_nodes, max_size=n_nodes))
    nodes = [
        {"name": f"n{i}", "gpu": draw(st.sampled_from(GPUS)), "count": 4, "zone": zones[i]}
        for i in range(n_nodes)
    ]
    network = {
        "intra_zone": {
            "bandwidth_gbps": draw(st.floats(10, 400)),
            "latency_ms": draw(st.floats(0.01, 0.5)),
        }
    }
    if len(set(zones)) == 2:
        network["inter_zone"] = [
            {
                "zones": ["z0", "z1"],
                "bandwidth_gbps": draw(st.floats(0.5, 50)),
                "latency_ms": draw(st.floats(1, 80)),
            }
        ]
    return {"nodes": nodes, "network": network}


WORKFLOWS = st.sampled_from(["grpo-sync-qwen3-4b", "grpo-async-qwen3-4b", "ppo-sync-qwen3-4b"])


def _scale_network(data, factor):
    net = dict(data["network"])
    net["intra_zone"] = {
        **net["intra_zone"],
        "bandwidth_gbps": net["intra_zone"]["bandwidth_gbps"] * factor,
    }
    if "inter_zone" in net:
        net["inter_zone"] = [
            {**link, "bandwidth_gbps": link["bandwidth_gbps"] * factor}
            for link in net["inter_zone"]
        ]
    return {**data, "network": net}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), workflow=WORKFLOWS)
def test_returned_plans_pass_validation_and_recheck(cluster, workflow):
    problem = PlacementProblem(load_cluster(cluster), load_workflow(workflow))
    result = solve(problem, "verl")
    if not result.success:  # a drawn cluster too small for the workflow: said, with no plan
        assert (
            result.plan is None
            and result.status.value in ("infeasible", "no_solution")
            and result.message
        ), result
        return
    assert check_placement(problem, result.plan) == []
    doc = plan_file_from_dict(result_to_dict(result))
    assert recheck(doc) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=clusters(),
    workflow=WORKFLOWS,
    factor=st.floats(1.0, 20.0),
    tp=st.sampled_from([1, 2, 4]),
)
def test_more_bandwidth_never_slower(cluster, workflow, factor, tp):
    wf = load_workflow(workflow)
    slow = PlacementProblem(load_cluster(cluster), wf)
    fast = PlacementProblem(load_cluster(_scale_network(cluster, factor)), wf)
    plan = colocated_plan(slow, tp, tp, 1)
    assert evaluate_placement(fast, plan).objective <= evaluate_placement(slow, plan).objective * (
        1 + 1e-12
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), workflow=WORKFLOWS, factor=st.floats(1.0, 10.0))
def test_faster_gpus_never_slower(cluster, workflow, factor):
    from costmodels.catalog import get_gpu

    wf = load_workflow(workflow)
    base = PlacementProblem(load_cluster(cluster), wf)
    custom = []
    for name in {n["gpu"] for n in cluster["nodes"]}:
        g = get_gpu(name)
        custom.append(
            {
                **g.model_dump(),
                "name": name,
                "tflops_bf16_dense": g.tflops_bf16_dense * factor,
                "hbm_gb_per_s": g.hbm_gb_per_s * factor,
            }
        )
    faster = PlacementProblem(load_cluster({**cluster, "gpus": custom}), wf)
    plan = colocated_plan(base, 2, 2, 1)
    assert evaluate_placement(faster, plan).objective <= evaluate_placement(
        base, plan
    ).objective * (1 + 1e-12)
