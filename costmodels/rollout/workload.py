"""The workload of RollPacker's rollout problem (RollPacker §2.2, §3).

A synchronous GRPO job: every step samples P0 prompts and R0 responses per prompt, generates them
on the rollout GPUs, scores them and trains on them. What makes rollout hard is the lengths: they
are long-tailed *and group-aware*: some prompts always run long (hard problems), whichever
response you draw. :class:`PromptPool` models an epoch's dataset that way:

* prompt p has a fixed difficulty d_p ~ N(0, σ_prompt) + Δ·Bernoulli(p_hard) and a fixed prompt
  length ~ lognormal(prompt_median, prompt_sigma);
* each response it is asked for has length min(max_response, round(exp(ln median + d_p + ε))),
  ε ~ N(0, σ_response), drawn afresh on every attempt (a prompt re-run in a long round gets new
  responses, as RollPacker re-generates it).

The defaults are ``costmodels.generation.request_traces.TraceParams``'s, calibrated there to the
characterisation of §2.2 (P75 of 755-1.1k tokens, a tail to the length cap). Draws are keyed by
(seed, prompt, attempt), so the same prompt attempted the same time in two simulations gets the
same responses: comparisons between policies are paired.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from costmodels.decode import ServingParams
from costmodels.efficiency import Efficiency
from costmodels.generation.request_traces import (
    TraceParams,
    prompt_difficulty,
    prompt_lengths,
    response_lengths,
)
from costmodels.profiles import HardwareProfile
from costmodels.response_lengths import ResponseLengths
from costmodels.rl_training import BatchShape, TrainingProfile, log_prob_field, mfu_field

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
#: tokens per bin of the epoch's response histogram (:meth:`PromptPool.batch_shape`)
SHAPE_BIN = 64
_DEFAULT = TraceParams()


class LengthModel(BaseModel):
    """Group-aware response lengths (module doc): the validated input form of the generation
    simulator's ``TraceParams`` (without its step drift), with its defaults."""

    model_config = _STRICT

    median: float = Field(
        default=_DEFAULT.median, gt=0, description="median response length, tokens"
    )
    sigma_prompt: float = Field(
        default=_DEFAULT.sigma_prompt,
        ge=0,
        description="spread of per-prompt difficulty (log scale)",
    )
    sigma_response: float = Field(
        default=_DEFAULT.sigma_response,
        ge=0,
        description="spread of a prompt's responses (log scale)",
    )
    p_hard: float = Field(default=_DEFAULT.p_hard, ge=0, le=1, description="share of hard prompts")
    hard_shift: float = Field(
        default=_DEFAULT.hard_shift, ge=0, description="log-length shift of a hard prompt"
    )
    prompt_median: float = Field(
        default=_DEFAULT.prompt_median, gt=0, description="median prompt length, tokens"
    )
    prompt_sigma: float = Field(
        default=_DEFAULT.prompt_sigma, ge=0, description="spread of prompt lengths (log scale)"
    )


class RuleReward(BaseModel):
    """Rule-based scoring (math answers): a short CPU task per response."""

    model_config = _STRICT

    seconds: float = Field(
        default=0.014,
        ge=0,
        description=(
            "CPU seconds to score one response (fitted to RollPacker Table 1: math reward 5% of a "
            "veRL step)"
        ),
    )
    workers: int = Field(
        default=64, gt=0, description="concurrent scoring workers (asynchronous reward)"
    )
    sync_workers: int = Field(
        default=1,
        gt=0,
        description=(
            "scorers of a synchronous reward stage (veRL's reward manager: the driver process)"
        ),
    )


