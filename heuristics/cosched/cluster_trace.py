"""RollMux's cluster-level trace simulation (§7.4-7.5): jobs arrive and leave, a policy places
each arrival, departures free capacity; cost over time, peak GPUs and SLO attainment.

**Progress.** A job brings ``duration_s`` of work measured alone (its solo iteration time T_solo
per iteration). In a group whose round-robin period is P_j (``coexec_times``: worst-case phase
durations, the planning inputs) it does T_solo / P_j seconds of work per second, so a slowed job
stays longer — and keeps paying for its group — than it would alone. Rates change only at events
(an arrival, a departure), so the simulation jumps from event to event.

**SLO attainment** (rlplan's reading of "realised co-execution time"): a job meets its SLO when
its wall-clock time from arrival to departure is at most SLO_j times its duration alone.

**Policies.** ``rollmux``, ``random``, ``greedy``, ``solo`` and ``colocated`` are the
:class:`~heuristics.cosched.online.OnlineScheduler` rules, with one scheduler kept for the whole
trace (what a cluster manager does); ``rollmux-unpruned`` is Algorithm 1 without line 4;
``random`` and ``greedy`` are §7.5's (memory and group size only, saturated groups included)
unless ``baseline_slo_check``, and ``random-slo``/``greedy-slo`` check every SLO.
``optimal-algorithm1`` re-solves over what Algorithm 1 can build (the second reference); ``optimal``
re-solves the offline optimum over the jobs present at every arrival with the exact solver the
caller passes (``solve_optimal``: ``formulations.cosched.partition.solve_cosched_optimal``;
heuristics never import formulations), regrouping them for free: the reference the paper
compares to (a departure only removes its job). It is optimal at each arrival, not over the trace:
its tighter packing slows jobs (up to their SLOs), and a slowed job stays longer and keeps paying,
so an online policy's mean cost over a trace can come out below it (it does on one of the three
real-arrival windows, ``benchmarks/results/cosched/trace.json``).

Cost is the sum of the groups' $/h; its time-weighted mean runs from the first arrival to the last
departure. Peak GPUs are counted per pool type (a co-located group's GPUs are training GPUs).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from costmodels.cosched.group import CoschedModel, GroupState, coexec_times, cosched_model, state_of
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.errors import SpecError
from costmodels.solving import SolverOutput, Status

POLICIES = (
    "optimal-algorithm1",
    "rollmux",
    "rollmux-unpruned",
    "random",
    "greedy",
    "random-slo",
    "greedy-slo",
    "solo",
    "colocated",
    "optimal",
)


@dataclass
class TraceResult:
    """What a policy did over a trace (module doc)."""

    policy: str
    timeline: list[
        dict[str, float]
    ]  # after every event: time, cost $/h, GPUs per pool, jobs, groups
    jobs: dict[str, dict[str, Any]]
    decisions: list[float]  # decision latency per arrival, seconds
    snapshot: list[GroupState] = field(
        default_factory=list
    )  # the groups when the most jobs were present
    #: arrivals at which an optimal policy's solve stopped at its time limit (a safety cap: its
    #: plan is then the best found, not proven, and can differ with the machine's speed)
    unproven: int = 0

    @property
    def mean_cost_per_h(self) -> float:
        if len(self.timeline) < 2:
            return self.timeline[0]["cost_per_h"] if self.timeline else 0.0
        area = sum(
            a["cost_per_h"] * (b["time"] - a["time"])
            for a, b in zip(self.timeline, self.timeline[1:], strict=False)
        )
        span = self.timeline[-1]["time"] - self.timeline[0]["time"]
        return area / span if span > 0 else self.timeline[0]["cost_per_h"]

    @property
    def slo_attainment(self) -> float:
        return (
            sum(j["meets_slo"] for j in self.jobs.values()) / len(self.jobs) if self.jobs else 1.0
        )

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.decisions)
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "mean_cost_per_h": self.mean_cost_per_h,
            "peak_cost_per_h": max((t["cost_per_h"] for t in self.timeline), default=0.0),
            "peak_rollout_gpus": max((t["rollout_gpus"] for t in self.timeline), default=0),
            "peak_train_gpus": max((t["train_gpus"] for t in self.timeline), default=0),
            "slo_attainment": self.slo_attainment,
            "mean_slowdown": sum(j["slowdown"] for j in self.jobs.values()) / len(self.jobs)
            if self.jobs
            else 1.0,
            "median_decision_s": lat[len(lat) // 2] if lat else 0.0,
            "unproven_optima": self.unproven,
            "max_decision_s": lat[-1] if lat else 0.0,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "timeline": self.timeline, "job_results": self.jobs}


class _OptimalPolicy:
    """Re-solve the offline optimum over the jobs present at every arrival (module doc)."""

    def __init__(
        self, problem: CoscheduleProblem, solve: Callable[..., SolverOutput], time_limit: float
    ):
        self.problem, self.m, self.solve, self.time_limit = (
            problem,
            cosched_model(problem),
            solve,
            time_limit,
        )
        self.groups: list[GroupState] = []
        self.unproven = 0  # solves the time limit stopped before the optimum was proven

    def arrive(self, name: str) -> None:
        present = {n for g in self.groups for n in g.members} | {name}
        spec = self.problem.jobs
        sub = CoscheduleProblem(
            spec.model_copy(update={"jobs": [j for j in spec.jobs if j.name in present]})
        )
        out = self.solve(sub, time_limit=self.time_limit)
        if out.plan is None:
            # the cap bound before any partition was found: fall back on Algorithm 1's plan, which
            # lies in both spaces, so a capped re-solve is never empty (counted as unproven)
            from heuristics.cosched.online import solve_rollmux

            out = solve_rollmux(sub)
        if out.plan is None:
            raise RuntimeError(f"optimal: no plan for {len(present)} jobs ({out.message})")
        self.unproven += out.status is not Status.OPTIMAL
        self.groups = [state_of(g) for g in out.plan.groups]

    def depart(self, name: str) -> None:
        from heuristics.cosched.online import depart_from

        depart_from(self.groups, name)


def _scheduler(
    problem: CoscheduleProblem,
    policy: str,
    seed: int,
    baseline_slo_check: bool,
    solve_optimal: Callable[..., SolverOutput] | None,
    time_limit: float,
) -> Any:
    from heuristics.cosched.online import OnlineScheduler

    if policy in ("optimal", "optimal-algorithm1"):
        if solve_optimal is None:
            raise ValueError(
                "the optimal policy needs the exact solver: pass "
                "solve_optimal=solve_cosched_optimal"
            )
        if policy == "optimal-algorithm1":  # the second reference: what Algorithm 1 can build
            solve_optimal = functools.partial(solve_optimal, space="algorithm1")
        return _OptimalPolicy(problem, solve_optimal, time_limit)
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    rule = policy.removesuffix("-slo").removesuffix("-unpruned")
    baseline = rule in ("random", "greedy")  # §7.5: no line 4; an SLO check only when asked
    return OnlineScheduler(
        cosched_model(problem),
        rule,
        seed,
        check_slo=not baseline or baseline_slo_check or policy.endswith("-slo"),
        skip_saturated=rule == "rollmux" and policy != "rollmux-unpruned",
    )


def _pools(m: CoschedModel, groups: list[GroupState]) -> tuple[float, int, int]:
    cost = sum(m.cost(g.rollout_nodes, g.train_nodes) for g in groups)
    return (
        cost,
        sum(g.rollout_nodes for g in groups) * m.g_r,
        sum(g.train_nodes for g in groups) * m.g_t,
    )


def simulate_trace(
    problem: CoscheduleProblem,
    policy: str = "rollmux",
    *,
    seed: int = 0,
    baseline_slo_check: bool = False,
    solve_optimal: Callable[..., SolverOutput] | None = None,
    optimal_time_limit: float = 60.0,
    migration_gain: float = 1.0,
) -> TraceResult:
    """Replay the problem's jobs as a trace (``arrival_s``, ``duration_s``) under ``policy``.

    ``migration_gain`` folds long-tail migration (§4.3, measured in §7.3 and by
    ``heuristics.cosched.group_replay.migration_gain``) into the costs: a co-executed group's
    realised period is its planned round-robin period over the gain (placement still plans on the
    worst case), so its jobs progress faster and leave, and stop paying, sooner. 1 is off; the
    replay's measured gains are 0.97-1.13 (``benchmarks/results/cosched/migration.json``)."""
    if not migration_gain > 0:
        raise ValueError(f"migration_gain must be > 0, got {migration_gain}")
    m = cosched_model(problem)
    missing = [i for i, j in enumerate(problem.jobs.jobs) if j.duration_s is None]
    if missing:
        raise SpecError(
            f"jobs[{missing[0]}].duration_s", None, "a trace needs every job's running time"
        )
    sched = _scheduler(problem, policy, seed, baseline_slo_check, solve_optimal, optimal_time_limit)
    replay = _Replay(problem, m, sched, migration_gain)
    replay.run()
    unproven = sched.unproven if isinstance(sched, _OptimalPolicy) else 0
    return TraceResult(
        policy, replay.timeline, replay.results, replay.decisions, replay.snapshot, unproven
    )


