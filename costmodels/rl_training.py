"""The RL step's training stage (the log-prob pass and the training passes) for the problems
that need one number for it: RollPacker's rollout planning and RollMux's co-scheduling. It is the
placement judge's own model, so one job gets one training time whichever problem plans it
(``docs/architecture.md``, "One step model").

**The passes** are ``costmodels.replica_cost``'s per-strategy terms (HetRL Appendix B.2-B.3 as
``costmodels.placement.judge`` departs from it) for the actor's old log-prob pass (on its
training layout, ``WorkflowSpec.old_log_prob_pass``; no KL, so no reference) and its training
pass, co-located on the job's ``G`` GPUs of one type: TP inside a node, PP over
nodes when a replica needs more than a node, DP over the rest; the batch's sequences packed at the
expected sequence of the response-length distribution (verl's dynamic batch size), activation
recomputation, the slowest data-parallel rank (``costmodels.straggler``), the TP and PP traffic and
the DP gradient all-reduce on nodes of ``gpus_per_node`` joined by :data:`INTER_NODE_GB_PER_S` per
GPU. ``efficiency`` is the share of dense BF16 peak the passes' GEMMs reach
(``Efficiency.training_flops``): the placement judge's ``compute`` (0.5) unless a GPU type has a
fitted ``training_mfu`` or the job names one (RollPacker's presets carry :data:`FITTED_MFU`).

**Per token.** The rollout judge's trainer is a fluid over groups of sequences
(``costmodels.rollout.stream``): it needs GPU-seconds per token. The stage of one step of the job's
shape (:class:`BatchShape`), times G, over that step's tokens, is that rate; a step of the job's
own lengths then gets exactly the placement judge's stage.

**After the last gradient** (``fixed_s``): the optimizer step reads fp32 parameters, gradients
and two Adam moments (16 bytes per parameter) and writes three of them back (12), a stream over HBM
at ``e_hbm``; and every rollout GPU receives the whole bf16 model once at ``b``, the slower of the
node's NVLink per direction and :data:`INTER_NODE_GB_PER_S` when the group spans nodes.

**The fit.** :data:`FITTED_MFU` is the efficiency at which veRL's training share of rlplan's own
rollout of RollPacker Table 1's job (Qwen2.5-14B, 16k responses, 32 H800, ``eager``) is the
measured 22% (``costmodels.rollout.table1.fit_mfu``); RollPacker's Tables 3-4 are its test rows
(``benchmarks/results/fidelity/rollout_steps.md``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import get_gpu, get_model
from costmodels.cluster import ClusterSpec, Topology, build_topology
from costmodels.cost_params import CostParams
from costmodels.decode import ServingParams
from costmodels.efficiency import Efficiency
from costmodels.limits import MAX_GLOBAL_BATCH, MAX_RESPONSES_PER_PROMPT
from costmodels.replica_cost import TaskCoster
from costmodels.response_lengths import ResponseLengths
from costmodels.transformer import total_params
from costmodels.workflow import ACTOR_TRAINING, WorkflowSpec

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: Adam: read fp32 parameters, gradients, m, v (16 B); write parameters, m, v (12 B)
OPTIMIZER_BYTES_PER_PARAM = 28.0
#: one GPU's share of the node's scale-out network: 200 Gb/s per GPU (8 x 200 Gb/s RoCE/IB NICs
#: per 8-GPU node, the common H800 build), in GB/s
INTER_NODE_GB_PER_S = 25.0
#: latency of one hop between nodes, ms (RDMA, the same figure ``benchmarks/fidelity`` assumes)
INTER_NODE_LATENCY_MS = 0.005
#: training efficiency fitted to RollPacker Table 1 (:func:`costmodels.rollout.table1.fit_mfu`;
#: re-fitted by ``python -m benchmarks.fidelity``, which fails when this drifts from the fit)
FITTED_MFU = 0.112
#: a replica's training state must fit in this share of a GPU's memory (the rest: activations,
#: the rollout engine's weights when co-located), for :func:`training_replica`'s default
STATE_SHARE = 0.5
#: bytes per parameter of the training state: bf16 weights (2) and fp32 gradients (4) per TP
#: shard, fp32 master weights and Adam moments (12) sharded over DP too (Megatron's distributed
#: optimizer, ``costmodels.cost_params.CostParams``)
SHARD_BYTES, OPTIMIZER_STATE_BYTES = 6.0, 12.0
#: sequences of a step given only by its tokens (``rlplan calibrate``'s training rows, a bare
#: ``train_seconds`` call): constant, this long, tokens
REFERENCE_SEQUENCE = 2048


def log_prob_field() -> Any:
    """A spec field for the old log-prob pass: a forward pass over the batch before training.

    A trainer that makes one optimizer update per RL step needs no old log-probs: at that update
    the policy is the one that generated, so the importance ratio is exp(logp - logp.detach())
    = 1 and the log-probs of the training pass's own forward serve. RollPacker's artifact runs
    so: its launcher sets ``fake_old_log_probs = True`` and, with autoscaling, asserts
    ``SKIP_OLD_LOG_PROBS`` ("we should directly skip old log probs computation",
    ``examples/start_rlvr_pipeline_async.py``), and leaves the reference cluster out (no KL);
    its stream trainer defers the one update to the end of rollout (RollPacker §4.4). Upstream
    ROLL skips the pass by itself when a step makes one update
    (``RLVRConfig.set_old_logprobs_status``); veRL recomputes them whatever the updates unless
    in its bypass mode (verl >= 0.7, ``algorithm.rollout_correction.bypass_mode``), and did in
    RollPacker Table 1's runs, which the training efficiency is fitted to, so the default
    keeps the pass."""
    return Field(
        default=True,
        description=(
            "the old log-prob forward pass before training (veRL; false: the trainer makes one "
            "update a step and needs none, as RollPacker's artifact and ROLL run)"
        ),
    )


def mfu_field(description: str) -> Any:
    """A spec field for the training efficiency: in (0, 1], or None for the judge's."""
    return Field(default=None, gt=0, le=1, description=description)


