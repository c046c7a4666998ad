"""The stream trainer (RollPacker §4.4, Algorithm 1): scale rollout down mid-round and train on
what has completed, on the freed GPUs, while the rest of the rollout runs.

**Scaling down (Algorithm 1 lines 13-21).** Let |R| be the responses the round must finish and
|R_comp| those finished. At each milestone m of ``ScaleRule.milestones`` (the paper's
0.20, 0.25, ..., 0.50), the first tick with |R_comp|/|R| ≥ m tries once to free
⌊fraction · n⌋ of the n rollout instances (the paper: half). Instances are whole DP replicas, so a
TP group is never split; the freed GPUs must hold at least one training replica. The instances
freed are those with the least work on them (fewest tokens to recompute). With ``check_kv`` the
attempt goes ahead only if the *projected peak KV* of every unfinished request fits the kept
instances' caches:

    Σ_r ⌈(prompt_r + L̂(g_r)) / B⌉ ≤ Σ_{kept i} capacity_i          (blocks of B tokens)

where g_r is the tokens r has generated and L̂(g) = E[L | L > g] over the response lengths seen in
earlier rounds (the "historical response length distribution"), or the length cap when no earlier
response ran that long. Summing final contexts as if all ran at once is conservative: it is the
peak if none finished first. A fixed trigger (Table 3's 20/30/40% baselines) is one milestone
with ``check_kv`` off, counted in finished prompts as §6.6 states it ("when the number of
completed prompts reaches 20%, 30%, or 40%") and the artifact's
``infer_scaling_down_progress_ratio`` does (``num_finished_prompts`` in the fork's
``multi_async_generate_scheduler.py``); Algorithm 1's milestones count finished responses
("the fraction of completed requests", §4.4).

**Migration by recompute (line 20).** The freed instances' requests keep their generated tokens
and are dispatched to the kept instances, each to the one with the least projected KV; the engine
charges the prefill of prompt + generated tokens when they are admitted again.

**Training on the freed GPUs (lines 22-23) and after rollout.** A prompt can be trained once all
its kept responses are scored (GRPO's advantage needs the group). Training is a fluid: a prompt
is w_p = (its tokens) · s GPU-seconds of work, s from the cost model. From the scale-down time to
the end of rollout the freed GPUs (rounded down to whole training replicas) work through the
ready prompts; after rollout every GPU does, as prompts become ready; the deferred update comes
after the last gradient (on-policy semantics kept, §4.4).

**Fetch-once (Table 4's baseline).** ``fetch_cap`` models "fetch all available completed prompts
only once, with the number of fetched samples capped at 20-50% of the total" (§6.6) as the public
artifact runs it (``fixed_async`` in the fork's
``roll/pipeline/rlvr/rlvr_pipeline_async_for_autoscaling_debug.py``): nothing trains while rollout
runs; once it ends, the first ⌈cap · n⌉ ready prompts train on the freed GPUs (a blocking call on
the second-half ranks), then the rest on every GPU. The paper leaves the timing open; this reading
is the one its own numbers support: every fetch-once row of Table 4 (128.6-133.8 s) is slower than
the no-scaling row of Table 3 (124.2 s), which no fetch that overlaps rollout can be.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from costmodels.generation.policy import Dispatch, Observation, Release

#: the paper's milestones: 20% to 50% of responses complete, in 5% steps
PAPER_MILESTONES = tuple(round(0.20 + 0.05 * i, 2) for i in range(7))


@dataclass(frozen=True)
class ScaleRule:
    """When and how far a round scales rollout down (module doc)."""

    milestones: tuple[float, ...] = PAPER_MILESTONES
    fraction: float = 0.5
    check_kv: bool = True
    replica_gpus: int = 1  # the freed GPUs must hold a whole training replica
    # what progress counts: finished responses (Algorithm 1's milestones) or finished prompts
    # (§6.6's fixed triggers "when the number of completed prompts reaches 20%")
    progress: Literal["responses", "prompts"] = "responses"

    def __post_init__(self) -> None:
        if not 0 < self.fraction < 1:
            raise ValueError(f"scale fraction must be in (0, 1), got {self.fraction}")
        if not self.milestones or any(not 0 < m < 1 for m in self.milestones):
            raise ValueError(f"milestones must be in (0, 1), got {self.milestones}")


@dataclass
class ScaleDecision:
    """What the scaler did: when, which instances, and the KV projection it went by."""

    time: float | None = None
    freed: list[int] = field(default_factory=list)
    freed_gpus: int = 0
    milestone: float | None = None
    projected_blocks: int | None = None
    capacity_blocks: int | None = None
    tried: list[float] = field(default_factory=list)


class LengthHistory:
    """E[L | L > g] over response lengths seen so far (module doc), O(log n) per query."""

    def __init__(self, lengths: list[int] | np.ndarray, cap: int) -> None:
        self.sorted = np.sort(np.asarray(lengths, dtype=float))
        self.suffix = np.concatenate([np.cumsum(self.sorted[::-1])[::-1], [0.0]])
        self.cap = cap

    def expected_final(self, generated: int) -> float:
        i = bisect.bisect_right(self.sorted, generated)  # type: ignore[arg-type]
        n = len(self.sorted) - i
        return float(self.suffix[i] / n) if n else float(self.cap)


class ScaleDown:
    """Algorithm 1's scaling as an engine policy (module doc). ``target`` is |R|."""

    def __init__(
        self,
        rule: ScaleRule,
        target: int,
        history: LengthHistory,
        block_size: int,
        tick: float,
        per_prompt: int = 1,
    ) -> None:
        self.per_prompt = per_prompt  # responses that finish a prompt (prompt progress)
        self.rule, self.target, self.history, self.block, self.tick = (
            rule,
            target,
            history,
            block_size,
            tick,
        )
        self.next = 0
        self.decision = ScaleDecision()
        self.done = False

    def on_start(self, obs: Observation) -> list[Any]:
        return []

    def _blocks(self, obs: Observation, rid: int) -> int:
        r = obs.requests[rid]
        return math.ceil(
            (r.prompt + max(r.generated, self.history.expected_final(r.generated))) / self.block
        )

    def on_tick(self, obs: Observation) -> list[Any]:
        if self.done:
            return []
        if self.rule.progress == "prompts":
            done: dict[int, int] = {}
            for r in obs.requests.values():
                if r.state == "done":
                    done[r.group] = done.get(r.group, 0) + 1
            finished = sum(n >= self.per_prompt for n in done.values())
            frac = finished * self.per_prompt / self.target
        else:
            frac = sum(1 for r in obs.requests.values() if r.state == "done") / self.target
        milestones = self.rule.milestones
        if self.next < len(milestones) and frac >= milestones[self.next]:
            m = milestones[self.next]
            while self.next < len(milestones) and frac >= milestones[self.next]:
                self.next += 1  # milestones passed within one tick are tried once
            actions = self._try(obs, m)
            if actions is not None:
                self.done = True
                return actions
        if self.next >= len(milestones):
            self.done = True
        return []

    def _try(self, obs: Observation, milestone: float) -> list[Any] | None:
        self.decision.tried.append(milestone)
        active = [v for v in obs.instances if v.active]
        k = math.floor(self.rule.fraction * len(active))
        freed_gpus = sum(sorted(v.tp for v in active)[:k]) if k else 0
        if k == 0 or k == len(active) or freed_gpus < self.rule.replica_gpus:
            self.done = True  # structural: no milestone can do better
            return None
        live = {v.index: [*v.running, *v.waiting, *v.pending] for v in active}
        load = {i: sum(self._blocks(obs, rid) for rid in rids) for i, rids in live.items()}
        # free the instances with the least to recompute: fewest generated tokens on them
        work = {
            i: sum(obs.requests[rid].generated + obs.requests[rid].prompt for rid in rids)
            for i, rids in live.items()
        }
        freed = sorted(live, key=lambda i: (work[i], i))[:k]
        kept = [v for v in active if v.index not in freed]
        projected = sum(load.values())
        capacity = sum(v.kv_blocks for v in kept)
        if self.rule.check_kv and projected > capacity:
            return None
        actions: list[Any] = [Release(i) for i in freed]
        room = {v.index: v.kv_blocks - load[v.index] for v in kept}
        moving = sorted(
            (rid for i in freed for rid in live[i]), key=lambda rid: -self._blocks(obs, rid)
        )
        for rid in moving:
            dest = max(room, key=lambda i: (room[i], -i))
            room[dest] -= self._blocks(obs, rid)
            actions.append(Dispatch(rid, dest))
        d = self.decision
        d.time, d.freed, d.milestone = obs.time, sorted(freed), milestone
        d.freed_gpus = sum(v.tp for v in active if v.index in freed)
        d.projected_blocks, d.capacity_blocks = projected, capacity
        return actions


