"""The workload of RollPacker's rollout problem (RollPacker §2.2, §3; issue 15 item 1).

A synchronous GRPO job: every step samples P0 prompts and R0 responses per prompt, generates them
on the rollout GPUs, scores them and trains on them. What makes rollout hard is the lengths: they
are long-tailed *and group-aware*: some prompts always run long (hard problems), whichever
response you draw. :class:`PromptPool` models an epoch's dataset that way:

* prompt p has a fixed difficulty d_p ~ N(0, σ_prompt) + Δ·Bernoulli(p_hard) and a fixed prompt
  length ~ lognormal(prompt_median, prompt_sigma);
* each response it is asked for has length min(max_response, round(exp(ln median + d_p + ε))),
  ε ~ N(0, σ_response), drawn afresh on every attempt (a prompt re-run in a long round gets new
  responses, as RollPacker re-generates it).

The defaults are ``costmodels.generation.traces.TraceParams``'s, calibrated there to the
characterisation of §2.2 (P75 of 755-1.1k tokens, a tail to the length cap). Draws are keyed by
(seed, prompt, attempt), so the same prompt attempted the same time in two simulations gets the
same responses: comparisons between policies are paired.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from costmodels.generation.traces import (
    TraceParams,
    prompt_difficulty,
    prompt_lengths,
    response_lengths,
)

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
_DEFAULT = TraceParams()


class LengthModel(BaseModel):
    """Group-aware response lengths (module doc): the validated input form of the generation
    simulator's ``TraceParams`` (without its step drift), with its defaults."""

    model_config = _STRICT

    median: float = Field(default=_DEFAULT.median, gt=0, description="median response length, tokens")
    sigma_prompt: float = Field(default=_DEFAULT.sigma_prompt, ge=0, description="spread of per-prompt difficulty (log scale)")
    sigma_response: float = Field(default=_DEFAULT.sigma_response, ge=0, description="spread of a prompt's responses (log scale)")
    p_hard: float = Field(default=_DEFAULT.p_hard, ge=0, le=1, description="share of hard prompts")
    hard_shift: float = Field(default=_DEFAULT.hard_shift, ge=0, description="log-length shift of a hard prompt")
    prompt_median: float = Field(default=_DEFAULT.prompt_median, gt=0, description="median prompt length, tokens")
    prompt_sigma: float = Field(default=_DEFAULT.prompt_sigma, ge=0, description="spread of prompt lengths (log scale)")


class RolloutWorkload(BaseModel):
    """One synchronous GRPO job's rollout (issue 15 item 1; reward and training knobs come with
    the reward scheduler and the stream trainer)."""

    model_config = _STRICT

    model: str = Field(description="actor model (catalog name)")
    gpu: str = Field(description="rollout GPU type (catalog name)")
    gpus: int = Field(gt=0, le=4096, description="rollout GPUs")
    gpus_per_node: int = Field(default=8, gt=0, le=64, description="GPUs per server: TP groups stay inside one")
    tp: int = Field(default=1, gt=0, description="rollout tensor parallelism")
    prompts_per_step: int = Field(default=128, gt=0, le=65536, description="P0: prompts trained per step")
    responses_per_prompt: int = Field(default=8, gt=0, le=1024, description="R0: responses per prompt (GRPO group size)")
    max_response: int = Field(default=16384, gt=0, le=1 << 20, description="response length cap, tokens")
    dataset_prompts: int = Field(default=1024, gt=0, le=1 << 20, description="prompts in one epoch")
    lengths: LengthModel = Field(default_factory=LengthModel)


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

    def responses(self, prompt: int, count: int, attempt: int = 0) -> list[int]:
        """``count`` response lengths for ``prompt`` on its ``attempt``-th run (paired draws)."""
        rng = np.random.default_rng([self.seed, 1 + prompt, attempt])
        return [int(v) for v in response_lengths(rng, self._fixed[0][prompt], count, self._params, self.workload.max_response)]