class SandboxReward(BaseModel):
    """Code execution in a sandbox (RollPacker §4.3, Fig. 7a). Each prompt has a reference
    solution that runs in ``reference_median_s`` x lognormal(0, ``reference_sigma``) seconds; a
    response runs near its prompt's reference time (x lognormal(0, ``response_sigma``)), except a
    share ``p_hang`` that never finishes (loops, deadlocks) and runs until the timeout. Defaults
    make ~5% of responses hit the 30 s timeout, as the paper measures."""

    model_config = _STRICT

    workers: int = Field(
        default=128,
        gt=0,
        description=(
            "concurrent sandboxes (fitted to RollPacker Table 1: code reward 13% of a veRL step)"
        ),
    )
    reference_median_s: float = Field(
        default=1.0, gt=0, description="median run time of a prompt's reference solution, s"
    )
    reference_sigma: float = Field(
        default=0.8, ge=0, description="spread of reference run times across prompts (log scale)"
    )
    response_sigma: float = Field(
        default=0.15,
        ge=0,
        description="spread of a response's run time around its reference (log scale)",
    )
    max_cut_share: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="most of the finishing responses an adaptive timeout may cut (expected share)",
    )
    p_hang: float = Field(
        default=0.05, ge=0, le=1, description="share of responses that never finish"
    )
    max_timeout_s: float = Field(
        default=30.0, gt=0, description="T_max: the fixed per-response timeout"
    )
    min_timeout_s: float = Field(default=2.0, gt=0, description="T_min of the adaptive timeout")


class JudgeReward(BaseModel):
    """LLM-as-a-judge (RollPacker §4.3): a ``model`` scoring each response with one forward pass
    over prompt + response. Co-located (asynchronous reward) one judge per server shares a GPU
    with rollout under MPS, ``sm_share`` of its compute, with ``offload_fraction`` of its weights
    in host memory streamed over PCIe for every batch (layer-wise pipeline)."""

    model_config = _STRICT

    model: str = Field(default="Qwen2.5-7B", description="judge model (catalog name)")
    sm_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="share of a GPU's compute the co-located judge gets (MPS)",
    )
    offload_fraction: float = Field(
        default=0.5, ge=0, le=1, description="share of the judge's weights offloaded to host memory"
    )
    pcie_gb_per_s: float = Field(
        default=25.0, gt=0, description="host-to-GPU bandwidth one judge streams weights at, GB/s"
    )
    batch_tokens: int = Field(
        default=65536, gt=0, description="most tokens one judge forward pass takes"
    )
    pipelined: bool = Field(
        default=True, description="stream layers while computing (else stream, then compute)"
    )
    sync_padded: bool = Field(
        default=True,
        description=(
            "a synchronous judge scores every response padded to the longest prompt + "
            "max_response tokens (veRL's reward "
            "model worker: use_remove_padding defaults to False, and rollout pads responses to "
            "response_length)"
        ),
    )


class RewardSpec(BaseModel):
    """What scores the responses: a mix of reward kinds over the prompts (RollPacker §6: a uniform
    mix of math, code and judged QA), each prompt of one kind."""

    model_config = _STRICT

    rule: float = Field(default=1 / 3, ge=0, description="share of prompts scored by rules")
    sandbox: float = Field(
        default=1 / 3, ge=0, description="share of prompts scored by running code"
    )
    judge: float = Field(default=1 / 3, ge=0, description="share of prompts scored by an LLM judge")
    rule_worker: RuleReward = Field(default_factory=RuleReward)
    sandbox_worker: SandboxReward = Field(default_factory=SandboxReward)
    judge_worker: JudgeReward = Field(default_factory=JudgeReward)

    @model_validator(mode="after")
    def _some_kind(self) -> RewardSpec:
        if self.rule + self.sandbox + self.judge <= 0:
            raise ValueError("the reward shares rule + sandbox + judge must add up to more than 0")
        return self

    def shares(self) -> dict[str, float]:
        total = self.rule + self.sandbox + self.judge
        return {
            "rule": self.rule / total,
            "sandbox": self.sandbox / total,
            "judge": self.judge / total,
        }


