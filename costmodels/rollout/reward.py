"""The reward stage (RollPacker §4.3): when each kept response is scored, synchronously after
rollout (veRL) or asynchronously as it completes (RollPacker's reward scheduler), with a fixed or
an adaptive sandbox timeout.

Each prompt is scored one way (``PromptPool.reward_kind``):

* **rule** — ``seconds`` of CPU per response on ``workers`` FCFS workers (asynchronous, the
  reward scheduler's pool) or ``sync_workers`` (synchronous: veRL's reward manager scores the
  batch in the trainer's driver process, one response after another);
* **sandbox** — run the response's code. Prompt p's reference solution runs in a_p seconds
  (lognormal); a response runs a_p · exp(ε), ε ~ N(0, σ), or never finishes (probability
  ``p_hang``). It is cut at the timeout T_p, and then scores zero:

      fixed:     T_p = T_max
      adaptive:  T_p = min(max(T_min, λ · T_anchor,p), T_max)       (§4.3, λ = 1.5 in the paper)

  T_anchor,p is the anchor of the prompt's test cases. The paper tracks the largest run time of
  a correct response; RollPacker's code uses its reference solution's time (with λ = 2). We use
  the reference time a_p (known before the step, so the timeout is set when the run starts), and
  λ is a plan knob. For λ ≥ 1 no response that finishes within T_anchor is ever cut: T_p ≥ λ a_p
  ≥ a_p unless T_p = T_max, and a_p is capped at T_max. Responses cut while they would have
  finished are counted (``cut_finishing``): the signal an aggressive λ loses.
* **judge** — one forward pass of the judge over prompt + response, 2 N_judge FLOPs per token.
  Synchronous (veRL): after rollout the judge runs on every rollout GPU with its weights loaded
  from host memory once, and (``sync_padded``) scores every response padded to the longest prompt
  plus ``max_response`` tokens: veRL's reward model worker runs a padded batch
  (``use_remove_padding`` defaults to False in the reward model config of verl up to 0.5) and
  its rollout pads responses to ``response_length``. That
  padding, not the responses' own tokens, is what makes the judge 7% of a veRL step in RollPacker
  Table 1 (rlplan: 6.3%, not fitted). The forward runs at the flat judge's compute fraction (50% of
  dense peak: an HF forward under FSDP, for which no measurement is on record). Asynchronous
  (RollPacker): one judge per server, co-located with rollout
  under MPS (``sm_share`` of one GPU's sustained FLOP/s), most of its weights in host memory
  streamed over PCIe for every batch (``offload_fraction`` of them, at ``pcie_gb_per_s``): a batch
  of up to ``batch_tokens`` tokens costs max(compute, stream) with the layer-wise pipeline,
  compute + stream without. Responses go to the judges round-robin in completion order.

Rollout is not slowed by asynchronous scoring (CPU sandboxes; MPS, which §6.5 measures as close to
interference-free); that is the paper's claim and our simplification.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import ServingParams
from costmodels.rollout.workload import PromptPool
from costmodels.transformer import total_params

GB = 1e9
BYTES_BF16 = 2


def adaptive_timeout(anchor_s: float, lam: float, t_min: float, t_max: float) -> float:
    """T = min(max(T_min, λ T_anchor), T_max) (RollPacker §4.3)."""
    return min(max(t_min, lam * anchor_s), t_max)


@dataclass
class RewardTimes:
    """When each response's score is ready, and what the sandbox cut."""

    finish: dict[tuple[int, int], float]  # (prompt, index among its kept responses) -> seconds
    end_s: float
    timeouts: int = 0
    cut_finishing: int = 0
    sandbox_busy_s: float = 0.0
    by_kind: dict[str, float] = field(default_factory=dict)  # last finish per kind

    def group_ready(self) -> dict[int, float]:
        """When each prompt's whole group is scored."""
        out: dict[int, float] = {}
        for (p, _), t in self.finish.items():
            out[p] = max(out.get(p, 0.0), t)
        return out


def _serve(free: list[float], at: float, service: float) -> float:
    """One job submitted at ``at`` on the first worker free (``free``: a heap of the workers'
    free times, updated); when it is done."""
    start = max(at, heapq.heappop(free))
    heapq.heappush(free, start + service)
    return start + service


def _fcfs(
    jobs: list[tuple[float, float, tuple[int, int]]], workers: int
) -> dict[tuple[int, int], float]:
    """First come, first served on ``workers`` identical workers: (submit s, service s, key)."""
    free = [0.0] * workers
    # submission order, not shortest first
    return {
        key: _serve(free, submit, service)
        for submit, service, key in sorted(jobs, key=lambda j: (j[0], j[2]))
    }


