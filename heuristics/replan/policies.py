"""OrchestrRL's online compute orchestration (§4, Algorithm 1) as policies on the generation
simulator (``costmodels.generation.engine``; the API in ``costmodels.generation.policy``): they see
queues, KV use and tokens done, never a request's true length.

**The pool.** :class:`Pool` maps a node layout onto engine instances: one engine instance per
aligned slot of the smallest candidate TP on every node; an instance of TP t occupies the slot at
its first GPU (the slots it covers are released). Changing a node's layout is Reconfigure on the
slots that start an instance and Release / Acquire on the others — the engine charges the weight
re-sharding and the recomputation of the preempted requests, so the reconfiguration is paid in
the simulation, not just predicted.

**Reactive balancing (§4.2, Eq. 5, Event 2).** Every ``tick``:
``LoadIndex_w = (|run_w| + |wait_w|) / B_cap(M_free_w) x 1 / R_w`` with B_cap the sequences the
instance's KV holds at its requests' mean context (running plus what its free blocks take) and
R_w its decode rate over the last tick (tokens/s). The index is divided by the pool mean so θ is
dimensionless (the paper gives no unit). If max - min > θ, requests move from the most to the
least congested instance, waiting queue first, shortest context first (running requests too: the
engine charges the cheaper of moving their KV and recomputing it, OrchestrRL Appendix A, so a
long context is no reason to stay; ``max_running_context`` caps it if asked; R_w counts the
tokens decoded since the last tick by the requests running at both ticks), only while the
destination keeps a
block of headroom per running sequence after the move (its stable batch) and while the source
still holds at least two more requests than the destination; stop at spread <= θ or when nothing
fits.

**Events.** The planner looks again when what the system shows changes, and at the latest every
``period`` seconds: when a new forecast arrives (the step's first tick), when another
``progress_step`` of the step's requests has finished (the remaining workload is then a
different shape), when a waiting queue appears on an instance (KV pressure: concurrency is now
capped by memory), and when the pool's decode rate over the last tick falls ``rate_drop`` below
what it was at the last look (the batch has thinned into the tail). The paper's Algorithm 1 runs
Event 1 periodically, and so does the default here: ``benchmarks/replan_end_to_end.py`` measures
every event set against the 30 s period and none wins on all three §6 settings. An early look
plans on the forecast alone (little has finished), and a plan applied then can cost more than
staying put (a single switch forced at 5 s: 228 s against 145 s for static TP2 on one 14B step);
the best single switch chosen in hindsight falls at 20 s on half the steps (5-60 s over all), and
the periodic planner comes within 0.95-1.06x of it. The acceptance margin ε_rel is measured
there too (5-20% are within half a per cent).

**Proactive planning (§4.1, Event 1).** At each look: estimate the pending requests'
remaining lengths from the step's forecast length distribution conditioned on what each has
generated — request i gets the u_i-quantile of L - g_i given L > g_i, with u_i spread evenly over
the requests by a fixed sequence, so the estimates form the forecast remaining-length histogram
(§4.1) tail included (binned at 256 tokens) — build the re-planning state, estimate the
current makespan (Obj_cur: nothing moves) and solve Eq. 1 (``solver``: greedy by default, or the
MILP with a time limit); apply the plan only if Obj_new < Obj_cur (1 - ε_rel) - ε (Obj_new already
counts
C_mig and C_sw; the relative margin, 10% by default, covers the estimate's own error: a plan
balanced on estimated lengths is optimistic, since the realised makespan is the maximum over
instances of noisy completion times — measured in ``benchmarks/replan_end_to_end.py``). Applying:
reconfigure / release / acquire to the plan's layout, then move
requests to match its bin counts per instance (residents stay, the rest migrate).

**The simulated check** (the default; ``check_draws=0`` restores Eq. 1's acceptance above). The
margin test trusts Eq. 1's plane model of T_j, whose optima exploit its error (a TP2 instance
left holding a 15 360-token response), so a look weighs its candidates on the engine instead
(``heuristics.replan.lookahead``): the solver's plan, every uniform TP and the current layout
re-balanced, each simulated with keeping the pool as it is over ``check_draws`` draws of the
remaining lengths; the shortest is applied when it beats keeping by ``check_margin`` (2%).
Measured on the §6 settings (``benchmarks/replan_end_to_end.py``): from TP2 it lifts OrchestrRL
over the best static layout from 1.039 / 1.025 / 1.033x to 1.077 / 1.057 / 1.045x under chunked
dispatch; one draw is too few (0.98-1.04x), five no better than three, and margins of 0-5% within
0.7% of each other. What it cannot fix is the start: a step that starts on TP2 where TP8 is best
throughout (32B, round-robin) loses its first 30 s, and a look at the first tick, which cannot
credit the re-plans still to come, switches to the best static layout too early
(``online.replayed_start`` chooses the start instead).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from costmodels.decode import Instance, ServingParams
from costmodels.generation.policy import (
    Acquire,
    Action,
    Dispatch,
    Migrate,
    Observation,
    Reconfigure,
    Release,
)
from costmodels.replan.judge import current_makespan
from costmodels.replan.plan import ReplanPlan
from costmodels.replan.problem import ReplanProblem, ReplanSpec
from costmodels.solving import Deadline, SolverOutput
from heuristics.replan.forecast import conditional_remaining, spread_level
from heuristics.replan.lookahead import BUDGET, WhatIf, check


@dataclass
class Pool:
    """Engine instances for ``nodes`` x ``gpus_per_node`` GPUs: one per aligned slot of ``unit``
    GPUs (the smallest candidate TP). ``layout[n]`` is node n's TP (uniform layouts)."""

    model: str
    gpu: str
    nodes: int
    gpus_per_node: int
    unit: int
    serving: ServingParams = field(default_factory=ServingParams)

    @property
    def per_node(self) -> int:
        return self.gpus_per_node // self.unit

    def slot(self, node: int, gpu: int) -> int:
        return node * self.per_node + gpu // self.unit

    def where(self, slot: int) -> tuple[int, int]:
        return slot // self.per_node, (slot % self.per_node) * self.unit

    def instances(self, tp: int) -> tuple[list[Instance], set[int]]:
        """Engine instances for a uniform TP ``tp`` start, and the slots that are active."""
        from costmodels.catalog import get_gpu, get_model

        m, g = get_model(self.model), get_gpu(self.gpu)
        out, active = [], set()
        for n in range(self.nodes):
            for k in range(self.per_node):
                gpu = k * self.unit
                on = gpu % tp == 0
                out.append(Instance(m, g, tp if on else self.unit, self.serving))
                if on:
                    active.add(self.slot(n, gpu))
        return out, active


