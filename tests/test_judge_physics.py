"""The judge's physics as properties (docs/architecture.md, "One judge, one set of physics"): over
random clusters, models and plans, no predicted time beats the hardware's floor, faster hardware
never slows a plan, overlap happens only on disjoint GPUs, weight sync pays for every receiving
zone and its route, and the exact ILP's space contains every plan the other placement solvers
return."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import decode_step_time, ring_allreduce_s
from costmodels.efficiency import Efficiency
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.placement.space import tasklet_layout
from costmodels.transformer import BYTES_BF16, stage_params
from costmodels.workflow import ACTOR_GENERATION, TaskKind
from heuristics.placement.colocated import colocated_plan
from planner import solve
from planner.io import load_cluster, load_workflow
from tests.test_properties import GPUS, WORKFLOWS, clusters

MODELS = ["Qwen3-4B", "Qwen3-8B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2-57B-A14B"]
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _step(model, gpu, tp, batch, context, eff=None):
    eff = eff or Efficiency()
    g = get_gpu(gpu)
    return decode_step_time(
        get_model(model),
        g,
        tp=tp,
        stage_layers=get_model(model).layers,
        first=True,
        last=True,
        batch=batch,
        context_tokens=context,
        efficiency=eff,
        allreduce_s=lambda v: ring_allreduce_s(tp, 1.5e-6, g.link_gb_per_s, v),
    )


@SETTINGS
@given(
    model=st.sampled_from(MODELS),
    gpu=st.sampled_from(GPUS),
    tp=st.sampled_from([1, 2, 4, 8]),
    batch=st.integers(1, 512),
    context=st.integers(1, 32768),
    more=st.integers(1, 32768),
)
# the measured L40S TP8 all-reduce dips at 8-16 KiB: read as measured, two sequences' step was
# 0.2% faster than one's (costmodels.profiles.AllReduceTerm reads its padded envelope)
@example(model="Qwen3-8B", gpu="L40S", tp=8, batch=1, context=1, more=1)
def test_decode_step_grows_with_context_and_never_beats_the_floor(
    model, gpu, tp, batch, context, more
):
    m, g = get_model(model), get_gpu(gpu)
    short = _step(model, gpu, tp, batch, batch * context)
    long = _step(model, gpu, tp, batch, batch * (context + more))
    assert long["step_s"] > short["step_s"]  # every step reads the whole KV cache
    # floors at peak: the weight shard (dense: all of it) over HBM, the FLOPs over peak compute
    shard = BYTES_BF16 * stage_params(m, m.layers, True, True) / tp / 1e9
    if not m.is_moe:
        assert short["step_s"] >= shard / g.hbm_gb_per_s
    assert short["step_s"] >= 2 * (m.vocab * m.hidden) * batch / (tp * g.tflops_bf16_dense * 1e12)
    # throughput is bounded: doubling the batch never more than doubles tokens per second
    double = _step(model, gpu, tp, 2 * batch, 2 * batch * context)
    assert 2 * batch / double["step_s"] <= 2 * (batch / short["step_s"]) * (1 + 1e-9)


def _colocated(cluster, workflow_name, mode, tp):
    wf = load_workflow(workflow_name).model_copy(update={"mode": mode})
    problem = PlacementProblem(load_cluster(cluster), wf)
    return problem, colocated_plan(problem, tp, tp, 1, decode_batch=64)


@SETTINGS
@given(cluster=clusters(), tp=st.sampled_from([1, 2, 4]))
def test_colocated_async_never_beats_colocated_sync_by_more_than_the_reshard(cluster, tp):
    """Generation cannot hide behind training on the same GPUs."""
    sync_p, plan = _colocated(cluster, "grpo-sync-qwen3-4b", "sync", tp)
    async_p, _ = _colocated(cluster, "grpo-sync-qwen3-4b", "async", tp)
    s = evaluate_placement(sync_p, plan)
    a = evaluate_placement(async_p, plan)
    reshard = s.breakdown["phases"]["weight_transfer_s"]
    assert a.objective >= s.objective - reshard - 1e-9


def _split_plan(problem, gen_nodes, train_nodes):
    gdevs = [d.id for d in problem.topology.devices if d.node in gen_nodes]
    tdevs = [d.id for d in problem.topology.devices if d.node in train_nodes]
    names = [t.name for t in problem.tasks]
    tasks = [
        TaskPlacement(
            task=ACTOR_GENERATION,
            tp=1,
            pp=1,
            dp=len(gdevs),
            devices=tasklet_layout(gdevs, 1, 1, len(gdevs)),
            decode_batch=16,
        )
    ]
    tasks += [
        TaskPlacement(
            task=n, tp=1, pp=1, dp=len(tdevs), devices=tasklet_layout(tdevs, 1, 1, len(tdevs))
        )
        for n in names[1:]
    ]
    return PlacementPlan(
        groups=[
            TaskGroup(tasks=[ACTOR_GENERATION], devices=gdevs),
            TaskGroup(tasks=names[1:], devices=tdevs),
        ],
        tasks=tasks,
    )


def _star(gen_zones, bandwidths, latency=5.0, gpus=4):
    nodes = [{"name": "t", "gpu": "H800", "count": 8, "zone": "train"}]
    nodes += [
        {"name": f"g{i}", "gpu": "L40S", "count": gpus, "zone": f"z{i}"} for i in range(gen_zones)
    ]
    zones = ["train"] + [f"z{i}" for i in range(gen_zones)]
    inter = []
    for i, a in enumerate(zones):
        for b in zones[i + 1 :]:
            bw = (
                bandwidths[int(b[1:])]
                if a == "train"
                else min(bandwidths[int(a[1:])], bandwidths[int(b[1:])])
            )
            inter.append({"zones": [a, b], "bandwidth_gbps": bw, "latency_ms": latency})
    return {
        "nodes": nodes,
        "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}, "inter_zone": inter},
    }


@SETTINGS
@given(
    bandwidths=st.lists(st.floats(0.1, 400), min_size=2, max_size=4),
    slower=st.floats(0.01, 0.99),
    gpus=st.integers(1, 8),
)
def test_weight_sync_grows_with_receiving_zones_and_slower_routes(bandwidths, slower, gpus):
    """C_sync charges every receiving zone its arrival over the topology plus its fan-out."""
    wf = load_workflow("grpo-async-qwen3-4b")
    n = len(bandwidths)

    def sync_time(bws, zones, per_zone=gpus):
        p = PlacementProblem(load_cluster(_star(n, bws, gpus=per_zone)), wf)
        plan = _split_plan(p, {f"g{i}" for i in range(zones)}, {"t"})
        return evaluate_placement(p, plan).breakdown["phases"]["weight_transfer_s"]

    fewer = sync_time(bandwidths, n - 1)
    all_zones = sync_time(bandwidths, n)
    assert all_zones >= fewer - 1e-12
    # the last zone's links all slower: never faster, and never faster than its bytes over its
    # best link
    slow = [*bandwidths[:-1], bandwidths[-1] * slower]
    slowed = sync_time(slow, n)
    assert slowed >= all_zones - 1e-12
    weights_gb = BYTES_BF16 * get_model("Qwen3-4B").params_b
    best_link = (
        max(slow[-1], max(min(b, slow[-1]) for b in slow)) / 8
    )  # every route into the last zone
    assert slowed >= weights_gb / best_link * (1 - 1e-9)
    if gpus >= 2:
        assert sync_time(bandwidths, n, per_zone=gpus) > sync_time(bandwidths, n, per_zone=1)


@SETTINGS
@given(
    cluster=clusters(),
    workflow=WORKFLOWS,
    factor=st.floats(1.0, 10.0),
    which=st.sampled_from(["hbm", "link", "flops"]),
)
def test_one_faster_component_never_slows_a_plan(cluster, workflow, factor, which):
    """More HBM bandwidth, a faster intra-node link or more FLOP/s alone never make a fixed plan
    slower."""
    field = {"hbm": "hbm_gb_per_s", "link": "intra_node_gb_per_s", "flops": "tflops_bf16_dense"}[
        which
    ]
    wf = load_workflow(workflow)
    base = PlacementProblem(load_cluster(cluster), wf)
    custom = []
    for name in {n["gpu"] for n in cluster["nodes"]}:
        g = get_gpu(name).model_dump()
        g[field] *= factor
        if which == "link":
            g["intra_node_per_direction_gb_per_s"] *= factor
        custom.append(g)
    faster = PlacementProblem(load_cluster({**cluster, "gpus": custom}), wf)
    plan = colocated_plan(base, 2, 2, 1, decode_batch=32)
    assert evaluate_placement(faster, plan).objective <= evaluate_placement(
        base, plan
    ).objective * (1 + 1e-12)


@SETTINGS
@given(cluster=clusters(), workflow=WORKFLOWS, tp=st.sampled_from([1, 2, 4]))
def test_no_task_beats_its_flops_or_bytes_floor(cluster, workflow, tp):
    """Training cannot beat its FLOPs over the group's peak; generation cannot beat reading its
    weight shard once per generated token."""
    problem = PlacementProblem(load_cluster(cluster), load_workflow(workflow))
    plan = colocated_plan(problem, tp, tp, 1, decode_batch=64)
    ev = evaluate_placement(problem, plan)
    wf = problem.workflow
    peak = sum(d.gpu.tflops_bf16_dense * 1e12 for d in problem.topology.devices)
    m = wf.model("actor")
    train_flops = 3 * 2 * m.params_b * 1e9 * wf.samples * (wf.prompt_length + wf.response_length)
    assert (
        ev.breakdown["tasks"]["actor_training"]["time_s"] >= train_flops / peak * 0.5
    )  # 2*params per token is below the real count
    hbm = max(d.gpu.hbm_gb_per_s for d in problem.topology.devices)
    shard = BYTES_BF16 * m.params_b / tp
    assert ev.breakdown["tasks"][ACTOR_GENERATION]["time_s"] >= wf.response_length * shard / hbm


TINY = ["A100-40GB", "L40S", "H20", "H800"]


@st.composite
def tiny_clusters(draw):
    """Two nodes, one or two GPUs each, maybe in two zones: small enough for every solver."""
    nodes = [
        {
            "name": f"n{i}",
            "gpu": draw(st.sampled_from(TINY)),
            "count": draw(st.integers(1, 2)),
            "zone": f"z{i if draw(st.booleans()) else 0}",
        }
        for i in range(2)
    ]
    net = {"intra_zone": {"bandwidth_gbps": draw(st.floats(10, 200)), "latency_ms": 0.05}}
    if nodes[1]["zone"] != nodes[0]["zone"]:
        net["inter_zone"] = [
            {
                "zones": ["z0", "z1"],
                "bandwidth_gbps": draw(st.floats(0.5, 50)),
                "latency_ms": draw(st.floats(1, 40)),
            }
        ]
    return {"nodes": nodes, "network": net}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=tiny_clusters(), mode=st.sampled_from(["sync", "async"]), seed=st.integers(0, 3))
def test_ilp_is_never_worse_than_any_other_solver(cluster, mode, seed):
    """The space the ILP proves optimality over contains every plan the others return
    (docs/architecture.md, "The cost model is the contract")."""
    wf = {
        "algorithm": "grpo",
        "mode": mode,
        "models": {"actor": "Qwen3-1.7B"},
        "global_batch": 16,
        "responses_per_prompt": 4,
        "prompt_length": 512,
        "response_length": 512,
        "decode_batch_size": 16,
    }
    problem = PlacementProblem(load_cluster(cluster), load_workflow(wf))
    ilp = solve(problem, "ilp", time_limit=120)
    # work budgets, not time limits: the same plans on any machine (the limit is a safety cap)
    budgets = {
        "verl": {},
        "streamrl": {},
        "sha-ea": {"evaluations": 20},
        "ea": {"evaluations": 300},
        "random": {"evaluations": 300},
    }
    others = {s: solve(problem, s, time_limit=60, seed=seed, **o) for s, o in budgets.items()}
    for name, r in others.items():
        if r.plan is None:
            continue
        assert check_placement(problem, r.plan) == []
        assert ilp.objective is not None, f"{name} found a plan the ILP did not"
        assert ilp.objective <= r.objective * (1 + 1e-6), (name, r.objective, ilp.objective)


def test_ilp_contains_the_verl_plan_on_a_mixed_two_zone_cluster():
    """A mixed two-zone case: 4 A100-40GB + 4 L40S, 10 Gbps between zones, GRPO Qwen3-8B."""
    cluster = load_cluster(
        {
            "nodes": [
                {"name": "a", "gpu": "A100-40GB", "count": 4, "zone": "za"},
                {"name": "l", "gpu": "L40S", "count": 4, "zone": "zl"},
            ],
            "network": {
                "intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05},
                "inter_zone": [{"zones": ["za", "zl"], "bandwidth_gbps": 10, "latency_ms": 1}],
            },
        }
    )
    problem = PlacementProblem(cluster, load_workflow("grpo-sync-qwen3-8b"))
    verl = solve(problem, "verl")
    ilp = solve(problem, "ilp", time_limit=300)
    assert verl.plan is not None and ilp.objective is not None
    assert ilp.objective <= verl.objective * (1 + 1e-9)
    # verl's plan is in the space: even splits, its decode batch one the space offers
    gen = verl.plan.task(ACTOR_GENERATION)
    assert gen.batch_shares is None and gen.layers_per_stage is None


def test_generation_kind_is_costed_by_the_one_decode_model():
    """Placement's generation and ``rlplan estimate``'s instance agree on one decode step."""
    from costmodels.decode import Instance

    cluster = load_cluster(
        {
            "nodes": [{"name": "h", "gpu": "H800", "count": 2, "zone": "z"}],
            "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}},
        }
    )
    wf = load_workflow(
        {
            "algorithm": "grpo",
            "mode": "sync",
            "models": {"actor": "Qwen2.5-14B"},
            "global_batch": 8,
            "responses_per_prompt": 8,
            "prompt_length": 4095,
            "response_length": 1,
            "decode_batch_size": 64,
        }
    )
    problem = PlacementProblem(cluster, wf)
    plan = colocated_plan(problem, 2, 2, 1, decode_batch=64)
    g = evaluate_placement(problem, plan).breakdown["tasks"][ACTOR_GENERATION]["decode"]
    inst = Instance(get_model("Qwen2.5-14B"), get_gpu("H800"), 2)
    step = inst.decode_step(64, 64 * 4095.5)
    assert g["decode_s"] == pytest.approx(step["step_s"], rel=1e-6)
    # the floor: reading the weights and the 4k-context KV once needs >= 12 ms
    assert g["decode_s"] >= 0.012
    assert math.isfinite(g["decode_s"])
    assert problem.tasks[0].kind is TaskKind.GENERATION


def test_head_dim_comes_from_the_catalog():
    """Qwen3 uses 128-wide heads whatever hidden / heads says."""
    from costmodels.catalog import ModelSpec
    from costmodels.transformer import kv_bytes_per_token

    q4 = get_model("Qwen3-4B")
    assert q4.hidden // q4.query_heads == 80 and q4.head_dim == 128
    assert get_model("Qwen3-235B-A22B").head_dim == 128
    assert kv_bytes_per_token(q4, q4.layers, 1) == 2 * q4.layers * q4.kv_heads * 128 * 2
    custom = ModelSpec(
        name="x",
        params_b=1,
        hidden=1024,
        layers=2,
        ffn_intermediate=4096,
        query_heads=8,
        kv_heads=8,
        vocab=10,
    )
    assert custom.head_dim == 128  # absent: hidden / heads


def test_every_breakdown_shows_the_one_efficiency_set():
    from costmodels.placement.summary import placement_summary
    from costmodels.problem import SolvedPlan

    cluster = load_cluster(
        {
            "nodes": [{"name": "h", "gpu": "H800", "count": 4, "zone": "z"}],
            "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}},
        }
    )
    problem = PlacementProblem(cluster, load_workflow("grpo-sync-qwen3-4b"))
    plan = colocated_plan(problem, 2, 2, 1, decode_batch=32)
    ev = evaluate_placement(problem, plan)
    assert ev.breakdown["efficiency"] == Efficiency().summary()
    text = placement_summary(
        SolvedPlan(problem, plan, ev.objective, ev.breakdown, "verl", "feasible")
    ).caption
    # the default judge runs on the measured profiles: the caption names them, not the flat
    # fractions it did not use
    assert "kernels: aic-vllm profiles per GPU type" in text and "decode model physical" in text
    assert "compute 50% of peak" not in text
    flat = PlacementProblem(
        cluster,
        load_workflow("grpo-sync-qwen3-4b"),
        CostParams(efficiency=Efficiency(kernels="flat", profiles={})),
    )
    ev = evaluate_placement(flat, plan)
    text = placement_summary(SolvedPlan(flat, plan, ev.objective, ev.breakdown, "v", "f")).caption
    assert "efficiency: compute 50% of peak, HBM 80%" in text