class _Replay:
    """One trace's event loop: jobs arrive in order and leave when their solo-seconds of work
    are done at the rates their groups' co-execution gives; the pools are recorded at every
    event."""

    def __init__(
        self, problem: CoscheduleProblem, m: CoschedModel, sched: Any, migration_gain: float
    ) -> None:
        self.m, self.sched, self.migration_gain = m, sched, migration_gain
        self.specs = {j.name: j for j in problem.jobs.jobs}
        self.arrivals = sorted(problem.jobs.jobs, key=lambda j: (j.arrival_s, j.name))
        self.remaining: dict[str, float] = {}  # solo-seconds of work left
        self.rate: dict[str, float] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.timeline: list[dict[str, float]] = []
        self.decisions: list[float] = []
        self.snapshot: list[GroupState] = []
        self.now, self.i, self.most = 0.0, 0, 0
        # each group's co-execution times by its state (rates)
        self._periods: dict[tuple, dict[str, float]] = {}

    def run(self) -> None:
        """Every event in time order until the last job has left."""
        remaining, rate = self.remaining, self.rate
        while self.i < len(self.arrivals) or remaining:
            # the next departure at the current rates (rates change at every event: no heap)
            dep = min(
                ((self.now + remaining[n] / rate[n], n) for n in remaining),
                default=(float("inf"), ""),
            )
            arr = self.arrivals[self.i].arrival_s if self.i < len(self.arrivals) else float("inf")
            t = min(dep[0], arr)
            for n in remaining:
                remaining[n] -= (t - self.now) * rate[n]
            self.now = t
            if arr <= dep[0]:
                self.arrive()
            else:
                self.depart(dep[1])
            self.rates()
            self.record()

    def arrive(self) -> None:
        """The next job arrives: the policy places it (timed), and the largest set of jobs
        present so far is snapshotted."""
        job = self.arrivals[self.i]
        self.i += 1
        t0 = time.perf_counter()
        self.sched.arrive(job.name)
        self.decisions.append(time.perf_counter() - t0)
        self.remaining[job.name] = float(job.duration_s)
        if len(self.remaining) >= self.most:
            self.most, self.snapshot = len(self.remaining), [g.copy() for g in self.sched.groups]

    def depart(self, name: str) -> None:
        """Job ``name`` has done its work: its slowdown against its SLO, then the policy lets it
        go."""
        del self.remaining[name]
        spec = self.specs[name]
        wall = self.now - spec.arrival_s
        slowdown = wall / float(spec.duration_s)
        self.results[name] = {
            "arrival_s": spec.arrival_s,
            "departure_s": self.now,
            "duration_s": spec.duration_s,
            "slowdown": slowdown,
            "slo": spec.slo,
            "meets_slo": slowdown <= spec.slo * (1 + 1e-9),
        }
        self.sched.depart(name)

    def rates(self) -> None:
        """Each job's progress in solo-seconds per second: solo time over its group's period
        (co-executed groups' periods shortened by the migration gain)."""
        m, rate = self.m, self.rate
        rate.clear()
        # an event changes one or two groups: the others' periods (a max-plus eigenvalue each,
        # costmodels.cosched.group) are kept from the last event, so a trace is not quadratic in
        # them; only the groups present now are kept
        periods, known = {}, self._periods
        for g in self.sched.groups:
            key = (
                g.train_nodes,
                g.rollout_nodes,
                g.colocated,
                tuple((name, g.pins[name]) for name in g.members),
            )
            times = periods[key] = known.get(key) or coexec_times(m, g)
            gain = self.migration_gain if len(g.members) > 1 and not g.colocated else 1.0
            for name, period in times.items():
                rate[name] = m.jobs[name].solo_s / (period / gain)
        self._periods = periods

    def record(self) -> None:
        """The pools' cost and GPUs, jobs and groups now."""
        cost, gr, gt = _pools(self.m, self.sched.groups)
        self.timeline.append(
            {
                "time": self.now,
                "cost_per_h": cost,
                "rollout_gpus": gr,
                "train_gpus": gt,
                "jobs": len(self.remaining),
                "groups": len(self.sched.groups),
            }
        )
