"""One co-execution group's round-robin meta-iterations replayed on the generation simulator, with
and without RollMux's long-tail migration (§4.3, Fig. 7; measured in §7.3, Fig. 11).

The inter-group scheduler plans on worst-case phase durations; at run time a rollout's length is
drawn from a heavy-tailed distribution (``costmodels.generation.request_traces.synthetic_trace``:
per-prompt
difficulty, a few prompts always long), so a rollout's last responses keep a whole rollout pool
busy while most of its GPUs idle ("skewness bubbles"). This module replays what the intra-group
scheduler does with that: each rollout phase is one run of the continuous-batching engine
(``costmodels.generation.engine``) on the group's rollout GPUs, each training phase a fixed time on
the training pool, in the round-robin order of §4.3.

**Group shape.** The replay takes a group whose jobs share one set of N rollout GPUs (Fig. 11's
pairs) and one training pool; job j runs its rollout as N / tp_j data-parallel engine instances
(tp_j: the smallest TP whose KV cache holds eight max-length responses), its responses dealt
round-robin over them (each DP rank owns a shard, as vLLM's DP ranks do).

**Round-robin (§4.3).** Iteration k, jobs in group order: job j's rollout starts when its previous
training has ended and the pool is free; its training when its rollout has ended and the training
pool is free. Every phase start pays the warm start of §5.1: the job's weights come from host
memory over PCIe (``weights_gb_per_gpu / pcie_gbs``).

**Long-tail migration** (``migrate=True``). When ``threshold`` (80%) of a rollout's responses have
finished, its unfinished responses move to the m instances holding the most of them, with m the
fewest instances whose KV cache holds the remaining responses' current contexts with 50%
headroom — at least 1, at most N/tp_j - 1 (the engine's ``Migrate``: the cheaper of KV transfer
and recomputation, preemptions if the tail outgrows them). The other instances' GPUs are then
free: the next job's rollout starts on them at once, and its shards on the GPUs still running the
tail start when that tail ends (the engine holds those requests until then). Without migration
the next rollout waits for the whole pool. The same length draws feed both runs, so their ratio
of meta-iteration periods is the throughput gain of migration alone.

Training time: ``costmodels.cosched.phases.train_seconds`` (``costmodels.rl_training``: the
placement judge's log-prob and training passes, the optimizer step and the weight sync) on the
sequences the rollout actually produced at their mean length, times ``train_scale``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from costmodels.catalog import get_gpu, get_model
from costmodels.cosched.phases import rollout_tp, train_seconds
from costmodels.decode import Instance, ServingParams
from costmodels.generation.engine import Engine
from costmodels.generation.policy import Action, Migrate, Observation, Release
from costmodels.generation.request_traces import TraceParams, synthetic_trace
from costmodels.generation.requests import Request

PCIE_GBS = 25.0  # host-to-GPU copy of a warm start (PCIe Gen4/5 x16, sustained)


@dataclass(frozen=True)
class ReplayJob:
    """One job of the replayed group: its rollout batch and length distribution."""

    name: str
    model: str
    prompts: int = 64
    responses: int = 4
    max_len: int = 8192
    median: float | None = (
        None  # of the response length; default the trace generator's (420 tokens)
    )
    train_scale: float = 1.0

    def requests(self, iteration: int, seed: int) -> list[Request]:
        params = TraceParams() if self.median is None else TraceParams(median=self.median)
        return synthetic_trace(
            self.prompts, self.responses, self.max_len, seed=seed, step=iteration, params=params
        )


@dataclass
class PhaseRun:
    """One rollout phase on the engine (seconds from the phase's start)."""

    end: float
    release: float  # when every GPU but the tail's is free (= end without migration)
    tail_instances: tuple[int, ...]
    preemptions: int
    migrated: int
    tokens: int


@dataclass
class TailMigration:
    """The engine policy of one rollout phase: at ``threshold`` of responses done, consolidate
    the rest onto the fewest instances that hold them (module doc) and free the others."""

    threshold: float
    capacity_tokens: int
    tick: float = 1.0
    when: float | None = None
    tail: tuple[int, ...] = ()
    moved: int = 0

    def on_start(self, obs: Observation) -> list[Action]:
        return []

    def on_tick(self, obs: Observation) -> list[Action]:
        if self.when is not None:
            return []
        reqs = obs.requests.values()
        done = sum(r.state == "done" for r in reqs)
        if done < self.threshold * len(obs.requests):
            return []
        left = [r for r in reqs if r.state not in ("done", "aborted")]
        active = [v for v in obs.instances if v.active]
        tokens = sum(r.prompt + r.generated for r in left)
        m = max(1, math.ceil(1.5 * tokens / self.capacity_tokens))
        if m >= len(active):
            return []  # nothing to free; try again at the next tick
        self.when = obs.time
        count = {v.index: sum(1 for r in left if r.instance == v.index) for v in active}
        keep = sorted(count, key=lambda i: (-count[i], i))[:m]
        self.tail = tuple(sorted(keep))
        actions: list[Action] = []
        load = {i: count[i] for i in keep}
        for r in sorted(left, key=lambda r: r.id):
            if r.instance in load:
                continue
            dst = min(load, key=lambda i: (load[i], i))
            load[dst] += 1
            actions.append(Migrate(r.id, dst))
        self.moved = len(actions)
        actions += [Release(v.index) for v in active if v.index not in load]
        return actions


def run_phase(
    requests: list[Request],
    inst: Instance,
    instances: int,
    ready: list[float],
    migrate: bool,
    threshold: float,
    tick: float,
) -> PhaseRun:
    """One rollout phase: ``ready[i]`` is when instance i's GPUs come free (from the phase
    start)."""
    assignment = [i % instances for i in range(len(requests))]
    reqs = [
        Request(r.id, r.prompt, r.output, r.group, ready[a], 0)
        for r, a in zip(requests, assignment, strict=True)
    ]
    engine = Engine([inst] * instances, reqs, assignment)
    policy = TailMigration(threshold, inst.kv_capacity_tokens(), tick)
    res = engine.run([policy] if migrate else None)
    end = res.makespan_s
    release = policy.when if policy.when is not None else end
    return PhaseRun(end, release, policy.tail, res.preemptions, policy.moved, res.tokens)


@dataclass
class ReplayResult:
    period_s: float
    phases: list[dict[str, Any]] = field(default_factory=list)


def replay_group(
    jobs: list[ReplayJob],
    *,
    rollout_gpu: str = "H20",
    rollout_gpus: int = 8,
    train_gpu: str = "H800",
    train_gpus: int = 8,
    iterations: int = 4,
    seed: int = 0,
    migrate: bool = True,
    threshold: float = 0.8,
    tick: float = 1.0,
    params: ServingParams | None = None,
) -> ReplayResult:
    """Round-robin meta-iterations of ``jobs`` (module doc); the period is the mean time per
    meta-iteration from the first rollout's start to the last training's end."""
    if not jobs or iterations <= 0 or not 0 < threshold < 1:
        raise ValueError("need jobs, iterations > 0 and 0 < threshold < 1")
    params = params or ServingParams()
    g_r = get_gpu(rollout_gpu)
    setup = {}
    for j in jobs:
        tp = rollout_tp(j.model, rollout_gpu, rollout_gpus, j.max_len, params)
        inst = Instance(get_model(j.model), g_r, tp, params)
        setup[j.name] = (tp, inst, rollout_gpus // tp, inst.weights_gb_per_gpu() / PCIE_GBS)
    gpu_free = [0.0] * rollout_gpus
    train_free = 0.0
    train_end = {j.name: 0.0 for j in jobs}
    phases: list[dict[str, Any]] = []
    for k in range(iterations):
        for jn, j in enumerate(jobs):
            tp, inst, n, warm = setup[j.name]
            free_at = [max(gpu_free[i * tp : (i + 1) * tp]) for i in range(n)]
            # start once the job's training is done and the pool is free: with migration, the
            # GPUs a running tail does not hold (its shards there wait for the tail); else all
            start = max(train_end[j.name], min(free_at) if migrate else max(free_at))
            ready = [max(0.0, f - start) + warm for f in free_at]
            requests = j.requests(k, seed * 1000 + jn)
            run = run_phase(requests, inst, n, ready, migrate, threshold, tick)
            for i in range(n):
                held = (
                    run.end
                    if i in run.tail_instances or not migrate
                    else max(run.release, ready[i])
                )
                gpu_free[i * tp : (i + 1) * tp] = [start + held] * tp
            roll_end = start + run.end
            t0 = max(roll_end, train_free)
            count = max(1, len(requests))
            train_s = j.train_scale * train_seconds(
                j.model,
                train_gpu,
                train_gpus,
                count,
                sum(r.prompt for r in requests) / count,
                sum(r.output for r in requests) / count,
                params,
            )
            train_end[j.name] = train_free = t0 + train_s
            phases.append(
                {
                    "iteration": k,
                    "job": j.name,
                    "rollout_start": start,
                    "rollout_release": start + run.release,
                    "rollout_end": roll_end,
                    "train_start": t0,
                    "train_end": t0 + train_s,
                    "preemptions": run.preemptions,
                    "migrated": run.migrated,
                    "tail_instances": len(run.tail_instances),
                    "instances": n,
                }
            )
    first = min(p["rollout_start"] for p in phases)
    return ReplayResult((max(p["train_end"] for p in phases) - first) / iterations, phases)


def migration_gain(jobs: list[ReplayJob], **kw: Any) -> dict[str, Any]:
    """Throughput gain of long-tail migration: the period without it over the period with it, on
    the same length draws."""
    off = replay_group(jobs, migrate=False, **kw)
    on = replay_group(jobs, migrate=True, **kw)
    return {
        "period_without_s": off.period_s,
        "period_with_s": on.period_s,
        "gain": off.period_s / on.period_s,
        "migrated": sum(p["migrated"] for p in on.phases),
        "preemptions_with": sum(p["preemptions"] for p in on.phases),
        "preemptions_without": sum(p["preemptions"] for p in off.phases),
    }