@dataclass(frozen=True)
class BatchShape:
    """One step's batch: ``sequences`` sequences of ``prompt`` prompt tokens (mean) and responses
    drawn from ``lengths`` cut at ``cap``, trained in ``mini_batches`` optimizer steps."""

    sequences: int
    prompt: int
    lengths: ResponseLengths = field(default_factory=ResponseLengths)
    cap: int = 1
    mini_batches: int = 1

    @classmethod
    def constant(cls, sequences: int, prompt: int, response: int) -> BatchShape:
        return cls(max(1, sequences), max(1, prompt), ResponseLengths(), max(1, response))

    @classmethod
    def of_tokens(cls, tokens: float) -> BatchShape:
        """A step known only by its tokens: constant sequences of :data:`REFERENCE_SEQUENCE`."""
        n = max(1, round(tokens / REFERENCE_SEQUENCE))
        return cls.constant(
            n, REFERENCE_SEQUENCE // 4, REFERENCE_SEQUENCE - REFERENCE_SEQUENCE // 4
        )

    @property
    def tokens(self) -> float:
        """Expected tokens of the step (prompts and responses)."""
        return self.sequences * (self.prompt + self.lengths.mean(self.cap))


def training_replica(model: str, gpu: str, gpus: int, gpus_per_node: int = 8) -> int:
    """GPUs of one training replica when the job does not say: the smallest power of two (TP
    inside a node, then PP over whole nodes) whose per-GPU training state, SHARD_BYTES per
    parameter over the replica and OPTIMIZER_STATE_BYTES over every GPU, fits in STATE_SHARE of
    a GPU's memory; at most ``gpus``."""
    n, mem = total_params(get_model(model)), get_gpu(gpu).memory_gb * 1e9 * STATE_SHARE
    r = 1
    while r < gpus and SHARD_BYTES * n / r + OPTIMIZER_STATE_BYTES * n / gpus > mem:
        r *= 2
    return min(r, gpus)


@dataclass(frozen=True)
class _Strategy:
    """A task's grid placement (``costmodels.replica_cost.Strategy``)."""

    task: str
    tp: int
    pp: int
    dp: int
    devices: list[list[list[str]]]
    layers_per_stage: list[int] | None = None
    batch_shares: list[float] | None = None
    decode_batch: int | None = None


