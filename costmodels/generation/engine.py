"""Request-level simulation of continuous batching on serving instances (vLLM-like): the event
core of the generation simulator (docs/architecture.md, "Online policies on the generation
simulator").

One instance (``costmodels.decode.Instance``: model, GPU, TP; engine knobs ``max_num_seqs``,
memory utilisation, KV block size) runs requests (``costmodels.generation.requests.Request``) as a
serving engine does:

* **Admission** at step boundaries, first come first served, while the batch limit allows and
  the KV cache has the blocks for the request's context plus its next token. An admitted request
  is prefilled (``Instance.prefill_batch`` over the newly admitted requests' contexts: their
  prompts and, after a preemption, the tokens already generated, which are recomputed). With
  ``ServingParams.share_prompt_prefill`` the responses of one prompt (requests of one ``group``
  with the same prompt length) share its prefill while one of them holds its KV on the instance:
  vLLM's prefix caching under parallel sampling (``n`` responses per prompt, as verl and ROLL
  generate a GRPO group), the same rule the placement judge's prefill follows
  (``CostParams.share_prompt_prefill``). Only the prefill's compute is shared; every request
  still holds its own KV blocks (conservative: vLLM shares the prompt's full blocks).
* **Decode steps**: every running request gains one token per step; a step of b requests holding
  C context tokens costs ``Instance.decode_step(b, C)`` — the project's one decode-step model
  (weights + KV read, compute roofline, TP/EP communication, engine overhead).
* **KV growth** in blocks of ``block_size`` tokens per request; when the next step needs a block
  the cache does not have, the most recently admitted request is **preempted** (vLLM's recompute
  preemption: its blocks are freed, it returns to the head of the queue keeping its tokens, and
  pays a prefill of its whole context when re-admitted); preemptions are counted.
* **Completion** when a request has produced its true output length.

**Fast by construction.** Between two events (a completion, a KV exhaustion, an arrival, a policy
tick) the batch is fixed and a step's time is ``max(m0 + m1 C, c0 + c1 C) + r`` in the batch's
context C (``costmodels.decode.StepCoefficients``: D1-D3 of ``costmodels.decode`` are affine in
C), and C grows by b per step. The engine jumps from event to event: the number of steps to the
next completion is the top of a heap of finish steps, the steps to KV exhaustion come in closed
form from the sorted block residues (``InstanceState.max_extra``), and the segment's time is
the closed-form sum of a two-piece linear function. The batch is stored relative to the
instance's step counter, so an event costs O(log n) Python work and nothing runs per token or per
running request. ``Engine(per_token=True)`` runs the same rules one step at a time, and
``costmodels.generation.reference.reference_run`` is a plain per-token stepper written apart; the
tests check all give the same completion times.

**Policies** (``costmodels.generation.policy``: what they observe, the actions they return) stop
the run every tick; :meth:`Engine.apply` carries out and logs their actions.

*Why not SimPy or Vidur.* SimPy schedules Python generator processes on an event heap; with no
closed form it would need one event per token per instance (the per-token stepper's cost) and
gives nothing the jump-to-next-event loop here does not. Vidur simulates at the same request
level but times operators from per-(model, GPU) profiles measured on hardware we do not have and
cannot ship; rlplan's judge is analytic, so the engine uses the judge's decode step instead.

Not modelled (and why planning can live without it): chunked prefill interleaved with decode
(prefill is charged as its own step at admission; it is a small share of RL rollouts, whose
outputs are long), swap-to-CPU preemption (vLLM V1 recomputes), speculative decoding, and
scheduler jitter. Units: seconds, tokens.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from costmodels.decode import Instance, StepCoefficients, step_coefficients
from costmodels.generation.instance_state import InstanceState
from costmodels.generation.policy import (
    Abort,
    Acquire,
    Action,
    Dispatch,
    InstanceView,
    Migrate,
    Observation,
    Policy,
    Reconfigure,
    Release,
    RequestView,
)
from costmodels.generation.requests import Request, RequestRecord, balanced_assignment
from costmodels.generation.result import SimResult
from costmodels.solving import checkpoint


def _measured_allreduce(inst: Instance) -> Callable[[int], float] | None:
    """The step's all-reduce seconds as a function of the batch when the instance's profile
    interpolates them in measured times (piecewise linear in the batch, not affine:
    ``costmodels.profiles.AllReduceTerm``), else None: ``HardwareProfile.comm_s``, the term the
    step itself charges."""
    if inst.tp == 1:
        return None
    profile = inst.params.efficiency.profile_for(inst.gpu, inst.tp)
    if profile is None or len(profile.allreduce[inst.tp].measured) < 2:
        return None
    return lambda batch: profile.comm_s(inst.model, inst.tp, batch)


class Engine:
    """Event-driven continuous batching over several instances (module doc), with policy hooks.

    ``assignment[i]`` is request i's instance, or -1 to leave it to the policies' ``Dispatch``.
    ``per_token=True`` runs the same rules one decode step at a time with the decode model called
    per step (no closed forms, no binary searches): the reference the tests hold the engine to."""

    def __init__(
        self,
        instances: list[Instance],
        requests: list[Request],
        assignment: list[int],
        block_size: int = 16,
        per_token: bool = False,
    ):
        if len(assignment) != len(requests):
            raise ValueError("one instance index per request")
        self.requests = {
            r.id: Request(r.id, r.prompt, r.output, r.group, r.ready, r.generated) for r in requests
        }
        if len(self.requests) != len(requests):
            raise ValueError("request ids must be unique")
        self.block = block_size
        self.per_token = per_token
        self.states = []
        caps: dict[int, int] = {}  # instances shared between slots share their capacity
        for i, inst in enumerate(instances):
            if id(inst) not in caps:
                caps[id(inst)] = inst.kv_capacity_tokens() // block_size
            self.states.append(InstanceState(i, inst, block_size, caps[id(inst)]))
        self.records = {
            r.id: RequestRecord(r.id, a) for r, a in zip(requests, assignment, strict=True)
        }
        self.actions: list[dict[str, Any]] = []
        self.preemptions = 0
        self._coef: dict[tuple[int, int], tuple[Instance, StepCoefficients]] = {}
        # the last view given of each request: a view is immutable, so one whose fields have not
        # changed since is handed out again (done and aborted requests never change)
        self._views: dict[int, RequestView | None] = dict.fromkeys(self.requests)
        # where each request is queued (instance, state) and the requests touched since the last
        # observation: an observation looks at those and the running ones only
        self._where: dict[int, tuple[int, str]] = {}
        self._touched: set[int] = set(self.requests)
        # events over every advance(): a scheme that advances instances a few events at a time
        # (a re-planning step, costmodels.generation.policies) still reaches its checkpoints
        self._events = 0
        self._order = {rid: k for k, rid in enumerate(self.requests)}
        # per instance: requests in ready order, not yet queued; unassigned ones wait for Dispatch
        self.pending: list[deque[int]] = [deque() for _ in instances]
        self.unassigned: list[int] = []
        for r in sorted(requests, key=lambda r: (r.ready, r.id)):
            a = self.records[r.id].instance
            if a == -1:
                self.unassigned.append(r.id)
                self._where[r.id] = (-1, "unassigned")
                continue
            if not 0 <= a < len(instances):
                raise ValueError(f"request {r.id}: instance {a} does not exist")
            self._check_fits(r.id, self.states[a])
            self.pending[a].append(r.id)
            self._where[r.id] = (a, "pending")

    def _check_fits(self, rid: int, st: InstanceState) -> None:
        req = self.requests[rid]
        if -(-(req.prompt + req.output) // self.block) > st.capacity_blocks:
            raise ValueError(
                f"request {rid} ({req.prompt}+{req.output} tokens) cannot fit instance "
                f"{st.index}'s KV cache"
            )

    def coef(self, st: InstanceState, batch: int) -> StepCoefficients:
        # identical instances (one object) share a table; the entry holds the instance so its
        # id cannot be reused by a later one (a Reconfigure replaces instances)
        key = (id(st.inst), batch)
        hit = self._coef.get(key)
        if hit is None or hit[0] is not st.inst:
            if st.inst.model.is_moe or batch <= 2:
                coef = step_coefficients(st.inst, batch)
            else:
                # dense: every coefficient is affine in the batch (shard read fixed; FLOPs, TP
                # all-reduce volume and per-sequence overhead linear), so two batches give all,
                # except an all-reduce interpolated in measured times: its own term at this batch
                one, two = self.coef(st, 1), self.coef(st, 2)
                coef = StepCoefficients(
                    *(
                        a + (batch - 1) * (b - a)
                        for a, b in zip(
                            (one.m0, one.m1, one.c0, one.c1, one.rest),
                            (two.m0, two.m1, two.c0, two.c1, two.rest),
                            strict=True,
                        )
                    )
                )
                measured = _measured_allreduce(st.inst)
                if measured is not None:
                    c1, c2 = measured(1), measured(2)
                    coef = dataclasses.replace(
                        coef, rest=coef.rest - (c1 + (batch - 1) * (c2 - c1)) + measured(batch)
                    )
            hit = self._coef[key] = (st.inst, coef)
        return hit[1]

    # -- one instance ------------------------------------------------------------------------

    def _release_arrivals(self, st: InstanceState) -> None:
        q = self.pending[st.index]
        while q and self.requests[q[0]].ready <= st.clock + 1e-12:
            rid = q.popleft()
            st.waiting.append(rid)
            self._move(rid, st.index, "waiting")

    def _admit(self, st: InstanceState) -> None:
        """FCFS admission at a step boundary; prefill the admitted (module doc)."""
        p = st.inst.params
        if not st.waiting or len(st.running) >= p.max_num_seqs:
            return
        new_ids, new_ctx = [], []
        # running requests are scheduled first: their next token's blocks come before admissions
        used = st.blocks(1)
        while st.waiting and len(st.running) + len(new_ids) < p.max_num_seqs:
            req = self.requests[st.waiting[0]]
            ctx = req.prompt + req.generated
            need = -(-(ctx + 1) // st.block)
            if used + need > st.capacity_blocks:
                break
            used += need
            st.waiting.popleft()
            new_ids.append(req.id)
            new_ctx.append(ctx)
        if not new_ids:
            return
        start = st.clock
        share = p.share_prompt_prefill
        tokens, cached, held, keys = [], [], set(), []
        for rid, ctx in zip(new_ids, new_ctx, strict=True):
            req = self.requests[rid]
            key = (req.group, req.prompt) if share else None
            keys.append(key)
            if rid in st.kv_ready:  # arrived with its KV (migrated by transfer): no prefill
                held.add(key)
                continue
            if key is not None and (key in held or st.holds_prompt(key)):
                # its prompt's KV is cached (module doc): only its own generated tokens, if a
                # preemption discarded them, are recomputed
                if req.generated:
                    tokens.append(req.generated)
                    cached.append(req.prompt)
            else:
                tokens.append(ctx)
                cached.append(0)
                held.add(key)
        st.kv_ready.difference_update(new_ids)
        st.clock += st.inst.prefill_batch(tokens, cached) if tokens else 0.0
        st.busy_s += st.clock - start
        for rid in new_ids:
            rec = self.records[rid]
            if rec.admitted is None:
                rec.admitted = start
        for rid, ctx, key in zip(new_ids, new_ctx, keys, strict=True):
            req = self.requests[rid]
            st.add(rid, ctx, req.output - req.generated, key)
            self._move(rid, st.index, "running")
        st.timeline.append((start, st.clock, len(st.running), st.context))

    def _remove_running(self, st: InstanceState, rid: int) -> int:
        """Take a request out of the batch, keeping its tokens; its id."""
        self.requests[rid].generated = self.requests[rid].output - st.remove(rid)
        return rid

    def _preempt_last(self, st: InstanceState) -> None:
        rid = self._remove_running(st, st.last_admitted())
        st.waiting.appendleft(rid)
        self._move(rid, st.index, "waiting")
        self.records[rid].preemptions += 1
        self.preemptions += 1

    def _steps_until_full(self, st: InstanceState, limit: int) -> int:
        """Largest j <= limit such that j more steps fit in the cache (0: the next step does
        not)."""
        return max(0, min(limit, st.max_extra(st.capacity_blocks)))

    def _steps_until(
        self, st: InstanceState, coef: StepCoefficients, horizon: float, limit: int
    ) -> int:
        """Smallest j <= limit whose j steps end at or after ``horizon`` (the step in flight
        ends)."""
        c0, b = float(st.context), len(st.running)
        return min(
            limit, _last_true(lambda j: st.clock + coef.total(c0, b, j) < horizon, limit) + 1
        )

    def _step(self, st: InstanceState, k: int) -> None:
        """Run k decode steps of the current batch and retire what completes."""
        start = st.clock
        b = len(st.running)
        context = st.context
        if self.per_token:
            st.clock += st.inst.decode_step(b, float(context))["step_s"]
        else:
            st.clock += self.coef(st, b).total(float(context), b, k)
        st.busy_s += st.clock - start
        st.step += k
        st.timeline.append((start, st.clock, b, context + b * k))
        for rid in st.pop_finished():
            self.records[rid].completed = st.clock
            self.requests[rid].generated = self.requests[rid].output
            self._touched.add(rid)

    def advance(self, st: InstanceState, until: float = math.inf) -> None:
        """Run the instance to ``until`` (the step in flight then finishes) or to idle."""
        if not st.active:
            return
        while True:
            self._events += 1
            if not self._events & 1023:  # a long epoch stops at its solve's limit
                checkpoint()  # (costmodels.solving)
            self._release_arrivals(st)
            self._admit(st)
            if not st.running:
                q = self.pending[st.index]
                if not q or self.requests[q[0]].ready >= until:
                    return
                st.clock = max(st.clock, self.requests[q[0]].ready)  # idle until the next arrival
                continue
            if st.clock >= until:
                return
            if self.per_token:
                if st.blocks(1) > st.capacity_blocks:
                    self._preempt_last(st)
                    continue
                self._step(st, 1)
                continue
            k = st.next_finish()
            fit = self._steps_until_full(st, k)
            while fit == 0:
                # preempt until the next step fits; the preempted cannot come back before a
                # completion frees blocks (it needs what it just released), so no admission here
                self._preempt_last(st)
                fit = self._steps_until_full(st, st.next_finish())
            k = fit
            q = self.pending[st.index]
            horizon = min(until, self.requests[q[0]].ready if q else math.inf)
            if math.isfinite(horizon):
                k = max(1, self._steps_until(st, self.coef(st, len(st.running)), horizon, k))
            self._step(st, k)

    # -- policies ----------------------------------------------------------------------------

    def _move(self, rid: int, instance: int, state: str) -> None:
        """Record where a request now is, for the next observation."""
        self._where[rid] = (instance, state)
        self._touched.add(rid)

    def observe(self, now: float, progress: bool = True) -> Observation:
        """What a policy may see: queues, KV use, tokens done; never the true output lengths.
        Without ``progress`` running requests' token counts are not refreshed (``Policy``)."""
        views = [
            InstanceView(
                st.index,
                st.inst.tp,
                st.inst.gpu.name,
                st.clock,
                tuple(st.running),
                tuple(st.waiting),
                tuple(self.pending[st.index]),
                st.blocks(),
                st.capacity_blocks,
                st.active,
            )
            for st in self.states
        ]
        tokens = (
            {
                rid: self.requests[rid].output - st.remaining(rid)
                for st in self.states
                for rid in st.running
            }
            if progress
            else {}
        )
        # a request's view changes only when it moved (``_move``), finished or, running, made
        # tokens: only those are looked at, in request order, and the others' views are kept
        look = self._touched
        look.update(tokens)
        self._touched = set()
        cache = self._views
        changed = []
        for rid in sorted(look, key=self._order.__getitem__):
            req, rec = self.requests[rid], self.records[rid]
            if rec.completed is not None:
                inst, state = rec.instance, "done"
            elif rec.aborted is not None:
                inst, state = rec.instance, "aborted"
            else:
                inst, state = self._where[rid]
            generated = tokens.get(rid, req.generated)
            view = cache.get(rid)
            if (
                view is None
                or view.state != state
                or view.generated != generated
                or view.instance != inst
                or view.ready != req.ready
            ):
                view = cache[rid] = RequestView(
                    rid, req.group, req.prompt, generated, req.ready, inst, state
                )
                changed.append(rid)
        return Observation(now, tuple(views), dict(cache), tuple(changed))  # type: ignore[arg-type]

    def _take_out(self, rid: int) -> int:
        """Remove a request from wherever it is queued or running; its former instance or -1."""
        last = self._where.get(rid, (-1, ""))[0]
        self._move(rid, -1, "unassigned")  # until the caller puts it somewhere (or aborts it)
        if rid in self.unassigned:
            self.unassigned.remove(rid)
            return -1
        # where it was last recorded first (a pool of a thousand instances is not scanned per
        # move); the scan stays as the fallback
        for st in ([self.states[last]] if last >= 0 else []) + self.states:
            if rid in st.running:
                self._remove_running(st, rid)
                return st.index
            if rid in st.waiting:
                st.waiting.remove(rid)
                st.kv_ready.discard(rid)
                return st.index
            if rid in self.pending[st.index]:
                self.pending[st.index].remove(rid)
                st.kv_ready.discard(rid)
                return st.index
        raise ValueError(f"request {rid} is not waiting, running or unassigned")

    def _enqueue(self, rid: int, st: InstanceState, ready: float) -> None:
        self._check_fits(rid, st)
        self.requests[rid].ready = ready
        self._move(rid, st.index, "pending")
        q = self.pending[st.index]
        pos = len(q)
        while pos > 0 and self.requests[q[pos - 1]].ready > ready:
            pos -= 1
        q.insert(pos, rid)
        self.records[rid].instance = st.index

    def apply(self, action: Action, now: float) -> None:
        """Carry out one policy action at time ``now`` and log it."""
        from costmodels.reconfig import migration_cost, switch_cost

        entry: dict[str, Any] = {"time": now, "action": type(action).__name__, **vars(action)}
        if isinstance(action, Dispatch | Migrate) and not self.states[action.instance].active:
            # the request would wait forever: a policy bug, said at once and before anything moves
            raise ValueError(
                f"{type(action).__name__}: request {action.request} sent to instance "
                f"{action.instance}, which is released"
            )
        if isinstance(action, Dispatch):
            if action.request not in self.unassigned:
                raise ValueError(f"Dispatch: request {action.request} is not unassigned")
            self.unassigned.remove(action.request)
            self._enqueue(
                action.request,
                self.states[action.instance],
                max(now, self.requests[action.request].ready),
            )
        elif isinstance(action, Abort):
            self._take_out(action.request)
            self.records[action.request].aborted = now
        elif isinstance(action, Migrate):
            src = self._take_out(action.request)
            dst = self.states[action.instance]
            req = self.requests[action.request]
            start = max(now, self.states[src].clock if src >= 0 else now)
            cost = (
                migration_cost(dst.inst, [req.prompt + req.generated], action.bandwidth_gbs)
                if req.prompt + req.generated
                else {"cost_s": 0.0, "choice": "recompute"}
            )
            if cost["choice"] == "transfer":
                dst.kv_ready.add(action.request)
            self.records[action.request].migrations += 1
            entry.update({"from": src, "cost_s": cost["cost_s"], "how": cost["choice"]})
            self._enqueue(action.request, dst, start + cost["cost_s"])
        elif isinstance(action, Reconfigure):
            st = self.states[action.instance]
            while (
                st.running
            ):  # the engine restarts: running requests go back to the queue (recompute)
                self._preempt_last(st)
            old = st.inst.tp
            new = Instance(st.inst.model, st.inst.gpu, action.tp, st.inst.params)
            if new.kv_capacity_tokens() // self.block <= 0:
                raise ValueError(
                    f"Reconfigure: {new.model.name} on TP{action.tp} x {new.gpu.name} leaves no "
                    "KV cache"
                )
            st.inst = new
            st.capacity_blocks = st.inst.kv_capacity_tokens() // self.block
            pause = switch_cost(st.inst, old, action.bandwidth_gbs)["cost_s"] + action.pause_s
            st.clock = max(st.clock, now) + pause
            entry["cost_s"] = pause
        elif isinstance(action, Release):
            st = self.states[action.instance]
            for rid in [*st.running, *st.waiting, *self.pending[st.index]]:
                self._take_out(rid)
                self.unassigned.append(rid)
                self.records[rid].instance = -1
            st.active_s += max(now, st.clock) - st.active_since
            st.active = False
        elif isinstance(action, Acquire):
            st = self.states[action.instance]
            if not st.active:
                st.active, st.active_since = True, max(now, st.clock)
                st.clock = st.active_since
        else:
            raise TypeError(f"unknown action {action!r}")
        self.actions.append(entry)

    def _finished(self) -> bool:
        if self.unassigned:
            return False
        return all(
            not st.running and not st.waiting and not self.pending[st.index] for st in self.states
        )

    def run(self, policies: list[Policy] | None = None, horizon_s: float = 1e7) -> SimResult:
        """Simulate to the end; with policies, stop every ``tick`` seconds to let them act."""
        if not policies:
            if self.unassigned:
                raise ValueError("requests without an instance need a dispatching policy")
            for st in self.states:
                self.advance(st)
            return self.result()
        tick = min(p.tick for p in policies)
        progress = any(getattr(p, "watches_progress", True) for p in policies)
        if not tick > 0:
            raise ValueError("a policy's tick must be > 0 seconds")
        now = 0.0
        for action in [a for p in policies for a in p.on_start(self.observe(now, progress))]:
            self.apply(action, now)
        while not self._finished():
            now += tick
            if now > horizon_s:
                raise RuntimeError(
                    f"generation did not finish within {horizon_s} s of simulated time (a policy "
                    "holds requests back?)"
                )
            for st in self.states:
                self.advance(st, now)
            obs = self.observe(now, progress)
            for action in [a for p in policies for a in p.on_tick(obs)]:
                self.apply(action, now)
        return self.result()

    def result(self) -> SimResult:
        done = [r.completed for r in self.records.values() if r.completed is not None]
        makespan = max(done) if done else 0.0
        tokens = sum(r.generated for r in self.requests.values())
        held = [
            st.active_s + (makespan - st.active_since if st.active else 0.0) for st in self.states
        ]
        return SimResult(
            makespan,
            self.records,
            self.preemptions,
            tokens,
            [s.busy_s for s in self.states],
            [s.inst.tp for s in self.states],
            [s.timeline for s in self.states],
            self.actions,
            held,
        )


def _last_true(ok: Any, hi: int) -> int:
    """Largest j in [0, hi] with ``ok(j)``, for a predicate true at 0 and monotone (true, then
    false): binary search."""
    return _last_true_between(ok, 0, hi)


def _last_true_between(ok: Any, lo: int, hi: int) -> int:
    """Largest j in [lo, hi] with ``ok(j)``, given ``ok(lo)`` and ``ok`` monotone: binary search."""
    if ok(hi):
        return hi
    # ok(lo) holds, ok(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def simulate(
    instances: list[Instance],
    requests: list[Request],
    assignment: list[int] | None = None,
    block_size: int = 16,
) -> SimResult:
    """Simulate requests on instances (``assignment[i]``: request i's instance; default:
    :func:`balanced_assignment`, round-robin in ready order)."""
    if assignment is None:
        assignment = balanced_assignment(requests, len(instances))
    return Engine(instances, requests, assignment, block_size).run()
