"""HetRL Appendix B formulas pinned on hand-computed cases (tiny model, round-number hardware).

``LITERAL`` switches the judge to the paper's own terms (peak FLOP/s and HBM, weights-only decode,
prefill per response) so the Appendix B formulas can be checked as printed; the physical terms
that replace them by default are checked by hand below too
(docs/architecture.md, "One judge, one set of physics")."""

from __future__ import annotations

import pytest

from costmodels import transformer as tf
from costmodels.catalog import get_model
from costmodels.efficiency import Efficiency
from costmodels.memory import tasklet_memory
from costmodels.placement.judge import evaluate_placement, phi
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.workflow import TaskKind
from planner.io import load_cluster, load_workflow
from tests.conftest import ADAM_WITH_RECOMPUTE

TINY = {
    "name": "Tiny",
    "params_b": 0.001,
    "hidden": 64,
    "layers": 4,
    "ffn_intermediate": 128,
    "query_heads": 4,
    "kv_heads": 4,
    "vocab": 100,
}
GPU = {
    "name": "Unit",
    "tflops_bf16_dense": 1,
    "memory_gb": 80,
    "hbm_gb_per_s": 100,
    "intra_node_gb_per_s": 10,
}


PEAK = Efficiency(
    compute=1.0, hbm=1.0, decode_step_overhead_ms=0.0, decode_sequence_overhead_us=0.0
)
LITERAL = CostParams(efficiency=PEAK, decode_model="hetrl", share_prompt_prefill=False)


def problem(mode="sync", count=2, params=LITERAL):
    cluster = load_cluster(
        {
            "gpus": [GPU],
            "nodes": [
                {
                    "name": "n",
                    "gpu": "Unit",
                    "count": count,
                    "zone": "z",
                    "intra_node": {"bandwidth_gbps": 80, "latency_ms": 1.0},
                }
            ],
            "network": {"intra_zone": {"bandwidth_gbps": 8, "latency_ms": 10}},
        }
    )
    wf = load_workflow(
        {
            "algorithm": "grpo",
            "mode": mode,
            "models": {"actor": "Tiny"},
            "custom_models": [TINY],
            "old_log_prob_pass": False,  # HetRL Appendix B's terms, by hand
            "global_batch": 2,
            "responses_per_prompt": 2,
            "prompt_length": 6,
            "response_length": 4,
        }
    )
    return PlacementProblem(cluster, wf, params)


def plan_all(tp, pp, dp, count=2, dbs=None):
    devs = [f"n:{i}" for i in range(count)]
    it = iter(devs)
    layout = [[[next(it) for _ in range(tp)] for _ in range(pp)] for _ in range(dp)]
    names = ["actor_generation", "reference_inference", "actor_training"]
    return PlacementPlan(
        groups=[TaskGroup(tasks=names, devices=devs)],
        tasks=[
            TaskPlacement(
                task=n,
                tp=tp,
                pp=pp,
                dp=dp,
                devices=layout,
                decode_batch=dbs if n == "actor_generation" else None,
            )
            for n in names
        ],
    )


def test_layer_terms_match_the_paper():
    m = get_model("Tiny", {"Tiny": __import__("costmodels").ModelSpec(**TINY)})
    s, h, h2 = 10, 64, 128
    assert tf.attention_params(m) == 4 * h * h  # kv_heads == query_heads: the paper's 4h^2
    assert tf.mlp_params(m, active=True) == 3 * h * h2
    assert (
        tf.layer_forward_flops(m, s)
        == 2 * 4 * s * h * h + 2 * 2 * s * s * h + 2 * 3 * s * h * h2
        == 844800
    )


def test_gqa_and_moe_counting():
    q = get_model("Qwen3-8B")  # 32 query heads, 8 KV heads, head_dim 128
    assert tf.attention_params(q) == 4096 * 4096 * 2 + 4096 * 1024 * 2
    moe = get_model("Qwen2-57B-A14B")
    assert tf.mlp_params(moe, active=False) == 64 * 3 * 3584 * 2560  # memory: all experts
    assert tf.mlp_params(moe, active=True) == 8 * 3 * 3584 * 2560  # FLOPs: routed experts
    assert (
        tf.layer_forward_flops(moe, 1)
        == 2 * (tf.attention_params(moe) + tf.mlp_params(moe, True)) + 4 * 3584
    )


