"""Canned job instances for the contract test: two A100-40GB in one zone, Qwen3-1.7B GRPO, with
and without a long tail. No job solver is exact, so each is held to a physical floor: the
training step's FLOPs (forward and backward, 6 per parameter per token) over every GPU at its
dense BF16 peak."""

from __future__ import annotations

from costmodels.catalog import get_gpu, get_model
from costmodels.cluster import ClusterSpec
from costmodels.job.problem import JobProblem
from costmodels.placement.problem import PlacementProblem
from costmodels.problem import Canned
from costmodels.transformer import total_params
from costmodels.workflow import WorkflowSpec

CLUSTER = {
    "nodes": [{"name": "a", "gpu": "A100-40GB", "count": 2, "zone": "z"}],
    "network": {"intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05}},
}


def _workflow(tail: bool) -> dict:
    wf = {
        "algorithm": "grpo",
        "mode": "sync",
        "models": {"actor": "Qwen3-1.7B"},
        "global_batch": 16,
        "responses_per_prompt": 4,
        "prompt_length": 256,
        "response_length": 1024,
        "decode_batch_size": 32,
        "old_log_prob_pass": False,  # HetRL's DAG, as the placement presets
    }
    if tail:
        wf["response_lengths"] = {"distribution": "lognormal", "median": 300, "sigma": 0.9}
    return wf


def _problem(tail: bool) -> JobProblem:
    c, w = ClusterSpec.model_validate(CLUSTER), WorkflowSpec.model_validate(_workflow(tail))
    c.check()
    w.check()
    return JobProblem(PlacementProblem(c, w))


def _floor(tail: bool) -> float:
    w = WorkflowSpec.model_validate(_workflow(tail))
    tokens = w.samples * (w.prompt_length + w.mean_response_length)
    peak = 2 * get_gpu("A100-40GB").tflops_bf16_dense * 1e12
    return 6 * total_params(get_model("Qwen3-1.7B")) * tokens / peak


def canned_jobs() -> list[Canned]:
    return [
        Canned("two-a100-long-tail", lambda: _problem(True), lower_bound=_floor(True)),
        Canned("two-a100-constant", lambda: _problem(False), lower_bound=_floor(False)),
    ]