class TrainingSpec(BaseModel):
    """The training stage on the same GPUs (co-located, as veRL and RollPacker run it).

    Its cost is the project's one training model (``costmodels.rl_training``): the placement
    judge's log-prob and training passes for ``replica_gpus``-GPU replicas (TP inside a node, PP
    over nodes) on every rollout GPU, at ``mfu`` of the GPUs' dense peak (None: the judge's
    efficiency for the GPU type), per token at the epoch's own lengths; then the optimizer step and
    the weight sync to the rollout engine (``update_s``; by default what that model gives for the
    job). The stream trainer can only train on a multiple of ``replica_gpus``. The job makes one
    optimizer update a step (the stream trainer defers it to the end of rollout, RollPacker
    §4.4), so ``log_prob_pass: false`` may drop the old log-prob pass, as RollPacker's artifact
    does (``costmodels.rl_training.log_prob_field``)."""

    model_config = _STRICT

    replica_gpus: int = Field(
        default=2, gt=0, description="GPUs of one training replica (TP x PP x CP)"
    )
    mfu: float | None = mfu_field(
        "share of dense BF16 peak the training and log-prob passes reach (None: the judge's "
        "efficiency for the GPU type; RollPacker's presets: the Table 1 fit)"
    )
    update_s: float | None = Field(
        default=None,
        ge=0,
        le=1e6,
        description=(
            "optimizer step and weight sync after the last gradient, s (default: the training "
            "model's)"
        ),
    )

    log_prob_pass: bool = log_prob_field()

    def profile(self) -> TrainingProfile:
        return TrainingProfile(mfu=self.mfu, log_prob_pass=self.log_prob_pass)


class RolloutWorkload(BaseModel):
    """One synchronous GRPO job on co-located GPUs: its rollout (RollPacker §2.2, §3), how its
    responses are scored and how it trains."""

    model_config = _STRICT

    model: str = Field(description="actor model (catalog name)")
    gpu: str = Field(description="rollout GPU type (catalog name)")
    gpus: int = Field(gt=0, le=4096, description="rollout GPUs")
    gpus_per_node: int = Field(
        default=8, gt=0, le=64, description="GPUs per server: TP groups stay inside one"
    )
    tp: int = Field(default=1, gt=0, description="rollout tensor parallelism")
    prompts_per_step: int = Field(
        default=128, gt=0, le=65536, description="P0: prompts trained per step"
    )
    responses_per_prompt: int = Field(
        default=8, gt=0, le=1024, description="R0: responses per prompt (GRPO group size)"
    )
    max_response: int = Field(
        default=16384, gt=0, le=1 << 20, description="response length cap, tokens"
    )
    dataset_prompts: int = Field(default=1024, gt=0, le=1 << 20, description="prompts in one epoch")
    lengths: LengthModel = Field(default_factory=LengthModel)
    reward: RewardSpec = Field(default_factory=RewardSpec)
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    engine: Literal["cuda-graph", "eager"] = Field(
        default="cuda-graph",
        description=(
            "the rollout engine's serving mode (costmodels/data/profiles/engines.yaml): "
            "cuda-graph, vLLM's default and verl's since 0.6 "
            "and ROLL's; eager, verl's up to 0.5 (the papers' veRL baselines)"
        ),
    )

    kernels: Literal["aic-vllm", "flat"] = Field(
        default="aic-vllm",
        description=(
            "decode and prefill kernels: aic-vllm, the shipped profiles fitted to AIConfigurator; "
            "flat, rlplan 0.x's fixed fractions"
        ),
    )
    profiles: dict[str, HardwareProfile] = Field(
        default_factory=dict,
        description=(
            "fitted kernel profiles per GPU type (rlplan calibrate; --profile FILE), before the "
            "shipped ones"
        ),
    )

    @field_validator("dataset_prompts")
    @classmethod
    def _one_step_of_prompts(cls, v: int, info: ValidationInfo) -> int:
        # an epoch of fewer prompts than one step trains nothing (RollPacker §3: a step takes
        # P0 prompts from the dataset): a spec error, not a plan the solvers fail to find
        p0 = info.data.get("prompts_per_step")
        if p0 is not None and v < p0:
            raise ValueError(f"must hold at least one step's prompts_per_step ({p0})")
        return v

    def __hash__(self) -> int:  # the frozen model's own hash cannot take the profiles' dicts
        return hash(self.model_dump_json())

    def serving(self) -> ServingParams:
        """The rollout engine's serving parameters: the judge's kernels (or ``profiles``) with this
        engine's overheads; a prompt's responses share its prefill (its requests are one group:
        vLLM's prefix caching under ``n`` samples per prompt, as verl and ROLL generate, and the
        placement judge's ``CostParams.share_prompt_prefill``)."""
        from costmodels.profiles import engine_profiles

        return ServingParams(
            efficiency=Efficiency(
                kernels=self.kernels,
                profiles=self.profiles,
                **engine_profiles()[self.engine].efficiency_update(),
            ),
            share_prompt_prefill=True,
        )

    def update_s(self) -> float:
        """Seconds after the last gradient: the optimizer step and the weight sync."""
        t = self.training
        if t.update_s is not None:
            return t.update_s
        return t.profile().fixed_s(self.model, self.gpu, self.gpus, self.gpus_per_node)