@dataclass
class StartInactive:
    """Release the pool's inactive slots at time 0 (uniform TP start)."""

    inactive: list[int]
    tick: float = 1e9

    def on_start(self, obs: Observation) -> list[Action]:
        return [Release(i) for i in self.inactive]

    def on_tick(self, obs: Observation) -> list[Action]:
        return []


@dataclass
class ReactiveBalancer:
    """Eq. 5 reactive balancing (module doc)."""

    block_size: int = 16
    theta: float = 1.0
    tick: float = 5.0
    bandwidth_gbs: float = 25.0
    max_moves: int = 64
    # running requests up to this context move (None: any; the engine charges the cheaper of KV
    # transfer and recompute, OrchestrRL Appendix A)
    max_running_context: int | None = None
    moves: list[dict[str, Any]] = field(default_factory=list)
    _last: dict[int, tuple[float, dict[int, int]]] = field(default_factory=dict)

    def on_start(self, obs: Observation) -> list[Action]:
        return []

    def load_index(self, obs: Observation) -> dict[int, float]:
        """LoadIndex_w of every active instance, normalised by the pool mean (module doc)."""
        out = {}
        for v in obs.instances:
            if not v.active:
                continue
            reqs = [obs.requests[r] for r in (*v.running, *v.waiting)]
            done = {r: obs.requests[r].generated for r in v.running}
            prev = self._last.get(v.index)
            # tokens decoded since the last tick by the requests running then and now: a request
            # that finished or left in between takes its tokens with it, not the rate down
            rate = (
                sum(max(0, g - prev[1][r]) for r, g in done.items() if r in prev[1])
                / (obs.time - prev[0])
                if prev and obs.time > prev[0]
                else 0.0
            )
            self._last[v.index] = (obs.time, done)
            mean_ctx = np.mean([r.prompt + r.generated for r in reqs]) if reqs else 1.0
            free_tokens = (v.kv_blocks - v.kv_blocks_used) * self.block_size
            b_cap = max(1.0, len(v.running) + free_tokens / max(1.0, mean_ctx))
            out[v.index] = (len(v.running) + len(v.waiting)) / b_cap / max(rate, 1.0)
        mean = float(np.mean(list(out.values()))) if out else 0.0
        return {k: (x / mean if mean > 0 else 0.0) for k, x in out.items()}

    def on_tick(self, obs: Observation) -> list[Action]:
        index = self.load_index(obs)
        if len(index) < 2:
            return []
        actions: list[Action] = []
        views = {v.index: v for v in obs.instances}
        extra_blocks: dict[int, int] = {}
        queued = {k: len(views[k].running) + len(views[k].waiting) for k in index}
        moved: set[int] = set()
        while len(actions) < self.max_moves:
            hi, lo = max(index, key=index.get), min(index, key=index.get)
            if index[hi] - index[lo] <= self.theta:
                break
            src, dst = views[hi], views[lo]
            candidates = sorted(
                (r for r in src.waiting if r not in moved),
                key=lambda r: obs.requests[r].prompt + obs.requests[r].generated,
            )
            candidates += sorted(
                (
                    r
                    for r in src.running
                    if r not in moved
                    and (
                        self.max_running_context is None
                        or obs.requests[r].prompt + obs.requests[r].generated
                        <= self.max_running_context
                    )
                ),
                key=lambda r: obs.requests[r].prompt + obs.requests[r].generated,
            )
            if queued[hi] - queued[lo] < 2:  # a move would only swap the imbalance
                break
            chosen = None
            for rid in candidates:
                req = obs.requests[rid]
                need = -(-(req.prompt + req.generated + 1) // self.block_size)
                headroom = (
                    dst.kv_blocks - dst.kv_blocks_used - extra_blocks.get(lo, 0) - len(dst.running)
                )  # one block per running sequence
                if need <= headroom:
                    chosen = (rid, need)
                    break
            if chosen is None:
                break
            rid, need = chosen
            moved.add(rid)
            extra_blocks[lo] = extra_blocks.get(lo, 0) + need
            actions.append(Migrate(rid, lo, self.bandwidth_gbs))
            self.moves.append(
                {
                    "time": obs.time,
                    "request": rid,
                    "from": hi,
                    "to": lo,
                    "need_blocks": need,
                    "free_blocks": dst.kv_blocks - dst.kv_blocks_used,
                }
            )
            # the move shifts one request of queue pressure from hi to lo
            for k, delta in ((hi, -1), (lo, 1)):
                before = queued[k]
                queued[k] = before + delta
                index[k] = index[k] * queued[k] / before if before else index[k] + 1.0 / len(index)
        return actions


@dataclass
class Orchestrator:
    """Algorithm 1: proactive planning every ``planner.period``, reactive balancing on the ticks in
    between (a tick where the planner acted leaves the balancer out: its view is stale)."""

    planner: ProactivePlanner
    balancer: ReactiveBalancer
    tick: float = 5.0

    def on_start(self, obs: Observation) -> list[Action]:
        return self.planner.on_start(obs) + self.balancer.on_start(obs)

    def on_tick(self, obs: Observation) -> list[Action]:
        actions = self.planner.on_tick(obs)
        if actions:
            self.balancer.load_index(obs)  # keep its rate window current
            return actions
        active = {s for s in self.planner.layout}
        return [a for a in self.balancer.on_tick(obs) if a.instance in active]


#: draws of the remaining lengths per simulated check (module doc: one is too few, five no better)
CHECK_DRAWS = 3


@dataclass
class ProactivePlanner:
    """Algorithm 1 Event 1 (module doc)."""

    pool: Pool
    forecast: np.ndarray  # the step's forecast output lengths (samples of the distribution)
    solver: Callable[[ReplanProblem], SolverOutput]
    tps: list[int]
    period: float = 30.0
    epsilon: float = 5.0
    epsilon_rel: float = 0.1  # and this share of the current estimate: plans are made on estimates
    tick: float = 5.0
    bandwidth_gbs: float = 25.0
    switch_overhead_s: float = 1.0
    # what else makes the planner look (module doc, "Events"): "forecast" (the step's start),
    # "progress" (another ``progress_step`` of the requests done), "kv" (a waiting queue
    # appears), "rate" (the pool's decode rate falls by ``rate_drop`` since the last look); none
    # by default: measured, no event set beats the fixed period
    events: tuple[str, ...] = ()
    progress_step: float = 0.1
    rate_drop: float = 0.25
    first_at: float | None = None  # plan first at this time (None: the events and period decide)
    # the simulated check (``heuristics.replan.lookahead``): with draws > 0 every look simulates
    # keeping the pool and each candidate (the solver's plan, every uniform TP and the current
    # layout re-balanced, each assigned by ``greedy.assign``) on the engine, and applies the best
    # only when it beats keeping by ``check_margin``; Eq. 1's objective then only proposes
    check_draws: int = CHECK_DRAWS
    # the node layouts the solver may choose (``ReplanSpec.layouts``): one TP per node, or any
    # mix of candidate TPs on aligned slots (the MILP's mixed space)
    layouts: str = "uniform"
    check_margin: float = 0.02
    check_budget: int = BUDGET
    layout: dict[int, int] = field(default_factory=dict)  # active slot -> TP
    log: list[dict[str, Any]] = field(default_factory=list)
    _next: float = 0.0
    _done_mark: float = 0.0
    _queued: bool = False
    _rate_mark: float | None = None
    _tokens: dict[int, int] = field(default_factory=dict)
    _last_time: float = 0.0

    def __post_init__(self) -> None:
        self._sorted = np.sort(
            self.forecast
        )  # sorted once: every tick conditions it on each request

    def on_start(self, obs: Observation) -> list[Action]:
        # the layout is read at the first tick: other policies' start actions (releasing the
        # pool's idle slots) are not in this observation yet
        self.layout = {}
        self._next = self.period if self.first_at is None else self.first_at
        self._done_mark, self._queued, self._rate_mark = 0.0, False, None
        self._tokens, self._last_time = {}, obs.time
        return []

    def _event(self, obs: Observation) -> str | None:
        """Which event, if any, asks for a look at this tick (module doc, "Events")."""
        if self.first_at is not None or not self.events:
            return None  # the period alone: nothing to watch on a tick
        reqs = obs.requests
        done = sum(1 for r in reqs.values() if r.state == "done") / max(1, len(reqs))
        queued = any(v.waiting for v in obs.instances if v.active)
        tokens = {rid: r.generated for rid, r in reqs.items() if r.state == "running"}
        dt = obs.time - self._last_time
        rate = (
            sum(max(0, g - self._tokens[rid]) for rid, g in tokens.items() if rid in self._tokens)
            / dt
            if dt > 0
            else None
        )
        self._tokens, self._last_time = tokens, obs.time
        first_look = not self.log
        event = None
        if "forecast" in self.events and first_look:
            event = "forecast"
        elif "progress" in self.events and done >= self._done_mark + self.progress_step:
            event = "progress"
        elif "kv" in self.events and queued and not self._queued:
            event = "kv"
        elif (
            "rate" in self.events
            and rate is not None
            and self._rate_mark is not None
            and rate < (1 - self.rate_drop) * self._rate_mark
        ):
            event = "rate"
        self._queued = queued
        if event is not None:
            self._done_mark = done
            self._rate_mark = rate
        elif self._rate_mark is None and rate:
            self._rate_mark = rate
        return event

    def state(self, obs: Observation) -> tuple[ReplanSpec, dict[int, int]]:
        """The re-planning state the planner sees, and the estimated remaining bin of each
        request."""
        instances, estimate = [], {}
        for v in obs.instances:
            if v.index not in self.layout:
                continue
            node, gpu = self.pool.where(v.index)
            reqs = []
            for rid in (*v.running, *v.waiting, *v.pending):
                r = obs.requests[rid]
                rem = conditional_remaining(self._sorted, r.generated, spread_level(rid))
                estimate[rid] = rem
                reqs.append([rem, r.prompt + r.generated])
            instances.append(
                {"node": node, "gpu": gpu, "tp": self.layout[v.index], "requests": reqs}
            )
        spec = ReplanSpec.model_validate(
            {
                "model": self.pool.model,
                "gpu": self.pool.gpu,
                "nodes": self.pool.nodes,
                "gpus_per_node": self.pool.gpus_per_node,
                "tps": self.tps,
                "serving": self.pool.serving.model_dump(),
                "migration_gbs": self.bandwidth_gbs,
                "switch_overhead_s": self.switch_overhead_s,
                "layouts": self.layouts,
                "instances": instances,
            }
        )
        if estimate:
            spec.check()
        return spec, estimate

    def on_tick(self, obs: Observation) -> list[Action]:
        if not self.layout:
            self.layout = {v.index: v.tp for v in obs.instances if v.active}
        event = self._event(obs)
        if event is None:
            if obs.time + 1e-9 < self._next:
                return []
            event = "period"
        self._next = obs.time + self.period
        if self.first_at is not None:
            self._next = float("inf")  # one look, at first_at (the hindsight sweep)
        t0 = time.perf_counter()
        spec, estimate = self.state(obs)
        if not estimate:
            return []
        actions = self._decide(obs, event, spec, estimate)
        # wall time of the look (state, solve, check), reported only: the decision itself is
        # bounded by work (the solver's budget, ``check_budget``)
        self.log[-1]["decision_s"] = time.perf_counter() - t0
        return actions

    def _decide(
        self, obs: Observation, event: str, spec: ReplanSpec, estimate: dict[int, int]
    ) -> list[Action]:
        """One look: solve Eq. 1 on the estimates, then accept by the margin or the simulated
        check (module doc)."""
        problem = ReplanProblem(spec)
        current = current_makespan(problem)
        out = self.solver(problem)
        entry = {
            "time": obs.time,
            "event": event,
            "current_s": current,
            "planned_s": out.objective,
            "applied": False,
        }
        self.log.append(entry)
        if self.check_draws > 0:
            return self._checked(obs, problem, out, estimate, entry)
        if (
            out.plan is None
            or out.objective is None
            or not out.objective < current * (1 - self.epsilon_rel) - self.epsilon
        ):
            return []
        entry["applied"] = True
        return self.apply(obs, problem, out.plan, estimate)

    def candidates(
        self, problem: ReplanProblem, out: SolverOutput
    ) -> list[tuple[str, ReplanPlan, float]]:
        """Plans the simulated check weighs (field ``check_draws``), best first by Eq. 1: the
        solver's, every uniform TP and the current layout re-balanced."""
        from heuristics.replan.greedy import best_of, keep_choice, uniform_choice

        found = []
        if out.plan is not None and out.objective is not None:
            found.append(("solver", out.plan, out.objective))
        choices = [("keep", keep_choice(problem))] + [
            (f"tp{t}", c) for t in problem.candidate_tps if (c := uniform_choice(problem, t))
        ]
        for name, choice in choices:
            _, plan, obj = best_of(problem, [(name, choice)], Deadline(None))
            if plan is not None:
                found.append((name, plan, obj))
        return sorted(found, key=lambda c: c[2])

    def _checked(
        self,
        obs: Observation,
        problem: ReplanProblem,
        out: SolverOutput,
        estimate: dict[int, int],
        entry: dict[str, Any],
    ) -> list[Action]:
        """The simulated check (``heuristics.replan.lookahead``): the candidate whose simulated
        rest of the step is shortest, if it beats standing still by ``check_margin``."""
        plans = self.candidates(problem, out)
        actions = [self.plan_actions(obs, problem, p, estimate)[0] for _, p, _ in plans]
        what = WhatIf(self.pool.model, self.pool.gpu, self.pool.serving, self._sorted)
        keep, scores, draws = check(obs, what, actions, self.check_draws, self.check_budget)
        best = int(np.argmin(scores)) if scores else -1
        entry.update(
            {"simulated_keep_s": keep, "simulated_best_s": None, "choice": None, "draws": draws}
        )
        if best < 0 or not np.isfinite(scores[best]):
            return []
        entry.update({"simulated_best_s": scores[best], "choice": plans[best][0]})
        if not scores[best] < keep * (1 - self.check_margin):
            return []
        entry["applied"] = True
        acts, self.layout = self.plan_actions(obs, problem, plans[best][1], estimate)
        return acts

    def apply(
        self, obs: Observation, problem: ReplanProblem, plan: ReplanPlan, estimate: dict[int, int]
    ) -> list[Action]:
        """Actions that take the pool to ``plan`` (:meth:`plan_actions`), now the pool's layout."""
        actions, self.layout = self.plan_actions(obs, problem, plan, estimate)
        return actions

    def plan_actions(
        self, obs: Observation, problem: ReplanProblem, plan: ReplanPlan, estimate: dict[int, int]
    ) -> tuple[list[Action], dict[int, int]]:
        """Actions that take the pool to ``plan``, layout first, then requests (module doc); and
        the layout they leave (active slot -> TP)."""
        actions: list[Action] = []
        new = {self.pool.slot(i.node, i.gpu): i for i in plan.instances}
        views = {v.index: v for v in obs.instances}
        released_requests: list[int] = []
        for slot in range(len(obs.instances)):
            was, now = self.layout.get(slot), new.get(slot)
            if now is None and was is not None:
                actions.append(Release(slot))
                v = views[slot]
                released_requests += [*v.running, *v.waiting, *v.pending]
            elif now is not None and was is None:
                actions += [
                    Acquire(slot),
                    Reconfigure(slot, now.tp, self.bandwidth_gbs, self.switch_overhead_s),
                ]
            elif now is not None and was != now.tp:
                actions.append(
                    Reconfigure(slot, now.tp, self.bandwidth_gbs, self.switch_overhead_s)
                )
        layout = {s: i.tp for s, i in new.items()}
        # requests: per new instance and bin, residents stay, the rest come from elsewhere
        w = problem.spec.bin_tokens
        where = {
            rid: v.index for v in obs.instances for rid in (*v.running, *v.waiting, *v.pending)
        }
        for rid in released_requests:
            where[rid] = -1
        by_bin: dict[int, list[int]] = {}
        for rid, rem in estimate.items():
            by_bin.setdefault(-(-rem // w) * w, []).append(rid)
        want = {(s, u): c for s, i in new.items() for u, c in i.bins}
        placed: set[int] = set()
        for (s, u), c in want.items():  # residents first
            mine = [r for r in by_bin.get(u, []) if where[r] == s][:c]
            placed.update(mine)
            want[s, u] = c - len(mine)
        for (s, u), c in want.items():
            movers = [r for r in by_bin.get(u, []) if r not in placed][:c]
            for rid in movers:
                placed.add(rid)
                actions.append(
                    Dispatch(rid, s) if where[rid] == -1 else Migrate(rid, s, self.bandwidth_gbs)
                )
        # anything released and not placed (should not happen) goes to the first new instance
        first = min(new) if new else 0
        actions += [Dispatch(r, first) for r in released_requests if r not in placed]
        return actions, layout