def test_dp_only_plan_by_hand():
    p = problem()
    ev = evaluate_placement(p, plan_all(1, 1, 2))
    t = ev.breakdown["tasks"]
    # generation: prefill of 2 samples x 6 prompt tokens + LM head, on 1 TFLOP/s
    gen_comp = 2 * (4 * (2 * 6 * 16384 + 4 * 36 * 64 + 2 * 6 * 24576) + 2 * 6 * 64 * 100) / 1e12
    # decode: 4 steps (one batch) each reading 2 MB of weights at 100 GB/s
    gen_hbm = 4 * 0.002 / 100
    assert t["actor_generation"]["comp_s"] == pytest.approx(gen_comp)
    assert t["actor_generation"]["decode_s"] == pytest.approx(gen_hbm)
    assert t["actor_generation"]["time_s"] == pytest.approx(gen_comp + gen_hbm)
    inf = 2 * (4 * 844800 + 2 * 10 * 64 * 100) / 1e12
    assert t["reference_inference"]["time_s"] == pytest.approx(inf)
    # training: fwd + bwd + recomputed fwd = 4x forward; DP ring of two GPUs: 1 ms + 4 MB / 10 GB/s
    # (the FP32 gradients the memory model holds, not the paper's BF16)
    dp = 1e-3 + 0.004 / 10
    assert t["actor_training"]["comp_s"] == pytest.approx(4 * inf)
    assert t["actor_training"]["dp_s"] == pytest.approx(dp)
    assert ev.breakdown["phases"]["weight_transfer"] == "reshard"
    assert ev.breakdown["phases"]["weight_transfer_s"] == 0.0  # each training replica is one GPU
    assert ev.objective == pytest.approx(gen_comp + gen_hbm + inf + 4 * inf + dp)
    assert ev.breakdown["ring_exact"]


def test_tp_plan_by_hand():
    p = problem()
    ev = evaluate_placement(p, plan_all(2, 1, 1))
    t = ev.breakdown["tasks"]
    ring = (
        1e-3 + (2 * 1 * 10 * 64 * 2 * 1 / 2) / 1e9 / 10
    )  # alpha + cv_tp / beta, cv_tp = B*mbs*seq*h*2(tp-1)/tp
    nm, nl = 4, 4
    assert t["reference_inference"]["tp_s"] == pytest.approx(2 * nm * nl * ring)
    assert t["actor_training"]["tp_s"] == pytest.approx(6 * nm * nl * ring)  # recomputation: 6x
    inf_comp = 4 * (4 * 844800 + 2 * 10 * 64 * 100) / 1e12 / 2
    assert t["reference_inference"]["comp_s"] == pytest.approx(inf_comp)
    # prefill's TP volume covers the prompt only (6 tokens); decode adds 2 all-reduces per layer
    # per step at the ring's latency: 4 steps x 2 x 4 layers x 1 ms
    prefill_ring = 1e-3 + (2 * 1 * 6 * 64 * 2 * 1 / 2) / 1e9 / 10
    gen_tp = 2 * nm * nl * prefill_ring + 4 * 2 * 4 * 1e-3
    assert t["actor_generation"]["tp_s"] == pytest.approx(gen_tp)
    # reshard: all-gather of the 2 MB model inside the TP=2 training replica
    assert ev.breakdown["phases"]["weight_transfer_s"] == pytest.approx(1e-3 + 0.002 * 0.5 / 10)


def test_pp_plan_and_bubble_by_hand():
    p = problem()
    ev = evaluate_placement(p, plan_all(1, 2, 1))
    t = ev.breakdown["tasks"]["actor_training"]
    nm = 4
    hop = 1e-3 + (2 * 1 * 10 * 64) / 1e9 / 10
    assert t["pp_s"] == pytest.approx(2 * nm * hop)  # forward + backward per micro-batch
    # stage 1 (last) holds 2 layers and the LM head; the bubble is its (comp + tp + pp) / nm
    stage1 = 4 * 4 * (2 * 844800 + 2 * 10 * 64 * 100) / 1e12
    assert t["bubble_s"] == pytest.approx(stage1 / nm)
    stage0 = 4 * 4 * (2 * 844800) / 1e12
    assert t["time_s"] == pytest.approx(max(stage0 + 2 * nm * hop, stage1) + stage1 / nm)