def sandbox_limit(sb: Any, ref: float, adaptive: bool, lam: float) -> float:
    """The sandbox timeout T_p of a prompt whose reference runs ``ref`` s (module doc)."""
    return (
        adaptive_timeout(ref, lam, sb.min_timeout_s, sb.max_timeout_s)
        if adaptive
        else sb.max_timeout_s
    )


def judge_rates(wl: Any) -> tuple[float, float]:
    """(tokens/s of one co-located judge at its MPS share, s to stream its offloaded weights
    over PCIe once): the asynchronous judge's two costs (module doc)."""
    js = wl.reward.judge_worker
    judge = get_model(js.model)
    flops = ServingParams().efficiency.flops(get_gpu(wl.gpu))
    rate = js.sm_share * flops / (2.0 * total_params(judge))
    weights_gb = BYTES_BF16 * total_params(judge) / GB
    return rate, js.offload_fraction * weights_gb / js.pcie_gb_per_s


def sandbox_times(
    pool: PromptPool, prompt: int, count: int, attempt: int
) -> tuple[float, list[float | None]]:
    """(a_p, run time of each response or None for one that never finishes), paired per attempt."""
    spec = pool.workload.reward.sandbox_worker
    ref = np.random.default_rng([pool.seed, 0x5A4D, prompt]).lognormal(
        math.log(spec.reference_median_s), spec.reference_sigma
    )
    ref = min(float(ref), spec.max_timeout_s)
    rng = np.random.default_rng([pool.seed, 0x5A4E, prompt, attempt])
    hang = rng.random(count) < spec.p_hang
    run = ref * np.exp(rng.normal(0.0, spec.response_sigma, count))
    return ref, [None if h else float(t) for h, t in zip(hang, run, strict=True)]


def score(
    pool: PromptPool,
    responses: list[tuple[int, float, int]],
    *,
    rollout_end: float,
    gpus: int,
    asynchronous: bool,
    adaptive: bool,
    lam: float,
    attempts: dict[int, int] | None = None,
) -> RewardTimes:
    """Score a round's kept responses (prompt, completion s, tokens); module doc."""
    wl = pool.workload
    spec = wl.reward
    attempts = attempts or {}
    by_prompt: dict[int, list[tuple[float, int]]] = {}
    for p, t, tokens in responses:
        by_prompt.setdefault(p, []).append((t, tokens))
    rule_jobs, sandbox_jobs, judge_items = [], [], []
    timeouts = cut = 0
    busy = 0.0
    for p, items in by_prompt.items():
        kind = pool.reward_kind(p)
        for j, (t, tokens) in enumerate(items):
            submit = t if asynchronous else rollout_end
            key = (p, j)
            if kind == "rule":
                rule_jobs.append((submit, spec.rule_worker.seconds, key))
            elif kind == "judge":
                judge_items.append((submit, pool.prompt_length(p) + tokens, key))
        if kind == "sandbox":
            sb = spec.sandbox_worker
            ref, runs = sandbox_times(pool, p, len(items), attempts.get(p, 0))
            limit = sandbox_limit(sb, ref, adaptive, lam)
            for j, ((t, _), run) in enumerate(zip(items, runs, strict=True)):
                if run is None or run > limit:
                    timeouts += 1
                    cut += run is not None
                service = limit if run is None else min(run, limit)
                busy += service
                sandbox_jobs.append((t if asynchronous else rollout_end, service, (p, j)))
    finish: dict[tuple[int, int], float] = {}
    by_kind: dict[str, float] = {}
    rule_workers = spec.rule_worker.workers if asynchronous else spec.rule_worker.sync_workers
    for kind, got in (
        ("rule", _fcfs(rule_jobs, rule_workers)),
        ("sandbox", _fcfs(sandbox_jobs, spec.sandbox_worker.workers)),
        ("judge", _judge(pool, judge_items, gpus, asynchronous, rollout_end)),
    ):
        finish.update(got)
        if got:
            by_kind[kind] = max(got.values())
    end = max(finish.values(), default=rollout_end)
    return RewardTimes(finish, max(end, rollout_end), timeouts, cut, busy, by_kind)