@dataclass(frozen=True)
class _Context:
    """A homogeneous job as the coster reads a problem (``costmodels.replica_cost.CostContext``)."""

    workflow: WorkflowSpec
    topology: Topology
    params: CostParams


def training_cluster(gpu: str, gpus: int, gpus_per_node: int = 8) -> ClusterSpec:
    """The job's GPUs as the training model costs them: nodes of ``gpus_per_node`` (the last one
    partial) joined by :data:`INTER_NODE_GB_PER_S` per GPU at :data:`INTER_NODE_LATENCY_MS`; a
    placement of the same job on this cluster gets the same passes (``benchmarks/one_job.py``)."""
    per = min(gpus_per_node, gpus)
    nodes = [
        {"name": f"n{k}", "gpu": gpu, "count": min(per, gpus - k * per), "zone": "dc"}
        for k in range(math.ceil(gpus / per))
    ]
    link = {"bandwidth_gbps": INTER_NODE_GB_PER_S * 8, "latency_ms": INTER_NODE_LATENCY_MS}
    return ClusterSpec.model_validate({"nodes": nodes, "network": {"intra_zone": link}})


def _context(
    model: str,
    gpu: str,
    gpus: int,
    gpus_per_node: int,
    shape: BatchShape,
    efficiency: float,
    log_prob_pass: bool,
) -> _Context:
    cluster = training_cluster(gpu, gpus, gpus_per_node)
    # one prompt per sequence (prefill sharing is generation's, not costed here), in groups of r
    # only past a workflow's batch limit (a job of over a million sequences a step, a what-if)
    r = 1
    while shape.sequences // r > MAX_GLOBAL_BATCH and r < MAX_RESPONSES_PER_PROMPT:
        r *= 2
    prompts = max(1, shape.sequences // r)
    wf = WorkflowSpec.model_validate(
        {
            "algorithm": "grpo",
            "mode": "sync",
            "models": {"actor": model},
            "global_batch": prompts,
            "responses_per_prompt": r,
            "prompt_length": shape.prompt,
            "response_length": shape.cap,
            "response_lengths": shape.lengths.model_dump(),
            "mini_batch": prompts // shape.mini_batches if shape.mini_batches > 1 else None,
            # no KL (no reference); the trainer's own recompute of the old log-probs, on its
            # layout, when the job keeps it
            "reference_pass": False,
            "old_log_prob_pass": log_prob_pass,
        }
    )
    params = CostParams(efficiency=Efficiency(training_mfu={gpu: efficiency}))
    return _Context(wf, build_topology(cluster), params)


def _grid(devices: list[str], replica: int, gpus_per_node: int, task: str) -> _Strategy:
    tp = min(replica, gpus_per_node)
    pp = max(1, replica // tp)
    per = tp * pp
    dp = max(1, len(devices) // per)
    grid = [
        [devices[i * per + j * tp : i * per + (j + 1) * tp] for j in range(pp)] for i in range(dp)
    ]
    return _Strategy(task, tp, pp, dp, grid)


@functools.lru_cache(maxsize=512)
def stage_seconds(
    model: str,
    gpu: str,
    gpus: int,
    shape: BatchShape,
    efficiency: float,
    gpus_per_node: int = 8,
    replica_gpus: int | None = None,
    log_prob_pass: bool = True,
) -> tuple[float, float]:
    """(log-prob pass, training pass) seconds of one step of ``shape`` on ``gpus`` GPUs
    (module doc): what the placement judge gives the same job co-located on them, its actor
    training's old log-prob pass (``WorkflowSpec.old_log_prob_pass``) apart."""
    replica = min(replica_gpus or training_replica(model, gpu, gpus, gpus_per_node), gpus)
    ctx = _context(model, gpu, gpus, gpus_per_node, shape, efficiency, log_prob_pass)
    devices = [d.id for d in ctx.topology.devices]
    task = next(t for t in ctx.workflow.tasks() if t.name == ACTOR_TRAINING)
    strategy = _grid(devices, replica, gpus_per_node, task.name)
    cost = TaskCoster(ctx, task, strategy, None).cost()
    log_prob = cost.get("log_prob_s", 0.0)
    return log_prob, cost["time_s"] - log_prob


class TrainingProfile(BaseModel):
    """The training stage's knobs (module doc)."""

    model_config = _STRICT

    mfu: float | None = mfu_field(
        "share of dense BF16 peak the training and log-prob GEMMs reach (None: the judge's)"
    )
    source: str = Field(default="the judge's efficiency (costmodels.efficiency)")
    log_prob_pass: bool = log_prob_field()

    def efficiency(self, gpu: str, params: ServingParams | None = None) -> float:
        """The efficiency the passes run at: the profile's, else the judge's for ``gpu``."""
        if self.mfu is not None:
            return self.mfu
        return (params or ServingParams()).efficiency.training_compute(get_gpu(gpu))

    def compute_s(
        self,
        model: str,
        gpu: str,
        gpus: int,
        tokens: float,
        shape: BatchShape | None = None,
        gpus_per_node: int = 8,
        replica_gpus: int | None = None,
        params: ServingParams | None = None,
    ) -> float:
        """Seconds of the log-prob and training passes over ``tokens`` tokens on ``gpus`` GPUs, at
        the per-token rate of a step of ``shape`` (default: ``tokens`` in constant sequences of
        :data:`REFERENCE_SEQUENCE`)."""
        if tokens <= 0:
            return 0.0
        shape = shape or BatchShape.of_tokens(tokens)
        log_prob, train = stage_seconds(
            model,
            gpu,
            gpus,
            shape,
            self.efficiency(gpu, params),
            gpus_per_node,
            replica_gpus,
            log_prob_pass=self.log_prob_pass,
        )
        return (log_prob + train) * tokens / shape.tokens

    def fixed_s(
        self,
        model: str,
        gpu: str,
        gpus: int,
        gpus_per_node: int = 8,
        params: ServingParams | None = None,
    ) -> float:
        """Seconds a step spends whatever its tokens: the optimizer step and the weight sync."""
        m, g = get_model(model), get_gpu(gpu)
        eff = (params or ServingParams()).efficiency
        n = total_params(m)
        optimizer = OPTIMIZER_BYTES_PER_PARAM * n / gpus / 1e9 / eff.hbm_gbs(g)
        link = (
            g.link_gb_per_s if gpus <= gpus_per_node else min(g.link_gb_per_s, INTER_NODE_GB_PER_S)
        )
        return optimizer + 2 * n / 1e9 / link


#: veRL's trainer as RollPacker Table 1 measured it: RollPacker's and RollMux's jobs (veRL-based
#: on H800) train at this efficiency
TABLE1_PROFILE = TrainingProfile(
    mfu=FITTED_MFU,
    source=(
        "fitted to RollPacker Table 1 (veRL, Qwen2.5-14B/16k, 32 H800), "
        "costmodels.rollout.table1.fit_mfu"
    ),
)


class TrainingFit(BaseModel):
    """One GPU type's training efficiency fitted to measured RL training steps (``rlplan
    calibrate``, ``train`` rows; :func:`costmodels.calibration.fit_training`): what every
    problem's training and log-prob passes use on that GPU type (``Efficiency.training_mfu``)."""

    model_config = _STRICT

    gpu: str = Field(min_length=1, description="catalog GPU type the steps ran on")
    mfu: float = Field(
        gt=0, le=1, description="share of dense BF16 peak the training passes' GEMMs reached"
    )
    source: str = Field(default="", description="the measurements it was fitted to")
    steps: int = Field(default=0, ge=0, description="training steps the fit used")
    residuals: dict[str, float] = Field(
        default_factory=dict, description="RMS log error of the fit"
    )


def train_seconds(
    model: str,
    gpu: str,
    gpus: int,
    tokens: float,
    params: ServingParams | None = None,
    profile: TrainingProfile | None = None,
    shape: BatchShape | None = None,
    gpus_per_node: int = 8,
) -> float:
    """Seconds of one training step on ``tokens`` tokens on ``gpus`` GPUs (module doc)."""
    p = profile or TrainingProfile()
    return p.compute_s(model, gpu, gpus, tokens, shape, gpus_per_node, params=params) + p.fixed_s(
        model, gpu, gpus, gpus_per_node, params=params
    )