def test_phi_and_async():
    assert phi([3.0, 1.0, 2.0], 0.0) == 6.0
    assert phi([3.0, 1.0, 2.0], 1.0) == 3.0
    assert phi([3.0, 1.0, 2.0], 0.5) == pytest.approx(3.0 + 0.5 * 3.0)  # = max + (1-eta)(sum - max)
    p = problem("async")
    ev = evaluate_placement(p, plan_all(1, 1, 2))
    ph = ev.breakdown["phases"]
    assert ph["weight_transfer"] == "sync"
    # every task shares the two GPUs: nothing overlaps, generation's GPUs are busy for all of it
    assert ph["generation_group_busy_s"] == pytest.approx(
        ph["generation_s"] + ph["inference_s"] + ph["training_s"]
    )
    assert ev.objective == pytest.approx(ph["generation_group_busy_s"] + ph["weight_transfer_s"])
    # the paper's literal async max hides generation behind training on the same GPUs
    literal = problem("async", params=LITERAL.model_copy(update={"group_aware_overlap": False}))
    ev2 = evaluate_placement(literal, plan_all(1, 1, 2))
    ph2 = ev2.breakdown["phases"]
    assert ev2.objective == pytest.approx(
        max(ph2["generation_s"], ph2["inference_s"] + ph2["training_s"]) + ph2["weight_transfer_s"]
    )
    # C_sync on one node: no arrival (the zone holds training GPUs), the fan-out to the second
    # GPU is 64 chunks of 2 MB / 64 over the 1 ms, 10 GB/s link, after the 1-GPU replicas'
    # all-gather (0)
    zone = ph["weight_transfer_parts"]["zones"]["z"]
    assert zone["arrival_s"] == 0.0
    assert zone["fanout_s"] == pytest.approx(64 * (1e-3 + 0.002 / 64 / 10))


def test_physical_decode_by_hand():
    """The default decode: every step reads the weights and the batch's KV (D2), against the
    compute roofline (D3); contexts grow from P; midpoint rule over 4 segments of R = 4 steps."""
    p = problem(params=CostParams(efficiency=PEAK))
    ev = evaluate_placement(p, plan_all(1, 1, 2, dbs=2))
    g = ev.breakdown["tasks"]["actor_generation"]
    kv_token = 2 * 4 * 4 * 16 * 2 / 1e9  # K and V, 4 layers, 4 heads x 16, BF16
    active = 4 * (4 * 64 * 64 + 3 * 64 * 128) + 100 * 64  # layers + LM head
    decode = 0.0
    for k in range(4):  # one wave of the replica's 2 sequences, one step per segment
        ctx = 2 * (6 + k + 0.5)
        memory = (0.002 + ctx * kv_token) / 100
        compute = (2 * active * 2 + 4 * ctx * 64 * 4) / 1e12
        decode += max(memory, compute)
    assert g["decode_s"] == pytest.approx(decode)
    assert g["decode"]["micro_batches"] == 1.0
    # prefill once per prompt: the 2 responses of a prompt share it
    prefill = 1 * (4 * (2 * 6 * 16384 + 4 * 36 * 64 + 2 * 6 * 24576) + 2 * 6 * 64 * 100) / 1e12
    assert g["comp_s"] == pytest.approx(prefill)
    assert g["time_s"] == pytest.approx(prefill + decode)


def test_pipelined_decode_with_fewer_micro_batches_than_stages():
    """PP = 2 with one sequence in flight: every token crosses both stages one after the other
    (the paper's formula would cost it as perfectly pipelined, half of that)."""
    p = problem(params=CostParams(efficiency=PEAK))
    one = evaluate_placement(p, plan_all(1, 2, 1, dbs=1)).breakdown["tasks"]["actor_generation"][
        "decode"
    ]
    two = evaluate_placement(p, plan_all(1, 2, 1, dbs=2)).breakdown["tasks"]["actor_generation"][
        "decode"
    ]
    assert one["micro_batches"] == 1.0 and two["micro_batches"] == 2.0
    # 4 sequences: one at a time takes 4 waves, two at a time 2 waves of two micro-batches
    assert one["steps"] == 16 and two["steps"] == 8
    # one micro-batch leaves a stage idle every round: the wave costs both stages' sum plus the hop
    assert one["pipeline_s"] > 0
    assert one["decode_s"] > two["decode_s"]


def test_memory_by_hand():
    m = __import__("costmodels").ModelSpec(**TINY)
    args = dict(
        stage_layers=4,
        first=True,
        last=True,
        tp=1,
        pp=1,
        dp=2,
        seq=10,
        mbs=1,
        micro_batches=2,
        **ADAM_WITH_RECOMPUTE,
    )
    train = tasklet_memory(TaskKind.TRAINING, m, **args)
    assert train.model_gb == pytest.approx(1e6 * (2 + 4 + 12 / 2) / 1e9)
    sbh = 10 * 64
    assert train.working_gb == pytest.approx(((2 * sbh * 4 + 34 * sbh) * 1 + 10 * 100 * 4) / 1e9)
    gen = tasklet_memory(TaskKind.GENERATION, m, **args)
    assert gen.model_gb == pytest.approx(2e6 / 1e9)
    assert gen.working_gb == pytest.approx(
        2 * 4 * 4 * 16 * 2 * 10 / 1e9
    )  # K and V, 4 layers, 4 heads x 16