def _judge(
    pool: PromptPool,
    items: list[tuple[float, int, tuple[int, int]]],
    gpus: int,
    asynchronous: bool,
    rollout_end: float,
) -> dict[tuple[int, int], float]:
    if not items:
        return {}
    wl = pool.workload
    js = wl.reward.judge_worker
    judge, gpu = get_model(js.model), get_gpu(wl.gpu)
    flops = ServingParams().efficiency.flops(gpu)
    per_token = 2.0 * total_params(judge)
    weights_gb = BYTES_BF16 * total_params(judge) / GB
    if not asynchronous:  # after rollout, on every GPU, weights loaded once
        load = weights_gb / js.pcie_gb_per_s
        padded = pool.padded_prompt_length + wl.max_response
        tokens = len(items) * padded if js.sync_padded else sum(tok for _, tok, _ in items)
        done = rollout_end + load + tokens * per_token / (gpus * flops)
        return {key: done for _, _, key in items}
    servers = max(1, gpus // wl.gpus_per_node)
    rate, stream = judge_rates(wl)
    queues: list[list[tuple[float, int, tuple[int, int]]]] = [[] for _ in range(servers)]
    for i, item in enumerate(sorted(items)):
        queues[i % servers].append(item)
    out = {}
    for q in queues:
        now, k = 0.0, 0
        while k < len(q):
            now = max(now, q[k][0])
            batch, tokens = [], 0
            while (
                k < len(q) and q[k][0] <= now and (not batch or tokens + q[k][1] <= js.batch_tokens)
            ):
                batch.append(q[k])
                tokens += q[k][1]
                k += 1
            compute = tokens / rate
            now += max(compute, stream) if js.pipelined else compute + stream
            for _, _, key in batch:
                out[key] = now
    return out


@dataclass(frozen=True)
class InlineScoring:
    """A short round scored while it runs (asynchronous reward in the artifact's race,
    ``costmodels.rollout.rounds``): the timeout rule, and how many responses each prompt
    launched (the sandbox draws are keyed on it, so a policy's estimate and the exact replay
    draw the same run times)."""

    adaptive: bool
    lam: float
    launched: int


class InlineScorer:
    """Score each response the moment it is submitted, in nondecreasing submission time, as
    RollPacker's artifact does: its rollout scheduler (``DynamicSamplingScheduler.report_response``
    in ``roll/distributed/scheduler/generate_scheduler.py`` of the fork) hands every finished
    response to a reward worker at once, and a prompt counts as done when R0 of its responses are
    *scored*.

    ``submit(prompt, at, tokens)`` returns when the score is ready:

    * rule and sandbox: first come, first served on the asynchronous worker pools (what
      :func:`score` computes, online); a sandbox response is the j-th of its prompt to finish and
      runs ``sandbox_times``' j-th draw over ``launched`` responses, cut at the prompt's timeout;
    * judge: the co-located judges (one per server) take responses round-robin; a response that
      finds its judge idle starts a batch and pays the weight stream (max(compute, stream) with
      the layer-wise pipeline, the sum without); one that queues joins the backlog and pays its
      compute plus its token share of one full batch's stream (``batch_tokens``). That is
      :func:`score`'s batching made online: under load the batches are full, idle the batch is
      the one response.
    """

    def __init__(
        self, pool: PromptPool, gpus: int, scoring: InlineScoring, attempts: dict[int, int]
    ) -> None:
        wl = pool.workload
        self.pool, self.scoring, self.attempts = pool, scoring, attempts
        self.spec = wl.reward
        self.rule_free = [0.0] * self.spec.rule_worker.workers
        self.sandbox_free = [0.0] * self.spec.sandbox_worker.workers
        self.judges = [0.0] * max(1, gpus // wl.gpus_per_node)
        self.next_judge = 0
        self.seen: dict[int, int] = {}
        self.draws: dict[int, tuple[float, list[float | None]]] = {}
        self.timeouts = self.cut_finishing = 0
        self.sandbox_busy_s = 0.0
        if self.spec.judge > 0:
            self.judge_rate, self.judge_stream = judge_rates(wl)

    def submit(self, prompt: int, at: float, tokens: int) -> float:
        j = self.seen.get(prompt, 0)
        self.seen[prompt] = j + 1
        kind = self.pool.reward_kind(prompt)
        if kind == "rule":
            return _serve(self.rule_free, at, self.spec.rule_worker.seconds)
        if kind == "sandbox":
            sb = self.spec.sandbox_worker
            if prompt not in self.draws:
                self.draws[prompt] = sandbox_times(
                    self.pool, prompt, self.scoring.launched, self.attempts.get(prompt, 0)
                )
            ref, runs = self.draws[prompt]
            limit = sandbox_limit(sb, ref, self.scoring.adaptive, self.scoring.lam)
            run = runs[j]
            if run is None or run > limit:
                self.timeouts += 1
                self.cut_finishing += run is not None
            service = limit if run is None else min(run, limit)
            self.sandbox_busy_s += service
            return _serve(self.sandbox_free, at, service)
        js = self.spec.judge_worker
        q = self.next_judge
        self.next_judge = (q + 1) % len(self.judges)
        work = (self.pool.prompt_length(prompt) + tokens) / self.judge_rate
        if self.judges[q] <= at:  # an idle judge: a batch of its own
            service = max(work, self.judge_stream) if js.pipelined else work + self.judge_stream
            self.judges[q] = at + service
        else:  # the backlog: full batches, the stream shared by their tokens
            share = self.judge_stream * (self.pool.prompt_length(prompt) + tokens)
            share /= js.batch_tokens
            self.judges[q] += max(work, share) if js.pipelined else work + share
        return self.judges[q]