def train_finish(
    ready: list[tuple[float, float]],
    *,
    gpus: int,
    freed_gpus: int,
    scale_at: float | None,
    rollout_end: float,
    fetch_cap: float | None = None,
) -> tuple[float, float]:
    """When the last gradient is computed, and the GPU-seconds of training done before rollout
    ended (module doc: the fluid). ``ready`` is (ready time, GPU-seconds of work) per prompt."""
    events = sorted(ready)
    total = sum(w for _, w in events)
    scaled = scale_at is not None and freed_gpus > 0 and scale_at < rollout_end
    if scaled and fetch_cap is not None:
        # fetch once (module doc): after rollout, the first ⌈cap·n⌉ prompts on the freed GPUs,
        # then the rest on every GPU; nothing overlaps rollout
        k = math.ceil(fetch_cap * len(events) - 1e-9)
        head = [(max(t, rollout_end), w) for t, w in events[:k]]
        fetched_end = _fluid(head, freed_gpus, rollout_end, math.inf, stop_at_end=False)[0]
        tail = [(max(t, fetched_end), w) for t, w in events[k:]]
        return _fluid(tail, gpus, fetched_end, math.inf, stop_at_end=False)[0], 0.0
    done_before = 0.0
    if scaled:
        done_before = _fluid(events, freed_gpus, scale_at, rollout_end, stop_at_end=True)[1]
    # after rollout: everything left, on every GPU, each prompt no earlier than it is ready
    left = total - done_before
    if left <= 1e-12:
        return rollout_end, done_before
    # remove the work already done from the earliest-ready prompts first (the fluid's order)
    rest, skip = [], done_before
    for t, w in events:
        take = min(w, skip)
        skip -= take
        if w - take > 1e-12:
            rest.append((max(t, rollout_end), w - take))
    return _fluid(rest, gpus, rollout_end, math.inf, stop_at_end=False)[0], done_before


def _fluid(
    events: list[tuple[float, float]], rate: float, start: float, end: float, *, stop_at_end: bool
) -> tuple[float, float]:
    """Process work (ready time, amount) in ready order at ``rate`` from ``start``; returns the
    finish time (or ``end``) and the work done by then."""
    now, done = start, 0.0
    for t, w in sorted(events):
        now = max(now, t)
        if stop_at_end and now >= end:
            break
        need = w / rate
        if stop_at_end and now + need > end:
            done += (end - now) * rate
            return end, done
        now += need
        done += w
    return now, done
