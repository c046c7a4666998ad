"""Rollout rounds on the request-level generation simulator: tail batching (RollPacker §3),
with the stream trainer's scale-down (§4.4, ``costmodels.rollout.stream``) and the parallelism
planner's TP rule (§4.2, ``costmodels.rollout.parallelism``) when a plan asks for them.

These are the mechanics a rollout plan's knobs set, so they are part of the judge: the plan
says "η = 1.25, scale at the adaptive milestone", and the evaluator replays exactly that.

Notation: P0 prompts x R0 responses are trained per step; speculation factors η_P, η_R ≥ 1.

* **Short round.** Launch ⌈η_P P0⌉ prompts with ⌈η_R R0⌉ responses each. A prompt *completes*
  when R0 of its responses are *scored*: under asynchronous reward every response goes to a
  reward worker as it finishes (``costmodels.rollout.reward.InlineScorer``), as in the artifact,
  so speculation also races past a sandbox run that hangs. Under synchronous reward (scored after
  rollout), or as the named variant ``race: generated``, it completes when R0 have finished
  generating. Its other responses are aborted then (they would be thrown away, and they hold KV
  cache and batch slots the others need). The round ends when P0
  prompts have completed (race to completion): every response still running is aborted, the P0
  prompts that completed first are kept with their first R0 responses, and every other launched
  prompt joins the long-prompt queue.
* **Long round.** When the queue holds P0 prompts, the next step runs the first P0 of them with R0
  responses each and speculation off: all of them are kept, however long they run.
* **The epoch.** Fresh prompts are drawn in dataset order. When the dataset is exhausted, what is
  left in the queue runs as one last long round (fewer than P0 prompts): no prompt is ever
  dropped, and every prompt is trained exactly once per epoch.

This follows RollPacker's artifact (a fork of ROLL): ``max_prompts_ratio`` is η_P,
``max_num_return_sequences`` is ⌈η_R R0⌉, the long round runs when the queue reaches the batch
size. Where the paper is silent we chose: a prompt's surplus responses are aborted as soon as it
completes (its slots go to prompts still racing), a re-run prompt draws fresh responses (its
difficulty stays), and the epoch's remainder is flushed as a short final long round.

The engine is stepped by a policy every ``tick`` seconds of simulated time, so aborts land up to a
tick late; the round's time and the kept set come from the exact completion times, not the tick.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance, feasible_tps
from costmodels.generation.engine import Engine
from costmodels.generation.policy import Abort, Observation
from costmodels.generation.requests import Request, group_assignment
from costmodels.generation.result import SimResult
from costmodels.reconfig import switch_cost
from costmodels.rollout.parallelism import AdaptiveTP
from costmodels.rollout.reward import InlineScorer, InlineScoring, RewardTimes
from costmodels.rollout.stream import LengthHistory, ScaleDecision, ScaleDown, ScaleRule
from costmodels.rollout.workload import PromptPool, RolloutWorkload
from costmodels.solving import checkpoint


@dataclass
class RoundResult:
    """One rollout round: what was launched, kept and deferred, and what it cost."""

    # "short" (speculative), "long" (the queue, no speculation) or "plain" (no speculation, fresh
    # prompts)
    kind: str
    launched: list[int]
    kept: list[int]
    deferred: list[int]
    time_s: float
    preemptions: int
    idle_gpu_s: float
    tp: int
    responses: list[tuple[int, float, int]] = field(
        default_factory=list
    )  # kept: (prompt, completed s, tokens)
    scale: ScaleDecision = field(default_factory=ScaleDecision)
    reconfig_s: float = 0.0  # TP switch before the round (weights re-sharded)
    # scored inline (the artifact's race): when each kept response's score was ready
    rewards: RewardTimes | None = None

    @property
    def responses_kept(self) -> int:
        return len(self.responses)

    @property
    def max_response(self) -> int:
        """The longest kept response (tokens)."""
        return max(t for _, _, t in self.responses)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "launched": len(self.launched),
            "kept": len(self.kept),
            "deferred": len(self.deferred),
            "time_s": self.time_s,
            "responses_kept": self.responses_kept,
            "max_response": self.max_response,
            "preemptions": self.preemptions,
            "idle_gpu_s": self.idle_gpu_s,
            "tp": self.tp,
            "scaled_at_s": self.scale.time,
            "freed_gpus": self.scale.freed_gpus,
            "reconfig_s": self.reconfig_s,
        }


class RaceToCompletion:
    """The short round's policy (module doc): abort a completed prompt's surplus responses, and
    everything once ``keep_prompts`` prompts have completed.

    Without a ``scorer`` a prompt completes when ``keep_responses`` of its responses have
    finished generating; with one (the artifact's semantics) when that many are *scored*: each
    response goes to the scorer at the first tick that sees it done, and the prompt completes at
    the ``keep_responses``-th earliest score. The policy acts on what a tick shows, so it aborts
    up to a tick late; :func:`run_round` then takes the kept set and the round's end from the
    exact completion times."""

    #: it reads a request's tokens only once it is done (``costmodels.generation.policy``)
    watches_progress = False

    def __init__(
        self,
        group_of: dict[int, int],
        keep_prompts: int,
        keep_responses: int,
        tick: float,
        scorer: InlineScorer | None = None,
    ) -> None:
        self.group_of, self.keep_prompts, self.keep_responses, self.tick = (
            group_of,
            keep_prompts,
            keep_responses,
            tick,
        )
        self.scorer = scorer
        self.members: dict[int, list[int]] = {}
        for rid, g in group_of.items():
            self.members.setdefault(g, []).append(rid)
        self.closed: set[int] = set()
        self.submitted: set[int] = set()
        self.scores: dict[int, list[float]] = {}
        self.ready: dict[int, float] = {}  # group -> its keep_responses-th earliest score
        self.over = False

    def on_start(self, obs: Observation) -> list[Any]:
        return []

    def _complete(self, obs: Observation) -> set[int]:
        # the policy sees every observation, so the requests that finished are among the changed
        k = self.keep_responses
        for rid in obs.changed:
            view = obs.requests[rid]
            if view.state != "done" or rid in self.submitted:
                continue
            self.submitted.add(rid)
            g = self.group_of[rid]
            ts = self.scores.setdefault(g, [])
            # the race on generation counts a response when it is done, the scored race when its
            # score arrives
            ts.append(
                obs.time if self.scorer is None else self.scorer.submit(g, obs.time, view.generated)
            )
            if len(ts) >= k:  # scores only arrive here: the k-th earliest moves only now
                self.ready[g] = sorted(ts)[k - 1]
        return {g for g, t in self.ready.items() if t <= obs.time + 1e-12}

    def on_tick(self, obs: Observation) -> list[Any]:
        if self.over:
            return []
        live = lambda rid: obs.requests[rid].state not in ("done", "aborted")  # noqa: E731
        complete = self._complete(obs)
        if len(complete) >= self.keep_prompts:
            self.over = True
            return [Abort(rid) for rid in obs.requests if live(rid)]
        actions = [
            Abort(rid) for g in complete - self.closed for rid in self.members[g] if live(rid)
        ]
        self.closed |= complete
        return actions


def _instances(workload: RolloutWorkload, tp: int) -> list[Instance]:
    model, gpu = get_model(workload.model), get_gpu(workload.gpu)
    allowed = feasible_tps(model, workload.gpus, workload.gpus_per_node)
    if tp not in allowed:
        raise ValueError(
            f"TP {tp} is not a TP for {model.name} on {workload.gpus} GPUs of "
            f"{workload.gpus_per_node}-GPU servers; allowed: {allowed}"
        )
    params = workload.serving()
    return [Instance(model, gpu, tp, params) for _ in range(workload.gpus // tp)]


def launch_count(eta: float, n: int) -> int:
    """⌈η n⌉: prompts (or responses per prompt) a short round launches (ROLL's
    ``max_prompts_ratio`` x batch, ``max_num_return_sequences``); the epsilon keeps 1.25 x 8 at
    10."""
    return math.ceil(eta * n - 1e-9)


def _busy_before(timeline: list[tuple[float, float, int, int]], end: float) -> float:
    return sum(max(0.0, min(b, end) - a) for a, b, *_ in timeline)


BLOCK_SIZE = 16  # the engine's KV block (tokens)


def run_round(
    pool: PromptPool,
    prompts: list[int],
    responses: int,
    *,
    tp: int,
    keep_prompts: int | None = None,
    keep_responses: int | None = None,
    attempts: dict[int, int] | None = None,
    tick: float = 0.5,
    kind: str | None = None,
    scale: ScaleRule | None = None,
    history: list[int] | None = None,
    scoring: InlineScoring | None = None,
) -> RoundResult:
    """Generate ``responses`` per prompt of ``prompts`` on the workload's rollout GPUs at ``tp``.

    With ``keep_prompts``/``keep_responses`` the round races to completion (a short round);
    without, it runs every response to the end. ``attempts[p]`` is how often p ran before (its
    draws are paired on it). With ``scale`` the stream trainer may free instances mid-round,
    projecting KV from ``history`` (earlier rounds' response lengths). With ``scoring`` a racing
    round scores responses as they finish and a prompt completes when ``keep_responses`` of them
    are scored (the artifact's race, module doc); the round's result then carries the scores."""
    wl = pool.workload
    attempts = attempts or {}
    requests, group_of = _round_requests(pool, prompts, responses, attempts)
    instances = _instances(wl, tp)
    engine = Engine(instances, requests, group_assignment(requests, len(instances)))
    racing = keep_prompts is not None
    kr = (keep_responses if keep_responses is not None else responses) if racing else responses
    policies: list[Any] = []
    scaler = None
    if scale is not None:
        target = (keep_prompts or 0) * kr if racing else len(requests)
        scaler = ScaleDown(
            scale,
            target,
            LengthHistory(history or [], wl.max_response),
            BLOCK_SIZE,
            tick,
            per_prompt=kr,
        )
        policies.append(scaler)  # before the race: it moves requests the race may then abort
    inline = scoring is not None and racing
    if racing:
        scorer = InlineScorer(pool, wl.gpus, scoring, attempts) if inline else None  # type: ignore[arg-type]
        policies.append(RaceToCompletion(group_of, keep_prompts, kr, tick, scorer))  # type: ignore[arg-type]
    result = engine.run(policies) if policies else engine.run()
    exact = InlineScorer(pool, wl.gpus, scoring, attempts) if inline else None  # type: ignore[arg-type]
    finished = _finished(requests, result, exact)
    completion = {p: sorted(v)[kr - 1][0] for p, v in finished.items() if len(v) >= kr}
    if racing:
        kept = sorted(completion, key=lambda p: (completion[p], p))[:keep_prompts]
    else:
        kept = list(prompts)
    if len(kept) < (keep_prompts if racing else len(prompts)):
        raise RuntimeError(
            f"only {len(kept)} prompts completed {kr} responses"
        )  # every response finishes unless aborted
    end = max(completion[p] for p in kept)
    kept_set = set(kept)
    kept_responses = [(p, t, out) for p in kept for _, t, out in sorted(finished[p])[:kr]]
    rewards = None if exact is None else _reward_times(exact, finished, kept, kr)
    return RoundResult(
        kind or ("short" if racing else "plain"),
        list(prompts),
        kept,
        [p for p in prompts if p not in kept_set],
        end,
        result.preemptions,
        _idle_gpu_s(instances, result, end),
        tp,
        kept_responses,
        scaler.decision if scaler else ScaleDecision(),
        rewards=rewards,
    )


def _round_requests(
    pool: PromptPool, prompts: list[int], responses: int, attempts: dict[int, int]
) -> tuple[list[Request], dict[int, int]]:
    """``responses`` requests per prompt, in prompt order (their lengths drawn paired on the
    prompt's attempt), and the prompt of each request id."""
    requests, group_of, rid = [], {}, 0
    for p in prompts:
        for length in pool.responses(p, responses, attempts.get(p, 0)):
            requests.append(Request(rid, pool.prompt_length(p), length, group=p))
            group_of[rid] = p
            rid += 1
    return requests, group_of


def _finished(
    requests: list[Request], result: SimResult, exact: InlineScorer | None
) -> dict[int, list[tuple[float, float, int]]]:
    """Per prompt, its finished responses as (ready s, completed s, tokens), submitted to the
    inline scorer in completion order when there is one."""
    # (ready s, completed s, tokens) per finished response: ready is when it counts for the race
    # (its score, scored inline; else its last token)
    finished: dict[int, list[tuple[float, float, int]]] = {}
    done = [
        (rec.completed, req.id, req)
        for req in requests
        if (rec := result.records[req.id]).completed is not None
    ]
    for t, _, req in sorted(done, key=lambda d: (d[0], d[1])):
        ready = exact.submit(req.group, t, req.output) if exact else t
        finished.setdefault(req.group, []).append((ready, t, req.output))
    return finished


def _reward_times(
    exact: InlineScorer,
    finished: dict[int, list[tuple[float, float, int]]],
    kept: list[int],
    kr: int,
) -> RewardTimes:
    """When each kept response was scored, the last score, and the scorer's timeouts, cut
    responses and sandbox time."""
    scores = {(p, j): v[0] for p in kept for j, v in enumerate(sorted(finished[p])[:kr])}
    return RewardTimes(
        scores,
        max(scores.values()),
        exact.timeouts,
        exact.cut_finishing,
        exact.sandbox_busy_s,
    )


def _idle_gpu_s(instances: list[Instance], result: SimResult, end: float) -> float:
    """GPU-seconds the round's instances sat idle before ``end`` (a released one only until its
    release)."""
    released = {a["instance"]: a["time"] for a in result.actions if a["action"] == "Release"}
    idle = 0.0
    for i, (inst, timeline) in enumerate(zip(instances, result.timelines, strict=True)):
        held = min(end, released.get(i, end))  # a freed instance trains from then on: not idle
        idle += inst.tp * max(0.0, held - _busy_before(timeline, held))
    return idle


def projected_round_s(pool: PromptPool, r: RoundResult, tp: int) -> float:
    """The latency guard's projection (RollPacker §4.2 with a guard): the round ``r`` just ran,
    its kept responses' observed lengths replayed without speculation on the rollout GPUs at
    ``tp``. A running system knows these lengths after the round; the replay is the cost model's
    round time for them."""
    requests = [
        Request(i, pool.prompt_length(p), out, group=p) for i, (p, _, out) in enumerate(r.responses)
    ]
    instances = _instances(pool.workload, tp)
    engine = Engine(instances, requests, group_assignment(requests, len(instances)))
    return engine.run().makespan_s


@dataclass
class EpochResult:
    """Every round of an epoch, in order, and the checks that no prompt was lost or repeated."""

    rounds: list[RoundResult]
    trained: dict[int, int] = field(default_factory=dict)  # prompt -> times trained
    tp_vetoes: int = 0  # TP changes the latency guard refused

    @property
    def time_s(self) -> float:
        return sum(r.time_s for r in self.rounds)

    def lost(self, dataset: int) -> list[int]:
        return [p for p in range(dataset) if self.trained.get(p, 0) == 0]

    def repeated(self) -> list[int]:
        return [p for p, n in self.trained.items() if n > 1]


def simulate_epoch(
    workload: RolloutWorkload,
    *,
    eta_prompts: float = 1.25,
    eta_responses: float = 1.25,
    tp: int | None = None,
    long_tp: int | None = None,
    seed: int = 0,
    max_rounds: int | None = None,
    tick: float = 0.5,
    adaptive_tp: bool = False,
    tp_guard: bool = False,
    allowed_tps: list[int] | None = None,
    scale: ScaleRule | None = None,
    scoring: InlineScoring | None = None,
) -> EpochResult:
    """One epoch of tail batching (module doc); η = 1 for both is plain synchronous rollout.

    ``tp`` runs short (and plain) rounds, ``long_tp`` long rounds (the parallelism knob per round
    type); with ``adaptive_tp`` the paper's preemption rule sets every round's TP instead,
    starting at ``tp`` and moving within ``allowed_tps`` (default: every TP inside a server). A TP
    change between rounds costs the weight re-sharding (``costmodels.reconfig.switch_cost`` over
    the intra-node link). With ``tp_guard`` a change the rule asks
    for applies only when :func:`projected_round_s` says the last round would have run faster at
    the new TP (the latency guard). ``scale`` lets the stream trainer scale every round down.
    ``scoring`` scores short rounds inline: a prompt completes when its responses are scored
    (the artifact's race). ``max_rounds`` stops early (then not every prompt has been trained)."""
    if eta_prompts < 1 or eta_responses < 1:
        raise ValueError(
            f"speculation factors must be >= 1, got η_P={eta_prompts}, η_R={eta_responses}"
        )
    pool = PromptPool(workload, seed)
    tp = tp or workload.tp
    long_tp = long_tp or tp
    allowed = allowed_tps or feasible_tps(
        get_model(workload.model), workload.gpus, workload.gpus_per_node
    )
    rule = AdaptiveTP(tp, allowed) if adaptive_tp else None
    epoch = _Epoch(
        pool, eta_prompts, eta_responses, tp, long_tp, rule, tp_guard, tick, scale, scoring
    )
    return epoch.run(max_rounds)


class _Epoch:
    """One epoch's state between rounds: fresh prompts in dataset order, the long-prompt queue,
    each prompt's attempts, the response lengths seen, the TP in use and the rounds so far."""

    def __init__(
        self,
        pool: PromptPool,
        eta_prompts: float,
        eta_responses: float,
        tp: int,
        long_tp: int,
        rule: AdaptiveTP | None,
        tp_guard: bool,
        tick: float,
        scale: ScaleRule | None,
        scoring: InlineScoring | None,
    ) -> None:
        self.pool, self.workload = pool, pool.workload
        self.p0, self.r0 = self.workload.prompts_per_step, self.workload.responses_per_prompt
        self.tp, self.long_tp, self.rule, self.tp_guard = tp, long_tp, rule, tp_guard
        self.tick, self.scale, self.scoring = tick, scale, scoring
        self.launch_p = launch_count(eta_prompts, self.p0)
        self.launch_r = launch_count(eta_responses, self.r0)
        self.fresh = deque(range(pool.size))
        self.queue: deque[int] = deque()
        self.attempts: dict[int, int] = {}
        self.history: list[int] = []
        self.out = EpochResult([])
        self.current: int | None = None

    def run(self, max_rounds: int | None) -> EpochResult:
        """Rounds until every prompt is trained (or ``max_rounds``)."""
        out, rule = self.out, self.rule
        while self.fresh or self.queue:
            # an epoch inside a solve stops at its limit (costmodels.solving), also between rounds
            checkpoint()
            if max_rounds is not None and len(out.rounds) >= max_rounds:
                break
            long_round = len(self.queue) >= self.p0 or (self.queue and not self.fresh)
            use_tp = rule.tp if rule else (self.long_tp if long_round else self.tp)
            r = self._round(bool(long_round), use_tp)
            self._reconfigure(r, use_tp)
            if rule:
                self._guard(rule, r, use_tp)
            self._account(r)
        return out

    def _round(self, long_round: bool, use_tp: int) -> RoundResult:
        """The next round at ``use_tp``: a long round of the queue's first P0 prompts, else a
        short (racing, when speculative) or plain round of fresh ones."""
        at = functools.partial(
            run_round,
            self.pool,
            tp=use_tp,
            attempts=self.attempts,
            tick=self.tick,
            scale=self.scale,
            history=self.history,
        )
        queue, fresh, p0, r0 = self.queue, self.fresh, self.p0, self.r0
        if long_round:
            prompts = [queue.popleft() for _ in range(min(p0, len(queue)))]
            return at(prompts, r0, kind="long")
        prompts = [fresh.popleft() for _ in range(min(self.launch_p, len(fresh)))]
        if self.launch_p > p0 or self.launch_r > r0:
            race = {"keep_prompts": min(p0, len(prompts)), "keep_responses": r0}
            return at(prompts, self.launch_r, scoring=self.scoring, **race)
        return at(prompts, r0)

    def _reconfigure(self, r: RoundResult, use_tp: int) -> None:
        """A TP change since the last round costs the weight re-sharding."""
        workload = self.workload
        if self.current is not None and use_tp != self.current:
            inst = Instance(
                get_model(workload.model), get_gpu(workload.gpu), use_tp, workload.serving()
            )
            switch = switch_cost(inst, self.current, get_gpu(workload.gpu).link_gb_per_s)
            r.reconfig_s = switch["cost_s"]
        self.current = use_tp

    def _guard(self, rule: AdaptiveTP, r: RoundResult, use_tp: int) -> None:
        """The TP rule observes the round's preemptions; with the latency guard, a change applies
        only when the round would have run faster at the proposed TP."""
        proposed = rule.observe(r.preemptions)
        if self.tp_guard and proposed != use_tp:
            pool = self.pool
            faster = projected_round_s(pool, r, proposed) < projected_round_s(pool, r, use_tp)
            if not faster:
                rule.tp = use_tp
                self.out.tp_vetoes += 1

    def _account(self, r: RoundResult) -> None:
        """Attempts, trained counts, response lengths and the deferred prompts of the round."""
        out = self.out
        for p in r.launched:
            self.attempts[p] = self.attempts.get(p, 0) + 1
        for p in r.kept:
            out.trained[p] = out.trained.get(p, 0) + 1
        self.history.extend(t for _, _, t in r.responses)
        self.queue.extend(r.deferred)
        out.rounds.append(r)