@dataclass
class PromptPool:
    """An epoch's prompts with fixed difficulty and prompt length (module doc)."""

    workload: RolloutWorkload
    seed: int = 0

    @cached_property
    def _params(self) -> TraceParams:
        return TraceParams(**self.workload.lengths.model_dump())

    @cached_property
    def _fixed(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.workload.dataset_prompts
        rng = np.random.default_rng([self.seed, 0x5EED])
        difficulty = prompt_difficulty(rng, n, self._params)
        return difficulty, prompt_lengths(rng, n, self._params)

    @property
    def size(self) -> int:
        return self.workload.dataset_prompts

    def difficulty(self, prompt: int) -> float:
        return float(self._fixed[0][prompt])

    def prompt_length(self, prompt: int) -> int:
        return int(self._fixed[1][prompt])

    @cached_property
    def padded_prompt_length(self) -> int:
        """The prompt width a framework pads a batch to: the longest prompt of the epoch (veRL's
        ``data.max_prompt_length``, which must admit every prompt it keeps)."""
        return int(self._fixed[1].max())

    @cached_property
    def _kinds(self) -> np.ndarray:
        shares = self.workload.reward.shares()
        u = np.random.default_rng([self.seed, 0x4B1D]).random(self.size)
        edges = np.cumsum([shares["rule"], shares["sandbox"]])
        return np.searchsorted(edges, u, side="right")  # 0 rule, 1 sandbox, 2 judge

    def reward_kind(self, prompt: int) -> str:
        """How the prompt's responses are scored: ``rule``, ``sandbox`` or ``judge`` (fixed per
        prompt)."""
        return ("rule", "sandbox", "judge")[int(self._kinds[prompt])]

    @property
    def batch_shape(self) -> BatchShape:
        """A step of this epoch as the training model reads it (``costmodels.rl_training``): P0 x
        R0 sequences, the epoch's mean prompt, and its first attempts' responses as a histogram of
        :data:`SHAPE_BIN`-token bins (``benchmarks/one_job.py`` gives the placement judge the
        same). A function of the workload and the seed alone, so memoised on them: a search
        judges thousands of plans of one job."""
        return _batch_shape(self.workload, self.seed)

    def responses(self, prompt: int, count: int, attempt: int = 0) -> list[int]:
        """``count`` response lengths for ``prompt`` on its ``attempt``-th run (paired draws)."""
        rng = np.random.default_rng([self.seed, 1 + prompt, attempt])
        return [
            int(v)
            for v in response_lengths(
                rng, self._fixed[0][prompt], count, self._params, self.workload.max_response
            )
        ]


@functools.lru_cache(maxsize=64)
def _batch_shape(workload: RolloutWorkload, seed: int) -> BatchShape:
    """:attr:`PromptPool.batch_shape` of a fresh pool of ``workload`` and ``seed``."""
    pool = PromptPool(workload, seed)
    r = workload.responses_per_prompt
    responses = np.array(
        [x for p in range(pool.size) for x in pool.responses(p, r, 0)], dtype=float
    )
    binned = np.minimum(workload.max_response, SHAPE_BIN * np.ceil(responses / SHAPE_BIN))
    values, counts = np.unique(binned, return_counts=True)
    lengths = ResponseLengths.model_validate(
        {
            "distribution": "histogram",
            "bins": [[float(v), float(c)] for v, c in zip(values, counts, strict=True)],
            "source": f"the rollout job's prompt pool (seed {seed})",
        }
    )
    return BatchShape(
        workload.prompts_per_step * r,
        max(1, round(float(pool._fixed[1].mean()))),
        lengths,
        workload.max_response,
    )
